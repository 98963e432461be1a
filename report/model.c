// SPDX-License-Identifier: MIT
/*
 * The function model the writers share: which samples are kept, their
 * counts per stack and per function, sort orders, labels, and matching by
 * name. Folded stacks are in folded.c.
 */
#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report.h"

/* ---- which samples ---- */

static bool thread_matches(const struct profile *p, uint32_t t, const struct report_filter *f)
{
	const struct profile_thread *th = &p->threads[t];
	const struct profile_process *pr = &p->procs[th->process];

	if (f->pid && pr->pid != f->pid)
		return false;
	if (f->tid && th->tid != f->tid)
		return false;
	if (f->comm && strcmp(th->comm, f->comm) && strcmp(pr->comm, f->comm))
		return false;
	return true;
}

bool *report_threads_matching(const struct profile *p, const struct report_filter *f)
{
	bool *ok = xcalloc(p->nr_threads + 1, sizeof(*ok));

	for (size_t t = 0; t < p->nr_threads; t++)
		ok[t] = thread_matches(p, t, f);
	return ok;
}

bool *report_select_samples(const struct profile *p, const struct report_filter *f,
			    uint32_t only_thread, uint32_t only_process, uint64_t *kept)
{
	bool *thread_ok = report_threads_matching(p, f);
	bool *keep = xcalloc(p->nr_samples + 1, sizeof(*keep));
	size_t named;
	bool *inside = f->region ? report_region_inside(p, f->region, &named) : NULL;
	bool any, *in_module = f->module ? report_funcs_in_module(p, f->module, &any) : NULL;

	for (size_t t = 0; t < p->nr_threads; t++)
		thread_ok[t] = thread_ok[t] && (only_thread == PROFILE_NONE || only_thread == t) &&
			       (only_process == PROFILE_NONE || only_process == p->threads[t].process);
	*kept = 0;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		keep[i] = thread_ok[s->thread] && s->time_ns >= f->from_ns &&
			  (!f->to_ns || s->time_ns < f->to_ns) && (!f->state || s->state == f->state) &&
			  (!inside || (s->region != PROFILE_NONE && inside[s->region])) &&
			  (!in_module || in_module[p->locs[p->stacks[s->stack].loc].func]);
		*kept += keep[i];
	}
	free(thread_ok);
	free(inside);
	free(in_module);
	return keep;
}

static int time_cmp(const void *a, const void *b, void *arg)
{
	const struct profile_sample *s = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (s[x].time_ns != s[y].time_ns)
		return s[x].time_ns < s[y].time_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * A counting sort by thread. A file's samples are in time order already,
 * and merging appends whole threads, so the time sort only runs where
 * something is out of place.
 */
size_t *report_samples_by_thread(const struct profile *p, const bool *keep, size_t **start_out)
{
	size_t *start = xcalloc(p->nr_threads + 2, sizeof(*start));
	size_t *fill = xcalloc(p->nr_threads + 1, sizeof(*fill));
	size_t *order;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			start[p->samples[i].thread + 1]++;
	for (size_t t = 0; t < p->nr_threads; t++) {
		start[t + 1] += start[t];
		fill[t] = start[t];
	}
	order = xmalloc(st_mult(start[p->nr_threads] + 1, sizeof(*order)));
	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			order[fill[p->samples[i].thread]++] = i;
	for (size_t t = 0; t < p->nr_threads; t++) {
		size_t *o = order + start[t], n = start[t + 1] - start[t];

		for (size_t k = 1; k < n; k++) {
			if (p->samples[o[k]].time_ns < p->samples[o[k - 1]].time_ns) {
				QSORT_R(o, n, time_cmp, p->samples);
				break;
			}
		}
	}
	free(fill);
	*start_out = start;
	return order;
}

/* ---- per stack and per function ---- */

uint64_t report_stack_counts(const struct profile *p, const bool *keep, uint64_t **n,
			     uint64_t **ns, uint64_t *total_ns)
{
	uint64_t kept = 0, weight = 0;

	*n = xcalloc(p->nr_stacks + 1, sizeof(**n));
	*ns = xcalloc(p->nr_stacks + 1, sizeof(**ns));
	for (size_t i = 0; i < p->nr_samples; i++) {
		if (keep && !keep[i])
			continue;
		(*n)[p->samples[i].stack]++;
		(*ns)[p->samples[i].stack] += p->samples[i].weight_ns;
		kept++;
		weight += p->samples[i].weight_ns;
	}
	if (total_ns)
		*total_ns = weight;
	return kept;
}

uint32_t report_row_of(const struct profile *p, uint32_t stack, bool by_line)
{
	uint32_t loc = p->stacks[stack].loc;

	return by_line ? loc : p->locs[loc].func;
}

/* Totals per row: per function, or per location BY_LINE. */
static struct report_func_stat *row_stats(const struct profile *p, const bool *keep_sample,
					  bool by_line, size_t *nr, uint64_t *total, uint64_t *total_ns)
{
	size_t nr_rows = by_line ? p->nr_locs : p->nr_funcs;
	uint64_t *node_n, *node_ns;
	struct report_func_stat *all = xcalloc(nr_rows + 1, sizeof(*all));
	uint32_t *stamp = xcalloc(nr_rows + 1, sizeof(*stamp));
	struct report_func_stat *out;
	size_t n = 0;

	*total = report_stack_counts(p, keep_sample, &node_n, &node_ns, total_ns);
	for (size_t s = 0; s < p->nr_stacks; s++) {
		uint32_t leaf = report_row_of(p, s, by_line);

		if (!node_n[s])
			continue;
		all[leaf].self += node_n[s];
		all[leaf].self_ns += node_ns[s];
		/* a recursive function is on the stack several times but counts once */
		for (uint32_t a = s; a != PROFILE_NONE; a = p->stacks[a].parent) {
			uint32_t r = report_row_of(p, a, by_line);

			if (stamp[r] == s + 1)
				continue;
			stamp[r] = s + 1;
			all[r].cum += node_n[s];
			all[r].cum_ns += node_ns[s];
		}
	}
	for (size_t r = 0; r < nr_rows; r++) {
		if (all[r].cum) {
			all[r].func = by_line ? p->locs[r].func : r;
			all[r].loc = by_line ? r : PROFILE_NONE;
			all[n++] = all[r];
		}
	}
	out = xrealloc(all, st_mult(n + 1, sizeof(*out)));
	free(node_n);
	free(node_ns);
	free(stamp);
	*nr = n;
	return out;
}

struct report_func_stat *report_func_stats(const struct profile *p, const bool *keep_sample,
					   size_t *nr, uint64_t *total, uint64_t *total_ns)
{
	return row_stats(p, keep_sample, false, nr, total, total_ns);
}

struct report_func_stat *report_line_stats(const struct profile *p, const bool *keep_sample,
					   size_t *nr, uint64_t *total, uint64_t *total_ns)
{
	return row_stats(p, keep_sample, true, nr, total, total_ns);
}

bool report_counts_events(const struct profile *p)
{
	static const char *const counting[] = {
		"page-faults", "minor-faults", "major-faults", "context-switches",
	};

	for (size_t i = 0; p->meta.event && i < ARRAY_SIZE(counting); i++)
		if (!strcmp(p->meta.event, counting[i]))
			return true;
	return false;
}

const char *report_weight_str(const struct profile *p, uint64_t weight, char *buf, size_t n)
{
	if (report_counts_events(p))
		snprintf(buf, n, "%" PRIu64, weight);
	else
		snprintf(buf, n, "%.3f", weight / 1e9);
	return buf;
}

double report_share(const struct profile *p, uint64_t n, uint64_t w, uint64_t total, uint64_t total_w)
{
	if (report_counts_events(p))
		return total_w ? 100.0 * w / total_w : 0.0;
	return total ? 100.0 * n / total : 0.0;
}

const char *report_self_heading(const struct profile *p)
{
	return report_counts_events(p) ? "totevents" : "tottime";
}

const char *report_cum_heading(const struct profile *p)
{
	return report_counts_events(p) ? "cumevents" : "cumtime";
}

bool report_stack_complete(const struct profile *p, uint32_t stack)
{
	const struct profile_func *f;

	while (p->stacks[stack].parent != PROFILE_NONE)
		stack = p->stacks[stack].parent;
	f = &p->funcs[p->locs[p->stacks[stack].loc].func];
	/* a Python function named "start" is no thread's entry */
	return !profile_func_is_python(f) && profile_func_is_root(f->name);
}

/* ---- sort orders ---- */

static const struct name_value sort_names[] = {
	{ "cumtime", REPORT_SORT_CUMTIME },
	{ "cumulative", REPORT_SORT_CUMTIME },
	{ "tottime", REPORT_SORT_TOTTIME },
	{ "time", REPORT_SORT_TOTTIME },
	{ "nsamples", REPORT_SORT_NSAMPLES },
	{ "ncalls", REPORT_SORT_NSAMPLES },
	{ "calls", REPORT_SORT_NSAMPLES },
	{ "name", REPORT_SORT_NAME },
	{ "filename", REPORT_SORT_FILENAME },
	{ "nfl", REPORT_SORT_NFL },
};

int report_sort_parse(const char *s, enum report_sort *out)
{
	int v = name_lookup(sort_names, ARRAY_SIZE(sort_names), s);

	if (v < 0)
		return -EINVAL;
	*out = (enum report_sort)v;
	return 0;
}

struct sort_ctx {
	const struct profile *p;
	enum report_sort key;
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

int report_counts_cmp(enum report_sort key, struct report_counts x, struct report_counts y)
{
	int r;

	switch (key) {
	case REPORT_SORT_CUMTIME:
		return (r = cmp_u64_desc(x.cum_ns, y.cum_ns)) ? r : cmp_u64_desc(x.self_ns, y.self_ns);
	case REPORT_SORT_TOTTIME:
		return (r = cmp_u64_desc(x.self_ns, y.self_ns)) ? r : cmp_u64_desc(x.cum_ns, y.cum_ns);
	case REPORT_SORT_NSAMPLES:
		return (r = cmp_u64_desc(x.self, y.self)) ? r : cmp_u64_desc(x.cum, y.cum);
	default:
		return 0;
	}
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static const char *file_or_module(const struct profile_func *f)
{
	return f->file ? f->file : f->module;
}

/* The line a row shows: its location's, or when that is unknown (or it is a function) the function's. */
static uint32_t row_line(const struct profile *p, const struct report_func_stat *x)
{
	if (x->loc != PROFILE_NONE && p->locs[x->loc].line && p->funcs[x->func].file)
		return p->locs[x->loc].line;
	return p->funcs[x->func].line;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

static int stat_cmp(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct report_func_stat *x = a, *y = b;
	const struct profile_func *fx = &c->p->funcs[x->func], *fy = &c->p->funcs[y->func];
	uint32_t lx = row_line(c->p, x), ly = row_line(c->p, y);
	int r = 0;

	switch (c->key) {
	case REPORT_SORT_CUMTIME:
	case REPORT_SORT_TOTTIME:
	case REPORT_SORT_NSAMPLES:
		r = report_counts_cmp(c->key, REPORT_COUNTS(x), REPORT_COUNTS(y));
		break;
	case REPORT_SORT_NAME:
		r = cmp_str(fx->name, fy->name);
		break;
	case REPORT_SORT_FILENAME:
		if (!(r = cmp_str(file_or_module(fx), file_or_module(fy))))
			r = cmp_u32(lx, ly);
		break;
	case REPORT_SORT_NFL:
		if (!(r = cmp_str(fx->name, fy->name)) &&
		    !(r = cmp_str(file_or_module(fx), file_or_module(fy))))
			r = cmp_u32(lx, ly);
		break;
	}
	if (r)
		return r;
	/* a total order, so that equal keys still print the same way every time */
	if ((r = cmp_u64_desc(x->cum_ns, y->cum_ns)) || (r = cmp_str(fx->name, fy->name)) ||
	    (r = cmp_str(file_or_module(fx), file_or_module(fy))))
		return r;
	/* rows by line: the lines of one function in order */
	if (x->loc != PROFILE_NONE && (r = cmp_u32(lx, ly)))
		return r;
	if ((r = cmp_u32(x->func, y->func)))
		return r;
	return cmp_u32(x->loc, y->loc);
}

void report_sort_stats(const struct profile *p, struct report_func_stat *st, size_t nr,
		       enum report_sort key)
{
	struct sort_ctx c = { p, key };

	QSORT_R(st, nr, stat_cmp, &c);
}

/* ---- labels, names, matching ---- */

size_t report_func_label(const struct profile_func *f, char *buf, size_t n)
{
	int len;

	if (f->file)
		len = snprintf(buf, n, "%s:%" PRIu32 "(%s)", f->file, f->line, f->name);
	else if (f->name[0] == '[' || !strncmp(f->name, f->module, strlen(f->module)))
		len = snprintf(buf, n, "%s", f->name);  /* [unknown], module+0xOFF */
	else
		len = snprintf(buf, n, "%s(%s)", f->module, f->name);
	return len > 0 ? (size_t)len : 0;
}

size_t report_loc_label(const struct profile *p, uint32_t loc, char *buf, size_t n)
{
	const struct profile_func *f = &p->funcs[p->locs[loc].func];
	int len;

	if (!f->file || !p->locs[loc].line)
		return report_func_label(f, buf, n);
	len = snprintf(buf, n, "%s:%" PRIu32 "(%s)", f->file, p->locs[loc].line, f->name);
	return len > 0 ? (size_t)len : 0;
}

size_t report_row_label(const struct profile *p, const struct report_func_stat *st, char *buf,
			size_t n)
{
	if (st->loc != PROFILE_NONE)
		return report_loc_label(p, st->loc, buf, n);
	return report_func_label(&p->funcs[st->func], buf, n);
}

const char *report_func_name(const struct profile_func *f, char *buf, size_t n)
{
	if (!profile_func_is_python(f))
		return f->name;
	report_func_label(f, buf, n);
	return buf;
}

const char *report_func_label_sb(struct sbuf *s, const struct profile_func *f)
{
	size_t len = report_func_label(f, s->buf, s->alloc);

	if (len >= s->alloc) {
		sbuf_grow(s, len + 1);
		report_func_label(f, s->buf, s->alloc);
	}
	return s->buf;
}

const char *report_loc_label_sb(struct sbuf *s, const struct profile *p, uint32_t loc)
{
	size_t len = report_loc_label(p, loc, s->buf, s->alloc);

	if (len >= s->alloc) {
		sbuf_grow(s, len + 1);
		report_loc_label(p, loc, s->buf, s->alloc);
	}
	return s->buf;
}

const char *report_row_label_sb(struct sbuf *s, const struct profile *p,
				const struct report_func_stat *st)
{
	if (st->loc != PROFILE_NONE)
		return report_loc_label_sb(s, p, st->loc);
	return report_func_label_sb(s, &p->funcs[st->func]);
}

const char *report_func_name_sb(struct sbuf *s, const struct profile_func *f)
{
	return profile_func_is_python(f) ? report_func_label_sb(s, f) : f->name;
}

const char *report_region_label_sb(struct sbuf *s, const struct profile *p, uint32_t name)
{
	const struct profile_region_name *e = &p->region_names[name];

	if (*e->domain)
		return sbuf_printf(s, "%s::%s", e->domain, e->name);
	return e->name;
}

const char **report_func_names(const struct profile *p)
{
	const char **names = xmalloc(st_mult(p->nr_funcs + 1, sizeof(*names)));

	for (size_t i = 0; i < p->nr_funcs; i++) {
		const struct profile_func *f = &p->funcs[i];
		size_t len;
		char *buf;

		if (!profile_func_is_python(f)) {
			names[i] = f->name;
			continue;
		}
		len = report_func_label(f, NULL, 0);
		buf = xmalloc(len + 1);
		names[i] = report_func_name(f, buf, len + 1);
	}
	return names;
}

void report_func_names_free(const struct profile *p, const char **names)
{
	if (!names)
		return;
	for (size_t i = 0; i < p->nr_funcs; i++)
		if (names[i] != p->funcs[i].name)
			free((char *)names[i]);
	free(names);
}

bool report_func_matches(const struct profile_func *f, const regex_t *re)
{
	struct sbuf label = SBUF_INIT;
	bool match;

	if (!regexec(re, f->name, 0, NULL, 0))
		return true;
	match = profile_func_is_python(f) && !regexec(re, report_func_name_sb(&label, f), 0, NULL, 0);
	sbuf_release(&label);
	return match;
}

bool report_row_matches(const struct profile *p, const struct report_func_stat *st, const regex_t *re)
{
	struct sbuf label = SBUF_INIT;
	bool match;

	if (report_func_matches(&p->funcs[st->func], re))
		return true;
	if (st->loc == PROFILE_NONE)
		return false;
	match = !regexec(re, report_loc_label_sb(&label, p, st->loc), 0, NULL, 0);
	sbuf_release(&label);
	return match;
}

bool report_any_match(const struct profile *p, const bool *keep, const char *match, bool by_line)
{
	size_t nr_rows = by_line ? p->nr_locs : p->nr_funcs;
	bool *sampled = xcalloc(nr_rows + 1, 1), found = false;
	regex_t re;

	if (regcomp(&re, match, REG_EXTENDED | REG_NOSUB)) {
		free(sampled);
		return false;
	}
	/* a row counts when some kept sample has it on the stack */
	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			for (uint32_t a = p->samples[i].stack; a != PROFILE_NONE; a = p->stacks[a].parent)
				sampled[report_row_of(p, a, by_line)] = true;
	for (size_t r = 0; r < nr_rows && !found; r++) {
		struct report_func_stat st = {
			.func = by_line ? p->locs[r].func : r,
			.loc = by_line ? r : PROFILE_NONE,
		};

		found = sampled[r] && report_row_matches(p, &st, &re);
	}
	regfree(&re);
	free(sampled);
	return found;
}
