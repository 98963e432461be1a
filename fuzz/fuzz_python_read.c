// SPDX-License-Identifier: MIT
/* libFuzzer target: the CPython stack reader (symbolize/python.c, pycode.c, pylayout.c) on forged process memory. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "fuzz/pyfuzz.h"
#include "symbolize/python.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * What one py_read_stack() may cost at most, from the bounds python.h
 * gives: a thread lookup (the runtime, two fields per interpreter, a header
 * per thread state), the current frame, then per frame its header and its
 * code object's, and for a code object not cached yet two names' headers
 * (two reads each) and its line table's; names' characters and line tables
 * within PY_MAX_DECODE. Each read may go through the page cache (a page
 * fetched, then read directly when that failed) and the cache fetches
 * fewer than 64 pages of 4 KiB per stack. A read past these is a walk that
 * no bound stopped.
 */
#define MAX_CALLS (2 * (6 + 2 * PY_MAX_INTERPS + PY_MAX_THREADS) + 13 * PY_MAX_DEPTH)
#define MAX_BYTES (64 * 4096 + (uint64_t)(6 + 2 * PY_MAX_INTERPS + PY_MAX_THREADS) * PY_HDR_MAX + \
		   (uint64_t)PY_MAX_DEPTH * (2 * PY_HDR_MAX + 3 * PY_STR_HDR_MAX) + PY_MAX_DECODE)

/*
 * The harness's own code (the fake memory, the checks) is left out of the
 * coverage that guides the fuzzer: its loops over long names and big
 * reads would be most of each run's comparisons and tell it nothing.
 */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define NO_COVERAGE
#endif

#define CHECKED_SLOTS 256       /* names checked per input, by address: most frames repeat them */

static bool verbose;
static const char *checked[CHECKED_SLOTS];

/* The forged process: the input, page-rounded, and its tiled region. */
struct space {
	uint8_t *mem;           /* a copy of the input, zeros up to the page's end */
	size_t mem_len;         /* a multiple of PYFZ_PAGE */
	uint64_t tile_off, tile_len, tile_size, tile_map;       /* tile_map: tile_size page-rounded */
	uint32_t *relocs;       /* offsets in the pattern of the words moved in each copy */
	size_t nr_relocs;
	struct pyfz_hdr h;
	uint64_t calls, bytes;  /* reader calls and bytes read, since the last reset */
	uint64_t all_calls;     /* since the start: what patch_after and gone_after count */
	bool patched;
};

static void fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "fuzz_python_read: %s (%llu, %llu)\n", what, a, b);
	abort();
}

static uint64_t round_page(uint64_t n)
{
	return (n + PYFZ_PAGE - 1) & ~(PYFZ_PAGE - 1);
}

/* Finds the words of the tile's pattern that point into its first two copies. */
NO_COVERAGE static void find_relocs(struct space *s)
{
	s->nr_relocs = 0;
	for (uint64_t w = 0; w < s->tile_len; w += 8) {
		uint64_t v;

		memcpy(&v, s->mem + s->tile_off + w, 8);
		if (v >= PYFZ_TILE && v < PYFZ_TILE + 2 * s->tile_len)
			s->relocs[s->nr_relocs++] = (uint32_t)w;
	}
}

/* Copies LEN bytes of the tiled region from offset OFF (within tile_map) into OUT. */
NO_COVERAGE static void tile_copy(const struct space *s, uint64_t off, uint8_t *out, size_t len)
{
	while (len) {
		uint64_t k = off / s->tile_len, in = off % s->tile_len;
		size_t n = s->tile_len - in < len ? (size_t)(s->tile_len - in) : len;

		if (off >= s->tile_size) {
			memset(out, 0, len);    /* the rest of the last page */
			return;
		}
		memcpy(out, s->mem + s->tile_off + in, n);
		for (size_t r = 0; r < s->nr_relocs; r++) {
			uint64_t w = s->relocs[r], v;

			if (w + 8 <= in || w >= in + n)
				continue;
			memcpy(&v, s->mem + s->tile_off + w, 8);
			v += k * s->tile_len;
			for (uint64_t b = 0; b < 8; b++)
				if (w + b >= in && w + b < in + n)
					out[w + b - in] = (uint8_t)(v >> (8 * b));
		}
		out += n;
		off += n;
		len -= n;
	}
}

/* Serves one range as process_vm_readv would: whole, from one mapping, or not at all. */
NO_COVERAGE static bool serve(struct space *s, const struct py_read *r)
{
	uint64_t a = r->addr, end = r->addr + r->len;

	if (end < a)
		return false;
	if (a >= PYFZ_BASE && end <= PYFZ_BASE + s->mem_len) {
		memcpy(r->buf, s->mem + (a - PYFZ_BASE), r->len);
		return true;
	}
	if (s->tile_map && a >= PYFZ_TILE && end <= PYFZ_TILE + s->tile_map) {
		tile_copy(s, a - PYFZ_TILE, r->buf, r->len);
		return true;
	}
	return false;
}

NO_COVERAGE static void apply_patch(struct space *s)
{
	uint64_t off = s->h.patch_off, at = s->h.patch_at, len = s->h.patch_len;

	s->patched = true;
	if (off >= s->mem_len || at >= s->mem_len)
		return;
	if (len > s->mem_len - off)
		len = s->mem_len - off;
	if (len > s->mem_len - at)
		len = s->mem_len - at;
	memmove(s->mem + at, s->mem + off, len);
	if (s->tile_map)
		find_relocs(s);
}

/* The fake py_read_fn: the forged memory, which may change, fail short, or go away. */
NO_COVERAGE static int fake_read(void *arg, const struct py_read *r, size_t n)
{
	struct space *s = arg;
	size_t ok = n;

	s->calls++;
	s->all_calls++;
	if (s->h.gone_after && s->all_calls > s->h.gone_after)
		return -ESRCH;
	if (s->h.patch_after && !s->patched && s->all_calls > s->h.patch_after)
		apply_patch(s);
	if (s->h.fail_every && s->all_calls % s->h.fail_every == 0 && n)
		ok = n - 1;
	for (size_t i = 0; i < ok; i++) {
		if (!serve(s, &r[i]))
			return (int)i;
		s->bytes += r[i].len;
	}
	return (int)ok;
}

NO_COVERAGE static bool mapped(const struct space *s, uint64_t a, uint64_t len)
{
	return (a >= PYFZ_BASE && a + len <= PYFZ_BASE + s->mem_len) ||
	       (s->tile_map && a >= PYFZ_TILE && a + len <= PYFZ_TILE + s->tile_map);
}

NO_COVERAGE static void check_name(const char *str, const char *what)
{
	size_t slot = ((uintptr_t)str >> 4) % CHECKED_SLOTS, len;

	if (!str)
		fail(what, 0, 0);
	if (checked[slot] == str)
		return;
	len = strlen(str);
	if (len > PY_MAX_STR)
		fail("a name longer than PY_MAX_STR", len, PY_MAX_STR);
	/*
	 * Names are bytes: a file name decoded with surrogateescape comes back as
	 * bytes that are not UTF-8, on purpose. What the profile needs is that
	 * its file can store them and give them back exactly.
	 */
	{
		char *enc = text_bytes_encode(str), *dec = enc ? text_bytes_decode(enc) : NULL;

		if (enc && (!dec || strcmp(dec, str))) {
			fprintf(stderr, "fuzz_python_read: %s does not come back from the file: '%s'\n",
				what, str);
			abort();
		}
		free(enc);
		free(dec);
	}
	checked[slot] = str;
}

/* What py_read_stack() promises of the frames it returns. */
NO_COVERAGE static void check_stack(const struct space *s, const struct py_frame *fr, size_t n, size_t room,
			enum py_status st)
{
	if (n > room || n > PY_MAX_DEPTH)
		fail("more frames than room", n, room);
	if ((unsigned)st >= PY_STACK_NR || !strcmp(py_status_name(st), "?"))
		fail("a status out of range", st, 0);
	if (n && (st == PY_STACK_NO_THREAD || st == PY_STACK_UNSUPPORTED))
		fail("frames with a status that has none", st, n);
	if (s->calls > MAX_CALLS)
		fail("one stack read called the reader too often", s->calls, MAX_CALLS);
	if (s->bytes > MAX_BYTES)
		fail("one stack read read too many bytes", s->bytes, MAX_BYTES);
	for (size_t i = 0; i < n; i++) {
		check_name(fr[i].qualname, "qualname");
		check_name(fr[i].filename, "filename");
		if (fr[i].flags & ~(uint32_t)(PY_FRAME_ENTRY | PY_FRAME_EMPTY_RUN_ABOVE | PY_FRAME_GENERATOR))
			fail("unknown frame flags", i, fr[i].flags);
		if (i && (fr[i].flags & PY_FRAME_EMPTY_RUN_ABOVE))
			fail("an empty run above a frame that is not the innermost", i, fr[i].flags);
		if (fr[i].firstlineno > INT32_MAX)
			fail("a negative first line", i, fr[i].firstlineno);
		if (!py_ptr_ok(fr[i].code) || !mapped(s, fr[i].code, 16))
			fail("a frame whose code object was never read", i, fr[i].code);
	}
}

static void print_stack(int round, int32_t tid, const struct py_frame *fr, size_t n, enum py_status st,
			const struct space *s)
{
	printf("round %d tid %" PRId32 ": %s, %zu frames, %" PRIu64 " calls, %" PRIu64 " bytes\n", round, tid,
	       py_status_name(st), n, s->calls, s->bytes);
	for (size_t i = 0; i < n && i < 4; i++)
		printf("  %.60s:%" PRIu32 "(%.60s) line %" PRIu32 " flags %" PRIu32 "\n", fr[i].filename,
		       fr[i].firstlineno, fr[i].qualname, fr[i].line, fr[i].flags);
	if (n > 4)
		printf("  ... %zu more\n", n - 4);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("PYFZ_VERBOSE") != NULL;
	return 0;
}

static uint64_t type_addr(uint32_t off)
{
	return off ? PYFZ_BASE + off : 0;
}

/* The reader's clock: a patch between the rounds comes PY_CODE_RECHECK_NS after the first. */
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t versions[PYFZ_NR_VERSIONS] = PYFZ_VERSIONS;
	static struct py_frame fr[2][PYFZ_TIDS][PY_MAX_DEPTH + 8];
	static size_t nfr[2][PYFZ_TIDS];
	struct space s = { 0 };
	struct py_proc_opts o = { 0 };
	struct py_proc *p;
	enum py_status st;
	uint64_t counts[PY_STACK_NR], total = 0;
	char err[256];
	size_t room, nr_tids;

	memcpy(&s.h, data, size < sizeof(s.h) ? size : sizeof(s.h));
	s.mem_len = round_page(size > 0 ? size : 1);
	s.mem = calloc(1, s.mem_len);
	if (!s.mem)
		abort();
	if (size)
		memcpy(s.mem, data, size);
	s.tile_len = s.h.tile_len & ~7u;
	s.tile_off = s.h.tile_off;
	if (s.tile_len && s.h.tile_count && s.tile_off + s.tile_len <= s.mem_len) {
		s.tile_size = s.tile_len * s.h.tile_count;
		if (s.tile_size > PYFZ_TILE_MAX)
			s.tile_size = PYFZ_TILE_MAX / s.tile_len * s.tile_len;
		s.tile_map = round_page(s.tile_size);
		s.relocs = malloc(s.tile_len / 8 * sizeof(*s.relocs));
		if (!s.relocs)
			abort();
		find_relocs(&s);
	}

	o.pid = -1;
	o.version = versions[s.h.version % PYFZ_NR_VERSIONS];
	o.runtime = PYFZ_BASE + s.h.runtime;
	o.code_type = type_addr(s.h.code_type);
	o.unicode_type = type_addr(s.h.unicode_type);
	o.bytes_type = type_addr(s.h.bytes_type);
	o.read = fake_read;
	o.read_arg = &s;
	o.clock = fake_clock;
	fake_now = 1000000000000ull;
	err[0] = '\0';
	p = py_proc_new(&o, err, sizeof(err));
	if (!p) {
		if (errno != ENOTSUP && errno != EPROTO && errno != EFAULT)
			fail("py_proc_new failed with another errno", (unsigned)errno, 0);
		if (!err[0] || !memchr(err, '\0', sizeof(err)))
			fail("py_proc_new failed without a reason", 0, 0);
		if (verbose)
			printf("refused: %s (%s)\n", err, strerror(errno));
		if (py_read_stack(NULL, s.h.tid[0], fr[0][0], PY_MAX_DEPTH, &st) || st != PY_STACK_UNSUPPORTED)
			fail("a refused interpreter's stack was read", st, 0);
		goto out;
	}
	if ((py_proc_version(p) & 0xffff0000) != (o.version & 0xffff0000))
		fail("the reader's version is not the interpreter's", py_proc_version(p), o.version);
	if (verbose)
		printf("python %" PRIx32 ": py_proc_new %" PRIu64 " calls, %" PRIu64 " bytes\n", py_proc_version(p),
		       s.calls, s.bytes);

	room = s.h.room % (PY_MAX_DEPTH + 9);
	if (!room)
		room = PY_MAX_DEPTH;
	nr_tids = 1 + s.h.nr_tids % PYFZ_TIDS;
	/* twice: the second round from the caches (code objects, thread states) */
	for (int round = 0; round < 2; round++) {
		if (round && s.h.patch_after && !s.patched) {
			apply_patch(&s);
			fake_now += PY_CODE_RECHECK_NS;
		}
		for (size_t i = 0; i < nr_tids; i++) {
			s.calls = s.bytes = 0;
			nfr[round][i] = py_read_stack(p, s.h.tid[i], fr[round][i], room, &st);
			check_stack(&s, fr[round][i], nfr[round][i], room, st);
			if (verbose)
				print_stack(round, s.h.tid[i], fr[round][i], nfr[round][i], st, &s);
		}
	}
	/* the strings of the first round live as long as the reader: each is read again */
	memset(checked, 0, sizeof(checked));
	for (size_t i = 0; i < nr_tids; i++)
		for (size_t k = 0; k < nfr[0][i]; k++) {
			check_name(fr[0][i][k].qualname, "first round's qualname");
			check_name(fr[0][i][k].filename, "first round's filename");
		}
	py_proc_counts(p, counts);
	for (int i = 0; i < PY_STACK_NR; i++)
		total += counts[i];
	if (total != 2 * nr_tids)
		fail("the counts do not add up to the reads", total, 2 * nr_tids);
	py_proc_free(p);
out:
	/* and the location table decoder on its own, on the input's bytes */
	if (size > sizeof(s.h))
		py_linetable_line(data + sizeof(s.h), size - sizeof(s.h), s.h.tid[0], s.h.tid[1]);
	memset(checked, 0, sizeof(checked));
	free(s.relocs);
	free(s.mem);
	return 0;
}
