# SPDX-License-Identifier: MIT
# A parent that runs work for a while, then forks two workers that run the same work: the
# workers' code objects are their parent's, at the same addresses. Prints "worker PID" for
# each worker, then "parent PID".
# Usage: forkwork.py [SCALE]  (SCALE 1: about 0.2 s of CPU in the parent, 0.4 s per worker)
import os
import sys

from procs import work  # the same loop as procs.py's workers (this directory is on sys.path)


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    work(int(3000000 * scale))
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            work(int(6000000 * scale))
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
        print("worker", pid)
    print("parent", os.getpid())


if __name__ == "__main__":
    main()
