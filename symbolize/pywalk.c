// SPDX-License-Identifier: MIT
/*
 * The CPython reader's walk of one thread's stack: its frames, then the
 * code objects of them all in one batched read; and what the sample's own
 * copy of the C stack tells of where the walk starts and where each
 * evaluation loop's run began.
 */
#include "pyproc.h"

#include "base/base.h"

/* The slot of KEY in the walk's set: its own, or the empty one where it goes. */
static struct seen_slot *seen_find(struct py_proc *p, uint64_t key)
{
	size_t i = hash_u64(key) & p->seen_mask;

	while (p->seen[i].gen == p->gen && p->seen[i].key != key)
		i = (i + 1) & p->seen_mask;
	return &p->seen[i];
}

/* Room in the walk's set for one more key, the set at most half full after it. */
static void seen_room(struct py_proc *p)
{
	size_t slots = p->seen ? p->seen_mask + 1 : 0, n = slots ? slots * 2 : SEEN_FIRST;
	struct seen_slot *old = p->seen;

	if ((p->seen_n + 1) * 2 <= slots)
		return;
	p->seen = xcalloc(n, sizeof(*p->seen));
	p->seen_mask = n - 1;
	for (size_t i = 0; i < slots; i++)
		if (old[i].gen == p->gen)
			*seen_find(p, old[i].key) = old[i];
	free(old);
}

/* Adds KEY to the walk's set; false when it was there already (a frame: a loop). */
static bool seen_add(struct py_proc *p, uint64_t key, struct seen_slot **slot)
{
	struct seen_slot *s;

	seen_room(p);
	s = seen_find(p, key);
	*slot = s;
	if (s->gen == p->gen)
		return false;
	*s = (struct seen_slot){ key, p->gen, 0 };
	p->seen_n++;
	return true;
}

/* Empties the walk's set. */
static void seen_reset(struct py_proc *p)
{
	p->seen_n = 0;
	if (++p->gen == 0) {
		if (p->seen)
			memset(p->seen, 0, (p->seen_mask + 1) * sizeof(*p->seen));
		p->gen = 1;
	}
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
bool py_frame_at_sample(struct py_proc *p, const struct py_ustack *us, uint64_t cframe, uint64_t *frame)
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
		p->code_state = xrealloc(p->code_state, st_mult(p->codes_alloc, sizeof(*p->code_state)));
		p->code_todo = xrealloc(p->code_todo, st_mult(p->codes_alloc, sizeof(*p->code_todo)));
		p->code_reads = xrealloc(p->code_reads, st_mult(p->codes_alloc, sizeof(*p->code_reads)));
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
 * Range R as it was at the sample, when the sample holds it: a frame of the
 * capture (p->cap), or a frame on the C stack (3.12's shims) in the stack
 * copy. False when neither does (and then, with a capture, the read is
 * marked as gone past it).
 */
bool py_from_copy(struct py_proc *p, const struct py_read *r)
{
	const struct py_ustack *us = p->us;
	const struct py_capture *cap = p->cap;

	/*
	 * A frame the capture holds: the next one the walk wants, its nodes
	 * being the chain in order, or else another (a shim read out of
	 * turn); none once the walk has gone past them all
	 */
	if (cap && r->len <= p->t.hdr_frame && p->cap_next < cap->nr) {
		for (size_t k = 0; k < cap->nr; k++) {
			size_t i = (p->cap_next + k) % cap->nr;
			const uint8_t *node = cap->nodes + i * cap->stride;

			if (u64_at(node, 0) == r->addr) {
				memcpy(r->buf, node + 8, r->len);
				p->cap_next = i + 1;
				return true;
			}
		}
	}
	if (!us || r->addr < us->sp || r->len > us->size || r->addr - us->sp > us->size - r->len) {
		/* read now: the capture fell short (a stack deeper than it copies) */
		p->cap_short |= p->cap != NULL;
		return false;
	}
	memcpy(r->buf, us->data + (r->addr - us->sp), r->len);
	/* (a frame the capture did not hold: the thread's memo does not keep such a stack) */
	p->cap_us |= cap != NULL;
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
	size_t n = 0, run = 0, cur = 0, taken;
	/* the first frame's header came from the capture when it took the capture's first node */
	bool empty_above = false, captured = p->cap && p->cap_next == 1;
	uint32_t node = 0;
	struct seen_slot *slot;

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
		if (!seen_add(p, frame, &slot) || owner > max_owner || (prev && !py_ptr_ok(prev)))
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
			p->walked[n++] = (struct walked){ code, u64_at(f, l->frame_instr), flags, 0, node, captured };
		}
		if (!prev) {
			*status = PY_STACK_COMPLETE;
			return n;
		}
		taken = p->cap_next;
		if (!py_from_copy(p, &r) && py_pages_read(&p->pages, &p->t, &r, 1, FRAME_PAGES_BELOW) != 1) {
			*status = PY_STACK_UNREADABLE;
			return n;
		}
		captured = p->cap_next != taken;
		node = captured ? (uint32_t)p->cap_next - 1 : 0;
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
	struct seen_slot *s;

	if (seen_add(p, code, &s)) {
		s->val = (uint32_t)*nc;
		p->code_addr[(*nc)++] = code;
	}
	return s->val;
}

/*
 * Reads the headers of the N walked frames' distinct code objects that
 * the capture did not copy and that were not checked lately
 * (py_code_recent), all in as few calls of the
 * reader as ranges that fail allow (a range that fails stops a call; the
 * next goes on after it). Sets each frame's code_idx and each code
 * object's code_state; returns the number of distinct code objects.
 */
static size_t read_codes(struct py_proc *p, size_t n)
{
	struct py_read *r = p->code_reads;
	uint32_t *idx = p->code_todo;
	size_t nc = 0, nr = 0, done = 0;

	/* the walk is over: its set of frames becomes one of code objects (a recursion repeats one) */
	seen_reset(p);
	for (size_t i = 0; i < n; i++) {
		struct walked *w = &p->walked[i];

		w->code_idx = i && w->code == w[-1].code ? w[-1].code_idx : code_index(p, w->code, &nc);
	}
	/*
	 * those whose headers the capture copied at the sample, cached as
	 * they were then: no read. One the cache does not hold so is read
	 * now, as without a capture: its names are read now, and may be gone
	 * with it (a module's body once imported), what a header read now
	 * tells.
	 */
	for (size_t i = 0; i < nc; i++)
		p->code_state[i] = CODE_UNREAD;
	for (size_t i = 0; i < n; i++) {
		const struct walked *w = &p->walked[i];
		const uint8_t *hdr = w->captured ? py_cap_code(p->cap, w->node, w->code) : NULL;

		if (hdr && p->code_state[w->code_idx] == CODE_UNREAD && py_code_matching(p->codes, &p->t, w->code, hdr)) {
			memcpy(p->code_hdr[w->code_idx], hdr, p->t.hdr_code);
			p->code_state[w->code_idx] = CODE_CAPTURED;
			p->code_from_cap++;
		}
	}
	for (size_t c = 0; c < nc; c++) {
		size_t k = 0;

		if (p->code_state[c] == CODE_CAPTURED)
			continue;
		if (py_code_recent(p->codes, p->code_addr[c])) {
			p->code_state[c] = CODE_RECENT;
			continue;
		}
		/* read with the thread's pages already */
		while (k < p->nr_spec && p->spec_addr[k] != p->code_addr[c])
			k++;
		if (k < p->nr_spec && p->spec_ok[k]) {
			memcpy(p->code_hdr[c], p->spec_hdr[k], p->t.hdr_code);
			p->code_state[c] = CODE_READ;
			p->code_read++;
			continue;
		}
		idx[nr] = (uint32_t)c;
		r[nr++] = (struct py_read){ p->code_addr[c], p->code_hdr[c], p->t.hdr_code };
	}
	p->code_read += nr;
	while (done < nr) {
		int got = p->t.read(p->t.read_arg, r + done, nr - done);

		if (got < 0)
			got = 0;
		for (size_t k = 0; k < (size_t)got; k++)
			p->code_state[idx[done + k]] = CODE_READ;
		done += (size_t)got;
		if (done < nr)
			p->code_state[idx[done++]] = CODE_UNREADABLE;
	}
	/* the names and line tables of those that are new or changed, together (IDX is done) */
	nr = 0;
	for (size_t c = 0; c < nc; c++)
		if (p->code_state[c] == CODE_READ || p->code_state[c] == CODE_CAPTURED)
			p->code_todo[nr++] = (uint32_t)c;
	p->new_codes = py_codes_prefetch(p->codes, &p->t, p->code_addr, (const uint8_t (*)[PY_HDR_MAX])p->code_hdr,
					 p->code_todo, nr) > 0;
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
size_t py_walk(struct py_proc *p, uint64_t frame, uint8_t (*buf)[PY_HDR_MAX], struct py_frame *out, size_t max,
	       enum py_status *status)
{
	const struct py_layout *l = &p->t.l;
	enum py_status walk_status, code_status;
	size_t n, k = 0;
	bool trusted = false;

	scratch_grow(p, max < PY_MAX_DEPTH ? max + 1 : PY_MAX_DEPTH + 1);
	p->walk_exact = false;
	n = walk_frames(p, frame, buf, max, &walk_status);
	if (n)
		read_codes(p, n);
	for (size_t i = 0; i < n; i++) {
		const struct walked *w = &p->walked[i];
		struct py_code *c = NULL;

		if (p->code_state[w->code_idx] == CODE_UNREADABLE)
			code_status = PY_STACK_UNREADABLE;
		else if (p->code_state[w->code_idx] == CODE_RECENT)
			code_status = (c = py_code_recent(p->codes, w->code)) ? PY_STACK_COMPLETE : PY_STACK_TORN;
		else
			code_status = py_code_get(p->codes, &p->t, w->code, p->code_hdr[w->code_idx],
						  p->code_state[w->code_idx] == CODE_CAPTURED, &c);
		/*
		 * The frame is the sample's own, from its capture, and its code
		 * object cannot be checked now: freed since the sample (a
		 * module's body once imported, a script's once the interpreter
		 * finalizes: mimalloc writes over its type) or gone with its
		 * process (a short-lived worker whose samples are drained after
		 * it exits). What the cache found at that address within
		 * PY_CODE_TRUST_NS is what the frame ran; not where the
		 * capture copied the code object's header, which said it
		 * was another.
		 */
		if ((code_status == PY_STACK_TORN || code_status == PY_STACK_UNREADABLE) && w->captured &&
		    !py_cap_code(p->cap, w->node, w->code) && (c = py_code_trusted(p->codes, w->code))) {
			code_status = PY_STACK_COMPLETE;
			trusted = true;
		}
		if (code_status != PY_STACK_COMPLETE && w->captured &&
		    (code_status == PY_STACK_TORN || code_status == PY_STACK_UNREADABLE)) {
			/*
			 * The same, with nothing cached for it lately: it is left
			 * out, and the frames around it stay. Where it began its
			 * loop's run, so does the frame inside it.
			 */
			if (k && (w->flags & PY_FRAME_ENTRY))
				out[k - 1].flags |= PY_FRAME_ENTRY;
			p->code_gone = true;
			continue;
		}
		if (code_status != PY_STACK_COMPLETE) {
			*status = code_status;
			p->code_failed = true;
			return k;
		}
		out[k++] = (struct py_frame){
			.qualname = c->qualname,
			.filename = c->filename,
			.firstlineno = (uint32_t)c->firstlineno,
			.line = py_line_of(p, c, w->instr - (w->code + l->code_adaptive)),
			.flags = w->flags,
			.code = w->code,
		};
	}
	*status = walk_status;
	/* each frame found is kept, its code object checked: the walk's outcome depends on nothing else */
	p->walk_exact = k == n && !trusted;
	return k;
}
