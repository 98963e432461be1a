# SPDX-License-Identifier: MIT
# multiprocessing with a start method (fork, spawn or forkserver): N workers (default 3)
# each record the region "task" 7 times (and "task-of-K" once, K its number), the parent
# records "parent" around them. Prints "worker PID" for each, then "parent PID".
# Usage: procs.py METHOD [N]
import multiprocessing
import os
import sys

import proftool


def task(k):
    for _ in range(7):
        with proftool.region("task"):
            pass
    proftool.mark("task-of-%d" % k)


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with proftool.region("parent"):
        workers = [ctx.Process(target=task, args=(k,)) for k in range(n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
            if w.exitcode != 0:
                sys.exit("worker %d exited %s" % (w.pid, w.exitcode))
    for w in workers:
        print("worker", w.pid)
    print("parent", os.getpid())
