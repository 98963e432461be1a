# SPDX-License-Identifier: MIT
# A Python process whose children come and go while it runs: ROUNDS times, parent_work
# computes a little, then the process forks a child that either execs /bin/true (odd
# rounds) or exits at once with os._exit (even rounds), and reaps it. Exits 0 when every
# child did. Prints "parent PID".
# Usage: forkexec.py [ROUNDS [SCALE]]  (default 200 rounds; SCALE 1: about 0.7 s of CPU
# in parent_work on Debian 12's python3.11)
import os
import sys

UNIT = 1000


def parent_work(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    for r in range(rounds):
        parent_work(int(20000 * UNIT * scale) // rounds)
        pid = os.fork()
        if pid == 0:
            if r % 2:
                try:
                    os.execv("/bin/true", ["true"])
                finally:
                    os._exit(127)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            sys.exit("child %d: status %d" % (pid, status))
    print("parent", os.getpid())


main()
