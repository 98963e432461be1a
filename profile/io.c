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

static json_t *jstr(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_int_t profile_count_int(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (json_int_t)v;
}

static json_t *pythons_to_json(const struct profile_meta *m)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->nr_pythons; i++) {
		const struct profile_python *py = &m->pythons[i];
		json_t *misses = json_array();

		for (size_t j = 0; j < py->nr_misses; j++)
			json_array_append_new(misses, json_pack("{s:s, s:I}", "reason", py->misses[j].reason,
								"count", profile_count_int(py->misses[j].count)));
		json_array_append_new(a, json_pack("{s:s, s:o, s:o, s:I, s:I, s:o}",
						   "interpreter", py->interpreter,
						   "version", jstr(py->version),
						   "unsupported", jstr(py->unsupported),
						   "samples", profile_count_int(py->samples),
						   "with_frames", profile_count_int(py->with_frames),
						   "misses", misses));
	}
	return a;
}

static json_t *meta_to_json(const struct profile_meta *m, size_t nr_samples)
{
	json_t *stops = json_array(), *meta;

	for (size_t i = 0; i < m->nr_stops; i++)
		json_array_append_new(stops, json_pack("{s:s, s:o, s:I}", "reason", m->stops[i].reason,
							"module", jstr(m->stops[i].module),
							"count", (json_int_t)m->stops[i].count));
	meta = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "tool_version", jstr(m->tool_version),
			 "command", jstr(m->command),
			 "event", jstr(m->event),
			 "callgraph", jstr(m->callgraph),
			 "mode", jstr(m->mode),
			 "backend", jstr(m->backend),
			 "host", jstr(m->host),
			 "kernel", jstr(m->kernel),
			 "freq", (json_int_t)m->freq,
			 "period_ns", (json_int_t)m->period_ns,
			 "start_real_ns", (json_int_t)m->start_real_ns,
			 "duration_ns", (json_int_t)m->duration_ns,
			 "lost", (json_int_t)m->lost,
			 "cpu_time_ns", (json_int_t)m->cpu_time_ns,
			 "exit_status", (json_int_t)m->exit_status,
			 "samples", (json_int_t)nr_samples);
	json_object_set_new(meta, "unwind_stops", stops);
	json_object_set_new(meta, "python", pythons_to_json(m));
	json_object_set_new(meta, "regions", profile_regions_meta_to_json(m));
	if (m->series)
		json_object_set_new(meta, "snapshot", json_pack("{s:s, s:I, s:I}", "series", m->series,
								 "index", (json_int_t)m->snapshot,
								 "offset_ns", (json_int_t)m->series_offset_ns));
	return meta;
}

static json_t *build_json(const struct profile *p)
{
	json_t *root = json_object();
	json_t *fname = json_array(), *fmod = json_array(), *ffile = json_array(), *fline = json_array();
	json_t *lfunc = json_array(), *lline = json_array();
	json_t *sparent = json_array(), *sloc = json_array();
	json_t *procs = json_array(), *threads = json_array(), *regions;

	json_object_set_new(root, "format", json_string(PROFILE_FORMAT));
	json_object_set_new(root, "version", json_integer(PROFILE_VERSION));
	json_object_set_new(root, "meta", meta_to_json(&p->meta, profile_nr_samples(p)));
	for (size_t i = 0; i < p->nr_funcs; i++) {
		json_array_append_new(fname, json_string(p->funcs[i].name));
		json_array_append_new(fmod, json_string(p->funcs[i].module));
		json_array_append_new(ffile, jstr(p->funcs[i].file));
		json_array_append_new(fline, json_integer(p->funcs[i].line));
	}
	json_object_set_new(root, "functions", json_pack("{s:o, s:o, s:o, s:o}", "name", fname,
							   "module", fmod, "file", ffile, "line", fline));
	for (size_t i = 0; i < p->nr_locs; i++) {
		json_array_append_new(lfunc, json_integer(p->locs[i].func));
		json_array_append_new(lline, json_integer(p->locs[i].line));
	}
	json_object_set_new(root, "locations", json_pack("{s:o, s:o}", "function", lfunc, "line", lline));
	for (size_t i = 0; i < p->nr_stacks; i++) {
		uint32_t par = p->stacks[i].parent;

		json_array_append_new(sparent, json_integer(par == PROFILE_NONE ? -1 : (json_int_t)par));
		json_array_append_new(sloc, json_integer(p->stacks[i].loc));
	}
	json_object_set_new(root, "stacks", json_pack("{s:o, s:o}", "parent", sparent, "location", sloc));
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];

		json_array_append_new(procs, json_pack("{s:i, s:i, s:s, s:o}", "pid", pr->pid,
						       "ppid", pr->ppid, "comm", pr->comm,
						       "cmdline", jstr(pr->cmdline)));
	}
	json_object_set_new(root, "processes", procs);
	for (size_t i = 0; i < p->nr_threads; i++) {
		const struct profile_thread *t = &p->threads[i];

		json_array_append_new(threads, json_pack("{s:i, s:I, s:s}", "tid", t->tid,
							 "process", (json_int_t)t->process,
							 "comm", t->comm));
	}
	json_object_set_new(root, "threads", threads);
	regions = profile_regions_tables_to_json(p);
	if (regions)
		json_object_set_new(root, "regions", regions);
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

enum column { COL_TIME, COL_THREAD, COL_STACK, COL_REGION, COL_STATE };

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
			    (int64_t)s->state, first);
		prev_us = us;
		first = false;
	}
	return profile_iter_free(it);
}

/* The sample columns, the bulk of a long profile, written as text after the tables. */
static int write_samples(struct zout *z, const struct profile *p)
{
	static const char *const heads[] = {
		",\"samples\":{\"time_us_delta\":[", "],\"thread\":[", "],\"stack\":[", "],\"region\":[",
		"],\"state\":["
	};
	/* the state column only where it says something: wall mode; the region one with regions */
	bool wall = p->meta.mode && !strcmp(p->meta.mode, "wall");
	int ret = 0;

	profile_regions_write_columns(z, p);
	for (enum column c = COL_TIME; c <= COL_STATE && !ret; c++) {
		if ((c == COL_REGION && !p->nr_region_nodes) || (c == COL_STATE && !wall))
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
	tables = json_dumps(root, JSON_COMPACT);
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
	if (deflateInit2(&z->zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
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
