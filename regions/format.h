// SPDX-License-Identifier: MIT
/*
 * The region event file: how a profiled program hands its named regions
 * to proftool. Written by the runtime (regions/rt.c, which <proftool.h>
 * loads) and by the Python module (python/proftool), read by
 * regions/read.c. This header is the whole contract between them; it
 * includes nothing of proftool's and may be read by other writers.
 *
 * `proftool record` makes a private directory and names it in the
 * environment, so it reaches every child, exec'd or forked:
 *
 *   PROFTOOL_REGIONS   the directory; unset: the program is not recorded and
 *                      every call is a no-op
 *   PROFTOOL_RT        the runtime library <proftool.h> loads
 *   PROFTOOL_REGIONS_MB  the size of each file in MiB (default 256); sparse,
 *                      so only what is written takes memory
 *
 * Each writer in each process makes a file of its own there, named
 * "PID-WRITER-N.rgn" (WRITER "c" or "py", N from 0 for the first name not
 * taken, opened O_CREAT | O_EXCL: an exec keeps the pid), sizes it with
 * ftruncate and maps it MAP_SHARED: what was written survives the
 * process's death, a SIGKILL included, and is read after it.
 *
 * All numbers are little-endian (x86-64, aarch64), times CLOCK_MONOTONIC
 * nanoseconds (Python: time.monotonic_ns()), thread ids as gettid() gives
 * them (Python: threading.get_native_id()). The file holds, in order:
 *
 *   the header       RGN_HEADER_SIZE bytes: struct rgn_header
 *   the names        names_size bytes of struct rgn_name entries, each
 *                    padded to 8 bytes, handed out from names_used
 *   the segments     seg_size bytes each, from `next`: a thread writes its
 *                    events into a segment of its own, and takes a new one
 *                    when it is full (seq 0, 1, ...)
 *
 * The writer hands out names and segments with atomic fetch-and-add on
 * names_used and next (the Python writer, alone in its file, under a
 * lock), and commits an event by storing the segment's `used` after the
 * record (a release store): the reader takes only records below `used`.
 * Nothing blocks and nothing is ever overwritten: when a name or a segment
 * does not fit, the event is dropped and counted (rgn_header.dropped,
 * rgn_segment.dropped).
 */
#ifndef PROFTOOL_REGIONS_FORMAT_H
#define PROFTOOL_REGIONS_FORMAT_H

#include <stdint.h>

#define RGN_MAGIC "PTREGION"            /* 8 bytes, no NUL */
#define RGN_VERSION 1
#define RGN_HEADER_SIZE 4096
#define RGN_NAMES_SIZE (1u << 20)       /* room for the names of a file */
#define RGN_SEG_SIZE (1u << 20)         /* a thread's segment: 65532 events */
#define RGN_FILE_MB 256                 /* default file size */
#define RGN_SEG_MAGIC 0x47455352u       /* "RSEG" */

enum rgn_writer {
	RGN_WRITER_C = 1,               /* the runtime: <proftool.h>, ITT */
	RGN_WRITER_PYTHON = 2,
};

struct rgn_header {
	char magic[8];                  /* RGN_MAGIC */
	uint32_t version;               /* RGN_VERSION */
	uint32_t header_size;           /* RGN_HEADER_SIZE: where the names start */
	uint32_t pid;                   /* getpid() of the writer */
	uint32_t writer;                /* enum rgn_writer */
	uint64_t size;                  /* the file's size; nothing lies past it */
	uint64_t names_size;            /* bytes of the names area */
	uint64_t names_used;            /* bytes of it handed out (may exceed names_size) */
	uint64_t next;                  /* file offset of the next segment to hand out */
	uint64_t dropped;               /* events dropped: no room for a name or a segment, or
	                                   (ITT) a task nested deeper than the collector keeps */
	uint32_t next_id;               /* the last region id handed out; ids start at 1 */
	uint32_t seg_size;              /* bytes per segment, header included */
	uint64_t start_ns;              /* when the file was made */
};

/*
 * A region's name, in the names area: domain (MXNet's domain, ITT's
 * domain; empty for the default one) then name, neither NUL-terminated.
 * The id is stored last (release): an entry whose id is 0 is not complete.
 */
struct rgn_name {
	uint32_t id;
	uint16_t domain_len;
	uint16_t name_len;
	/* char text[domain_len + name_len], then padding to 8 bytes */
};

#define RGN_NAME_SIZE(domain_len, name_len) \
	((sizeof(struct rgn_name) + (domain_len) + (name_len) + 7u) & ~(uint64_t)7)

struct rgn_segment {
	uint32_t magic;                 /* RGN_SEG_MAGIC */
	uint32_t tid;
	uint32_t seq;                   /* 0 for the thread's first segment, then 1, 2, ... */
	uint32_t flags;                 /* 0 */
	uint64_t used;                  /* bytes of records committed after this header */
	uint64_t dropped;               /* events the thread dropped once this, its last, was full */
	char comm[16];                  /* the thread's name when it took the segment */
	uint64_t reserved[2];
};

enum rgn_kind {
	RGN_BEGIN = 1,                  /* a region opens on this thread */
	RGN_END = 2,                    /* the innermost open region of that id closes */
	RGN_MARK = 3,                   /* an instant event */
	RGN_PAUSE = 4,                  /* the process stops being recorded (id 0) */
	RGN_RESUME = 5,                 /* and starts again (id 0) */
};

struct rgn_record {
	uint64_t time_ns;
	uint32_t id;                    /* a name's id; 0 for PAUSE and RESUME */
	uint16_t kind;                  /* enum rgn_kind */
	uint16_t flags;                 /* 0 */
};

/*
 * The pause switch: the file "control" of the directory (RGN_CONTROL_SIZE
 * bytes, made by proftool before the program runs; a writer that finds no
 * such file skips this). Besides its PAUSE or RESUME event, a writer sets
 * `paused` (1 after pause, 0 after resume), `pid` and `time_ns`, then adds
 * 1 to `seq` (atomic, release); proftool polls `seq` while it records and
 * stops sampling while the switch is on, so the program runs at full speed
 * when paused. The events, not the switch, say exactly when each pause
 * began and ended.
 */
#define RGN_CONTROL_FILE "control"
#define RGN_CONTROL_MAGIC "PTPAUSE1"    /* 8 bytes, no NUL */
#define RGN_CONTROL_SIZE 4096

struct rgn_control {
	char magic[8];                  /* RGN_CONTROL_MAGIC, written by proftool */
	uint64_t seq;                   /* changes at every pause and resume */
	uint32_t paused;                /* 1: paused by the program */
	uint32_t pid;                   /* who set it last */
	uint64_t time_ns;               /* when */
};

_Static_assert(sizeof(struct rgn_header) == 80, "rgn_header layout");
_Static_assert(sizeof(struct rgn_control) == 32, "rgn_control layout");
_Static_assert(sizeof(struct rgn_name) == 8, "rgn_name layout");
_Static_assert(sizeof(struct rgn_segment) == 64, "rgn_segment layout");
_Static_assert(sizeof(struct rgn_record) == 16, "rgn_record layout");

#endif
