# SPDX-License-Identifier: MIT
# multiprocessing with a start method (fork, spawn or forkserver): two worker processes
# run the Python function work while the parent waits for them. Prints the workers' pids,
# one line "worker PID" each, then "parent PID".
# Usage: procs.py METHOD [SCALE]  (SCALE 1: about 0.5 s of CPU per worker)
import multiprocessing
import os
import sys

UNIT = 1000


def work(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    workers = [ctx.Process(target=work, args=(int(10000 * UNIT * scale),)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
        print("worker", w.pid)
        if w.exitcode != 0:
            sys.exit("worker %d exited %s" % (w.pid, w.exitcode))
    print("parent", os.getpid())
