// SPDX-License-Identifier: MIT
/*
 * What the groups (groups.c) look like: the groups' table of --group-by
 * and --format groups, the Python split's line and columns of --split, and
 * the groups in --format json.
 */
#include "internal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/text.h"
#include "model.h"
#include "report.h"

/* Widest a key's column is padded to; longer names push the next column over. */
#define KEY_WIDTH_MAX 40

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * n / total : 0.0;
}

void report_write_groups(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep)
{
	struct report_groups g;
	size_t width[REPORT_GROUP_NR] = { 0 }, rows;
	char ns[48], w1[32], w2[32];
	struct sbuf label = SBUF_INIT;

	report_groups_build(&g, p, &o->group_by, keep);
	report_groups_sort(&g, p, o->group_sort);
	rows = o->limit && o->limit < g.nr ? o->limit : g.nr;
	for (size_t k = 0; k < g.by.nr; k++) {
		width[k] = strlen(report_group_key_name(g.by.keys[k]));
		for (size_t r = 0; r < rows; r++) {
			size_t w = strlen(report_group_label(&g, p, r, k, &label));

			if (w > width[k])
				width[k] = w < KEY_WIDTH_MAX ? w : KEY_WIDTH_MAX;
		}
	}
	fprintf(out, "\n%15s %9s %6s %9s %6s", "nsamples", report_self_heading(p), "tot%",
		report_cum_heading(p), "cum%");
	if (o->split)
		fprintf(out, " %6s %7s %8s", "py%", "native%", "outside%");
	fputs(" ", out);
	for (size_t k = 0; k < g.by.nr; k++)
		fprintf(out, k ? "  %-*s" : " %-*s", k + 1 < g.by.nr ? (int)width[k] : 0,
			report_group_key_name(g.by.keys[k]));
	fputc('\n', out);
	for (size_t r = 0; r < rows; r++) {
		const struct report_group *x = &g.rows[r];

		snprintf(ns, sizeof(ns), "%" PRIu64 "/%" PRIu64, x->self, x->cum);
		fprintf(out, "%15s %9s %5.1f%% %9s %5.1f%%", ns, report_weight_str(p, x->self_ns, w1, sizeof(w1)),
			report_share(p, x->self, x->self_ns, g.total, g.total_ns),
			report_weight_str(p, x->cum_ns, w2, sizeof(w2)),
			report_share(p, x->cum, x->cum_ns, g.total, g.total_ns));
		if (o->split)
			fprintf(out, " %5.1f%% %6.1f%% %7.1f%%", pct(x->split[REPORT_PY_CODE], g.total),
				pct(x->split[REPORT_PY_NATIVE], g.total),
				pct(x->split[REPORT_PY_OUTSIDE], g.total));
		fputs(" ", out);
		for (size_t k = 0; k < g.by.nr; k++)
			fprintf(out, k ? "  %-*s" : " %-*s", k + 1 < g.by.nr ? (int)width[k] : 0,
				report_group_label(&g, p, r, k, &label));
		fputc('\n', out);
	}
	if (rows < g.nr)
		fprintf(out, "... %zu more group%s (--limit 0 shows all)\n", g.nr - rows,
			g.nr - rows == 1 ? "" : "s");
	sbuf_release(&label);
	report_groups_release(&g);
}

void report_write_split_line(FILE *out, const struct profile *p, const bool *keep)
{
	struct report_pysplit *ps = report_pysplit_new(p);
	uint64_t n[REPORT_PY_NR] = { 0 }, total = 0;

	for (size_t i = 0; i < p->nr_samples; i++) {
		if (keep && !keep[i])
			continue;
		n[report_pysplit_class(ps, p, i)]++;
		total++;
	}
	fprintf(out, "Python split: Python code %" PRIu64 " (%.1f%%), native code called from Python %"
		PRIu64 " (%.1f%%), native code outside Python %" PRIu64 " (%.1f%%)",
		n[REPORT_PY_CODE], pct(n[REPORT_PY_CODE], total), n[REPORT_PY_NATIVE],
		pct(n[REPORT_PY_NATIVE], total), n[REPORT_PY_OUTSIDE], pct(n[REPORT_PY_OUTSIDE], total));
	if (n[REPORT_PY_NONE])
		fprintf(out, ", processes without Python %" PRIu64 " (%.1f%%)", n[REPORT_PY_NONE],
			pct(n[REPORT_PY_NONE], total));
	fputc('\n', out);
	report_pysplit_free(ps);
}

/* ---- json ---- */

/* jansson takes only UTF-8: a name that is not (report_display_init makes them printable) is escaped. */
static json_t *str(const char *s)
{
	char *clean = text_printable(s);
	json_t *j = json_string(clean ? clean : s);

	free(clean);
	return j ? j : json_string("?");
}

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

struct json_t *report_groups_json(const struct profile *p, const struct report_group_by *by,
				  const bool *keep)
{
	struct report_groups g;
	json_t *j = json_object(), *keys = json_array(), *rows = json_array();
	struct sbuf label = SBUF_INIT;

	report_groups_build(&g, p, by, keep);
	report_groups_sort(&g, p, REPORT_SORT_TOTTIME);
	for (size_t k = 0; k < g.by.nr; k++)
		json_array_append_new(keys, json_string(report_group_key_name(g.by.keys[k])));
	for (size_t r = 0; r < g.nr; r++) {
		const struct report_group *x = &g.rows[r];
		json_t *row = json_object();

		for (size_t k = 0; k < g.by.nr; k++) {
			/* a rank is a number, null for the processes without one */
			if (g.by.keys[k] == REPORT_GROUP_RANK) {
				json_object_set_new(row, "rank", x->value[k] == (uint32_t)PROFILE_RANK_NONE ?
						    json_null() : json_integer(x->value[k]));
				continue;
			}
			json_object_set_new(row, report_group_key_name(g.by.keys[k]),
					    str(report_group_label(&g, p, r, k, &label)));
			if (g.by.keys[k] == REPORT_GROUP_PROCESS)
				json_object_set_new(row, "pid", json_integer(p->procs[x->value[k]].pid));
		}
		json_object_set_new(row, "self_samples", u64(x->self));
		json_object_set_new(row, "total_samples", u64(x->cum));
		if (report_counts_events(p)) {
			/* a counting event's weights are events */
			json_object_set_new(row, "self_seconds", json_null());
			json_object_set_new(row, "total_seconds", json_null());
			json_object_set_new(row, "self_events", u64(x->self_ns));
			json_object_set_new(row, "total_events", u64(x->cum_ns));
		} else {
			json_object_set_new(row, "self_seconds", json_real(x->self_ns / 1e9));
			json_object_set_new(row, "total_seconds", json_real(x->cum_ns / 1e9));
		}
		json_object_set_new(row, "python_samples", u64(x->split[REPORT_PY_CODE]));
		json_object_set_new(row, "native_samples", u64(x->split[REPORT_PY_NATIVE]));
		json_object_set_new(row, "outside_python_samples", u64(x->split[REPORT_PY_OUTSIDE]));
		json_array_append_new(rows, row);
	}
	json_object_set_new(j, "by", keys);
	json_object_set_new(j, "samples", u64(g.total));
	json_object_set_new(j, "python_samples", u64(g.split[REPORT_PY_CODE]));
	json_object_set_new(j, "native_samples", u64(g.split[REPORT_PY_NATIVE]));
	json_object_set_new(j, "outside_python_samples", u64(g.split[REPORT_PY_OUTSIDE]));
	json_object_set_new(j, "rows", rows);
	sbuf_release(&label);
	report_groups_release(&g);
	return j;
}
