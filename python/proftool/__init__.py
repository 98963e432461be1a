# SPDX-License-Identifier: MIT
"""Named regions for proftool: tell the profiler what your Python program is doing.

    import proftool

    with proftool.region("forward"):        # a region around a block
        ...

    @proftool.region("train_step")          # around every call of a function or method
    def train_step(batch):
        ...

    proftool.mark("epoch")                  # an instant
    proftool.pause()                        # the process stops being recorded ...
    proftool.resume()                       # ... and starts again

    proftool.begin("load", domain="data")   # separate start and stop calls, for adapters
    proftool.end("load", domain="data")

`proftool record` counts each region, times it exactly, and attributes the samples taken
inside it. Regions nest and may recurse; every thread and every process (forked, spawned
or exec'd) records its own.

Off unless recorded. Whether the module records is decided once, when it is imported:
if the environment variable PROFTOOL_REGIONS names a directory (`proftool record` sets it
for the program and everything it starts), it records; if it is unset or empty, every
call above is a no-op -- region() returns one shared object whose `with` does nothing
(about 0.12 us on Debian 12's python3.11), and the decorator returns the function itself,
unchanged -- so the calls can stay in the program. Setting the variable after the import
changes nothing. enabled() says which it is. Python 3.8 or later.

What is recorded, and where: the format is regions/format.h in proftool's source (the
region event file). Each process that records makes one file of its own in the directory,
"PID-py-N.rgn", when it records its first event: a process that imports this module but
records nothing leaves no file. The file is PROFTOOL_REGIONS_MB MiB (default 256) and
mapped into memory; each thread writes its events into a segment of it of its own, 1 MiB
(65532 events) at a time, with no lock and no system call. Recording a `with` block costs
about 0.75 us there (bench/regions_py.py measures it). When the file is full, further
events are dropped and counted in it; nothing blocks and nothing is overwritten. What
was written survives the process's death, a SIGKILL included.

The profiler never raises into the program. A name that is not a str is recorded as
str(name). If the file cannot be made (the directory is missing or not writable, the
disk is full), the process goes on without regions, with one RuntimeWarning at the
program's line that recorded first, its message starting "proftool:" (filter it like
any other warning; under -W error it is not shown at all); a process forked from it
stays without regions, one exec'd from it tries again. Room on disk for the parts of
the file in use is reserved before they are written (posix_fallocate), so a full disk
drops events instead of killing the program with SIGBUS.

Limits worth knowing:
- Names (and domains) are UTF-8, cut to 65535 bytes. A file has room for 1 MiB of
  names, some 30000 short ones: the events of names past that are dropped and counted.
  Names made up as the program runs ("batch 1234") soon get there; use a fixed name.
- The decorator times the call. On a generator function or an `async def` that is only
  the creation of the generator or coroutine object, not its run: use `with` inside it.
- pause() and resume() write their events and set the recording's pause switch, which
  stops proftool's sampler within about 100 ms (the events say exactly when); regions are
  still written while paused, and proftool leaves out those begun in the pause.
- A region open when the process forks is open in both: a child that leaves it
  records its end without its begin.

Adapters route the timers of some frameworks into regions: proftool.lightning
(a Lightning Profiler), proftool.mlagents, proftool.sample_factory and proftool.torch_ops.
"""

import os

__all__ = ["region", "begin", "end", "mark", "pause", "resume", "enabled"]


class _NoRegion:
    """What region() returns when nothing is recorded: a context manager and a decorator
    that do nothing. There is one, shared by every call (see _NO_REGION)."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False

    def __call__(self, func):
        return func

    def __repr__(self):
        return "<proftool region (not recording)>"


_NO_REGION = _NoRegion()


if os.environ.get("PROFTOOL_REGIONS"):
    from proftool._writer import begin, enabled, end, mark, pause, region, resume
else:

    def region(name, domain=""):
        """A region named NAME in DOMAIN ("" is the default domain): `with
        proftool.region(name):` records the block, `@proftool.region(name)` every call of
        the function. The same object may be entered again while it is open (recursion)
        and from several threads at once."""
        return _NO_REGION

    def begin(name, domain=""):
        """Opens the region NAME in DOMAIN on the calling thread (see end())."""

    def end(name, domain=""):
        """Closes the innermost region NAME of DOMAIN open on the calling thread."""

    def mark(name, domain=""):
        """Records the instant NAME in DOMAIN on the calling thread."""

    def pause():
        """Records that the process stops being recorded, until resume()."""

    def resume():
        """Records that the process is recorded again, after pause()."""

    def enabled():
        """Whether regions are recorded: PROFTOOL_REGIONS was set when proftool was
        imported, and the process's file could be made (False once it could not)."""
        return False
