# SPDX-License-Identifier: MIT
# A target for proftool attach: spins in wait_for_stop until STOPFILE exists, then
# prints "finished after N rounds" and exits 0. It creates READYFILE (holding its pid)
# once it spins.
# Usage: attach_target.py READYFILE STOPFILE
import os
import sys


def spin_round(n):
    x = 0
    for i in range(n):
        x = (x + i) & 0xFFFF
    return x


def wait_for_stop(stopfile):
    rounds = 0
    while not os.path.exists(stopfile):
        spin_round(20000)
        rounds += 1
    return rounds


ready, stop = sys.argv[1], sys.argv[2]
with open(ready + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(ready + ".tmp", ready)
print("finished after %d rounds" % wait_for_stop(stop), flush=True)
