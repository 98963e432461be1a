// SPDX-License-Identifier: MIT
/*
 * Merging a sample's Python frames into its native stack: each native
 * _PyEval_EvalFrameDefault frame gives way to the Python frames it was
 * running, so that Python, the C it calls and Python called back from C
 * read as one stack.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "pysample.h"

/* Why a sample of a Python process has no Python frames (index of ss->py_stats[].miss). */
static const char *const miss_names[PY_MISS_NR] = {
	[PY_MISS_NO_THREAD] = "no Python thread state",
	[PY_MISS_IDLE] = "no Python frame running",
	[PY_MISS_TORN] = "torn stack",
	[PY_MISS_UNREADABLE] = "unreadable memory",
	[PY_MISS_UNSUPPORTED] = "interpreter not supported",
	[PY_MISS_NOT_PERMITTED] = "memory not readable (needs ptrace rights over the process)",
	[PY_MISS_OUTSIDE] = "thread outside the interpreter loop",
	[PY_MISS_GONE] = "process ended before the read",
};

const char *ss_py_miss_name(enum py_miss m)
{
	return (unsigned)m < PY_MISS_NR ? miss_names[m] : "?";
}

static enum py_miss miss_of(uint32_t status)
{
	switch (status) {
	case PY_STACK_NO_THREAD:
		return PY_MISS_NO_THREAD;
	case PY_STACK_TORN:
		return PY_MISS_TORN;
	case PY_STACK_UNREADABLE:
		return PY_MISS_UNREADABLE;
	case PY_STACK_UNSUPPORTED:
		return PY_MISS_UNSUPPORTED;
	case PYX_NOT_PERMITTED:
		return PY_MISS_NOT_PERMITTED;
	case PYX_GONE:
		return PY_MISS_GONE;
	default:
		return PY_MISS_IDLE;
	}
}

static struct ss_py_stat *stat_of(struct sym_session *ss, uint32_t interp)
{
	if (interp >= ss->nr_py_stats) {
		ALLOC_GROW(ss->py_stats, interp + 1, ss->alloc_py_stats);
		memset(ss->py_stats + ss->nr_py_stats, 0,
		       (interp + 1 - ss->nr_py_stats) * sizeof(*ss->py_stats));
		ss->nr_py_stats = interp + 1;
	}
	return &ss->py_stats[interp];
}

size_t ss_py_merge(struct sym_session *ss, const void *extra, size_t extra_size,
		   const uint64_t *pcs, const uint32_t *native, size_t nr, bool truncated,
		   uint32_t *out)
{
	struct pyx_hdr h;
	const struct pyx_frame *pf;
	struct ss_py_stat *st;
	struct ss_py_run *runs;
	uint32_t *evals, nr_runs = 0, nr_evals = 0, start = 0, paired = 0;
	size_t n = 0;
	bool outer_first;

	if (!pyx_decode(extra, extra_size, &h, &pf)) {
		memcpy(out, native, nr * sizeof(*out));
		return nr;
	}
	st = stat_of(ss, h.interp);
	st->samples++;
	if (!h.nr) {
		st->miss[miss_of(h.status)]++;
		memcpy(out, native, nr * sizeof(*out));
		return nr;
	}
	/* the runs, innermost first; an empty one first when an eval loop above runs none yet */
	if (!ss->py_runs) {
		ss->py_runs = xmalloc((PY_MAX_DEPTH + 1) * sizeof(*ss->py_runs));
		ss->py_evals = xmalloc(SYM_MAX_FRAMES * sizeof(*ss->py_evals));
	}
	runs = ss->py_runs;
	evals = ss->py_evals;
	if (pf[0].flags & PY_FRAME_EMPTY_RUN_ABOVE)
		runs[nr_runs++] = (struct ss_py_run){ 0, 0 };
	for (uint32_t i = 0; i < h.nr; i++) {
		if ((pf[i].flags & PY_FRAME_ENTRY) || i + 1 == h.nr) {
			runs[nr_runs++] = (struct ss_py_run){ start, i + 1 };
			start = i + 1;
		}
	}
	for (size_t i = 0; i < nr && nr_evals < SYM_MAX_FRAMES; i++)
		if (pcs[i] >= h.eval_lo && pcs[i] < h.eval_hi)
			evals[nr_evals++] = (uint32_t)i;
	/*
	 * The k-th eval loop from the top runs the k-th run. When the counts
	 * differ, the Python stack was read after the thread moved on (the
	 * perf backend reads a few ms late) or one side was cut short. A
	 * whole native stack pairs from the outside, which changes least
	 * over time; a cut one from the inside, and the runs left over
	 * continue the stack outwards where the native frames end.
	 */
	outer_first = nr_runs != nr_evals && !truncated && nr_evals;
	if (nr_runs != nr_evals)
		ss->py_mismatched++;
	{
		uint32_t k = nr_runs < nr_evals ? nr_runs : nr_evals;
		uint32_t eval_off = outer_first ? nr_evals - k : 0, run_off = outer_first ? nr_runs - k : 0;
		uint32_t e = 0;

		for (size_t i = 0; i < nr; i++) {
			if (e < nr_evals && evals[e] == i) {
				uint32_t j = e++;

				if (j < eval_off || j - eval_off >= k) {
					/* an eval loop with no run: gone by the read, or never read */
					if (!outer_first)
						out[n++] = native[i];
					continue;
				}
				for (uint32_t f = runs[run_off + j - eval_off].start;
				     f < runs[run_off + j - eval_off].end; f++)
					out[n++] = ss_intern_frame(ss, MOD_PYTHON,
								   (uint64_t)pf[f].func << 32 | pf[f].line);
				paired += runs[run_off + j - eval_off].end - runs[run_off + j - eval_off].start;
				continue;
			}
			out[n++] = native[i];
		}
		/*
		 * Runs beyond the native stack's eval loops go on outwards where
		 * the native stack was cut short (or is the leaf alone, -g none);
		 * above a whole native stack without an eval loop they would sit
		 * over _start: read after the thread left the interpreter.
		 */
		if (!outer_first && (truncated || nr <= 1 || nr_evals)) {
			for (uint32_t r = k; r < nr_runs; r++) {
				for (uint32_t f = runs[r].start; f < runs[r].end; f++)
					out[n++] = ss_intern_frame(ss, MOD_PYTHON,
								   (uint64_t)pf[f].func << 32 | pf[f].line);
				paired += runs[r].end - runs[r].start;
			}
		}
	}
	if (paired) {
		st->with_frames++;
		st->captured += !!(h.flags & PYX_CAPTURED);
	} else
		st->miss[PY_MISS_OUTSIDE]++;
	return n;
}
