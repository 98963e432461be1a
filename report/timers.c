// SPDX-License-Identifier: MIT
/*
 * Hierarchical timers (--format timers): the timer tree ML training tools
 * write (ML-Agents' TimerStack), with total/self/count/children keyed by
 * name and is_parallel, of the regions when the profile has them, else of
 * the sampled call tree.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"
#include "model.h"

#define TIMER_FORMAT_VERSION "0.1.0"

/*
 * A node is parallel when samples from two threads fell in it at
 * overlapping times: each thread's first-to-last span in the node is one
 * interval, and two intervals of one node overlap.
 */
struct span {
	uint32_t node;
	uint64_t from, to;
};

static const struct profile *order_p;

static int by_thread_time(const void *a, const void *b)
{
	const struct profile_sample *x = &order_p->samples[*(const uint32_t *)a];
	const struct profile_sample *y = &order_p->samples[*(const uint32_t *)b];

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int by_node_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->from < y->from ? -1 : x->from > y->from;
}

static bool *parallel_nodes(const struct profile *p, const bool *keep, const struct report_tree *t,
			    const uint32_t *stack_node)
{
	uint32_t *order = NULL, *open = xmalloc(st_mult(t->nr + 1, sizeof(*open)));
	uint32_t *open_thread = xmalloc(st_mult(t->nr + 1, sizeof(*open_thread)));
	bool *par = xcalloc(t->nr + 1, 1);	/* [t->nr]: the root */
	struct span *sp = NULL;
	size_t nr = 0, nr_sp = 0, alloc_sp = 0;

	order = xmalloc(st_mult(p->nr_samples + 1, sizeof(*order)));
	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			order[nr++] = i;
	order_p = p;
	QSORT(order, nr, by_thread_time);
	memset(open_thread, 0xff, st_mult(t->nr + 1, sizeof(*open_thread)));
	for (size_t k = 0; k < nr; k++) {
		const struct profile_sample *s = &p->samples[order[k]];

		/* every node on the path, then t->nr: the root above them all */
		for (uint32_t a = stack_node[s->stack]; ; a = t->nodes[a].parent) {
			if (a == PROFILE_NONE)
				a = t->nr;
			if (open_thread[a] != s->thread) {
				ALLOC_GROW(sp, nr_sp + 1, alloc_sp);
				sp[nr_sp] = (struct span){ a, s->time_ns, s->time_ns };
				open[a] = nr_sp++;
				open_thread[a] = s->thread;
			} else {
				sp[open[a]].to = s->time_ns;	/* samples come in time order per thread */
			}
			if (a == t->nr)
				break;
		}
	}
	QSORT(sp, nr_sp, by_node_start);
	for (size_t i = 0; i < nr_sp;) {
		uint64_t reach = sp[i].to;
		size_t j = i + 1;

		for (; j < nr_sp && sp[j].node == sp[i].node; j++) {
			if (sp[j].from <= reach)
				par[sp[i].node] = true;
			if (sp[j].to > reach)
				reach = sp[j].to;
		}
		i = j;
	}
	free(sp);
	free(order);
	free(open);
	free(open_thread);
	return par;
}

/* Whether KEY is one of the keys taken so far (KEYS, indexed by USED). */
static bool key_taken(char **keys, const struct idx *used, const char *key, uint64_t h)
{
	size_t pos = 0;
	uint32_t j;

	while ((j = idx_next(used, h, &pos)) != IDX_NONE)
		if (!strcmp(keys[j], key))
			return true;
	return false;
}

/*
 * The keys of node ID's children: the function name, with the module added
 * when two siblings share a name, and a number if even that clashes
 * ("name (module) #2", #3, ... in order). Names are whole, whatever their
 * length, and every attempt makes a new key: a name's numbers go up from
 * where its last clash left them, so N siblings of one name take O(N)
 * steps. Returns an array of t->nr_kids[id] strings, the caller's to free.
 */
static char **child_keys(const struct profile *p, const struct report_tree *t, uint32_t id)
{
	uint32_t n = id == PROFILE_NONE ? t->nr_roots : t->nr_kids[id];
	const uint32_t *kids = id == PROFILE_NONE ? t->roots : t->kids[id];
	char **keys = xcalloc(n + 1, sizeof(*keys));
	/* per "name (module)" that clashed: the last number given, as in next[] */
	char **bases = NULL;
	unsigned *next = NULL;
	size_t nr_bases = 0, alloc_bases = 0, alloc_next = 0;
	struct idx used = IDX_INIT, base_idx = IDX_INIT;
	struct sbuf label = SBUF_INIT;

	for (uint32_t k = 0; k < n; k++) {
		const struct profile_func *f = &p->funcs[t->nodes[kids[k]].func];
		const char *name = report_func_name_sb(&label, f);
		char *key = xstrdup(name), *base;
		uint64_t h = hash_str(key, 0), bh;
		size_t pos = 0, b;

		if (key_taken(keys, &used, key, h)) {
			free(key);
			base = xstrfmt("%s (%s)", name, f->module ? f->module : "?");
			bh = hash_str(base, 0);
			key = xstrdup(base);
			h = bh;
			if (key_taken(keys, &used, key, h)) {
				while ((b = idx_next(&base_idx, bh, &pos)) != IDX_NONE && strcmp(bases[b], base))
					;
				if (b == IDX_NONE) {
					ALLOC_GROW(bases, nr_bases + 1, alloc_bases);
					ALLOC_GROW(next, nr_bases + 1, alloc_next);
					b = nr_bases++;
					bases[b] = xstrdup(base);
					next[b] = 1;
					idx_insert(&base_idx, bh, (uint32_t)b);
				}
				do {
					free(key);
					key = xstrfmt("%s #%u", base, ++next[b]);
					h = hash_str(key, 0);
				} while (key_taken(keys, &used, key, h));
			}
			free(base);
		}
		keys[k] = key;
		idx_insert(&used, h, k);
	}
	for (size_t b = 0; b < nr_bases; b++)
		free(bases[b]);
	free(bases);
	free(next);
	idx_release(&base_idx);
	idx_release(&used);
	sbuf_release(&label);
	return keys;
}

/* Seconds as a JSON number: nine decimals at most, no trailing zeros. */
static void put_secs(FILE *out, uint64_t ns)
{
	fprintf(out, "%.9g", ns / 1e9);
}

/* The fields of a timer node, up to and including the opening of its children. */
static void put_timer(FILE *out, uint64_t total_ns, uint64_t self_ns, uint64_t count, bool parallel)
{
	fputs("\"total\": ", out);
	put_secs(out, total_ns);
	fprintf(out, ", \"count\": %" PRIu64 ", \"self\": ", count);
	put_secs(out, self_ns);
	if (parallel)
		fputs(", \"is_parallel\": true", out);
	fputs(", \"children\": {", out);
}

/* A line break and indentation for DEPTH, which stops growing: a deep recursion would square it. */
static void indent(FILE *out, size_t depth)
{
	fprintf(out, "\n%*s", (int)(depth < 64 ? depth : 64), "");
}

/* The metadata of the timer tree, after the root's children; closes the root. */
static void put_metadata(FILE *out, const struct profile *p, const char *unit)
{
	const struct profile_meta *m = &p->meta;

	fputs(",\n\"metadata\": {\"timer_format_version\": \"" TIMER_FORMAT_VERSION "\", "
	      "\"source\": \"proftool " PROFTOOL_VERSION "\", \"unit\": ", out);
	report_json_string(out, unit);
	fputs(", \"command_line_arguments\": ", out);
	if (m->command)
		report_json_string(out, m->command);
	else
		fputs("null", out);
	fprintf(out, ", \"start_time_seconds\": %.3f, \"end_time_seconds\": %.3f, \"sampling_period_seconds\": ",
		m->start_real_ns / 1e9, (m->start_real_ns + m->duration_ns) / 1e9);
	put_secs(out, m->period_ns);
	fputs("}}\n", out);
}

/*
 * Written by hand, depth first with an explicit stack: the tree is as deep
 * as the deepest stack, and a recursive writer (jansson's) runs out of C
 * stack around 14000 levels.
 */
static int write_sample_timers(FILE *out, const struct profile *p, const bool *keep)
{
	struct level { uint32_t id; uint32_t next; char **keys; } *st = NULL;
	size_t nr = 0, alloc = 0;
	struct report_tree t;
	uint32_t *stack_node;
	const struct profile_meta *m = &p->meta;
	bool *par;

	report_tree_build(&t, p, keep, false, &stack_node);
	par = parallel_nodes(p, keep, &t, stack_node);
	fputs("{\"name\": \"root\", ", out);
	put_timer(out, t.total_ns, 0, t.total, par[t.nr]);
	ALLOC_GROW(st, 1, alloc);
	st[nr++] = (struct level){ PROFILE_NONE, 0, child_keys(p, &t, PROFILE_NONE) };
	while (nr) {
		struct level *l = &st[nr - 1];
		uint32_t n = l->id == PROFILE_NONE ? t.nr_roots : t.nr_kids[l->id];
		uint32_t k, c;
		const struct report_tnode *nd;

		if (l->next == n) {
			/* the children are done: close them and the node */
			for (uint32_t i = 0; i < n; i++)
				free(l->keys[i]);
			free(l->keys);
			nr--;
			if (n)
				indent(out, nr);
			fputs(nr ? "}}" : "}", out);
			continue;
		}
		k = l->next++;
		c = l->id == PROFILE_NONE ? t.roots[k] : t.kids[l->id][k];
		nd = &t.nodes[c];
		if (k)
			fputc(',', out);
		indent(out, nr);
		report_json_string(out, l->keys[k]);
		fputs(": {", out);
		put_timer(out, nd->cum_ns, nd->self_ns, nd->cum, par[c]);
		ALLOC_GROW(st, nr + 1, alloc);
		st[nr] = (struct level){ c, 0, child_keys(p, &t, c) };
		nr++;
	}
	put_metadata(out, p, m->mode && !strcmp(m->mode, "wall") ? "seconds of wall-clock time (sampled)" :
			     "seconds of CPU time (sampled)");
	free(st);
	free(par);
	free(stack_node);
	report_tree_release(&t);
	return ferror(out) ? -EIO : 0;
}

/* ---- timers of the regions ---- */

/*
 * The tree of region paths, as ML-Agents' TimerStack has its timers: node
 * n of p->region_nodes is node n here, the root is node p->nr_region_nodes.
 */
struct rtimers {
	size_t nr;              /* region nodes; the root is nodes[nr] */
	uint64_t *total_ns, *count, *self_ns;
	bool *par, *shown;
	uint32_t **kids;        /* per shown node: its shown children, largest total first */
	uint32_t *nr_kids;
	char **key;             /* per shown node but the root: its key among its siblings */
};

/* The thread whose regions are not "parallel": the first process's first thread. */
static uint32_t main_thread(const struct profile *p)
{
	for (size_t t = 0; t < p->nr_threads; t++)
		if (p->threads[t].process == 0)
			return t;
	return PROFILE_NONE;
}

static const struct rtimers *kid_order_t;

static int kid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct rtimers *rt = kid_order_t;

	if (rt->total_ns[x] != rt->total_ns[y])
		return rt->total_ns[x] > rt->total_ns[y] ? -1 : 1;
	return strcmp(rt->key[x], rt->key[y]) ? strcmp(rt->key[x], rt->key[y]) : (x < y ? -1 : x > y);
}

/*
 * Fills RT from the instances F keeps: per path, the instances' count and
 * summed duration, from every thread and process; a node with instances
 * from any other than the main thread is parallel, as ML-Agents marks the
 * timers it merges from its workers. With --region, the paths it names,
 * those below them and those above them (whole) are shown.
 */
static void region_timers(struct rtimers *rt, const struct profile *p, const struct report_filter *f,
			  const bool *keep, uint64_t root_ns)
{
	struct report_region_totals tot;
	size_t nr, named;
	struct report_region_row *v = report_region_stats(p, f, keep, REPORT_SPLIT_THREAD, &nr, &tot);
	bool *inside = f->region ? report_region_inside(p, f->region, &named) : NULL;
	uint32_t mt = main_thread(p);
	size_t n = p->nr_region_nodes;
	uint64_t *kid_total;

	rt->nr = n;
	rt->total_ns = xcalloc(n + 1, sizeof(*rt->total_ns));
	rt->count = xcalloc(n + 1, sizeof(*rt->count));
	rt->self_ns = xcalloc(n + 1, sizeof(*rt->self_ns));
	rt->par = xcalloc(n + 1, 1);
	rt->shown = xcalloc(n + 1, 1);
	rt->kids = xcalloc(n + 1, sizeof(*rt->kids));
	rt->nr_kids = xcalloc(n + 1, sizeof(*rt->nr_kids));
	rt->key = xcalloc(n + 1, sizeof(*rt->key));
	kid_total = xcalloc(n + 1, sizeof(*kid_total));
	for (size_t i = 0; i < nr; i++) {
		uint32_t node = v[i].node;

		rt->total_ns[node] += v[i].total_ns;
		rt->count[node] += v[i].count;
		rt->par[node] |= v[i].group != mt;
		if (!inside || inside[node])
			rt->shown[node] = true;
	}
	/* children come after their parents: the paths down to each shown node */
	for (size_t x = n; x-- > 0;) {
		uint32_t par = p->region_nodes[x].parent;

		if (rt->shown[x] && par != PROFILE_NONE)
			rt->shown[par] = true;
	}
	rt->shown[n] = true;
	rt->total_ns[n] = root_ns;
	rt->count[n] = 1;
	for (size_t x = 0; x < n; x++) {
		uint32_t par = p->region_nodes[x].parent;
		struct sbuf label = SBUF_INIT;

		if (!rt->shown[x])
			continue;
		par = par == PROFILE_NONE ? (uint32_t)n : par;
		rt->nr_kids[par]++;
		kid_total[par] += rt->total_ns[x];
		rt->key[x] = xstrdup(report_region_label_sb(&label, p, p->region_nodes[x].name));
		sbuf_release(&label);
	}
	for (size_t x = 0; x <= n; x++) {
		/* ML-Agents' self: the total less the children's, never below zero */
		rt->self_ns[x] = rt->total_ns[x] > kid_total[x] ? rt->total_ns[x] - kid_total[x] : 0;
		if (rt->shown[x] && rt->nr_kids[x])
			rt->kids[x] = xmalloc(st_mult(rt->nr_kids[x], sizeof(**rt->kids)));
		rt->nr_kids[x] = 0;
	}
	for (size_t x = 0; x < n; x++) {
		uint32_t par = p->region_nodes[x].parent;

		if (!rt->shown[x])
			continue;
		par = par == PROFILE_NONE ? (uint32_t)n : par;
		rt->kids[par][rt->nr_kids[par]++] = x;
	}
	kid_order_t = rt;
	for (size_t x = 0; x <= n; x++) {
		struct idx used = { 0 };

		if (!rt->nr_kids[x])
			continue;
		QSORT(rt->kids[x], rt->nr_kids[x], kid_cmp);
		/* siblings have distinct names, but "a::b" may also be a name of the default domain */
		for (uint32_t k = 0; k < rt->nr_kids[x]; k++) {
			uint32_t c = rt->kids[x][k];
			char *base = rt->key[c];

			for (unsigned attempt = 1;; attempt++) {
				uint64_t h;
				size_t pos = 0, len = strlen(base) + 16;
				uint32_t j;
				bool clash = false;

				if (attempt > 1) {
					if (rt->key[c] != base)
						free(rt->key[c]);
					rt->key[c] = xmalloc(len);
					snprintf(rt->key[c], len, "%s #%u", base, attempt);
				}
				h = hash_str(rt->key[c], 0);
				while (!clash && (j = idx_next(&used, h, &pos)) != IDX_NONE)
					clash = !strcmp(rt->key[rt->kids[x][j]], rt->key[c]);
				if (!clash) {
					idx_insert(&used, h, k);
					break;
				}
			}
			if (rt->key[c] != base)
				free(base);
		}
		idx_release(&used);
	}
	free(kid_total);
	free(inside);
	free(v);
}

static void rtimers_release(struct rtimers *rt)
{
	for (size_t x = 0; x <= rt->nr; x++) {
		free(rt->kids[x]);
		free(rt->key[x]);
	}
	free(rt->total_ns);
	free(rt->count);
	free(rt->self_ns);
	free(rt->par);
	free(rt->shown);
	free(rt->kids);
	free(rt->nr_kids);
	free(rt->key);
}

/* The recording's wall-clock time, or the part of it the --time-range window covers. */
static uint64_t window_ns(const struct profile *p, const struct report_filter *f)
{
	uint64_t end = p->meta.duration_ns;

	if (f->to_ns && f->to_ns < end)
		end = f->to_ns;
	return end > f->from_ns ? end - f->from_ns : 0;
}

/* Written by hand as the sampled tree is: regions may nest as deep as a recursion. */
static int write_region_timers(FILE *out, const struct profile *p, const struct report_filter *f,
			       const bool *keep)
{
	struct level { uint32_t id; uint32_t next; } *st = NULL;
	size_t nr = 0, alloc = 0;
	struct rtimers rt;
	uint32_t root = (uint32_t)p->nr_region_nodes;

	region_timers(&rt, p, f, keep, window_ns(p, f));
	fputs("{\"name\": \"root\", ", out);
	put_timer(out, rt.total_ns[root], rt.self_ns[root], 1, false);
	ALLOC_GROW(st, 1, alloc);
	st[nr++] = (struct level){ root, 0 };
	while (nr) {
		struct level *l = &st[nr - 1];
		uint32_t n = rt.nr_kids[l->id], k, c;

		if (l->next == n) {
			nr--;
			if (n)
				indent(out, nr);
			fputs(nr ? "}}" : "}", out);
			continue;
		}
		k = l->next++;
		c = rt.kids[l->id][k];
		if (k)
			fputc(',', out);
		indent(out, nr);
		report_json_string(out, rt.key[c]);
		fputs(": {", out);
		put_timer(out, rt.total_ns[c], rt.self_ns[c], rt.count[c], rt.par[c]);
		ALLOC_GROW(st, nr + 1, alloc);
		st[nr++] = (struct level){ c, 0 };
	}
	put_metadata(out, p, "seconds of wall-clock time (the regions' own durations)");
	free(st);
	rtimers_release(&rt);
	return ferror(out) ? -EIO : 0;
}

int report_write_timers(FILE *out, const struct profile *p, const struct report_filter *f,
			const bool *keep)
{
	if (p->nr_regions)
		return write_region_timers(out, p, f, keep);
	return write_sample_timers(out, p, keep);
}

