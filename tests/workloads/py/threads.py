# SPDX-License-Identifier: MIT
# Four threads, each spinning in a Python function of its own (spin_red, spin_green,
# spin_blue, spin_gold) for the same number of iterations; the main thread joins them.
# Prints one line per thread: FUNCTION NATIVE_THREAD_ID.
# Usage: threads.py [SCALE]  (SCALE 1: about 1 s of CPU in all on Debian 12's python3.11)
import sys
import threading

UNIT = 1000


def spin_red(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF


def spin_green(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF


def spin_blue(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF


def spin_gold(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF


def run(fn, n, tids):
    tids[fn.__name__] = threading.get_native_id()
    fn(n)


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
tids = {}
threads = [threading.Thread(target=run, args=(fn, int(7000 * UNIT * scale), tids))
           for fn in (spin_red, spin_green, spin_blue, spin_gold)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for name, tid in sorted(tids.items()):
    print(name, tid)
