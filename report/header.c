// SPDX-License-Identifier: MIT
/* The header of the text reports: the recording, the samples shown, and how well stacks unwound. */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "model.h"
#include "report.h"

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

void report_write_header(FILE *out, const struct profile *p, const struct report_opts *o,
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
