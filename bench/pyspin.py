# SPDX-License-Identifier: MIT
# make bench (bench/pycost.sh): pure Python with a six-frame stack, <module> -> main ->
# epoch -> step -> forward -> kernel, spinning in kernel; no imports, no threads, no
# system calls once started, so that all a profiler does per sample shows.
# Usage: pyspin.py SCALE  (SCALE 1: about 1 s of CPU on Debian 12's python3.11; the work
# is counted in loop iterations, not in time)
import sys

UNIT = 16000000


def kernel(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def forward(n):
    return kernel(n)


def step(n):
    return forward(n)


def epoch(steps, n):
    x = 0
    for _ in range(steps):
        x ^= step(n)
    return x


def main(scale):
    # ten steps a second of work, each a few hundred ms: the stack is six deep
    # nearly all the time
    steps = max(1, round(10 * scale))
    return epoch(steps, int(UNIT * scale / steps))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
