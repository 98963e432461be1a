// SPDX-License-Identifier: MIT
/* Reading the Python stacks of a live process: thread states, interpreter frames, code objects. */
#include "pyproc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

void py_proc_opts_from_probe(struct py_proc_opts *o, const struct py_probe *pr, uint64_t bias)
{
	o->version = pr->version;
	o->runtime = pr->runtime.addr + bias;
	o->code_type = pr->code_type.addr ? pr->code_type.addr + bias : 0;
	o->unicode_type = pr->unicode_type.addr ? pr->unicode_type.addr + bias : 0;
	o->bytes_type = pr->bytes_type.addr ? pr->bytes_type.addr + bias : 0;
}

struct py_proc *py_proc_new(const struct py_proc_opts *o, char *err, size_t errlen)
{
	struct py_proc *p = xcalloc(1, sizeof(*p));
	int ret;

	p->version = o->version;
	p->runtime = o->runtime;
	p->t.code_type = o->code_type;
	p->t.unicode_type = o->unicode_type;
	p->t.bytes_type = o->bytes_type;
	p->t.read = o->read ? o->read : py_read_process;
	p->t.read_arg = o->read ? o->read_arg : (void *)(intptr_t)o->pid;
	p->clock = o->clock ? o->clock : time_mono_ns;
	ret = py_layout_init(&p->t, o->runtime, &p->version, err, errlen);
	if (ret) {
		py_proc_free(p);
		errno = -ret;
		return NULL;
	}
	p->codes = py_codes_new();
	py_pages_init(&p->pages);
	if (getenv("PROFTOOL_DEBUG_PYTHON")) {
		p->memo_check = true;
		p->memo_scratch = xmalloc(PY_CAPTURE_NODES * sizeof(*p->memo_scratch));
	}
	return p;
}

void py_proc_free(struct py_proc *p)
{
	if (!p)
		return;
	if (p->memo_check)
		fprintf(stderr, "proftool: debug: %" PRIu64 " Python stacks taken from the thread's last capture, "
			"%" PRIu64 " differed from a walk; walks checked %" PRIu64 " code objects from the capture, "
			"read %" PRIu64 "; took %" PRIu64 " from other processes\n", p->memo_hits, p->memo_differ,
			p->code_from_cap, p->code_read, p->seeded);
	free(p->memo_scratch);
	free(p->seen);
	py_codes_free(p->codes);
	py_pages_release(&p->pages);
	free(p->walked);
	free(p->code_addr);
	free(p->code_hdr);
	free(p->code_state);
	free(p->code_todo);
	free(p->code_reads);
	for (size_t i = 0; i < p->threads_nr; i++)
		py_memo_free(p->threads[i].memo);
	free(p->threads);
	idx_release(&p->thread_idx);
	free(p);
}

void py_proc_trim(struct py_proc *p)
{
	py_pages_release(&p->pages);
	for (size_t i = 0; i < p->threads_nr; i++) {
		py_memo_free(p->threads[i].memo);
		p->threads[i].memo = NULL;
	}
}

uint32_t py_proc_version(const struct py_proc *p)
{
	return p->version;
}

void py_proc_counts(const struct py_proc *p, uint64_t counts[PY_STACK_NR])
{
	memcpy(counts, p->counts, sizeof(p->counts));
}

const char *py_status_name(enum py_status s)
{
	static const char *const names[PY_STACK_NR] = {
		"complete", "no thread state", "torn", "unreadable", "too deep", "unsupported",
	};

	return (unsigned)s < PY_STACK_NR ? names[s] : "?";
}

/* ---- thread states ---- */

/* Floyd's tortoise without the hare: Brent's cycle detection in O(1) memory. */
struct brent {
	uint64_t tortoise;
	size_t power, lam;
};

static bool brent_loops(struct brent *b, uint64_t x)
{
	if (x == b->tortoise)
		return true;
	if (++b->lam == b->power) {
		b->tortoise = x;
		b->power *= 2;
		b->lam = 0;
	}
	return false;
}

static struct thread_entry *thread_cached(struct py_proc *p, int32_t tid)
{
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&p->thread_idx, hash_u64((uint64_t)tid), &pos)) != IDX_NONE)
		if (p->threads[id].tid == tid)
			return &p->threads[id];
	return NULL;
}

static void thread_remember(struct py_proc *p, int32_t tid, uint64_t tstate)
{
	struct thread_entry *t = thread_cached(p, tid);

	if (!t) {
		ALLOC_GROW(p->threads, p->threads_nr + 1, p->threads_alloc);
		idx_insert(&p->thread_idx, hash_u64((uint64_t)tid), (uint32_t)p->threads_nr);
		t = &p->threads[p->threads_nr++];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
	}
	t->tstate = tstate;
	t->no_thread = !tstate;
}

static bool tstate_is(struct py_proc *p, uint64_t ts, int32_t tid, uint8_t *hdr)
{
	return rd(p, ts, hdr, p->t.hdr_tstate) && u64_at(hdr, p->t.l.tstate_native_tid) == (uint64_t)(uint32_t)tid;
}

/* Finds the thread state of TID, its header into HDR; the last one found is tried first. */
static enum py_status find_tstate(struct py_proc *p, int32_t tid, uint8_t *hdr, uint64_t *tstate)
{
	struct thread_entry *t = thread_cached(p, tid);
	struct brent bi = { 0, 1, 0 };
	uint64_t interp;
	size_t walked = 0;
	enum py_status st = PY_STACK_NO_THREAD;

	if (t && t->tstate && tstate_is(p, t->tstate, tid, hdr)) {
		*tstate = t->tstate;
		return PY_STACK_COMPLETE;
	}
	if (!rd(p, p->runtime + p->t.l.runtime_interp_head, &interp, 8))
		return PY_STACK_UNREADABLE;
	for (size_t i = 0; interp; i++) {
		struct brent bt = { 0, 1, 0 };
		uint64_t ts;

		if (i == PY_MAX_INTERPS || !py_ptr_ok(interp) || brent_loops(&bi, interp))
			return PY_STACK_TORN;
		if (!rd(p, interp + p->t.l.interp_threads_head, &ts, 8) ||
		    !rd(p, interp + p->t.l.interp_next, &interp, 8))
			return PY_STACK_UNREADABLE;
		for (; ts; ts = u64_at(hdr, p->t.l.tstate_next)) {
			if (++walked > PY_MAX_THREADS || !py_ptr_ok(ts) || brent_loops(&bt, ts))
				return PY_STACK_TORN;
			if (!rd(p, ts, hdr, p->t.hdr_tstate)) {
				/* a thread state being freed: keep looking, say so if TID is not found */
				st = PY_STACK_UNREADABLE;
				break;
			}
			if (u64_at(hdr, p->t.l.tstate_native_tid) == (uint64_t)(uint32_t)tid) {
				thread_remember(p, tid, ts);
				*tstate = ts;
				return PY_STACK_COMPLETE;
			}
		}
	}
	/* a thread without one (a native thread) is remembered as such, for captures */
	if (t) {
		t->tstate = 0;
		t->no_thread = st == PY_STACK_NO_THREAD;
	} else if (st == PY_STACK_NO_THREAD) {
		thread_remember(p, tid, 0);
	}
	return st;
}

/* ---- frames ---- */

/*
 * The thread's innermost frame (3.11/3.12 through its _PyCFrame), 0 when
 * it runs none; *FIELD gets where it was read in the target (0: in the
 * thread state).
 */
static enum py_status current_frame(struct py_proc *p, const uint8_t *ts, uint64_t *frame,
				    uint64_t *field)
{
	const struct py_layout *l = &p->t.l;
	uint64_t cframe;

	*field = 0;
	if (l->tstate_cframe == PY_OFF_NONE) {
		*frame = u64_at(ts, l->cframe_current_frame);
		return PY_STACK_COMPLETE;
	}
	cframe = u64_at(ts, l->tstate_cframe);
	if (!py_ptr_ok(cframe))
		return PY_STACK_TORN;
	*field = cframe + l->cframe_current_frame;
	return rd(p, *field, frame, 8) ? PY_STACK_COMPLETE : PY_STACK_UNREADABLE;
}

size_t py_read_stack(struct py_proc *p, int32_t tid, struct py_frame *out, size_t max,
		     enum py_status *status)
{
	bool moved;

	return py_read_stack_at(p, tid, NULL, out, max, status, &moved);
}

/* ---- captures ---- */

bool py_capture_layout(const struct py_proc *p, uint32_t *ts_len, uint32_t *frame_len, uint32_t *ind1,
		       uint32_t *ind2, uint32_t *next)
{
	const struct py_layout *l = &p->t.l;

	*ts_len = (uint32_t)p->t.hdr_tstate;
	*frame_len = (uint32_t)((p->t.hdr_frame + 7) & ~(size_t)7);
	*ind1 = l->tstate_cframe == PY_OFF_NONE ? UINT32_MAX : l->tstate_cframe;
	*ind2 = l->cframe_current_frame;
	*next = l->frame_previous;
	return *ts_len <= PY_CAPTURE_TS_MAX && *frame_len <= PY_CAPTURE_FRAME_MAX && !(*next & 7) &&
	       *next + 8 <= *frame_len;
}

/* Whether P and FROM, two readers, read the same interpreter at the same address (a fork). */
static bool forked_alike(const struct py_proc *p, const struct py_proc *from)
{
	return p && from && p != from && p->version == from->version && p->runtime == from->runtime;
}

size_t py_proc_seed(struct py_proc *p, const struct py_proc *from)
{
	size_t n = forked_alike(p, from) ? py_codes_seed(p->codes, from->codes, PY_SEED_MAX) : 0;

	if (n)
		p->seeded += n;
	return n;
}

bool py_proc_seeded_whole(const struct py_proc *p)
{
	return py_codes_seeded_whole(p->codes);
}

size_t py_proc_adopt(struct py_proc *p, const struct py_proc *from)
{
	size_t n;

	if (!forked_alike(p, from))
		return 0;
	py_codes_begin_read(p->codes, p->clock());
	n = py_codes_adopt(p->codes, &p->t, from->codes, PY_SEED_MAX);
	p->seeded += n;
	return n;
}

bool py_capture_code(const struct py_proc *p, uint32_t frame_len, uint32_t *code_at, uint32_t *code_len)
{
	*code_at = p->t.l.frame_code;
	*code_len = (uint32_t)p->t.hdr_code;
	return !(*code_at & 7) && *code_at + 8 <= frame_len && *code_len <= PY_CAPTURE_CODE_MAX;
}

bool py_proc_tstate_to_register(struct py_proc *p, int32_t tid, uint64_t *tstate)
{
	struct thread_entry *t = thread_cached(p, tid);

	if (!t || (!t->tstate && !t->no_thread) || (t->registered_set && t->registered == t->tstate))
		return false;
	t->registered_set = true;
	t->registered = *tstate = t->tstate;
	return true;
}

void py_proc_tstate_unregistered(struct py_proc *p, int32_t tid)
{
	struct thread_entry *t = thread_cached(p, tid);

	if (t)
		t->registered_set = false;
}

enum py_cap_use py_proc_capture_use(const struct py_proc *p)
{
	return !p->cap_used ? PY_CAP_NONE : p->cap_short ? PY_CAP_PART : PY_CAP_WHOLE;
}

bool py_proc_code_failed(const struct py_proc *p)
{
	return p->code_failed;
}

bool py_proc_hurry(const struct py_proc *p)
{
	return p->code_gone || py_codes_met_transient(p->codes);
}

/* The capture of thread TID, when it is of the thread state the reader knows for it and whole enough. */
static bool capture_usable(struct py_proc *p, int32_t tid, const struct py_capture *cap)
{
	struct thread_entry *t = thread_cached(p, tid);

	return cap && t && t->tstate && cap->tstate == t->tstate && cap->ts_len >= p->t.hdr_tstate &&
	       u64_at(cap->ts, p->t.l.tstate_native_tid) == (uint64_t)(uint32_t)tid;
}

size_t py_read_stack_at(struct py_proc *p, int32_t tid, const struct py_ustack *us, struct py_frame *out,
			size_t max, enum py_status *status, bool *moved)
{
	return py_read_stack_cap(p, tid, us, NULL, out, max, status, moved);
}

static bool same_frames(const struct py_frame *a, const struct py_frame *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].qualname != b[i].qualname || a[i].filename != b[i].filename ||
		    a[i].firstlineno != b[i].firstlineno || a[i].line != b[i].line || a[i].flags != b[i].flags ||
		    a[i].code != b[i].code)
			return false;
	return true;
}

size_t py_read_stack_cap(struct py_proc *p, int32_t tid, const struct py_ustack *us, const struct py_capture *cap,
			 struct py_frame *out, size_t max, enum py_status *status, bool *moved)
{
	uint8_t ts[PY_HDR_MAX], buf[2][PY_HDR_MAX];
	struct py_capture cap_nocode;
	uint64_t tstate = 0, frame = 0, field = 0, sampled;
	struct thread_entry *t;
	size_t n = 0, memo_n = 0;
	bool captured;
	/* only for PROFTOOL_DEBUG_PYTHON's check: the memo's frames are read into OUT */
	struct py_frame *memo_out = p && p->memo_check ? p->memo_scratch : out;

	if (!p) {
		*status = PY_STACK_UNSUPPORTED;
		return 0;
	}
	if (moved)
		*moved = false;
	p->us = NULL;
	p->cap = NULL;
	p->cap_used = p->cap_short = p->code_failed = p->new_codes = p->code_gone = p->walk_exact = p->cap_us = false;
	p->nr_bounds = 0;
	py_pages_reset(&p->pages);
	py_codes_begin_read(p->codes, p->clock());
	captured = capture_usable(p, tid, cap);
	/* code objects' headers only where a slot holds them whole */
	if (captured && cap->code_off && cap->code_off + 8 + p->t.hdr_code > cap->stride) {
		cap_nocode = *cap;
		cap_nocode.code_off = 0;
		cap = &cap_nocode;
	}
	t = thread_cached(p, tid);
	p->nr_spec = 0;
	if (captured) {
		/* the thread state and frames as they were at the sample: nothing to read ahead */
		tstate = cap->tstate;
		memcpy(ts, cap->ts, p->t.hdr_tstate);
		frame = cap->first;
		field = p->t.l.tstate_cframe == PY_OFF_NONE ? 0 : u64_at(ts, p->t.l.tstate_cframe) +
								   p->t.l.cframe_current_frame;
		*status = PY_STACK_COMPLETE;
		/* where each loop's run began, from the stack copy (the frame itself is the capture's) */
		if (us && p->t.l.tstate_cframe != PY_OFF_NONE)
			py_frame_at_sample(p, us, u64_at(ts, p->t.l.tstate_cframe), &sampled);
		p->cap = cap;
		p->cap_next = 0;
		p->cap_used = true;
		/* the frames of the thread's last capture: what the walk found then (pymemo.c) */
		if (t && (memo_n = py_memo_reuse(p, t->memo, cap, us, field, memo_out, max))) {
			p->memo_hits++;
			if (!p->memo_check) {
				p->cap = NULL;
				p->counts[*status]++;
				return memo_n;
			}
		}
	}
	/*
	 * Where the thread was last time, in one call: mostly where it is now.
	 * With a capture that may have stopped short of the stack's end (it
	 * copied as many frames as it may), the frames of the last stack
	 * only, among which the rest mostly are.
	 */
	if (t && t->tstate && (!captured || cap->nr >= PY_CAPTURE_NODES)) {
		const struct py_read r[3] = {
			{ t->tstate, NULL, captured ? 0 : p->t.hdr_tstate },
			{ t->last_cframe, NULL, captured ? 0 : 8 },
			/* the frames of the last stack, in one range */
			{ t->last_lo, NULL, t->last_frame + p->t.hdr_frame - t->last_lo },
		};
		const unsigned below[3] = { 0, 0, 0 };
		struct py_read codes[SPEC_CODES];

		/* those checked lately are not read again (PY_CODE_RECHECK_NS) */
		for (size_t i = 0; i < t->nr_last_codes; i++) {
			if (py_code_recent(p->codes, t->last_codes[i]))
				continue;
			p->spec_addr[p->nr_spec] = t->last_codes[i];
			codes[p->nr_spec] = (struct py_read){ t->last_codes[i], p->spec_hdr[p->nr_spec], p->t.hdr_code };
			p->nr_spec++;
		}
		py_pages_prefetch(&p->pages, &p->t, r, 3, below, codes, p->nr_spec, p->spec_ok);
	}
	if (captured)
		;
	else if ((*status = find_tstate(p, tid, ts, &tstate)) == PY_STACK_COMPLETE && us &&
		 p->t.l.tstate_cframe != PY_OFF_NONE &&
	    py_frame_at_sample(p, us, u64_at(ts, p->t.l.tstate_cframe), &sampled)) {
		/* the frame the thread runs now only for MOVED: the copy's is the one read */
		if (moved && current_frame(p, ts, &frame, &field) == PY_STACK_COMPLETE)
			*moved = sampled != frame;
		frame = sampled;
	} else if (*status == PY_STACK_COMPLETE) {
		*status = current_frame(p, ts, &frame, &field);
	}
	p->us = us;
	if (*status == PY_STACK_COMPLETE && frame) {
		const struct py_read r0 = { frame, buf[0], p->t.hdr_frame };

		if (!py_ptr_ok(frame))
			*status = PY_STACK_TORN;
		else if (!py_from_copy(p, &r0) && py_pages_read(&p->pages, &p->t, &r0, 1, FRAME_PAGES_BELOW) != 1)
			*status = PY_STACK_UNREADABLE;
		else
			n = py_walk(p, frame, buf, out, max, status);
	}
	/* PROFTOOL_DEBUG_PYTHON: the memo's frames against the walk's */
	if (memo_n && (memo_n != n || *status != PY_STACK_COMPLETE || !same_frames(memo_out, out, n)))
		p->memo_differ++;
	if (captured && t && *status == PY_STACK_COMPLETE && p->walk_exact && !p->cap_short && !p->cap_us &&
	    !p->code_failed && !p->new_codes)
		py_memo_keep(p, &t->memo, cap, us, field, out, n, max);
	p->us = NULL;
	p->cap = NULL;
	if ((t = thread_cached(p, tid)) && t->tstate == tstate && tstate) {
		t->last_cframe = field;
		t->last_frame = frame;
		t->last_lo = n && p->walk_lo <= frame ? p->walk_lo : frame;
		/* the code objects of this stack, innermost first, for the next read */
		t->nr_last_codes = 0;
		for (size_t i = 0; i < n && t->nr_last_codes < SPEC_CODES; i++) {
			size_t k = 0;

			while (k < t->nr_last_codes && t->last_codes[k] != out[i].code)
				k++;
			if (k == t->nr_last_codes)
				t->last_codes[t->nr_last_codes++] = out[i].code;
		}
	}
	p->counts[*status]++;
	return n;
}
