// SPDX-License-Identifier: MIT
/*
 * Groups of samples (--group-by module, comm, process, thread, state, rank,
 * host, and combinations of them), the --module filter's test, and the Python split
 * (--split): what share of the CPU went to Python code, to native code
 * Python called, and to native code outside Python.
 */
#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report.h"

static const char *const key_names[REPORT_GROUP_NR] = {
	[REPORT_GROUP_MODULE] = "module",
	[REPORT_GROUP_COMM] = "comm",
	[REPORT_GROUP_PROCESS] = "process",
	[REPORT_GROUP_THREAD] = "thread",
	[REPORT_GROUP_STATE] = "state",
	[REPORT_GROUP_RANK] = "rank",
	[REPORT_GROUP_HOST] = "host",
};

const char *report_group_key_name(enum report_group_key key)
{
	return key < REPORT_GROUP_NR ? key_names[key] : "?";
}

int report_group_by_parse(const char *s, struct report_group_by *out, const char **bad,
			  size_t *bad_len)
{
	struct report_group_by by = { .nr = 0 };

	for (const char *c = s;; c++) {
		size_t len = strcspn(c, ",");
		size_t k = 0;

		if (bad) {
			*bad = c;
			*bad_len = len;
		}
		if (!len)
			return -ENODATA;
		while (k < REPORT_GROUP_NR && (strlen(key_names[k]) != len || strncmp(c, key_names[k], len)))
			k++;
		if (k == REPORT_GROUP_NR)
			return -EINVAL;
		for (size_t i = 0; i < by.nr; i++)
			if (by.keys[i] == k)
				return -EEXIST;
		by.keys[by.nr++] = k;
		c += len;
		if (!*c)
			break;
	}
	*out = by;
	return 0;
}

const char *report_func_module(const struct profile_func *f)
{
	return f->module && *f->module ? f->module : "[unknown]";
}

/* ---- the Python split ---- */

/* What a stack node says of its samples; the process decides between outside and none. */
enum { STACK_NO_PYTHON, STACK_PY_CODE, STACK_PY_NATIVE };

struct report_pysplit {
	uint8_t *stack;         /* per stack node: STACK_* */
	bool *proc;             /* per process: some sample has a Python frame */
	bool any;
};

struct report_pysplit *report_pysplit_new(const struct profile *view)
{
	/* a sample's class is what its recorded stack ran, in every view */
	const struct profile *p = view->recorded ? view->recorded : view;
	struct report_pysplit *s = xcalloc(1, sizeof(*s));
	bool *interp = report_interpreter_funcs(p);
	bool *has_py = xcalloc(p->nr_stacks + 1, sizeof(*has_py));

	s->stack = xcalloc(p->nr_stacks + 1, sizeof(*s->stack));
	s->proc = xcalloc(p->nr_procs + 1, sizeof(*s->proc));
	/* parents come before their children */
	for (size_t n = 0; n < p->nr_stacks; n++) {
		uint32_t f = p->locs[p->stacks[n].loc].func, parent = p->stacks[n].parent;
		bool above = parent != PROFILE_NONE && has_py[parent];

		if (profile_func_is_python(&p->funcs[f]))
			s->stack[n] = STACK_PY_CODE;
		else if (above)
			s->stack[n] = interp[f] ? STACK_PY_CODE : STACK_PY_NATIVE;
		else
			s->stack[n] = STACK_NO_PYTHON;
		has_py[n] = s->stack[n] != STACK_NO_PYTHON;
	}
	for (size_t i = 0; i < p->nr_samples; i++) {
		if (s->stack[p->samples[i].stack] != STACK_NO_PYTHON) {
			s->proc[p->threads[p->samples[i].thread].process] = true;
			s->any = true;
		}
	}
	free(has_py);
	free(interp);
	return s;
}

void report_pysplit_free(struct report_pysplit *s)
{
	if (!s)
		return;
	free(s->stack);
	free(s->proc);
	free(s);
}

bool report_pysplit_any(const struct report_pysplit *s)
{
	return s->any;
}

enum report_pyclass report_pysplit_class(const struct report_pysplit *s, const struct profile *view,
					 size_t sample)
{
	const struct profile *p = view->recorded ? view->recorded : view;
	uint32_t thread = p->samples[sample].thread;

	switch (s->stack[p->samples[sample].stack]) {
	case STACK_PY_CODE:
		return REPORT_PY_CODE;
	case STACK_PY_NATIVE:
		return REPORT_PY_NATIVE;
	default:
		return s->proc[p->threads[thread].process] ? REPORT_PY_OUTSIDE : REPORT_PY_NONE;
	}
}

struct report_split_row *report_row_splits(const struct profile *p, const struct report_pysplit *s,
					   const bool *keep, bool by_line)
{
	size_t nr_rows = by_line ? p->nr_locs : p->nr_funcs;
	struct report_split_row *rows = xcalloc(nr_rows + 1, sizeof(*rows));
	struct report_split_row *node = xcalloc(p->nr_stacks + 1, sizeof(*node));
	uint32_t *stamp = xcalloc(nr_rows + 1, sizeof(*stamp));
	bool *used = xcalloc(p->nr_stacks + 1, sizeof(*used));

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *sm = &p->samples[i];

		if (keep && !keep[i])
			continue;
		node[sm->stack].n[report_pysplit_class(s, p, i)]++;
		used[sm->stack] = true;
	}
	for (size_t n = 0; n < p->nr_stacks; n++) {
		if (!used[n])
			continue;
		/* a recursive function is on the stack several times but counts once */
		for (uint32_t a = n; a != PROFILE_NONE; a = p->stacks[a].parent) {
			uint32_t r = report_row_of(p, a, by_line);

			if (stamp[r] == n + 1)
				continue;
			stamp[r] = n + 1;
			for (size_t c = 0; c < REPORT_PY_NR; c++)
				rows[r].n[c] += node[n].n[c];
		}
	}
	free(used);
	free(stamp);
	free(node);
	return rows;
}

bool *report_funcs_in_module(const struct profile *p, const char *name, bool *any)
{
	bool *in = xcalloc(p->nr_funcs + 1, sizeof(*in));

	for (size_t f = 0; f < p->nr_funcs; f++)
		in[f] = !strcmp(report_func_module(&p->funcs[f]), name);
	*any = false;
	for (size_t i = 0; i < p->nr_samples && !*any; i++)
		*any = in[p->locs[p->stacks[p->samples[i].stack].loc].func];
	return in;
}

/* ---- groups ---- */

/* The index of string S (the profile's, kept as it is) in g->names, added on first use. */
static uint32_t name_id(struct report_groups *g, const char *s)
{
	return strtab_intern(&g->names, s);
}

static uint64_t values_hash(const struct report_groups *g, const uint32_t *v)
{
	uint64_t h = 0;

	for (size_t k = 0; k < g->by.nr; k++)
		h = hash_combine(h, v[k]);
	return h;
}

/* The row of the values V, added (all counts 0) on first use. */
static struct report_group *row_of(struct report_groups *g, const uint32_t *v)
{
	uint64_t h = values_hash(g, v);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&g->row_idx, h, &pos)) != IDX_NONE)
		if (!memcmp(g->rows[id].value, v, g->by.nr * sizeof(*v)))
			return &g->rows[id];
	ALLOC_GROW(g->rows, g->nr + 1, g->alloc);
	memset(&g->rows[g->nr], 0, sizeof(*g->rows));
	memcpy(g->rows[g->nr].value, v, g->by.nr * sizeof(*v));
	idx_insert(&g->row_idx, h, g->nr);
	return &g->rows[g->nr++];
}

/* The kept samples of one stack node in one thread and state, of one class. */
struct agg {
	uint32_t stack, thread;
	uint8_t state, cls;
	uint64_t n, ns;
};

static int agg_cmp(const void *a, const void *b)
{
	const struct agg *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->state != y->state)
		return x->state < y->state ? -1 : 1;
	return x->cls < y->cls ? -1 : x->cls > y->cls;
}

static struct agg *aggregate(const struct profile *p, const struct report_pysplit *ps,
			     const bool *keep, size_t *nr_out)
{
	struct agg *a = xmalloc(st_mult(p->nr_samples + 1, sizeof(*a)));
	size_t n = 0, out = 0;

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (!keep || keep[i])
			a[n++] = (struct agg){ s->stack, s->thread,
					       s->state < PROFILE_STATE_NR ? s->state : PROFILE_STATE_UNKNOWN,
					       (uint8_t)report_pysplit_class(ps, p, i), 1, s->weight_ns };
	}
	QSORT(a, n, agg_cmp);
	for (size_t i = 0; i < n; i++) {
		if (out && !agg_cmp(&a[out - 1], &a[i])) {
			a[out - 1].n += a[i].n;
			a[out - 1].ns += a[i].ns;
		} else {
			a[out++] = a[i];
		}
	}
	*nr_out = out;
	return a;
}

static void add_to(struct report_group *r, const struct agg *a, enum report_pyclass cls, bool self)
{
	r->cum += a->n;
	r->cum_ns += a->ns;
	r->split[cls] += a->n;
	if (self) {
		r->self += a->n;
		r->self_ns += a->ns;
	}
}

void report_groups_build(struct report_groups *g, const struct profile *p,
			 const struct report_group_by *by, const bool *keep)
{
	struct report_pysplit *ps = report_pysplit_new(p);
	uint32_t *fmod = xmalloc(st_mult(p->nr_funcs + 1, sizeof(*fmod)));
	uint32_t *mstamp, round = 0;
	size_t nr_agg, nr_mods, mk = SIZE_MAX;
	struct agg *agg = aggregate(p, ps, keep, &nr_agg);

	memset(g, 0, sizeof(*g));
	g->by = *by;
	g->wall = p->meta.mode && !strcmp(p->meta.mode, "wall");
	g->hosts = report_many_hosts(p);
	for (size_t k = 0; k < by->nr; k++)
		if (by->keys[k] == REPORT_GROUP_MODULE)
			mk = k;
	/* modules first: their ids are below nr_mods, and mstamp has a slot for each */
	for (size_t f = 0; f < p->nr_funcs; f++)
		fmod[f] = name_id(g, report_func_module(&p->funcs[f]));
	nr_mods = g->names.nr;
	mstamp = xcalloc(nr_mods + 1, sizeof(*mstamp));
	for (size_t i = 0; i < nr_agg; i++) {
		const struct agg *a = &agg[i];
		const struct profile_thread *th = &p->threads[a->thread];
		enum report_pyclass cls = a->cls;
		uint32_t v[REPORT_GROUP_NR] = { 0 }, leaf;

		for (size_t k = 0; k < by->nr; k++) {
			switch (by->keys[k]) {
			case REPORT_GROUP_COMM:
				v[k] = name_id(g, p->procs[th->process].comm ? p->procs[th->process].comm : "");
				break;
			case REPORT_GROUP_PROCESS:
				v[k] = th->process;
				break;
			case REPORT_GROUP_THREAD:
				v[k] = name_id(g, th->comm ? th->comm : "");
				break;
			case REPORT_GROUP_STATE:
				/* an on-CPU recording samples threads only while they run */
				v[k] = a->state == PROFILE_STATE_UNKNOWN && !g->wall ? PROFILE_STATE_ON_CPU : a->state;
				break;
			case REPORT_GROUP_RANK:
				/* none (PROFILE_RANK_NONE) as UINT32_MAX: after every rank, never rank 0 */
				v[k] = (uint32_t)p->procs[th->process].job.rank;
				break;
			case REPORT_GROUP_HOST:
				v[k] = name_id(g, report_process_host(p, th->process));
				break;
			default:
				break;
			}
		}
		g->total += a->n;
		g->total_ns += a->ns;
		g->split[cls] += a->n;
		if (mk == SIZE_MAX) {
			add_to(row_of(g, v), a, cls, true);
			continue;
		}
		/* a row per module on the stack, counted once; its self samples those with it innermost */
		leaf = fmod[p->locs[p->stacks[a->stack].loc].func];
		round++;
		for (uint32_t s = a->stack; s != PROFILE_NONE; s = p->stacks[s].parent) {
			uint32_t m = fmod[p->locs[p->stacks[s].loc].func];

			if (mstamp[m] == round)
				continue;
			mstamp[m] = round;
			v[mk] = m;
			add_to(row_of(g, v), a, cls, m == leaf);
		}
	}
	free(mstamp);
	free(agg);
	free(fmod);
	report_pysplit_free(ps);
}

void report_groups_release(struct report_groups *g)
{
	free(g->rows);
	strtab_release(&g->names);
	idx_release(&g->row_idx);
	memset(g, 0, sizeof(*g));
}

static const char *const state_names[PROFILE_STATE_NR] = {
	[PROFILE_STATE_UNKNOWN] = "unknown",
	[PROFILE_STATE_ON_CPU] = "on-cpu",
	[PROFILE_STATE_OFF_CPU] = "off-cpu",
};

const char *report_group_label(const struct report_groups *g, const struct profile *p, size_t row,
			       size_t k, struct sbuf *s)
{
	uint32_t v = g->rows[row].value[k];

	switch (g->by.keys[k]) {
	case REPORT_GROUP_PROCESS:
		return report_process_title(p, v, g->hosts, s);
	case REPORT_GROUP_STATE:
		return v < PROFILE_STATE_NR ? state_names[v] : "unknown";
	case REPORT_GROUP_RANK:
		return v == (uint32_t)PROFILE_RANK_NONE ? "none" : sbuf_printf(s, "%" PRIu32, v);
	default:
		return g->names.str[v];
	}
}

struct sort_ctx {
	const struct report_groups *g;
	const struct profile *p;
	enum report_sort key;
};

/* The values of two rows, key by key: names and process names ascending, then pids, states. */
static int values_cmp(const struct sort_ctx *c, const struct report_group *x, const struct report_group *y)
{
	const struct profile *p = c->p;

	for (size_t k = 0; k < c->g->by.nr; k++) {
		uint32_t a = x->value[k], b = y->value[k];
		int r = 0;

		switch (c->g->by.keys[k]) {
		case REPORT_GROUP_PROCESS:
			if (!(r = strcmp(p->procs[a].comm ? p->procs[a].comm : "",
					 p->procs[b].comm ? p->procs[b].comm : "")) &&
			    !(r = (p->procs[a].pid > p->procs[b].pid) - (p->procs[a].pid < p->procs[b].pid)))
				r = (a > b) - (a < b);
			break;
		case REPORT_GROUP_STATE:
		case REPORT_GROUP_RANK:
			r = (a > b) - (a < b);
			break;
		default:
			r = strcmp(c->g->names.str[a], c->g->names.str[b]);
			break;
		}
		if (r)
			return r;
	}
	return 0;
}

static int group_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct report_group *x = a, *y = b;
	/* name, filename, nfl: by the groups' names */
	int r = report_counts_cmp(c->key, REPORT_COUNTS(x), REPORT_COUNTS(y));

	return r ? r : values_cmp(c, x, y);
}

void report_groups_sort(struct report_groups *g, const struct profile *p, enum report_sort key)
{
	struct sort_ctx c = { g, p, key };

	QSORT_R(g->rows, g->nr, group_cmp, &c);
	/* the index points at the old places: nothing is looked up once the rows are sorted */
	idx_release(&g->row_idx);
}
