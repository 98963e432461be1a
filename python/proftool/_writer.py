# SPDX-License-Identifier: MIT
"""The recording side of proftool's region API: writes this process's region event file.

Imported by proftool/__init__.py only when PROFTOOL_REGIONS is set. The file's layout is
regions/format.h in proftool's source; the constants and structs below mirror it, and
that header is the contract (the names below are its names).

State, and who may touch it:
- The name table (_names, _regions, _names_used) is the process's truth about region ids:
  an id is handed out when a name is first used, whether or not the file exists yet, and
  the file gets the entry when it is made (all entries so far) or when the name is new.
  A forked child keeps the table, so ids cached in region objects and decorators stay
  valid there; the child writes them all into its own file.
- The file (_file) and the allocation of names and segments are under _lock. The lock is
  held across fork (os.register_at_fork), so a child never sees them half done.
- Each thread writes only its own segment (_tls.seg), with no lock: a record is stored,
  then the segment's `used`, which is what commits it for the reader.
"""

import functools
import mmap
import os
import struct
import sys
import threading
import time
import warnings

# ---- regions/format.h ----
RGN_MAGIC = b"PTREGION"
RGN_VERSION = 1
RGN_HEADER_SIZE = 4096
RGN_NAMES_SIZE = 1 << 20
RGN_SEG_SIZE = 1 << 20
RGN_FILE_MB = 256
RGN_SEG_MAGIC = 0x47455352
RGN_WRITER_PYTHON = 2

RGN_BEGIN = 1
RGN_END = 2
RGN_MARK = 3
RGN_PAUSE = 4
RGN_RESUME = 5

# struct rgn_header: magic, version, header_size, pid, writer, size, names_size, names_used,
# next, dropped, next_id, seg_size, start_ns (80 bytes); the offsets of the fields updated
# after the file is made
_HEADER = struct.Struct("<8sIIIIQQQQQIIQ")
_H_NAMES_USED = 40
_H_NEXT = 48
_H_DROPPED = 56
_H_NEXT_ID = 64
# struct rgn_name without its text: id, domain_len, name_len (8 bytes)
_NAME = struct.Struct("<IHH")
# struct rgn_segment: magic, tid, seq, flags, used, dropped, comm[16], reserved[2] (64 bytes)
_SEGMENT = struct.Struct("<IIIIQQ16s16x")
_S_USED = 16
_S_DROPPED = 24
# struct rgn_record: time_ns, id, kind, flags (16 bytes)
_RECORD = struct.Struct("<QIHH")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
# the hot path's two stores, looked up once
_pack_record = _RECORD.pack_into
_pack_u64 = _U64.pack_into

assert (_HEADER.size, _NAME.size, _SEGMENT.size, _RECORD.size) == (80, 8, 64, 16)

_MAX_LEN = 0xFFFF  # domain_len and name_len are 16 bits

# Room on disk is reserved (posix_fallocate) before any part of the file is written
# through the map: writing a hole of a full file system or tmpfs raises SIGBUS, which
# would kill the program. Names are reserved one by one, segments a chunk at a time, so
# that a file takes on disk about what it holds: 4 KiB and 64 KiB per thread to start.
_CHUNK = 64 << 10


def _file_size():
    """The size of a file in bytes: PROFTOOL_REGIONS_MB MiB, or the default when it is
    unset or not a positive whole number."""
    try:
        mb = int(os.environ.get("PROFTOOL_REGIONS_MB", ""))
    except ValueError:
        mb = 0
    return (mb if mb > 0 else RGN_FILE_MB) << 20


# Decided at import, like recording itself (see proftool's docstring); a relative
# directory is taken from the working directory of then.
_DIRECTORY = os.environ["PROFTOOL_REGIONS"]
try:
    _DIRECTORY = os.path.abspath(_DIRECTORY)
except OSError:  # no working directory: the first event will fail and say so
    pass
_SIZE = _file_size()
# the bytes of the names area that lie in the file (all of it, unless the file is tiny)
_NAMES_ROOM = max(0, min(RGN_NAMES_SIZE, _SIZE - RGN_HEADER_SIZE))
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_monotonic_ns = time.monotonic_ns

# ---- per-process state (reset in a forked child) ----
_lock = threading.RLock()  # _file, the name table, segments; held across fork
_tls = threading.local()   # .seg: the calling thread's _Segment (or a stand-in)
_file = None               # this process's _File, once made
_full = False              # no room left, in the file or on the disk: stop asking
_off = False               # the file could not be made: record nothing

# ---- the name table (kept by a forked child) ----
_names = []         # _Name entries, in id order (id = index + 1)
_names_used = 0     # bytes of the names area they take
_regions = {}       # name (default domain) or (domain, name) -> its _Region


def _text(x):
    """X as a str: itself, or str(X) (a placeholder if that fails: never raise)."""
    if isinstance(x, str):
        return x
    try:
        return str(x)
    except Exception:
        return "<%s object>" % type(x).__name__


def _encode(text, limit):
    """The str TEXT as UTF-8, cut to at most LIMIT bytes without splitting a character."""
    data = text.encode("utf-8", "replace")
    if len(data) > limit:
        data = data[:limit].decode("utf-8", "ignore").encode("utf-8")
    return data


class _Name:
    """A name table entry: its id, its place in the names area, and its rgn_name bytes."""

    __slots__ = ("id", "offset", "entry")

    def __init__(self, id_, offset, domain, name):
        self.id = id_
        self.offset = offset
        size = (_NAME.size + len(domain) + len(name) + 7) & ~7
        # the id is left 0 here: _File.write_name stores it last
        self.entry = (_NAME.pack(0, len(domain), len(name)) + domain + name).ljust(size, b"\0")


class _File:
    """This process's region event file, mapped shared; made by _File.create()."""

    __slots__ = ("fd", "mm", "next")

    def __init__(self, fd, mm):
        self.fd = fd
        self.mm = mm
        self.next = RGN_HEADER_SIZE + RGN_NAMES_SIZE  # where the next segment goes

    @classmethod
    def create(cls):
        """Makes "PID-py-N.rgn" in the directory (N the first that is free), writes its
        header and the name table so far, and returns it. Raises OSError."""
        pid = os.getpid()
        n = 0
        while True:
            path = os.path.join(_DIRECTORY, "%d-py-%d.rgn" % (pid, n))
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                break
            except FileExistsError:
                n += 1
        try:
            os.ftruncate(fd, _SIZE)
            os.posix_fallocate(fd, 0, RGN_HEADER_SIZE + _names_used)
            mm = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        f = cls(fd, mm)
        for name in _names:
            f.write_name(name)
        # the magic last: a reader that finds it finds the rest of the header written
        _HEADER.pack_into(mm, 0, b"\0" * 8, RGN_VERSION, RGN_HEADER_SIZE, pid,
                          RGN_WRITER_PYTHON, _SIZE, RGN_NAMES_SIZE, _names_used, f.next,
                          0, len(_names), RGN_SEG_SIZE, _monotonic_ns())
        mm[0:8] = RGN_MAGIC
        return f

    def write_name(self, name):
        """Writes NAME's entry, its id last, then counts it in the header. Its room on
        disk is reserved already (see _intern)."""
        at = RGN_HEADER_SIZE + name.offset
        self.mm[at:at + len(name.entry)] = name.entry
        _U32.pack_into(self.mm, at, name.id)
        _U64.pack_into(self.mm, _H_NAMES_USED, name.offset + len(name.entry))
        _U32.pack_into(self.mm, _H_NEXT_ID, name.id)

    def new_segment(self, tid, seq, comm):
        """Hands out the next segment, for thread TID (its SEQth), named COMM; None when
        the file has no room for it."""
        at = self.next
        if at + RGN_SEG_SIZE > _SIZE or not self.reserve(at, _CHUNK):
            return None
        _SEGMENT.pack_into(self.mm, at, 0, tid, seq, 0, 0, 0, comm)
        _U32.pack_into(self.mm, at, RGN_SEG_MAGIC)
        self.next = at + RGN_SEG_SIZE
        _U64.pack_into(self.mm, _H_NEXT, self.next)
        return _Segment(self, at, tid, seq)

    def reserve(self, offset, length):
        """Reserves room on disk for LENGTH bytes at OFFSET; whether it could."""
        try:
            os.posix_fallocate(self.fd, offset, length)
            return True
        except OSError:
            return False

    def drop(self):
        """Counts an event dropped where no segment could take it (under _lock)."""
        dropped = _U64.unpack_from(self.mm, _H_DROPPED)[0] + 1
        _U64.pack_into(self.mm, _H_DROPPED, dropped)

    def close(self):
        """Unmaps the file and closes it (in a forked child: the parent's)."""
        try:
            self.mm.close()
            os.close(self.fd)
        except (OSError, ValueError, BufferError):
            pass


class _Segment:
    """A segment of FILE, written by one thread: `pos` is the file offset of its next
    record, `end` that of the end of the room reserved so far, `limit` the segment's."""

    __slots__ = ("file", "mm", "base", "used_at", "records", "pos", "end", "limit", "tid",
                 "seq", "dropped")

    def __init__(self, file, base, tid, seq):
        self.file = file
        self.mm = file.mm
        self.base = base
        self.used_at = base + _S_USED
        self.records = base + _SEGMENT.size
        self.pos = self.records
        self.end = base + _CHUNK
        self.limit = base + RGN_SEG_SIZE
        self.tid = tid
        self.seq = seq
        self.dropped = 0

    def overflow(self, id_, kind):
        """Records the event (ID_, KIND) that did not fit: into the next chunk of this
        segment, or the thread's next segment, or, when the file (or the disk) has no
        room left, counts it in this one's `dropped`."""
        if self.end < self.limit and not _full:
            if self.file.reserve(self.end, _CHUNK):
                self.end += _CHUNK
                _put(id_, kind)
                return
            _no_room()
        seg = _next_segment(self)
        if seg is None:
            self.dropped += 1
            _U64.pack_into(self.mm, self.base + _S_DROPPED, self.dropped)
            return
        _tls.seg = seg
        _put(id_, kind)


class _Nowhere:
    """Stands in for the segment of a thread that has none: its `pos` is never below its
    `end`, so every event goes to overflow(), which counts it in the file's header (the
    file was full when the thread started), or does nothing (recording is off)."""

    __slots__ = ("pos", "end")

    def __init__(self):
        self.pos = 1
        self.end = 0

    def overflow(self, id_, kind):
        with _lock:
            if _file is not None and not _off:
                _file.drop()


def _put(id_, kind):
    """Records the event (ID_, KIND) now, on the calling thread. The hot path: no lock,
    and no system call but in overflow(), once per 4096 events. The record's place is taken before it is written, and `used` is
    computed from `pos` after, so that a signal handler recording between the two
    steps does not overwrite the record, nor leave it out of `used`."""
    try:
        seg = _tls.seg
    except AttributeError:
        seg = _thread_segment()
    pos = seg.pos
    if pos < seg.end:
        seg.pos = pos + 16
        _pack_record(seg.mm, pos, _monotonic_ns(), id_, kind, 0)
        # XXX: a plain store, not a release: on aarch64 a reader running beside the
        # writer could see `used` before the record; it is zero until written, so a
        # reader that drops a record of kind 0 as torn stays right. x86-64 keeps the order.
        _pack_u64(seg.mm, seg.used_at, seg.pos - seg.records)
    else:
        seg.overflow(id_, kind)


def _comm():
    """The calling thread's name, cut to 15 bytes of UTF-8 (rgn_segment.comm)."""
    return _encode(threading.current_thread().name, 15)


def _thread_segment():
    """The calling thread's first segment, made (with the file, on the process's first
    event) and remembered in _tls; a _Nowhere when there is no room or recording is off."""
    seg = None
    with _lock:
        if _make_file():
            seg = _file.new_segment(threading.get_native_id(), 0, _comm())
            if seg is None:
                _no_room()
    if seg is None:
        seg = _Nowhere()
    _tls.seg = seg
    return seg


def _next_segment(seg):
    """The segment that follows SEG for its thread, or None when the file is full."""
    if _full or _off:
        return None
    with _lock:
        new = None
        if _file is not None and not _full:
            new = _file.new_segment(seg.tid, seg.seq + 1, _comm())
            if new is None:
                _no_room()
        return new


def _no_room():
    """Notes that no room is left (in the file, or on the disk), so that threads stop
    asking (a flag, set with or without _lock)."""
    global _full
    _full = True


def _make_file():
    """Makes the process's file if it has none yet; whether there is one (under _lock)."""
    global _file
    if _file is None and not _off:
        try:
            _file = _File.create()
        except Exception as e:  # OSError mostly; never into the program
            _give_up(e)
    return _file is not None


def _give_up(error):
    """Stops recording in this process, saying why once as a RuntimeWarning at the
    program's line that asked (under _lock)."""
    global _off
    _off = True
    why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    level = 1
    frame = sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    try:
        warnings.warn("proftool: cannot record regions in '%s': %s; process %d runs on "
                      "without them" % (_DIRECTORY, why, os.getpid()),
                      RuntimeWarning, stacklevel=level)
    except Exception:  # warnings made errors (-W error) must not stop the program
        pass


def _intern(name, domain):
    """The region object of NAME in DOMAIN, made and entered in the table if new: a
    _Region with a new id, or _UNNAMED when the names area has no room for it (not
    entered: a program that makes up names without end must not grow the table without
    end). A NAME or DOMAIN that is not a str stands for its str(), and is looked up here
    each time (region() finds only str keys in _regions)."""
    global _names_used
    name = _text(name)
    domain = _text(domain) if domain else ""
    key = name if not domain else (domain, name)
    with _lock:
        r = _regions.get(key)
        if r is not None:
            return r
        d = _encode(domain, _MAX_LEN)
        n = _encode(name, _MAX_LEN)
        size = (_NAME.size + len(d) + len(n) + 7) & ~7
        if _names_used + size > _NAMES_ROOM:
            return _UNNAMED
        if _file is not None and not _file.reserve(RGN_HEADER_SIZE + _names_used, size):
            return _UNNAMED  # the disk is full: maybe not next time
        entry = _Name(len(_names) + 1, _names_used, d, n)
        _names.append(entry)
        _names_used += size
        if _file is not None:
            _file.write_name(entry)
        r = _regions[key] = _Region(entry.id)
        return r


class _Region:
    """A named region: a context manager and a decorator. It holds only its id, so one
    object serves any number of threads and nested (recursive) uses at once."""

    __slots__ = ("id",)

    def __init__(self, id_):
        self.id = id_

    def __enter__(self):
        _put(self.id, RGN_BEGIN)
        return self

    def __exit__(self, exc_type, exc, tb):
        _put(self.id, RGN_END)
        return False

    def _mark(self):
        _put(self.id, RGN_MARK)

    def __call__(self, func):
        """Decorates FUNC: each call runs inside the region."""

        @functools.wraps(func)
        def in_region(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return in_region

    def __repr__(self):
        return "<proftool region %d>" % self.id


class _Unnamed(_Region):
    """The regions whose names found no room in the names area (there is one, _UNNAMED):
    their events are dropped and counted in the file's header."""

    __slots__ = ()

    def __init__(self):
        super().__init__(0)

    def __enter__(self):
        _drop()
        return self

    def __exit__(self, exc_type, exc, tb):
        _drop()
        return False

    def _mark(self):
        _drop()


_UNNAMED = _Unnamed()


def _drop():
    """Counts an event of an _Unnamed region in the header (made with the file if need be)."""
    with _lock:
        if _make_file():
            _file.drop()


# ---- the API (documented in proftool/__init__.py) ----

def region(name, domain=""):
    """A region named NAME in DOMAIN ("" is the default domain): `with
    proftool.region(name):` records the block, `@proftool.region(name)` every call of
    the function. The same object may be entered again while it is open (recursion)
    and from several threads at once."""
    try:
        r = _regions.get(name if not domain else (domain, name))
    except TypeError:  # unhashable: _intern takes its str()
        r = None
    if r is None:
        r = _intern(name, domain)
    return r


def begin(name, domain=""):
    """Opens the region NAME in DOMAIN on the calling thread (see end())."""
    region(name, domain).__enter__()


def end(name, domain=""):
    """Closes the innermost region NAME of DOMAIN open on the calling thread."""
    region(name, domain).__exit__(None, None, None)


def mark(name, domain=""):
    """Records the instant NAME in DOMAIN on the calling thread."""
    region(name, domain)._mark()


# struct rgn_control: magic, seq, paused, pid, time_ns (32 bytes) in the directory's file
# "control": the pause switch proftool polls to stop sampling while the program is paused
RGN_CONTROL_FILE = "control"
RGN_CONTROL_MAGIC = b"PTPAUSE1"
RGN_CONTROL_SIZE = 4096
_CONTROL = struct.Struct("<8sQIIQ")
_switch = None  # the mapped file, once found; False when there is none


def _set_switch(paused):
    global _switch
    if _switch is None:
        _switch = False
        path = os.path.join(os.environ.get("PROFTOOL_REGIONS", ""), RGN_CONTROL_FILE)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                m = mmap.mmap(fd, RGN_CONTROL_SIZE)
            finally:
                os.close(fd)
            if m[:8] == RGN_CONTROL_MAGIC:
                _switch = m
            else:
                m.close()
        except (OSError, ValueError):
            pass
    if _switch:
        seq = _CONTROL.unpack_from(_switch)[1]
        struct.pack_into("<IIQ", _switch, 16, 1 if paused else 0, os.getpid(), time.monotonic_ns())
        # seq last: proftool reads it first, then the rest
        struct.pack_into("<Q", _switch, 8, seq + 1)


def pause():
    """Records that the process stops being recorded, until resume()."""
    _put(0, RGN_PAUSE)
    _set_switch(True)


def resume():
    """Records that the process is recorded again, after pause()."""
    _put(0, RGN_RESUME)
    _set_switch(False)


def enabled():
    """Whether regions are recorded: PROFTOOL_REGIONS was set when proftool was
    imported, and the process's file could be made (False once it could not)."""
    return not _off


# ---- fork ----

def _before_fork():
    _lock.acquire()


def _after_fork_in_parent():
    _lock.release()


def _after_fork_in_child():
    """A forked child records into a file of its own, made on its first event; it keeps
    the name table, so the ids of region objects made before the fork stay right."""
    global _lock, _tls, _file, _full
    parent_file = _file
    _lock = threading.RLock()
    _tls = threading.local()
    _file = None
    _full = False
    if parent_file is not None:
        parent_file.close()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)
