# SPDX-License-Identifier: MIT
# Fills the file: the main thread records PAIRS regions "fill" (2 events each), then a
# new thread "late" records 5 marks "late". Run with PROFTOOL_REGIONS_MB small, so that
# the main thread's segments fill up and the late thread finds no segment left.
# Prints "main TID" and "late TID".
# Usage: fill.py PAIRS
import sys
import threading

import proftool

pairs = int(sys.argv[1])
region = proftool.region("fill")
for _ in range(pairs):
    with region:
        pass


def late():
    for _ in range(5):
        proftool.mark("late")
    print("late", threading.get_native_id())


t = threading.Thread(target=late, name="late")
t.start()
t.join()
print("main", threading.get_native_id())
