# SPDX-License-Identifier: MIT
# Short CPU bursts between naps, as a training loop waiting on I/O or a queue:
# burst_a 60 % and burst_b 40 % of the CPU, each followed by a 2 ms sleep in nap,
# which takes no CPU. An on-CPU profile must show the bursts, not the naps, even
# though the process sleeps most of the time.
# Usage: naps.py [ROUNDS]  (200: about 0.5 s of CPU, 1.3 s in all on python3.11)
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def burst_a(n):
    return spin(n)


def burst_b(n):
    return spin(n)


def nap():
    time.sleep(0.002)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for _ in range(rounds):
        burst_a(30000)
        nap()
        burst_b(20000)
        nap()


main()
