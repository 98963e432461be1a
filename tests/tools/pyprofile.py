#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes a profile shaped like a Python job's, for the report tests (tests/report_python.bats).

    pyprofile.py OUT [--meta-python JSON] [--main-only] [--plain]

The recorder cannot read Python frames yet, so this builds the file proftool record
will write (docs/profile-format.md) directly, with counts known in advance. The main
thread of python3 (pid 4242) runs <module> -> train -> Trainer.step in /tmp/x/train.py,
which calls native code (_PyObject_Call, then matmul_kernel in /src/kernel.c); its
loader thread (tid 4243) runs load.<locals>.read in /tmp/x/data.py. Samples, self/cum:

    stack (root first, @line: the location's line)                            samples
    _start;__libc_start_main;Py_RunMain;<module>@60;train@35;Trainer.step@44;
        _PyObject_Call;matmul_kernel@104                                           50
    ... Trainer.step@44;_PyObject_Call;matmul_kernel@108                           30
    ... train@35;Trainer.step@47                                                   15
    ... <module>@60;train@36                                                        5
    ... Trainer.step@44;_PyObject_Call;Trainer.step@44;_PyObject_Call;
        matmul_kernel@104 (recursion: counted once)                                 5
    start_thread;load.<locals>.read@14;read                                        20
    start_thread;load.<locals>.read@15                                             10

meta.python holds a supported CPython 3.11 with misses and an unsupported 3.10, unless
--meta-python gives other JSON for it (any JSON, to test what the reader refuses).
--main-only leaves the loader thread's samples out (a second run for proftool diff).
--native adds samples without Python frames (for report --split and --group-by): a
native thread of python3 (tid 4244, "omp") and a process that runs no Python (sh, pid
4300, forked by python3):

    start_thread;gomp_thread_start;gomp_barrier_wait (libgomp.so.1), thread omp      12
    __libc_start_main;main;sh_work (sh), process sh                                   8
"""

import argparse
import gzip
import json

PY = "[python]"
TRAIN, DATA = "/tmp/x/train.py", "/tmp/x/data.py"

FUNCS = [  # name, module, file, first line
    ("_start", "python3.11", None, 0),
    ("__libc_start_main", "libc.so.6", None, 0),
    ("Py_RunMain", "python3.11", None, 0),
    ("<module>", PY, TRAIN, 1),
    ("train", PY, TRAIN, 30),
    ("Trainer.step", PY, TRAIN, 41),
    ("_PyObject_Call", "python3.11", None, 0),
    ("matmul_kernel", "libkernel.so", "/src/kernel.c", 100),
    ("start_thread", "libc.so.6", None, 0),
    ("load.<locals>.read", PY, DATA, 12),
    ("read", "libc.so.6", None, 0),
]
NATIVE_FUNCS = [
    ("gomp_thread_start", "libgomp.so.1", None, 0),
    ("gomp_barrier_wait", "libgomp.so.1", None, 0),
    ("main", "sh", None, 0),
    ("sh_work", "sh", None, 0),
]
F = {name: i for i, (name, _, _, _) in enumerate(FUNCS + NATIVE_FUNCS)}

MAIN = ["_start", "__libc_start_main", "Py_RunMain", ("<module>", 60), ("train", 35)]
STACKS = [  # thread, frames root first (a name, or (name, line)), samples
    (0, MAIN + [("Trainer.step", 44), "_PyObject_Call", ("matmul_kernel", 104)], 50),
    (0, MAIN + [("Trainer.step", 44), "_PyObject_Call", ("matmul_kernel", 108)], 30),
    (0, MAIN + [("Trainer.step", 47)], 15),
    (0, MAIN[:-1] + [("train", 36)], 5),
    (0, MAIN + [("Trainer.step", 44), "_PyObject_Call", ("Trainer.step", 44), "_PyObject_Call",
                ("matmul_kernel", 104)], 5),
    (1, ["start_thread", ("load.<locals>.read", 14), "read"], 20),
    (1, ["start_thread", ("load.<locals>.read", 15)], 10),
]
NATIVE_STACKS = [
    (2, ["start_thread", "gomp_thread_start", "gomp_barrier_wait"], 12),
    (3, ["__libc_start_main", "main", "sh_work"], 8),
]

PYTHONS = [
    {"interpreter": "/usr/bin/python3.11", "version": "3.11.2", "unsupported": None,
     "samples": 148, "with_frames": 135,
     "misses": [{"reason": "torn", "count": 3}, {"reason": "no Python thread state", "count": 10}]},
    {"interpreter": "/usr/bin/python3.10", "version": "3.10.12",
     "unsupported": "CPython 3.10 is not supported (3.11 to 3.13 are)",
     "samples": 7, "with_frames": 0, "misses": []},
]


def build(meta_python, main_only, native):
    locs, loc_index = [], {}
    stacks, stack_index = [], {}

    def loc(frame):
        name, line = frame if isinstance(frame, tuple) else (frame, 0)
        key = (F[name], line)
        if key not in loc_index:
            loc_index[key] = len(locs)
            locs.append(key)
        return loc_index[key]

    def stack(frames):
        parent = -1
        for fr in frames:
            key = (parent, loc(fr))
            if key not in stack_index:
                stack_index[key] = len(stacks)
                stacks.append(key)
            parent = stack_index[key]
        return parent

    # one sample per millisecond, the stacks taking turns so that each thread's run in
    # time is mixed, as a real recording's is
    pending = [[stack(frames), thread, n] for thread, frames, n in
               STACKS + (NATIVE_STACKS if native else [])
               if not (main_only and thread)]
    times, threads, leaves = [], [], []
    t = 0
    while any(p[2] for p in pending):
        for p in pending:
            if p[2]:
                p[2] -= 1
                t += 1000
                times.append(t)
                threads.append(p[1])
                leaves.append(p[0])
    deltas = [times[0]] + [b - a for a, b in zip(times, times[1:])]
    meta = {
        "tool_version": "0.1.0", "command": "python3 train.py", "event": "cpu-clock",
        "callgraph": "dwarf", "mode": "cpu", "backend": "perf", "host": "testhost",
        "kernel": "6.1.0", "freq": 1000, "period_ns": 1000000,
        "start_real_ns": 1767225600000000000, "duration_ns": t * 1000 + 1000000,
        "lost": 0, "cpu_time_ns": len(times) * 1000000, "exit_status": 0,
        "samples": len(times), "unwind_stops": [], "python": meta_python,
    }
    funcs = FUNCS + (NATIVE_FUNCS if native else [])
    return {
        "format": "proftool-profile", "version": 1, "meta": meta,
        "functions": {"name": [f[0] for f in funcs], "module": [f[1] for f in funcs],
                      "file": [f[2] for f in funcs], "line": [f[3] for f in funcs]},
        "locations": {"function": [l[0] for l in locs], "line": [l[1] for l in locs]},
        "stacks": {"parent": [s[0] for s in stacks], "location": [s[1] for s in stacks]},
        "processes": [{"pid": 4242, "ppid": 1, "comm": "python3", "cmdline": "python3 train.py"}]
        + ([{"pid": 4300, "ppid": 4242, "comm": "sh", "cmdline": "sh -c true"}] if native else []),
        "threads": [{"tid": 4242, "process": 0, "comm": "python3"},
                    {"tid": 4243, "process": 0, "comm": "loader"}]
        + ([{"tid": 4244, "process": 0, "comm": "omp"},
            {"tid": 4300, "process": 1, "comm": "sh"}] if native else []),
        "samples": {"time_us_delta": deltas, "thread": threads, "stack": leaves},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--meta-python", help="JSON for meta.python instead of the default")
    ap.add_argument("--main-only", action="store_true", help="only the main thread's samples")
    ap.add_argument("--plain", action="store_true", help="write plain JSON, not gzip'd")
    ap.add_argument("--native", action="store_true",
                    help="add a native thread and a process without Python")
    a = ap.parse_args()
    meta_python = json.loads(a.meta_python) if a.meta_python is not None else PYTHONS
    text = json.dumps(build(meta_python, a.main_only, a.native)).encode()
    with open(a.out, "wb") as f:
        f.write(text if a.plain else gzip.compress(text))


if __name__ == "__main__":
    main()
