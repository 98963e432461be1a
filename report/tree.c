// SPDX-License-Identifier: MIT
/* The call tree (--format tree) and pstats-style callers/callees, merged by function or by line. */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model.h"
#include "report.h"

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
	struct sbuf label = SBUF_INIT;

	ALLOC_GROW(st, 1, alloc);
	st[nr++] = (struct walk){ root, 0, 0, 0 };
	while (nr) {
		size_t top = nr - 1;
		const struct report_tnode *nd = &t->nodes[st[top].id];

		if (!st[top].next_kid) {
			const char *name = nd->loc != PROFILE_NONE ? report_loc_label_sb(&label, p, nd->loc) :
					   report_func_label_sb(&label, &p->funcs[nd->func]);

			char w1[32], w2[32];

			fprintf(out, "%6.1f%% %6.1f%% %9s %9s %9" PRIu64 "  %*s",
				report_share(p, nd->cum, nd->cum_ns, t->total, t->total_ns),
				report_share(p, nd->self, nd->self_ns, t->total, t->total_ns),
				report_weight_str(p, nd->cum_ns, w1, sizeof(w1)),
				report_weight_str(p, nd->self_ns, w2, sizeof(w2)), nd->cum, indent_of(top), "");
			/* past MAX_INDENT the depth is written out instead of spaces */
			if (top >= MAX_INDENT)
				fprintf(out, "[%zu] ", top);
			fprintf(out, "%s\n", name);
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
	sbuf_release(&label);
	free(st);
}

void report_write_tree(FILE *out, const struct profile *p, const struct report_opts *o,
		       const bool *keep)
{
	double min_percent = o->min_percent;
	struct report_tree t;

	report_tree_build(&t, p, keep, o->lines, NULL);
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

/* Between two rows: functions, or by line locations. */
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

/* The row of a caller or callee: a function, or by line a location. */
static const char *edge_label(struct sbuf *s, const struct profile *p, uint32_t row, bool by_line)
{
	if (by_line)
		return report_loc_label_sb(s, p, row);
	return report_func_label_sb(s, &p->funcs[row]);
}

int report_write_calls(FILE *out, const struct profile *p, const struct report_opts *o,
		       const bool *keep)
{
	bool callers = o->format == REPORT_CALLERS, by_line = o->lines;
	const char *match = o->match;
	size_t limit = o->limit;
	uint64_t *n = NULL, *ns = NULL;
	struct edge *edges = NULL;
	size_t nr_edges = 0, alloc_edges = 0, nr_stats, shown = 0;
	struct idx index = IDX_INIT;
	struct report_func_stat *st;
	uint64_t total, total_ns;
	regex_t re;
	struct sbuf label = SBUF_INIT, other = SBUF_INIT;
	char w1[32];

	if (match && regcomp(&re, match, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	report_stack_counts(p, keep, &n, &ns, NULL);
	for (size_t s = 0; s < p->nr_stacks; s++) {
		if (!n[s])
			continue;
		for (uint32_t a = s; p->stacks[a].parent != PROFILE_NONE; a = p->stacks[a].parent) {
			uint32_t callee = report_row_of(p, a, by_line);
			uint32_t caller = report_row_of(p, p->stacks[a].parent, by_line);
			uint64_t h = hash_combine(hash_u64(caller), callee);
			size_t pos = 0;
			uint32_t id;

			if (caller == callee)
				continue;	/* inline or recursion within one function (line) */
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
	st = by_line ? report_line_stats(p, keep, &nr_stats, &total, &total_ns) :
		       report_func_stats(p, keep, &nr_stats, &total, &total_ns);
	report_sort_stats(p, st, nr_stats, o->sort);
	fprintf(out, "\nFunction  %s (samples with both on the stack, %s)\n",
		callers ? "<-  was called by" : "->  called", report_counts_events(p) ? p->meta.event : "seconds");
	for (size_t i = 0; i < nr_stats && (!limit || shown < limit); i++) {
		uint32_t row = by_line ? st[i].loc : st[i].func;
		bool first = true;

		if (match && !report_row_matches(p, &st[i], &re))
			continue;
		shown++;
		fprintf(out, "\n%s  (%" PRIu64 " samples, %s %s cumulative)\n",
			report_row_label_sb(&label, p, &st[i]), st[i].cum,
			report_weight_str(p, st[i].cum_ns, w1, sizeof(w1)),
			report_counts_events(p) ? p->meta.event : "s");
		for (size_t e = 0; e < nr_edges; e++) {
			uint32_t other_f = callers ? edges[e].caller : edges[e].callee;

			if ((callers ? edges[e].callee : edges[e].caller) != row)
				continue;
			fprintf(out, "    %s %9" PRIu64 " %9s  %s\n", callers ? "<-" : "->", edges[e].n,
				report_weight_str(p, edges[e].ns, w1, sizeof(w1)),
				edge_label(&other, p, other_f, by_line));
			first = false;
		}
		if (first)
			fprintf(out, "    %s\n", callers ? "(no callers: a root)" : "(calls nothing sampled)");
	}
	if (match)
		regfree(&re);
	sbuf_release(&label);
	sbuf_release(&other);
	free(st);
	free(edges);
	idx_release(&index);
	free(n);
	free(ns);
	return shown ? 0 : -ENOENT;
}
