#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reads region event files (regions/format.h) strictly and prints what they hold.

    rgn_read.py [--summary] [--writer c|py|any] FILE|DIR...

Written for the tests of the Python module (tests/python_regions.bats) independently of
it and of proftool's reader: it shares no code with either, only the header's layout. A
directory stands for its *.rgn files, in name order. For each file it prints

    file NAME
    header pid=P writer=W size=S names_used=U next=X dropped=D next_id=I start_ns=T
    name id=I domain="D" name="N"                           one per name, in file order
    segment at=OFF tid=T seq=Q used=U dropped=D comm="C"    one per segment, in file order
    event tid=T seq=Q time=NS kind=begin|end|mark|pause|resume id=I domain="D" name="N"

events thread by thread (each thread's segments in seq order), domains and names as JSON
strings. --summary prints instead, per file: the header line, then one line per region
"count KIND domain name N" and per thread "thread TID events N segments S dropped D",
then "balanced yes|no" (every end closes the innermost open begin of its id, per thread,
and nothing is left open).

Anything the format does not allow is an error (exit 1, "rgn_read: FILE: what"): a bad
magic, version or size, a name entry or segment out of place or incomplete, a record of
an unknown kind or id, nonzero bytes where nothing was written, a thread's time going
backwards, a segment that is not full but has a successor. --writer (default py) is
the writer the header must name; py also wants the file name "PID-py-N.rgn" with the
header's pid, and name ids 1, 2, ... in file order (the Python writer's lock).
"""

import argparse
import json
import os
import re
import struct
import sys

MAGIC = b"PTREGION"
HEADER_SIZE = 4096
NAMES_SIZE = 1 << 20
SEG_SIZE = 1 << 20
SEG_MAGIC = 0x47455352
WRITERS = {"c": 1, "py": 2}
KINDS = {1: "begin", 2: "end", 3: "mark", 4: "pause", 5: "resume"}

HEADER = struct.Struct("<8sIIIIQQQQQIIQ")
NAME = struct.Struct("<IHH")
SEGMENT = struct.Struct("<IIIIQQ16s16s")
RECORD = struct.Struct("<QIHH")


class Bad(Exception):
    """The file breaks the format."""


def zero(data, what):
    if data.count(0) != len(data):
        raise Bad("%s: nonzero bytes" % what)


def zero_beyond(fd, start, end, what):
    """Checks that the file's bytes from START to END are zero, reading only where the
    file has data (the files are sparse)."""
    pos = start
    while pos < end:
        try:
            data_at = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: a hole up to the end
            return
        if data_at >= end:
            return
        hole_at = min(os.lseek(fd, data_at, os.SEEK_HOLE), end)
        while data_at < hole_at:
            n = min(hole_at - data_at, 1 << 22)
            zero(os.pread(fd, n, data_at), "%s at %d" % (what, data_at))
            data_at += n
        pos = hole_at


def text(data, what):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad("%s is not UTF-8: %r" % (what, data)) from None


class RegionFile:
    """One file, read and checked: header (a dict), names {id: (domain, name)} in file
    order, segments (dicts with their records) in file order."""

    def __init__(self, path, writer="py"):
        self.path = path
        fd = os.open(path, os.O_RDONLY)
        try:
            self._read(fd, writer)
        finally:
            os.close(fd)

    def _read(self, fd, writer):
        length = os.fstat(fd).st_size
        head = os.pread(fd, HEADER_SIZE, 0)
        if len(head) < HEADER_SIZE:
            raise Bad("shorter than its header (%d bytes)" % length)
        (magic, version, header_size, pid, wr, size, names_size, names_used, nxt, dropped,
         next_id, seg_size, start_ns) = HEADER.unpack_from(head)
        self.header = dict(pid=pid, writer=wr, size=size, names_used=names_used, next=nxt,
                           dropped=dropped, next_id=next_id, start_ns=start_ns)
        if magic != MAGIC:
            raise Bad("magic %r" % magic)
        if version != 1 or header_size != HEADER_SIZE:
            raise Bad("version %d, header_size %d" % (version, header_size))
        if writer != "any" and wr != WRITERS[writer]:
            raise Bad("writer %d, not %s" % (wr, writer))
        if writer == "py":
            m = re.fullmatch(r"(\d+)-py-\d+\.rgn", os.path.basename(self.path))
            if not m or int(m.group(1)) != pid:
                raise Bad("named %s, but the header's pid is %d" % (os.path.basename(self.path), pid))
        if size != length:
            raise Bad("size %d in the header, %d on disk" % (size, length))
        if names_size != NAMES_SIZE or seg_size != SEG_SIZE:
            raise Bad("names_size %d, seg_size %d" % (names_size, seg_size))
        zero(head[HEADER.size:], "header padding")
        seg_start = HEADER_SIZE + NAMES_SIZE
        if names_used > names_size or HEADER_SIZE + names_used > size:
            raise Bad("names_used %d" % names_used)
        if nxt < seg_start or (nxt - seg_start) % SEG_SIZE or nxt > max(size, seg_start):
            raise Bad("next %d" % nxt)
        if start_ns == 0:
            raise Bad("start_ns 0")
        self._names(fd, names_used, next_id, writer)
        self._segments(fd, seg_start, nxt, start_ns)
        zero_beyond(fd, HEADER_SIZE + names_used, min(seg_start, size), "names area after names_used")
        zero_beyond(fd, nxt, size, "file after next")

    def _names(self, fd, names_used, next_id, writer):
        area = os.pread(fd, names_used, HEADER_SIZE)
        self.names = {}
        at = 0
        while at < names_used:
            if at + NAME.size > names_used:
                raise Bad("name entry at %d crosses names_used" % at)
            id_, dlen, nlen = NAME.unpack_from(area, at)
            end = at + ((NAME.size + dlen + nlen + 7) & ~7)
            if id_ == 0 or end > names_used:
                raise Bad("incomplete name entry at %d (id %d)" % (at, id_))
            if id_ in self.names or id_ > next_id:
                raise Bad("name id %d (next_id %d)" % (id_, next_id))
            if writer == "py" and id_ != len(self.names) + 1:
                raise Bad("name id %d after %d names" % (id_, len(self.names)))
            body = area[at + NAME.size:end]
            domain = text(body[:dlen], "domain of name %d" % id_)
            name = text(body[dlen:dlen + nlen], "name %d" % id_)
            zero(body[dlen + nlen:], "padding of name %d" % id_)
            self.names[id_] = (domain, name)
            at = end
        if len(self.names) != next_id:
            raise Bad("%d names, next_id %d" % (len(self.names), next_id))

    def _segments(self, fd, seg_start, nxt, start_ns):
        self.segments = []
        last = {}  # tid -> its latest segment (the chain's end)
        for at in range(seg_start, nxt, SEG_SIZE):
            data = os.pread(fd, SEG_SIZE, at)
            magic, tid, seq, flags, used, dropped, comm, reserved = SEGMENT.unpack_from(data)
            where = "segment at %d" % at
            if magic != SEG_MAGIC or tid == 0 or flags != 0:
                raise Bad("%s: magic %#x, tid %d, flags %d" % (where, magic, tid, flags))
            if used % RECORD.size or used > SEG_SIZE - SEGMENT.size:
                raise Bad("%s: used %d" % (where, used))
            if 0 not in comm:
                raise Bad("%s: comm not NUL-terminated" % where)
            cut = comm.index(0)
            zero(comm[cut:], where + ": comm after its NUL")
            zero(reserved, where + ": reserved")
            records = data[SEGMENT.size:SEGMENT.size + used]
            zero(data[SEGMENT.size + used:], where + ": after used")
            seg = dict(at=at, tid=tid, seq=seq, used=used, dropped=dropped,
                       comm=text(comm[:cut], where + ": comm"), events=[])
            prev = last.get(tid)
            if seq == 0:
                pass  # a thread's first segment (or a new thread with an old tid)
            elif prev is None or prev["seq"] != seq - 1:
                raise Bad("%s: tid %d seq %d follows no seq %d" % (where, tid, seq, seq - 1))
            if prev is not None and seq != 0:
                if prev["used"] != SEG_SIZE - SEGMENT.size or prev["dropped"]:
                    raise Bad("%s: seq %d follows one not full (used %d, dropped %d)" %
                              (where, seq, prev["used"], prev["dropped"]))
            time_floor = prev["events"][-1][0] if prev and seq and prev["events"] else start_ns
            for off in range(0, used, RECORD.size):
                t, id_, kind, rflags = RECORD.unpack_from(records, off)
                what = "%s: record %d" % (where, off // RECORD.size)
                if kind not in KINDS or rflags != 0:
                    raise Bad("%s: kind %d, flags %d" % (what, kind, rflags))
                if (kind >= 4) != (id_ == 0) or (id_ and id_ not in self.names):
                    raise Bad("%s: %s of id %d" % (what, KINDS[kind], id_))
                if t < time_floor:
                    raise Bad("%s: time %d before %d" % (what, t, time_floor))
                time_floor = t
                seg["events"].append((t, id_, kind))
            last[tid] = seg
            self.segments.append(seg)

    def threads(self):
        """{tid: [segments, in seq order]}, each chain of a reused tid after the last."""
        out = {}
        for seg in self.segments:  # file order is allocation order
            out.setdefault(seg["tid"], []).append(seg)
        return out

    def label(self, id_):
        domain, name = self.names.get(id_, ("", ""))
        return "id=%d domain=%s name=%s" % (id_, json.dumps(domain), json.dumps(name))


def header_line(f):
    h = f.header
    return ("header pid=%(pid)d writer=%(writer)d size=%(size)d names_used=%(names_used)d "
            "next=%(next)d dropped=%(dropped)d next_id=%(next_id)d start_ns=%(start_ns)d" % h)


def print_file(f, out):
    out.write("file %s\n%s\n" % (os.path.basename(f.path), header_line(f)))
    for id_, (domain, name) in f.names.items():
        out.write("name id=%d domain=%s name=%s\n" % (id_, json.dumps(domain), json.dumps(name)))
    for s in f.segments:
        out.write("segment at=%d tid=%d seq=%d used=%d dropped=%d comm=%s\n" %
                  (s["at"], s["tid"], s["seq"], s["used"], s["dropped"], json.dumps(s["comm"])))
    for tid, segs in f.threads().items():
        for s in segs:
            for t, id_, kind in s["events"]:
                out.write("event tid=%d seq=%d time=%d kind=%s %s\n" %
                          (tid, s["seq"], t, KINDS[kind], f.label(id_)))


def print_summary(f, out):
    out.write("file %s\n%s\n" % (os.path.basename(f.path), header_line(f)))
    counts = {}
    balanced = True
    for tid, segs in f.threads().items():
        open_ = []
        for s in segs:
            for _, id_, kind in s["events"]:
                key = (KINDS[kind], id_)
                counts[key] = counts.get(key, 0) + 1
                if kind == 1:
                    open_.append(id_)
                elif kind == 2:
                    if id_ in open_:
                        del open_[len(open_) - 1 - open_[::-1].index(id_)]
                    else:
                        balanced = False
        balanced = balanced and not open_
        out.write("thread %d events %d segments %d dropped %d\n" %
                  (tid, sum(len(s["events"]) for s in segs), len(segs),
                   sum(s["dropped"] for s in segs)))
    for (kind, id_), n in sorted(counts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        domain, name = f.names.get(id_, ("", ""))
        out.write("count %s domain=%s name=%s %d\n" % (kind, json.dumps(domain), json.dumps(name), n))
    out.write("balanced %s\n" % ("yes" if balanced else "no"))


def files_of(args):
    for a in args:
        if os.path.isdir(a):
            for n in sorted(os.listdir(a)):
                if n.endswith(".rgn"):
                    yield os.path.join(a, n)
        else:
            yield a


def main():
    ap = argparse.ArgumentParser(description="Reads region event files strictly.")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--writer", choices=["c", "py", "any"], default="py")
    ap.add_argument("paths", nargs="+", metavar="FILE|DIR")
    args = ap.parse_args()
    for path in files_of(args.paths):
        try:
            f = RegionFile(path, args.writer)
        except Bad as e:
            sys.stdout.flush()
            print("rgn_read: %s: %s" % (path, e), file=sys.stderr)
            return 1
        (print_summary if args.summary else print_file)(f, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
