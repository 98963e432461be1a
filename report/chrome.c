// SPDX-License-Identifier: MIT
/*
 * Chrome trace event JSON: a timeline per process and thread, its slices
 * made from the samples, and next to it a timeline of the thread's regions
 * and marks with their exact times.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "internal.h"
#include "model.h"

/*
 * The trace event format is described in "Trace Event Format" (Google,
 * docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
 * the object form {"traceEvents": [...], ...}, complete events (ph "X")
 * with ts and dur in microseconds, instant events (ph "i", scope "t" for
 * a thread), metadata events (ph "M") naming processes and threads, and
 * counter events (ph "C") for each process's resident memory, "RSS".
 * Perfetto and chrome://tracing both read it.
 */

/* ---- trace ids ---- */

struct pid_slot {
	int32_t pid;
	uint32_t process;
};

static int pid_slot_cmp(const void *a, const void *b)
{
	const struct pid_slot *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->process < y->process ? -1 : x->process > y->process;
}

/*
 * The trace pid of each process with samples (HAS), -1 for the others.
 * Trace viewers key timelines by pid and tid, but a profile can hold one
 * pid twice: a process that exec'd is a new entry, and merged recordings
 * reuse pids with times that overlap. The first entry keeps its pid, later
 * ones get ids above every real pid and tid (which share one number space),
 * so their slices never interleave. *NEXT receives the first id still free.
 */
static int64_t *trace_pids(const struct profile *p, const bool *has, int64_t *next_out)
{
	int64_t *tpid = xmalloc(st_mult(p->nr_procs + 1, sizeof(*tpid)));
	struct pid_slot *slot = xmalloc(st_mult(p->nr_procs + 1, sizeof(*slot)));
	int64_t next = 0;
	size_t n = 0;

	for (size_t i = 0; i < p->nr_threads; i++)
		if (p->threads[i].tid >= next)
			next = (int64_t)p->threads[i].tid + 1;
	for (size_t i = 0; i < p->nr_procs; i++) {
		tpid[i] = -1;
		if (p->procs[i].pid >= next)
			next = (int64_t)p->procs[i].pid + 1;
		if (has[i])
			slot[n++] = (struct pid_slot){ p->procs[i].pid, i };
	}
	QSORT(slot, n, pid_slot_cmp);
	for (size_t i = 0; i < n; i++)
		tpid[slot[i].process] = i && slot[i].pid == slot[i - 1].pid ? next++ : slot[i].pid;
	free(slot);
	*next_out = next;
	return tpid;
}

/* ---- the timeline of one thread ---- */

/* A function's time on the stack at one depth: a complete event. */
struct slice {
	uint64_t start_ns, end_ns;
	uint32_t func;
};

struct timeline {
	struct slice *slices;   /* in the order they opened: by start, callers first */
	size_t nr, alloc;
	size_t *open;           /* indexes into slices, outermost first */
	size_t nr_open;
	uint32_t *frames;       /* scratch: the current sample's functions, root first */
};

static void close_slices(struct timeline *tl, size_t keep, uint64_t when)
{
	while (tl->nr_open > keep)
		tl->slices[tl->open[--tl->nr_open]].end_ns = when;
}

/*
 * Turns the samples of a thread (N, listed in ORDER) into slices. Sample i
 * covers [t_i, t_i + w_i), its weight, cut short by a next sample that comes
 * sooner; a function stays one slice while successive samples keep it, and
 * everything above it, at the same depth, so a call becomes one slice as it
 * would in a tracer. The next sample also continues the slices when it comes
 * a little later than t_i + w_i, up to half a weight: the timer's jitter (a
 * few microseconds each way) and the profile's whole-microsecond times make
 * that the common case for a thread that keeps running, which must not be
 * cut into one slice per sample. A longer gap, where the thread was off the
 * CPU, closes everything.
 */
static void build_timeline(struct timeline *tl, const struct profile *p, const size_t *order,
			   size_t n)
{
	uint64_t end = 0;

	tl->nr = tl->nr_open = 0;
	for (size_t k = 0; k < n; k++) {
		const struct profile_sample *s = &p->samples[order[k]];
		size_t depth = p->stacks[s->stack].depth, common = 0;

		for (uint32_t a = s->stack, d = depth; a != PROFILE_NONE; a = p->stacks[a].parent)
			tl->frames[--d] = p->locs[p->stacks[a].loc].func;

		if (tl->nr_open && s->time_ns > end)
			close_slices(tl, 0, end);
		while (common < tl->nr_open && common < depth &&
		       tl->slices[tl->open[common]].func == tl->frames[common])
			common++;
		close_slices(tl, common, s->time_ns);
		for (size_t d = common; d < depth; d++) {
			ALLOC_GROW(tl->slices, tl->nr + 1, tl->alloc);
			tl->slices[tl->nr] = (struct slice){ .start_ns = s->time_ns, .func = tl->frames[d] };
			tl->open[tl->nr_open++] = tl->nr++;
		}

		end = s->time_ns + s->weight_ns;
		if (k + 1 < n) {
			uint64_t next = p->samples[order[k + 1]].time_ns;

			if (next <= end + s->weight_ns / 2)
				end = next;
		}
	}
	close_slices(tl, 0, end);
}

/*
 * Nanoseconds to whole microseconds, to the nearest. Slice bounds are
 * rounded as points and the duration is the difference, so a slice nested
 * in another stays inside it: with fractional microseconds, ts + dur would
 * be summed in floating point by the reader and could come out a hair
 * past its parent's end.
 */
static uint64_t us(uint64_t ns)
{
	return (ns + 500) / 1000;
}

/* Starts an event: the comma that separates it from the last one, if there is one. */
static void begin_event(FILE *out, size_t *nr_events)
{
	fputs((*nr_events)++ ? ",\n{" : "{", out);
}

static void write_slices(FILE *out, const struct profile *p, const struct timeline *tl,
			 int64_t pid, int32_t tid, size_t *nr_events)
{
	struct sbuf label = SBUF_INIT;

	for (size_t i = 0; i < tl->nr; i++) {
		const struct slice *sl = &tl->slices[i];
		const struct profile_func *f = &p->funcs[sl->func];

		begin_event(out, nr_events);
		fputs("\"ph\":\"X\",\"name\":", out);
		report_json_string(out, report_func_name_sb(&label, f));
		fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId32 ",\"ts\":%" PRIu64
			",\"dur\":%" PRIu64 ",\"args\":{", pid, tid, us(sl->start_ns),
			us(sl->end_ns) - us(sl->start_ns));
		if (f->file) {
			fputs("\"file\":\"", out);
			report_json_chars(out, f->file);
			fprintf(out, ":%" PRIu32 "\",", f->line);
		}
		fputs("\"module\":", out);
		report_json_string(out, f->module);
		fputs("}}", out);
	}
	sbuf_release(&label);
}

/* ---- the regions of one thread ---- */

/*
 * Regions keep their exact times: microseconds with three decimals, as
 * few as the value needs. Written as decimal from the nanoseconds, so
 * nothing is lost on the way out.
 */
static void fmt_us(char *buf, size_t n, uint64_t ns)
{
	unsigned frac = ns % 1000;

	if (!frac)
		snprintf(buf, n, "%" PRIu64, ns / 1000);
	else if (frac % 100 == 0)
		snprintf(buf, n, "%" PRIu64 ".%u", ns / 1000, frac / 100);
	else if (frac % 10 == 0)
		snprintf(buf, n, "%" PRIu64 ".%02u", ns / 1000, frac / 10);
	else
		snprintf(buf, n, "%" PRIu64 ".%03u", ns / 1000, frac);
}

/*
 * A reader adds ts and dur as doubles, and the sum of two decimals can
 * round a hair past a third: a region that ends with its parent, or just
 * where the next one begins, would end after it and no longer nest. The
 * duration loses a nanosecond, rarely two, until the reader's end is
 * within BOUND. Past 2^53 ns (104 days) a double cannot tell nanoseconds
 * apart: there a few tries are all it gets.
 */
static uint64_t fit_dur(const char *ts, uint64_t dur_ns, double bound, double *end)
{
	double t = strtod(ts, NULL);

	for (int tries = 0;; tries++) {
		char d[32];

		fmt_us(d, sizeof(d), dur_ns);
		*end = t + strtod(d, NULL);
		if (*end <= bound || !dur_ns || tries == 16)
			return dur_ns;
		dur_ns--;
	}
}

/*
 * The track of a thread's regions: complete events for SPANS[FROM..TO),
 * instants for its marks (NR_MARKS, indexes into p->marks at MARKS).
 * READER_END (per span) receives each end as the reader will compute it.
 */
static void write_regions(FILE *out, const struct profile *p, const struct report_span *spans,
			  size_t from, size_t to, double *reader_end, const size_t *marks,
			  size_t nr_marks, int64_t pid, int64_t tid, size_t *nr_events)
{
	struct sbuf label = SBUF_INIT;

	for (size_t i = from; i < to; i++) {
		const struct report_span *s = &spans[i];
		const struct profile_region *r = &p->regions[s->region];
		const struct profile_region_name *nm = &p->region_names[p->region_nodes[r->node].name];
		char ts[32], dur[32], end[32];
		double bound;
		char *path = report_region_path_dup(p, r->node);
		uint64_t d;

		fmt_us(ts, sizeof(ts), s->start_ns);
		fmt_us(end, sizeof(end), s->end_ns);
		bound = strtod(end, NULL);
		/* a parent comes before its children */
		if (s->parent != SIZE_MAX && reader_end[s->parent] < bound)
			bound = reader_end[s->parent];
		d = fit_dur(ts, s->end_ns - s->start_ns, bound, &reader_end[i]);
		fmt_us(dur, sizeof(dur), d);
		begin_event(out, nr_events);
		fputs("\"ph\":\"X\",\"name\":", out);
		report_json_string(out, report_region_label_sb(&label, p, p->region_nodes[r->node].name));
		fputs(",\"cat\":", out);
		report_json_string(out, *nm->domain ? nm->domain : "region");
		fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":%s,\"dur\":%s,\"args\":{\"path\":",
			pid, tid, ts, dur);
		report_json_string(out, path);
		if (r->flags & PROFILE_REGION_OPEN_AT_EXIT)
			fputs(",\"open_at_exit\":true", out);
		fputs("}}", out);
		free(path);
	}
	for (size_t i = 0; i < nr_marks; i++) {
		const struct profile_mark *m = &p->marks[marks[i]];
		const struct profile_region_name *nm = &p->region_names[m->name];
		char ts[32];

		fmt_us(ts, sizeof(ts), m->time_ns);
		begin_event(out, nr_events);
		fputs("\"ph\":\"i\",\"s\":\"t\",\"name\":", out);
		report_json_string(out, report_region_label_sb(&label, p, m->name));
		fputs(",\"cat\":", out);
		report_json_string(out, *nm->domain ? nm->domain : "region");
		fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":%s}", pid, tid, ts);
	}
	sbuf_release(&label);
}

/* ---- the file ---- */

/* A metadata event WHAT (process_name, thread_name) naming a process or thread NAME, and SUFFIX. */
static void write_metadata(FILE *out, const char *what, int64_t pid, int64_t tid, const char *name,
			   const char *suffix, size_t *nr_events)
{
	begin_event(out, nr_events);
	fprintf(out, "\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
		",\"ts\":0,\"args\":{\"name\":\"", what, pid, tid);
	report_json_chars(out, name);
	fprintf(out, "%s\"}}", suffix);
}

/*
 * Process I's resident memory as a counter track ("RSS", in MiB: resident,
 * and of it anonymous), the readings in F's time window.
 */
static void write_rss(FILE *out, const struct profile *p, size_t i, int64_t pid,
		      const struct report_filter *f, size_t *nr_events)
{
	const struct profile_process *pr = &p->procs[i];

	for (size_t k = 0; k < pr->nr_rss; k++) {
		const struct profile_rss *r = &pr->rss[k];

		if (r->time_ns < f->from_ns || (f->to_ns && r->time_ns > f->to_ns))
			continue;
		begin_event(out, nr_events);
		fprintf(out, "\"ph\":\"C\",\"name\":\"RSS\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
			",\"ts\":%" PRIu64 ",\"args\":{\"resident MiB\":%.3f,\"anonymous MiB\":%.3f}}",
			pid, pid, us(r->time_ns), r->rss / 1048576.0, r->anon / 1048576.0);
	}
}

/* What the trace viewers show as the trace's metadata: all strings, as Chrome writes it. */
static void write_other_data(FILE *out, const struct profile *p)
{
	const struct profile_meta *m = &p->meta;
	char buf[64];

	fputs("\"otherData\":{\"exporter\":\"proftool " PROFTOOL_VERSION "\"", out);
	if (m->command) {
		fputs(",\"command\":", out);
		report_json_string(out, m->command);
	}
	if (m->event) {
		fputs(",\"event\":", out);
		report_json_string(out, m->event);
	}
	if (m->mode) {
		fputs(",\"mode\":", out);
		report_json_string(out, m->mode);
	}
	if (m->freq) {
		snprintf(buf, sizeof(buf), "%" PRIu32 " Hz", m->freq);
		fputs(",\"frequency\":", out);
		report_json_string(out, buf);
	}
	if (m->start_real_ns) {
		time_t t = m->start_real_ns / 1000000000ull;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
		fputs(",\"start_time\":", out);
		report_json_string(out, buf);
	}
	fputs("}", out);
}

int report_write_chrome(FILE *out, const struct profile *p, const struct report_filter *f,
			const bool *keep)
{
	size_t *start, *order = report_samples_by_thread(p, keep, &start);
	bool *has = xcalloc(p->nr_procs + 1, sizeof(*has));
	bool *shown = report_regions_shown(p, f, NULL);
	bool *mshown = report_marks_shown(p, f, shown, NULL);
	size_t nr_spans, *marks = xmalloc(st_mult(p->nr_marks + 1, sizeof(*marks)));
	struct report_span *spans = report_region_spans(p, shown, &nr_spans);
	double *reader_end = xcalloc(nr_spans + 1, sizeof(*reader_end));
	struct timeline tl = { 0 };
	uint32_t maxdepth = 1;
	size_t nr_events = 0, sp = 0, mk = 0;
	int64_t *tpid, next_id;
	struct sbuf name = SBUF_INIT;
	bool hosts;

	for (size_t t = 0; t < p->nr_threads; t++)
		if (start[t + 1] > start[t])
			has[p->threads[t].process] = true;
	for (size_t i = 0; i < nr_spans; i++)
		has[p->threads[spans[i].thread].process] = true;
	for (size_t i = 0; i < p->nr_marks; i++)
		if (mshown[i])
			has[p->threads[p->marks[i].thread].process] = true;
	tpid = trace_pids(p, has, &next_id);
	for (size_t s = 0; s < p->nr_stacks; s++)
		if (p->stacks[s].depth > maxdepth)
			maxdepth = p->stacks[s].depth;
	tl.open = xmalloc(st_mult(maxdepth, sizeof(*tl.open)));
	tl.frames = xmalloc(st_mult(maxdepth, sizeof(*tl.frames)));

	fputs("{\"displayTimeUnit\":\"ms\",\n", out);
	write_other_data(out, p);
	fputs(",\n\"traceEvents\":[\n", out);
	hosts = report_many_hosts(p);
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];

		if (!has[i])
			continue;
		/*
		 * A process moved to another pid still shows its own; a rank, and
		 * the host when there are several, say which of a job's it is.
		 */
		if (tpid[i] != pr->pid || pr->job.rank >= 0 || hosts)
			write_metadata(out, "process_name", tpid[i], tpid[i],
				       report_process_title(p, i, hosts, &name), "", &nr_events);
		else
			write_metadata(out, "process_name", tpid[i], tpid[i], pr->comm, "", &nr_events);
		/* the timelines in rank order (Perfetto and chrome://tracing sort by it) */
		if (pr->job.rank >= 0) {
			begin_event(out, &nr_events);
			fprintf(out, "\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
				",\"tid\":%" PRId64 ",\"ts\":0,\"args\":{\"sort_index\":%" PRId32 "}}",
				tpid[i], tpid[i], pr->job.rank);
		}
		write_rss(out, p, i, tpid[i], f, &nr_events);
	}
	sbuf_release(&name);
	for (size_t t = 0; t < p->nr_threads; t++) {
		const struct profile_thread *th = &p->threads[t];
		int64_t pid = tpid[th->process];
		size_t from = sp, nr_marks = 0;
		char suffix[48];

		if (start[t + 1] > start[t]) {
			write_metadata(out, "thread_name", pid, th->tid, th->comm, "", &nr_events);
			build_timeline(&tl, p, order + start[t], start[t + 1] - start[t]);
			write_slices(out, p, &tl, pid, th->tid, &nr_events);
		}
		/* spans and marks are by thread */
		while (sp < nr_spans && spans[sp].thread == t)
			sp++;
		for (; mk < p->nr_marks && p->marks[mk].thread <= t; mk++)
			if (mshown[mk] && p->marks[mk].thread == t)
				marks[nr_marks++] = mk;
		if (sp == from && !nr_marks)
			continue;
		/*
		 * Regions on a track of their own: their exact bounds cut across
		 * the slices the samples make, and events on one track must nest.
		 */
		snprintf(suffix, sizeof(suffix), " [regions, tid %" PRId32 "]", th->tid);
		write_metadata(out, "thread_name", pid, next_id, th->comm, suffix, &nr_events);
		write_regions(out, p, spans, from, sp, reader_end, marks, nr_marks, pid, next_id,
			      &nr_events);
		next_id++;
	}
	fputs("\n]}\n", out);

	free(tl.slices);
	free(tl.open);
	free(tl.frames);
	free(tpid);
	free(has);
	free(order);
	free(start);
	free(shown);
	free(mshown);
	free(marks);
	free(spans);
	free(reader_end);
	return ferror(out) ? -EIO : 0;
}
