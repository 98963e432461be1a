// SPDX-License-Identifier: MIT
/*
 * Regions in reports: which region paths a --region spec names, per-path
 * statistics (count, total, self, min, max, and the CPU time of the
 * samples inside), and the region table (--format regions).
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model.h"

/* ---- naming ---- */

/*
 * Region node NODE's path, outermost first, whatever its depth and names'
 * lengths: each name after PREFIX, SEP between them (FOLDED: the folded
 * format's separators inside names made harmless). A string to free.
 */
static char *region_path(const struct profile *p, uint32_t node, const char *prefix, const char *sep,
			 bool folded)
{
	uint32_t *chain = NULL;
	size_t depth = 0, alloc = 0, len;
	struct sbuf label = SBUF_INIT;
	char *buf = NULL;
	FILE *m;

	for (uint32_t a = node; a != PROFILE_NONE; a = p->region_nodes[a].parent) {
		ALLOC_GROW(chain, depth + 1, alloc);
		chain[depth++] = a;
	}
	m = open_memstream(&buf, &len);
	if (!m)
		xmalloc(SIZE_MAX);	/* reports out of memory */
	while (depth--) {
		const char *name = report_region_label_sb(&label, p, p->region_nodes[chain[depth]].name);

		fputs(prefix, m);
		/* the separators of the folded format, as report_folded_lines makes them harmless */
		for (const char *c = name; *c; c++)
			fputc(!folded ? *c : *c == ';' ? ':' : (*c == '\n' || *c == '\r') ? ' ' : *c, m);
		if (depth)
			fputs(sep, m);
	}
	if (fclose(m))
		xmalloc(SIZE_MAX);
	sbuf_release(&label);
	free(chain);
	return buf;
}

char *report_region_path_dup(const struct profile *p, uint32_t node)
{
	return region_path(p, node, "", "/", false);
}

/* Whether node N's own name is COMP (LEN bytes): its name, or DOMAIN::NAME. */
static bool name_is(const struct profile *p, uint32_t n, const char *comp, size_t len)
{
	const struct profile_region_name *e = &p->region_names[p->region_nodes[n].name];
	size_t dl = strlen(e->domain);

	if (strlen(e->name) == len && !memcmp(e->name, comp, len))
		return true;
	return dl && len == dl + 2 + strlen(e->name) && !memcmp(comp, e->domain, dl) &&
	       !memcmp(comp + dl, "::", 2) && !memcmp(comp + dl + 2, e->name, len - dl - 2);
}

/*
 * Whether node N is what SPEC names: a region's name (a name holding '/'
 * included), or a path "a/b" that N's path ends with ("/a/b": that starts
 * at a thread's top).
 */
static bool spec_names(const struct profile *p, uint32_t n, const char *spec)
{
	bool anchored = spec[0] == '/';
	const char *end = spec + strlen(spec);

	if (name_is(p, n, spec, strlen(spec)))
		return true;
	if (anchored)
		spec++;
	for (;;) {
		const char *slash = end;

		while (slash > spec && slash[-1] != '/')
			slash--;
		if (n == PROFILE_NONE || !name_is(p, n, slash, (size_t)(end - slash)))
			return false;
		n = p->region_nodes[n].parent;
		if (slash == spec)
			return !anchored || n == PROFILE_NONE;
		end = slash - 1;
	}
}

bool *report_region_inside(const struct profile *p, const char *spec, size_t *named)
{
	bool *inside = xcalloc(p->nr_region_nodes + 1, 1);

	*named = 0;
	/* parents come before their children */
	for (size_t n = 0; n < p->nr_region_nodes; n++) {
		uint32_t par = p->region_nodes[n].parent;
		bool hit = spec_names(p, (uint32_t)n, spec);

		*named += hit;
		inside[n] = hit || (par != PROFILE_NONE && inside[par]);
	}
	return inside;
}

/* ---- statistics ---- */

struct row_key {
	uint32_t node, group;
};

struct rows {
	struct report_region_row *v;
	size_t nr, alloc;
	struct idx index;
};

static uint32_t row_of(struct rows *r, uint32_t node, uint32_t group, bool add)
{
	uint64_t h = hash_combine(hash_u64(node), group);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&r->index, h, &pos)) != IDX_NONE)
		if (r->v[id].node == node && r->v[id].group == group)
			return id;
	if (!add)
		return IDX_NONE;
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	id = (uint32_t)r->nr++;
	memset(&r->v[id], 0, sizeof(r->v[id]));
	r->v[id].node = node;
	r->v[id].group = group;
	r->v[id].min_ns = UINT64_MAX;
	idx_insert(&r->index, h, id);
	return id;
}

static uint32_t group_of(const struct profile *p, uint32_t thread, enum report_region_split split)
{
	return split == REPORT_SPLIT_THREAD ? thread :
	       split == REPORT_SPLIT_PROCESS ? p->threads[thread].process : PROFILE_NONE;
}

bool report_region_kept(const struct profile *p, const struct profile_region *r,
			const struct report_filter *f, const bool *thread_ok)
{
	(void)p;
	return thread_ok[r->thread] && r->end_ns >= f->from_ns && (!f->to_ns || r->start_ns < f->to_ns);
}

struct report_region_row *report_region_stats(const struct profile *p, const struct report_filter *f,
					      const bool *keep, enum report_region_split split,
					      size_t *nr, struct report_region_totals *tot)
{
	bool *thread_ok = report_threads_matching(p, f);
	uint64_t *child_ns = xcalloc(p->nr_regions + 1, sizeof(*child_ns));
	size_t *stack = xmalloc(st_mult(p->nr_regions + 1, sizeof(*stack))), depth = 0;
	bool *seen_thread = xcalloc(p->nr_threads + 1, 1), *seen_node = xcalloc(p->nr_region_nodes + 1, 1);
	struct rows r = { 0 };
	bool wall = p->meta.mode && !strcmp(p->meta.mode, "wall");

	memset(tot, 0, sizeof(*tot));
	/* a region's self time: its duration less its children's, on its own thread */
	for (size_t i = 0; i < p->nr_regions; i++) {
		const struct profile_region *x = &p->regions[i];

		while (depth) {
			const struct profile_region *top = &p->regions[stack[depth - 1]];

			if (top->thread == x->thread && top->start_ns <= x->start_ns && x->end_ns <= top->end_ns)
				break;
			depth--;
		}
		if (depth && p->regions[stack[depth - 1]].node == p->region_nodes[x->node].parent)
			child_ns[stack[depth - 1]] += x->end_ns - x->start_ns;
		stack[depth++] = i;
	}
	for (size_t i = 0; i < p->nr_regions; i++) {
		const struct profile_region *x = &p->regions[i];
		struct report_region_row *row;
		uint64_t d = x->end_ns - x->start_ns;
		uint32_t id;

		if (!report_region_kept(p, x, f, thread_ok))
			continue;
		id = row_of(&r, x->node, group_of(p, x->thread, split), true);
		row = &r.v[id];
		row->count++;
		row->total_ns += d;
		row->self_ns += d > child_ns[i] ? d - child_ns[i] : 0;
		row->min_ns = d < row->min_ns ? d : row->min_ns;
		row->max_ns = d > row->max_ns ? d : row->max_ns;
		row->open += !!(x->flags & PROFILE_REGION_OPEN_AT_EXIT);
		row->open_end += !!(x->flags & PROFILE_REGION_OPEN_AT_END);
		row->open_start += !!(x->flags & PROFILE_REGION_OPEN_AT_START);
		tot->instances++;
		tot->threads += !seen_thread[x->thread];
		seen_thread[x->thread] = true;
		tot->regions += !seen_node[x->node];
		seen_node[x->node] = true;
	}
	/*
	 * The samples inside each region: its own and its nested regions'; in
	 * wall mode those that found the thread on a CPU.
	 */
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t g;

		if (!keep[i] || s->region == PROFILE_NONE ||
		    (wall && s->state != PROFILE_STATE_ON_CPU))
			continue;
		g = group_of(p, s->thread, split);
		for (uint32_t a = s->region; a != PROFILE_NONE; a = p->region_nodes[a].parent) {
			uint32_t id = row_of(&r, a, g, false);

			if (id == IDX_NONE)
				continue;
			r.v[id].samples++;
			r.v[id].cpu_ns += s->weight_ns;
		}
	}
	for (size_t i = 0; i < p->nr_marks; i++)
		tot->marks += thread_ok[p->marks[i].thread] && p->marks[i].time_ns >= f->from_ns &&
			      (!f->to_ns || p->marks[i].time_ns < f->to_ns);
	for (size_t i = 0; i < r.nr; i++)
		if (!r.v[i].count)
			r.v[i].min_ns = 0;
	idx_release(&r.index);
	free(thread_ok);
	free(child_ns);
	free(stack);
	free(seen_thread);
	free(seen_node);
	*nr = r.nr;
	return r.v;
}

/* ---- sorting ---- */

static const struct name_value sort_names[] = {
	{ "total", REPORT_RSORT_TOTAL },
	{ "avg", REPORT_RSORT_AVG },
	{ "mean", REPORT_RSORT_AVG },
	{ "min", REPORT_RSORT_MIN },
	{ "max", REPORT_RSORT_MAX },
	{ "count", REPORT_RSORT_COUNT },
	{ "self", REPORT_RSORT_SELF },
	{ "cpu", REPORT_RSORT_CPU },
	{ "name", REPORT_RSORT_NAME },
};

int report_region_sort_parse(const char *s, enum report_region_sort *out)
{
	int v = name_lookup(sort_names, ARRAY_SIZE(sort_names), s);

	if (v < 0)
		return -EINVAL;
	*out = (enum report_region_sort)v;
	return 0;
}

struct sort_ctx {
	const struct profile *p;
	enum report_region_sort key;
	char **paths;           /* per row */
};

static int desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static uint64_t mean(const struct report_region_row *x)
{
	return x->count ? x->total_ns / x->count : 0;
}

static const char *domain_of(const struct profile *p, const struct report_region_row *x)
{
	return p->region_names[p->region_nodes[x->node].name].domain;
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct report_region_row *x = a, *y = b;
	int r;

	/* grouped by split, then by domain (the default one first) */
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if ((r = strcmp(domain_of(c->p, x), domain_of(c->p, y))))
		return r;
	switch (c->key) {
	case REPORT_RSORT_TOTAL: r = desc(x->total_ns, y->total_ns); break;
	case REPORT_RSORT_AVG: r = desc(mean(x), mean(y)); break;
	case REPORT_RSORT_MIN: r = desc(x->min_ns, y->min_ns); break;
	case REPORT_RSORT_MAX: r = desc(x->max_ns, y->max_ns); break;
	case REPORT_RSORT_COUNT: r = desc(x->count, y->count); break;
	case REPORT_RSORT_SELF: r = desc(x->self_ns, y->self_ns); break;
	case REPORT_RSORT_CPU: r = desc(x->cpu_ns, y->cpu_ns); break;
	case REPORT_RSORT_NAME: r = 0; break;
	}
	if (r)
		return r;
	/* then by path, which keeps equal keys in one order every time */
	return strcmp(c->paths[x->path], c->paths[y->path]);
}

char **report_region_rows_order(const struct profile *p, struct report_region_row *v, size_t nr,
				enum report_region_sort key)
{
	struct sort_ctx c = { p, key, xcalloc(nr + 1, sizeof(char *)) };

	for (size_t i = 0; i < nr; i++) {
		c.paths[i] = report_region_path_dup(p, v[i].node);
		v[i].path = i;
	}
	QSORT_R(v, nr, row_cmp, &c);
	return c.paths;
}

void report_region_paths_free(char **paths, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(paths[i]);
	free(paths);
}

/* ---- the table ---- */

static void put_seconds(FILE *out, uint64_t ns)
{
	fprintf(out, " %10.6f", ns / 1e9);
}

/* A section's title: its group (--group-by, TG), thread or process. */
static void put_title(FILE *out, const struct profile *p, enum report_region_split split, uint32_t g,
		      const struct report_thread_groups *tg)
{
	struct sbuf s = SBUF_INIT;

	if (tg->nr)
		fprintf(out, "\n=== %s ===\n", tg->label[g]);
	else if (split == REPORT_SPLIT_THREAD)
		fprintf(out, "\n=== %s ===\n", report_thread_title(p, g, report_many_hosts(p), &s));
	else if (split == REPORT_SPLIT_PROCESS)
		fprintf(out, "\n=== %s ===\n", report_process_title(p, g, report_many_hosts(p), &s));
	sbuf_release(&s);
}

int report_write_regions(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep)
{
	/* --group-by: the threads' rows added up per group (ranks.c) */
	enum report_region_split split = o->per_thread || o->group_by.nr ? REPORT_SPLIT_THREAD :
					 o->per_process ? REPORT_SPLIT_PROCESS : REPORT_SPLIT_NONE;
	const struct profile_region_stats *st = &p->meta.regions;
	struct report_thread_groups tg = { 0 };
	struct report_region_totals tot;
	size_t nr, rows = 0;
	struct report_region_row *v;
	char **paths;
	uint64_t wall = p->meta.duration_ns, paused = 0;
	uint32_t group = UINT32_MAX - 1;
	const char *domain = NULL;

	if (o->group_by.nr && report_thread_groups_init(&tg, p, &o->group_by) < 0)
		return -EINVAL;
	v = report_region_stats(p, &o->filter, keep, split, &nr, &tot);
	if (o->group_by.nr)
		v = report_region_rows_by_group(v, &nr, &tg);
	paths = report_region_rows_order(p, v, nr, o->region_sort);

	for (size_t i = 0; i < p->nr_pauses; i++)
		paused += p->pauses[i].end_ns - p->pauses[i].start_ns;
	fprintf(out, "\nRegions: %" PRIu64 " instance%s of %" PRIu64 " region path%s in %" PRIu64
		" thread%s, %" PRIu64 " mark%s\n", tot.instances, tot.instances == 1 ? "" : "s",
		tot.regions, tot.regions == 1 ? "" : "s", tot.threads, tot.threads == 1 ? "" : "s",
		tot.marks, tot.marks == 1 ? "" : "s");
	fprintf(out, "Region events: %" PRIu64 ", dropped %" PRIu64 ", unbalanced %" PRIu64
		", open at exit %" PRIu64, st->events, st->dropped, st->unbalanced, st->open_at_exit);
	if (st->open_at_start)
		fprintf(out, ", open at the start %" PRIu64, st->open_at_start);
	if (st->open_at_end)
		fprintf(out, ", open at the end %" PRIu64, st->open_at_end);
	if (st->torn)
		fprintf(out, ", torn %" PRIu64, st->torn);
	fputc('\n', out);
	if (p->nr_pauses)
		fprintf(out, "Paused %zu time%s, %.3f s (%" PRIu64 " region event%s left out)\n",
			p->nr_pauses, p->nr_pauses == 1 ? "" : "s", paused / 1e9, st->paused,
			st->paused == 1 ? "" : "s");
	if (st->dropped)
		fprintf(out, "Some events were dropped: a process's event file was full (raise "
			"PROFTOOL_REGIONS_MB, 256 by default), or ITT tasks nested deeper than 128\n");
	for (size_t i = 0; i < nr; i++) {
		const struct report_region_row *x = &v[i];
		const char *d = domain_of(p, x);

		if (o->limit && rows >= o->limit)
			break;
		if (x->group != group) {
			put_title(out, p, split, x->group, &tg);
			group = x->group;
			domain = NULL;
		}
		if (!domain || strcmp(domain, d)) {
			if (*d || domain)
				fprintf(out, "\nDomain %s\n", *d ? d : "(default)");
			fprintf(out, "%s%8s %11s %11s %11s %11s %11s %7s %11s  %s\n", *d || domain ? "" : "\n",
				"count", "total", "self", "mean", "min", "max", "%wall", "cpu", "region");
			domain = d;
		}
		fprintf(out, "%8" PRIu64, x->count);
		put_seconds(out, x->total_ns);
		put_seconds(out, x->self_ns);
		put_seconds(out, mean(x));
		put_seconds(out, x->min_ns);
		put_seconds(out, x->max_ns);
		fprintf(out, " %6.1f%%", wall ? 100.0 * x->total_ns / wall : 0.0);
		put_seconds(out, x->cpu_ns);
		fprintf(out, "  %s%s%s%s\n", paths[x->path], x->open ? " [open at exit]" : "",
			x->open_start ? " [open at the start]" : "", x->open_end ? " [open at the end]" : "");
		rows++;
	}
	if (rows < nr)
		fprintf(out, "... %zu more region%s (--limit 0 shows all)\n", nr - rows,
			nr - rows == 1 ? "" : "s");
	report_region_paths_free(paths, nr);
	free(v);
	report_thread_groups_release(&tg);
	return 0;
}

/* ---- --region, --by-region ---- */

/* Totals of the instances of the nodes in WHICH (none nested in another of them). */
static void sum_nodes(const struct profile *p, const struct report_opts *o, const bool *keep,
		      const bool *which, struct report_region_row *sum)
{
	struct report_region_totals tot;
	size_t nr;
	struct report_region_row *v = report_region_stats(p, &o->filter, keep, REPORT_SPLIT_NONE, &nr, &tot);

	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < nr; i++) {
		uint32_t par = p->region_nodes[v[i].node].parent;
		bool outer = true;

		if (!which[v[i].node])
			continue;
		for (uint32_t a = par; a != PROFILE_NONE && outer; a = p->region_nodes[a].parent)
			outer = !which[a];
		if (!outer)
			continue;
		sum->count += v[i].count;
		sum->total_ns += v[i].total_ns;
		sum->samples += v[i].samples;
		sum->cpu_ns += v[i].cpu_ns;
		sum->open += v[i].open;
	}
	free(v);
}

static void put_region_figures(FILE *out, const struct report_region_row *s)
{
	fprintf(out, "%" PRIu64 " instance%s, total %.6f s, cpu %.6f s (%" PRIu64 " sample%s)",
		s->count, s->count == 1 ? "" : "s", s->total_ns / 1e9, s->cpu_ns / 1e9, s->samples,
		s->samples == 1 ? "" : "s");
	if (s->open)
		fprintf(out, ", %" PRIu64 " open at exit", s->open);
}

void report_write_region_line(FILE *out, const struct profile *p, const struct report_opts *o,
			      const bool *keep)
{
	size_t named;
	bool *inside = report_region_inside(p, o->filter.region, &named);
	bool *which = xcalloc(p->nr_region_nodes + 1, 1);
	struct report_region_row sum;
	struct report_filter all = o->filter;
	struct report_opts oo = *o;

	for (size_t n = 0; n < p->nr_region_nodes; n++) {
		uint32_t par = p->region_nodes[n].parent;

		which[n] = inside[n] && (par == PROFILE_NONE || !inside[par]);
	}
	/* the samples KEEP has are the region's already; its instances are counted unfiltered by it */
	all.region = NULL;
	oo.filter = all;
	sum_nodes(p, &oo, keep, which, &sum);
	fprintf(out, "Region %s: %zu path%s, ", o->filter.region, named, named == 1 ? "" : "s");
	put_region_figures(out, &sum);
	fputc('\n', out);
	free(inside);
	free(which);
}

static int path_cmp(const void *a, const void *b, void *arg)
{
	char *const *paths = arg;

	return strcmp(paths[*(const uint32_t *)a], paths[*(const uint32_t *)b]);
}

int report_write_by_region(FILE *out, const struct profile *p, const struct report_opts *o,
			   const bool *keep,
			   void (*section)(FILE *out, const struct profile *p,
					   const struct report_opts *o, const bool *keep))
{
	uint32_t *order = xmalloc(st_mult(p->nr_region_nodes + 1, sizeof(*order)));
	char **paths = xcalloc(p->nr_region_nodes + 1, sizeof(*paths));
	bool *inside = xcalloc(p->nr_region_nodes + 1, 1), *k = xcalloc(p->nr_samples + 1, 1);
	bool *which = xcalloc(p->nr_region_nodes + 1, 1);
	size_t shown = 0;

	for (size_t n = 0; n < p->nr_region_nodes; n++) {
		paths[n] = report_region_path_dup(p, (uint32_t)n);
		order[n] = (uint32_t)n;
	}
	QSORT_R(order, p->nr_region_nodes, path_cmp, paths);
	for (size_t i = 0; i < p->nr_region_nodes; i++) {
		uint32_t node = order[i];
		struct report_region_row sum;
		uint64_t n = 0;

		/* the node and the nodes below it: parents come first */
		for (size_t x = 0; x < p->nr_region_nodes; x++) {
			uint32_t par = p->region_nodes[x].parent;

			inside[x] = x == node || (par != PROFILE_NONE && inside[par]);
		}
		for (size_t s = 0; s < p->nr_samples; s++) {
			uint32_t r = p->samples[s].region;

			k[s] = keep[s] && r != PROFILE_NONE && inside[r];
			n += k[s];
		}
		memset(which, 0, p->nr_region_nodes + 1);
		which[node] = true;
		sum_nodes(p, o, keep, which, &sum);
		if (!sum.count && !n)
			continue;
		fprintf(out, "\n=== region %s === ", paths[node]);
		put_region_figures(out, &sum);
		fputc('\n', out);
		if (n) {
			section(out, p, o, k);
			shown++;
		}
	}
	for (size_t n = 0; n < p->nr_region_nodes; n++)
		free(paths[n]);
	free(paths);
	free(order);
	free(inside);
	free(which);
	free(k);
	return shown ? 0 : -ENODATA;
}

/* ---- for the exports ---- */

bool *report_regions_shown(const struct profile *p, const struct report_filter *f, size_t *nr)
{
	bool *thread_ok = report_threads_matching(p, f);
	bool *shown = xcalloc(p->nr_regions + 1, 1);
	size_t named, n = 0;
	bool *inside = f->region ? report_region_inside(p, f->region, &named) : NULL;

	for (size_t i = 0; i < p->nr_regions; i++) {
		const struct profile_region *r = &p->regions[i];

		shown[i] = report_region_kept(p, r, f, thread_ok) && (!inside || inside[r->node]);
		n += shown[i];
	}
	free(thread_ok);
	free(inside);
	if (nr)
		*nr = n;
	return shown;
}

bool *report_marks_shown(const struct profile *p, const struct report_filter *f, const bool *shown,
			 size_t *nr)
{
	bool *thread_ok = report_threads_matching(p, f);
	bool *keep = xcalloc(p->nr_marks + 1, 1);
	size_t r = 0, n = 0;
	uint32_t thread = PROFILE_NONE;
	uint64_t reach = 0;
	bool any = false;

	/*
	 * Both are by thread, then time. Shown instances nest or are apart, so
	 * a mark is inside one when the latest end of those begun by its time
	 * is not before it.
	 */
	for (size_t i = 0; i < p->nr_marks; i++) {
		const struct profile_mark *m = &p->marks[i];

		if (m->thread != thread) {
			thread = m->thread;
			any = false;
			while (r < p->nr_regions && p->regions[r].thread < thread)
				r++;
		}
		for (; r < p->nr_regions && p->regions[r].thread == thread &&
		       p->regions[r].start_ns <= m->time_ns; r++) {
			if (shown[r] && (!any || p->regions[r].end_ns > reach)) {
				reach = p->regions[r].end_ns;
				any = true;
			}
		}
		keep[i] = (!f->region || (any && reach >= m->time_ns)) && thread_ok[m->thread] &&
			  m->time_ns >= f->from_ns && (!f->to_ns || m->time_ns < f->to_ns);
		n += keep[i];
	}
	free(thread_ok);
	if (nr)
		*nr = n;
	return keep;
}

struct report_span *report_region_spans(const struct profile *p, const bool *shown, size_t *nr)
{
	struct report_span *v = NULL;
	size_t n = 0, alloc = 0, *stack = NULL, depth = 0, alloc_stack = 0;

	for (size_t i = 0; i < p->nr_regions; i++) {
		const struct profile_region *r = &p->regions[i];
		struct report_span *s;

		if (!shown[i])
			continue;
		/* leave the spans this one begins after; a new thread leaves them all */
		while (depth && (v[stack[depth - 1]].thread != r->thread ||
				 v[stack[depth - 1]].end_ns <= r->start_ns))
			depth--;
		ALLOC_GROW(v, n + 1, alloc);
		s = &v[n];
		s->region = i;
		s->thread = r->thread;
		s->start_ns = r->start_ns;
		s->end_ns = r->end_ns;
		s->parent = depth ? stack[depth - 1] : SIZE_MAX;
		/* only a damaged file has one that begins inside another and ends after it */
		if (depth && s->end_ns > v[s->parent].end_ns)
			s->end_ns = v[s->parent].end_ns;
		ALLOC_GROW(stack, depth + 1, alloc_stack);
		stack[depth++] = n++;
	}
	free(stack);
	*nr = n;
	return v;
}

char *report_region_frames(const struct profile *p, uint32_t node)
{
	return region_path(p, node, REPORT_REGION_FRAME, ";", true);
}
