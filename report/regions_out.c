// SPDX-License-Identifier: MIT
/*
 * What the regions (regions.c) look like in the text reports: the region
 * table (--format regions), the line of a --region report, and the
 * sections of --by-region.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "model.h"
#include "report.h"

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
		const char *d = report_region_domain(p, x);

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
		put_seconds(out, report_region_mean(x));
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
