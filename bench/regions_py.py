#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a region costs in Python: ns per `with proftool.region(...)` block, not recording
(PROFTOOL_REGIONS unset) and recording (into a temporary directory), and per call of a
decorated function and per mark(). A measurement to run by hand, not a test:

    python3 bench/regions_py.py [--pairs N] [--runs R]

Each case runs in a fresh interpreter (whether proftool records is decided at import), R
times N blocks; the figure is the median run's time per block less that of the same loop
with an empty body. The module is the tree's python/proftool, unless --installed.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(pairs, runs):
    """Runs in the child: prints "CASE NS" lines, ns per block (or call, or mark)."""
    import proftool

    region = proftool.region

    @proftool.region("decorated")
    def decorated():
        pass

    def plain():
        pass

    def empty(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            pass
        return time.perf_counter_ns() - t

    def blocks(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            with region("step"):
                pass
        return time.perf_counter_ns() - t

    def calls(n, f):
        t = time.perf_counter_ns()
        for _ in range(n):
            f()
        return time.perf_counter_ns() - t

    def marks(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            proftool.mark("tick")
        return time.perf_counter_ns() - t

    cases = {
        "with": (blocks, empty),
        "decorated call": (lambda n: calls(n, decorated), lambda n: calls(n, plain)),
        "mark": (marks, empty),
    }
    for case, (timed, base) in cases.items():
        net = [(timed(pairs) - base(pairs)) / pairs for _ in range(runs)]
        print("%s %.0f" % (case, statistics.median(net)))
    print("enabled %s" % proftool.enabled())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--installed", action="store_true", help="use the installed proftool")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure(args.pairs, args.runs)
        return 0

    env = dict(os.environ)
    env.pop("PROFTOOL_REGIONS", None)
    if not args.installed:
        env["PYTHONPATH"] = os.path.join(HERE, "..", "python")
    cmd = [sys.executable, os.path.abspath(__file__), "--child",
           "--pairs", str(args.pairs), "--runs", str(args.runs)]
    print("%s, %d blocks x %d runs, ns each (median run, less an empty loop)" %
          (sys.version.split()[0], args.pairs, args.runs))
    with tempfile.TemporaryDirectory() as d:
        for label, extra in (("not recording", {}), ("recording", {"PROFTOOL_REGIONS": d})):
            out = subprocess.run(cmd, env=dict(env, **extra), check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
            for line in out.splitlines():
                case, value = line.rsplit(" ", 1)
                print("  %-14s %-16s %s" % (label, case, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
