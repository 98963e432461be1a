# SPDX-License-Identifier: MIT
# Checks that the complete events ("ph": "X") of a Chrome trace nest on each track (pid, tid)
# as trace viewers require: sorted by ts, each one inside the open ones or after them, never
# overlapping. Prints "PID TID COUNT" per track; exits 1 at the first fault.
# Usage: chrome_nesting.py TRACE.json
import collections
import json
import sys

tracks = collections.defaultdict(list)
for e in json.load(open(sys.argv[1], encoding="utf-8"))["traceEvents"]:
    if e["ph"] == "X":
        tracks[(e["pid"], e["tid"])].append(e)
for (pid, tid), evs in sorted(tracks.items()):
    assert [e["ts"] for e in evs] == sorted(e["ts"] for e in evs), ("not sorted by ts", pid, tid)
    stack = []
    for e in evs:
        s, end = e["ts"], e["ts"] + e["dur"]
        # leave the open slices this one is not inside; it must not overlap them
        while stack and not (stack[-1][0] <= s and end <= stack[-1][1] and
                             not (s == stack[-1][1] and stack[-1][1] > stack[-1][0])):
            assert s >= stack[-1][1], ("overlap", pid, tid, e, stack[-1])
            stack.pop()
        stack.append((s, end))
    print(pid, tid, len(evs))
