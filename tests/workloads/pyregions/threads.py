# SPDX-License-Identifier: MIT
# N threads (default 4), "worker-K", all alive at once (so their native ids differ),
# each recording ROUNDS (default 1000) regions "work-K" with a region "step" inside.
# Prints "thread NAME TID" for each.
# Usage: threads.py [N [ROUNDS]]
import sys
import threading

import proftool

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
all_started = threading.Barrier(n)
tids = {}


def worker(k):
    tids[threading.current_thread().name] = threading.get_native_id()
    all_started.wait()
    for _ in range(rounds):
        with proftool.region("work-%d" % k):
            with proftool.region("step"):
                pass
    all_started.wait()  # nobody exits before all are done: no tid is reused


threads = [threading.Thread(target=worker, args=(k,), name="worker-%d" % k) for k in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for name, tid in sorted(tids.items()):
    print("thread", name, tid)
