# SPDX-License-Identifier: MIT
# Two functions take turns in the same frame of the interpreter's data stack, each for
# about 0.1 ms: pyloop in pure Python, hashing in OpenSSL's SHA-256 (hashlib). A sample
# taken in SHA-256 code runs hashing; read after the thread moved on, its frame would
# already hold pyloop. Usage: turns.py [SCALE]  (SCALE 1: about 1 s of CPU on Debian 12's
# python3.11; the work is counted in calls, not in time)
import hashlib
import sys

DATA = b"x" * 16000
STEPS = 3800


def pyloop(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def hashing(n):
    h = b""
    for _ in range(n):
        h = hashlib.sha256(DATA).digest()
    return h


def step():
    pyloop(3000)
    hashing(8)


def main(scale):
    for _ in range(int(STEPS * scale)):
        step()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
