# SPDX-License-Identifier: MIT
# Exceptions raised and caught in a hot loop: catch_loop calls raise_error, which
# raises ValueError every time, and catches it.
# Usage: exceptions.py [SCALE]  (SCALE 1: about 1 s of CPU on Debian 12's python3.11)
import sys

UNIT = 1000


def raise_error(i):
    raise ValueError(i)


def catch_loop(n):
    caught = 0
    for i in range(n):
        try:
            raise_error(i)
        except ValueError:
            caught += 1
    return caught


scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
catch_loop(int(4000 * UNIT * scale))
