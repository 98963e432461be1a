// SPDX-License-Identifier: MIT
/*
 * Unit tests for the CPython stack reader: a fake address space laid out
 * like a 3.11, 3.12 or 3.13 runtime (thread states, frames, code objects,
 * strings), read through a fake reader; the good path, then hostile memory
 * that must end each stack cleanly with the right status and no wrong frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/python.h"
#include "unit.h"

#define ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the fake address space: one heap, everything else unmapped ---- */

#define HEAP 0x10000000ull
#define HEAP_SIZE (4u << 20)
#define UNMAPPED 0x30000000ull

static uint8_t *heap;
static size_t heap_used;
static unsigned reads, calls;
static bool gone;                       /* the process has ended: every read fails */
static uint64_t now = 1000000000000ull; /* the readers' clock: a test moves it on */

static uint64_t fake_clock(void)
{
	return now;
}

static int fake_read(void *arg, const struct py_read *r, size_t n)
{
	(void)arg;
	calls++;
	if (gone) {
		errno = ESRCH;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		reads++;
		if (r[i].addr < HEAP || r[i].addr + r[i].len > HEAP + HEAP_SIZE || r[i].addr + r[i].len < r[i].addr)
			return (int)i;
		memcpy(r[i].buf, heap + (r[i].addr - HEAP), r[i].len);
	}
	return (int)n;
}

static uint64_t alloc(size_t len)
{
	uint64_t a = HEAP + heap_used;

	heap_used += (len + 15) & ~(size_t)15;
	if (heap_used > HEAP_SIZE)
		abort();
	return a;
}

static void put64(uint64_t addr, uint32_t off, uint64_t v)
{
	memcpy(heap + (addr - HEAP) + off, &v, 8);
}

static void put32(uint64_t addr, uint32_t off, uint32_t v)
{
	memcpy(heap + (addr - HEAP) + off, &v, 4);
}

static void put8(uint64_t addr, uint32_t off, uint8_t v)
{
	heap[addr - HEAP + off] = v;
}

/* ---- objects, laid out as layout L says ---- */

static const struct py_layout *L;
static uint64_t code_t, unicode_t, bytes_t;

enum { KIND_ASCII = 0, KIND_LATIN1 = 1, KIND_UCS2 = 2, KIND_UCS4 = 4 };

static uint32_t str_state(int kind, bool ascii)
{
	/* interned 0-1, kind 2-4, compact 5, ascii 6; 3.11's ready is bit 7 */
	return (uint32_t)(ascii ? 1 : kind) << 2 | 1u << 5 | (uint32_t)ascii << 6 |
	       (L->version == 0x030b0000 ? 1u << 7 : 0);
}

static uint64_t mk_str(const char *s)
{
	size_t n = strlen(s);
	uint64_t a = alloc(L->str_ascii_size + n + 1);

	put64(a, 8, unicode_t);
	put64(a, L->str_length, n);
	put32(a, L->str_state, str_state(0, true));
	memcpy(heap + (a - HEAP) + L->str_ascii_size, s, n + 1);
	return a;
}

/* A compact non-ASCII string of N characters of KIND bytes each, without its utf8 copy. */
static uint64_t mk_wide(int kind, const void *chars, size_t n)
{
	uint64_t a = alloc(L->str_compact_size + (n + 1) * (size_t)kind);

	put64(a, 8, unicode_t);
	put64(a, L->str_length, n);
	put32(a, L->str_state, str_state(kind, false));
	put64(a, L->str_utf8, 0);
	memcpy(heap + (a - HEAP) + L->str_compact_size, chars, n * (size_t)kind);
	return a;
}

static uint64_t mk_bytes(const uint8_t *b, size_t n)
{
	uint64_t a = alloc(L->bytes_sval + n + 1);

	put64(a, 8, bytes_t);
	put64(a, L->bytes_size, n);
	memcpy(heap + (a - HEAP) + L->bytes_sval, b, n);
	return a;
}

/*
 * firstlineno 10. Entries (byte offsets: line): [0,4) 10 no columns,
 * [4,10) 11 one-line form, [10,12) 11 short form, [12,16) 16 long form,
 * [16,18) no location, [18,20) 13 (delta -3), [20,22) 113 (a two-byte
 * varint delta of 100).
 */
static const uint8_t linetable[] = {
	0xe9, 0x00, 0xda, 0x01, 0x02, 0x80, 0x05, 0xf1, 0x0a, 0x00, 0x01, 0x02,
	0xf8, 0xe8, 0x07, 0xe8, 0x48, 0x03,
};

static uint64_t mk_code_named(uint64_t qualname, uint64_t filename, int32_t firstlineno, uint64_t table)
{
	uint64_t a = alloc(L->code_adaptive + 64);

	put64(a, 8, code_t);
	put64(a, L->code_qualname, qualname);
	put64(a, L->code_filename, filename);
	put64(a, L->code_linetable, table);
	put32(a, L->code_firstlineno, (uint32_t)firstlineno);
	return a;
}

static uint64_t mk_code(const char *qualname)
{
	return mk_code_named(mk_str(qualname), mk_str("/src/app.py"), 10, mk_bytes(linetable, sizeof(linetable)));
}

enum { OWNER_THREAD = 0, OWNER_GENERATOR = 1, OWNER_CSTACK = 3 };

/* A frame running CODE at byte OFF of its instructions. */
static uint64_t mk_frame(uint64_t code, uint64_t prev, int64_t off, uint8_t owner, bool entry)
{
	uint64_t a = alloc(L->frame_size + 8);

	put64(a, L->frame_code, code);
	put64(a, L->frame_previous, prev);
	put64(a, L->frame_instr, code + L->code_adaptive + (uint64_t)off);
	put8(a, L->frame_owner, owner);
	if (L->frame_is_entry != PY_OFF_NONE)
		put8(a, L->frame_is_entry, entry);
	return a;
}

static uint64_t mk_shim(uint64_t prev)
{
	return mk_frame(mk_code("<shim>"), prev, 0, OWNER_CSTACK, false);
}

static uint64_t runtime, interp;

/* A thread state of TID running FRAME, pushed on the interpreter's list. */
static uint64_t mk_tstate(int32_t tid, uint64_t frame)
{
	uint64_t ts = alloc(512), head;

	memcpy(&head, heap + (interp - HEAP) + L->interp_threads_head, 8);
	put64(ts, L->tstate_next, head);
	put64(ts, L->tstate_native_tid, (uint64_t)tid);
	if (L->tstate_cframe != PY_OFF_NONE) {
		uint64_t cf = alloc(64);

		put64(ts, L->tstate_cframe, cf);
		put64(cf, L->cframe_current_frame, frame);
	} else {
		put64(ts, L->cframe_current_frame, frame);
	}
	put64(interp, L->interp_threads_head, ts);
	return ts;
}

static void set_current_frame(uint64_t ts, uint64_t frame)
{
	if (L->tstate_cframe != PY_OFF_NONE) {
		uint64_t cf;

		memcpy(&cf, heap + (ts - HEAP) + L->tstate_cframe, 8);
		put64(cf, L->cframe_current_frame, frame);
	} else {
		put64(ts, L->cframe_current_frame, frame);
	}
}

static const struct py_layout *layout_of(uint32_t version)
{
	for (size_t i = 0; i < py_layouts_nr; i++)
		if (py_layouts[i].version == version)
			return &py_layouts[i];
	abort();
}

/* An empty runtime of layout VERSION: the heap cleared, one interpreter, no threads. */
static void space(uint32_t version)
{
	L = layout_of(version);
	memset(heap, 0, HEAP_SIZE);
	heap_used = 0;
	alloc(4096);                    /* nothing lives at the very start */
	code_t = alloc(256);
	unicode_t = alloc(256);
	bytes_t = alloc(256);
	runtime = alloc(4096);
	interp = alloc(4096);
	put64(runtime, L->runtime_interp_head, interp);
}

static struct py_proc *open_proc(uint32_t version)
{
	struct py_proc_opts o = {
		.pid = 1, .version = version, .runtime = runtime,
		.code_type = code_t, .unicode_type = unicode_t, .bytes_type = bytes_t,
		.read = fake_read, .clock = fake_clock,
	};
	char err[128] = "";
	struct py_proc *p = py_proc_new(&o, err, sizeof(err));

	if (!p)
		fprintf(stderr, "# py_proc_new: %s\n", err);
	return p;
}

static struct py_frame fr[PY_MAX_DEPTH + 8];

#define CHECK_FRAME(f, name, want_line, want_flags)                 \
	do {                                                        \
		CHECK(!strcmp((f).qualname, (name)));               \
		CHECK_EQ_U((f).line, (want_line));                  \
		CHECK_EQ_U((f).flags, (want_flags));                \
	} while (0)

/* ---- tests ---- */

static void linetable_decoding(void)
{
	static const struct {
		int64_t off;
		uint32_t line;
	} c[] = {
		{ -2, 10 }, { 0, 10 }, { 2, 10 }, { 4, 11 }, { 8, 11 }, { 10, 11 }, { 12, 16 },
		{ 14, 16 }, { 16, 0 }, { 18, 13 }, { 20, 113 }, { 22, 0 }, { 1000, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE_(c); i++)
		CHECK_EQ_U(py_linetable_line(linetable, sizeof(linetable), 10, c[i].off), c[i].line);
	/* cut inside the long form's varints: what precedes still decodes, the rest has no line */
	CHECK_EQ_U(py_linetable_line(linetable, 9, 10, 10), 11);
	CHECK_EQ_U(py_linetable_line(linetable, 9, 10, 12), 0);
	CHECK_EQ_U(py_linetable_line(linetable, 8, 10, 12), 0);
	/* an entry that does not start with bit 7 set */
	CHECK_EQ_U(py_linetable_line((const uint8_t *)"\x69\x00", 2, 10, 0), 0);
	/* a varint that never ends */
	CHECK_EQ_U(py_linetable_line((const uint8_t *)"\xe8\x7f\x7f\x7f\x7f\x7f\x7f\x7f", 8, 10, 0), 0);
	/* a line before 1 */
	CHECK_EQ_U(py_linetable_line((const uint8_t *)"\xe8\x15", 2, 10, 0), 0);
	CHECK_EQ_U(py_linetable_line(NULL, 0, 10, 0), 0);
}

/* 3.11: is_entry marks where the eval loop was entered; a generator's frame; non-ASCII names. */
static void good_311(void)
{
	static const uint8_t latin1[] = { 'c', 'a', 'f', 0xe9 };
	static const uint16_t ucs2[] = { 'p', 0x3c0 };
	static const uint32_t ucs4[] = { 'x', 0x1f600 };
	struct py_proc *p;
	enum py_status st;
	uint64_t f1, f2, f3, g1, g2, c;
	size_t n;

	space(0x030b0000);
	f1 = mk_frame(mk_code("<module>"), 0, 20, OWNER_THREAD, true);
	f2 = mk_frame(mk_code("Klass.method"), f1, 12, OWNER_THREAD, false);
	f3 = mk_frame(mk_code("outer.<locals>.inner"), f2, 4, OWNER_THREAD, false);
	mk_tstate(100, f3);
	c = mk_code_named(mk_wide(KIND_LATIN1, latin1, 4), mk_wide(KIND_UCS2, ucs2, 2), 10,
			  mk_bytes(linetable, sizeof(linetable)));
	g1 = mk_frame(mk_code_named(mk_wide(KIND_UCS4, ucs4, 2), mk_str("/g.py"), 10,
				    mk_bytes(linetable, sizeof(linetable))), 0, -2, OWNER_THREAD, true);
	g2 = mk_frame(c, g1, 18, OWNER_GENERATOR, true);
	mk_tstate(200, g2);
	mk_tstate(300, 0);

	p = open_proc(0x030b02f0);
	CHECK(p);
	if (!p)
		return;
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	if (n == 3) {
		CHECK_FRAME(fr[0], "outer.<locals>.inner", 11, 0);
		CHECK_FRAME(fr[1], "Klass.method", 16, 0);
		CHECK_FRAME(fr[2], "<module>", 113, PY_FRAME_ENTRY);
		CHECK(!strcmp(fr[0].filename, "/src/app.py"));
		CHECK_EQ_U(fr[0].firstlineno, 10);
		CHECK(fr[0].filename == fr[2].filename);        /* interned */
	}
	n = py_read_stack(p, 200, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 2);
	if (n == 2) {
		CHECK_FRAME(fr[0], "caf\xc3\xa9", 13, PY_FRAME_ENTRY | PY_FRAME_GENERATOR);
		CHECK(!strcmp(fr[0].filename, "p\xcf\x80"));
		CHECK_FRAME(fr[1], "x\xf0\x9f\x98\x80", 10, PY_FRAME_ENTRY);  /* not started: first line */
	}
	/* a Python thread with no frame, and a thread that is not Python's */
	CHECK_EQ_U(py_read_stack(p, 300, fr, PY_MAX_DEPTH, &st), 0);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(py_read_stack(p, 400, fr, PY_MAX_DEPTH, &st), 0);
	CHECK_EQ_U(st, PY_STACK_NO_THREAD);
	/* the caller's room: the innermost frames, and "too deep" */
	CHECK_EQ_U(py_read_stack(p, 100, fr, 2, &st), 2);
	CHECK_EQ_U(st, PY_STACK_TOO_DEEP);
	py_proc_free(p);
}

static uint64_t u64_at_heap(uint64_t addr, uint32_t off)
{
	uint64_t v;

	memcpy(&v, heap + (addr - HEAP) + off, 8);
	return v;
}

/* 3.12: shim frames owned by the C stack delimit the runs and are not shown. */
static void check_shims(uint32_t version)
{
	struct py_proc *p;
	enum py_status st;
	uint64_t f1, f2, f3, ts, top, stk;
	unsigned before, before_calls;
	size_t n;
	uint64_t counts[PY_STACK_NR];

	/* a C stack below everything else, for the sample's stack copy */
	stk = alloc(1024);
	f1 = mk_frame(mk_code("<module>"), mk_shim(0), 20, OWNER_THREAD, false);
	f2 = mk_frame(mk_code("key"), mk_shim(f1), 12, OWNER_THREAD, false);
	f3 = mk_frame(mk_code("gen"), f2, 4, OWNER_GENERATOR, false);
	ts = mk_tstate(100, f3);
	p = open_proc(version);
	CHECK(p);
	if (!p)
		return;
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	if (n == 3) {
		CHECK_FRAME(fr[0], "gen", 11, PY_FRAME_GENERATOR);
		CHECK_FRAME(fr[1], "key", 16, PY_FRAME_ENTRY);
		CHECK_FRAME(fr[2], "<module>", 113, PY_FRAME_ENTRY);
	}
	/* warm: the code objects and the thread state come from the caches, a few page reads */
	before = reads;
	before_calls = calls;
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(n, 3);
	CHECK(reads - before <= 8);
	/*
	 * in one call of the reader: the pages where the thread was, with the
	 * headers of the code objects its last stack ran
	 */
	CHECK_EQ_U(calls - before_calls, 1);
	/* a shim on top: the innermost eval loop runs no Python frame yet */
	top = mk_shim(f3);
	set_current_frame(ts, top);
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(fr[0].flags, PY_FRAME_GENERATOR | PY_FRAME_EMPTY_RUN_ABOVE);
	/* two shims in a row never happen */
	set_current_frame(ts, mk_shim(top));
	CHECK_EQ_U(py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st), 0);
	CHECK_EQ_U(st, PY_STACK_TORN);
	py_proc_counts(p, counts);
	CHECK_EQ_U(counts[PY_STACK_COMPLETE], 3);
	CHECK_EQ_U(counts[PY_STACK_TORN], 1);
	/*
	 * the thread went deeper after its sample: a loop whose shim lies in
	 * the C stack below the sample's stack pointer began later, and its
	 * frames are left out
	 */
	{
		uint64_t shim = stk + 64;
		uint8_t copy[512];
		struct py_ustack us = { stk + 256, copy, sizeof(copy) };
		bool moved;

		memset(copy, 0, sizeof(copy));
		memcpy(heap + (shim - HEAP), heap + (u64_at_heap(f2, L->frame_previous) - HEAP), L->frame_size);
		put64(shim, L->frame_previous, f3);
		set_current_frame(ts, mk_frame(mk_code("later"), shim, 4, OWNER_THREAD, false));
		n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
		CHECK_EQ_U(n, 4);
		if (n == 4)
			CHECK(!strcmp(fr[0].qualname, "later"));
		n = py_read_stack_at(p, 100, &us, fr, PY_MAX_DEPTH, &st, &moved);
		CHECK_EQ_U(st, PY_STACK_COMPLETE);
		CHECK_EQ_U(n, 3);
		if (n == 3) {
			CHECK_FRAME(fr[0], "gen", 11, PY_FRAME_GENERATOR);
			CHECK_FRAME(fr[2], "<module>", 113, PY_FRAME_ENTRY);
		}
	}
	py_proc_free(p);
}

static void good_312(void)
{
	space(0x030c0000);
	check_shims(0x030c01f0);
}

/* Writes 3.13's _Py_DebugOffsets at the start of the runtime, with the offsets of L. */
static void put_debug_offsets(uint64_t version, uint64_t free_threaded, const char *cookie)
{
	const struct { uint32_t pos, val; } v[] = {
		{ 40, L->runtime_interp_head }, { 64, L->interp_next }, { 72, L->interp_threads_head },
		{ 168, L->tstate_next }, { 184, L->cframe_current_frame }, { 200, L->tstate_native_tid },
		{ 232, L->frame_previous }, { 240, L->frame_code }, { 248, L->frame_instr },
		{ 256, L->frame_size }, { 264, L->frame_owner }, { 280, L->code_filename },
		{ 296, L->code_qualname }, { 304, L->code_linetable }, { 312, L->code_firstlineno },
		{ 344, L->code_adaptive }, { 360, 8 }, { 520, L->bytes_size }, { 528, L->bytes_sval },
		{ 544, L->str_state }, { 552, L->str_length }, { 560, L->str_ascii_size },
	};

	memcpy(heap + (runtime - HEAP), cookie, 8);
	put64(runtime, 8, version);
	put64(runtime, 16, free_threaded);
	for (size_t i = 0; i < ARRAY_SIZE_(v); i++)
		put64(runtime, v[i].pos, v[i].val);
}

/*
 * 3.13 from _Py_DebugOffsets: a 3.12-like layout whose current frame is in
 * the thread state (3.13 has no _PyCFrame), described by the runtime.
 */
static struct py_layout l313;

/* An empty 3.13 runtime, its layout in l313 and its _Py_DebugOffsets in place. */
static void space_313(void)
{
	space(0x030c0000);
	l313 = *L;
	l313.version = 0x030d0000;
	l313.tstate_cframe = PY_OFF_NONE;
	l313.cframe_current_frame = 56;
	/* the runtime's interpreter list lies after _Py_DebugOffsets */
	l313.runtime_interp_head = 600;
	L = &l313;
	put64(runtime, L->runtime_interp_head, interp);
	put_debug_offsets(0x030d00f0, 0, "xdebugpy");
}

static void good_313(void)
{
	space_313();
	check_shims(0x030d00f0);
}

static void refused(uint32_t version, int want_errno, const char *want_err)
{
	struct py_proc_opts o = { .version = version, .runtime = runtime, .read = fake_read };
	char err[128] = "";
	enum py_status st;

	errno = 0;
	CHECK(!py_proc_new(&o, err, sizeof(err)));
	CHECK_EQ_U(errno, want_errno);
	if (!strstr(err, want_err))
		fprintf(stderr, "# error \"%s\", expected \"%s\"\n", err, want_err), unit_failed++;
	CHECK_EQ_U(py_read_stack(NULL, 1, fr, 1, &st), 0);
	CHECK_EQ_U(st, PY_STACK_UNSUPPORTED);
}

static void unsupported(void)
{
	space(0x030c0000);
	l313 = *L;
	L = &l313;
	refused(0x030a0000, ENOTSUP, "Python 3.10 is not supported");
	refused(0x020700f0, ENOTSUP, "Python 2.7 is not supported");
	put_debug_offsets(0x030d00f0, 1, "xdebugpy");
	refused(0x030d00f0, ENOTSUP, "free-threaded");
	put_debug_offsets(0x030e00f0, 0, "xdebugpy");
	refused(0x030e00f0, ENOTSUP, "Python 3.14 is not supported");
	put_debug_offsets(0x030d00f0, 0, "xdebugpz");
	refused(0x030d00f0, EPROTO, "_Py_DebugOffsets");
	put_debug_offsets(0x030e00f0, 0, "xdebugpy");
	refused(0x030d00f0, EPROTO, "says version");
	put_debug_offsets(0x030d00f0, 0, "xdebugpy");
	put64(runtime, 248, 1u << 20);  /* an offset out of bounds */
	refused(0x030d00f0, EPROTO, "implausible");
	put_debug_offsets(0x030d00f0, 0, "xdebugpy");
	put64(runtime, 248, 2000);      /* within 64 KiB, but a frame header over PY_HDR_MAX */
	refused(0x030d00f0, EPROTO, "out of bounds");
	/* a str header of 8 bytes (state and length at 0): its ob_type would not be read */
	put_debug_offsets(0x030d00f0, 0, "xdebugpy");
	put64(runtime, 544, 0);
	put64(runtime, 552, 0);
	put64(runtime, 560, 8);
	refused(0x030d00f0, EPROTO, "out of bounds");
	/* nor a bytes object's of 8 (size at 0) */
	put_debug_offsets(0x030d00f0, 0, "xdebugpy");
	put64(runtime, 520, 0);
	put64(runtime, 528, 8);
	refused(0x030d00f0, EPROTO, "out of bounds");
	runtime = UNMAPPED;
	refused(0x030d00f0, EFAULT, "cannot read");
}

/* One hostile chain: thread 100 runs it; want N good frames, then status WANT. */
static void hostile(struct py_proc *p, uint64_t ts, uint64_t top, size_t want_n, enum py_status want)
{
	enum py_status st;
	size_t n;

	set_current_frame(ts, top);
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH + 8, &st);
	CHECK_EQ_U(st, want);
	CHECK_EQ_U(n, want_n);
	for (size_t i = 0; i < n; i++)
		CHECK(!strcmp(fr[i].qualname, "good"));
}

static void hostile_memory(void)
{
	struct py_proc *p;
	uint64_t good, bad, ts, f, leaf, base, other;
	enum py_status st;

	space(0x030c0000);
	good = mk_code("good");
	ts = mk_tstate(100, 0);
	p = open_proc(0x030c01f0);
	CHECK(p);
	if (!p)
		return;

	/* loops: to itself, and a frame further down pointing back up */
	f = alloc(L->frame_size + 8);
	memcpy(heap + (f - HEAP), heap + (mk_frame(good, f, 0, OWNER_THREAD, false) - HEAP), L->frame_size);
	hostile(p, ts, f, 1, PY_STACK_TORN);
	leaf = mk_frame(good, 0, 0, OWNER_THREAD, false);
	base = mk_frame(good, leaf, 0, OWNER_THREAD, false);
	put64(leaf, L->frame_previous, mk_frame(good, base, 0, OWNER_THREAD, false));
	hostile(p, ts, leaf, 3, PY_STACK_TORN);

	/* previous frame unmapped, misaligned, beyond user space; the current frame unmapped */
	hostile(p, ts, mk_frame(good, UNMAPPED, 0, OWNER_THREAD, false), 1, PY_STACK_UNREADABLE);
	hostile(p, ts, mk_frame(good, HEAP + 4099, 0, OWNER_THREAD, false), 0, PY_STACK_TORN);
	hostile(p, ts, mk_frame(good, 1ull << 60, 0, OWNER_THREAD, false), 0, PY_STACK_TORN);
	hostile(p, ts, UNMAPPED, 0, PY_STACK_UNREADABLE);
	hostile(p, ts, HEAP + 3, 0, PY_STACK_TORN);

	/* code objects: unmapped, misaligned, of another type, with a negative first line */
	base = mk_frame(good, 0, 0, OWNER_THREAD, false);
	hostile(p, ts, mk_frame(UNMAPPED, base, 0, OWNER_THREAD, false), 0, PY_STACK_UNREADABLE);
	hostile(p, ts, mk_frame(good + 4, base, 0, OWNER_THREAD, false), 0, PY_STACK_TORN);
	bad = mk_code("bad");
	put64(bad, 8, unicode_t);
	hostile(p, ts, mk_frame(good, mk_frame(bad, base, 0, OWNER_THREAD, false), 0, OWNER_THREAD, false), 1,
		PY_STACK_TORN);
	bad = mk_code("bad");
	put32(bad, L->code_firstlineno, (uint32_t)-5);
	hostile(p, ts, mk_frame(bad, base, 0, OWNER_THREAD, false), 0, PY_STACK_TORN);
	/* an owner no version has */
	hostile(p, ts, mk_frame(good, base, 0, 7, false), 0, PY_STACK_TORN);

	/* names: of another type, huge, negative, not compact, "ASCII" with bit 7, unmapped data */
	other = mk_str("bad");
	put64(other, 8, bytes_t);
	bad = mk_code_named(other, mk_str("/f.py"), 1, mk_bytes(linetable, 4));
	hostile(p, ts, mk_frame(good, mk_frame(bad, 0, 0, OWNER_THREAD, false), 0, OWNER_THREAD, false), 1,
		PY_STACK_TORN);
	for (int i = 0; i < 5; i++) {
		other = mk_str("bad");
		if (i == 0)
			put64(other, L->str_length, 1ull << 40);
		else if (i == 1)
			put64(other, L->str_length, PY_MAX_STR + 1);
		else if (i == 2)
			put64(other, L->str_length, (uint64_t)-1);
		else if (i == 3)
			put32(other, L->str_state, str_state(0, true) & ~(1u << 5));
		else
			put8(other, L->str_ascii_size + 1, 0xc3);
		bad = mk_code_named(mk_str("bad"), other, 1, mk_bytes(linetable, 4));
		hostile(p, ts, mk_frame(good, mk_frame(bad, 0, 0, OWNER_THREAD, false), 0, OWNER_THREAD, false),
			1, PY_STACK_TORN);
	}
	/* a string whose characters lie past the end of mapped memory */
	other = HEAP + HEAP_SIZE - L->str_ascii_size;
	put64(other, 8, unicode_t);
	put64(other, L->str_length, 10);
	put32(other, L->str_state, str_state(0, true));
	bad = mk_code_named(other, mk_str("/f.py"), 1, mk_bytes(linetable, 4));
	hostile(p, ts, mk_frame(bad, 0, 0, OWNER_THREAD, false), 0, PY_STACK_UNREADABLE);

	/* a UTF-8 copy is taken when it is UTF-8; one with a surrogate, an overlong '/' or 0xff is not */
	{
		static const uint16_t pi[] = { 'p', 0x3c0 };
		uint64_t s = mk_wide(KIND_UCS2, pi, 2), raw = alloc(16);

		memcpy(heap + (raw - HEAP), "\xce\xb1\xce\xb2", 4);
		put64(s, L->str_utf8, raw);
		put64(s, L->str_utf8_length, 4);
		bad = mk_code_named(mk_str("good"), s, 1, mk_bytes(linetable, 4));
		hostile(p, ts, mk_frame(bad, 0, 0, OWNER_THREAD, false), 1, PY_STACK_COMPLETE);
		CHECK(!strcmp(fr[0].filename, "\xce\xb1\xce\xb2"));
		s = mk_wide(KIND_UCS2, pi, 2);
		raw = alloc(16);
		memcpy(heap + (raw - HEAP), "\xed\xa0\x80\xc0\xaf\xff", 6);
		put64(s, L->str_utf8, raw);
		put64(s, L->str_utf8_length, 6);
		bad = mk_code_named(mk_str("good"), s, 1, mk_bytes(linetable, 4));
		hostile(p, ts, mk_frame(bad, 0, 0, OWNER_THREAD, false), 1, PY_STACK_COMPLETE);
		CHECK(!strcmp(fr[0].filename, "p\xcf\x80"));
	}

	/* line tables: of another type (a broken code object), huge, truncated: the frame stays, lineless */
	bad = mk_code_named(mk_str("good"), mk_str("/f.py"), 10, mk_str("not bytes"));
	hostile(p, ts, mk_frame(bad, 0, 0, OWNER_THREAD, false), 0, PY_STACK_TORN);
	other = mk_bytes(linetable, sizeof(linetable));
	put64(other, L->bytes_size, 1ull << 40);
	bad = mk_code_named(mk_str("good"), mk_str("/f.py"), 10, other);
	hostile(p, ts, mk_frame(bad, 0, 0, OWNER_THREAD, false), 1, PY_STACK_COMPLETE);
	CHECK_EQ_U(fr[0].line, 0);
	bad = mk_code_named(mk_str("good"), mk_str("/f.py"), 10, mk_bytes(linetable, 9));
	hostile(p, ts, mk_frame(bad, mk_frame(bad, 0, 12, OWNER_THREAD, false), 4, OWNER_THREAD, false), 2,
		PY_STACK_COMPLETE);
	CHECK_EQ_U(fr[0].line, 11);
	CHECK_EQ_U(fr[1].line, 0);
	/* an instruction pointer before the code or odd: no line */
	hostile(p, ts, mk_frame(good, 0, -64, OWNER_THREAD, false), 1, PY_STACK_COMPLETE);
	CHECK_EQ_U(fr[0].line, 0);
	hostile(p, ts, mk_frame(good, 0, 3, OWNER_THREAD, false), 1, PY_STACK_COMPLETE);
	CHECK_EQ_U(fr[0].line, 0);

	/* a depth bomb: 5000 distinct frames stop at PY_MAX_DEPTH */
	base = 0;
	for (int i = 0; i < 5000; i++)
		base = mk_frame(good, base, 0, OWNER_THREAD, false);
	hostile(p, ts, base, PY_MAX_DEPTH, PY_STACK_TOO_DEEP);
	py_proc_free(p);

	/* thread states: a list that loops, an interpreter list that loops, a NULL _PyCFrame */
	space(0x030c0000);
	ts = mk_tstate(100, 0);
	put64(ts, L->tstate_next, ts);
	p = open_proc(0x030c01f0);
	CHECK_EQ_U(py_read_stack(p, 555, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_TORN);
	CHECK_EQ_U(py_read_stack(p, 100, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);      /* thread 100 is found before the loop */
	put64(ts, L->tstate_next, 0);
	put64(interp, L->interp_next, interp);
	CHECK_EQ_U(py_read_stack(p, 555, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_TORN);
	put64(interp, L->interp_next, 0);
	put64(ts, L->tstate_cframe, 0);
	CHECK_EQ_U(py_read_stack(p, 100, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_TORN);
	put64(runtime, L->runtime_interp_head, UNMAPPED);
	CHECK_EQ_U(py_read_stack(p, 555, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_UNREADABLE);
	py_proc_free(p);
}

/* A chain of N frames, each running its own code object named "good" with table TABLE, at OFF. */
static uint64_t distinct_chain(int n, uint64_t table, int64_t off)
{
	uint64_t f = 0, name = mk_str("good"), file = mk_str("/src/app.py");

	for (int i = 0; i < n; i++)
		f = mk_frame(mk_code_named(name, file, 10, table), f, off, OWNER_THREAD, false);
	return f;
}

/* What one read may decode (PY_MAX_DECODE) and scan (PY_MAX_LINE_SCAN), what a process keeps (PY_MAX_KEPT). */
static void budgets(void)
{
	uint8_t *big = calloc(1, PY_MAX_LINETABLE);
	struct py_proc *p;
	enum py_status st;
	uint64_t table, ts;
	size_t n, with_lines = 0;
	int tries;

	/*
	 * 20 code objects, each with a mebibyte table: one read decodes all
	 * but one of those PY_MAX_DECODE holds (the names take a few bytes),
	 * the next go on from there
	 */
	space(0x030c0000);
	memcpy(big, linetable, sizeof(linetable));
	table = mk_bytes(big, PY_MAX_LINETABLE);
	ts = mk_tstate(100, distinct_chain(20, table, 4));
	p = open_proc(0x030c01f0);
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_TOO_DEEP);
	CHECK_EQ_U(n, PY_MAX_DECODE / PY_MAX_LINETABLE - 1);
	CHECK_EQ_U(fr[n - 1].line, 11);
	for (tries = 0; tries < 20 && st == PY_STACK_TOO_DEEP; tries++)
		n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 20);
	CHECK_EQ_U(tries, 20 / (PY_MAX_DECODE / PY_MAX_LINETABLE - 1));

	/* 80 more: 63 tables are kept in all, the code objects after them have no lines */
	set_current_frame(ts, distinct_chain(80, table, 4));
	for (tries = 0; tries < 20; tries++) {
		n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
		if (st != PY_STACK_TOO_DEEP)
			break;
	}
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 80);
	for (size_t i = 0; i < n; i++)
		with_lines += fr[i].line == 11;
	CHECK_EQ_U(with_lines, 63 - 20);
	CHECK_EQ_U(fr[0].line, 11);     /* the innermost were decoded first */
	CHECK_EQ_U(fr[79].line, 0);
	py_proc_free(p);

	/*
	 * One function at two offsets in turn, the last two entries of a table
	 * of a quarter of PY_MAX_LINE_SCAN (lines 11 and 12): four lookups scan
	 * the table; after them only the offset last looked up has its line
	 * (from the memo).
	 */
	space(0x030c0000);
	{
		const size_t len = PY_MAX_LINE_SCAN / 4;
		uint64_t code, f = 0;

		memset(big, 0xf8, len);         /* no location, one code unit */
		memcpy(big + len - 4, "\xe8\x02\xe8\x02", 4);
		table = mk_bytes(big, len);
		code = mk_code_named(mk_str("good"), mk_str("/src/app.py"), 10, table);
		for (int i = 0; i < 8; i++)
			f = mk_frame(code, f, 2 * (int64_t)(len - (i % 2 ? 3 : 4)), OWNER_THREAD, false);
		mk_tstate(100, f);
	}
	p = open_proc(0x030c01f0);
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 8);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U(fr[i].line, i % 2 ? 11 : i < 4 ? 12 : 0);
	/* the next read has its budget again */
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(fr[0].line, 12);
	py_proc_free(p);
	free(big);
}

/*
 * The caches notice a code object replaced at the same address (once
 * PY_CODE_RECHECK_NS has passed since it was last checked: the clock is
 * moved on), or a thread state at once.
 */
static void cache_validity(void)
{
	struct py_proc *p;
	enum py_status st;
	uint64_t code, ts;

	space(0x030b0000);
	code = mk_code("first");
	ts = mk_tstate(100, mk_frame(code, 0, 0, OWNER_THREAD, true));
	p = open_proc(0x030b02f0);
	CHECK_EQ_U(py_read_stack(p, 100, fr, 8, &st), 1);
	CHECK(!strcmp(fr[0].qualname, "first"));
	put64(code, L->code_qualname, mk_str("second"));
	now += PY_CODE_RECHECK_NS;
	CHECK_EQ_U(py_read_stack(p, 100, fr, 8, &st), 1);
	CHECK(!strcmp(fr[0].qualname, "second"));
	/* thread 100 exits, its thread state is reused by thread 101 */
	put64(ts, L->tstate_native_tid, 101);
	CHECK_EQ_U(py_read_stack(p, 100, fr, 8, &st), 0);
	CHECK_EQ_U(st, PY_STACK_NO_THREAD);
	CHECK_EQ_U(py_read_stack(p, 101, fr, 8, &st), 1);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	py_proc_free(p);
}

/*
 * A cached code object is taken without reading its header for
 * PY_CODE_RECHECK_NS after its header last matched (at whatever time each
 * read begins), then checked again; a match starts the time again.
 */
static void code_recheck(void)
{
	const uint64_t t0 = 1000000000000ull;
	struct py_target t = { .read = fake_read };
	uint8_t hdr[PY_HDR_MAX];
	struct py_codes *c;
	struct py_code *got = NULL;
	uint32_t version = 0x030b02f0;
	char err[128] = "";
	uint64_t code;

	space(0x030b0000);
	CHECK_EQ_U(py_layout_init(&t, runtime, &version, err, sizeof(err)), 0);
	t.code_type = code_t;
	t.unicode_type = unicode_t;
	t.bytes_type = bytes_t;
	code = mk_code("first");
	memcpy(hdr, heap + (code - HEAP), t.hdr_code);
	c = py_codes_new();
	py_codes_begin_read(c, t0);
	CHECK(!py_code_recent(c, code));
	CHECK_EQ_U(py_code_get(c, &t, code, hdr, false, &got), PY_STACK_COMPLETE);
	py_codes_begin_read(c, t0 + PY_CODE_RECHECK_NS - 1);
	got = py_code_recent(c, code);
	CHECK(got && !strcmp(got->qualname, "first"));
	py_codes_begin_read(c, t0 + PY_CODE_RECHECK_NS);
	CHECK(!py_code_recent(c, code));
	/* checked again: recent for as long again */
	CHECK_EQ_U(py_code_get(c, &t, code, hdr, false, &got), PY_STACK_COMPLETE);
	py_codes_begin_read(c, t0 + 2 * PY_CODE_RECHECK_NS - 1);
	CHECK(py_code_recent(c, code));
	/* another code object in its place: decoded anew, recent from then on */
	put64(code, L->code_qualname, mk_str("second"));
	memcpy(hdr, heap + (code - HEAP), t.hdr_code);
	py_codes_begin_read(c, t0 + 2 * PY_CODE_RECHECK_NS);
	CHECK(!py_code_recent(c, code));
	CHECK_EQ_U(py_code_get(c, &t, code, hdr, false, &got), PY_STACK_COMPLETE);
	CHECK(got && !strcmp(got->qualname, "second"));
	got = py_code_recent(c, code);
	CHECK(got && !strcmp(got->qualname, "second"));
	py_codes_free(c);
}

/*
 * A stack of code objects not seen before costs a few calls of the reader,
 * not two per name and two per line table: their names and tables are
 * fetched together (py_codes_prefetch); a name or a table longer than
 * what is fetched ahead is read on its own, and still right.
 */
static void batched_decodes(uint32_t version, uint32_t hex)
{
	enum { DEPTH = 24 };
	static const uint8_t latin1[] = { 'n', 'a', 0xef, 'v', 'e' };
	uint8_t *table = calloc(1, 2000);
	char name[400], want[DEPTH][400];
	struct py_proc *p;
	enum py_status st;
	uint64_t f = 0, ts, files[2], long_table;
	unsigned before;
	size_t n;

	space(version);
	memcpy(table, linetable, sizeof(linetable));
	long_table = mk_bytes(table, 2000);
	files[0] = mk_str("/src/app.py");
	files[1] = mk_str("/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py");
	ts = mk_tstate(100, mk_frame(mk_code("warm"), 0, 0, OWNER_THREAD, true));
	p = open_proc(hex);
	CHECK(p);
	if (!p) {
		free(table);
		return;
	}
	CHECK_EQ_U(py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st), 1);
	/* outermost first: frame i of the chain is DEPTH - 1 - i from the top */
	for (int i = 0; i < DEPTH; i++) {
		uint64_t qual;

		if (i == 5) {
			memset(name, 'x', 300);
			name[300] = '\0';
			qual = mk_str(name);
		} else if (i == 9) {
			strcpy(name, "na\xc3\xafve");
			qual = mk_wide(KIND_LATIN1, latin1, sizeof(latin1));
		} else {
			snprintf(name, sizeof(name), "Model.layer%d", i);
			qual = mk_str(name);
		}
		strcpy(want[DEPTH - 1 - i], name);
		f = mk_frame(mk_code_named(qual, files[i & 1], 10,
					   i == 7 ? long_table : mk_bytes(linetable, sizeof(linetable))),
			     f, 4, OWNER_THREAD, i == 0);
	}
	set_current_frame(ts, f);
	before = calls;
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, DEPTH);
	/*
	 * the frames (their pages: 7 or 9 calls in all here), their code
	 * objects' headers, the names and tables, the long name and the long
	 * table: not 6 a code object (148)
	 */
	CHECK(calls - before < DEPTH / 2);
	for (size_t i = 0; i < n && i < DEPTH; i++) {
		CHECK(!strcmp(fr[i].qualname, want[i]));
		CHECK(!strcmp(fr[i].filename, (DEPTH - 1 - i) & 1 ? "/usr/lib/python3/dist-packages/torch/utils/data/"
								     "_utils/worker.py" : "/src/app.py"));
		CHECK_EQ_U(fr[i].line, 11);
	}
	py_proc_free(p);
	free(table);
}

static void batched_decodes_all(void)
{
	batched_decodes(0x030b0000, 0x030b02f0);
	batched_decodes(0x030c0000, 0x030c01f0);
}

/* Probing real files: Debian's python3.11 (.dynsym only), not-Python ELF, not ELF. */
static void probe_files(void)
{
	struct py_probe pr;
	int fd;

	if (access("/usr/bin/python3.11", R_OK) == 0) {
		CHECK_EQ_U(py_probe_file(-1, "/usr/bin/python3.11", &pr), 0);
		CHECK_EQ_U(pr.version >> 16, 0x030b);
		CHECK(!pr.version_from_name);
		CHECK(pr.runtime.addr && pr.runtime.size > 1000);
		CHECK(pr.eval.addr && pr.code_type.addr && pr.unicode_type.addr && pr.bytes_type.addr);
	} else {
		printf("# skip: no /usr/bin/python3.11\n");
	}
	CHECK(py_probe_file(-1, "/bin/sh", &pr) == -ENOENT);
	fd = open("/etc/hostname", O_RDONLY);
	if (fd >= 0) {
		CHECK(py_probe_file(fd, "/etc/hostname", &pr) == -ENOEXEC);
		close(fd);
	}
	CHECK(py_probe_file(-1, "/nonexistent/libpython3.9.so", &pr) == -ENOENT);
}

/* The section of FILE named NAME, copied into the fake heap at its start; its size or 0. */
static size_t load_section(const char *file, const char *name)
{
	int fd = open(file, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx, got = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			const char *n;

			if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(n, name))
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size <= HEAP_SIZE) {
				memcpy(heap, d->d_buf, d->d_size);
				got = d->d_size;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return got;
}

/*
 * The _Py_DebugOffsets of a real 3.13 (pyenv's, when installed): its
 * _PyRuntime is initialized data, so the file holds it as the process will.
 */
static void real_313_debug_offsets(void)
{
	char path[512], err[128] = "";
	const char *home = getenv("HOME");
	struct py_target t = { .read = fake_read };
	struct py_probe pr;
	uint32_t version;

	snprintf(path, sizeof(path), "%s/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", home ? home : "");
	if (access(path, R_OK) || py_probe_file(-1, path, &pr) || !load_section(path, ".PyRuntime")) {
		printf("# skip: no %s\n", path);
		return;
	}
	version = pr.version;
	CHECK_EQ_U(version >> 16, 0x030d);
	CHECK_EQ_U(py_layout_init(&t, HEAP, &version, err, sizeof(err)), 0);
	CHECK_EQ_U(version, pr.version);
	CHECK_EQ_U(t.l.tstate_cframe, PY_OFF_NONE);
	CHECK_EQ_U(t.l.str_ascii_size, 40);     /* sizeof(PyASCIIObject) in 3.13.0's headers */
	CHECK_EQ_U(t.l.bytes_sval, 32);
	CHECK_EQ_U(t.l.frame_code, 0);          /* f_executable comes first */
	CHECK_EQ_U(t.l.frame_previous, 8);
}

/*
 * 3.11 and 3.12 through the sample's stack copy: the walk starts from the
 * frame each evaluation loop's _PyCFrame showed when the sample was taken,
 * however the thread moved on before the read.
 */
static void check_sample_copy(uint32_t version, uint32_t hex)
{
	const bool shims = version >= 0x030c0000;
	const uint32_t cur = L->cframe_current_frame, prev = cur + 8;
	uint8_t copy[768];
	struct py_ustack us;
	struct py_proc *p;
	enum py_status st;
	uint64_t f1, f2, k1, k2, ts, stk, x, d, e;
	bool moved;
	size_t n;

	/* a C stack below the frames: the outer loop's _PyCFrame at X, a deeper loop's at D, the copy from stk + 256 */
	stk = alloc(1024);
	f1 = mk_frame(mk_code("<module>"), shims ? mk_shim(0) : 0, 20, OWNER_THREAD, !shims);
	f2 = mk_frame(mk_code("outer"), f1, 12, OWNER_THREAD, false);
	k1 = mk_frame(mk_code("key"), shims ? mk_shim(f2) : f2, 4, OWNER_THREAD, !shims);
	k2 = mk_frame(mk_code("other_key"), shims ? mk_shim(f2) : f2, 4, OWNER_THREAD, !shims);
	x = stk + 896;
	d = stk + 400;
	e = stk + 64;
	ts = mk_tstate(100, f2);
	put64(x, cur, f2);
	put64(x, prev, 0);
	us = (struct py_ustack){ stk + 256, copy, sizeof(copy) };
	p = open_proc(hex);
	CHECK(p);
	if (!p)
		return;

	/* sampled in key's loop, read once the thread came back out to the C caller of key */
	put64(d, cur, k1);
	put64(d, prev, x);
	put64(ts, L->tstate_cframe, d);
	if (shims) {
		/* 3.12: the shim that begins key's run lives in its loop's C frame */
		uint64_t shim = stk + 480;

		memcpy(heap + (shim - HEAP), heap + (u64_at_heap(k1, L->frame_previous) - HEAP), L->frame_size);
		put64(k1, L->frame_previous, shim);
	}
	memcpy(copy, heap + (us.sp - HEAP), sizeof(copy));
	put64(ts, L->tstate_cframe, x);
	/*
	 * by the read, the next call took key's slot and has not begun (3.11:
	 * not an entry frame yet), and the C stack below the caller is reused
	 */
	if (!shims)
		put8(k1, L->frame_is_entry, 0);
	memset(heap + (d - HEAP), 0xee, 128);
	n = py_read_stack_at(p, 100, &us, fr, PY_MAX_DEPTH, &st, &moved);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK(moved);
	CHECK_EQ_U(n, 3);
	if (n == 3) {
		CHECK_FRAME(fr[0], "key", 11, PY_FRAME_ENTRY);
		CHECK(!strcmp(fr[1].qualname, "outer"));
	}
	memset(heap + (d - HEAP), 0, 128);
	/* without the copy: the thread as it is now */
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(n, 2);
	if (n == 2)
		CHECK(!strcmp(fr[0].qualname, "outer"));

	/* sampled in the C caller, read once the thread went into another key's loop, below the copy */
	memset(heap + (d - HEAP), 0, 24);
	memcpy(copy, heap + (us.sp - HEAP), sizeof(copy));
	put64(e, cur, k2);
	put64(e, prev, x);
	put64(ts, L->tstate_cframe, e);
	n = py_read_stack_at(p, 100, &us, fr, PY_MAX_DEPTH, &st, &moved);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK(moved);
	CHECK_EQ_U(n, 2);
	if (n == 2)
		CHECK(!strcmp(fr[0].qualname, "outer"));

	/* the thread where the sample left it: the copy agrees */
	put64(ts, L->tstate_cframe, x);
	n = py_read_stack_at(p, 100, &us, fr, PY_MAX_DEPTH, &st, &moved);
	CHECK(!moved);
	CHECK_EQ_U(n, 2);

	/* a _PyCFrame beyond the copy's end: the thread as it is now */
	us.size = 512;
	put64(ts, L->tstate_cframe, x);
	n = py_read_stack_at(p, 100, &us, fr, PY_MAX_DEPTH, &st, &moved);
	CHECK(!moved);
	CHECK_EQ_U(n, 2);
	py_proc_free(p);
}

static void sample_copy(void)
{
	space(0x030b0000);
	check_sample_copy(0x030b0000, 0x030b02f0);
	space(0x030c0000);
	check_sample_copy(0x030c0000, 0x030c01f0);
}

/* ---- captures at the sample ---- */

/*
 * <module> -> train -> step, at offsets 20, 12 and 4 of their code: the
 * innermost frame, with train's frame in *TRAIN_FRAME and its code object
 * in *TRAIN (either may be NULL).
 */
static uint64_t mk_train_step(uint64_t *train_frame, uint64_t *train)
{
	const bool shims = L->owned_by_cstack != PY_OWNER_NONE;
	uint64_t f1 = mk_frame(mk_code("<module>"), shims ? mk_shim(0) : 0, 20, OWNER_THREAD, !shims);
	uint64_t code = mk_code("train"), f2 = mk_frame(code, f1, 12, OWNER_THREAD, false);

	if (train_frame)
		*train_frame = f2;
	if (train)
		*train = code;
	return mk_frame(mk_code("step"), f2, 4, OWNER_THREAD, false);
}

/* A slot: a frame's address and header, then its code object's address and header. */
#define CAP_CODE_OFF (8 + PY_CAPTURE_FRAME_MAX)
static uint8_t cap_slots[8][CAP_CODE_OFF + 8 + PY_CAPTURE_CODE_MAX];
static uint8_t cap_ts[PY_CAPTURE_TS_MAX];

/*
 * What the BPF program would copy of thread state TS with its innermost MAX
 * frames, and with CODE_LEN bytes of each frame's code object (0: none).
 */
static struct py_capture capture_codes_of(uint64_t ts, uint32_t ts_len, uint32_t frame_len, uint32_t code_len,
					  uint64_t first, size_t max)
{
	struct py_capture c = { ts, first, cap_ts, ts_len, 0, &cap_slots[0][0], sizeof(cap_slots[0]),
				code_len ? CAP_CODE_OFF : 0 };

	memcpy(cap_ts, heap + (ts - HEAP), ts_len);
	for (uint64_t f = first; f && c.nr < max && c.nr < ARRAY_SIZE_(cap_slots); c.nr++) {
		uint64_t code = u64_at_heap(f, L->frame_code);

		memset(cap_slots[c.nr], 0, sizeof(cap_slots[0]));
		memcpy(cap_slots[c.nr], &f, 8);
		memcpy(cap_slots[c.nr] + 8, heap + (f - HEAP), frame_len);
		if (code_len) {
			memcpy(cap_slots[c.nr] + CAP_CODE_OFF, &code, 8);
			memcpy(cap_slots[c.nr] + CAP_CODE_OFF + 8, heap + (code - HEAP), code_len);
		}
		f = u64_at_heap(f, L->frame_previous);
	}
	return c;
}

static struct py_capture capture_of(uint64_t ts, uint32_t ts_len, uint32_t frame_len, uint64_t first, size_t max)
{
	return capture_codes_of(ts, ts_len, frame_len, 0, first, max);
}

/*
 * A stack read from its capture is the one the sample saw, whatever the
 * thread did since, and costs no read once its code objects are known; a
 * capture that falls short is completed from memory; one of another
 * thread state, or whose thread state names another thread, is not used.
 */
static void check_captures(uint32_t hex)
{
	uint32_t ts_len, frame_len, ind1, ind2, next;
	struct py_capture c;
	struct py_proc *p;
	enum py_status st;
	uint64_t f2, f3, g, ts, ts2, tstate;
	size_t n;

	f3 = mk_train_step(&f2, NULL);
	g = mk_frame(mk_code("log"), f2, 4, OWNER_THREAD, false);
	ts = mk_tstate(100, f3);
	p = open_proc(hex);
	CHECK(p);
	if (!p)
		return;
	CHECK(py_capture_layout(p, &ts_len, &frame_len, &ind1, &ind2, &next));
	CHECK_EQ_U(ind1, L->tstate_cframe == PY_OFF_NONE ? UINT32_MAX : L->tstate_cframe);
	CHECK_EQ_U(ind2, L->cframe_current_frame);
	CHECK_EQ_U(next, L->frame_previous);
	CHECK(frame_len >= L->frame_size - 8 && frame_len % 8 == 0);
	/* not before a read found the thread state; then once */
	CHECK(!py_proc_tstate_to_register(p, 100, &tstate));
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(n, 3);
	CHECK(py_proc_tstate_to_register(p, 100, &tstate));
	CHECK_EQ_U(tstate, ts);
	CHECK(!py_proc_tstate_to_register(p, 100, &tstate));
	/* a thread without a thread state (a native thread): registered once, as 0 */
	n = py_read_stack(p, 101, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_NO_THREAD);
	tstate = 1;
	CHECK(py_proc_tstate_to_register(p, 101, &tstate));
	CHECK_EQ_U(tstate, 0);
	CHECK(!py_proc_tstate_to_register(p, 101, &tstate));

	/* sampled in step, read once the thread moved on to log and step's frame was reused */
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	set_current_frame(ts, g);
	put64(f3, L->frame_code, mk_code("reused"));
	calls = 0;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(py_proc_capture_use(p), PY_CAP_WHOLE);
	CHECK_EQ_U(calls, 0);
	if (n == 3) {
		CHECK_FRAME(fr[0], "step", 11, 0);
		CHECK(!strcmp(fr[1].qualname, "train"));
		CHECK(!strcmp(fr[2].qualname, "<module>"));
	}

	/*
	 * the process has ended by the read (a short-lived worker): the
	 * captured frames whose code objects the cache checked within
	 * PY_CODE_TRUST_NS keep their names; step's frame, reused by a code
	 * object never read, is left out. Without a capture, nothing.
	 */
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	now += 100000000;
	gone = true;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 2);
	if (n == 2) {
		CHECK(!strcmp(fr[0].qualname, "train"));
		CHECK(!strcmp(fr[1].qualname, "<module>"));
	}
	CHECK_EQ_U(py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st), 0);
	gone = false;

	/*
	 * train's code object freed since the sample (its memory reused): its
	 * captured frame keeps the name the cache found there within
	 * PY_CODE_TRUST_NS; past that it is left out, the frames around it stay
	 */
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	now += 100000000;       /* past the recheck: the code objects' headers are read again */
	put64(u64_at_heap(f2, L->frame_code), 8, unicode_t);
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	if (n == 3)
		CHECK(!strcmp(fr[1].qualname, "train"));
	now += PY_CODE_TRUST_NS;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 2);
	if (n == 2) {
		CHECK(!strcmp(fr[0].qualname, "reused"));
		CHECK(!strcmp(fr[1].qualname, "<module>"));
	}
	/* read from the process instead, the walk stops there as ever */
	set_current_frame(ts, f3);
	n = py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_TORN);
	CHECK_EQ_U(n, 1);
	put64(u64_at_heap(f2, L->frame_code), 8, code_t);
	set_current_frame(ts, g);

	/* a capture of the innermost frame only (reused by now): the others are read, and the read says so */
	c = capture_of(ts, ts_len, frame_len, f3, 1);
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(py_proc_capture_use(p), PY_CAP_PART);
	if (n == 3)
		CHECK(!strcmp(fr[0].qualname, "reused"));

	/* another thread state than the reader knows for 100, or naming another thread: not used */
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	c.tstate = ts + 16;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(py_proc_capture_use(p), PY_CAP_NONE);
	CHECK_EQ_U(n, 3);
	if (n == 3)
		CHECK(!strcmp(fr[0].qualname, "log"));
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	memset(cap_ts + L->tstate_native_tid, 0, 8);
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(py_proc_capture_use(p), PY_CAP_NONE);
	if (n == 3)
		CHECK(!strcmp(fr[0].qualname, "log"));
	/* a capture too short to hold the thread state's fields */
	c = capture_of(ts, ts_len, frame_len, f3, 64);
	c.ts_len = 8;
	py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(py_proc_capture_use(p), PY_CAP_NONE);

	/* 101, registered as without a thread state: again once the program lost its entry */
	py_proc_tstate_unregistered(p, 101);
	tstate = 1;
	CHECK(py_proc_tstate_to_register(p, 101, &tstate));
	CHECK_EQ_U(tstate, 0);
	CHECK(!py_proc_tstate_to_register(p, 101, &tstate));
	/* and once it has one (a C thread that took the GIL), that one */
	ts2 = mk_tstate(101, f2);
	n = py_read_stack(p, 101, fr, PY_MAX_DEPTH, &st);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK(py_proc_tstate_to_register(p, 101, &tstate));
	CHECK_EQ_U(tstate, ts2);
	py_proc_free(p);
}

/*
 * With the code objects' headers in the capture, a stack whose code
 * objects are cached costs no read however long since they were checked,
 * and each frame is named after the code object it ran at the sample:
 * one replaced since is not read; one replaced before is.
 */
static void check_capture_codes(uint32_t hex)
{
	uint32_t ts_len, frame_len, ind1, ind2, next, code_at, code_len;
	uint64_t f3, ts, train, tstate;
	struct py_capture c;
	struct py_proc *p;
	enum py_status st;
	size_t n;

	f3 = mk_train_step(NULL, &train);
	ts = mk_tstate(100, f3);
	p = open_proc(hex);
	CHECK(p);
	if (!p)
		return;
	CHECK(py_capture_layout(p, &ts_len, &frame_len, &ind1, &ind2, &next));
	CHECK(py_capture_code(p, frame_len, &code_at, &code_len));
	CHECK_EQ_U(code_at, L->frame_code);
	CHECK(code_len > L->code_linetable && code_len <= PY_CAPTURE_CODE_MAX);
	/* the first read finds the thread state and fills the cache */
	CHECK_EQ_U(py_read_stack(p, 100, fr, PY_MAX_DEPTH, &st), 3);
	CHECK(py_proc_tstate_to_register(p, 100, &tstate));

	/* long past the recheck, a capture still needs no read */
	now += 10ull * PY_CODE_TRUST_NS;
	c = capture_codes_of(ts, ts_len, frame_len, code_len, f3, 64);
	calls = 0;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(calls, 0);
	if (n == 3) {
		CHECK_FRAME(fr[0], "step", 11, 0);
		CHECK(!strcmp(fr[1].qualname, "train"));
	}
	/* the same again (the thread's memo): no read either */
	now += 10ull * PY_CODE_TRUST_NS;
	calls = 0;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(calls, 0);

	/* train's code object replaced after the sample: the capture's header names what ran */
	put64(train, L->code_qualname, mk_str("later"));
	now += 10ull * PY_CODE_TRUST_NS;
	calls = 0;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(calls, 0);
	if (n == 3)
		CHECK(!strcmp(fr[1].qualname, "train"));
	/* and before it: the new one is read, and named */
	c = capture_codes_of(ts, ts_len, frame_len, code_len, f3, 64);
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 3);
	CHECK(calls > 0);
	if (n == 3)
		CHECK(!strcmp(fr[1].qualname, "later"));

	/* a header the program could not copy (address 0): read from the process, past the recheck */
	c = capture_codes_of(ts, ts_len, frame_len, code_len, f3, 64);
	memset(cap_slots[0] + c.code_off, 0, 8);
	now += 10ull * PY_CODE_TRUST_NS;
	calls = 0;
	n = py_read_stack_cap(p, 100, NULL, &c, fr, PY_MAX_DEPTH, &st, NULL);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(calls, 1);
	if (n == 3)
		CHECK_FRAME(fr[0], "step", 11, 0);
	py_proc_free(p);
}

/*
 * A forked process's reader takes its parent's code objects (py_proc_seed):
 * its first stack reads their headers but no name or line table; a code
 * object the child replaced since the fork is read and named anew.
 */
static void check_seed(uint32_t hex)
{
	struct py_proc *parent, *cold, *child;
	const char *names[3];
	uint64_t train;
	enum py_status st;
	unsigned cold_reads, cold_calls;

	mk_tstate(100, mk_train_step(NULL, &train));
	parent = open_proc(hex);
	cold = open_proc(hex);
	child = open_proc(hex);
	CHECK(parent && cold && child);
	if (!parent || !cold || !child)
		goto out;
	CHECK_EQ_U(py_read_stack(parent, 100, fr, PY_MAX_DEPTH, &st), 3);
	for (int i = 0; i < 3; i++)
		names[i] = fr[i].qualname;
	reads = calls = 0;
	CHECK_EQ_U(py_read_stack(cold, 100, fr, PY_MAX_DEPTH, &st), 3);
	cold_reads = reads;
	cold_calls = calls;
	CHECK_EQ_U(py_proc_seed(child, parent), 3);
	CHECK_EQ_U(py_proc_seed(child, parent), 0);
	CHECK_EQ_U(py_proc_seed(child, child), 0);
	/* seeded whole, empty: and not a cache that had read before */
	CHECK(py_proc_seeded_whole(child));
	CHECK(!py_proc_seeded_whole(parent));
	CHECK_EQ_U(py_proc_seed(cold, parent), 0);
	CHECK(!py_proc_seeded_whole(cold));
	reads = calls = 0;
	CHECK_EQ_U(py_read_stack(child, 100, fr, PY_MAX_DEPTH, &st), 3);
	CHECK_EQ_U(st, PY_STACK_COMPLETE);
	/* the parent's names, pointer for pointer (the hook's memo of functions, copied, relies on it) */
	for (int i = 0; i < 3; i++)
		CHECK(fr[i].qualname == names[i]);
	/* the two names and the line table of each of three code objects: nine ranges, one call */
	CHECK_EQ_U(reads + 9, cold_reads);
	CHECK_EQ_U(calls + 1, cold_calls);
	CHECK_FRAME(fr[0], "step", 11, 0);
	CHECK(!strcmp(fr[1].qualname, "train"));
	CHECK(!strcmp(fr[2].qualname, "<module>"));
	py_proc_free(child);

	/* train's code object replaced after the fork: the seeded entry does not match it */
	put64(train, L->code_qualname, mk_str("forked"));
	child = open_proc(hex);
	CHECK_EQ_U(py_proc_seed(child, parent), 3);
	CHECK_EQ_U(py_read_stack(child, 100, fr, PY_MAX_DEPTH, &st), 3);
	CHECK(!strcmp(fr[1].qualname, "forked"));
	CHECK(!strcmp(fr[0].qualname, "step"));

	/*
	 * the child exits; a parent that has read nothing takes its code
	 * objects whose headers its own memory holds the same: not train's,
	 * which is another object there by now
	 */
	py_proc_free(cold);
	cold = open_proc(hex);
	put64(train, L->code_qualname, mk_str("parent's"));
	reads = calls = 0;
	CHECK_EQ_U(py_proc_adopt(cold, child), 2);
	CHECK_EQ_U(calls, 1);
	CHECK_EQ_U(py_proc_adopt(cold, child), 0);
	CHECK_EQ_U(py_read_stack(cold, 100, fr, PY_MAX_DEPTH, &st), 3);
	CHECK(!strcmp(fr[1].qualname, "parent's"));
	CHECK(!strcmp(fr[0].qualname, "step"));

	/* what a child took outlives its parent: the names and line tables are shared, not borrowed */
	py_proc_free(child);
	child = open_proc(hex);
	CHECK_EQ_U(py_proc_seed(child, parent), 3);
	py_proc_free(parent);
	parent = NULL;
	CHECK_EQ_U(py_read_stack(child, 100, fr, PY_MAX_DEPTH, &st), 3);
	CHECK_FRAME(fr[0], "step", 11, 0);
	CHECK(!strcmp(fr[1].qualname, "parent's"));
	CHECK(!strcmp(fr[2].qualname, "<module>"));
out:
	py_proc_free(parent);
	py_proc_free(cold);
	py_proc_free(child);
}

static void seeds(void)
{
	space(0x030b0000);
	check_seed(0x030b02f0);
	space(0x030c0000);
	check_seed(0x030c01f0);
	space_313();
	check_seed(0x030d00f0);
}

static void captures(void)
{
	space(0x030b0000);
	check_captures(0x030b02f0);
	space(0x030c0000);
	check_captures(0x030c01f0);
	space_313();
	check_captures(0x030d00f0);
	space(0x030b0000);
	check_capture_codes(0x030b02f0);
	space(0x030c0000);
	check_capture_codes(0x030c01f0);
	space_313();
	check_capture_codes(0x030d00f0);
}

int main(void)
{
	heap = calloc(1, HEAP_SIZE);
	RUN(linetable_decoding);
	RUN(good_311);
	RUN(good_312);
	RUN(sample_copy);
	RUN(captures);
	RUN(seeds);
	RUN(good_313);
	RUN(unsupported);
	RUN(hostile_memory);
	RUN(budgets);
	RUN(cache_validity);
	RUN(code_recheck);
	RUN(batched_decodes_all);
	RUN(probe_files);
	RUN(real_313_debug_offsets);
	free(heap);
	UNIT_DONE();
}
