# SPDX-License-Identifier: MIT
# A small Python job in four phases, each timed by the script itself with
# time.process_time(): an import tower (modules imported fresh, so the import
# machinery runs), a pure-Python loop, a hash in OpenSSL's libcrypto through
# hashlib, and a sort whose key is a Python callback. At the end it writes
# "PHASE SECONDS" lines to the file named by its first argument, "total"
# being the process's CPU time up to then.
# Usage: pyview.py TIMES [SCALE]  (SCALE 1: about 3 s of CPU on this kind of machine)
import hashlib
import importlib
import sys
import time


def import_tower():
    # every round imports the same stdlib modules anew: finders, loaders,
    # unmarshalling and module bodies, as a framework's imports are
    names = ["json", "decimal", "email.mime.multipart", "http.client", "xml.dom.minidom",
             "argparse", "unittest", "logging.handlers", "csv", "dataclasses"]
    for _ in range(ROUNDS_IMPORT):
        for name in list(sys.modules):
            if name.split(".")[0] in ("json", "decimal", "_pydecimal", "email", "http",
                                      "xml", "argparse", "unittest", "logging", "csv",
                                      "dataclasses"):
                del sys.modules[name]
        for name in names:
            importlib.import_module(name)


def pure_loop(n):
    # only the interpreter (no libm): float arithmetic, comparisons, a list
    acc = 0.0
    vals = []
    for i in range(n):
        x = i * 0.5
        if i & 3 < 2:
            acc += x * x
        else:
            acc -= x / 7.0
        if i % 1000 == 0:
            vals.append(acc)
    return acc, len(vals)


def hash_data(rounds):
    data = bytes(range(256)) * (16 << 12)  # 16 MiB
    h = b""
    for _ in range(rounds):
        h = hashlib.sha256(data).digest()
    return h


def sort_key(v):
    x = v
    for i in range(12):
        x = (x * 31 + i) & 0xFFFFF
    return x


def sort_with_key(rounds):
    data = [(i * 7919) % 20011 for i in range(20000)]
    n = 0
    for _ in range(rounds):
        n += sorted(data, key=sort_key)[0]
    return n


def timed(name, fn, *args):
    t0 = time.process_time()
    fn(*args)
    TIMES.append((name, time.process_time() - t0))


scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
ROUNDS_IMPORT = max(1, int(12 * scale))
TIMES = []
timed("import_tower", import_tower)
timed("pure_loop", pure_loop, max(1, int(3_000_000 * scale)))
timed("hash_data", hash_data, max(1, int(16 * scale)))
timed("sort_with_key", sort_with_key, max(1, int(25 * scale)))
with open(sys.argv[1], "w") as f:
    for name, secs in TIMES:
        f.write(f"{name} {secs:.6f}\n")
    f.write(f"total {time.process_time():.6f}\n")
