// SPDX-License-Identifier: MIT
/*
 * Merging Python frames into native stacks (symbolize/pymerge.c): which
 * native eval-loop frame each run of Python frames replaces, when the two
 * sides agree, when the Python stack was read late, when the native stack
 * was cut short, and when the attachment is malformed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/pysample.h"
#include "symbolize/session.h"
#include "unit.h"

#define EVAL_LO 0x1000
#define EVAL_HI 0x2000
#define EVAL 0x1800     /* a pc inside the eval loop */

/* An attachment: FUNCS[i] with FLAGS[i], innermost first. */
static size_t attach(void *buf, uint32_t status, const uint32_t *funcs, const uint32_t *flags,
		     uint32_t n)
{
	struct pyx_hdr h = { .interp = 0, .status = status, .nr = n, .eval_lo = EVAL_LO,
			     .eval_hi = EVAL_HI };
	struct pyx_frame *fr = (struct pyx_frame *)((char *)buf + sizeof(h));

	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++)
		fr[i] = (struct pyx_frame){ funcs[i], 100 + funcs[i], flags[i] };
	return sizeof(h) + n * sizeof(*fr);
}

/*
 * Merges and renders the result innermost first as letters: native frames
 * by their pc's letter ('E' for the eval loop), Python frames as the
 * digit of their function.
 */
static void merge(struct sym_session *ss, const char *native, const void *extra, size_t size,
		  bool truncated, char *out)
{
	uint64_t pcs[64];
	uint32_t ids[64], res[64 + PY_MAX_DEPTH];
	size_t n = strlen(native), m;

	for (size_t i = 0; i < n; i++) {
		pcs[i] = native[i] == 'E' ? EVAL : 0x9000 + (uint64_t)native[i];
		ids[i] = ss_intern_frame(ss, MOD_FIRST_REAL, pcs[i]);
	}
	m = ss_py_merge(ss, extra, size, pcs, ids, n, truncated, res);
	for (size_t i = 0; i < m; i++) {
		const struct rawframe *f = &ss->frames[res[i]];

		out[i] = f->module == MOD_PYTHON ? (char)('0' + (f->off >> 32)) :
			 f->off == EVAL ? 'E' : (char)(f->off - 0x9000);
		if (f->module == MOD_PYTHON)
			CHECK_EQ_U((uint32_t)f->off, 100 + (f->off >> 32));     /* the line rides along */
	}
	out[m] = '\0';
}

#define CHECK_STR(a, b)                                                              \
	do {                                                                         \
		if (strcmp((a), (b))) {                                              \
			fprintf(stderr, "# %s:%d: %s is '%s', expected '%s'\n", __FILE__, \
				__LINE__, #a, (a), (b));                             \
			unit_failed++;                                               \
		}                                                                    \
	} while (0)

static struct sym_session *session(void)
{
	return sym_session_new(&(struct sym_opts){ .weight_ns = 1000000 });
}

static void agreeing(void)
{
	struct sym_session *ss = session();
	uint64_t buf[512];
	char out[128];
	/* Python: 1 2 | 3 (a C call between) | 4 5 (outermost), innermost first */
	const uint32_t f[] = { 1, 2, 3, 4, 5 };
	const uint32_t fl[] = { 0, PY_FRAME_ENTRY, PY_FRAME_ENTRY, 0, PY_FRAME_ENTRY };
	size_t n = attach(buf, PY_STACK_COMPLETE, f, fl, 5);

	/* native, innermost first: leaf a, eval, C b c, eval, C d, eval, main m */
	merge(ss, "aEbcEdEm", buf, n, false, out);
	CHECK_STR(out, "a12bc3d45m");
	CHECK_EQ_U(ss->py_stats[0].samples, 1);
	CHECK_EQ_U(ss->py_stats[0].with_frames, 1);
	CHECK_EQ_U(ss->py_mismatched, 0);
	sym_session_free(ss);
}

static void empty_run_above(void)
{
	struct sym_session *ss = session();
	uint64_t buf[512];
	char out[128];
	const uint32_t f[] = { 1, 2 };
	const uint32_t fl[] = { PY_FRAME_EMPTY_RUN_ABOVE, PY_FRAME_ENTRY };

	/* 3.12+: the innermost eval loop is entering or leaving and runs no frame */
	merge(ss, "aEbEm", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 2), false, out);
	CHECK_STR(out, "ab12m");
	CHECK_EQ_U(ss->py_mismatched, 0);
	sym_session_free(ss);
}

static void read_late(void)
{
	struct sym_session *ss = session();
	uint64_t buf[512];
	char out[128];
	/* the thread went deeper after the sample: 3 runs for 2 eval loops */
	const uint32_t f[] = { 7, 1, 2, 3 };
	const uint32_t fl[] = { PY_FRAME_ENTRY, PY_FRAME_ENTRY, 0, PY_FRAME_ENTRY };
	const uint32_t g[] = { 2, 3 };
	const uint32_t gl[] = { 0, PY_FRAME_ENTRY };

	/* a whole native stack pairs from the outside: the newest, innermost run goes */
	merge(ss, "aEbEm", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 4), false, out);
	CHECK_STR(out, "a1b23m");
	CHECK_EQ_U(ss->py_mismatched, 1);
	/* it came back out: 1 run for 2 eval loops; the inner loop has nothing left to show */
	merge(ss, "aEbEm", buf, attach(buf, PY_STACK_COMPLETE, g, gl, 2), false, out);
	CHECK_STR(out, "ab23m");
	CHECK_EQ_U(ss->py_stats[0].with_frames, 2);
	sym_session_free(ss);
}

static void native_cut_short(void)
{
	struct sym_session *ss = session();
	uint64_t buf[512];
	char out[128];
	const uint32_t f[] = { 1, 2, 3, 4 };
	const uint32_t fl[] = { PY_FRAME_ENTRY, PY_FRAME_ENTRY, 0, PY_FRAME_ENTRY };

	/* the unwind stopped after one eval loop: the other runs continue outwards */
	merge(ss, "aEb", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 4), true, out);
	CHECK_STR(out, "a1b234");
	/* no native user frames at all (-g none, or a kernel-only sample) */
	merge(ss, "", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 4), true, out);
	CHECK_STR(out, "1234");
	/* the leaf alone (-g none): the Python frames are the whole stack above it */
	merge(ss, "a", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 4), false, out);
	CHECK_STR(out, "a1234");
	/* no eval loop in a whole native stack: read after the thread left the interpreter */
	merge(ss, "abm", buf, attach(buf, PY_STACK_COMPLETE, f, fl, 4), false, out);
	CHECK_STR(out, "abm");
	CHECK_EQ_U(ss->py_stats[0].miss[PY_MISS_OUTSIDE], 1);
	sym_session_free(ss);
}

static void misses_and_garbage(void)
{
	struct sym_session *ss = session();
	uint64_t buf[512];
	char out[128];
	const uint32_t f[] = { 1 };
	const uint32_t fl[] = { PY_FRAME_ENTRY };
	size_t n;

	merge(ss, "aEm", buf, attach(buf, PY_STACK_NO_THREAD, f, fl, 0), false, out);
	CHECK_STR(out, "aEm");
	merge(ss, "aEm", buf, attach(buf, PYX_GONE, f, fl, 0), false, out);
	CHECK_STR(out, "aEm");
	CHECK_EQ_U(ss->py_stats[0].samples, 2);
	CHECK_EQ_U(ss->py_stats[0].with_frames, 0);
	CHECK_EQ_U(ss->py_stats[0].miss[PY_MISS_NO_THREAD], 1);
	CHECK_EQ_U(ss->py_stats[0].miss[PY_MISS_GONE], 1);
	/* malformed attachments leave the native stack alone and count nothing */
	n = attach(buf, PY_STACK_COMPLETE, f, fl, 1);
	merge(ss, "aEm", buf, n - 1, false, out);
	CHECK_STR(out, "aEm");
	merge(ss, "aEm", buf, 7, false, out);
	CHECK_STR(out, "aEm");
	((struct pyx_hdr *)buf)->nr = PY_MAX_DEPTH + 1;
	merge(ss, "aEm", buf, sizeof(buf), false, out);
	CHECK_STR(out, "aEm");
	((struct pyx_hdr *)buf)->nr = 1;
	((struct pyx_hdr *)buf)->status = 99;
	merge(ss, "aEm", buf, n, false, out);
	CHECK_STR(out, "aEm");
	CHECK_EQ_U(ss->py_stats[0].samples, 2);
	sym_session_free(ss);
}

int main(void)
{
	RUN(agreeing);
	RUN(empty_run_above);
	RUN(read_late);
	RUN(native_cut_short);
	RUN(misses_and_garbage);
	UNIT_DONE();
}
