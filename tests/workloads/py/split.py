# SPDX-License-Identifier: MIT
# A 50/30/20 CPU split across three Python functions, one of them a method:
# load_batch 50 %, Trainer.step 30 %, log_metrics 20 % (each holds its own loop,
# the same loop, so the split is in iterations, not time).
# Usage: split.py [SCALE]  (SCALE 1: about 1 s of CPU on Debian 12's python3.11)
import sys

UNIT = 1000


def load_batch(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


class Trainer:
    def step(self, n):
        x = 0
        for i in range(n):
            x = (x + i) & 0xFFFF
        return x


def log_metrics(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    trainer = Trainer()
    for _ in range(max(1, int(260 * scale))):
        load_batch(50 * UNIT)
        trainer.step(30 * UNIT)
        log_metrics(20 * UNIT)


main()
