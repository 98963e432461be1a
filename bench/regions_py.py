#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a region costs in Python: ns per `with proftool.region(...)` block, not recording
(PROFTOOL_REGIONS unset) and recording (into a temporary directory), and per call of a
decorated function and per mark(). bench/regions.sh (make bench) runs it; by hand:

    python3 bench/regions_py.py [--pairs N] [--runs R]

Each case runs in a fresh interpreter (whether proftool records is decided at import), R
times N blocks; the figures are the median run's time per block less that of the same
loop with an empty body: wall-clock time, and the thread's CPU time (which other work on
the machine does not inflate). The module is the tree's python/proftool, unless
--installed. The temporary directory is made in $TMPDIR, as `proftool record` makes its.
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
    """Runs in the child: prints "CASE<tab>WALL<tab>CPU" lines, ns per block (or call, or
    mark), then "enabled<tab>BOOL"."""
    import proftool

    region = proftool.region

    @proftool.region("decorated")
    def decorated():
        pass

    def plain():
        pass

    wall, cpu = time.perf_counter_ns, time.thread_time_ns

    # each returns (wall ns, CPU ns) for N iterations
    def empty(n):
        t, c = wall(), cpu()
        for _ in range(n):
            pass
        return wall() - t, cpu() - c

    def blocks(n):
        t, c = wall(), cpu()
        for _ in range(n):
            with region("step"):
                pass
        return wall() - t, cpu() - c

    def calls(n, f):
        t, c = wall(), cpu()
        for _ in range(n):
            f()
        return wall() - t, cpu() - c

    def marks(n):
        t, c = wall(), cpu()
        for _ in range(n):
            proftool.mark("tick")
        return wall() - t, cpu() - c

    cases = {
        "with": (blocks, empty),
        "decorated call": (lambda n: calls(n, decorated), lambda n: calls(n, plain)),
        "mark": (marks, empty),
    }
    for case, (timed, base) in cases.items():
        net_wall, net_cpu = [], []
        for _ in range(runs):
            (tw, tc), (bw, bc) = timed(pairs), base(pairs)
            net_wall.append((tw - bw) / pairs)
            net_cpu.append((tc - bc) / pairs)
        print("%s\t%.0f\t%.0f" % (case, statistics.median(net_wall), statistics.median(net_cpu)))
    print("enabled\t%s" % proftool.enabled())


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
    print("%s, %d blocks x %d runs, ns each (median run, less an empty loop): wall, CPU" %
          (sys.version.split()[0], args.pairs, args.runs))
    with tempfile.TemporaryDirectory() as d:
        for label, extra in (("not recording", {}), ("recording", {"PROFTOOL_REGIONS": d})):
            out = subprocess.run(cmd, env=dict(env, **extra), check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
            for line in out.splitlines():
                case, values = line.split("\t", 1)
                print("  %-14s %-16s %s" % (label, case, values.replace("\t", " ")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
