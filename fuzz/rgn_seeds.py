#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes small region event files (regions/format.h) into DIR, as seeds for
fuzz_regions_read and hostile inputs for tests/fuzz.bats:

    rgn_seeds.py DIR

Files the runtime writes are at least 2 MiB (a 1 MiB names area, 1 MiB segments), past
what a fuzzer mutates well; these have the same layout with a names area and segments
of a few hundred bytes, which the format allows (the header gives both sizes). Each
holds something the reader must take apart: threads, several segments of one thread, a
tid given again to a later thread, domains, every kind of event, drops, a record torn
by a death, a name entry and a segment never finished, a file cut short.
"""

import os
import struct
import sys

MAGIC = b"PTREGION"
HEADER_SIZE = 4096
SEG_MAGIC = 0x47455352
BEGIN, END, MARK, PAUSE, RESUME = 1, 2, 3, 4, 5

HEADER = struct.Struct("<8sIIIIQQQQQIIQ")
NAME = struct.Struct("<IHH")
SEGMENT = struct.Struct("<IIIIQQ16s16x")
RECORD = struct.Struct("<QIHH")


class File:
    """A file being made: names and segments are added in file order."""

    def __init__(self, names_size=256, seg_size=256, writer=1, pid=4242):
        self.names_size = names_size
        self.seg_size = seg_size
        self.writer = writer
        self.pid = pid
        self.names = b""
        self.next_id = 0
        self.segs = []
        self.dropped = 0

    def name(self, name, domain="", id_=None):
        d, n = domain.encode(), name.encode()
        self.next_id += 1
        size = (NAME.size + len(d) + len(n) + 7) & ~7
        entry = NAME.pack(self.next_id if id_ is None else id_, len(d), len(n)) + d + n
        self.names += entry.ljust(size, b"\0")
        return self.next_id

    def segment(self, tid, seq, events, dropped=0, comm="main", used=None, magic=SEG_MAGIC):
        """EVENTS: (time_ns, id, kind) tuples."""
        recs = b"".join(RECORD.pack(t, i, k, 0) for t, i, k in events)
        room = self.seg_size - SEGMENT.size
        assert len(recs) <= room, "segment overflows"
        head = SEGMENT.pack(magic, tid, seq, 0, len(recs) if used is None else used, dropped,
                            comm.encode()[:15])
        self.segs.append((head + recs).ljust(self.seg_size, b"\0"))

    def bytes(self, extra_segs=0, cut=None):
        """The file; EXTRA_SEGS segments handed out but never begun; CUT bytes only."""
        segs = b"".join(self.segs) + b"\0" * (extra_segs * self.seg_size)
        names = self.names.ljust(self.names_size, b"\0")
        size = HEADER_SIZE + self.names_size + len(segs)
        head = HEADER.pack(MAGIC, 1, HEADER_SIZE, self.pid, self.writer, size,
                           self.names_size, len(self.names), HEADER_SIZE + self.names_size + len(segs),
                           self.dropped, self.next_id, self.seg_size, 1000)
        data = head.ljust(HEADER_SIZE, b"\0") + names + segs
        return data if cut is None else data[:cut]


def pairs(t0, id_, n, step=10):
    """N begin/end pairs of ID_ from T0 on."""
    out = []
    for k in range(n):
        out += [(t0 + 2 * k * step, id_, BEGIN), (t0 + (2 * k + 1) * step, id_, END)]
    return out


def seeds():
    out = {}

    f = File()
    fwd = f.name("forward")
    rd = f.name("read", "io")
    ep = f.name("epoch")
    f.segment(100, 0, [(2000, fwd, BEGIN), (2001, rd, BEGIN), (2002, rd, END), (2003, ep, MARK),
                       (2004, 0, PAUSE), (2005, 0, RESUME), (2006, fwd, END)])
    out["one-thread"] = f.bytes()

    # three threads, two of them over several segments (12 records each), a tid given
    # again (100: seq 0, 1, then 0, 1 of a later thread), drops on a last segment
    f = File(seg_size=256)
    a = f.name("step")
    b = f.name("load", "data")
    f.segment(100, 0, pairs(1000, a, 6), comm="worker")
    f.segment(101, 0, pairs(1100, b, 3), comm="loader")
    f.segment(100, 1, pairs(1200, a, 2), comm="worker")
    f.segment(102, 0, pairs(1300, a, 1) + [(1400, b, MARK)], comm="t102")
    f.segment(100, 0, pairs(5000, b, 6), comm="worker2")
    f.segment(100, 1, pairs(6000, b, 1), dropped=7, comm="worker2")
    f.dropped = 3
    out["threads"] = f.bytes(extra_segs=1)

    # the Python writer's header, a longer names area, names in UTF-8
    f = File(names_size=512, seg_size=128, writer=2, pid=77)
    ids = [f.name("n%d" % i, "dom" if i % 2 else "") for i in range(8)]
    ids.append(f.name("caf\u00e9 \u2603"))
    f.segment(77, 0, [(10, ids[0], BEGIN), (20, ids[8], MARK), (30, ids[0], END)])
    f.segment(78, 0, [(15, ids[3], BEGIN), (25, ids[3], END)])
    out["python"] = f.bytes()

    # what a death leaves: a record of kind 0 after `used` was stored, a name entry whose
    # id is not yet written, a segment handed out but never begun
    f = File()
    x = f.name("x")
    f.name("half", id_=0)
    f.segment(9, 0, pairs(100, x, 2) + [(0, 0, 0)], used=5 * RECORD.size)
    out["death"] = f.bytes(extra_segs=2)

    # broken: an unknown id, time going back, an unknown kind, used past the segment
    f = File()
    x = f.name("x")
    f.segment(1, 0, [(10, x, BEGIN), (11, 9, END)])
    f.segment(2, 0, [(10, x, BEGIN), (5, x, END)])
    f.segment(3, 0, [(10, x, 7)])
    f.segment(4, 0, pairs(10, x, 1), used=1 << 40)
    f.segment(5, 0, pairs(10, x, 1), magic=0)
    out["broken"] = f.bytes()

    # fuzz_regions_read's findings: names_size so large that the end of the names area
    # wrapped around to the start of the file, where segments were then looked for
    f = File()
    f.name("x")
    f.segment(1, 0, pairs(10, 1, 2))
    data = bytearray(f.bytes())
    struct.pack_into("<Q", data, 32, (1 << 64) - 0x900)  # rgn_header.names_size
    data[0x700:0x700 + 16] = SEGMENT.pack(SEG_MAGIC, 1, 0, 0, 64, 0, b"")[:16]
    out["wrapped-names-size"] = bytes(data)

    # the threads file cut inside a segment, and inside the names
    whole = out["threads"]
    out["cut-segment"] = whole[:HEADER_SIZE + 256 + 256 + 100]
    out["cut-names"] = whole[:HEADER_SIZE + 20]
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: rgn_seeds.py DIR\n")
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(sys.argv[1], name + ".rgn"), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
