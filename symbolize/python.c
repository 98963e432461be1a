// SPDX-License-Identifier: MIT
/* Reading the Python stacks of a live process: thread states, interpreter frames, code objects. */
#include "python.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "base/base.h"

#define PAGE_SIZE_ 4096ull      /* of the cache, not necessarily the kernel's (a divisor of it) */
#define PAGE_SLOTS 64           /* pages cached per stack read; three quarters are used at most */
#define SEEN_SLOTS 8192         /* > 2 * PY_MAX_DEPTH: the open-addressing set stays half empty */

struct thread_entry {
	int32_t tid;
	uint64_t tstate;                /* 0: forgotten */
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
	uint32_t gen;
	/*
	 * Pages of the target read during the current stack read: the
	 * frames of a stack share a few pages, and one read of a page costs
	 * about what one read of 80 bytes does. Slots whose gen differs from
	 * page_gen are empty.
	 */
	uint64_t page_addr[PAGE_SLOTS];
	uint32_t page_gen[PAGE_SLOTS];
	uint32_t page_gen_now;
	size_t pages_used;
	uint8_t (*page_data)[PAGE_SIZE_];
	uint64_t counts[PY_STACK_NR];
};

int py_read_process(void *arg, const struct py_read *r, size_t n)
{
	size_t done = 0;

	while (done < n) {
		struct iovec local[64], remote[64];
		size_t chunk = n - done < 64 ? n - done : 64;
		ssize_t got;

		for (size_t i = 0; i < chunk; i++) {
			local[i] = (struct iovec){ r[done + i].buf, r[done + i].len };
			remote[i] = (struct iovec){ (void *)(uintptr_t)r[done + i].addr, r[done + i].len };
		}
		got = process_vm_readv((pid_t)(intptr_t)arg, local, chunk, remote, chunk, 0);
		if (got < 0)
			return done ? (int)done : -errno;
		/* a partial transfer stops in or before the first range that failed */
		for (size_t i = 0; i < chunk; i++) {
			if ((size_t)got < r[done].len)
				return (int)done;
			got -= (ssize_t)r[done].len;
			done++;
		}
	}
	return (int)done;
}

bool py_target_read(const struct py_target *t, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return addr && addr < PY_USER_END && addr + len >= addr && t->read(t->read_arg, &r, 1) == 1;
}

/* ---- reading through the page cache ---- */

static void pages_reset(struct py_proc *p)
{
	if (++p->page_gen_now == 0) {
		memset(p->page_gen, 0, sizeof(p->page_gen));
		p->page_gen_now = 1;
	}
	p->pages_used = 0;
}

/* The slot holding page PG (*HIT), or the empty slot where it would go; PAGE_SLOTS when full. */
static size_t page_slot(const struct py_proc *p, uint64_t pg, bool *hit)
{
	size_t i = hash_u64(pg) & (PAGE_SLOTS - 1);

	for (size_t k = 0; k < PAGE_SLOTS; k++, i = (i + 1) & (PAGE_SLOTS - 1)) {
		*hit = p->page_gen[i] == p->page_gen_now;
		if (!*hit || p->page_addr[i] == pg)
			return i;
	}
	*hit = false;
	return PAGE_SLOTS;
}

static bool range_ok(const struct py_read *r)
{
	return r->addr && r->addr < PY_USER_END && r->addr + r->len >= r->addr;
}

/* Copies range R out of cached pages; false when one of them is not cached. */
static bool copy_cached(const struct py_proc *p, const struct py_read *r)
{
	uint64_t a = r->addr, end = r->addr + r->len;

	while (a < end) {
		uint64_t pg = a & ~(PAGE_SIZE_ - 1), chunk = pg + PAGE_SIZE_ - a;
		bool hit;
		size_t slot = page_slot(p, pg, &hit);

		if (!hit)
			return false;
		if (chunk > end - a)
			chunk = end - a;
		memcpy((uint8_t *)r->buf + (a - r->addr), p->page_data[slot] + (a - pg), chunk);
		a += chunk;
	}
	return true;
}

/*
 * Reads N (at most 2) ranges as a py_read_fn does, through the page cache:
 * the pages missing are fetched in one call of the reader. Ranges the
 * cache has no room for are read directly.
 */
static int paged_read(struct py_proc *p, const struct py_read *r, size_t n)
{
	struct py_read fetch[4];
	size_t slots[4], nf = 0;
	int got = 0;

	for (size_t i = 0; i < n && i < 2; i++) {
		if (!r[i].len || !range_ok(&r[i]) || r[i].len > PAGE_SIZE_)
			continue;
		for (uint64_t pg = r[i].addr & ~(PAGE_SIZE_ - 1); pg < r[i].addr + r[i].len; pg += PAGE_SIZE_) {
			bool hit, dup = false;
			size_t slot = page_slot(p, pg, &hit);

			for (size_t k = 0; k < nf; k++)
				dup |= fetch[k].addr == pg;
			if (hit || dup || slot == PAGE_SLOTS || p->pages_used + nf >= PAGE_SLOTS * 3 / 4)
				continue;
			/* claimed now, so that the next page of this call probes past it */
			p->page_gen[slot] = p->page_gen_now;
			p->page_addr[slot] = pg;
			slots[nf] = slot;
			fetch[nf++] = (struct py_read){ pg, p->page_data[slot], PAGE_SIZE_ };
		}
	}
	if (nf)
		got = p->t.read(p->t.read_arg, fetch, nf);
	for (size_t k = 0; k < nf; k++) {
		if ((int)k < got)
			p->pages_used++;
		else
			p->page_gen[slots[k]] = p->page_gen_now - 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!range_ok(&r[i]))
			return (int)i;
		if (!copy_cached(p, &r[i]) && !py_target_read(&p->t, r[i].addr, r[i].buf, r[i].len))
			return (int)i;
	}
	return (int)n;
}

static bool rd(struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return paged_read(p, &r, 1) == 1;
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
	p->page_data = xmalloc(st_mult(PAGE_SLOTS, PAGE_SIZE_));
	return p;
}

void py_proc_free(struct py_proc *p)
{
	if (!p)
		return;
	py_codes_free(p->codes);
	free(p->page_data);
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

/* The thread's innermost frame (3.11/3.12 through its _PyCFrame), 0 when it runs none. */
static enum py_status current_frame(struct py_proc *p, const uint8_t *ts, uint64_t *frame)
{
	const struct py_layout *l = &p->t.l;
	uint64_t cframe;

	if (l->tstate_cframe == PY_OFF_NONE) {
		*frame = u64_at(ts, l->cframe_current_frame);
		return PY_STACK_COMPLETE;
	}
	cframe = u64_at(ts, l->tstate_cframe);
	if (!py_ptr_ok(cframe))
		return PY_STACK_TORN;
	return rd(p, cframe + l->cframe_current_frame, frame, 8) ? PY_STACK_COMPLETE : PY_STACK_UNREADABLE;
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

/*
 * Walks the chain from FRAME (whose header is in BUF[0]). Each step reads
 * the code object of this frame and the header of the previous frame in
 * one call of the reader: one system call per frame once the code objects
 * are cached.
 */
static size_t walk(struct py_proc *p, uint64_t frame, uint8_t (*buf)[PY_HDR_MAX], struct py_frame *out,
		   size_t max, enum py_status *status)
{
	const struct py_layout *l = &p->t.l;
	uint8_t code_hdr[PY_HDR_MAX];
	uint8_t max_owner = l->owned_by_cstack != PY_OWNER_NONE ? (uint8_t)l->owned_by_cstack : 2;
	size_t n = 0, run = 0, cur = 0;
	bool empty_above = false;

	seen_reset(p);
	for (size_t depth = 0;; depth++) {
		const uint8_t *f = buf[cur];
		uint64_t code = u64_at(f, l->frame_code), prev = u64_at(f, l->frame_previous);
		uint8_t owner = f[l->frame_owner];
		struct py_read r[2] = {
			{ code, code_hdr, p->t.hdr_code },
			{ prev, buf[!cur], p->t.hdr_frame },
		};
		size_t want = prev ? 2 : 1;
		struct py_code *c;
		int got;

		if (depth == PY_MAX_DEPTH) {
			*status = PY_STACK_TOO_DEEP;
			return n;
		}
		if (!seen_add(p, frame) || owner > max_owner || (prev && !py_ptr_ok(prev))) {
			*status = PY_STACK_TORN;
			return n;
		}
		if (owner == l->owned_by_cstack) {
			/* a shim: the frame above it was the first of its eval loop */
			if (run)
				out[n - 1].flags |= PY_FRAME_ENTRY;
			else if (n == 0 && !empty_above)
				empty_above = true;
			else
				goto torn;      /* two shims in a row never happen */
			run = 0;
			got = prev && paged_read(p, &r[1], 1) == 1 ? 2 : 1;
		} else {
			if (!py_ptr_ok(code))
				goto torn;
			got = paged_read(p, r, want);
			if (got < 1) {
				*status = PY_STACK_UNREADABLE;
				return n;
			}
			if ((*status = py_code_get(p->codes, &p->t, code, code_hdr, &c)) != PY_STACK_COMPLETE)
				return n;
			if (n == max) {
				*status = PY_STACK_TOO_DEEP;
				return n;
			}
			out[n] = (struct py_frame){
				.qualname = c->qualname,
				.filename = c->filename,
				.firstlineno = (uint32_t)c->firstlineno,
				.line = line_of(p, c, u64_at(f, l->frame_instr) - (code + l->code_adaptive)),
				.code = code,
			};
			if (n == 0 && empty_above)
				out[n].flags |= PY_FRAME_EMPTY_RUN_ABOVE;
			if (owner == 1)         /* FRAME_OWNED_BY_GENERATOR in 3.11-3.13 */
				out[n].flags |= PY_FRAME_GENERATOR;
			if (l->frame_is_entry != PY_OFF_NONE && f[l->frame_is_entry]) {
				out[n].flags |= PY_FRAME_ENTRY;
				run = 0;
			} else {
				run++;
			}
			n++;
		}
		if (!prev) {
			*status = PY_STACK_COMPLETE;
			return n;
		}
		if (got < 2) {
			*status = PY_STACK_UNREADABLE;
			return n;
		}
		frame = prev;
		cur = !cur;
	}
torn:
	*status = PY_STACK_TORN;
	return n;
}

size_t py_read_stack(struct py_proc *p, int32_t tid, struct py_frame *out, size_t max,
		     enum py_status *status)
{
	uint8_t ts[PY_HDR_MAX], buf[2][PY_HDR_MAX];
	uint64_t tstate, frame = 0;
	size_t n = 0;

	if (!p) {
		*status = PY_STACK_UNSUPPORTED;
		return 0;
	}
	pages_reset(p);
	py_codes_begin_read(p->codes);
	*status = find_tstate(p, tid, ts, &tstate);
	if (*status == PY_STACK_COMPLETE)
		*status = current_frame(p, ts, &frame);
	if (*status == PY_STACK_COMPLETE && frame) {
		if (!py_ptr_ok(frame))
			*status = PY_STACK_TORN;
		else if (!rd(p, frame, buf[0], p->t.hdr_frame))
			*status = PY_STACK_UNREADABLE;
		else
			n = walk(p, frame, buf, out, max, status);
	}
	p->counts[*status]++;
	return n;
}
