// SPDX-License-Identifier: MIT
/*
 * The report's writers, which report_write() (report.c) dispatches to,
 * and the text helpers they share. Writers read the function model
 * (model.h); nothing in the model calls a writer.
 */
#ifndef PROFTOOL_REPORT_INTERNAL_H
#define PROFTOOL_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* ---- text.c: shared by the writers ---- */

/*
 * S escaped for the inside of a JSON string; with the quotes. The profile
 * a writer gets is printable already (report_display_init); a byte that
 * is still not UTF-8 is written "\\xNN" all the same, as text_printable()
 * writes it.
 */
void report_json_chars(FILE *out, const char *s);
void report_json_string(FILE *out, const char *s);

/*
 * The N bytes at S as XML or HTML text or an attribute value: escaped,
 * and what XML cannot carry (bytes that are not UTF-8, control
 * characters) written U+FFFD, tabs and line ends spaces. Cut to MAX
 * characters: longer text keeps MAX - 2 of them and ends in "..", and
 * nothing is written when even that would not fit (MAX < 3). SIZE_MAX
 * writes everything.
 */
void report_xml_text(FILE *out, const char *s, size_t n, size_t max);

/* ---- the text reports: header, then one or more sections ---- */

/*
 * header.c: the header of the table, tree, callers and callees formats: the
 * recording, and the samples KEEP accepts (chosen by o->filter).
 */
void report_write_header(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep);

/*
 * table.c: the cProfile-style table (a row per function, or per line with
 * o->lines), and folded stacks (PREFIX: a frame put before each root;
 * REGION_FRAMES: the region path next, as report_folded_lines has it).
 */
void report_write_table(FILE *out, const struct profile *p, const struct report_opts *o,
			const bool *keep);
void report_write_folded(FILE *out, const struct profile *p, const char *prefix, bool region_frames,
			 const bool *keep);

/*
 * tree.c: the call tree of the samples KEEP accepts, children by total,
 * nodes under o->min_percent folded; by line with o->lines.
 */
void report_write_tree(FILE *out, const struct profile *p, const struct report_opts *o,
		       const bool *keep);

/*
 * tree.c: pstats' print_callers/print_callees (o->format): for each
 * function, or line with o->lines (matching o->match, in o->sort order, at
 * most o->limit), who called it or what it called, with the samples in
 * which both were on the stack. -ENOENT when none matched.
 */
int report_write_calls(FILE *out, const struct profile *p, const struct report_opts *o,
		       const bool *keep);

/*
 * groups_out.c: the groups' table of the samples KEEP accepts, grouped by
 * o->group_by and sorted by o->group_sort (at most o->limit rows), with the
 * Python split's columns py%, native% and outside% when o->split.
 */
void report_write_groups(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep);
/* groups_out.c: --split's line after the header: the kept samples by Python class. */
void report_write_split_line(FILE *out, const struct profile *p, const bool *keep);

/*
 * regions_out.c: the region table (count, total, self, mean, min, max, %wall,
 * cpu); the caller checks that there are regions.
 */
int report_write_regions(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep);

/* regions_out.c: "Region NAME: N paths, C instances, total, cpu" for a report of o->filter.region. */
void report_write_region_line(FILE *out, const struct profile *p, const struct report_opts *o,
			      const bool *keep);
/*
 * regions_out.c: --by-region: for every region path (by path), its figures and
 * SECTION of the samples KEEP accepts inside it. -ENODATA when no region
 * had a sample.
 */
int report_write_by_region(FILE *out, const struct profile *p, const struct report_opts *o,
			   const bool *keep,
			   void (*section)(FILE *out, const struct profile *p,
					   const struct report_opts *o, const bool *keep));

/* ---- whole-profile formats; each returns 0 or a negative errno ---- */

/*
 * json.c: the aggregated profile (FILTER chose KEEP; the meta says how,
 * and which --frames view FRAMES P is) with the region table and, when BY
 * has keys, the groups.
 */
int report_write_json(FILE *out, const struct profile *p, const struct report_filter *filter,
		      const struct report_group_by *by, enum report_frames frames, const bool *keep);
/*
 * timers.c: hierarchical timers, of the regions FILTER keeps when the
 * profile has regions, else of the samples KEEP accepts.
 */
int report_write_timers(FILE *out, const struct profile *p, const struct report_filter *filter,
			const bool *keep);

/*
 * speedscope.c: speedscope's file format, one sampled profile per thread
 * of the samples KEEP accepts, and an evented one of the regions F keeps.
 */
int report_write_speedscope(FILE *out, const struct profile *p, const struct report_filter *f,
			    const bool *keep);

/*
 * chrome.c: Chrome trace event JSON, a timeline per process and thread of
 * the samples KEEP accepts, and one of the regions and marks F keeps.
 */
int report_write_chrome(FILE *out, const struct profile *p, const struct report_filter *f,
			const bool *keep);

/*
 * groups_out.c: the groups of the samples KEEP accepts by BY, for the JSON
 * report: {"by": [...], "samples": N, ..., "rows": [...]}, largest self
 * first. A new reference (jansson's json_t).
 */
struct json_t *report_groups_json(const struct profile *p, const struct report_group_by *by,
				  const bool *keep);

/* pprof.c: gzip-compressed profile.proto. */
int report_write_pprof(FILE *out, const struct profile *p, const bool *keep);

/* flame.c: self-contained interactive flame graphs. */
struct flame_stack {
	const char *folded;     /* "root;...;leaf" */
	uint64_t count;         /* samples in the profile drawn */
	uint64_t base_count;    /* diff: samples in the base profile */
};
struct flame_input {
	const char *title;
	const char *subtitle;   /* may be NULL */
	uint64_t period_ns;     /* time per sample for tooltips; 0: counts only */
	const char *event;      /* not NULL: period_ns is that many of these events instead */
	const struct flame_stack *stacks;
	size_t nr_stacks;
	bool diff;              /* colour frames by change against the base */
	uint64_t total, base_total; /* sums of count and base_count */
};
int report_write_flame(FILE *out, const struct flame_input *in, bool html);
/* The flame graph of the samples KEEP accepts; REGION_FRAMES: their region paths as frames below the stacks. */
int report_write_flame_profile(FILE *out, const struct profile *p, const bool *keep, bool html,
			       bool region_frames);

#endif
