// SPDX-License-Identifier: MIT
/* Reading the Python stacks of a live process: thread states, interpreter frames, code objects. */
#include "python.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

#define SEEN_SLOTS 8192         /* > 2 * PY_MAX_DEPTH: the open-addressing set stays half empty */
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
};

/* A Python frame the walk found, its code object not read yet. */
struct walked {
	uint64_t code, instr;
	uint32_t flags;
	uint32_t code_idx;              /* its code object among the distinct ones of the stack */
};

struct py_proc {
	struct py_target t;
	uint32_t version;
	uint64_t runtime;
	struct py_codes *codes;
	struct thread_entry *threads;
	size_t threads_nr, threads_alloc;
	struct idx thread_idx;          /* hash of tid -> threads[] */
	/* frames visited by the current walk: slots whose gen differs are empty */
	uint64_t seen[SEEN_SLOTS];
	uint32_t seen_gen[SEEN_SLOTS];
	uint32_t seen_val[SEEN_SLOTS];  /* read_codes: a code object's index among the distinct ones */
	uint32_t gen;
	struct py_pages pages;          /* the target's pages read during the current stack read */
	uint64_t counts[PY_STACK_NR];
	/* scratch of one stack read: its frames, and its distinct code objects' headers */
	struct walked *walked;
	size_t walked_alloc;
	uint64_t *code_addr;
	uint8_t (*code_hdr)[PY_HDR_MAX];
	bool *code_ok;
	size_t codes_alloc;
	/* code headers read before the walk (SPEC_CODES) */
	uint64_t spec_addr[SPEC_CODES];
	uint8_t spec_hdr[SPEC_CODES][PY_HDR_MAX];
	bool spec_ok[SPEC_CODES];
	size_t nr_spec;
	/* the sample's stack copy during a read, and the frames its loops ran (frame_at_sample) */
	const struct py_ustack *us;
	uint64_t walk_lo;               /* the lowest frame the walk found within FRAME_SPAN_MAX of the first */
	uint64_t bounds[PY_BOUNDS];
	size_t nr_bounds;
};

static bool rd(struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return py_pages_read(&p->pages, &p->t, &r, 1, 0) == 1;
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

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
	ret = py_layout_init(&p->t, o->runtime, &p->version, err, errlen);
	if (ret) {
		py_proc_free(p);
		errno = -ret;
		return NULL;
	}
	p->codes = py_codes_new();
	py_pages_init(&p->pages);
	return p;
}

void py_proc_free(struct py_proc *p)
{
	if (!p)
		return;
	py_codes_free(p->codes);
	py_pages_release(&p->pages);
	free(p->walked);
	free(p->code_addr);
	free(p->code_hdr);
	free(p->code_ok);
	free(p->threads);
	idx_release(&p->thread_idx);
	free(p);
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
		t->tid = tid;
	}
	t->tstate = tstate;
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
	if (t)
		t->tstate = 0;
	return st;
}

/* ---- frames ---- */

/* Adds frame address A to the walk's set; false when it was there already (a loop). */
static bool seen_add(struct py_proc *p, uint64_t a)
{
	size_t i = hash_u64(a) & (SEEN_SLOTS - 1);

	while (p->seen_gen[i] == p->gen) {
		if (p->seen[i] == a)
			return false;
		i = (i + 1) & (SEEN_SLOTS - 1);
	}
	p->seen_gen[i] = p->gen;
	p->seen[i] = a;
	return true;
}

static void seen_reset(struct py_proc *p)
{
	if (++p->gen == 0) {
		memset(p->seen_gen, 0, sizeof(p->seen_gen));
		p->gen = 1;
	}
}

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

/* The word at ADDR in the stack copy US, if it holds it. */
static bool ustack_u64(const struct py_ustack *us, uint64_t addr, uint64_t *v)
{
	if (addr < us->sp || us->size < 8 || addr - us->sp > us->size - 8)
		return false;
	memcpy(v, us->data + (addr - us->sp), 8);
	return true;
}

/*
 * 3.11 and 3.12: the innermost frame when the sample was taken. Each
 * evaluation loop keeps its _PyCFrame on the C stack and updates its
 * current_frame at every Python call and return; the thread state points
 * at the innermost loop's. The stack copy holds them as they were at the
 * sample, the thread state (read now) as they are: CFRAME, the thread
 * state's. A thread gone deeper since has CFRAME below the copy: its
 * previous links lead back into it. A thread come back out since has
 * CFRAME above the loop it sampled in: that loop's _PyCFrame, in the copy,
 * links to CFRAME. Sets *FRAME; false when the copy cannot tell.
 */
static bool frame_at_sample(struct py_proc *p, const struct py_ustack *us, uint64_t cframe, uint64_t *frame)
{
	const uint32_t cur = p->t.l.cframe_current_frame, prev = cur + 8;
	uint64_t v, f;

	for (int k = 0; k < 16 && cframe && cframe < us->sp; k++) {
		if (!py_ptr_ok(cframe) || !rd(p, cframe + prev, &cframe, 8))
			return false;
	}
	if (!py_ptr_ok(cframe) || !ustack_u64(us, cframe + cur, &f))
		return false;
	/*
	 * Loops deeper than CFRAME's in the copy, innermost last: the word
	 * nearest below that links to it with a frame beside it. (A loop
	 * that returned before the sample can leave such a word in the
	 * stack of what runs now: pairing with the native stack's loops
	 * still finds that out.)
	 */
	for (int depth = 0; depth < 64; depth++) {
		uint64_t found = 0;

		for (uint64_t a = (cframe - 8) & ~7ull; a >= us->sp + prev && a < cframe; a -= 8) {
			if (ustack_u64(us, a, &v) && v == cframe && ustack_u64(us, a - prev + cur, &v) &&
			    py_ptr_ok(v)) {
				found = a - prev;
				break;
			}
		}
		if (!found)
			break;
		cframe = found;
		ustack_u64(us, cframe + cur, &f);
	}
	*frame = f;
	/*
	 * Where each loop's run began: its first frame links to the frame the
	 * loop above it ran. Read by the walk as they were at the sample, which
	 * the frames themselves, read now, may no longer say (3.11 marks an
	 * entry frame only once its loop has begun, and a frame's slot is
	 * soon taken by the next call).
	 */
	p->nr_bounds = 0;
	while (p->nr_bounds < PY_BOUNDS && ustack_u64(us, cframe + prev, &v) && v > cframe &&
	       ustack_u64(us, v + cur, &f)) {
		p->bounds[p->nr_bounds++] = f;
		cframe = v;
	}
	return true;
}

/*
 * The line of the instruction pointer at byte OFF from the code's first
 * instruction. 3.11 and 3.12 point at the code unit before the next
 * instruction, so a frame not started yet sits at -2 (its first line);
 * anything else before the code or odd is garbage (no line).
 */
static uint32_t line_of(struct py_proc *p, struct py_code *c, uint64_t off)
{
	int64_t o = (int64_t)off;

	if (o < -2 || (o & 1))
		return 0;
	return py_code_line(p->codes, c, o);
}

/* Room for N frames and as many code objects in P's scratch arrays. */
static void scratch_grow(struct py_proc *p, size_t n)
{
	if (n > p->walked_alloc) {
		p->walked_alloc = n;
		p->walked = xrealloc(p->walked, st_mult(p->walked_alloc, sizeof(*p->walked)));
	}
	if (n > p->codes_alloc) {
		p->codes_alloc = n;
		p->code_addr = xrealloc(p->code_addr, st_mult(p->codes_alloc, sizeof(*p->code_addr)));
		p->code_hdr = xrealloc(p->code_hdr, st_mult(p->codes_alloc, sizeof(*p->code_hdr)));
		p->code_ok = xrealloc(p->code_ok, st_mult(p->codes_alloc, sizeof(*p->code_ok)));
	}
}

/* Whether the frame at PREV is the last of a loop's run, the sample's stack copy says. */
static bool is_bound(const struct py_proc *p, uint64_t prev)
{
	for (size_t i = 0; i < p->nr_bounds; i++)
		if (p->bounds[i] == prev)
			return true;
	return false;
}

/*
 * Whether the frame at ADDR is in the thread's C stack below the sample's
 * stack pointer: there when the thread went deeper after the sample.
 */
static bool after_sample(const struct py_proc *p, uint64_t addr)
{
	return p->us && addr < p->us->sp && p->us->sp - addr < (1u << 20);
}

/*
 * Range R from the sample's stack copy, when it lies there: a frame on the
 * C stack (3.12's shims) as it was at the sample.
 */
static bool from_copy(const struct py_proc *p, const struct py_read *r)
{
	const struct py_ustack *us = p->us;

	if (!us || r->addr < us->sp || r->len > us->size || r->addr - us->sp > us->size - r->len)
		return false;
	memcpy(r->buf, us->data + (r->addr - us->sp), r->len);
	return true;
}

/*
 * Walks the chain of frames from FRAME (whose header is in BUF[0]) into
 * p->walked, up to MAX Python frames, reading frame headers only: through
 * the page cache, a frame not cached bringing the pages below it along.
 * Returns the Python frames found and sets *STATUS to why the walk ended.
 */
static size_t walk_frames(struct py_proc *p, uint64_t frame, uint8_t (*buf)[PY_HDR_MAX], size_t max,
			  enum py_status *status)
{
	const struct py_layout *l = &p->t.l;
	uint8_t max_owner = l->owned_by_cstack != PY_OWNER_NONE ? (uint8_t)l->owned_by_cstack : 2;
	size_t n = 0, run = 0, cur = 0;
	bool empty_above = false;

	seen_reset(p);
	p->walk_lo = frame;
	for (size_t depth = 0;; depth++) {
		const uint8_t *f = buf[cur];
		uint64_t code = u64_at(f, l->frame_code), prev = u64_at(f, l->frame_previous);
		uint8_t owner = f[l->frame_owner];
		struct py_read r = { prev, buf[!cur], p->t.hdr_frame };

		if (depth == PY_MAX_DEPTH) {
			*status = PY_STACK_TOO_DEEP;
			return n;
		}
		if (!seen_add(p, frame) || owner > max_owner || (prev && !py_ptr_ok(prev)))
			goto torn;
		if (owner == l->owned_by_cstack && after_sample(p, frame)) {
			/*
			 * a shim deeper in the C stack than the sample's stack
			 * pointer: its loop began after the sample, and the
			 * frames above it are newer than the sample
			 */
			n = 0;
			run = 0;
			empty_above = false;
		} else if (owner == l->owned_by_cstack) {
			/* a shim: the frame above it was the first of its eval loop */
			if (run)
				p->walked[n - 1].flags |= PY_FRAME_ENTRY;
			else if (n == 0 && !empty_above)
				empty_above = true;
			else
				goto torn;      /* two shims in a row never happen */
			run = 0;
		} else {
			uint32_t flags = 0;

			if (!py_ptr_ok(code))
				goto torn;
			if (n == max) {
				*status = PY_STACK_TOO_DEEP;
				return n;
			}
			if (n == 0 && empty_above)
				flags |= PY_FRAME_EMPTY_RUN_ABOVE;
			if (owner == 1)         /* FRAME_OWNED_BY_GENERATOR in 3.11-3.13 */
				flags |= PY_FRAME_GENERATOR;
			if (l->frame_is_entry != PY_OFF_NONE && (f[l->frame_is_entry] || is_bound(p, prev))) {
				flags |= PY_FRAME_ENTRY;
				run = 0;
			} else {
				run++;
			}
			p->walked[n++] = (struct walked){ code, u64_at(f, l->frame_instr), flags, 0 };
		}
		if (!prev) {
			*status = PY_STACK_COMPLETE;
			return n;
		}
		if (!from_copy(p, &r) && py_pages_read(&p->pages, &p->t, &r, 1, FRAME_PAGES_BELOW) != 1) {
			*status = PY_STACK_UNREADABLE;
			return n;
		}
		frame = prev;
		cur = !cur;
		if (frame < p->walk_lo && p->walk_lo - frame <= FRAME_SPAN_MAX)
			p->walk_lo = frame;
	}
torn:
	*status = PY_STACK_TORN;
	return n;
}

/* The index of CODE among the stack's distinct code objects, added (*NC grows) when new. */
static uint32_t code_index(struct py_proc *p, uint64_t code, size_t *nc)
{
	size_t i = hash_u64(code) & (SEEN_SLOTS - 1);

	while (p->seen_gen[i] == p->gen) {
		if (p->seen[i] == code)
			return p->seen_val[i];
		i = (i + 1) & (SEEN_SLOTS - 1);
	}
	p->seen_gen[i] = p->gen;
	p->seen[i] = code;
	p->seen_val[i] = (uint32_t)*nc;
	p->code_addr[(*nc)++] = code;
	return p->seen_val[i];
}

/*
 * Reads the headers of the N walked frames' distinct code objects, all in
 * as few calls of the reader as ranges that fail allow (a range that
 * fails stops a call; the next goes on after it). Sets each frame's
 * code_idx; returns the number of distinct code objects.
 */
static size_t read_codes(struct py_proc *p, size_t n)
{
	struct py_read *r;
	size_t nc = 0, nr = 0, done = 0, *idx;

	/* the walk is over: its set of frames becomes one of code objects (a recursion repeats one) */
	seen_reset(p);
	for (size_t i = 0; i < n; i++) {
		struct walked *w = &p->walked[i];

		w->code_idx = i && w->code == w[-1].code ? w[-1].code_idx : code_index(p, w->code, &nc);
	}
	r = xmalloc(st_mult(nc + 1, sizeof(*r)));
	idx = xmalloc(st_mult(nc + 1, sizeof(*idx)));
	for (size_t c = 0; c < nc; c++) {
		size_t k = 0;

		/* read with the thread's pages already */
		while (k < p->nr_spec && p->spec_addr[k] != p->code_addr[c])
			k++;
		if (k < p->nr_spec && p->spec_ok[k]) {
			memcpy(p->code_hdr[c], p->spec_hdr[k], p->t.hdr_code);
			p->code_ok[c] = true;
			continue;
		}
		idx[nr] = c;
		r[nr++] = (struct py_read){ p->code_addr[c], p->code_hdr[c], p->t.hdr_code };
	}
	while (done < nr) {
		int got = p->t.read(p->t.read_arg, r + done, nr - done);

		if (got < 0)
			got = 0;
		for (size_t k = 0; k < (size_t)got; k++)
			p->code_ok[idx[done + k]] = true;
		done += (size_t)got;
		if (done < nr)
			p->code_ok[idx[done++]] = false;
	}
	free(idx);
	free(r);
	return nc;
}

/*
 * Walks the chain from FRAME (whose header is in BUF[0]) into OUT: first
 * the frames, then the code objects of them all in one batched read (each
 * header checked against what its cached entry was decoded from), so that
 * a stack whose code objects are cached costs a read or two whatever its
 * depth. The frames before the first failure, frame or code object, are
 * kept.
 */
static size_t walk(struct py_proc *p, uint64_t frame, uint8_t (*buf)[PY_HDR_MAX], struct py_frame *out,
		   size_t max, enum py_status *status)
{
	const struct py_layout *l = &p->t.l;
	enum py_status walk_status;
	size_t n;

	scratch_grow(p, max < PY_MAX_DEPTH ? max + 1 : PY_MAX_DEPTH + 1);
	n = walk_frames(p, frame, buf, max, &walk_status);
	if (n)
		read_codes(p, n);
	for (size_t i = 0; i < n; i++) {
		const struct walked *w = &p->walked[i];
		struct py_code *c;

		if (!p->code_ok[w->code_idx]) {
			*status = PY_STACK_UNREADABLE;
			return i;
		}
		if ((*status = py_code_get(p->codes, &p->t, w->code, p->code_hdr[w->code_idx], &c)) !=
		    PY_STACK_COMPLETE)
			return i;
		out[i] = (struct py_frame){
			.qualname = c->qualname,
			.filename = c->filename,
			.firstlineno = (uint32_t)c->firstlineno,
			.line = line_of(p, c, w->instr - (w->code + l->code_adaptive)),
			.flags = w->flags,
			.code = w->code,
		};
	}
	*status = walk_status;
	return n;
}

size_t py_read_stack(struct py_proc *p, int32_t tid, struct py_frame *out, size_t max,
		     enum py_status *status)
{
	bool moved;

	return py_read_stack_at(p, tid, NULL, out, max, status, &moved);
}

size_t py_read_stack_at(struct py_proc *p, int32_t tid, const struct py_ustack *us, struct py_frame *out,
			size_t max, enum py_status *status, bool *moved)
{
	uint8_t ts[PY_HDR_MAX], buf[2][PY_HDR_MAX];
	uint64_t tstate = 0, frame = 0, field = 0, sampled;
	struct thread_entry *t;
	size_t n = 0;

	if (!p) {
		*status = PY_STACK_UNSUPPORTED;
		return 0;
	}
	*moved = false;
	p->us = NULL;
	p->nr_bounds = 0;
	py_pages_reset(&p->pages);
	py_codes_begin_read(p->codes);
	/* where the thread was last time, in one call: mostly where it is now */
	t = thread_cached(p, tid);
	p->nr_spec = 0;
	if (t && t->tstate) {
		const struct py_read r[3] = {
			{ t->tstate, NULL, p->t.hdr_tstate },
			{ t->last_cframe, NULL, 8 },
			/* the frames of the last stack, in one range */
			{ t->last_lo, NULL, t->last_frame + p->t.hdr_frame - t->last_lo },
		};
		const unsigned below[3] = { 0, 0, 0 };
		struct py_read codes[SPEC_CODES];

		for (size_t i = 0; i < t->nr_last_codes; i++) {
			p->spec_addr[i] = t->last_codes[i];
			codes[i] = (struct py_read){ t->last_codes[i], p->spec_hdr[i], p->t.hdr_code };
		}
		p->nr_spec = t->nr_last_codes;
		py_pages_prefetch(&p->pages, &p->t, r, 3, below, codes, p->nr_spec, p->spec_ok);
	}
	*status = find_tstate(p, tid, ts, &tstate);
	if (*status == PY_STACK_COMPLETE)
		*status = current_frame(p, ts, &frame, &field);
	if (*status == PY_STACK_COMPLETE && us && p->t.l.tstate_cframe != PY_OFF_NONE &&
	    frame_at_sample(p, us, u64_at(ts, p->t.l.tstate_cframe), &sampled)) {
		*moved = sampled != frame;
		frame = sampled;
	}
	p->us = us;
	if (*status == PY_STACK_COMPLETE && frame) {
		const struct py_read r0 = { frame, buf[0], p->t.hdr_frame };

		if (!py_ptr_ok(frame))
			*status = PY_STACK_TORN;
		else if (!from_copy(p, &r0) && py_pages_read(&p->pages, &p->t, &r0, 1, FRAME_PAGES_BELOW) != 1)
			*status = PY_STACK_UNREADABLE;
		else
			n = walk(p, frame, buf, out, max, status);
	}
	p->us = NULL;
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
