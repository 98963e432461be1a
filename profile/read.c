// SPDX-License-Identifier: MIT
/* Reading profile files and checking them whole: the format of docs/profile-format.md (io.c writes it). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int read_all(const char *path, unsigned char **out, size_t *outlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *buf = NULL;
	size_t len = 0, alloc = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return -EISDIR;
	}
	for (;;) {
		ssize_t n;

		ALLOC_GROW(buf, len + 65536, alloc);
		n = read(fd, buf + len, alloc - len);
		if (n < 0) {
			int e = -errno;

			if (errno == EINTR)
				continue;
			free(buf);
			close(fd);
			return e;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;
}

/* Inflates a gzip stream. Returns 0, -EBADMSG when corrupt, -ENODATA when truncated. */
static int gunzip(const unsigned char *in, size_t inlen, char **out, size_t *outlen)
{
	z_stream zs;
	char *buf = NULL;
	size_t alloc = 0, len = 0;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)in;
	zs.avail_in = inlen;
	do {
		ALLOC_GROW(buf, len + (inlen > 65536 ? inlen : 65536) + 1, alloc);
		zs.next_out = (unsigned char *)buf + len;
		zs.avail_out = alloc - len - 1;
		ret = inflate(&zs, Z_NO_FLUSH);
		len = alloc - 1 - zs.avail_out;
	} while (ret == Z_OK && (zs.avail_in || !zs.avail_out));
	inflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return ret == Z_OK || ret == Z_BUF_ERROR ? -ENODATA : -EBADMSG;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

void reader_bad(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad++)
		return;
	if (!r->err || !r->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

json_t *reader_array(struct reader *r, json_t *obj, const char *key, size_t n, bool check_n)
{
	json_t *a = json_object_get(obj, key);

	if (!json_is_array(a)) {
		reader_bad(r, "field '%s' is missing", key);
		return NULL;
	}
	if (check_n && json_array_size(a) != n) {
		reader_bad(r, "field '%s' has %zu entries, expected %zu", key, json_array_size(a), n);
		return NULL;
	}
	return a;
}

json_int_t reader_int_at(struct reader *r, json_t *a, size_t i, json_int_t lo, json_int_t hi,
			     const char *what)
{
	json_t *v = json_array_get(a, i);
	json_int_t x;

	if (!json_is_integer(v)) {
		reader_bad(r, "%s %zu is not an integer", what, i);
		return lo;
	}
	x = json_integer_value(v);
	if (x < lo || x > hi) {
		reader_bad(r, "%s %zu is out of range", what, i);
		return lo;
	}
	return x;
}

const char *reader_str_at(struct reader *r, json_t *a, size_t i, bool nullable, const char *what)
{
	json_t *v = json_array_get(a, i);

	if (nullable && json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		reader_bad(r, "%s %zu is not a string", what, i);
		return "";
	}
	return json_string_value(v);
}

static char *meta_str(json_t *meta, const char *key)
{
	json_t *v = json_object_get(meta, key);

	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

static uint64_t meta_u64(json_t *meta, const char *key)
{
	json_t *v = json_object_get(meta, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static void read_meta(struct profile *p, json_t *meta)
{
	struct profile_meta *m = &p->meta;
	json_t *ex = json_object_get(meta, "exit_status");
	json_t *stops = json_object_get(meta, "unwind_stops"), *st;
	size_t i;

	m->tool_version = meta_str(meta, "tool_version");
	m->command = meta_str(meta, "command");
	m->event = meta_str(meta, "event");
	m->callgraph = meta_str(meta, "callgraph");
	m->mode = meta_str(meta, "mode");
	m->backend = meta_str(meta, "backend");
	m->host = meta_str(meta, "host");
	m->kernel = meta_str(meta, "kernel");
	/* a frequency that does not fit reads as unknown, not as what is left after truncation */
	m->freq = meta_u64(meta, "freq") <= UINT32_MAX ? (uint32_t)meta_u64(meta, "freq") : 0;
	/* likewise a period past UINT32_MAX ns (4 s): proftool's are 1 s at most */
	m->period_ns = meta_u64(meta, "period_ns") <= UINT32_MAX ? meta_u64(meta, "period_ns") : 0;
	m->start_real_ns = meta_u64(meta, "start_real_ns");
	m->duration_ns = meta_u64(meta, "duration_ns");
	m->lost = meta_u64(meta, "lost");
	m->scanned = meta_u64(meta, "unwind_scanned");
	m->python_captured = meta_u64(meta, "python_captured");
	m->cpu_time_ns = meta_u64(meta, "cpu_time_ns");
	m->exit_status = json_is_integer(ex) && json_integer_value(ex) >= INT32_MIN &&
			 json_integer_value(ex) <= INT32_MAX ? (int32_t)json_integer_value(ex) : -1;
	/* optional, added without a version bump: older files have none */
	if (json_is_object(json_object_get(meta, "snapshot"))) {
		json_t *snap = json_object_get(meta, "snapshot");

		m->series = meta_str(snap, "series");
		m->snapshot = meta_u64(snap, "index") <= UINT32_MAX ? (uint32_t)meta_u64(snap, "index") : 0;
		m->series_offset_ns = meta_u64(snap, "offset_ns");
	}
	json_array_foreach(stops, i, st) {
		json_t *r = json_object_get(st, "reason"), *mod = json_object_get(st, "module");
		json_t *c = json_object_get(st, "count");

		if (json_is_string(r) && json_is_integer(c) && json_integer_value(c) > 0)
			profile_add_unwind_stop(p, json_string_value(r),
						json_is_string(mod) ? json_string_value(mod) : NULL,
						json_integer_value(c));
	}
}

/* A string or null (or absent, read as null); false for anything else. */
static bool str_or_null(json_t *v, const char **out)
{
	*out = json_is_string(v) ? json_string_value(v) : NULL;
	return !v || json_is_null(v) || json_is_string(v);
}

/*
 * meta.python, optional, added without a version bump: older files have
 * none. Unlike the recording's other figures it is checked, since the
 * header prints every field of it: a malformed entry makes the file corrupt.
 */
static void read_pythons(struct reader *r, struct profile *p, json_t *meta)
{
	json_t *a = json_object_get(meta, "python"), *o;
	size_t i;

	if (!a)
		return;
	if (!json_is_array(a)) {
		reader_bad(r, "meta field 'python' is not an array");
		return;
	}
	json_array_foreach(a, i, o) {
		json_t *version = NULL, *unsupported = NULL, *misses = NULL, *ms;
		const char *interp = NULL, *ver, *why;
		json_int_t samples = -1, with = -1;
		struct profile_python *py;
		uint32_t id;
		size_t j;

		if (json_unpack(o, "{s:s, s?o, s?o, s:I, s:I, s?o}", "interpreter", &interp,
				"version", &version, "unsupported", &unsupported, "samples", &samples,
				"with_frames", &with, "misses", &misses) ||
		    !str_or_null(version, &ver) || !str_or_null(unsupported, &why) ||
		    samples < 0 || with < 0 || with > samples || (misses && !json_is_array(misses))) {
			reader_bad(r, "python entry %zu is malformed", i);
			return;
		}
		id = profile_add_python(p, interp, ver, why);
		py = &p->meta.pythons[id];
		/* a duplicate adds up, as merged files do */
		py->samples = py->samples + samples > INT64_MAX ? INT64_MAX : py->samples + samples;
		py->with_frames = py->with_frames + with > INT64_MAX ? INT64_MAX : py->with_frames + with;
		json_array_foreach(misses, j, ms) {
			const char *reason = NULL;
			json_int_t count = -1;

			if (json_unpack(ms, "{s:s, s:I}", "reason", &reason, "count", &count) || count < 0) {
				reader_bad(r, "python entry %zu: miss %zu is malformed", i, j);
				return;
			}
			profile_add_python_miss(p, id, reason, count);
		}
	}
}

/* KEY of process O into *V: absent leaves it, else an integer from LO; false otherwise. */
static bool process_int(json_t *o, const char *key, json_int_t lo, int32_t *v)
{
	json_t *j = json_object_get(o, key);

	if (!j)
		return true;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > INT32_MAX)
		return false;
	*v = (int32_t)json_integer_value(j);
	return true;
}

/* The optional rank, local_rank and world_size of process O (added without a version bump). */
static bool process_rank(json_t *o, struct profile_rank *job)
{
	return process_int(o, "rank", 0, &job->rank) && process_int(o, "local_rank", 0, &job->local_rank) &&
	       process_int(o, "world_size", 1, &job->world_size);
}

/*
 * Tables are appended directly rather than interned, so that indexes in the
 * file stay valid; the interning indexes are rebuilt alongside.
 */
/* Process PROC's RSS readings (profile-format.md, processes.rss): in time order. */
static void read_rss(struct reader *r, struct profile *p, size_t proc, json_t *o)
{
	json_t *t = reader_array(r, o, "time_us", 0, false);
	size_t n = t ? json_array_size(t) : 0;
	json_t *rss = reader_array(r, o, "rss_kib", n, true), *anon = reader_array(r, o, "anon_kib", n, true);
	json_int_t last = 0;

	for (size_t k = 0; !r->bad && k < n; k++) {
		json_int_t us = reader_int_at(r, t, k, last, INT64_MAX / 1000, "RSS reading time");
		json_int_t kib = reader_int_at(r, rss, k, 0, INT64_MAX / 1024, "RSS reading");
		json_int_t akib = reader_int_at(r, anon, k, 0, kib, "anonymous RSS reading");

		if (!r->bad)
			profile_add_rss(p, (uint32_t)proc, (uint64_t)us * 1000, (uint64_t)kib * 1024,
					(uint64_t)akib * 1024);
		last = us;
	}
}

static void read_tables(struct reader *r, struct profile *p, json_t *root)
{
	json_t *fn = json_object_get(root, "functions"), *lo = json_object_get(root, "locations");
	json_t *st = json_object_get(root, "stacks"), *sa = json_object_get(root, "samples");
	json_t *procs = reader_array(r, root, "processes", 0, false);
	json_t *threads = reader_array(r, root, "threads", 0, false);
	json_t *a, *b, *c, *d, *e, *wt;
	size_t n;
	uint64_t t_us = 0;

	if (r->bad)
		return;
	a = reader_array(r, fn, "name", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, fn, "module", n, true);
	c = reader_array(r, fn, "file", n, true);
	d = reader_array(r, fn, "line", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		const char *name = reader_str_at(r, a, i, false, "function name");
		const char *mod = reader_str_at(r, b, i, false, "function module");
		const char *file = reader_str_at(r, c, i, true, "function file");
		uint32_t line = reader_int_at(r, d, i, 0, UINT32_MAX, "function line");

		if (!r->bad && profile_add_func(p, name, mod, file, line) != i)
			reader_bad(r, "function %zu is a duplicate", i);
	}
	a = reader_array(r, lo, "function", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, lo, "line", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		uint32_t f = reader_int_at(r, a, i, 0, (json_int_t)p->nr_funcs - 1, "location function");
		uint32_t line = reader_int_at(r, b, i, 0, UINT32_MAX, "location line");

		if (!r->bad && profile_add_loc(p, f, line) != i)
			reader_bad(r, "location %zu is a duplicate", i);
	}
	a = reader_array(r, st, "parent", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, st, "location", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		/* parent < i keeps the tree acyclic */
		json_int_t par = reader_int_at(r, a, i, -1, (json_int_t)i - 1, "stack parent");
		uint32_t loc = reader_int_at(r, b, i, 0, (json_int_t)p->nr_locs - 1, "stack location");

		if (!r->bad && profile_add_stack(p, par < 0 ? PROFILE_NONE : (uint32_t)par, loc) != i)
			reader_bad(r, "stack %zu is a duplicate", i);
	}
	n = procs ? json_array_size(procs) : 0;
	for (size_t i = 0; !r->bad && i < n; i++) {
		json_t *o = json_array_get(procs, i);
		json_int_t pid = 0, ppid = 0;
		const char *comm = NULL;
		json_t *cmdline = NULL, *rss = NULL, *host = json_object_get(o, "host");
		struct profile_rank job = PROFILE_RANK_INIT;
		struct profile_process *pr;
		uint32_t k;

		if (json_unpack(o, "{s:I, s:I, s:s, s?o, s?o}", "pid", &pid, "ppid", &ppid, "comm", &comm,
				"cmdline", &cmdline, "rss", &rss) || pid < 0 || pid > INT32_MAX || ppid < 0 ||
		    ppid > INT32_MAX || (cmdline && !json_is_string(cmdline) && !json_is_null(cmdline)) ||
		    (host && !json_is_string(host) && !json_is_null(host)) || !process_rank(o, &job)) {
			reader_bad(r, "process %zu is malformed", i);
			break;
		}
		k = profile_add_process(p, pid, ppid, comm, json_string_value(cmdline));
		pr = &p->procs[k];
		/* without a host of its own (added without a version bump), the recording's */
		pr->host = xstrdup_or_null(host ? json_string_value(host) : p->meta.host);
		pr->job = job;
		if (rss)
			read_rss(r, p, k, rss);
	}
	n = threads ? json_array_size(threads) : 0;
	for (size_t i = 0; !r->bad && i < n; i++) {
		json_t *o = json_array_get(threads, i);
		json_int_t tid = 0, proc = 0;
		const char *comm = NULL;

		if (json_unpack(o, "{s:I, s:I, s:s}", "tid", &tid, "process", &proc, "comm", &comm) ||
		    tid < 0 || tid > INT32_MAX || proc < 0 || (size_t)proc >= p->nr_procs)
			reader_bad(r, "thread %zu is malformed", i);
		else
			profile_add_thread(p, tid, proc, comm);
	}
	if (!r->bad)
		profile_regions_read_tables(r, p, root);
	if (r->bad)
		return;
	a = reader_array(r, sa, "time_us_delta", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, sa, "thread", n, true);
	c = reader_array(r, sa, "stack", n, true);
	/* optional, added without a version bump: wall-mode files have it */
	d = json_object_get(sa, "state") ? reader_array(r, sa, "state", n, true) : NULL;
	/* likewise: files with regions have it */
	e = json_object_get(sa, "region") ? reader_array(r, sa, "region", n, true) : NULL;
	/* likewise: samples that weigh other than meta.period_ns (a counting event by frequency) */
	wt = json_object_get(sa, "weight") ? reader_array(r, sa, "weight", n, true) : NULL;
	if (r->bad)
		return;
	if (n && (!p->nr_threads || !p->nr_stacks)) {
		reader_bad(r, "samples refer to empty thread or stack tables");
		return;
	}
	p->samples = xmalloc(st_mult(n ? n : 1, sizeof(*p->samples)));
	p->alloc_samples = n ? n : 1;
	for (size_t i = 0; !r->bad && i < n; i++) {
		json_int_t dt = reader_int_at(r, a, i, -(json_int_t)t_us, INT64_MAX / 2, "sample time");
		uint32_t th = reader_int_at(r, b, i, 0, (json_int_t)p->nr_threads - 1, "sample thread");
		uint32_t sk = reader_int_at(r, c, i, 0, (json_int_t)p->nr_stacks - 1, "sample stack");
		enum profile_state state = d ? (enum profile_state)reader_int_at(r, d, i, 0, PROFILE_STATE_NR - 1,
									     "sample state") : PROFILE_STATE_UNKNOWN;

		if (dt > (json_int_t)(UINT64_MAX / 1000 - t_us)) {
			reader_bad(r, "sample time %zu is out of range", i);
			break;
		}
		t_us += dt;
		profile_add_sample(p, t_us * 1000, th, sk, wt ? (uint32_t)reader_int_at(r, wt, i, 0, UINT32_MAX, "sample weight") :
				   (uint32_t)p->meta.period_ns, state);
		if (e) {
			json_int_t rg = reader_int_at(r, e, i, -1, (json_int_t)p->nr_region_nodes - 1,
						      "sample region");

			p->samples[p->nr_samples - 1].region = rg < 0 ? PROFILE_NONE : (uint32_t)rg;
		}
	}
}

struct profile *profile_read_mem(const void *buf, size_t len, char *err, size_t errlen)
{
	const unsigned char *raw = buf;
	const char *text = buf;
	char *inflated = NULL;
	size_t textlen = len;
	struct profile *p = NULL;
	json_t *root = NULL, *ver;
	json_error_t jerr;
	struct reader r = { err, errlen, 0 };
	int ret, errsv = 0;

	if (len == 0) {
		errbuf_set(err, errlen, "the file is empty");
		errsv = EBADMSG;
		goto out;
	}
	if (len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
		ret = gunzip(raw, len, &inflated, &textlen);
		if (ret == -ENODATA) {
			errbuf_set(err, errlen, "the file is truncated");
			errsv = EBADMSG;
			goto out;
		} else if (ret < 0) {
			errbuf_set(err, errlen, "the file is corrupt (bad compressed data)");
			errsv = EBADMSG;
			goto out;
		}
		text = inflated;
	} else if (raw[0] != '{') {
		/* plain JSON is accepted too, for hand-made and debugging profiles; nothing else */
		errbuf_set(err, errlen, "not a proftool profile");
		errsv = EPROTO;
		goto out;
	}
	root = json_loadb(text, textlen, 0, &jerr);
	if (!root) {
		errbuf_set(err, errlen, "the file is corrupt (%s at byte %d)", jerr.text, jerr.position);
		errsv = EBADMSG;
		goto out;
	}
	if (!json_is_object(root) || !json_is_string(json_object_get(root, "format")) ||
	    strcmp(json_string_value(json_object_get(root, "format")), PROFILE_FORMAT)) {
		errbuf_set(err, errlen, "not a proftool profile");
		errsv = EPROTO;
		goto out;
	}
	ver = json_object_get(root, "version");
	if (!json_is_integer(ver) || json_integer_value(ver) < 1) {
		errbuf_set(err, errlen, "the file is corrupt (bad version)");
		errsv = EBADMSG;
		goto out;
	}
	if (json_integer_value(ver) > PROFILE_VERSION) {
		errbuf_set(err, errlen, "written by a newer proftool (format version %lld, this one reads up to %d)",
			(long long)json_integer_value(ver), PROFILE_VERSION);
		errsv = ENOTSUP;
		goto out;
	}
	p = profile_new();
	if (profile_json_decode_bytes(root) < 0) {
		reader_bad(&r, "a byte string is malformed");
	} else if (!json_is_object(json_object_get(root, "meta"))) {
		reader_bad(&r, "field 'meta' is missing");
	} else {
		read_meta(p, json_object_get(root, "meta"));
		read_pythons(&r, p, json_object_get(root, "meta"));
		profile_regions_read_meta(p, json_object_get(root, "meta"));
		read_tables(&r, p, root);
	}
	if (r.bad) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err && errlen ? err : "");
		errbuf_set(err, errlen, "the file is corrupt (%s)", why);
		profile_free(p);
		p = NULL;
		errsv = EBADMSG;
	}
out:
	json_decref(root);
	free(inflated);
	if (!p)
		errno = errsv;
	return p;
}

struct profile *profile_read(const char *path, char *err, size_t errlen)
{
	unsigned char *raw = NULL;
	size_t rawlen = 0;
	struct profile *p;
	int ret;

	ret = read_all(path, &raw, &rawlen);
	if (ret < 0) {
		errbuf_set(err, errlen, "%s", strerror(-ret));
		errno = -ret;
		return NULL;
	}
	p = profile_read_mem(raw, rawlen, err, errlen);
	ret = errno;
	free(raw);
	errno = ret;
	return p;
}
