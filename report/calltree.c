// SPDX-License-Identifier: MIT
/*
 * The call tree merged by function, which the tree, json and timers
 * writers read: a node is one function reached by one path of functions.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static uint32_t tree_child(struct report_tree *t, uint32_t parent, uint32_t func, uint32_t loc)
{
	uint64_t h = hash_combine(hash_combine(hash_u64(parent), func), loc);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&t->index, h, &pos)) != IDX_NONE)
		if (t->nodes[id].parent == parent && t->nodes[id].func == func &&
		    t->nodes[id].loc == loc)
			return id;
	ALLOC_GROW(t->nodes, t->nr + 1, t->alloc);
	id = t->nr++;
	memset(&t->nodes[id], 0, sizeof(*t->nodes));
	t->nodes[id].parent = parent;
	t->nodes[id].func = func;
	t->nodes[id].loc = loc;
	idx_insert(&t->index, h, id);
	return id;
}

static const struct report_tnode *sort_nodes;

static int by_cum(const void *a, const void *b)
{
	const struct report_tnode *x = &sort_nodes[*(const uint32_t *)a];
	const struct report_tnode *y = &sort_nodes[*(const uint32_t *)b];

	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/*
 * Stack nodes are by location (function and line); the tree merges them
 * by function, unless BY_LINE. Each sample adds to every node on its own
 * path once, so a recursive function shows nested, and no total counts a
 * sample twice.
 */
void report_tree_build(struct report_tree *t, const struct profile *p, const bool *keep,
		       bool by_line, uint32_t **stack_node)
{
	uint32_t *tn = xmalloc(st_mult(p->nr_stacks + 1, sizeof(*tn)));
	uint64_t *n, *ns;

	memset(t, 0, sizeof(*t));
	for (size_t s = 0; s < p->nr_stacks; s++) {
		uint32_t par = p->stacks[s].parent;

		tn[s] = tree_child(t, par == PROFILE_NONE ? PROFILE_NONE : tn[par],
				   p->locs[p->stacks[s].loc].func,
				   by_line ? p->stacks[s].loc : PROFILE_NONE);
	}
	report_stack_counts(p, keep, &n, &ns, NULL);
	for (size_t s = 0; s < p->nr_stacks; s++) {
		if (!n[s])
			continue;
		t->nodes[tn[s]].self += n[s];
		t->nodes[tn[s]].self_ns += ns[s];
		for (uint32_t a = tn[s]; a != PROFILE_NONE; a = t->nodes[a].parent) {
			t->nodes[a].cum += n[s];
			t->nodes[a].cum_ns += ns[s];
		}
	}
	free(n);
	free(ns);

	/* children lists of the sampled nodes, largest first */
	t->kids = xcalloc(t->nr + 1, sizeof(*t->kids));
	t->nr_kids = xcalloc(t->nr + 1, sizeof(*t->nr_kids));
	for (size_t i = 0; i < t->nr; i++) {
		uint32_t par = t->nodes[i].parent;

		if (!t->nodes[i].cum)
			continue;
		if (par == PROFILE_NONE) {
			ALLOC_GROW(t->roots, t->nr_roots + 1, t->alloc_roots);
			t->roots[t->nr_roots++] = i;
			t->total += t->nodes[i].cum;
			t->total_ns += t->nodes[i].cum_ns;
			continue;
		}
		t->kids[par] = xrealloc(t->kids[par], st_mult(t->nr_kids[par] + 1, sizeof(**t->kids)));
		t->kids[par][t->nr_kids[par]++] = i;
	}
	sort_nodes = t->nodes;
	QSORT(t->roots, t->nr_roots, by_cum);
	for (size_t i = 0; i < t->nr; i++)
		QSORT(t->kids[i], t->nr_kids[i], by_cum);
	if (stack_node)
		*stack_node = tn;
	else
		free(tn);
}

void report_tree_release(struct report_tree *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->kids[i]);
	free(t->kids);
	free(t->nr_kids);
	free(t->roots);
	free(t->nodes);
	idx_release(&t->index);
}
