// SPDX-License-Identifier: MIT
/*
 * --frames: how a process that ran Python code is shown. The recorded
 * stacks keep every frame; a report folds them into a view, once, before
 * any writer reads them, so that every format, the tables' self times and
 * the header agree on one set of stacks.
 *
 *   all     every frame as recorded
 *   mixed   in a sample with a Python frame, the frames above the
 *           outermost Python frame (_start ... PyEval_EvalCode) are left
 *           out and the interpreter's own frames (its executable or
 *           libpython) fold into the nearest frame above them that stays:
 *           the Python function they run, or the extension function that
 *           called back into the interpreter. What is neither Python nor
 *           the interpreter (extension modules, libraries, the kernel)
 *           stays where it was called.
 *   python  Python frames alone: whatever runs below a Python frame is
 *           its self time, as cProfile and py-spy count it; a sample of
 *           such a process with no Python frame is one frame, [native].
 *
 * A sample without a Python frame keeps its native stack in mixed, and so
 * does every sample of a process that never ran Python code in all three
 * views: a native profile is left as it is.
 */
#include "report.h"

#include <errno.h>
#include <string.h>

#include "base/base.h"
#include "model.h"

static const struct name_value frames_names[] = {
	{ "mixed", REPORT_FRAMES_MIXED },
	{ "python", REPORT_FRAMES_PYTHON },
	{ "all", REPORT_FRAMES_ALL },
};

int report_frames_parse(const char *s, enum report_frames *out)
{
	int v = name_lookup(frames_names, ARRAY_SIZE(frames_names), s);

	if (v < 0)
		return -EINVAL;
	*out = (enum report_frames)v;
	return 0;
}

const char *report_frames_name(enum report_frames how)
{
	for (size_t i = 0; i < ARRAY_SIZE(frames_names); i++)
		if (frames_names[i].value == (int)how)
			return frames_names[i].name;
	return "?";
}

/* "python3.11", "python3.13t", "libpython3.12.so.1.0", "libpython3.11d.so": CPython's own file names. */
static bool interpreter_name(const char *module)
{
	if (!strncmp(module, "lib", 3))
		module += 3;
	return !strncmp(module, "python", 6) && module[6] >= '2' && module[6] <= '9' &&
	       module[7] == '.';
}

bool *report_interpreter_funcs(const struct profile *p)
{
	bool *interp = xcalloc(p->nr_funcs + 1, sizeof(*interp));

	/* by name, for profiles whose meta does not say (older files, an interpreter not read) */
	for (size_t f = 0; f < p->nr_funcs; f++)
		interp[f] = p->funcs[f].module && interpreter_name(p->funcs[f].module);

	for (size_t i = 0; i < p->meta.nr_pythons; i++) {
		const char *file = p->meta.pythons[i].interpreter, *base;

		if (!file)
			continue;
		base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
		for (size_t f = 0; f < p->nr_funcs; f++)
			interp[f] |= p->funcs[f].module && !strcmp(p->funcs[f].module, base);
	}
	return interp;
}

/* The view's stack table, built as the samples need its nodes. */
struct builder {
	struct profile_stack *stacks;
	size_t nr, alloc;
	struct idx index;
};

static uint32_t add_node(struct builder *b, uint32_t parent, uint32_t loc)
{
	uint64_t h = hash_combine(hash_u64(parent), loc);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&b->index, h, &pos)) != IDX_NONE)
		if (b->stacks[id].parent == parent && b->stacks[id].loc == loc)
			return id;
	ALLOC_GROW(b->stacks, b->nr + 1, b->alloc);
	id = (uint32_t)b->nr++;
	b->stacks[id] = (struct profile_stack){
		parent, loc, parent == PROFILE_NONE ? 1 : b->stacks[parent].depth + 1
	};
	idx_insert(&b->index, h, id);
	return id;
}

/* What a recorded stack node becomes: its stack copied as it is, or folded. */
enum { NEED_SAME = 1, NEED_FOLD = 2 };

struct fold {
	const struct profile *p;
	enum report_frames how;
	bool *interp;           /* per function: the interpreter's own */
	bool *has_py;           /* per stack node: a Python frame on its path from the root */
	uint8_t *need;          /* per stack node: NEED_* of the samples below it */
	uint32_t *same, *folded; /* per stack node: its node in the view, each way */
	struct builder b;
};

/* Marks NODE and its ancestors as needed WAY, up to the first already marked so. */
static void mark(struct fold *x, uint32_t node, uint8_t way)
{
	for (; node != PROFILE_NONE && !(x->need[node] & way); node = x->p->stacks[node].parent)
		x->need[node] |= way;
}

/* Whether the frame of node N is dropped from a folded stack (its time goes to its parent). */
static bool folds_away(const struct fold *x, uint32_t n)
{
	const struct profile *p = x->p;
	uint32_t f = p->locs[p->stacks[n].loc].func;

	if (profile_func_is_python(&p->funcs[f]))
		return false;
	if (!x->has_py[n])
		return true;        /* the start-up chain above the first Python frame */
	return x->how == REPORT_FRAMES_PYTHON || x->interp[f];
}

/* The view's nodes of every needed recorded node; parents come before their children. */
static void build_nodes(struct fold *x)
{
	const struct profile *p = x->p;

	for (size_t n = 0; n < p->nr_stacks; n++) {
		uint32_t parent = p->stacks[n].parent, loc = p->stacks[n].loc;

		if (x->need[n] & NEED_SAME)
			x->same[n] = add_node(&x->b, parent == PROFILE_NONE ? PROFILE_NONE : x->same[parent], loc);
		if (x->need[n] & NEED_FOLD) {
			uint32_t up = parent == PROFILE_NONE ? PROFILE_NONE : x->folded[parent];

			x->folded[n] = folds_away(x, (uint32_t)n) ? up : add_node(&x->b, up, loc);
		}
	}
}

/* Adds the function [native] and a location in it to V's copies of the tables. */
static uint32_t native_loc(struct report_frames_view *v)
{
	struct profile *q = &v->view;

	v->funcs = xmalloc(st_mult(q->nr_funcs + 1, sizeof(*v->funcs)));
	memcpy(v->funcs, q->funcs, q->nr_funcs * sizeof(*v->funcs));
	v->funcs[q->nr_funcs] = (struct profile_func){ (char *)REPORT_FRAMES_NATIVE,
						       (char *)REPORT_FRAMES_NATIVE, NULL, 0 };
	v->locs = xmalloc(st_mult(q->nr_locs + 1, sizeof(*v->locs)));
	memcpy(v->locs, q->locs, q->nr_locs * sizeof(*v->locs));
	v->locs[q->nr_locs] = (struct profile_loc){ (uint32_t)q->nr_funcs, 0 };
	q->funcs = v->funcs;
	q->alloc_funcs = ++q->nr_funcs;
	q->locs = v->locs;
	q->alloc_locs = ++q->nr_locs;
	return (uint32_t)q->nr_locs - 1;
}

/* Per stack node of P: whether a Python frame is on its path from the root. An array to free. */
static bool *python_stacks(const struct profile *p)
{
	bool *has_py = xcalloc(p->nr_stacks + 1, sizeof(*has_py));

	for (size_t n = 0; n < p->nr_stacks; n++) {
		uint32_t parent = p->stacks[n].parent;

		has_py[n] = profile_func_is_python(&p->funcs[p->locs[p->stacks[n].loc].func]) ||
			    (parent != PROFILE_NONE && has_py[parent]);
	}
	return has_py;
}

/* How sample S's stack is shown: NEED_FOLD, NEED_SAME, or 0 for [native]. */
static uint8_t sample_way(const struct fold *x, const bool *py_proc, const struct profile_sample *s)
{
	if (x->has_py[s->stack])
		return NEED_FOLD;
	if (x->how == REPORT_FRAMES_MIXED || !py_proc[x->p->threads[s->thread].process])
		return NEED_SAME;
	return 0;
}

/* Per process of P: whether one of its samples has a Python frame. NULL when none has. */
static bool *python_procs(const struct profile *p, const bool *has_py)
{
	bool *proc = xcalloc(p->nr_procs + 1, sizeof(*proc)), any = false;

	for (size_t i = 0; i < p->nr_samples; i++) {
		if (has_py[p->samples[i].stack]) {
			proc[p->threads[p->samples[i].thread].process] = true;
			any = true;
		}
	}
	if (!any) {
		free(proc);
		return NULL;
	}
	return proc;
}

bool report_has_python_frames(const struct profile *p)
{
	bool *has_py = python_stacks(p), any = false;

	for (size_t i = 0; i < p->nr_samples && !any; i++)
		any = has_py[p->samples[i].stack];
	free(has_py);
	return any;
}

const struct profile *report_frames_init(struct report_frames_view *v, const struct profile *p,
					 enum report_frames how)
{
	struct fold x = { .p = p, .how = how, .b.index = IDX_INIT };
	uint32_t native = PROFILE_NONE;
	bool *py_proc;

	memset(v, 0, sizeof(*v));
	/* a recording still spilled to disk is for writing, not for reports */
	if (!p || how == REPORT_FRAMES_ALL || p->spill)
		return p;
	x.has_py = python_stacks(p);
	py_proc = python_procs(p, x.has_py);
	if (!py_proc) {
		free(x.has_py);
		return p;
	}
	v->view = *p;
	v->view.recorded = p;
	x.interp = report_interpreter_funcs(p);
	x.need = xcalloc(p->nr_stacks + 1, 1);
	x.same = xcalloc(p->nr_stacks + 1, sizeof(*x.same));
	x.folded = xcalloc(p->nr_stacks + 1, sizeof(*x.folded));
	v->samples = xmalloc(st_mult(p->nr_samples + 1, sizeof(*v->samples)));
	memcpy(v->samples, p->samples, p->nr_samples * sizeof(*v->samples));
	for (size_t i = 0; i < p->nr_samples; i++) {
		uint8_t way = sample_way(&x, py_proc, &p->samples[i]);

		if (way)
			mark(&x, p->samples[i].stack, way);
		else if (native == PROFILE_NONE)
			native = native_loc(v);
	}
	build_nodes(&x);
	if (native != PROFILE_NONE)
		native = add_node(&x.b, PROFILE_NONE, native);
	for (size_t i = 0; i < p->nr_samples; i++) {
		uint32_t leaf = p->samples[i].stack;

		switch (sample_way(&x, py_proc, &p->samples[i])) {
		case NEED_FOLD:
			v->samples[i].stack = x.folded[leaf];
			break;
		case NEED_SAME:
			v->samples[i].stack = x.same[leaf];
			break;
		default:
			v->samples[i].stack = native;
		}
	}
	v->stacks = x.b.stacks;
	v->view.stacks = x.b.stacks;
	v->view.nr_stacks = v->view.alloc_stacks = x.b.nr;
	v->view.samples = v->samples;
	v->view.alloc_samples = p->nr_samples;
	/* the view is read, never added to: it has no indexes of its own */
	v->view.func_idx = v->view.loc_idx = v->view.stack_idx = (struct idx)IDX_INIT;
	idx_release(&x.b.index);
	free(x.folded);
	free(x.same);
	free(x.need);
	free(x.interp);
	free(py_proc);
	free(x.has_py);
	v->folded = true;
	return &v->view;
}

void report_frames_release(struct report_frames_view *v)
{
	free(v->stacks);
	free(v->samples);
	free(v->funcs);
	free(v->locs);
	memset(v, 0, sizeof(*v));
}
