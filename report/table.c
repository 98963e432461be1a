// SPDX-License-Identifier: MIT
/* The cProfile-style table (--format table), by function or by line, and folded stacks (--format folded). */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>

#include "model.h"
#include "report.h"

void report_write_table(FILE *out, const struct profile *p, const struct report_opts *o,
			const bool *keep)
{
	size_t nr;
	uint64_t total, total_ns;
	struct report_func_stat *st = o->lines ? report_line_stats(p, keep, &nr, &total, &total_ns) :
					report_func_stats(p, keep, &nr, &total, &total_ns);
	size_t rows = o->limit && o->limit < nr ? o->limit : nr;
	struct sbuf label = SBUF_INIT;
	char ns[48], w1[32], w2[32];
	struct report_split_row *split = NULL;

	if (o->split) {
		struct report_pysplit *ps = report_pysplit_new(p);

		split = report_row_splits(p, ps, keep, o->lines);
		report_pysplit_free(ps);
	}
	report_sort_stats(p, st, nr, o->sort);
	fprintf(out, "\n%15s %9s %6s %9s %6s", "nsamples", report_self_heading(p), "tot%",
		report_cum_heading(p), "cum%");
	if (split)
		fprintf(out, " %6s %7s", "py%", "native%");
	fprintf(out, "  %s\n", "filename:lineno(function)");
	for (size_t i = 0; i < rows; i++) {
		const struct report_func_stat *s = &st[i];

		snprintf(ns, sizeof(ns), "%" PRIu64 "/%" PRIu64, s->self, s->cum);
		fprintf(out, "%15s %9s %5.1f%% %9s %5.1f%%", ns,
			report_weight_str(p, s->self_ns, w1, sizeof(w1)),
			report_share(p, s->self, s->self_ns, total, total_ns),
			report_weight_str(p, s->cum_ns, w2, sizeof(w2)),
			report_share(p, s->cum, s->cum_ns, total, total_ns));
		if (split) {
			const uint64_t *n = split[o->lines ? s->loc : s->func].n;

			fprintf(out, " %5.1f%% %6.1f%%", total ? 100.0 * n[REPORT_PY_CODE] / total : 0.0,
				total ? 100.0 * n[REPORT_PY_NATIVE] / total : 0.0);
		}
		fprintf(out, "  %s\n", report_row_label_sb(&label, p, s));
	}
	sbuf_release(&label);
	free(split);
	if (rows < nr)
		fprintf(out, "... %zu more %s%s (--limit 0 shows all)\n", nr - rows,
			o->lines ? "line" : "function", nr - rows == 1 ? "" : "s");
	free(st);
}

/* ---- folded ---- */

void report_write_folded(FILE *out, const struct profile *p, const char *prefix, bool region_frames,
			 const bool *keep)
{
	size_t nr;
	struct report_folded *lines = report_folded_lines(p, keep, prefix, region_frames, &nr);

	for (size_t i = 0; i < nr; i++)
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
	report_folded_free(lines, nr);
}
