# SPDX-License-Identifier: MIT
# Code met for the first time while the program runs, in two shapes.
#
# imports.py gone [N [MS]]: code that is gone soon after it runs. Writes N modules into
# a directory of its own, each whose body spins for MS milliseconds at its top level (a
# frame named <module>, of the module's file, freed once its import is done), imports
# them one after another, then runs as many strings through exec, each spinning as long
# (a frame named <module>, of "<string>"), and last spins in settle for as long as all
# of them: a quarter, a quarter and a half of the run.
#
# imports.py fresh [N [MS]]: code that stays. Writes one module of N functions, fn_0 to
# fn_{N-1}, each spinning for MS milliseconds, imports it and calls each in turn: a
# function new to the profiler every MS milliseconds, as a long job meets its rarely
# run code, each living as long as its module.
#
# Defaults: N 40, MS 20.
import os
import sys
import tempfile
import time

SPIN = """_end = time.process_time() + {ms} / 1000
{indent}_n = 0
{indent}while time.process_time() < _end:
{indent}    _n += 1
"""


def spin_source(ms, indent=""):
    return indent + SPIN.format(ms=ms, indent=indent)


def settle(seconds):
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return n


def gone(d, n, ms):
    body = "import time\n" + spin_source(ms)
    for k in range(n):
        with open(os.path.join(d, "gone_%d.py" % k), "w") as f:
            f.write(body)
    for k in range(n):
        __import__("gone_%d" % k)
    for _ in range(n):
        exec(compile(body, "<string>", "exec"), {})
    settle(2 * n * ms / 1000)


def fresh(d, n, ms):
    with open(os.path.join(d, "fresh_fns.py"), "w") as f:
        f.write("import time\n")
        for k in range(n):
            f.write("\n\ndef fn_%d():\n" % k + spin_source(ms, "    "))
    mod = __import__("fresh_fns")
    for k in range(n):
        getattr(mod, "fn_%d" % k)()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "gone"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    ms = float(sys.argv[3]) if len(sys.argv) > 3 else 20
    with tempfile.TemporaryDirectory() as d:
        sys.path.insert(0, d)
        {"gone": gone, "fresh": fresh}[mode](d, n, ms)


if __name__ == "__main__":
    main()
