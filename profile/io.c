// SPDX-License-Identifier: MIT
/* Writing profile files: gzip-compressed JSON, format documented in docs/profile-format.md (read.c reads them). */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/atomic.h"

json_int_t profile_count_int(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (json_int_t)v;
}

static json_t *pythons_to_json(struct jbuild *b, const struct profile_meta *m)
{
	json_t *a = jb_new(b, json_array());

	for (size_t i = 0; i < m->nr_pythons; i++) {
		const struct profile_python *py = &m->pythons[i];
		json_t *misses = jb_new(b, json_array());

		for (size_t j = 0; j < py->nr_misses; j++)
			jb_append(b, misses, jb_new(b, json_pack("{s:o, s:I}",
					"reason", jb_str(b, py->misses[j].reason),
					"count", profile_count_int(py->misses[j].count))));
		jb_append(b, a, jb_new(b, json_pack("{s:o, s:o, s:o, s:I, s:I, s:o}",
						    "interpreter", jb_str(b, py->interpreter),
						    "version", jb_str(b, py->version),
						    "unsupported", jb_str(b, py->unsupported),
						    "samples", profile_count_int(py->samples),
						    "with_frames", profile_count_int(py->with_frames),
						    "misses", misses)));
	}
	return a;
}

static json_t *meta_to_json(struct jbuild *b, const struct profile_meta *m, size_t nr_samples)
{
	json_t *stops = jb_new(b, json_array()), *meta;

	for (size_t i = 0; i < m->nr_stops; i++)
		jb_append(b, stops, jb_new(b, json_pack("{s:o, s:o, s:I}",
							"reason", jb_str(b, m->stops[i].reason),
							"module", jb_str(b, m->stops[i].module),
							"count", (json_int_t)m->stops[i].count)));
	meta = jb_new(b, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
				   "tool_version", jb_str(b, m->tool_version),
				   "command", jb_str(b, m->command),
				   "event", jb_str(b, m->event),
				   "callgraph", jb_str(b, m->callgraph),
				   "mode", jb_str(b, m->mode),
				   "backend", jb_str(b, m->backend),
				   "host", jb_str(b, m->host),
				   "kernel", jb_str(b, m->kernel),
				   "freq", (json_int_t)m->freq,
				   "period_ns", (json_int_t)m->period_ns,
				   "start_real_ns", (json_int_t)m->start_real_ns,
				   "duration_ns", (json_int_t)m->duration_ns,
				   "lost", (json_int_t)m->lost,
				   "cpu_time_ns", (json_int_t)m->cpu_time_ns,
				   "exit_status", (json_int_t)m->exit_status,
				   "samples", (json_int_t)nr_samples));
	jb_set(b, meta, "unwind_stops", stops);
	/* optional, added without a version bump: older files have none */
	if (m->scanned)
		jb_set(b, meta, "unwind_scanned", jb_new(b, json_integer((json_int_t)m->scanned)));
	if (m->python_captured)
		jb_set(b, meta, "python_captured", jb_new(b, json_integer((json_int_t)m->python_captured)));
	jb_set(b, meta, "python", pythons_to_json(b, m));
	jb_set(b, meta, "regions", profile_regions_meta_to_json(b, m));
	if (m->series)
		jb_set(b, meta, "snapshot", jb_new(b, json_pack("{s:o, s:I, s:I}",
								"series", jb_str(b, m->series),
								"index", (json_int_t)m->snapshot,
								"offset_ns", (json_int_t)m->series_offset_ns)));
	return meta;
}

/* The tables as JSON; NULL when some value could not be made. */
/* A process's RSS readings: columns of times (us since the start) and sizes (KiB). */
static json_t *rss_json(struct jbuild *b, const struct profile_process *pr)
{
	json_t *t = jb_new(b, json_array()), *rss = jb_new(b, json_array());
	json_t *anon = jb_new(b, json_array());

	for (size_t k = 0; k < pr->nr_rss; k++) {
		jb_append(b, t, jb_int(b, (json_int_t)(pr->rss[k].time_ns / 1000)));
		jb_append(b, rss, jb_int(b, (json_int_t)(pr->rss[k].rss / 1024)));
		jb_append(b, anon, jb_int(b, (json_int_t)(pr->rss[k].anon / 1024)));
	}
	return jb_new(b, json_pack("{s:o, s:o, s:o}", "time_us", t, "rss_kib", rss, "anon_kib", anon));
}

static json_t *build_json(const struct profile *p)
{
	struct jbuild jb = { 0 }, *b = &jb;
	json_t *root = jb_new(b, json_object());
	json_t *fname = jb_new(b, json_array()), *fmod = jb_new(b, json_array());
	json_t *ffile = jb_new(b, json_array()), *fline = jb_new(b, json_array());
	json_t *lfunc = jb_new(b, json_array()), *lline = jb_new(b, json_array());
	json_t *sparent = jb_new(b, json_array()), *sloc = jb_new(b, json_array());
	json_t *procs = jb_new(b, json_array()), *threads = jb_new(b, json_array()), *regions;

	jb_set(b, root, "format", jb_new(b, json_string(PROFILE_FORMAT)));
	jb_set(b, root, "version", jb_int(b, PROFILE_VERSION_PLAIN));
	jb_set(b, root, "meta", meta_to_json(b, &p->meta, profile_nr_samples(p)));
	for (size_t i = 0; i < p->nr_funcs; i++) {
		jb_append(b, fname, jb_str(b, p->funcs[i].name));
		jb_append(b, fmod, jb_str(b, p->funcs[i].module));
		jb_append(b, ffile, jb_str(b, p->funcs[i].file));
		jb_append(b, fline, jb_int(b, p->funcs[i].line));
	}
	jb_set(b, root, "functions", jb_new(b, json_pack("{s:o, s:o, s:o, s:o}", "name", fname,
							  "module", fmod, "file", ffile, "line", fline)));
	for (size_t i = 0; i < p->nr_locs; i++) {
		jb_append(b, lfunc, jb_int(b, p->locs[i].func));
		jb_append(b, lline, jb_int(b, p->locs[i].line));
	}
	jb_set(b, root, "locations", jb_new(b, json_pack("{s:o, s:o}", "function", lfunc, "line", lline)));
	for (size_t i = 0; i < p->nr_stacks; i++) {
		uint32_t par = p->stacks[i].parent;

		jb_append(b, sparent, jb_int(b, par == PROFILE_NONE ? -1 : (json_int_t)par));
		jb_append(b, sloc, jb_int(b, p->stacks[i].loc));
	}
	jb_set(b, root, "stacks", jb_new(b, json_pack("{s:o, s:o}", "parent", sparent, "location", sloc)));
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];
		json_t *o = jb_new(b, json_pack("{s:i, s:i, s:o, s:o}", "pid", pr->pid, "ppid", pr->ppid,
						"comm", jb_str(b, pr->comm), "cmdline", jb_str(b, pr->cmdline)));

		/* a host only when it is not the recording's: in a profile made of merged ones */
		if (o && !(pr->host == p->meta.host || (pr->host && p->meta.host && !strcmp(pr->host, p->meta.host))))
			jb_set(b, o, "host", jb_str(b, pr->host));
		/* what is known of its rank only: a process without one has no key */
		if (o && pr->job.rank >= 0)
			jb_set(b, o, "rank", jb_int(b, pr->job.rank));
		if (o && pr->job.local_rank >= 0)
			jb_set(b, o, "local_rank", jb_int(b, pr->job.local_rank));
		if (o && pr->job.world_size > 0)
			jb_set(b, o, "world_size", jb_int(b, pr->job.world_size));
		if (o && pr->nr_rss)
			jb_set(b, o, "rss", rss_json(b, pr));
		jb_append(b, procs, o);
	}
	jb_set(b, root, "processes", procs);
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct profile_thread *t = &p->threads[i];

		jb_append(b, threads, jb_new(b, json_pack("{s:i, s:I, s:o}", "tid", t->tid,
							  "process", (json_int_t)t->process,
							  "comm", jb_str(b, t->comm))));
	}
	jb_set(b, root, "threads", threads);
	regions = profile_regions_tables_to_json(b, p);
	if (regions)
		jb_set(b, root, "regions", regions);
	/* a file without byte strings stays readable by the proftool that wrote version 1 */
	if (b->bytes)
		jb_set(b, root, "version", jb_int(b, PROFILE_VERSION));
	if (b->failed) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/*
 * The file is compressed as it is produced, straight into the temporary
 * file: neither the JSON text nor the samples are ever whole in memory, so
 * writing a recording of any length takes the memory of its tables only.
 */
struct zout {
	z_stream zs;
	FILE *fp;
	int err;                /* first error, a negative errno */
	size_t n;               /* bytes waiting in in[] */
	unsigned char in[1 << 16], out[1 << 16];
};

static void zout_deflate(struct zout *z, int flush)
{
	int ret;

	z->zs.next_in = z->in;
	z->zs.avail_in = z->n;
	do {
		size_t have;

		z->zs.next_out = z->out;
		z->zs.avail_out = sizeof(z->out);
		ret = deflate(&z->zs, flush);
		have = sizeof(z->out) - z->zs.avail_out;
		errno = 0;
		if (!z->err && have && fwrite(z->out, 1, have, z->fp) != have)
			z->err = errno ? -errno : -EIO;
	} while (z->zs.avail_out == 0 || (flush == Z_FINISH && ret == Z_OK));
	if (!z->err && ret != Z_OK && ret != Z_BUF_ERROR && !(flush == Z_FINISH && ret == Z_STREAM_END))
		z->err = -EIO;
	z->n = 0;
}

void zput(struct zout *z, const void *buf, size_t len)
{
	const unsigned char *b = buf;

	while (len) {
		size_t k = sizeof(z->in) - z->n < len ? sizeof(z->in) - z->n : len;

		memcpy(z->in + z->n, b, k);
		z->n += k;
		b += k;
		len -= k;
		if (z->n == sizeof(z->in))
			zout_deflate(z, Z_NO_FLUSH);
	}
}

void zputs(struct zout *z, const char *s)
{
	zput(z, s, strlen(s));
}

void zput_int(struct zout *z, int64_t v, bool first)
{
	char buf[24], *e = buf + sizeof(buf), *q = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do
		*--q = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--q = '-';
	if (!first)
		*--q = ',';
	zput(z, q, (size_t)(e - q));
}

enum column { COL_TIME, COL_THREAD, COL_STACK, COL_REGION, COL_STATE, COL_WEIGHT };

static int write_column(struct zout *z, const struct profile *p, enum column col)
{
	struct profile_iter *it = profile_iter_new(p);
	const struct profile_sample *s;
	uint64_t prev_us = 0;
	bool first = true;

	while ((s = profile_iter_next(it))) {
		uint64_t us = s->time_ns / 1000;

		zput_int(z, col == COL_TIME ? (int64_t)(us - prev_us) :
			    col == COL_THREAD ? (int64_t)s->thread :
			    col == COL_STACK ? (int64_t)s->stack :
			    col == COL_REGION ? (s->region == PROFILE_NONE ? -1 : (int64_t)s->region) :
			    col == COL_WEIGHT ? (int64_t)s->weight_ns : (int64_t)s->state, first);
		prev_us = us;
		first = false;
	}
	return profile_iter_free(it);
}

/*
 * Whether a sample weighs other than meta.period_ns: a counting event
 * sampled by frequency (the kernel adapts the period), whose weights then
 * have a column of their own.
 */
static bool weights_vary(const struct profile *p)
{
	struct profile_iter *it = profile_iter_new(p);
	const struct profile_sample *s;
	bool vary = false;

	while (!vary && (s = profile_iter_next(it)))
		vary = s->weight_ns != (uint32_t)p->meta.period_ns;
	profile_iter_free(it);
	return vary;
}

/* The sample columns, the bulk of a long profile, written as text after the tables. */
static int write_samples(struct zout *z, const struct profile *p)
{
	static const char *const heads[] = {
		",\"samples\":{\"time_us_delta\":[", "],\"thread\":[", "],\"stack\":[", "],\"region\":[",
		"],\"state\":[", "],\"weight\":["
	};
	/* the state column only where it says something: wall mode; the region one with regions */
	bool wall = p->meta.mode && !strcmp(p->meta.mode, "wall");
	int ret = 0;

	profile_regions_write_columns(z, p);
	for (enum column c = COL_TIME; c <= COL_WEIGHT && !ret; c++) {
		if ((c == COL_REGION && !p->nr_region_nodes) || (c == COL_STATE && !wall) ||
		    (c == COL_WEIGHT && !weights_vary(p)))
			continue;
		zputs(z, heads[c]);
		ret = write_column(z, p, c);
	}
	zputs(z, "]}}");
	return ret;
}

int profile_write(const struct profile *p, const char *path, char *err, size_t errlen)
{
	struct atomic_file af;
	struct zout *z;
	char *tables;
	json_t *root;
	int ret = profile_spill_error(p);

	if (ret < 0) {
		errbuf_set(err, errlen, "cannot read back the samples kept in a temporary file: %s",
			   strerror(-ret));
		return ret;
	}
	root = build_json(p);
	/* the tables are whole before anything is created: a failure leaves no file behind */
	tables = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (!tables) {
		errbuf_set(err, errlen, "cannot encode the profile");
		return -ENOMEM;
	}
	ret = atomic_open(&af, path, 0644);
	if (ret < 0) {
		errbuf_set(err, errlen, "cannot create a file next to '%s': %s", path, strerror(-ret));
		free(tables);
		return ret;
	}
	z = xcalloc(1, sizeof(*z));
	z->fp = af.fp;
	/*
	 * Level 1: on an 18,779-sample Python profile (219 KB of JSON), 2.7 ms
	 * for 49 KB against level 6's 11.8 ms for 37 KB. The profile is
	 * written once, when recording ends; its CPU counts against proftool
	 * and the bytes hardly matter.
	 */
	if (deflateInit2(&z->zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(z);
		free(tables);
		atomic_abort(&af);
		errbuf_set(err, errlen, "cannot encode the profile");
		return -ENOMEM;
	}
	/* the tables' object without its closing brace, then the samples */
	zput(z, tables, strlen(tables) - 1);
	free(tables);
	ret = write_samples(z, p);
	zout_deflate(z, Z_FINISH);
	deflateEnd(&z->zs);
	if (ret < 0) {
		errbuf_set(err, errlen, "cannot read back the samples kept in a temporary file: %s",
			   strerror(-ret));
	} else if (z->err < 0) {
		ret = z->err;
		errbuf_set(err, errlen, "cannot write '%s': %s", path, strerror(-ret));
	}
	free(z);
	if (ret < 0) {
		atomic_abort(&af);
		return ret;
	}
	ret = atomic_commit(&af);
	if (ret < 0)
		errbuf_set(err, errlen, "cannot write '%s': %s", path, strerror(-ret));
	return ret;
}
