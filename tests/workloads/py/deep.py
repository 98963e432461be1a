# SPDX-License-Identifier: MIT
# A recursion DEPTH deep (default 900, with sys.setrecursionlimit raised to allow it):
# recurse(DEPTH) calls itself down to recurse(0), which spins, so that most samples
# hold DEPTH + 1 frames of recurse.
# Usage: deep.py [DEPTH [SCALE]]  (SCALE 1: about 1 s of CPU on Debian 12's python3.11)
import sys

UNIT = 1000


def recurse(n, work):
    if n == 0:
        x = 0
        for i in range(work):
            x = (x + i) & 0xFFFF
        return x
    return recurse(n - 1, work)


depth = int(sys.argv[1]) if len(sys.argv) > 1 else 900
scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
sys.setrecursionlimit(depth + 1000)
for _ in range(10):
    recurse(depth, int(3000 * UNIT * scale))
