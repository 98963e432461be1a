# SPDX-License-Identifier: MIT
# Ground truth for proftool record with Python regions: 10 x "step" { 5 x "compute"
# (compute(): 4 ms of arithmetic, timed on the wall clock), 5 x "wait" (wait(): a 4 ms
# sleep) }, then 4 x "worker" in each of 2 multiprocessing workers (fork) around
# worker_spin(): 5 ms each. Prints its own measure of the totals: "compute SECONDS wait
# SECONDS". Usage: nest.py [SCALE]
import multiprocessing
import sys
import time

import proftool

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def compute():
    end = time.monotonic() + 0.004 * SCALE
    x = 0
    while time.monotonic() < end:
        for i in range(200):
            x += i * i
    return x


def wait():
    time.sleep(0.004 * SCALE)


def worker_spin():
    end = time.monotonic() + 0.005 * SCALE
    while time.monotonic() < end:
        sum(range(200))


def worker(_):
    for _ in range(4):
        with proftool.region("worker"):
            worker_spin()


if __name__ == "__main__":
    spent = {"compute": 0, "wait": 0}
    for _ in range(10):
        with proftool.region("step"):
            for _ in range(5):
                t = time.monotonic_ns()
                with proftool.region("compute"):
                    compute()
                spent["compute"] += time.monotonic_ns() - t
            for _ in range(5):
                t = time.monotonic_ns()
                with proftool.region("wait"):
                    wait()
                spent["wait"] += time.monotonic_ns() - t
    print("compute %.6f wait %.6f" % (spent["compute"] / 1e9, spent["wait"] / 1e9), flush=True)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(worker, range(2), chunksize=1)
