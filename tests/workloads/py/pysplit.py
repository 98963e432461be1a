# SPDX-License-Identifier: MIT
# Python code and the native code it calls, in turns, with the CPU time of each: the
# pure-Python loop py_loop, then hash_part, which hashes a 16 MiB buffer with
# hashlib.sha256 (OpenSSL's libcrypto on Debian), 8 rounds. Prints "python SECONDS" and
# "native SECONDS", the thread CPU time spent in each, which report --split's py% and
# native% of the two functions should split the same way.
# Usage: pysplit.py [SCALE]  (SCALE 1: about 1 s of CPU on this kind of machine)
import hashlib
import sys
import time


def py_loop(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFFFF
    return x


def hash_part(data, n):
    h = b""
    for _ in range(n):
        h = hashlib.sha256(data).digest()
    return h


def main(scale):
    data = bytes(range(256)) * (1 << 16)  # 16 MiB
    spent = {"python": 0.0, "native": 0.0}
    for _ in range(8):
        t0 = time.thread_time()
        py_loop(int(600000 * scale))
        t1 = time.thread_time()
        hash_part(data, max(1, int(4 * scale)))
        t2 = time.thread_time()
        spent["python"] += t1 - t0
        spent["native"] += t2 - t1
    for what, secs in spent.items():
        print(what, f"{secs:.6f}")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
