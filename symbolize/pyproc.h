// SPDX-License-Identifier: MIT
/*
 * The CPython reader's own: the state of one process's reader, shared by
 * python.c (processes, threads, the stack read) and pywalk.c (the walk of
 * a thread's frames and code objects, and what the sample's stack copy
 * tells of them).
 */
#ifndef PROFTOOL_SYMBOLIZE_PYPROC_H
#define PROFTOOL_SYMBOLIZE_PYPROC_H

#include <string.h>

#include "base/base.h"
#include "python.h"

#define SEEN_FIRST 256          /* the walk's set's slots at first (seen_room) */

struct seen_slot {
	uint64_t key;                   /* a frame's address, or a code object's */
	uint32_t gen;                   /* the walk that set it */
	uint32_t val;                   /* read_codes: a code object's index among the distinct ones */
};
/*
 * Pages fetched below a frame's page when it is not cached: the frames a
 * frame returns to lie below it in the thread's data stack, so one call
 * brings the rest of a typical stack along.
 */
#define FRAME_PAGES_BELOW 12
/*
 * The frames of a thread's last stack lying at most this far below its
 * innermost one, in its data stack, are fetched whole with the next read
 * (the stack mostly still holds them).
 */
#define FRAME_SPAN_MAX (64u << 10)
/*
 * Code objects whose headers are read with the thread's pages, before the
 * walk: those of the thread's last stack (innermost first), which a thread
 * mostly still runs. A stack made only of them is read in one call.
 */
#define SPEC_CODES PY_PAGES_EXTRA
/* evaluation loops of a sample whose runs' first frames the stack copy tells */
#define PY_BOUNDS 16

struct thread_entry {
	int32_t tid;
	uint64_t tstate;                /* 0: forgotten */
	/*
	 * Where the last read found the thread's _PyCFrame (3.11, 3.12) and
	 * innermost frame: their pages are fetched with the thread state's,
	 * in one call, since a thread mostly runs in the same few pages.
	 */
	uint64_t last_cframe, last_frame;
	uint64_t last_lo;               /* the lowest frame within FRAME_SPAN_MAX below last_frame */
	uint64_t last_codes[SPEC_CODES];
	size_t nr_last_codes;
	uint64_t registered;            /* the thread state registered for captures, 0 none */
	bool registered_set;            /* REGISTERED was (0: that the thread has none) */
	bool no_thread;                 /* the last look found no thread state for it (not a torn one) */
	struct py_stack_memo *memo;     /* its last stack read whole from a capture (pymemo.c) */
};

/* Where a stack's distinct code object stands once read_codes is over. */
enum code_state {
	CODE_UNREAD,                    /* (while read_codes runs) */
	CODE_UNREADABLE,                /* its header could not be read */
	CODE_READ,                      /* its header is in code_hdr */
	CODE_CAPTURED,                  /* ... as the capture copied it at the sample */
	CODE_RECENT,                    /* cached and checked within PY_CODE_RECHECK_NS: not read */
};

/* A Python frame the walk found, its code object not read yet. */
struct walked {
	uint64_t code, instr;
	uint32_t flags;
	uint32_t code_idx;              /* its code object among the distinct ones of the stack */
	uint32_t node;                  /* the capture's frame its header came from, when captured */
	bool captured;                  /* its header came from the sample's capture */
};

struct py_proc {
	struct py_target t;
	uint32_t version;
	uint64_t runtime;
	struct py_codes *codes;
	uint64_t (*clock)(void);
	struct thread_entry *threads;
	size_t threads_nr, threads_alloc;
	struct idx thread_idx;          /* hash of tid -> threads[] */
	/*
	 * Frames visited by the current walk, then its code objects: an
	 * open-addressing set whose slots of another gen are empty, grown as
	 * a walk needs (most need a few dozen slots, a walk PY_MAX_DEPTH deep
	 * twice that), kept at most half full
	 */
	struct seen_slot *seen;
	size_t seen_mask, seen_n;
	uint32_t gen;
	struct py_pages pages;          /* the target's pages read during the current stack read */
	uint64_t counts[PY_STACK_NR];
	/* scratch of one stack read: its frames, and its distinct code objects' headers */
	struct walked *walked;
	size_t walked_alloc;
	uint64_t *code_addr;
	uint8_t (*code_hdr)[PY_HDR_MAX];
	uint8_t *code_state;            /* enum code_state */
	uint32_t *code_todo;            /* those whose headers are read, then were read (CODE_READ) */
	struct py_read *code_reads;     /* their headers' reads */
	size_t codes_alloc;
	/* code headers read before the walk (SPEC_CODES) */
	uint64_t spec_addr[SPEC_CODES];
	uint8_t spec_hdr[SPEC_CODES][PY_HDR_MAX];
	bool spec_ok[SPEC_CODES];
	size_t nr_spec;
	/* the sample's stack copy during a read, and the frames its loops ran (frame_at_sample) */
	const struct py_ustack *us;
	const struct py_capture *cap;   /* of the read under way, NULL none */
	size_t cap_next;                /* the capture's frame the walk will want next */
	bool cap_used;                  /* the last read started from its capture */
	bool cap_short;                 /* and read frames the capture did not hold */
	bool code_failed;               /* the last read stopped at a code object it could not read */
	bool new_codes;                 /* the last read met code objects new to the cache */
	bool code_gone;                 /* and left out a captured frame whose code object is gone */
	bool walk_exact;                /* the last walk kept each frame it found, checked (no fallback) */
	bool cap_us;                    /* and read a frame from the stack copy, not the capture */
	/* stacks taken from a thread's last capture (pymemo.c); with PROFTOOL_DEBUG_PYTHON, walked too */
	uint64_t memo_hits, memo_differ;
	/* code objects' headers of the walks: checked from the capture, and read from the process */
	uint64_t code_from_cap, code_read;
	uint64_t seeded;                /* code objects taken from other processes' caches (py_proc_seed) */
	bool memo_check;
	struct py_frame *memo_scratch;  /* PY_CAPTURE_NODES frames, for the check */
	uint64_t walk_lo;               /* the lowest frame the walk found within FRAME_SPAN_MAX of the first */
	uint64_t bounds[PY_BOUNDS];
	size_t nr_bounds;
};

static inline bool rd(struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return py_pages_read(&p->pages, &p->t, &r, 1, 0) == 1;
}

static inline uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/*
 * The line of the instruction pointer at byte OFF from code C's first
 * instruction. 3.11 and 3.12 point at the code unit before the next
 * instruction, so a frame not started yet sits at -2 (its first line);
 * anything else before the code or odd is garbage (no line).
 */
static inline uint32_t py_line_of(struct py_proc *p, struct py_code *c, uint64_t off)
{
	int64_t o = (int64_t)off;

	if (o < -2 || (o & 1))
		return 0;
	return py_code_line(p->codes, c, o);
}

/*
 * The first hdr_code bytes of code object CODE as CAP's frame NODE had it
 * at the sample, or NULL when the capture did not copy them (none, or its
 * read failed, or another code object).
 */
static inline const uint8_t *py_cap_code(const struct py_capture *cap, size_t node, uint64_t code)
{
	const uint8_t *slot;

	if (!cap || !cap->code_off || node >= cap->nr || !code)
		return NULL;
	slot = cap->nodes + node * cap->stride;
	return u64_at(slot, (uint32_t)cap->code_off) == code ? slot + cap->code_off + 8 : NULL;
}

/* 3.11 and 3.12: from the thread state's _PyCFrame CFRAME, the innermost frame when US was copied (pywalk.c). */
bool py_frame_at_sample(struct py_proc *p, const struct py_ustack *us, uint64_t cframe, uint64_t *frame);
/*
 * Walks the chain from FRAME (whose header is in BUF[0]) into OUT, at most
 * MAX frames; sets *STATUS (pywalk.c).
 */
size_t py_walk(struct py_proc *p, uint64_t frame, uint8_t (*buf)[PY_HDR_MAX], struct py_frame *out, size_t max,
	       enum py_status *status);
/* Range R as the sample saw it, from its capture or its stack copy, when either holds it (pywalk.c). */
bool py_from_copy(struct py_proc *p, const struct py_read *r);

/*
 * pymemo.c: a thread's last stack read whole from a capture. The frames of
 * capture CAP (with the stack copy US, whose _PyCFrame CFRAME the thread
 * state points at, p->bounds set from it) into OUT when they are those of
 * memo M, their code objects all checked lately; else 0.
 */
struct py_stack_memo;
size_t py_memo_reuse(struct py_proc *p, const struct py_stack_memo *m, const struct py_capture *cap,
		     const struct py_ustack *us, uint64_t cframe, struct py_frame *out, size_t max);
/* The N frames OUT just walked (p->walked) from CAP, for the next capture: into *M. */
void py_memo_keep(struct py_proc *p, struct py_stack_memo **m, const struct py_capture *cap,
		  const struct py_ustack *us, uint64_t cframe, const struct py_frame *out, size_t n, size_t max);
void py_memo_free(struct py_stack_memo *m);

#endif
