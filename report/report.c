// SPDX-License-Identifier: MIT
/* Report entry point: sample filters, the header, per-thread sections, and the table and folded writers. */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "internal.h"

static const struct {
	const char *name;
	enum report_format fmt;
} format_names[] = {
	{ "table", REPORT_TABLE },
	{ "folded", REPORT_FOLDED },
	{ "tree", REPORT_TREE },
	{ "callers", REPORT_CALLERS },
	{ "callees", REPORT_CALLEES },
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
	for (size_t i = 0; i < ARRAY_SIZE(format_names); i++) {
		if (!strcmp(s, format_names[i].name)) {
			*out = format_names[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

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

/*
 * Marks the samples to keep; ONLY_THREAD or ONLY_PROCESS restricts them to
 * one thread or process (PROFILE_NONE: any).
 */
static bool *select_samples(const struct profile *p, const struct report_filter *f,
			    uint32_t only_thread, uint32_t only_process, uint64_t *kept)
{
	bool *thread_ok = xcalloc(p->nr_threads + 1, sizeof(*thread_ok));
	bool *keep = xcalloc(p->nr_samples + 1, sizeof(*keep));

	for (size_t t = 0; t < p->nr_threads; t++)
		thread_ok[t] = thread_matches(p, t, f) &&
			       (only_thread == PROFILE_NONE || only_thread == t) &&
			       (only_process == PROFILE_NONE || only_process == p->threads[t].process);
	*kept = 0;
	for (size_t i = 0; i < p->nr_samples; i++) {
		uint64_t t = p->samples[i].time_ns;

		keep[i] = thread_ok[p->samples[i].thread] && t >= f->from_ns &&
			  (!f->to_ns || t < f->to_ns) && (!f->state || p->samples[i].state == f->state);
		*kept += keep[i];
	}
	free(thread_ok);
	return keep;
}

/* ---- the header ---- */

static int stop_cmp(const void *a, const void *b)
{
	const struct profile_unwind_stop *x = a, *y = b;

	return x->count > y->count ? -1 : x->count < y->count;
}

/*
 * Why the unwinder stopped early, most frequent first, e.g.
 * "stopped early: 40 stack copy too small, 12 no CFI (libfoo.so 10, libbar.so 2)".
 */
static void print_unwind_stops(FILE *out, const struct profile_meta *m, uint64_t incomplete)
{
	struct profile_unwind_stop *st;
	uint64_t explained = 0;
	bool *done;

	for (size_t i = 0; i < m->nr_stops; i++)
		explained += m->stops[i].count;
	if (!m->nr_stops) {
		if (incomplete && m->callgraph && strcmp(m->callgraph, "none"))
			fprintf(out, "Unwinding stopped early: %" PRIu64 " at a frame that is not a thread's entry%s\n",
				incomplete, !strcmp(m->callgraph, "fp") ?
				" (code without frame pointers? try -g dwarf)" : "");
		return;
	}
	st = xmalloc(st_mult(m->nr_stops, sizeof(*st)));
	done = xcalloc(m->nr_stops, 1);
	memcpy(st, m->stops, m->nr_stops * sizeof(*st));
	QSORT(st, m->nr_stops, stop_cmp);
	fputs("Unwinding stopped early:", out);
	for (size_t i = 0, first = 1; i < m->nr_stops; i++) {
		uint64_t total = 0;
		int shown = 0;

		if (done[i])
			continue;
		for (size_t j = i; j < m->nr_stops; j++)
			if (!strcmp(st[j].reason, st[i].reason))
				total += st[j].count;
		fprintf(out, "%s %" PRIu64 " %s", first ? "" : ",", total, st[i].reason);
		first = 0;
		for (size_t j = i; j < m->nr_stops; j++) {
			if (strcmp(st[j].reason, st[i].reason))
				continue;
			done[j] = true;
			if (st[j].module && shown < 3)
				fprintf(out, "%s%s %" PRIu64, shown++ ? ", " : " (", st[j].module, st[j].count);
		}
		if (shown)
			fputc(')', out);
	}
	if (incomplete > explained)
		fprintf(out, ", %" PRIu64 " at a frame that is not a thread's entry%s", incomplete - explained,
			m->callgraph && !strcmp(m->callgraph, "fp") ?
			" (code without frame pointers? try -g dwarf)" : "");
	fputc('\n', out);
	free(st);
	free(done);
}

static void print_header(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep, uint64_t kept)
{
	const struct profile_meta *m = &p->meta;
	uint64_t complete = 0, states[PROFILE_STATE_NR] = { 0 };
	size_t nr_procs = 0, nr_threads = 0;
	bool *seen_p = xcalloc(p->nr_procs + 1, 1), *seen_t = xcalloc(p->nr_threads + 1, 1);
	int8_t *node_ok = xcalloc(p->nr_stacks + 1, 1); /* 0 unknown, 1 complete, -1 not */
	double secs = m->duration_ns / 1e9;
	double cpu = m->cpu_time_ns / 1e9;

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (!keep[i])
			continue;
		if (!node_ok[s->stack])
			node_ok[s->stack] = report_stack_complete(p, s->stack) ? 1 : -1;
		complete += node_ok[s->stack] > 0;
		states[s->state < PROFILE_STATE_NR ? s->state : PROFILE_STATE_UNKNOWN]++;
		if (!seen_t[s->thread]) {
			seen_t[s->thread] = 1;
			nr_threads++;
		}
		if (!seen_p[p->threads[s->thread].process]) {
			seen_p[p->threads[s->thread].process] = 1;
			nr_procs++;
		}
	}
	if (o->nr_inputs == 1)
		fprintf(out, "Profile %s", o->inputs[0]);
	else
		fprintf(out, "Profile of %zu merged files", o->nr_inputs);
	if (m->command)
		fprintf(out, ": %s", m->command);
	fputc('\n', out);
	if (m->start_real_ns && o->nr_inputs == 1) {
		time_t t = m->start_real_ns / 1000000000ull;
		struct tm tm;
		char when[64];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		fprintf(out, "Recorded %s on %s (%s), event %s, call graph %s, %s mode, %s backend\n", when,
			m->host ? m->host : "?", m->kernel ? m->kernel : "?",
			m->event ? m->event : "?", m->callgraph ? m->callgraph : "?",
			m->mode && !strcmp(m->mode, "wall") ? "wall-clock" : "on-CPU",
			m->backend ? m->backend : "perf");
	}
	fprintf(out, "%" PRIu64 " sample%s over %.3f s from %zu process%s and %zu thread%s\n",
		kept, kept == 1 ? "" : "s", secs, nr_procs, nr_procs == 1 ? "" : "es", nr_threads, nr_threads == 1 ? "" : "s");
	if (kept != p->nr_samples)
		fprintf(out, "(filtered: %" PRIu64 " of %zu samples shown)\n", kept, p->nr_samples);
	fprintf(out, "Lost samples: %" PRIu64, m->lost);
	if (p->nr_samples + m->lost)
		fprintf(out, " (%.1f%%)", 100.0 * m->lost / (p->nr_samples + m->lost));
	if (m->mode && !strcmp(m->mode, "wall") && secs > 0)
		fprintf(out, "; %.1f samples per second of wall-clock time (%u Hz requested per thread)",
			p->nr_samples / secs, m->freq);
	else if (m->freq && cpu > 0)
		fprintf(out, "; sampling rate %.1f Hz achieved of %u Hz requested (per CPU-second)",
			p->nr_samples / cpu, m->freq);
	else if (m->freq)
		fprintf(out, "; sampling rate %u Hz requested", m->freq);
	else
		fprintf(out, "; sampling rates differ between the merged files");
	fputc('\n', out);
	/* wall mode: what the threads were doing, the split of the table's time */
	if (states[PROFILE_STATE_ON_CPU] + states[PROFILE_STATE_OFF_CPU]) {
		fprintf(out, "Thread states: on CPU (running or runnable) %" PRIu64 " (%.1f%%), "
			"off CPU (sleeping, blocked) %" PRIu64 " (%.1f%%)",
			states[PROFILE_STATE_ON_CPU], 100.0 * states[PROFILE_STATE_ON_CPU] / kept,
			states[PROFILE_STATE_OFF_CPU], 100.0 * states[PROFILE_STATE_OFF_CPU] / kept);
		if (states[PROFILE_STATE_UNKNOWN])
			fprintf(out, ", unknown %" PRIu64, states[PROFILE_STATE_UNKNOWN]);
		fputs("; --state on-cpu|off-cpu keeps one\n", out);
	}
	fprintf(out, "Stacks unwound to their root: %" PRIu64 " of %" PRIu64 " (%.1f%%)\n",
		complete, kept, kept ? 100.0 * complete / kept : 0.0);
	print_unwind_stops(out, m, kept - complete);
	free(seen_p);
	free(seen_t);
	free(node_ok);
}

/* ---- table ---- */

void report_func_label(const struct profile_func *f, char *buf, size_t n)
{
	if (f->file)
		snprintf(buf, n, "%s:%" PRIu32 "(%s)", f->file, f->line, f->name);
	else if (f->name[0] == '[' || !strncmp(f->name, f->module, strlen(f->module)))
		snprintf(buf, n, "%s", f->name);  /* [unknown], module+0xOFF */
	else
		snprintf(buf, n, "%s(%s)", f->module, f->name);
}

static void write_table(FILE *out, const struct profile *p, const struct report_opts *o,
			const bool *keep)
{
	size_t nr;
	uint64_t total, total_ns;
	struct report_func_stat *st = report_func_stats(p, keep, &nr, &total, &total_ns);
	size_t rows = o->limit && o->limit < nr ? o->limit : nr;
	char label[4096], ns[48];

	report_sort_stats(p, st, nr, o->sort);
	fprintf(out, "\n%15s %9s %6s %9s %6s  %s\n", "nsamples", "tottime", "tot%", "cumtime", "cum%",
		"filename:lineno(function)");
	for (size_t i = 0; i < rows; i++) {
		const struct report_func_stat *s = &st[i];

		report_func_label(&p->funcs[s->func], label, sizeof(label));
		snprintf(ns, sizeof(ns), "%" PRIu64 "/%" PRIu64, s->self, s->cum);
		fprintf(out, "%15s %9.3f %5.1f%% %9.3f %5.1f%%  %s\n", ns, s->self_ns / 1e9,
			total ? 100.0 * s->self / total : 0.0, s->cum_ns / 1e9,
			total ? 100.0 * s->cum / total : 0.0, label);
	}
	if (rows < nr)
		fprintf(out, "... %zu more function%s (--limit 0 shows all)\n", nr - rows,
			nr - rows == 1 ? "" : "s");
	free(st);
}

/* ---- folded ---- */

/* Writes a frame name with the separators of the folded format made harmless. */
static void put_frame(FILE *out, const char *name)
{
	for (const char *c = name; *c; c++)
		fputc(*c == ';' ? ':' : (*c == '\n' || *c == '\r') ? ' ' : *c, out);
}

static void put_stack(FILE *out, const struct profile *p, uint32_t s, uint32_t *scratch)
{
	size_t n = 0;

	for (uint32_t a = s; a != PROFILE_NONE; a = p->stacks[a].parent)
		scratch[n++] = a;
	while (n--) {
		put_frame(out, p->funcs[p->locs[p->stacks[scratch[n]].loc].func].name);
		if (n)
			fputc(';', out);
	}
}

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct report_folded *)a)->text, ((const struct report_folded *)b)->text);
}

/* Stacks that differ only in line numbers have the same frame names and become one line. */
struct report_folded *report_folded_lines(const struct profile *p, const bool *keep,
					  const char *prefix, size_t *nr_out)
{
	uint64_t *count, *weight;
	struct report_folded *lines = NULL;
	size_t nr = 0, alloc = 0, out = 0;
	uint32_t *scratch;
	uint32_t maxdepth = 1;

	report_stack_counts(p, keep, &count, &weight, NULL);
	for (size_t s = 0; s < p->nr_stacks; s++)
		if (p->stacks[s].depth > maxdepth)
			maxdepth = p->stacks[s].depth;
	scratch = xmalloc(st_mult(maxdepth + 1, sizeof(*scratch)));
	for (size_t s = 0; s < p->nr_stacks; s++) {
		size_t len;
		FILE *m;

		if (!count[s])
			continue;
		ALLOC_GROW(lines, nr + 1, alloc);
		m = open_memstream(&lines[nr].text, &len);
		if (!m)
			xmalloc(SIZE_MAX); /* reports out of memory */
		if (prefix) {
			put_frame(m, prefix);
			fputc(';', m);
		}
		put_stack(m, p, s, scratch);
		fclose(m);
		lines[nr].count = count[s];
		lines[nr++].weight_ns = weight[s];
	}
	QSORT(lines, nr, folded_cmp);
	for (size_t i = 0; i < nr; i++) {
		struct report_folded l = lines[i];

		while (i + 1 < nr && !strcmp(l.text, lines[i + 1].text)) {
			free(lines[++i].text);
			l.count += lines[i].count;
			l.weight_ns += lines[i].weight_ns;
		}
		lines[out++] = l;
	}
	free(scratch);
	free(count);
	free(weight);
	*nr_out = out;
	return lines;
}

void report_folded_free(struct report_folded *lines, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
}

static void write_folded(FILE *out, const struct profile *p, const char *prefix, const bool *keep)
{
	size_t nr;
	struct report_folded *lines = report_folded_lines(p, keep, prefix, &nr);

	for (size_t i = 0; i < nr; i++)
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].count);
	report_folded_free(lines, nr);
}

/* ---- entry point ---- */

static int write_section(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep, const char *prefix)
{
	switch (o->format) {
	case REPORT_FOLDED:
		write_folded(out, p, prefix, keep);
		return 0;
	case REPORT_TREE:
		report_write_tree(out, p, keep, o->min_percent);
		return 0;
	case REPORT_CALLERS:
	case REPORT_CALLEES:
		return report_write_calls(out, p, keep, o->format == REPORT_CALLERS, o->match,
					  o->limit, o->sort);
	case REPORT_TABLE:
		break;
	default:
		return -EINVAL;	/* exports are written whole, by report_write */
	}
	write_table(out, p, o, keep);
	return 0;
}

static int write_export(FILE *out, const struct profile *p, const struct report_opts *o,
			const bool *keep)
{
	switch (o->format) {
	case REPORT_JSON:
		return report_write_json(out, p, keep);
	case REPORT_TIMERS:
		return report_write_timers(out, p, keep);
	case REPORT_SPEEDSCOPE:
		return report_write_speedscope(out, p, keep);
	case REPORT_CHROME:
		return report_write_chrome(out, p, keep);
	case REPORT_PPROF:
		return report_write_pprof(out, p, keep);
	case REPORT_SVG:
	case REPORT_HTML:
		return report_write_flame_profile(out, p, keep, o->format == REPORT_HTML);
	default:
		return -EINVAL;
	}
}

int report_write(FILE *out, const struct profile *p, const struct report_opts *o)
{
	uint64_t kept;
	bool *keep = select_samples(p, &o->filter, PROFILE_NONE, PROFILE_NONE, &kept);
	int ret = 0;

	if (!kept) {
		free(keep);
		return -ENODATA;
	}
	/* nothing is written when nothing can match */
	if ((o->format == REPORT_CALLERS || o->format == REPORT_CALLEES) && o->match &&
	    !report_any_match(p, keep, o->match)) {
		free(keep);
		return -ENOENT;
	}
	if (report_format_is_export(o->format)) {
		ret = write_export(out, p, o, keep);
		free(keep);
		return ret < 0 ? ret : ferror(out) ? -EIO : 0;
	}
	if (o->format != REPORT_FOLDED)
		print_header(out, p, o, keep, kept);
	if (!o->per_thread && !o->per_process) {
		ret = write_section(out, p, o, keep, NULL);
	} else {
		size_t nr = o->per_thread ? p->nr_threads : p->nr_procs;
		bool *has = xcalloc(nr + 1, 1), any = false;

		for (size_t i = 0; i < p->nr_samples; i++) {
			uint32_t t = p->samples[i].thread;

			if (keep[i])
				has[o->per_thread ? t : p->threads[t].process] = true;
		}
		for (size_t x = 0; x < nr; x++) {
			char title[256];
			uint64_t n;
			bool *k;

			if (!has[x])
				continue;
			if (o->per_thread) {
				const struct profile_thread *th = &p->threads[x];

				k = select_samples(p, &o->filter, x, PROFILE_NONE, &n);
				snprintf(title, sizeof(title), "%s (pid %d, tid %d)", th->comm,
					 (int)p->procs[th->process].pid, (int)th->tid);
			} else {
				k = select_samples(p, &o->filter, PROFILE_NONE, x, &n);
				snprintf(title, sizeof(title), "%s (pid %d)", p->procs[x].comm,
					 (int)p->procs[x].pid);
			}
			if (o->format != REPORT_FOLDED)
				fprintf(out, "\n=== %s === %" PRIu64 " samples (%.1f%%)\n", title, n,
					100.0 * n / kept);
			/* callers/callees: fine as long as some section had a match */
			if (!write_section(out, p, o, k, title))
				any = true;
			free(k);
		}
		free(has);
		ret = any ? 0 : -ENOENT;
	}
	free(keep);
	if (ferror(out))
		ret = -EIO;
	return ret;
}
