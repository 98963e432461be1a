// SPDX-License-Identifier: MIT
/* The report's entry point: formats, sample selection, sections, and which writer writes them. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"
#include "model.h"

static const struct name_value format_names[] = {
	{ "table", REPORT_TABLE },
	{ "folded", REPORT_FOLDED },
	{ "tree", REPORT_TREE },
	{ "callers", REPORT_CALLERS },
	{ "callees", REPORT_CALLEES },
	{ "regions", REPORT_REGIONS },
	{ "groups", REPORT_GROUPS },
	{ "json", REPORT_JSON },
	{ "timers", REPORT_TIMERS },
	{ "speedscope", REPORT_SPEEDSCOPE },
	{ "chrome", REPORT_CHROME },
	{ "pprof", REPORT_PPROF },
	{ "svg", REPORT_SVG },
	{ "html", REPORT_HTML },
};

bool report_format_is_export(enum report_format fmt)
{
	return fmt >= REPORT_JSON;
}

int report_format_parse(const char *s, enum report_format *out)
{
	int v = name_lookup(format_names, ARRAY_SIZE(format_names), s);

	if (v < 0)
		return -EINVAL;
	*out = (enum report_format)v;
	return 0;
}

static int write_section(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep, const char *prefix)
{
	switch (o->format) {
	case REPORT_FOLDED:
		report_write_folded(out, p, prefix, o->region_frames, keep);
		return 0;
	case REPORT_TREE:
		report_write_tree(out, p, o, keep);
		return 0;
	case REPORT_CALLERS:
	case REPORT_CALLEES:
		return report_write_calls(out, p, o, keep);
	case REPORT_GROUPS:
		report_write_groups(out, p, o, keep);
		return 0;
	case REPORT_TABLE:
		break;
	default:
		return -EINVAL;	/* exports are written whole, by report_write */
	}
	report_write_table(out, p, o, keep);
	return 0;
}

static int write_export(FILE *out, const struct profile *p, const struct report_opts *o,
			const bool *keep)
{
	switch (o->format) {
	case REPORT_JSON:
		return report_write_json(out, p, &o->filter, &o->group_by, o->frames, keep);
	case REPORT_TIMERS:
		return report_write_timers(out, p, &o->filter, keep);
	case REPORT_SPEEDSCOPE:
		return report_write_speedscope(out, p, &o->filter, keep);
	case REPORT_CHROME:
		return report_write_chrome(out, p, &o->filter, keep);
	case REPORT_PPROF:
		return report_write_pprof(out, p, keep);
	case REPORT_SVG:
	case REPORT_HTML:
		return report_write_flame_profile(out, p, keep, o->format == REPORT_HTML,
						  o->region_frames);
	default:
		return -EINVAL;
	}
}

/* What --format groups groups by when --group-by does not say: perf report --sort comm,dso. */
static const struct report_group_by default_groups = {
	{ REPORT_GROUP_COMM, REPORT_GROUP_MODULE }, 2
};

/* The checks of the options against the profile, before anything is written. */
static int check_opts(const struct profile *p, const struct report_opts *o)
{
	if (o->filter.region) {
		size_t named;

		free(report_region_inside(p, o->filter.region, &named));
		if (!named)
			return -ESRCH;
	}
	if (o->filter.module) {
		bool any;

		free(report_funcs_in_module(p, o->filter.module, &any));
		if (!any)
			return -ENXIO;
	}
	if (o->split) {
		struct report_pysplit *ps = report_pysplit_new(p);
		bool any = report_pysplit_any(ps);

		report_pysplit_free(ps);
		if (!any)
			return -ENOEXEC;
	}
	return 0;
}

/* A --per-process title's resident memory: "; RSS peak 98.0 MiB, from 16.0 to 96.0 MiB". */
static void put_process_rss(FILE *out, const struct profile_process *pr)
{
	const struct profile_rss *peak = NULL;

	for (size_t k = 0; k < pr->nr_rss; k++)
		if (!peak || pr->rss[k].rss > peak->rss)
			peak = &pr->rss[k];
	if (!peak)
		return;
	fprintf(out, "; RSS peak %.1f MiB, from %.1f to %.1f MiB", peak->rss / 1048576.0,
		pr->rss[0].rss / 1048576.0, pr->rss[pr->nr_rss - 1].rss / 1048576.0);
}

static int write_report(FILE *out, const struct profile *p, const struct report_opts *opts)
{
	struct report_opts grouped;
	const struct report_opts *o = opts;
	uint64_t kept;
	bool *keep;
	int ret = check_opts(p, opts);

	if (ret < 0)
		return ret;
	if (opts->format == REPORT_GROUPS && !opts->group_by.nr) {
		grouped = *opts;
		grouped.group_by = default_groups;
		o = &grouped;
	}
	keep = report_select_samples(p, &o->filter, PROFILE_NONE, PROFILE_NONE, &kept);
	if (o->format == REPORT_REGIONS) {
		/* the regions are the report: a profile may have them and no sample */
		if (!p->nr_regions && !p->meta.regions.events && !p->nr_marks) {
			free(keep);
			return -ENOMSG;
		}
		if (kept)
			report_write_header(out, p, o, keep);
		ret = report_write_regions(out, p, o, keep);
		free(keep);
		return ret < 0 ? ret : ferror(out) ? -EIO : 0;
	}
	if (!kept) {
		free(keep);
		return -ENODATA;
	}
	/* nothing is written when nothing can match */
	if ((o->format == REPORT_CALLERS || o->format == REPORT_CALLEES) && o->match &&
	    !report_any_match(p, keep, o->match, o->lines)) {
		free(keep);
		return -ENOENT;
	}
	if (report_format_is_export(o->format)) {
		ret = write_export(out, p, o, keep);
		free(keep);
		return ret < 0 ? ret : ferror(out) ? -EIO : 0;
	}
	if (o->format != REPORT_FOLDED)
		report_write_header(out, p, o, keep);
	if (o->filter.region && o->format != REPORT_FOLDED)
		report_write_region_line(out, p, o, keep);
	if (o->split && (o->format == REPORT_TABLE || o->format == REPORT_GROUPS))
		report_write_split_line(out, p, keep);
	/* the groups of everything kept, before the function tables */
	if (o->group_by.nr && o->format == REPORT_TABLE)
		report_write_groups(out, p, o, keep);
	if (o->by_region) {
		ret = report_write_by_region(out, p, o, keep, report_write_table);
	} else if (!o->per_thread && !o->per_process) {
		ret = write_section(out, p, o, keep, NULL);
	} else {
		size_t nr = o->per_thread ? p->nr_threads : p->nr_procs;
		bool *has = xcalloc(nr + 1, 1), any = false, hosts = report_many_hosts(p);
		struct sbuf name = SBUF_INIT;

		for (size_t i = 0; i < p->nr_samples; i++) {
			uint32_t t = p->samples[i].thread;

			if (keep[i])
				has[o->per_thread ? t : p->threads[t].process] = true;
		}
		for (size_t x = 0; x < nr; x++) {
			char *title;
			uint64_t n;
			bool *k;

			if (!has[x])
				continue;
			/* a process's rank and, from several hosts, its host tell it apart */
			if (o->per_thread) {
				k = report_select_samples(p, &o->filter, x, PROFILE_NONE, &n);
				title = xstrdup(report_thread_title(p, x, hosts, &name));
			} else {
				k = report_select_samples(p, &o->filter, PROFILE_NONE, x, &n);
				title = xstrdup(report_process_title(p, x, hosts, &name));
			}
			if (o->format != REPORT_FOLDED) {
				fprintf(out, "\n=== %s === %" PRIu64 " samples (%.1f%%)", title, n,
					100.0 * n / kept);
				/* a process's title ends with its resident memory */
				if (o->per_process)
					put_process_rss(out, &p->procs[x]);
				fputc('\n', out);
			}
			/* callers/callees: fine as long as some section had a match */
			if (!write_section(out, p, o, k, title))
				any = true;
			free(title);
			free(k);
		}
		free(has);
		sbuf_release(&name);
		ret = any ? 0 : -ENOENT;
	}
	free(keep);
	if (ferror(out))
		ret = -EIO;
	return ret;
}

int report_write(FILE *out, const struct profile *raw, const struct report_opts *raw_opts)
{
	struct report_display d;
	struct report_frames_view v;
	const struct profile *p = report_frames_init(&v, report_display_init(&d, raw), raw_opts->frames);
	struct report_opts o = *raw_opts;
	const char **inputs = xcalloc(o.nr_inputs + 1, sizeof(*inputs));
	int ret;

	/* what the user names is compared with the names as printed, escaped the same way */
	o.filter.comm = report_display_str(&d, o.filter.comm);
	o.filter.module = report_display_str(&d, o.filter.module);
	o.filter.region = report_display_str(&d, o.filter.region);
	for (size_t i = 0; i < o.nr_inputs; i++)
		inputs[i] = report_display_str(&d, o.inputs[i]);
	o.inputs = inputs;
	ret = write_report(out, p, &o);
	free(inputs);
	report_frames_release(&v);
	report_display_release(&d);
	return ret;
}
