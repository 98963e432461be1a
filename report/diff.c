// SPDX-License-Identifier: MIT
/*
 * Comparing two profiles (proftool diff): functions whose share of the
 * samples changed, both stack sets side by side in folded form, and the
 * differential flame graph.
 *
 * Shares, not counts, are compared: two runs differ in length and rate,
 * and a regression is a function taking a bigger part of the time. A
 * function is the same in both when its name (report_func_name(): a
 * Python function's has its file and first line) and module are.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"
#include "model.h"

struct diff_row {
	const char *name, *module;      /* the profiles' (name: from report_func_names()) */
	bool python;
	uint64_t self[2], cum[2];       /* samples in base [0] and new [1] */
	double change;                  /* sort key: the larger of the two share changes */
};

struct diff_rows {
	struct diff_row *rows;
	size_t nr, alloc;
	struct idx index;               /* hash of (name, module) -> row */
};

static uint64_t func_hash(const char *name, const char *module)
{
	return hash_str(module ? module : "", hash_str(name, 0));
}

static struct diff_row *row_of(struct diff_rows *d, const struct profile_func *f, const char *name)
{
	uint64_t h = func_hash(name, f->module);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&d->index, h, &pos)) != IDX_NONE) {
		struct diff_row *r = &d->rows[id];

		if (!strcmp(r->name, name) && !strcmp(r->module ? r->module : "", f->module ? f->module : ""))
			return r;
	}
	ALLOC_GROW(d->rows, d->nr + 1, d->alloc);
	id = d->nr++;
	memset(&d->rows[id], 0, sizeof(d->rows[id]));
	d->rows[id].name = name;
	d->rows[id].module = f->module;
	d->rows[id].python = profile_func_is_python(f);
	idx_insert(&d->index, h, id);
	return &d->rows[id];
}

static int by_change(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;

	if (x->change != y->change)
		return x->change > y->change ? -1 : 1;
	return strcmp(x->name, y->name);
}

static double share(uint64_t n, uint64_t total)
{
	return total ? 100.0 * n / total : 0;
}

static void write_table(FILE *out, const struct profile *const pr[2], const struct report_diff_opts *o)
{
	struct diff_rows d = { 0 };
	const char **names[2];
	uint64_t total[2];
	size_t shown = 0;

	for (int k = 0; k < 2; k++) {
		uint64_t total_ns;
		size_t nr;
		struct report_func_stat *st = report_func_stats(pr[k], NULL, &nr, &total[k], &total_ns);

		names[k] = report_func_names(pr[k]);
		for (size_t i = 0; i < nr; i++) {
			struct diff_row *r = row_of(&d, &pr[k]->funcs[st[i].func], names[k][st[i].func]);

			r->self[k] += st[i].self;
			r->cum[k] += st[i].cum;
		}
		free(st);
	}
	for (size_t i = 0; i < d.nr; i++) {
		struct diff_row *r = &d.rows[i];
		double ds = fabs(share(r->self[1], total[1]) - share(r->self[0], total[0]));
		double dc = fabs(share(r->cum[1], total[1]) - share(r->cum[0], total[0]));

		r->change = ds > dc ? ds : dc;
	}
	QSORT(d.rows, d.nr, by_change);

	fprintf(out, "Base %s: %" PRIu64 " samples%s%s\n", o->base_name, total[0],
		pr[0]->meta.command ? ", " : "", pr[0]->meta.command ? pr[0]->meta.command : "");
	fprintf(out, "New  %s: %" PRIu64 " samples%s%s\n", o->new_name, total[1],
		pr[1]->meta.command ? ", " : "", pr[1]->meta.command ? pr[1]->meta.command : "");
	fprintf(out, "Shares of all samples in each profile; change in percentage points, new minus base.\n\n");
	fprintf(out, "%8s %7s %8s %8s %7s %8s  %s\n", "self%", "", "", "total%", "", "", "");
	fprintf(out, "%8s %7s %8s %8s %7s %8s  %s\n", "base", "new", "change", "base", "new", "change",
		"function");
	for (size_t i = 0; i < d.nr && (!o->limit || shown < o->limit); i++) {
		const struct diff_row *r = &d.rows[i];
		double s0 = share(r->self[0], total[0]), s1 = share(r->self[1], total[1]);
		double c0 = share(r->cum[0], total[0]), c1 = share(r->cum[1], total[1]);

		if (r->change < 0.05)
			break;	/* the rest did not change in the first decimal */
		fprintf(out, "%7.1f%% %6.1f%% %+8.1f %7.1f%% %6.1f%% %+8.1f  %s", s0, s1, s1 - s0, c0, c1,
			c1 - c0, r->name);
		/* kernel frames carry their module in the name already, Python ones their file */
		if (r->module && !r->python && strncmp(r->name, r->module, strlen(r->module)))
			fprintf(out, " [%s]", r->module);
		if (!r->cum[0])
			fputs(" (new)", out);
		else if (!r->cum[1])
			fputs(" (gone)", out);
		fputc('\n', out);
		shown++;
	}
	if (!shown)
		fputs("(no function's share changed by 0.1 points or more)\n", out);
	free(d.rows);
	idx_release(&d.index);
	report_func_names_free(pr[0], names[0]);
	report_func_names_free(pr[1], names[1]);
}

/* The stacks of both profiles, merged by text: stack, base count, new count. */
static struct flame_stack *merge_stacks(const struct profile *const pr[2], size_t *nr_out,
					struct report_folded *lines[2], size_t nr[2])
{
	struct flame_stack *st;
	size_t i = 0, j = 0, n = 0;

	for (int k = 0; k < 2; k++)
		lines[k] = report_folded_lines(pr[k], NULL, NULL, false, &nr[k]);
	st = xcalloc(nr[0] + nr[1] + 1, sizeof(*st));
	/* both lists are sorted by text: a merge join */
	while (i < nr[0] || j < nr[1]) {
		int c = i == nr[0] ? 1 : j == nr[1] ? -1 : strcmp(lines[0][i].text, lines[1][j].text);

		if (c < 0) {
			st[n++] = (struct flame_stack){ lines[0][i].text, 0, lines[0][i].count };
			i++;
		} else if (c > 0) {
			st[n++] = (struct flame_stack){ lines[1][j].text, lines[1][j].count, 0 };
			j++;
		} else {
			st[n++] = (struct flame_stack){ lines[1][j].text, lines[1][j].count, lines[0][i].count };
			i++;
			j++;
		}
	}
	*nr_out = n;
	return st;
}

static int write_diff(FILE *out, const struct profile *base, const struct profile *new,
		      const struct report_diff_opts *o)
{
	const struct profile *const pr[2] = { base, new };
	struct report_folded *lines[2];
	struct flame_input in = { 0 };
	struct flame_stack *st;
	char *subtitle = NULL;
	size_t nr[2], n;
	int ret = 0;

	if (!base->nr_samples || !new->nr_samples)
		return -ENODATA;
	switch (o->format) {
	case REPORT_TABLE:
		write_table(out, pr, o);
		return ferror(out) ? -EIO : 0;
	case REPORT_FOLDED:
	case REPORT_SVG:
	case REPORT_HTML:
		break;
	default:
		return -EINVAL;
	}
	st = merge_stacks(pr, &n, lines, nr);
	if (o->format == REPORT_FOLDED) {
		/* the input of FlameGraph's flamegraph.pl for a differential graph (difffolded.pl's output) */
		for (size_t i = 0; i < n; i++)
			fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", st[i].folded, st[i].base_count, st[i].count);
		ret = ferror(out) ? -EIO : 0;
	} else {
		for (size_t i = 0; i < n; i++) {
			in.total += st[i].count;
			in.base_total += st[i].base_count;
		}
		subtitle = xstrfmt("%s (%" PRIu64 " samples) against %s (%" PRIu64
				   " samples): red grew, blue shrank", o->new_name, in.total, o->base_name,
				   in.base_total);
		in.title = "Differential flame graph";
		in.subtitle = subtitle;
		in.period_ns = new->meta.period_ns;
		in.stacks = st;
		in.nr_stacks = n;
		in.diff = true;
		ret = report_write_flame(out, &in, o->format == REPORT_HTML);
	}
	free(subtitle);
	free(st);
	report_folded_free(lines[0], nr[0]);
	report_folded_free(lines[1], nr[1]);
	return ret;
}

int report_write_diff(FILE *out, const struct profile *base, const struct profile *new,
		      const struct report_diff_opts *raw_opts)
{
	struct report_display d[2];
	struct report_frames_view v[2];
	struct report_diff_opts o = *raw_opts;
	int ret;

	base = report_frames_init(&v[0], report_display_init(&d[0], base), o.frames);
	new = report_frames_init(&v[1], report_display_init(&d[1], new), o.frames);
	o.base_name = report_display_str(&d[0], o.base_name);
	o.new_name = report_display_str(&d[1], o.new_name);
	ret = write_diff(out, base, new, &o);
	report_frames_release(&v[1]);
	report_frames_release(&v[0]);
	report_display_release(&d[1]);
	report_display_release(&d[0]);
	return ret;
}
