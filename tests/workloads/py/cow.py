# SPDX-License-Identifier: MIT
# Copy on write in forked workers, the DataLoader's case: the parent builds a list of
# Python objects, then forks WORKERS children that only read it (read_all sums it,
# ROUNDS times), yet every read writes the objects' reference counts, so the kernel
# copies each page a child touches: page faults under read_all in every worker. The
# workers differ in how much of the list they read (worker k reads (k+1)/WORKERS of
# it), so ordered by faults they come last to first.
# Usage: cow.py [WORKERS [MILLIONS]]  (defaults 3 and 2: 2 million floats)
import os
import sys


def build(n):
    return [float(i) for i in range(n)]


def read_all(data, upto):
    s = 0.0
    for i in range(upto):
        s += data[i]
    return s


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(float(sys.argv[2]) * 1_000_000) if len(sys.argv) > 2 else 2_000_000
    data = build(n)
    pids = []
    for k in range(workers):
        pid = os.fork()
        if pid == 0:
            read_all(data, n * (k + 1) // workers)
            os._exit(0)
        pids.append(pid)
    status = 0
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        status |= st
    sys.exit(1 if status else 0)


main()
