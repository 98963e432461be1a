// SPDX-License-Identifier: MIT
/* Per-function self/cumulative totals over a profile's stack tree, and their sort orders. */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"

static const struct {
	const char *name;
	enum report_sort key;
} sort_names[] = {
	{ "cumtime", REPORT_SORT_CUMTIME },
	{ "cumulative", REPORT_SORT_CUMTIME },
	{ "tottime", REPORT_SORT_TOTTIME },
	{ "time", REPORT_SORT_TOTTIME },
	{ "nsamples", REPORT_SORT_NSAMPLES },
	{ "ncalls", REPORT_SORT_NSAMPLES },
	{ "calls", REPORT_SORT_NSAMPLES },
	{ "name", REPORT_SORT_NAME },
	{ "filename", REPORT_SORT_FILENAME },
	{ "nfl", REPORT_SORT_NFL },
};

int report_sort_parse(const char *s, enum report_sort *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(sort_names); i++) {
		if (!strcmp(s, sort_names[i].name)) {
			*out = sort_names[i].key;
			return 0;
		}
	}
	return -EINVAL;
}

uint64_t report_stack_counts(const struct profile *p, const bool *keep, uint64_t **n,
			     uint64_t **ns, uint64_t *total_ns)
{
	uint64_t kept = 0, weight = 0;

	*n = xcalloc(p->nr_stacks + 1, sizeof(**n));
	*ns = xcalloc(p->nr_stacks + 1, sizeof(**ns));
	for (size_t i = 0; i < p->nr_samples; i++) {
		if (keep && !keep[i])
			continue;
		(*n)[p->samples[i].stack]++;
		(*ns)[p->samples[i].stack] += p->samples[i].weight_ns;
		kept++;
		weight += p->samples[i].weight_ns;
	}
	if (total_ns)
		*total_ns = weight;
	return kept;
}

struct report_func_stat *report_func_stats(const struct profile *p, const bool *keep_sample,
					   size_t *nr, uint64_t *total, uint64_t *total_ns)
{
	uint64_t *node_n, *node_ns;
	struct report_func_stat *all = xcalloc(p->nr_funcs + 1, sizeof(*all));
	uint32_t *stamp = xcalloc(p->nr_funcs + 1, sizeof(*stamp));
	struct report_func_stat *out;
	size_t n = 0;

	*total = report_stack_counts(p, keep_sample, &node_n, &node_ns, total_ns);
	for (size_t s = 0; s < p->nr_stacks; s++) {
		uint32_t leaf = p->locs[p->stacks[s].loc].func;

		if (!node_n[s])
			continue;
		all[leaf].self += node_n[s];
		all[leaf].self_ns += node_ns[s];
		/* a recursive function is on the stack several times but counts once */
		for (uint32_t a = s; a != PROFILE_NONE; a = p->stacks[a].parent) {
			uint32_t f = p->locs[p->stacks[a].loc].func;

			if (stamp[f] == s + 1)
				continue;
			stamp[f] = s + 1;
			all[f].cum += node_n[s];
			all[f].cum_ns += node_ns[s];
		}
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		if (all[f].cum) {
			all[f].func = f;
			all[n++] = all[f];
		}
	}
	out = xrealloc(all, st_mult(n + 1, sizeof(*out)));
	free(node_n);
	free(node_ns);
	free(stamp);
	*nr = n;
	return out;
}

struct sort_ctx {
	const struct profile *p;
	enum report_sort key;
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static const char *file_or_module(const struct profile_func *f)
{
	return f->file ? f->file : f->module;
}

static int stat_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct report_func_stat *x = a, *y = b;
	const struct profile_func *fx = &c->p->funcs[x->func], *fy = &c->p->funcs[y->func];
	int r = 0;

	switch (c->key) {
	case REPORT_SORT_CUMTIME:
		if (!(r = cmp_u64_desc(x->cum_ns, y->cum_ns)))
			r = cmp_u64_desc(x->self_ns, y->self_ns);
		break;
	case REPORT_SORT_TOTTIME:
		if (!(r = cmp_u64_desc(x->self_ns, y->self_ns)))
			r = cmp_u64_desc(x->cum_ns, y->cum_ns);
		break;
	case REPORT_SORT_NSAMPLES:
		if (!(r = cmp_u64_desc(x->self, y->self)))
			r = cmp_u64_desc(x->cum, y->cum);
		break;
	case REPORT_SORT_NAME:
		r = cmp_str(fx->name, fy->name);
		break;
	case REPORT_SORT_FILENAME:
		if (!(r = cmp_str(file_or_module(fx), file_or_module(fy))))
			r = fx->line < fy->line ? -1 : fx->line > fy->line;
		break;
	case REPORT_SORT_NFL:
		if (!(r = cmp_str(fx->name, fy->name)) &&
		    !(r = cmp_str(file_or_module(fx), file_or_module(fy))))
			r = fx->line < fy->line ? -1 : fx->line > fy->line;
		break;
	}
	if (r)
		return r;
	/* a total order, so that equal keys still print the same way every time */
	if ((r = cmp_u64_desc(x->cum_ns, y->cum_ns)) || (r = cmp_str(fx->name, fy->name)) ||
	    (r = cmp_str(file_or_module(fx), file_or_module(fy))))
		return r;
	return x->func < y->func ? -1 : x->func > y->func;
}

void report_sort_stats(const struct profile *p, struct report_func_stat *st, size_t nr,
		       enum report_sort key)
{
	struct sort_ctx c = { p, key };

	QSORT_R(st, nr, stat_cmp, &c);
}

bool report_stack_complete(const struct profile *p, uint32_t stack)
{
	while (p->stacks[stack].parent != PROFILE_NONE)
		stack = p->stacks[stack].parent;
	return profile_func_is_root(p->funcs[p->locs[p->stacks[stack].loc].func].name);
}
