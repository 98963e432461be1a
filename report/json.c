// SPDX-License-Identifier: MIT
/*
 * The aggregated profile as JSON (--format json, docs/report-json.md), with
 * the region table. The timers (--format timers) are timers.c's.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/text.h"
#include "internal.h"
#include "model.h"

#define REPORT_JSON_FORMAT "proftool-report"
#define REPORT_JSON_VERSION 1

/* jansson takes only UTF-8: a name that is not (report_display_init makes them printable) is escaped. */
static json_t *str(const char *s)
{
	char *clean;
	json_t *j;

	if (!s)
		return json_null();
	clean = text_printable(s);
	j = json_string(clean ? clean : s);
	free(clean);
	return j ? j : json_string("?");
}

static json_t *u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *secs(uint64_t ns)
{
	return json_real(ns / 1e9);
}

/*
 * A sum of sample weights: KEY_S seconds, or for a counting event's
 * profile KEY_S null and KEY_E the events.
 */
static void put_weight(json_t *j, const struct profile *p, const char *key_s, const char *key_e, uint64_t w)
{
	if (report_counts_events(p)) {
		json_object_set_new(j, key_s, json_null());
		json_object_set_new(j, key_e, u64(w));
	} else {
		json_object_set_new(j, key_s, secs(w));
	}
}

static int dump(FILE *out, json_t *root)
{
	int ret = json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));

	json_decref(root);
	if (ret < 0 || fputc('\n', out) == EOF)
		return -EIO;
	return 0;
}

static json_t *stop_json(const char *reason, const char *module, uint64_t count)
{
	json_t *s = json_object();

	json_object_set_new(s, "reason", str(reason));
	json_object_set_new(s, "module", str(module));
	json_object_set_new(s, "count", u64(count));
	return s;
}

/* The Python interpreters, as the profile has them: the whole recording's. */
static json_t *pythons_json(const struct profile_meta *m)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->nr_pythons; i++) {
		const struct profile_python *py = &m->pythons[i];
		json_t *j = json_object(), *misses = json_array();

		json_object_set_new(j, "interpreter", str(py->interpreter));
		json_object_set_new(j, "version", str(py->version));
		json_object_set_new(j, "unsupported", str(py->unsupported));
		json_object_set_new(j, "samples", u64(py->samples));
		json_object_set_new(j, "with_frames", u64(py->with_frames));
		for (size_t k = 0; k < py->nr_misses; k++) {
			json_t *ms = json_object();

			json_object_set_new(ms, "reason", str(py->misses[k].reason));
			json_object_set_new(ms, "count", u64(py->misses[k].count));
			json_array_append_new(misses, ms);
		}
		json_object_set_new(j, "misses", misses);
		json_array_append_new(a, j);
	}
	return a;
}

static json_t *region_meta_json(const struct profile *p);

/* A process's resident memory: {peak_bytes, readings: [[seconds since the start, bytes, anonymous bytes]]}. */
static json_t *rss_json(const struct profile_process *pr)
{
	json_t *j = json_object(), *a = json_array();
	uint64_t peak = 0;

	for (size_t k = 0; k < pr->nr_rss; k++) {
		const struct profile_rss *r = &pr->rss[k];

		peak = r->rss > peak ? r->rss : peak;
		json_array_append_new(a, json_pack("[f, I, I]", r->time_ns / 1e9, (json_int_t)r->rss,
						   (json_int_t)r->anon));
	}
	json_object_set_new(j, "peak_bytes", pr->nr_rss ? u64(peak) : json_null());
	json_object_set_new(j, "readings", a);
	return j;
}

/* The recording, and the same figures as the text header for the kept samples. */
static json_t *meta_json(const struct profile *p, const struct report_summary *s,
			 enum report_frames frames)
{
	const struct profile_meta *m = &p->meta;
	json_t *j = json_object(), *stops = json_array(), *states = json_object();

	json_object_set_new(j, "tool_version", str(m->tool_version));
	json_object_set_new(j, "command", str(m->command));
	json_object_set_new(j, "event", str(m->event));
	json_object_set_new(j, "callgraph", str(m->callgraph));
	json_object_set_new(j, "mode", str(m->mode));
	json_object_set_new(j, "backend", str(m->backend));
	json_object_set_new(j, "host", str(m->host));
	json_object_set_new(j, "kernel", str(m->kernel));
	json_object_set_new(j, "frequency_hz", u64(m->freq));
	json_object_set_new(j, "period_ns", u64(m->period_ns));
	json_object_set_new(j, "start_time_ns", u64(m->start_real_ns));
	json_object_set_new(j, "duration_ns", u64(m->duration_ns));
	json_object_set_new(j, "cpu_time_ns", u64(m->cpu_time_ns));
	json_object_set_new(j, "lost", u64(m->lost));
	json_object_set_new(j, "exit_status", m->exit_status >= 0 ? json_integer(m->exit_status) : json_null());
	json_object_set_new(j, "samples_in_file", u64(p->nr_samples));
	json_object_set_new(j, "samples", u64(s->samples));
	put_weight(j, p, "seconds", "events", s->weight_ns);
	json_object_set_new(j, "unit", json_string(report_counts_events(p) ? p->meta.event : "seconds"));
	json_object_set_new(j, "filtered", json_boolean(s->filtered));
	json_object_set_new(j, "span_ns", u64(s->duration_ns));
	json_object_set_new(j, "processes_in_file", u64(s->procs_total));
	json_object_set_new(j, "process_count", u64(s->procs));
	json_object_set_new(j, "threads_in_file", u64(s->threads_total));
	json_object_set_new(j, "thread_count", u64(s->threads));
	json_object_set_new(j, "stacks_complete_in_file", u64(s->complete_total));
	json_object_set_new(j, "stacks_complete", u64(s->complete));
	/* the view, where there is one to choose: a profile with Python frames */
	json_object_set_new(j, "frames", p->recorded || (frames == REPORT_FRAMES_ALL && report_has_python_frames(p)) ?
			    json_string(report_frames_name(frames)) : json_null());
	json_object_set_new(states, "on_cpu", u64(s->states[PROFILE_STATE_ON_CPU]));
	json_object_set_new(states, "off_cpu", u64(s->states[PROFILE_STATE_OFF_CPU]));
	json_object_set_new(states, "unknown", u64(s->states[PROFILE_STATE_UNKNOWN]));
	json_object_set_new(j, "thread_states", states);
	for (size_t i = 0; i < m->nr_stops; i++)
		json_array_append_new(stops, stop_json(m->stops[i].reason, m->stops[i].module,
						       m->stops[i].count));
	json_object_set_new(j, "unwind_stops", stops);
	stops = json_array();
	for (size_t i = 0; i < s->nr_stops; i++)
		json_array_append_new(stops, stop_json(s->stops[i].reason, s->stops[i].module,
						       s->stops[i].count));
	if (s->not_entry)
		json_array_append_new(stops, stop_json(REPORT_STOP_NOT_ENTRY, NULL, s->not_entry));
	/* the reason is among the recording's unwind_stops */
	if (s->unexplained)
		json_array_append_new(stops, stop_json(NULL, NULL, s->unexplained));
	json_object_set_new(j, "unwind_stops_kept", stops);
	json_object_set_new(j, "unwind_stops_kept_exact", json_boolean(s->stops_exact));
	json_object_set_new(j, "python", pythons_json(m));
	json_object_set_new(j, "regions", region_meta_json(p));
	return j;
}

/* ---- regions ---- */

/* What the recording made of the region events: whole-recording figures, whatever the filters keep. */
static json_t *region_meta_json(const struct profile *p)
{
	const struct profile_region_stats *st = &p->meta.regions;
	json_t *j = json_object(), *pauses = json_array();
	uint64_t paused = 0;

	json_object_set_new(j, "events", u64(st->events));
	json_object_set_new(j, "dropped", u64(st->dropped));
	json_object_set_new(j, "torn", u64(st->torn));
	json_object_set_new(j, "unbalanced", u64(st->unbalanced));
	json_object_set_new(j, "open_at_exit", u64(st->open_at_exit));
	json_object_set_new(j, "open_at_end", u64(st->open_at_end));
	json_object_set_new(j, "open_at_start", u64(st->open_at_start));
	json_object_set_new(j, "paused_events", u64(st->paused));
	for (size_t i = 0; i < p->nr_pauses; i++) {
		json_t *s = json_object();

		json_object_set_new(s, "start_ns", u64(p->pauses[i].start_ns));
		json_object_set_new(s, "end_ns", u64(p->pauses[i].end_ns));
		json_array_append_new(pauses, s);
		paused += p->pauses[i].end_ns - p->pauses[i].start_ns;
	}
	json_object_set_new(j, "pauses", pauses);
	json_object_set_new(j, "paused_seconds", secs(paused));
	return j;
}

/*
 * MXNet's aggregate statistics (count, total, min, max, avg per name and
 * domain), a row per region path, with self time and the CPU time of the
 * kept samples inside. The instances are those the filters keep; with
 * --region, those of the regions it names and of those nested in them.
 */
static json_t *regions_json(const struct profile *p, const struct report_filter *f, const bool *keep)
{
	struct report_region_totals tot;
	size_t nr, named;
	struct report_region_row *v = report_region_stats(p, f, keep, REPORT_SPLIT_NONE, &nr, &tot);
	bool *inside = f->region ? report_region_inside(p, f->region, &named) : NULL;
	json_t *a = json_array();
	size_t out = 0;
	char **paths;

	/* with --region, the rows of the regions it names and of those nested in them */
	for (size_t i = 0; i < nr; i++)
		if (!inside || inside[v[i].node])
			v[out++] = v[i];
	paths = report_region_rows_order(p, v, out, REPORT_RSORT_TOTAL);
	for (size_t i = 0; i < out; i++) {
		const struct report_region_row *x = &v[i];
		const struct profile_region_name *nm = &p->region_names[p->region_nodes[x->node].name];
		json_t *j = json_object();

		json_object_set_new(j, "path", str(paths[x->path]));
		json_object_set_new(j, "name", str(nm->name));
		json_object_set_new(j, "domain", str(nm->domain));
		json_object_set_new(j, "depth", u64(p->region_nodes[x->node].depth));
		json_object_set_new(j, "count", u64(x->count));
		json_object_set_new(j, "total", secs(x->total_ns));
		json_object_set_new(j, "self", secs(x->self_ns));
		json_object_set_new(j, "min", secs(x->min_ns));
		json_object_set_new(j, "max", secs(x->max_ns));
		json_object_set_new(j, "avg", secs(x->count ? x->total_ns / x->count : 0));
		json_object_set_new(j, "cpu", secs(x->cpu_ns));
		json_object_set_new(j, "samples", u64(x->samples));
		json_object_set_new(j, "open_at_exit", u64(x->open));
		json_object_set_new(j, "open_at_end", u64(x->open_end));
		json_object_set_new(j, "open_at_start", u64(x->open_start));
		json_array_append_new(a, j);
	}
	report_region_paths_free(paths, out);
	free(inside);
	free(v);
	return a;
}

int report_write_json(FILE *out, const struct profile *p, const struct report_filter *filter,
		      const struct report_group_by *by, enum report_frames frames, const bool *keep)
{
	uint64_t total, total_ns, *t_n = xcalloc(p->nr_threads + 1, sizeof(*t_n));
	uint64_t *t_ns = xcalloc(p->nr_threads + 1, sizeof(*t_ns));
	uint64_t *p_n = xcalloc(p->nr_procs + 1, sizeof(*p_n));
	uint32_t *fid = xmalloc(st_mult(p->nr_funcs + 1, sizeof(*fid)));
	uint32_t *path = NULL;
	size_t nr_fs, alloc_path = 0;
	struct report_func_stat *fs = report_func_stats(p, keep, &nr_fs, &total, &total_ns);
	struct report_summary sum;
	struct report_tree t;
	json_t *root = json_object(), *arr;

	json_object_set_new(root, "format", json_string(REPORT_JSON_FORMAT));
	json_object_set_new(root, "version", json_integer(REPORT_JSON_VERSION));
	report_summarize(&sum, p, filter, keep);
	json_object_set_new(root, "meta", meta_json(p, &sum, frames));
	report_summary_release(&sum);

	for (size_t i = 0; i < p->nr_samples; i++) {
		if (!keep[i])
			continue;
		t_n[p->samples[i].thread]++;
		t_ns[p->samples[i].thread] += p->samples[i].weight_ns;
		p_n[p->threads[p->samples[i].thread].process]++;
	}
	arr = json_array();
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];
		json_t *j;

		if (!p_n[i])
			continue;
		j = json_object();
		json_object_set_new(j, "pid", json_integer(pr->pid));
		json_object_set_new(j, "ppid", json_integer(pr->ppid));
		json_object_set_new(j, "comm", str(pr->comm));
		json_object_set_new(j, "cmdline", str(pr->cmdline));
		json_object_set_new(j, "host", str(pr->host));
		/* what is unknown of a rank is null: a process without one is never rank 0 */
		json_object_set_new(j, "rank", pr->job.rank >= 0 ? json_integer(pr->job.rank) : json_null());
		json_object_set_new(j, "local_rank", pr->job.local_rank >= 0 ? json_integer(pr->job.local_rank) :
				    json_null());
		json_object_set_new(j, "world_size", pr->job.world_size > 0 ? json_integer(pr->job.world_size) :
				    json_null());
		json_object_set_new(j, "samples", u64(p_n[i]));
		json_object_set_new(j, "rss", rss_json(pr));
		json_array_append_new(arr, j);
	}
	json_object_set_new(root, "processes", arr);
	arr = json_array();
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct profile_thread *th = &p->threads[i];
		json_t *j;

		if (!t_n[i])
			continue;
		j = json_object();
		json_object_set_new(j, "tid", json_integer(th->tid));
		json_object_set_new(j, "pid", json_integer(p->procs[th->process].pid));
		json_object_set_new(j, "comm", str(th->comm));
		json_object_set_new(j, "samples", u64(t_n[i]));
		put_weight(j, p, "seconds", "events", t_ns[i]);
		json_array_append_new(arr, j);
	}
	json_object_set_new(root, "threads", arr);

	/* functions by total, largest first; their index here is their id */
	report_sort_stats(p, fs, nr_fs, REPORT_SORT_CUMTIME);
	arr = json_array();
	for (size_t i = 0; i < nr_fs; i++) {
		const struct profile_func *f = &p->funcs[fs[i].func];
		json_t *j = json_object();
		struct sbuf label = SBUF_INIT;

		fid[fs[i].func] = i;
		json_object_set_new(j, "id", json_integer((json_int_t)i));
		json_object_set_new(j, "name", str(report_func_name_sb(&label, f)));
		sbuf_release(&label);
		json_object_set_new(j, "module", str(f->module));
		json_object_set_new(j, "file", str(f->file));
		json_object_set_new(j, "line", f->line ? json_integer(f->line) : json_null());
		json_object_set_new(j, "self_samples", u64(fs[i].self));
		json_object_set_new(j, "total_samples", u64(fs[i].cum));
		put_weight(j, p, "self_seconds", "self_events", fs[i].self_ns);
		put_weight(j, p, "total_seconds", "total_events", fs[i].cum_ns);
		json_array_append_new(arr, j);
	}
	json_object_set_new(root, "functions", arr);

	/* stacks by function (lines merged): every tree node with samples of its own */
	report_tree_build(&t, p, keep, false, NULL);
	arr = json_array();
	for (size_t n = 0; n < t.nr; n++) {
		json_t *j, *fr;
		size_t depth = 0;

		if (!t.nodes[n].self)
			continue;
		for (uint32_t a = n; a != PROFILE_NONE; a = t.nodes[a].parent) {
			ALLOC_GROW(path, depth + 1, alloc_path);
			path[depth++] = fid[t.nodes[a].func];
		}
		fr = json_array();
		while (depth--)
			json_array_append_new(fr, json_integer(path[depth]));
		j = json_object();
		json_object_set_new(j, "frames", fr);
		json_object_set_new(j, "samples", u64(t.nodes[n].self));
		put_weight(j, p, "seconds", "events", t.nodes[n].self_ns);
		json_array_append_new(arr, j);
	}
	json_object_set_new(root, "stacks", arr);
	json_object_set_new(root, "regions", regions_json(p, filter, keep));
	if (by && by->nr)
		json_object_set_new(root, "groups", report_groups_json(p, by, keep));
	report_tree_release(&t);
	free(path);
	free(fs);
	free(fid);
	free(t_n);
	free(t_ns);
	free(p_n);
	return dump(out, root);
}
