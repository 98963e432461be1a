# SPDX-License-Identifier: MIT
# Ground truth for proftool record with Python regions: 10 x "step" { 5 x "compute"
# (compute(): 4 ms of arithmetic, timed on the wall clock), 5 x "wait" (wait(): a 4 ms
# sleep) }, then 4 x "worker" in each of 2 multiprocessing workers (fork) around
# worker_spin(): 5 ms each. Prints its own measure of the totals, wall and CPU time:
# "compute WALL CPU wait WALL CPU". Usage: nest.py [SCALE]
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
    wall = {"compute": 0, "wait": 0}
    cpu = {"compute": 0, "wait": 0}

    def timed(name, fn):
        t, c = time.monotonic_ns(), time.thread_time_ns()
        with proftool.region(name):
            fn()
        wall[name] += time.monotonic_ns() - t
        cpu[name] += time.thread_time_ns() - c

    for _ in range(10):
        with proftool.region("step"):
            for _ in range(5):
                timed("compute", compute)
            for _ in range(5):
                timed("wait", wait)
    print(" ".join("%s %.6f %.6f" % (k, wall[k] / 1e9, cpu[k] / 1e9) for k in ("compute", "wait")),
          flush=True)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(worker, range(2), chunksize=1)
