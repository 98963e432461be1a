// SPDX-License-Identifier: MIT
/*
 * Reading CPython stacks out of another process's memory (3.11, 3.12 and
 * 3.13, x86-64 GIL builds): finding the interpreter in an ELF file, then,
 * per process, each thread's chain of interpreter frames with the code
 * objects' names and lines.
 *
 * Nothing read from the target is trusted: every pointer is checked before
 * it is followed, objects are type-checked against the interpreter's own
 * type objects, walks are bounded and loops detected; a chain that fails a
 * check ends the stack with a status saying why, never with a wrong frame.
 * Private to symbolize/.
 */
#ifndef PROFTOOL_SYMBOLIZE_PYTHON_H
#define PROFTOOL_SYMBOLIZE_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- finding the interpreter in a file ---- */

/* A symbol's link-time address and size; addr 0 when the file lacks it. */
struct py_sym {
	uint64_t addr, size;
};

struct py_probe {
	/*
	 * PY_VERSION_HEX (e.g. 0x030b02f0 for 3.11.2) read from the file's
	 * Py_Version (3.11+). Older interpreters have no Py_Version: then
	 * 0x03XX0000 from a file name such as libpython3.9.so.1.0 or
	 * python3.10, with version_from_name set; 0 when neither tells.
	 */
	uint32_t version;
	bool version_from_name;
	struct py_sym runtime;          /* _PyRuntime: the interpreter's global state */
	struct py_sym version_sym;      /* Py_Version */
	/*
	 * _PyEval_EvalFrameDefault: the native eval loop. In 3.11-3.13 each
	 * C-level entry into the interpreter is one call of it (3.11 reaches it
	 * through the inline _PyEval_EvalFrame, which leaves no frame), so the
	 * k-th such native frame from the top runs the k-th run of Python
	 * frames (struct py_frame, PY_FRAME_ENTRY).
	 */
	struct py_sym eval;
	struct py_sym code_type, unicode_type, bytes_type;     /* PyCode_Type, ... */
};

/*
 * Looks for a CPython interpreter in an ELF file: an executable with
 * libpython linked in (Debian's /usr/bin/python3.11, .dynsym only) or
 * libpython3.X.so. Takes FD when >= 0 (not closed), else opens PATH; PATH
 * also gives the fallback version. Fills *P and returns 0; -ENOENT when
 * the file has no _PyRuntime, -ENOEXEC when it is not ELF, or another
 * negative errno when it cannot be read. Thread-safe.
 */
int py_probe_file(int fd, const char *path, struct py_probe *p);

/* ---- reading a process ---- */

/* One read of the target's memory: LEN bytes at ADDR into BUF. */
struct py_read {
	uint64_t addr;
	void *buf;
	size_t len;
};

/*
 * Reads N ranges in order; returns how many of them were read whole
 * (N on success, fewer when one failed; the rest are not attempted), or
 * a negative errno when nothing could be tried (ESRCH: the process is gone).
 */
typedef int py_read_fn(void *arg, const struct py_read *r, size_t n);

/* The default reader: process_vm_readv(2) on pid (intptr_t)ARG, in one call. */
int py_read_process(void *arg, const struct py_read *r, size_t n);

struct py_proc_opts {
	int32_t pid;
	uint32_t version;               /* PY_VERSION_HEX, as py_probe_file found it */
	uint64_t runtime;               /* runtime address of _PyRuntime */
	/*
	 * Runtime addresses of PyCode_Type, PyUnicode_Type, PyBytes_Type: the
	 * objects read are checked to be of these types. 0 skips a check
	 * (then only plausibility checks remain); real use should set them.
	 */
	uint64_t code_type, unicode_type, bytes_type;
	py_read_fn *read;               /* NULL: py_read_process on pid */
	void *read_arg;
	uint64_t (*clock)(void);        /* ns, for PY_CODE_RECHECK_NS; NULL: time_mono_ns (tests forge it) */
};

/*
 * Fills the addresses of O from probe P and the load bias of its file
 * (runtime address = link-time address + BIAS; sym_elf_bias() computes
 * it from a mapping). PID and the reader are left alone.
 */
void py_proc_opts_from_probe(struct py_proc_opts *o, const struct py_probe *p, uint64_t bias);

struct py_proc;

/*
 * A reader for one process's interpreter. Returns NULL with errno set and
 * a one-line reason in ERR (ERRLEN bytes, may be NULL): ENOTSUP for a
 * version without a known layout (before 3.11, after 3.13, free-threaded
 * builds), EPROTO when the runtime fails its checks (3.13+: no
 * _Py_DebugOffsets cookie, or offsets out of bounds), EFAULT when it
 * cannot be read. Not thread-safe: one thread uses a py_proc at a time.
 */
struct py_proc *py_proc_new(const struct py_proc_opts *o, char *err, size_t errlen);
void py_proc_free(struct py_proc *p);

/* PY_VERSION_HEX of the interpreter P reads (its runtime's, for 3.13+). */
uint32_t py_proc_version(const struct py_proc *p);

/*
 * Code objects: P takes those of FROM, another process's reader, when both
 * read the same interpreter at the same address (a fork), at most
 * PY_SEED_MAX bytes of them (py_codes_seed); returns how many. The caller
 * holds both.
 */
#define PY_SEED_MAX (8u << 20)
size_t py_proc_seed(struct py_proc *p, const struct py_proc *from);
/*
 * Whether P's cache was seeded whole, empty, from another's: each name
 * that one's frames carried is then one P holds, by the same pointer, for
 * as long as P lives.
 */
bool py_proc_seeded_whole(const struct py_proc *p);
/*
 * P, a parent's reader, takes the code objects of FROM, its child's that
 * exited, that its own process holds at the same addresses (py_codes_adopt).
 */
size_t py_proc_adopt(struct py_proc *p, const struct py_proc *from);
/* Frees what P needs to read (its page cache, its threads' memos): it keeps its code objects, to seed others. */
void py_proc_trim(struct py_proc *p);

/* Why a stack ended. */
enum py_status {
	PY_STACK_COMPLETE,      /* walked to the thread's outermost frame */
	PY_STACK_NO_THREAD,     /* no thread state has this tid (not a Python thread, or not yet/any more) */
	PY_STACK_TORN,          /* a loop, a misaligned pointer, a wrong type, an implausible field */
	PY_STACK_UNREADABLE,    /* a read of the target failed */
	/*
	 * More than PY_MAX_DEPTH frames, more than the caller's room, or more
	 * new code objects than one read may decode (PY_MAX_DECODE) or the
	 * process's cache may keep (PY_MAX_KEPT)
	 */
	PY_STACK_TOO_DEEP,
	PY_STACK_UNSUPPORTED,   /* no reader (py_proc_new() refused the interpreter) */
	PY_STACK_NR,
};

/* A short lowercase name of S ("complete", "torn", ...), for counts and logs. */
const char *py_status_name(enum py_status s);

/*
 * Bounds on what reading one stack may cost, whatever the target's memory
 * holds; each walk over the target's data stops at one of them. A read
 * costs at most PY_MAX_THREADS + 2 * PY_MAX_INTERPS thread and interpreter
 * state headers, PY_MAX_DEPTH frames (each a frame and a code object
 * header, and for a code object not cached yet two names' and a line
 * table's headers), PY_MAX_DECODE bytes of names' characters and line
 * tables, and PY_MAX_LINE_SCAN bytes of line tables scanned.
 */
#define PY_MAX_DEPTH 4096       /* frames walked per stack, shim frames included */
#define PY_MAX_INTERPS 256      /* interpreters walked per thread lookup */
#define PY_MAX_THREADS 16384    /* thread states walked per thread lookup, all interpreters */
#define PY_MAX_STR 4096         /* bytes of a name, UTF-8: longer ones are taken as corrupt */
#define PY_MAX_LINETABLE (1u << 20) /* bytes of one line table: a longer one is not read (no lines) */
/*
 * Bytes of names' characters and line tables one read may fetch for code
 * objects not cached yet: 4096 code objects with mebibyte line tables
 * were 3 GB read and kept for one stack. A real cold stack needs far less
 * (a few hundred bytes a code object); one code object needs at most
 * PY_MAX_LINETABLE plus two names, so every read decodes at least one and
 * the next goes on from the cache.
 */
#define PY_MAX_DECODE (8u << 20)
/*
 * Bytes of line tables one read may scan to find lines, the longest table
 * once: a function recursing 4096 deep at alternating offsets of a
 * mebibyte table would scan 4 GiB (one of 40 kB took half a second a
 * read). The lookups of a real stack scan a few kB each, and frames that
 * did not move since the last read are not looked up again. Frames past it
 * get no line (0) in this read.
 */
#define PY_MAX_LINE_SCAN (1u << 20)
/*
 * Bytes a process's code cache may keep (names, line tables and entries):
 * a target making new code objects for every read would grow it without
 * end. Past it a code object not cached ends its stack (PY_STACK_TOO_DEEP)
 * and a new line table is not kept (no lines).
 */
#define PY_MAX_KEPT (64u << 20)

/* py_frame.flags */
enum {
	/*
	 * The outermost frame of a run of frames that one native
	 * _PyEval_EvalFrameDefault call executes (3.11: is_entry; 3.12+: the
	 * frame above a shim frame owned by the C stack). Walking from the
	 * innermost frame, the frames up to and including the first ENTRY
	 * belong to the innermost native eval-loop frame, the next ones up to
	 * the second ENTRY to the next, and so on.
	 */
	PY_FRAME_ENTRY = 1,
	/*
	 * On frame 0 only: an eval loop above it runs no Python frame (3.12+:
	 * a shim frame is the thread's current frame, for the few
	 * instructions of entering or leaving the loop), so the innermost
	 * native eval-loop frame has an empty run and frame 0's run belongs
	 * to the second one.
	 */
	PY_FRAME_EMPTY_RUN_ABOVE = 2,
	PY_FRAME_GENERATOR = 4, /* owned by a generator or coroutine object */
};

struct py_frame {
	const char *qualname;   /* co_qualname as UTF-8; owned by the py_proc */
	const char *filename;   /* co_filename as UTF-8, but for surrogate escapes (a file
				   name that is not UTF-8), which are their bytes again;
				   owned by the py_proc */
	uint32_t firstlineno;   /* co_firstlineno */
	uint32_t line;          /* line being run, from the location table; 0 when unknown */
	uint32_t flags;         /* PY_FRAME_* */
	uint64_t code;          /* address of the code object in the target: identity of the function */
};

/* A copy of a thread's C stack taken at its sample: SIZE bytes from address SP. */
struct py_ustack {
	uint64_t sp;
	const uint8_t *data;
	size_t size;
};

/*
 * The thread's memory copied at its sample (a BPF program on the perf
 * event, sampler_captured): its thread state's first TS_LEN bytes, and
 * the chain of frames from the innermost, each header at
 * nodes + i * stride: its address (u64), then PY_CAPTURE_FRAME_MAX bytes
 * (the layout's hdr_frame of them copied). With CODE_OFF (0: none), at
 * that offset from each frame's address: the address of its code object
 * as the capture read it (0 when it could not), then its header's first
 * hdr_code bytes.
 */
#define PY_CAPTURE_TS_MAX 256
#define PY_CAPTURE_FRAME_MAX 128
#define PY_CAPTURE_CODE_MAX 160
#define PY_CAPTURE_NODES 64     /* frames a capture holds at most */
struct py_capture {
	uint64_t tstate, first;
	const uint8_t *ts;
	size_t ts_len;
	size_t nr;
	const uint8_t *nodes;
	size_t stride, code_off;
};

/* What the capture copies for P's interpreter; false when its headers are too large for it. */
bool py_capture_layout(const struct py_proc *p, uint32_t *ts_len, uint32_t *frame_len, uint32_t *ind1,
		       uint32_t *ind2, uint32_t *next);
/*
 * What the capture copies of each frame's code object: the header bytes
 * (*CODE_LEN) at the pointer at *CODE_AT in the frame (FRAME_LEN bytes, as
 * py_capture_layout said); false when they do not fit.
 */
bool py_capture_code(const struct py_proc *p, uint32_t frame_len, uint32_t *code_at, uint32_t *code_len);
/*
 * Thread TID's thread state, once, when the last read found one not
 * registered for captures yet (then it is), or 0 once it found that the
 * thread has none; false otherwise.
 */
bool py_proc_tstate_to_register(struct py_proc *p, int32_t tid, uint64_t *tstate);
/* Thread TID is not registered (any more): the next py_proc_tstate_to_register says what it has. */
void py_proc_tstate_unregistered(struct py_proc *p, int32_t tid);
/* How P's last read used its capture: not at all, for all it read, or for the first frames only. */
enum py_cap_use {
	PY_CAP_NONE,
	PY_CAP_WHOLE,   /* nothing read later than the sample */
	PY_CAP_PART,    /* the capture's frames, then more read from the process */
};
enum py_cap_use py_proc_capture_use(const struct py_proc *p);
/* Whether P's last read stopped at a code object it could not read (freed, or not one). */
bool py_proc_code_failed(const struct py_proc *p);
/*
 * Whether P's last read met code that may be gone unless the next samples
 * are read soon after they are taken: a code object freed soon after it
 * runs (a module's body, code compiled from a string) new to its cache,
 * or a captured frame whose code object was gone by the read.
 */
bool py_proc_hurry(const struct py_proc *p);

/*
 * Reads the Python stack of thread TID (the kernel's thread id, as samples
 * carry it) into OUT, innermost frame first, at most MAX frames; the shim
 * frames of 3.12+ are not included. Returns the number of frames filled
 * and sets *STATUS. A stack that could not be walked to its end keeps the
 * frames before the failure, each fully checked; the frame at which the
 * walk failed is never included. Strings stay valid until py_proc_free().
 * P may be NULL (PY_STACK_UNSUPPORTED, no frames).
 */
size_t py_read_stack(struct py_proc *p, int32_t tid, struct py_frame *out, size_t max,
		     enum py_status *status);
/*
 * The same, for a thread sampled while it ran: US is the C stack its
 * sample copied (NULL: none). Where the interpreter keeps its innermost
 * frame on the C stack (3.11, 3.12), the walk starts from the frame the
 * copy shows, not from the one the thread runs by the time of the read;
 * *MOVED says whether they differed. MOVED may be NULL: the thread's
 * current frame is then not read when the copy tells (a read fewer).
 */
size_t py_read_stack_at(struct py_proc *p, int32_t tid, const struct py_ustack *us, struct py_frame *out,
			size_t max, enum py_status *status, bool *moved);
/*
 * The same, with CAP what was captured at the sample (NULL: nothing): the
 * thread state and frames it holds are not read again, so that a stack
 * whose code objects are cached costs no system call, and is as it was at
 * the sample however late it is read.
 */
size_t py_read_stack_cap(struct py_proc *p, int32_t tid, const struct py_ustack *us, const struct py_capture *cap,
			 struct py_frame *out, size_t max, enum py_status *status, bool *moved);

/* Counts of the stacks read by P, by status (index enum py_status). */
void py_proc_counts(const struct py_proc *p, uint64_t counts[PY_STACK_NR]);

/* ---- internals shared with pyoffsets.c and the unit tests ---- */

#define PY_OFF_NONE UINT32_MAX
#define PY_OWNER_NONE 0xff

/*
 * Where the reader finds each field, in bytes from the start of its
 * struct. 3.11 and 3.12 come from pyoffsets.c (generated from their
 * headers); 3.13+ are built from the runtime's _Py_DebugOffsets.
 */
struct py_layout {
	uint32_t version;               /* 0x030b0000: the minor version */
	uint32_t runtime_interp_head;   /* _PyRuntimeState.interpreters.head */
	uint32_t interp_next, interp_threads_head;
	uint32_t tstate_next, tstate_native_tid;
	uint32_t tstate_cframe;         /* PY_OFF_NONE: current_frame is a field of the thread state */
	uint32_t cframe_current_frame;  /* in the _PyCFrame, or in the thread state (3.13+) */
	uint32_t frame_code, frame_previous, frame_instr, frame_owner;
	uint32_t frame_is_entry;        /* 3.11 only, else PY_OFF_NONE */
	uint32_t frame_size;            /* bytes before localsplus: all a reader needs */
	uint32_t owned_by_cstack;       /* FRAME_OWNED_BY_CSTACK (3.12+), else PY_OWNER_NONE */
	uint32_t code_filename, code_qualname, code_linetable, code_firstlineno, code_adaptive;
	uint32_t str_length, str_state, str_ascii_size, str_utf8_length, str_utf8, str_compact_size;
	uint32_t bytes_size, bytes_sval;
};

extern const struct py_layout py_layouts[];
extern const size_t py_layouts_nr;

/* What reading objects of one process needs: its layout, type objects and reader. */
struct py_target {
	struct py_layout l;
	uint64_t code_type, unicode_type, bytes_type;   /* 0: not checked */
	py_read_fn *read;
	void *read_arg;
	size_t hdr_tstate, hdr_frame, hdr_code; /* bytes of each header to read, <= PY_HDR_MAX */
};

#define PY_HDR_MAX 1024         /* bytes of a thread state, frame or code object read at once */

/*
 * Sets T's layout (and header sizes) for the interpreter of *VERSION whose
 * _PyRuntime is at RUNTIME: a built-in table for 3.11 and 3.12, the
 * runtime's _Py_DebugOffsets, read with T's reader, for 3.13 (*VERSION
 * then becomes the runtime's own). Returns 0, or -ENOTSUP, -EPROTO or
 * -EFAULT with a reason in ERR, as py_proc_new().
 */
int py_layout_init(struct py_target *t, uint64_t runtime, uint32_t *version, char *err, size_t errlen);

/* Reads LEN bytes at ADDR whole; false when ADDR is 0, beyond user space or unreadable. */
bool py_target_read(const struct py_target *t, uint64_t addr, void *buf, size_t len);

/*
 * The target's pages read during one stack read (pyread.c): the frames of
 * a stack share a few pages, and one read of a page costs about what one
 * read of 80 bytes does. Slots whose gen differs from gen_now are empty.
 */
#define PY_PAGE_SIZE 1024ull    /* of the cache, not the kernel's (a divisor of it): what is copied */
#define PY_PAGE_SLOTS 256       /* pages cached per stack read; three quarters are used at most */
/* A range the cache reads in pages at once, at most (longer ones are left to direct reads) */
#define PY_PAGES_RANGE_MAX (PY_PAGE_SIZE * PY_PAGE_SLOTS / 2)
#define PY_PAGES_EXTRA 32       /* ranges read directly beside the pages, in one call */
struct py_pages {
	uint64_t addr[PY_PAGE_SLOTS];
	uint32_t gen[PY_PAGE_SLOTS];
	bool bad[PY_PAGE_SLOTS];        /* a page below a frame that could not be read: not asked again */
	uint32_t gen_now;
	size_t used;
	uint8_t (*data)[PY_PAGE_SIZE];
};
void py_pages_init(struct py_pages *p);
void py_pages_release(struct py_pages *p);
/* A stack read begins: the cache is empty. */
void py_pages_reset(struct py_pages *p);
/*
 * Brings the pages of the N ranges R that the cache lacks into it, in one
 * call of T's reader, and with them up to BELOW[i] pages under range i's
 * first page (BELOW may be NULL: none), and the NR_EXTRA (at most
 * PY_PAGES_EXTRA) ranges EXTRA read directly, EXTRA_OK[i] saying whether
 * range i was. The ranges' pages come first, then EXTRA, then the pages
 * below, so that a page below that cannot be read (the reader stops at
 * the first failure) hides none of the others; it is not asked for again
 * in this stack read. Ranges longer than a page are left to direct reads.
 */
void py_pages_prefetch(struct py_pages *p, const struct py_target *t, const struct py_read *r, size_t n,
		       const unsigned *below, const struct py_read *extra, size_t nr_extra, bool *extra_ok);
/*
 * Reads N ranges as a py_read_fn does, through the cache (the pages
 * missing fetched in one call, BELOW more under each of the first two
 * ranges); ranges the cache has no room for are read directly.
 */
int py_pages_read(struct py_pages *p, const struct py_target *t, const struct py_read *r, size_t n,
		  unsigned below);

#define PY_STR_HDR_MAX 128      /* bytes of a str or bytes object's header, at most */

/* User-space addresses end below 1 << 56 (5-level paging on x86-64). */
#define PY_USER_END (1ull << 56)

/* A pointer to an object: non-NULL, 8-byte aligned, in user space. */
static inline bool py_ptr_ok(uint64_t a)
{
	return a && !(a & 7) && a < PY_USER_END;
}

/* A decoded code object; strings are interned in its cache and live as long as the cache. */
struct py_code {
	uint64_t addr;
	/* the fields it was decoded from: a code object freed and another allocated there differs */
	uint64_t filename_ptr, qualname_ptr, linetable_ptr;
	int32_t firstlineno;
	const char *qualname, *filename;
	uint8_t *linetable;             /* NULL when unusable: lines are then 0 */
	size_t linetable_len;
	int64_t last_off;               /* memo of the last lookup: loops sample the same offsets */
	uint32_t last_line;
	uint64_t checked_ns;            /* when its header last matched (time_mono_ns) */
};

/* Code objects of one process by address, and the strings they use (pycode.c). */
struct py_codes;
struct py_codes *py_codes_new(void);
void py_codes_free(struct py_codes *c);

/*
 * A code object's header is read again, to see that the object at its
 * address is still the one cached, when it was last checked this long
 * before a read: a code object lives as long as a frame runs it, so one
 * freed and another allocated at its address within this time is the
 * only case named after the old one, and for this time at most. The code
 * objects of a stack lie apart, each range its own pages to pin: checking
 * them at every sample was most of a read's system time, and checking a
 * six-frame stack's every 20 ms took 46 us a call while the target ran
 * (perf trace, 2-CPU VM), 1.5 us per sample, a fifth of proftool's CPU on
 * bench/pyspin.py with captures, 97 calls in 3 s; at 100 ms, 25. A frame
 * a capture holds comes with its code object's header, checked with no
 * read at all (py_code_matching): this is for the others.
 */
#define PY_CODE_RECHECK_NS (100u * 1000 * 1000)
#define PY_CODE_TRUST_NS (1000u * 1000 * 1000)

/*
 * Copies into DST the code objects SRC has and DST lacks, at most
 * MAX_BYTES of them, as never checked: one is used only once a header of
 * DST's process matches it (a capture's, or one read), and then saves
 * reading its names and line table. SRC is another process's: a forked
 * process's parent, whose code objects the child has at the same
 * addresses, or a child that exited, whose siblings have its. Returns how
 * many were copied.
 */
size_t py_codes_seed(struct py_codes *dst, const struct py_codes *src, size_t max_bytes);
/* Whether C was seeded whole from another cache, sharing all its names (py_proc_seeded_whole). */
bool py_codes_seeded_whole(const struct py_codes *c);
/*
 * The same the other way, into a parent's cache DST from a child's that
 * exited, SRC: only the code objects whose headers, read now from DST's
 * process with T's reader (in one call per ADOPT_BATCH), match: what a
 * child made after the fork is not passed on to its siblings, which may
 * have made others at the same addresses. Those copied count as checked
 * at DST's current read.
 */
size_t py_codes_adopt(struct py_codes *dst, const struct py_target *t, const struct py_codes *src,
		      size_t max_bytes);

/*
 * A stack read begins at NOW (time_mono_ns): its budgets of PY_MAX_DECODE
 * and PY_MAX_LINE_SCAN bytes are whole again.
 */
void py_codes_begin_read(struct py_codes *c, uint64_t now);

/*
 * Whether the current read decoded a code object that is freed soon after
 * it runs (a module's body, code compiled from a string): one whose next
 * samples are to be read soon, before it is gone.
 */
bool py_codes_met_transient(const struct py_codes *c);

/* The cached code object at ADDR when its header matched within PY_CODE_RECHECK_NS, else NULL. */
struct py_code *py_code_recent(struct py_codes *c, uint64_t addr);
/*
 * The cached code object at ADDR when HDR (its header's first hdr_code
 * bytes, as a capture copied them at the sample) is still what it was
 * decoded from, else NULL. The sample may be long past: it does not count
 * as a check of the cache now.
 */
struct py_code *py_code_matching(struct py_codes *c, const struct py_target *t, uint64_t addr, const uint8_t *hdr);
/*
 * The cached code object at ADDR when its header matched within
 * PY_CODE_TRUST_NS, else NULL: what a captured frame ran when its code
 * object cannot be checked any more (freed, or its process gone).
 */
struct py_code *py_code_trusted(struct py_codes *c, uint64_t addr);

/*
 * Before decoding the code objects at ADDRS[WHICH[i]] (i < N), whose
 * headers the caller has read into HDRS[WHICH[i]]: fetches the names and line tables of those
 * py_code_get will decode (not cached, or changed) in one call of the
 * reader, where a decode would take two per name and two per table. What
 * it fetched serves this stack read only (py_codes_begin_read drops it).
 * Returns how many of them are new to the cache or changed (at most
 * SPEC_CODES are counted).
 */
size_t py_codes_prefetch(struct py_codes *c, const struct py_target *t, const uint64_t *addrs,
			 const uint8_t (*hdrs)[PY_HDR_MAX], const uint32_t *which, size_t n);

/*
 * The code object at ADDR, whose first t->hdr_code bytes the caller has
 * read into HDR: from the cache when HDR still matches what it was decoded
 * from, else decoded (and cached). AT_SAMPLE: HDR is what a capture copied
 * at the sample, not read now; it does not count as a check of the cache. PY_STACK_COMPLETE with *OUT set, or why
 * it is not a usable code object (TORN, UNREADABLE), or TOO_DEEP when
 * decoding it would pass PY_MAX_DECODE or PY_MAX_KEPT. *OUT stays valid
 * until the next call.
 */
enum py_status py_code_get(struct py_codes *c, const struct py_target *t, uint64_t addr,
			   const uint8_t *hdr, bool at_sample, struct py_code **out);

/*
 * The line of byte offset OFF into the code (memoized py_linetable_line),
 * within C's budget of PY_MAX_LINE_SCAN bytes per read: 0 once it is spent.
 */
uint32_t py_code_line(struct py_codes *c, struct py_code *code, int64_t off);

/*
 * The line of byte offset OFF of the code (instruction pointer minus
 * co_code_adaptive) in location table TAB (3.11+ format, PEP 626): the
 * first line for a negative OFF (a frame not started yet), 0 when the
 * table gives none for OFF or is malformed.
 */
uint32_t py_linetable_line(const uint8_t *tab, size_t len, int32_t firstlineno, int64_t off);
/* The same for OFF >= 0 (pylines.c), and in *USED the bytes of TAB it looked at. */
uint32_t py_linetable_scan(const uint8_t *tab, size_t len, int32_t firstlineno, int64_t off, size_t *used);

#endif
