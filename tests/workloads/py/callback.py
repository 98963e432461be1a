# SPDX-License-Identifier: MIT
# Python -> C -> Python: outer() sorts a list with sorted(..., key=sort_key), so the
# interpreter runs sort_key from inside the C sort. sort_key holds most of the CPU.
# Usage: callback.py [SCALE]  (SCALE 1: about 1 s of CPU on Debian 12's python3.11)
import sys


def sort_key(v):
    x = v
    for i in range(12):
        x = (x * 31 + i) & 0xFFFFF
    return x


def outer(rounds):
    data = [(i * 7919) % 20011 for i in range(20000)]
    n = 0
    for _ in range(rounds):
        n += sorted(data, key=sort_key)[0]
    return n


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
outer(max(1, int(75 * scale)))
