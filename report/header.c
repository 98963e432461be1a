// SPDX-License-Identifier: MIT
/* The header of the text reports: the recording, the samples shown, how well stacks unwound, Python's share. */
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
	const struct report_stop *x = a, *y = b;

	return x->count > y->count ? -1 : x->count < y->count;
}

/*
 * Why the unwinder stopped early, most frequent first, after LEAD, e.g.
 * "Unwinding stopped early: 40 stack copy too small, 12 no CFI (libfoo.so
 * 10, libbar.so 2), 3 at a frame that is not a thread's entry".
 */
static void put_stops(FILE *out, const char *lead, const struct report_stop *stops, size_t nr,
		      uint64_t not_entry, uint64_t unexplained, const char *callgraph)
{
	const char *hint = callgraph && !strcmp(callgraph, "fp") ?
			   " (code without frame pointers? try -g dwarf)" : "";
	struct report_stop *st;
	bool *done, first = true;

	if (!nr && !unexplained) {
		if (not_entry && callgraph && strcmp(callgraph, "none"))
			fprintf(out, "%s %" PRIu64 " " REPORT_STOP_NOT_ENTRY "%s\n", lead, not_entry, hint);
		return;
	}
	st = xmalloc(st_mult(nr + 1, sizeof(*st)));
	done = xcalloc(nr + 1, 1);
	if (nr) /* memcpy's source may not be NULL, even for no bytes */
		memcpy(st, stops, nr * sizeof(*st));
	QSORT(st, nr, stop_cmp);
	fputs(lead, out);
	for (size_t i = 0; i < nr; i++) {
		uint64_t total = 0;
		int shown = 0;

		if (done[i])
			continue;
		for (size_t j = i; j < nr; j++)
			if (!strcmp(st[j].reason, st[i].reason))
				total += st[j].count;
		fprintf(out, "%s %" PRIu64 " %s", first ? "" : ",", total, st[i].reason);
		first = false;
		for (size_t j = i; j < nr; j++) {
			if (strcmp(st[j].reason, st[i].reason))
				continue;
			done[j] = true;
			if (st[j].module && shown < 3)
				fprintf(out, "%s%s %" PRIu64, shown++ ? ", " : " (", st[j].module, st[j].count);
		}
		if (shown)
			fputc(')', out);
	}
	if (not_entry)
		fprintf(out, "%s %" PRIu64 " " REPORT_STOP_NOT_ENTRY "%s", first ? "" : ",", not_entry,
			hint);
	if (unexplained)
		fprintf(out, "%s %" PRIu64 " " REPORT_STOP_UNEXPLAINED, first && !not_entry ? "" : ",",
			unexplained);
	fputc('\n', out);
	free(st);
	free(done);
}

/* The profile's own stop reasons, over all its samples. */
static void put_recording_stops(FILE *out, const struct profile *p, const struct report_summary *s)
{
	const struct profile_meta *m = &p->meta;
	struct report_stop *st = xcalloc(m->nr_stops + 1, sizeof(*st));
	uint64_t explained = 0, incomplete = s->samples_total - s->complete_total;
	char lead[128];

	for (size_t i = 0; i < m->nr_stops; i++) {
		st[i] = (struct report_stop){ m->stops[i].reason, m->stops[i].module, m->stops[i].count };
		explained += m->stops[i].count;
	}
	snprintf(lead, sizeof(lead), "Unwinding stopped early in the whole recording (%" PRIu64 " samples):",
		 s->samples_total);
	put_stops(out, lead, st, m->nr_stops, incomplete > explained ? incomplete - explained : 0, 0,
		  m->callgraph);
	free(st);
}

/* " (of N)" after a count that a filter made smaller. */
static void put_of(FILE *out, uint64_t n, uint64_t total)
{
	if (n != total)
		fprintf(out, " (of %" PRIu64 ")", total);
}

static void put_recorded(FILE *out, const struct profile_meta *m)
{
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

/* Paused spans (nothing was sampled in them), and which snapshot of a recording this is. */
static void put_pauses(FILE *out, const struct profile *p, size_t nr_inputs)
{
	uint64_t paused = 0;

	if (p->meta.series && nr_inputs == 1) {
		if (p->meta.snapshot)
			fprintf(out, "Snapshot %" PRIu32 " of a recording: from %.3f s to %.3f s\n",
				p->meta.snapshot, p->meta.series_offset_ns / 1e9,
				(p->meta.series_offset_ns + p->meta.duration_ns) / 1e9);
		else
			fprintf(out, "The end of a recording that wrote snapshots: from %.3f s to %.3f s\n",
				p->meta.series_offset_ns / 1e9,
				(p->meta.series_offset_ns + p->meta.duration_ns) / 1e9);
	}
	if (!p->nr_pauses)
		return;
	for (size_t i = 0; i < p->nr_pauses; i++)
		paused += p->pauses[i].end_ns - p->pauses[i].start_ns;
	fprintf(out, "Paused %zu time%s, %.1f s: nothing was sampled then\n", p->nr_pauses,
		p->nr_pauses == 1 ? "" : "s", paused / 1e9);
}

/* Lost samples and the rate achieved: the recording's, whatever the filters keep. */
static void put_rate(FILE *out, const struct profile *p, bool filtered)
{
	const struct profile_meta *m = &p->meta;
	double secs = m->duration_ns / 1e9;
	double cpu = m->cpu_time_ns / 1e9;

	if (filtered)
		fprintf(out, "Whole recording: %" PRIu64 " samples lost", m->lost);
	else
		fprintf(out, "Lost samples: %" PRIu64, m->lost);
	if (p->nr_samples + m->lost) {
		double pct = 100.0 * m->lost / (p->nr_samples + m->lost);

		fprintf(out, " (%.1f%%)", pct);
		/*
		 * What the lost samples were of is unknown: a full ring buffer drops
		 * whatever its CPU runs, so one thread can lose more than another
		 * (spinners doing the same work kept 57/43 with 28% lost, 68.6/31.4
		 * in a Debian 12 chroot). Any share of the kept samples (a thread's,
		 * a function's) is off by at most the lost fraction: say so.
		 */
		if (pct >= 0.05)
			fprintf(out, ", so a share below may be off by up to %.1f points", pct);
	}
	if (report_counts_events(p)) {
		uint64_t events = 0;

		for (size_t i = 0; i < p->nr_samples; i++)
			events += p->samples[i].weight_ns;
		if (m->period_ns)
			fprintf(out, "; a sample every %" PRIu64 " %s (%" PRIu64 " in all)", m->period_ns,
				m->event, events);
		else
			fprintf(out, "; about %u samples a second of %s requested, each weighing the %s "
				"since the one before (%" PRIu64 " in all)", m->freq, m->event, m->event, events);
	} else if (m->mode && !strcmp(m->mode, "wall") && secs > 0)
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
}

static int miss_cmp(const void *a, const void *b)
{
	const struct profile_python_miss *x = *(const struct profile_python_miss *const *)a;
	const struct profile_python_miss *y = *(const struct profile_python_miss *const *)b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->reason, y->reason);
}

/*
 * One line per Python interpreter, from the meta: the whole recording's,
 * whatever the filters keep, since the recorder counts them per process and
 * not per sample. "Python 3.11.2 (/usr/bin/python3.11): 2987 of 3000
 * samples (99.6%) with Python frames; without: 10 no Python thread state,
 * 3 torn", or for one whose stacks could not be read, "...: not read: WHY;
 * its stacks are native".
 */
static void put_pythons(FILE *out, const struct profile_meta *m, bool filtered)
{
	for (size_t i = 0; i < m->nr_pythons; i++) {
		const struct profile_python *py = &m->pythons[i];
		const struct profile_python_miss **ms;

		fprintf(out, "%sPython%s%s (%s): ", filtered ? "Whole recording: " : "",
			py->version ? " " : "", py->version ? py->version : "", py->interpreter);
		if (py->unsupported) {
			fprintf(out, "not read: %s; its stacks are native\n", py->unsupported);
			continue;
		}
		fprintf(out, "%" PRIu64 " of %" PRIu64 " sample%s", py->with_frames, py->samples,
			py->samples == 1 ? "" : "s");
		if (py->samples)
			fprintf(out, " (%.1f%%)", 100.0 * py->with_frames / py->samples);
		fputs(" with Python frames", out);
		ms = xmalloc(st_mult(py->nr_misses + 1, sizeof(*ms)));
		for (size_t j = 0; j < py->nr_misses; j++)
			ms[j] = &py->misses[j];
		QSORT(ms, py->nr_misses, miss_cmp);
		for (size_t j = 0, shown = 0; j < py->nr_misses; j++)
			if (ms[j]->count)
				fprintf(out, "%s %" PRIu64 " %s", shown++ ? "," : "; without:", ms[j]->count,
					ms[j]->reason);
		free(ms);
		fputc('\n', out);
	}
}

/* How many Python stacks were read from what BPF copied at the sample (record --python-capture). */
static void put_python_captured(FILE *out, const struct profile_meta *m, bool filtered)
{
	uint64_t samples = 0;

	if (!m->python_captured)
		return;
	for (size_t i = 0; i < m->nr_pythons; i++)
		samples += m->pythons[i].unsupported ? 0 : m->pythons[i].samples;
	if (samples < m->python_captured)
		samples = m->python_captured;
	fprintf(out, "%sPython stacks: %" PRIu64 " of %" PRIu64 " samples (%.1f%%) copied as they were taken "
		"(BPF), the others read from the process just after\n", filtered ? "Whole recording: " : "",
		m->python_captured, samples, 100.0 * m->python_captured / samples);
}

/* Which --frames view the report is, and how to get the others: for profiles with Python frames. */
static void put_frames(FILE *out, enum report_frames how)
{
	switch (how) {
	case REPORT_FRAMES_MIXED:
		fputs("Frames: mixed: Python functions and the native code they call outside the "
		      "interpreter, whose own frames count as the Python function they run; "
		      "--frames python shows Python only, --frames all every frame\n", out);
		break;
	case REPORT_FRAMES_PYTHON:
		fputs("Frames: python: Python functions only, native time counted as the Python "
		      "function that called it, samples without a Python frame as " REPORT_FRAMES_NATIVE
		      "; --frames mixed shows the native code, --frames all every frame\n", out);
		break;
	case REPORT_FRAMES_ALL:
		fputs("Frames: all, as recorded, the interpreter's own included; --frames mixed (the "
		      "default) counts them as the Python function they run\n", out);
		break;
	}
}

/*
 * "Peak RSS: 98.0 MiB (python3 28506)": the largest resident memory any one
 * process with a kept sample reached; nothing for a profile without readings.
 */
static void put_peak_rss(FILE *out, const struct profile *p, const bool *keep)
{
	bool *kept = xcalloc(p->nr_procs + 1, sizeof(*kept));
	const struct profile_rss *best = NULL;
	size_t who = 0;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			kept[p->threads[p->samples[i].thread].process] = true;
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_rss *r = kept[i] ? profile_rss_peak(p, (uint32_t)i) : NULL;

		if (r && (!best || r->rss > best->rss)) {
			best = r;
			who = i;
		}
	}
	if (best)
		fprintf(out, "Peak RSS: %.1f MiB (%s %d)\n", best->rss / 1048576.0, p->procs[who].comm,
			(int)p->procs[who].pid);
	free(kept);
}

static bool same_host(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int int_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/*
 * The processes with a sample KEEP accepts: "Hosts: 2: a (4 processes), b
 * (4 processes)" when they ran on several, "Ranks: 4 (0-3) of 4 in 4
 * processes; 1 process without a rank" when some have a rank; nothing for
 * a profile of one host without ranks.
 */
static void put_hosts_ranks(FILE *out, const struct profile *p, const bool *keep)
{
	bool *seen = xcalloc(p->nr_procs + 1, sizeof(*seen));
	int32_t *ranks = xmalloc(st_mult(p->nr_procs + 1, sizeof(*ranks)));
	const char **hosts = xmalloc(st_mult(p->nr_procs + 1, sizeof(*hosts)));
	size_t *per_host = xcalloc(p->nr_procs + 1, sizeof(*per_host));
	size_t nr_ranks = 0, unranked = 0, nr_hosts = 0, distinct = 0;
	int32_t world = 0;
	bool one_world = true;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (!keep || keep[i])
			seen[p->threads[p->samples[i].thread].process] = true;
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];
		size_t h = 0;

		if (!seen[i])
			continue;
		while (h < nr_hosts && !same_host(hosts[h], pr->host))
			h++;
		if (h == nr_hosts)
			hosts[nr_hosts++] = pr->host;
		per_host[h]++;
		if (pr->job.rank < 0) {
			unranked++;
			continue;
		}
		ranks[nr_ranks++] = pr->job.rank;
		if (world && pr->job.world_size != world)
			one_world = false;
		world = pr->job.world_size;
	}
	if (nr_hosts > 1) {
		fprintf(out, "Hosts: %zu:", nr_hosts);
		for (size_t h = 0; h < nr_hosts; h++)
			fprintf(out, "%s %s (%zu process%s)", h ? "," : "", hosts[h] ? hosts[h] : "?",
				per_host[h], per_host[h] == 1 ? "" : "es");
		fputc('\n', out);
	}
	if (nr_ranks) {
		/* "0-3, 5": the distinct ranks, runs of consecutive ones as ranges */
		QSORT(ranks, nr_ranks, int_cmp);
		for (size_t i = 0; i < nr_ranks; i++)
			distinct += !i || ranks[i] != ranks[i - 1];
		fprintf(out, "Ranks: %zu (", distinct);
		for (size_t i = 0; i < nr_ranks;) {
			size_t j = i;

			while (j + 1 < nr_ranks && ranks[j + 1] - ranks[j] <= 1)
				j++;
			fprintf(out, "%s%" PRId32, i ? ", " : "", ranks[i]);
			if (ranks[j] != ranks[i])
				fprintf(out, "-%" PRId32, ranks[j]);
			i = j + 1;
		}
		fputc(')', out);
		if (one_world && world > 0)
			fprintf(out, " of %" PRId32, world);
		fprintf(out, " in %zu process%s", nr_ranks, nr_ranks == 1 ? "" : "es");
		if (unranked)
			fprintf(out, "; %zu process%s without a rank", unranked, unranked == 1 ? "" : "es");
		fputc('\n', out);
	}
	free(per_host);
	free(hosts);
	free(ranks);
	free(seen);
}

void report_write_header(FILE *out, const struct profile *p, const struct report_opts *o,
			 const bool *keep)
{
	const struct profile_meta *m = &p->meta;
	const uint64_t *states;
	struct report_summary s;
	uint64_t kept;

	report_summarize(&s, p, &o->filter, keep);
	states = s.states;
	kept = s.samples;
	if (o->nr_inputs == 1)
		fprintf(out, "Profile %s", o->inputs[0]);
	else
		fprintf(out, "Profile of %zu merged files", o->nr_inputs);
	if (m->command)
		fprintf(out, ": %s", m->command);
	fputc('\n', out);
	if (m->start_real_ns && o->nr_inputs == 1)
		put_recorded(out, m);
	fprintf(out, "%" PRIu64 " sample%s", kept, kept == 1 ? "" : "s");
	if (s.filtered)
		fprintf(out, " (of %" PRIu64 " total)", s.samples_total);
	fprintf(out, " over %.3f s from %zu process%s", s.duration_ns / 1e9, s.procs, s.procs == 1 ? "" : "es");
	put_of(out, s.procs, s.procs_total);
	fprintf(out, " and %zu thread%s", s.threads, s.threads == 1 ? "" : "s");
	put_of(out, s.threads, s.threads_total);
	fputc('\n', out);
	put_pauses(out, p, o->nr_inputs);
	/* the hosts of merged recordings, and the ranks of a distributed job */
	put_hosts_ranks(out, p, keep);
	put_rate(out, p, s.filtered);
	put_peak_rss(out, p, keep);
	/* wall mode: what the threads were doing, the split of the table's time */
	if (states[PROFILE_STATE_ON_CPU] + states[PROFILE_STATE_OFF_CPU]) {
		fprintf(out, "Thread states: on CPU (running or runnable) %" PRIu64 " (%.1f%%), "
			"off CPU (sleeping, blocked) %" PRIu64 " (%.1f%%)",
			states[PROFILE_STATE_ON_CPU], 100.0 * states[PROFILE_STATE_ON_CPU] / kept,
			states[PROFILE_STATE_OFF_CPU], 100.0 * states[PROFILE_STATE_OFF_CPU] / kept);
		if (states[PROFILE_STATE_UNKNOWN])
			fprintf(out, ", unknown %" PRIu64, states[PROFILE_STATE_UNKNOWN]);
		fputs(o->filter.state ? "\n" : "; --state on-cpu|off-cpu keeps one\n", out);
	}
	fprintf(out, "Stacks unwound to their root: %" PRIu64 " of %" PRIu64 " (%.1f%%)\n",
		s.complete, kept, kept ? 100.0 * s.complete / kept : 0.0);
	/* frames found by scanning are guesses, however well checked: say how many stacks have one */
	if (m->scanned)
		fprintf(out, "Stack scanning: %s%" PRIu64 " of %" PRIu64 " stacks (%.1f%%) have callers found "
			"by scanning the stack above code without usable CFI (JIT code, assembly)\n",
			s.filtered ? "whole recording: " : "", m->scanned, s.samples_total,
			s.samples_total ? 100.0 * m->scanned / s.samples_total : 0.0);
	put_stops(out, "Unwinding stopped early:", s.stops, s.nr_stops, s.not_entry, s.unexplained,
		  m->callgraph);
	if (!s.stops_exact)
		put_recording_stops(out, p, &s);
	/*
	 * The time of unnamed JIT code is its mappings'; say how to have it
	 * named. oneDNN reads its variable once, when the process starts, so
	 * attach can only tell.
	 */
	if (s.jit_unnamed)
		fprintf(out, "JIT code: %" PRIu64 " sample%s (%.1f%%) in %zu mapping%s of JIT code nobody "
			"named; a JIT names its code in /tmp/perf-PID.map when asked: ONEDNN_JIT_PROFILE=2 "
			"in the environment the process starts with (oneDNN; record sets it), "
			"node --perf-basic-prof, python3 -X perf\n", s.jit_unnamed,
			s.jit_unnamed == 1 ? "" : "s", kept ? 100.0 * s.jit_unnamed / kept : 0.0,
			s.jit_mappings, s.jit_mappings == 1 ? "" : "s");
	put_pythons(out, m, s.filtered);
	put_python_captured(out, m, s.filtered);
	if (p->recorded || (o->frames == REPORT_FRAMES_ALL && report_has_python_frames(p)))
		put_frames(out, o->frames);
	report_summary_release(&s);
}
