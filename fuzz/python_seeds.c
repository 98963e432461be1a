// SPDX-License-Identifier: MIT
/*
 * Writes forged CPython processes (fuzz/pyfuzz.h) into a directory: the
 * seeds of fuzz_python_read, and the hostile inputs tests/fuzz.bats replays.
 *
 *     python-seeds DIR
 *
 * 3.11 and 3.12 are laid out with the reader's own tables (pyoffsets.c,
 * generated from CPython's headers), 3.13 with the _Py_DebugOffsets of a
 * real 3.13.0 (pyenv's libpython3.13.so.1.0, its .PyRuntime section). Each
 * case is written for every version as NAME-311, NAME-312 and NAME-313.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/pyfuzz.h"
#include "symbolize/python.h"

#define IMG_MAX 65536           /* what fuzz/run.sh lets the fuzzer make */

/* _Py_DebugOffsets of CPython 3.13.0 (x86-64, GIL build), as uint64_t from byte 8 on. */
static const uint64_t debug_offsets_313[] = {
	51183856, 0, 283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0,
	7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56, 72, 70, 208, 112, 120, 128, 136,
	68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168, 32, 24, 16, 40, 24, 16, 48, 32, 40, 24, 16, 32,
	16, 24, 40, 16, 32, 64, 32, 16, 40, 240, 200,
};

/* What the reader makes of those offsets (symbolize/pylayout.c). */
static const struct py_layout layout_313 = {
	.version = 0x030d0000,
	.runtime_interp_head = 632, .interp_next = 7264, .interp_threads_head = 7344,
	.tstate_next = 8, .tstate_native_tid = 160, .tstate_cframe = PY_OFF_NONE, .cframe_current_frame = 72,
	.frame_code = 0, .frame_previous = 8, .frame_instr = 56, .frame_owner = 70,
	.frame_is_entry = PY_OFF_NONE, .owned_by_cstack = 3, .frame_size = 72,
	.code_filename = 112, .code_qualname = 128, .code_linetable = 136, .code_firstlineno = 68,
	.code_adaptive = 200,
	.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_utf8_length = 40, .str_utf8 = 48,
	.str_compact_size = 56, .bytes_size = 16, .bytes_sval = 32,
};

/* The versions, as indexes of PYFZ_VERSIONS, and their names in file names. */
static const struct {
	uint8_t idx;
	const char *name;
} versions[] = { { 0, "311" }, { 1, "312" }, { 2, "313" } };

enum { OWNER_THREAD = 0, OWNER_GENERATOR = 1, OWNER_CSTACK = 3 };
enum { KIND_LATIN1 = 1, KIND_UCS2 = 2, KIND_UCS4 = 4 };

/* A process being forged: the input's bytes, objects allocated one after the other. */
struct img {
	uint8_t b[IMG_MAX];
	size_t used;
	size_t tile_start;      /* where the tile's pattern starts in the input */
	bool in_tile;           /* between tile_begin() and tile_end() */
	struct pyfz_hdr h;
	const struct py_layout *L;
	uint64_t runtime, interp, code_t, unicode_t, bytes_t;
};

static struct img m;

/* The offset in the input of address A (of the heap, or of the tile's first copies). */
static size_t at(uint64_t a)
{
	size_t off = a >= PYFZ_TILE ? m.tile_start + (size_t)(a - PYFZ_TILE) : (size_t)(a - PYFZ_BASE);

	if (a < PYFZ_BASE || off >= IMG_MAX) {
		fprintf(stderr, "python-seeds: address 0x%llx is not in the image\n", (unsigned long long)a);
		exit(1);
	}
	return off;
}

static uint64_t alloc(size_t len)
{
	size_t off = m.used;

	m.used += (len + 15) & ~(size_t)15;
	if (m.used > IMG_MAX) {
		fprintf(stderr, "python-seeds: the image is full\n");
		exit(1);
	}
	return m.in_tile ? PYFZ_TILE + (off - m.tile_start) : PYFZ_BASE + off;
}

static void put64(uint64_t a, uint32_t off, uint64_t v)
{
	memcpy(m.b + at(a + off), &v, 8);
}

static void put32(uint64_t a, uint32_t off, uint32_t v)
{
	memcpy(m.b + at(a + off), &v, 4);
}

static void put8(uint64_t a, uint32_t off, uint8_t v)
{
	m.b[at(a + off)] = v;
}

static uint64_t get64(uint64_t a, uint32_t off)
{
	uint64_t v;

	memcpy(&v, m.b + at(a + off), 8);
	return v;
}

/* ---- objects, laid out as m.L says ---- */

static uint32_t str_state(int kind, bool ascii)
{
	/* interned 0-1, kind 2-4, compact 5, ascii 6; 3.11's ready is bit 7 */
	return (uint32_t)(ascii ? 1 : kind) << 2 | 1u << 5 | (uint32_t)ascii << 6 |
	       (m.L->version == 0x030b0000 ? 1u << 7 : 0);
}

static uint64_t mk_str(const char *s)
{
	size_t n = strlen(s);
	uint64_t a = alloc(m.L->str_ascii_size + n + 1);

	put64(a, 8, m.unicode_t);
	put64(a, m.L->str_length, n);
	put32(a, m.L->str_state, str_state(KIND_LATIN1, true));
	memcpy(m.b + at(a + m.L->str_ascii_size), s, n);
	return a;
}

/* A compact non-ASCII str of N characters of KIND bytes; its UTF-8 copy at UTF8 (0: none) of UTF8_LEN bytes. */
static uint64_t mk_wide(int kind, const void *chars, size_t n, uint64_t utf8, size_t utf8_len)
{
	uint64_t a = alloc(m.L->str_compact_size + (n + 1) * (size_t)kind);

	put64(a, 8, m.unicode_t);
	put64(a, m.L->str_length, n);
	put32(a, m.L->str_state, str_state(kind, false));
	put64(a, m.L->str_utf8, utf8);
	put64(a, m.L->str_utf8_length, utf8_len);
	memcpy(m.b + at(a + m.L->str_compact_size), chars, n * (size_t)kind);
	return a;
}

static uint64_t mk_raw(const void *p, size_t n)
{
	uint64_t a = alloc(n + 1);

	memcpy(m.b + at(a), p, n);
	return a;
}

static uint64_t mk_bytes(const void *b, size_t n)
{
	uint64_t a = alloc(m.L->bytes_sval + n + 1);

	put64(a, 8, m.bytes_t);
	put64(a, m.L->bytes_size, n);
	memcpy(m.b + at(a + m.L->bytes_sval), b, n);
	return a;
}

/* The location table of tests/unit/test_python.c: lines 10, 11, 11, 16, none, 13, 113 for firstlineno 10. */
static const uint8_t linetable[] = {
	0xe9, 0x00, 0xda, 0x01, 0x02, 0x80, 0x05, 0xf1, 0x0a, 0x00, 0x01, 0x02,
	0xf8, 0xe8, 0x07, 0xe8, 0x48, 0x03,
};

static uint64_t mk_code_named(uint64_t qualname, uint64_t filename, int32_t firstlineno, uint64_t table)
{
	uint64_t a = alloc(m.L->code_adaptive + 32);

	put64(a, 8, m.code_t);
	put64(a, m.L->code_qualname, qualname);
	put64(a, m.L->code_filename, filename);
	put64(a, m.L->code_linetable, table);
	put32(a, m.L->code_firstlineno, (uint32_t)firstlineno);
	return a;
}

static uint64_t mk_code(const char *qualname)
{
	return mk_code_named(mk_str(qualname), mk_str("/src/app.py"), 10, mk_bytes(linetable, sizeof(linetable)));
}

/* A frame running CODE at byte OFF of its instructions, called from PREV. */
static uint64_t mk_frame(uint64_t code, uint64_t prev, int64_t off, uint8_t owner, bool entry)
{
	uint64_t a = alloc(m.L->frame_size + 8);

	put64(a, m.L->frame_code, code);
	put64(a, m.L->frame_previous, prev);
	put64(a, m.L->frame_instr, code + m.L->code_adaptive + (uint64_t)off);
	put8(a, m.L->frame_owner, owner);
	if (m.L->frame_is_entry != PY_OFF_NONE)
		put8(a, m.L->frame_is_entry, entry);
	return a;
}

/* The frame an eval loop is entered with: a shim in 3.12+, a flag on the frame in 3.11. */
static uint64_t mk_entry(uint64_t code, uint64_t prev, int64_t off)
{
	if (m.L->owned_by_cstack == PY_OWNER_NONE)
		return mk_frame(code, prev, off, OWNER_THREAD, true);
	return mk_frame(code, mk_frame(mk_code("<shim>"), prev, 0, OWNER_CSTACK, false), off, OWNER_THREAD, false);
}

/* A thread state of TID whose current frame is FRAME, not on any list yet. */
static uint64_t mk_tstate_alone(int32_t tid, uint64_t frame)
{
	uint64_t ts = alloc(m.L->tstate_native_tid + 16);

	put64(ts, m.L->tstate_native_tid, (uint64_t)tid);
	if (m.L->tstate_cframe != PY_OFF_NONE) {
		uint64_t cf = alloc(m.L->cframe_current_frame + 8);

		put64(ts, m.L->tstate_cframe, cf);
		put64(cf, m.L->cframe_current_frame, frame);
	} else {
		put64(ts, m.L->cframe_current_frame, frame);
	}
	return ts;
}

/* ... pushed on the interpreter's list. */
static uint64_t mk_tstate(int32_t tid, uint64_t frame)
{
	uint64_t ts = mk_tstate_alone(tid, frame);

	put64(ts, m.L->tstate_next, get64(m.interp, m.L->interp_threads_head));
	put64(m.interp, m.L->interp_threads_head, ts);
	return ts;
}

/* An empty process of version V (an index of versions[]): the runtime, one interpreter, no threads. */
static void begin(size_t v)
{
	uint8_t idx = versions[v].idx;

	memset(&m, 0, sizeof(m));
	m.used = 128;           /* the header */
	m.L = idx == 2 ? &layout_313 : &py_layouts[idx];
	m.code_t = alloc(64);
	m.unicode_t = alloc(64);
	m.bytes_t = alloc(64);
	m.runtime = alloc(m.L->runtime_interp_head + 8);
	if (idx == 2) {
		memcpy(m.b + at(m.runtime), "xdebugpy", 8);
		memcpy(m.b + at(m.runtime + 8), debug_offsets_313, sizeof(debug_offsets_313));
	}
	m.interp = alloc((m.L->interp_next > m.L->interp_threads_head ? m.L->interp_next : m.L->interp_threads_head) + 8);
	put64(m.runtime, m.L->runtime_interp_head, m.interp);
	m.h.version = idx;
	m.h.nr_tids = PYFZ_TIDS - 1;
	m.h.runtime = (uint32_t)(m.runtime - PYFZ_BASE);
	m.h.code_type = (uint32_t)(m.code_t - PYFZ_BASE);
	m.h.unicode_type = (uint32_t)(m.unicode_t - PYFZ_BASE);
	m.h.bytes_type = (uint32_t)(m.bytes_t - PYFZ_BASE);
	for (int i = 0; i < PYFZ_TIDS; i++)
		m.h.tid[i] = 100 * (i + 1);
}

/* Objects allocated from here to tile_end() are the tile's pattern, at PYFZ_TILE. */
static void tile_begin(void)
{
	m.tile_start = m.used;
	m.in_tile = true;
}

static void tile_end(uint32_t count)
{
	m.h.tile_off = (uint32_t)m.tile_start;
	m.h.tile_len = (uint32_t)(m.used - m.tile_start);
	m.h.tile_count = count;
	m.in_tile = false;
}

/* The next copy's address of A, an address in the pattern. */
static uint64_t next_copy(uint64_t a)
{
	return a + (m.used - m.tile_start);
}

static int write_img(const char *dir, const char *name, size_t v)
{
	char path[4096];
	FILE *f;

	memcpy(m.b, &m.h, sizeof(m.h));
	snprintf(path, sizeof(path), "%s/%s-%s", dir, name, versions[v].name);
	f = fopen(path, "wb");
	if (!f || fwrite(m.b, 1, m.used, f) != m.used || fclose(f)) {
		fprintf(stderr, "python-seeds: cannot write '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- the cases: each fills m for version m.L ---- */

/*
 * Thread 100 runs <module> -> Klass.method -> outer.<locals>.inner,
 * thread 200 a generator with Latin-1, UCS-2, UCS-4 and UTF-8-cached
 * names, thread 300 no frame; thread 400 is no Python thread.
 */
static void good(void)
{
	static const uint8_t latin1[] = { 'c', 'a', 'f', 0xe9 };
	static const uint16_t ucs2[] = { 'p', 0x3c0 };
	static const uint32_t ucs4[] = { 'x', 0x1f600 };
	static const uint16_t cached[] = { 0x3b1, 0x20ac };
	uint64_t f1, f2, f3, g1, g2;

	f1 = mk_entry(mk_code("<module>"), 0, 20);
	f2 = mk_frame(mk_code("Klass.method"), f1, 12, OWNER_THREAD, false);
	f3 = mk_frame(mk_code("outer.<locals>.inner"), f2, 4, OWNER_THREAD, false);
	mk_tstate(100, f3);
	g1 = mk_entry(mk_code_named(mk_wide(KIND_UCS4, ucs4, 2, 0, 0),
				    mk_wide(KIND_UCS2, cached, 2, mk_raw("\xce\xb1\xe2\x82\xac", 5), 5), 10,
				    mk_bytes(linetable, sizeof(linetable))), 0, -2);
	g2 = mk_frame(mk_code_named(mk_wide(KIND_LATIN1, latin1, 4, 0, 0), mk_wide(KIND_UCS2, ucs2, 2, 0, 0), 10,
				    mk_bytes(linetable, sizeof(linetable))), g1, 18, OWNER_GENERATOR, false);
	mk_tstate(200, g2);
	mk_tstate(300, 0);
}

/* Frame chains that loop: a frame its own caller, two frames each other's, a loop below good frames. */
static void cycle_self(void)
{
	uint64_t f = mk_frame(mk_code("self"), 0, 0, OWNER_THREAD, false);

	put64(f, m.L->frame_previous, f);
	mk_tstate(100, f);
}

static void cycle_two(void)
{
	uint64_t code = mk_code("ping"), a = mk_frame(code, 0, 0, OWNER_THREAD, false);
	uint64_t b = mk_frame(mk_code("pong"), a, 4, OWNER_THREAD, false);

	put64(a, m.L->frame_previous, b);
	mk_tstate(100, b);
}

static void cycle_deep(void)
{
	uint64_t code = mk_code("down"), bottom = mk_frame(code, 0, 0, OWNER_THREAD, false), f = bottom;

	for (int i = 0; i < 20; i++)
		f = mk_frame(code, f, 2 * (i % 10), OWNER_THREAD, false);
	put64(bottom, m.L->frame_previous, f);
	mk_tstate(100, f);
}

/*
 * Pointers into themselves: a frame whose code object is the frame, a
 * code object named by itself, a str whose UTF-8 copy is its own header,
 * a line table that is the code object. Type checks off, so that only the
 * reader's own plausibility checks stand.
 */
static void self_pointers(void)
{
	uint64_t f, c, s, base = mk_frame(mk_code("base"), 0, 0, OWNER_THREAD, false);

	m.h.code_type = m.h.unicode_type = m.h.bytes_type = 0;
	f = mk_frame(0, base, 0, OWNER_THREAD, false);
	put64(f, m.L->frame_code, f);
	put64(f, m.L->frame_instr, f);
	mk_tstate(100, f);
	c = mk_code("named by itself");
	put64(c, m.L->code_qualname, c);
	put64(c, m.L->code_linetable, c);
	mk_tstate(200, mk_frame(c, base, 0, OWNER_THREAD, false));
	s = mk_wide(KIND_UCS2, (const uint16_t[]){ 0x3c0, 0x3c0 }, 2, 0, 64);
	put64(s, m.L->str_utf8, s);
	mk_tstate(300, mk_frame(mk_code_named(s, mk_str("/f.py"), 1, c), base, 0, OWNER_THREAD, false));
}

/* Lengths: 2^40, -1, PY_MAX_STR + 1, a line table of 2^40 bytes, a str running off the mapping. */
static void huge_lengths(void)
{
	uint64_t s1 = mk_str("huge"), s2 = mk_str("negative"), s3 = mk_str("long"), t = mk_bytes(linetable, 4);
	uint64_t base = mk_frame(mk_code("base"), 0, 0, OWNER_THREAD, false), end, c;

	put64(s1, m.L->str_length, 1ull << 40);
	put64(s2, m.L->str_length, UINT64_MAX);
	put64(s3, m.L->str_length, PY_MAX_STR + 1);
	put64(t, m.L->bytes_size, 1ull << 40);
	mk_tstate(100, mk_frame(mk_code_named(s1, mk_str("/f.py"), 1, t), base, 0, OWNER_THREAD, false));
	mk_tstate(200, mk_frame(mk_code_named(mk_str("q"), s2, 1, t), base, 0, OWNER_THREAD, false));
	mk_tstate(300, mk_frame(mk_code_named(mk_str("q"), s3, 1, t), base, 0, OWNER_THREAD, false));
	c = mk_code_named(mk_str("x"), mk_str("/f.py"), 1, t);
	mk_tstate(400, mk_frame(c, 0, 0, OWNER_THREAD, false));
	/* thread 400's name: the last str of the image, whose 1000 characters lie past its page */
	m.used = (m.used + m.L->str_ascii_size + PYFZ_PAGE - 1) / PYFZ_PAGE * PYFZ_PAGE - m.L->str_ascii_size;
	end = mk_str("cut");
	put64(end, m.L->str_length, 1000);
	put64(c, m.L->code_qualname, end);
	m.used = (size_t)(end - PYFZ_BASE) + m.L->str_ascii_size;
}

/*
 * strs of no kind, "ASCII" of kind 2, not compact, ASCII with bit 7 set;
 * UTF-8 copies that are not UTF-8 (0xff, a surrogate, an overlong '/').
 */
static void bad_strs(void)
{
	static const char *const copies[] = { "\xff\xfe", "\xed\xa0\x80", "\xc0\xaf" };
	uint64_t base = mk_frame(mk_code("base"), 0, 0, OWNER_THREAD, false), s[4], f;
	uint16_t chars[] = { 0x41, 0x42 };

	s[0] = mk_wide(KIND_UCS2, chars, 2, 0, 0);
	put32(s[0], m.L->str_state, str_state(3, false));
	s[1] = mk_str("ascii");
	put32(s[1], m.L->str_state, str_state(KIND_UCS2, false) | 1u << 6);
	s[2] = mk_str("loose");
	put32(s[2], m.L->str_state, str_state(KIND_LATIN1, true) & ~(1u << 5));
	s[3] = mk_str("bit 7");
	put8(s[3], m.L->str_ascii_size + 1, 0xc3);
	for (int i = 0; i < 4; i++)
		mk_tstate(100 * (i + 1), mk_frame(mk_code_named(s[i], mk_str("/f.py"), 1, mk_bytes(linetable, 4)),
						  base, 0, OWNER_THREAD, false));
	/* thread 500, read in thread 100's place: a frame for each copy */
	m.h.tid[0] = 500;
	f = base;
	for (int i = 0; i < 3; i++)
		f = mk_frame(mk_code_named(mk_wide(KIND_UCS2, chars, 2, mk_raw(copies[i], strlen(copies[i])),
						   strlen(copies[i])),
					   mk_str("/f.py"), 1, mk_bytes(linetable, 4)),
			     f, 0, OWNER_THREAD, false);
	mk_tstate(500, f);
}

/* Location tables: bytes without bit 7, a varint that never ends, an empty one, offsets past the code. */
static void garbage_linetables(void)
{
	static const uint8_t nobit[] = { 0x69, 0x00, 0x12, 0x34 };
	static const uint8_t endless[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f };
	uint64_t f = 0;

	f = mk_frame(mk_code_named(mk_str("nobit"), mk_str("/f.py"), 1, mk_bytes(nobit, sizeof(nobit))), f, 0,
		     OWNER_THREAD, false);
	f = mk_frame(mk_code_named(mk_str("endless"), mk_str("/f.py"), 1, mk_bytes(endless, sizeof(endless))), f, 0,
		     OWNER_THREAD, false);
	f = mk_frame(mk_code_named(mk_str("empty"), mk_str("/f.py"), 1, mk_bytes("", 0)), f, 6, OWNER_THREAD, false);
	f = mk_frame(mk_code("past"), f, 4000, OWNER_THREAD, false);
	f = mk_frame(mk_code("odd"), f, 3, OWNER_THREAD, false);
	f = mk_frame(mk_code("before"), f, -100, OWNER_THREAD, false);
	mk_tstate(100, f);
}

/* Thread and interpreter lists that loop; a _PyCFrame that is NULL (3.11, 3.12). */
static void list_cycles(void)
{
	uint64_t ts = mk_tstate(100, mk_frame(mk_code("f"), 0, 0, OWNER_THREAD, false)), i2;

	put64(ts, m.L->tstate_next, ts);
	i2 = alloc(m.L->interp_threads_head + 8);
	put64(m.interp, m.L->interp_next, i2);
	put64(i2, m.L->interp_next, m.interp);
	if (m.L->tstate_cframe != PY_OFF_NONE) {
		uint64_t t3 = mk_tstate_alone(300, 0);

		put64(t3, m.L->tstate_cframe, 0);
		put64(i2, m.L->interp_threads_head, t3);
	}
}

/* 5000 frames, one per copy of the tile, each called from the next: more than PY_MAX_DEPTH. */
static void deep_chain(void)
{
	uint64_t code = mk_code("recurse"), f;

	tile_begin();
	f = mk_frame(code, 0, 4, OWNER_THREAD, false);
	put64(f, m.L->frame_previous, next_copy(f));
	tile_end(5000);
	mk_tstate(100, f);
	m.h.nr_tids = 0;
}

/* 20000 thread states, one per copy, none of them thread 400's: more than PY_MAX_THREADS. */
static void many_threads(void)
{
	uint64_t ts;

	m.h.tid[0] = 400;
	tile_begin();
	ts = mk_tstate_alone(1000, 0);
	put64(ts, m.L->tstate_next, next_copy(ts));
	tile_end(20000);
	put64(m.interp, m.L->interp_threads_head, ts);
	m.h.nr_tids = 0;
}

/*
 * 5000 distinct code objects, one per frame, each with its own names and
 * a location table of a mebibyte (the copies after its own): what a read
 * must not fetch and keep for each of them.
 */
static void many_codes(void)
{
	uint64_t f, c, t;

	tile_begin();
	t = mk_bytes(linetable, sizeof(linetable));
	put64(t, m.L->bytes_size, PY_MAX_LINETABLE);
	c = mk_code_named(mk_str("generated"), mk_str("/gen.py"), 10, t);
	f = mk_frame(c, 0, 20, OWNER_THREAD, false);
	put64(f, m.L->frame_previous, next_copy(f));
	tile_end(5000);
	mk_tstate(100, f);
	m.h.nr_tids = 0;
}

/*
 * One function recursing 10000 deep, at two offsets in turn, whose
 * location table is 40000 one-byte "no location" entries and a last one
 * with a line: each frame's line is looked up at the end of the table.
 */
static void long_linetable(void)
{
	static uint8_t tab[40000];
	const size_t n = sizeof(tab);
	uint64_t c, a, b;

	memset(tab, 0xf8, n);
	tab[n - 2] = 0xe8;      /* no columns, line +1 */
	tab[n - 1] = 0x02;
	c = mk_code_named(mk_str("alternating"), mk_str("/f.py"), 10, mk_bytes(tab, n));
	tile_begin();
	a = mk_frame(c, 0, 2 * (int64_t)(n - 2), OWNER_THREAD, false);
	b = mk_frame(c, 0, 2 * (int64_t)(n - 3), OWNER_THREAD, false);
	put64(a, m.L->frame_previous, b);
	put64(b, m.L->frame_previous, next_copy(a));
	tile_end(5000);
	mk_tstate(100, a);
	m.h.nr_tids = 0;
}

/* Names of 1024 UCS-4 characters (2 KiB of UTF-8), a str per frame: the most a name may cost to read. */
static void wide_names(void)
{
	uint64_t c, f, s;

	tile_begin();
	s = alloc(m.L->str_compact_size + PY_MAX_STR);
	put64(s, 8, m.unicode_t);
	put64(s, m.L->str_length, PY_MAX_STR / 4);
	put32(s, m.L->str_state, str_state(KIND_UCS4, false));
	for (uint32_t i = 0; i < PY_MAX_STR / 4; i++)
		put32(s, m.L->str_compact_size + 4 * i, 0x3c0);
	c = mk_code_named(s, s, 10, mk_bytes(linetable, sizeof(linetable)));
	f = mk_frame(c, 0, 0, OWNER_THREAD, false);
	put64(f, m.L->frame_previous, next_copy(f));
	tile_end(5000);
	mk_tstate(100, f);
	m.h.nr_tids = 0;
}

/* The process goes away, reads fail short, the memory changes under the walk. */
static void faults(void)
{
	good();
	m.h.nr_tids = 3;
	m.h.gone_after = 40;
	m.h.fail_every = 7;
}

static void moving(void)
{
	uint64_t f1 = mk_frame(mk_code("a"), 0, 0, OWNER_THREAD, false);
	uint64_t f2 = mk_frame(mk_code("b"), f1, 0, OWNER_THREAD, false);
	uint64_t f3 = mk_frame(mk_code("c"), f2, 0, OWNER_THREAD, false), loop;

	mk_tstate(100, f3);
	/* after 6 reads, f1's caller becomes f3: a loop appears in the middle of the walk */
	loop = alloc(8);
	put64(loop, 0, f3);
	m.h.patch_off = (uint32_t)(loop - PYFZ_BASE);
	m.h.patch_at = (uint32_t)(f1 - PYFZ_BASE + m.L->frame_previous);
	m.h.patch_len = 8;
	m.h.patch_after = 6;
	m.h.nr_tids = 0;
}

/*
 * 3.12+: a shim frame on top (an eval loop entered, no Python frame yet),
 * two shims in a row (thread 200); 3.11 knows no shims (both torn).
 */
static void shims(void)
{
	uint64_t f = mk_frame(mk_code("<module>"), 0, 0, OWNER_THREAD, false), shim;

	f = mk_frame(mk_code("top"), mk_frame(mk_code("<shim>"), f, 0, OWNER_CSTACK, false), 4, OWNER_THREAD, false);
	shim = mk_frame(mk_code("<shim>"), f, 0, OWNER_CSTACK, false);
	mk_tstate(100, shim);
	mk_tstate(200, mk_frame(mk_code("<shim>"), shim, 0, OWNER_CSTACK, false));
	m.h.nr_tids = 1;
}

/* A code object renamed between the two reads of thread 100: the cache decodes it again. */
static void renamed(void)
{
	uint64_t code = mk_code("before"), name = mk_str("after"), ptr;

	mk_tstate(100, mk_frame(code, mk_frame(mk_code("caller"), 0, 0, OWNER_THREAD, false), 4, OWNER_THREAD,
				false));
	ptr = alloc(8);
	put64(ptr, 0, name);
	m.h.patch_off = (uint32_t)(ptr - PYFZ_BASE);
	m.h.patch_at = (uint32_t)(code - PYFZ_BASE + m.L->code_qualname);
	m.h.patch_len = 8;
	m.h.patch_after = 1000;         /* after the first round at the latest */
	m.h.nr_tids = 0;
}

/* Versions the reader refuses: 3.10 (no layout), 3.14 (_Py_DebugOffsets of a layout not known). */
static void older(void)
{
	good();
	m.h.version = 6;
}

static void newer(void)
{
	good();
	m.h.version = 7;
	if (m.L->version == 0x030d0000)
		put64(m.runtime, 8, 0x030e00a1);
}

/* The runtime's _Py_DebugOffsets (3.13; for 3.11 and 3.12 the bytes are unused) out of bounds. */
static void bad_offsets(void)
{
	good();
	if (m.L->version != 0x030d0000)
		return;
	/* a str header of 8 bytes (state at 0, length at 0): its ob_type, at 8, would not be read */
	put64(m.runtime, 544, 0);
	put64(m.runtime, 552, 0);
	put64(m.runtime, 560, 8);
}

static const struct {
	const char *name;
	void (*make)(void);
} cases[] = {
	{ "good", good },
	{ "cycle-self", cycle_self },
	{ "cycle-two", cycle_two },
	{ "cycle-deep", cycle_deep },
	{ "self-pointers", self_pointers },
	{ "huge-lengths", huge_lengths },
	{ "bad-strs", bad_strs },
	{ "garbage-linetables", garbage_linetables },
	{ "list-cycles", list_cycles },
	{ "deep-chain", deep_chain },
	{ "many-threads", many_threads },
	{ "many-codes", many_codes },
	{ "long-linetable", long_linetable },
	{ "wide-names", wide_names },
	{ "faults", faults },
	{ "moving", moving },
	{ "shims", shims },
	{ "renamed", renamed },
	{ "older", older },
	{ "newer", newer },
	{ "bad-offsets", bad_offsets },
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: python-seeds DIR\n");
		return 2;
	}
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
			begin(v);
			cases[c].make();
			if (write_img(argv[1], cases[c].name, v))
				return 1;
		}
	}
	return 0;
}
