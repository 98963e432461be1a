// SPDX-License-Identifier: MIT
/* The call tree (--format tree) and pstats-style callers/callees, merged by function. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"

static uint32_t tree_child(struct report_tree *t, uint32_t parent, uint32_t func)
{
	uint64_t h = hash_combine(hash_u64(parent), func);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&t->index, h, &pos)) != IDX_NONE)
		if (t->nodes[id].parent == parent && t->nodes[id].func == func)
			return id;
	ALLOC_GROW(t->nodes, t->nr + 1, t->alloc);
	id = t->nr++;
	memset(&t->nodes[id], 0, sizeof(*t->nodes));
	t->nodes[id].parent = parent;
	t->nodes[id].func = func;
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
	return x->func < y->func ? -1 : x->func > y->func;
}

/*
 * Stack nodes are by location (function and line); the tree merges them
 * by function. Each sample adds to every node on its own path once, so a
 * recursive function shows nested, and no total counts a sample twice.
 */
void report_tree_build(struct report_tree *t, const struct profile *p, const bool *keep,
		       uint32_t **stack_node)
{
	uint32_t *tn = xmalloc(st_mult(p->nr_stacks + 1, sizeof(*tn)));
	uint64_t *n, *ns;

	memset(t, 0, sizeof(*t));
	for (size_t s = 0; s < p->nr_stacks; s++) {
		uint32_t par = p->stacks[s].parent;

		tn[s] = tree_child(t, par == PROFILE_NONE ? PROFILE_NONE : tn[par],
				   p->locs[p->stacks[s].loc].func);
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

/*
 * Indentation stops growing at MAX_INDENT levels: a deep recursion would
 * otherwise write the square of its depth in spaces (10 GB for 100000).
 */
#define MAX_INDENT 50

static int indent_of(size_t depth)
{
	return 2 * (int)(depth < MAX_INDENT ? depth : MAX_INDENT);
}

/*
 * Prints the subtree under ROOT depth first, with an explicit stack: a
 * 2000-deep recursion makes a 2000-deep tree.
 */
static void print_subtree(FILE *out, const struct profile *p, const struct report_tree *t,
			  uint32_t root, double min_percent)
{
	struct walk { uint32_t id, next_kid; uint64_t hidden; size_t nr_hidden; } *st = NULL;
	size_t nr = 0, alloc = 0;
	char label[4096];

	ALLOC_GROW(st, 1, alloc);
	st[nr++] = (struct walk){ root, 0, 0, 0 };
	while (nr) {
		size_t top = nr - 1;
		const struct report_tnode *nd = &t->nodes[st[top].id];

		if (!st[top].next_kid) {
			report_func_label(&p->funcs[nd->func], label, sizeof(label));
			fprintf(out, "%6.1f%% %6.1f%% %9.3f %9.3f %9" PRIu64 "  %*s",
				100.0 * nd->cum / t->total, 100.0 * nd->self / t->total, nd->cum_ns / 1e9,
				nd->self_ns / 1e9, nd->cum, indent_of(top), "");
			/* past MAX_INDENT the depth is written out instead of spaces */
			if (top >= MAX_INDENT)
				fprintf(out, "[%zu] ", top);
			fprintf(out, "%s\n", label);
		}
		while (st[top].next_kid < t->nr_kids[st[top].id]) {
			uint32_t c = t->kids[st[top].id][st[top].next_kid++];

			if (100.0 * t->nodes[c].cum / t->total < min_percent) {
				st[top].hidden += t->nodes[c].cum;
				st[top].nr_hidden++;
				continue;
			}
			ALLOC_GROW(st, nr + 1, alloc);
			st[nr++] = (struct walk){ c, 0, 0, 0 };
			break;
		}
		if (nr - 1 != top)
			continue;	/* descended; back here when that child is done */
		if (st[top].nr_hidden)
			fprintf(out, "%6.1f%% %7s %9s %9s %9" PRIu64 "  %*s… %zu more below %.1f%%\n",
				100.0 * st[top].hidden / t->total, "", "", "", st[top].hidden,
				indent_of(top + 1), "", st[top].nr_hidden, min_percent);
		nr--;
	}
	free(st);
}

void report_write_tree(FILE *out, const struct profile *p, const bool *keep, double min_percent)
{
	struct report_tree t;

	report_tree_build(&t, p, keep, NULL);
	fprintf(out, "\n%7s %7s %9s %9s %9s  %s\n", "total%", "self%", "total", "self", "samples",
		"function (callees indented under their callers)");
	for (size_t r = 0; r < t.nr_roots && t.total; r++) {
		if (100.0 * t.nodes[t.roots[r]].cum / t.total < min_percent)
			continue;
		print_subtree(out, p, &t, t.roots[r], min_percent);
	}
	report_tree_release(&t);
}

/* ---- callers and callees ---- */

bool report_any_match(const struct profile *p, const bool *keep, const char *match)
{
	bool *sampled = xcalloc(p->nr_funcs + 1, 1), found = false;
	regex_t re;

	if (regcomp(&re, match, REG_EXTENDED | REG_NOSUB)) {
		free(sampled);
		return false;
	}
	/* a function counts when some kept sample has it on the stack */
	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			for (uint32_t a = p->samples[i].stack; a != PROFILE_NONE; a = p->stacks[a].parent)
				sampled[p->locs[p->stacks[a].loc].func] = true;
	for (size_t f = 0; f < p->nr_funcs && !found; f++)
		found = sampled[f] && !regexec(&re, p->funcs[f].name, 0, NULL, 0);
	regfree(&re);
	free(sampled);
	return found;
}

struct edge {
	uint32_t caller, callee;
	uint64_t n, ns;
	uint32_t stamp;         /* last stack counted: an edge counts once per sample */
};

static int by_count(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->caller != y->caller ? (x->caller < y->caller ? -1 : 1) :
	       (x->callee < y->callee ? -1 : x->callee > y->callee);
}

int report_write_calls(FILE *out, const struct profile *p, const bool *keep, bool callers,
		       const char *match, size_t limit, enum report_sort sort)
{
	uint64_t *n = NULL, *ns = NULL;
	struct edge *edges = NULL;
	size_t nr_edges = 0, alloc_edges = 0, nr_stats, shown = 0;
	struct idx index = IDX_INIT;
	struct report_func_stat *st;
	uint64_t total, total_ns;
	regex_t re;
	char label[4096], other[4096];

	if (match && regcomp(&re, match, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	report_stack_counts(p, keep, &n, &ns, NULL);
	for (size_t s = 0; s < p->nr_stacks; s++) {
		if (!n[s])
			continue;
		for (uint32_t a = s; p->stacks[a].parent != PROFILE_NONE; a = p->stacks[a].parent) {
			uint32_t callee = p->locs[p->stacks[a].loc].func;
			uint32_t caller = p->locs[p->stacks[p->stacks[a].parent].loc].func;
			uint64_t h = hash_combine(hash_u64(caller), callee);
			size_t pos = 0;
			uint32_t id;

			if (caller == callee)
				continue;	/* inline or recursion within one function */
			while ((id = idx_next(&index, h, &pos)) != IDX_NONE)
				if (edges[id].caller == caller && edges[id].callee == callee)
					break;
			if (id == IDX_NONE) {
				ALLOC_GROW(edges, nr_edges + 1, alloc_edges);
				id = nr_edges++;
				memset(&edges[id], 0, sizeof(*edges));
				edges[id].caller = caller;
				edges[id].callee = callee;
				edges[id].stamp = UINT32_MAX;
				idx_insert(&index, h, id);
			}
			if (edges[id].stamp == s)
				continue;
			edges[id].stamp = s;
			edges[id].n += n[s];
			edges[id].ns += ns[s];
		}
	}
	QSORT(edges, nr_edges, by_count);
	st = report_func_stats(p, keep, &nr_stats, &total, &total_ns);
	report_sort_stats(p, st, nr_stats, sort);
	fprintf(out, "\n%s\n", callers ? "Function  <-  was called by (samples with both on the stack, seconds)"
				       : "Function  ->  called (samples with both on the stack, seconds)");
	for (size_t i = 0; i < nr_stats && (!limit || shown < limit); i++) {
		uint32_t f = st[i].func;
		bool first = true;

		if (match && regexec(&re, p->funcs[f].name, 0, NULL, 0))
			continue;
		shown++;
		report_func_label(&p->funcs[f], label, sizeof(label));
		fprintf(out, "\n%s  (%" PRIu64 " samples, %.3f s cumulative)\n", label, st[i].cum, st[i].cum_ns / 1e9);
		for (size_t e = 0; e < nr_edges; e++) {
			uint32_t other_f = callers ? edges[e].caller : edges[e].callee;

			if ((callers ? edges[e].callee : edges[e].caller) != f)
				continue;
			report_func_label(&p->funcs[other_f], other, sizeof(other));
			fprintf(out, "    %s %9" PRIu64 " %9.3f  %s\n", callers ? "<-" : "->", edges[e].n,
				edges[e].ns / 1e9, other);
			first = false;
		}
		if (first)
			fprintf(out, "    %s\n", callers ? "(no callers: a root)" : "(calls nothing sampled)");
	}
	if (match)
		regfree(&re);
	free(st);
	free(edges);
	idx_release(&index);
	free(n);
	free(ns);
	return shown ? 0 : -ENOENT;
}
