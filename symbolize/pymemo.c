// SPDX-License-Identifier: MIT
/*
 * A thread's last stack read whole from a capture, for its next capture.
 *
 * Sample after sample of a thread in a loop, the capture holds the same
 * frames with the same code objects, links and owners; only the innermost
 * frame's instruction pointer moves. The walk (pywalk.c) would find the
 * same frames, flags and code objects again: what it found is kept here,
 * and a capture whose frames match it field for field takes it, with each
 * frame's line worked out from its own instruction pointer. The code
 * objects must all match the headers the capture copied at the sample,
 * or, where it copied none, have been checked within PY_CODE_RECHECK_NS,
 * as the walk asks; else the walk is made, and checks them.
 *
 * Measured on bench/pyspin.py (six Python frames): of the 1,987 samples
 * of the drain thread's own profile, 337 were the walk.
 */
#include "pyproc.h"

#include <stdlib.h>

#include "base/base.h"

/* What the walk reads of a captured frame (walk_frames). */
struct memo_node {
	uint64_t addr, code, prev;
	uint8_t owner, entry;
	bool after;             /* a shim below the sample's stack pointer (after_sample) */
};

/* A frame the walk found: its code object, flags, and the capture's frame it came from. */
struct memo_frame {
	uint64_t code;
	uint32_t flags;
	uint32_t node;
};

struct py_stack_memo {
	uint64_t tstate, first, cframe;
	size_t max;
	uint32_t nr_nodes, nr_frames, nr_bounds;
	struct memo_node nodes[PY_CAPTURE_NODES];
	struct memo_frame frames[PY_CAPTURE_NODES];
	uint64_t bounds[PY_BOUNDS];
};

/* Frame I of capture CAP, as the walk reads it (the stack copy US for a shim's place). */
static struct memo_node node_at(const struct py_proc *p, const struct py_capture *cap, size_t i,
				const struct py_ustack *us)
{
	const struct py_layout *l = &p->t.l;
	const uint8_t *node = cap->nodes + i * cap->stride, *f = node + 8;
	struct memo_node m = {
		.addr = u64_at(node, 0),
		.code = u64_at(f, l->frame_code),
		.prev = u64_at(f, l->frame_previous),
		.owner = f[l->frame_owner],
		.entry = l->frame_is_entry != PY_OFF_NONE ? f[l->frame_is_entry] : 0,
	};

	/* only a shim's place decides anything (walk_frames) */
	if (m.owner == l->owned_by_cstack)
		m.after = us && m.addr < us->sp && us->sp - m.addr < (1u << 20);
	return m;
}

static bool same_node(const struct memo_node *a, const struct memo_node *b)
{
	return a->addr == b->addr && a->code == b->code && a->prev == b->prev && a->owner == b->owner &&
	       a->entry == b->entry && a->after == b->after;
}

void py_memo_free(struct py_stack_memo *m)
{
	free(m);
}

size_t py_memo_reuse(struct py_proc *p, const struct py_stack_memo *m, const struct py_capture *cap,
		     const struct py_ustack *us, uint64_t cframe, struct py_frame *out, size_t max)
{
	const struct py_layout *l = &p->t.l;

	if (!m || !m->nr_frames || m->tstate != cap->tstate || m->first != cap->first || m->cframe != cframe ||
	    m->max != max || m->nr_nodes != cap->nr || m->nr_bounds != p->nr_bounds ||
	    memcmp(m->bounds, p->bounds, p->nr_bounds * sizeof(*p->bounds)))
		return 0;
	for (size_t i = 0; i < cap->nr; i++) {
		struct memo_node nd = node_at(p, cap, i, us);

		if (!same_node(&nd, &m->nodes[i]))
			return 0;
	}
	for (size_t k = 0; k < m->nr_frames; k++) {
		const struct memo_frame *mf = &m->frames[k];
		const uint8_t *hdr = py_cap_code(cap, mf->node, mf->code);
		struct py_code *c = hdr ? py_code_matching(p->codes, &p->t, mf->code, hdr) :
					  py_code_recent(p->codes, mf->code);
		uint64_t instr;

		if (!c)
			return 0;
		instr = u64_at(cap->nodes + mf->node * cap->stride + 8, l->frame_instr);
		out[k] = (struct py_frame){
			.qualname = c->qualname,
			.filename = c->filename,
			.firstlineno = (uint32_t)c->firstlineno,
			.line = py_line_of(p, c, instr - (mf->code + l->code_adaptive)),
			.flags = mf->flags,
			.code = mf->code,
		};
	}
	return m->nr_frames;
}

void py_memo_keep(struct py_proc *p, struct py_stack_memo **mp, const struct py_capture *cap,
		  const struct py_ustack *us, uint64_t cframe, const struct py_frame *out, size_t n, size_t max)
{
	struct py_stack_memo *m = *mp;

	if (!n || n > PY_CAPTURE_NODES || cap->nr >= PY_CAPTURE_NODES) {
		if (m)
			m->nr_frames = 0;
		return;
	}
	if (!m)
		m = *mp = xmalloc(sizeof(*m));
	m->nr_frames = 0;
	m->tstate = cap->tstate;
	m->first = cap->first;
	m->cframe = cframe;
	m->max = max;
	m->nr_nodes = (uint32_t)cap->nr;
	for (size_t i = 0; i < cap->nr; i++)
		m->nodes[i] = node_at(p, cap, i, us);
	m->nr_bounds = (uint32_t)p->nr_bounds;
	memcpy(m->bounds, p->bounds, p->nr_bounds * sizeof(*p->bounds));
	for (size_t k = 0; k < n; k++) {
		if (!p->walked[k].captured || p->walked[k].node >= cap->nr || p->walked[k].code != out[k].code)
			return;
		m->frames[k] = (struct memo_frame){ out[k].code, out[k].flags, p->walked[k].node };
	}
	m->nr_frames = (uint32_t)n;
}
