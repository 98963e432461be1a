// SPDX-License-Identifier: MIT
/* libFuzzer target: the profile reader on arbitrary bytes, then every report of what it accepts. */
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "report/report.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

/* The example of docs/profile-format.md: the other side of a diff. */
static const char other_json[] =
	"{\"format\":\"proftool-profile\",\"version\":1,"
	"\"meta\":{\"command\":\"./app\",\"callgraph\":\"fp\",\"freq\":1000,"
	"\"period_ns\":1000000,\"duration_ns\":5000000},"
	"\"functions\":{\"name\":[\"_start\",\"main\",\"work\",\"[kernel]\"],"
	"\"module\":[\"app\",\"app\",\"app\",\"[kernel]\"],"
	"\"file\":[null,\"app.c\",\"app.c\",null],\"line\":[0,10,3,0]},"
	"\"locations\":{\"function\":[0,1,2,3],\"line\":[0,12,5,0]},"
	"\"stacks\":{\"parent\":[-1,0,1,2],\"location\":[0,1,2,3]},"
	"\"processes\":[{\"pid\":4242,\"ppid\":4000,\"comm\":\"app\",\"cmdline\":\"./app\"}],"
	"\"threads\":[{\"tid\":4242,\"process\":0,\"comm\":\"app\"}],"
	"\"samples\":{\"time_us_delta\":[1000,1000,1000,1000],\"thread\":[0,0,0,0],"
	"\"stack\":[2,2,3,1]}}";
static struct profile *other;

static const enum report_format formats[] = {
	REPORT_TABLE, REPORT_FOLDED, REPORT_TREE, REPORT_CALLERS, REPORT_CALLEES, REPORT_GROUPS,
	REPORT_JSON, REPORT_TIMERS, REPORT_SPEEDSCOPE, REPORT_CHROME, REPORT_PPROF,
	REPORT_SVG, REPORT_HTML,
};

/* What report_write may return for a profile it was handed (report/report.h). */
static void check_ret(int ret, enum report_format fmt)
{
	/* -ENOSYS: a writer still being finished; -EIO never happens on /dev/null; -ENOEXEC: --split without Python */
	if (ret == 0 || ret == -ENODATA || ret == -ENOENT || ret == -ENOSYS || ret == -ENOEXEC)
		return;
	fprintf(stderr, "report_write(format %d) returned %d\n", (int)fmt, ret);
	abort();
}

/*
 * The options are drawn from a hash of the input rather than from bytes
 * of it: a profile must stay one JSON object (or a gzip stream) with
 * nothing before or after it, and the reader rejects trailing bytes.
 */
static uint64_t next(uint64_t *h)
{
	*h ^= *h << 13;
	*h ^= *h >> 7;
	*h ^= *h << 17;
	return *h;
}

/* Filters that keep some samples: ids and names taken from the profile itself. */
static void pick_filter(const struct profile *p, uint64_t *h, struct report_filter *f)
{
	const struct profile_sample *s = &p->samples[next(h) % p->nr_samples];
	const struct profile_thread *t = &p->threads[s->thread];

	switch (next(h) % 7) {
	case 5:
		/* the module of a sample's innermost frame: some sample is kept */
		f->module = p->funcs[p->locs[p->stacks[s->stack].loc].func].module;
		if (!f->module || !*f->module)
			f->module = "[unknown]";
		break;
	case 0:
		f->pid = p->procs[t->process].pid;
		break;
	case 1:
		f->tid = t->tid;
		break;
	case 2:
		f->comm = next(h) & 1 ? t->comm : p->procs[t->process].comm;
		break;
	case 3:
		f->from_ns = s->time_ns;
		f->to_ns = next(h) & 1 ? 0 : s->time_ns + 1 + next(h) % 1000000000;
		break;
	case 4:
		/* nothing kept: -ENODATA */
		f->tid = INT32_MAX;
		f->pid = 1;
		break;
	default:
		break;
	}
}

/* A --match pattern; cmd/report.c rejects what regcomp does, so do we. */
static const char *pick_match(const struct profile *p, uint64_t *h)
{
	static const char *const pats[] = { ".", "^main$", "^\\[", "a|b", "(x)*y+$", "::", "^$" };
	size_t k = next(h) % (ARRAY_SIZE(pats) + 1);
	const char *m;
	regex_t re;

	if (k < ARRAY_SIZE(pats))
		return pats[k];
	/* a function's own name, which is often not a valid ERE at all */
	m = p->funcs[next(h) % p->nr_funcs].name;
	if (regcomp(&re, m, REG_EXTENDED | REG_NOSUB))
		return NULL;
	regfree(&re);
	return m;
}

static void run_reports(const struct profile *p, uint64_t h)
{
	const char *inputs[] = { "fuzz.data", "other.data" };
	struct report_opts o;
	struct report_diff_opts d;

	/* every format with the defaults cmd/report.c uses */
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		memset(&o, 0, sizeof(o));
		o.format = formats[i];
		o.limit = 30;
		o.min_percent = 0.5;
		o.inputs = inputs;
		o.nr_inputs = 1;
		check_ret(report_write(devnull, p, &o), o.format);
	}
	/* then a few variants */
	for (int round = 0; round < 3; round++) {
		memset(&o, 0, sizeof(o));
		o.format = formats[next(&h) % ARRAY_SIZE(formats)];
		o.sort = next(&h) % (REPORT_SORT_NFL + 1);
		o.limit = next(&h) % 4;
		/* cmd/ allows the sections only with the formats that have them */
		if (!report_format_is_export(o.format)) {
			o.per_thread = next(&h) % 3 == 0;
			o.per_process = !o.per_thread && next(&h) % 2;
		}
		o.min_percent = (double)(next(&h) % 1001) / 10;
		o.match = next(&h) % 2 ? pick_match(p, &h) : NULL;
		pick_filter(p, &h, &o.filter);
		/* cmd/ allows the groups with table, groups and json, the split with the first two */
		if (o.format == REPORT_TABLE || o.format == REPORT_GROUPS || o.format == REPORT_JSON) {
			static const char *const keys[] = { "module", "comm,module", "process,thread,state",
							    "state,module,thread,comm,process" };

			if (next(&h) % 2)
				report_group_by_parse(keys[next(&h) % ARRAY_SIZE(keys)], &o.group_by, NULL, NULL);
			o.group_sort = next(&h) % (REPORT_SORT_NFL + 1);
			o.split = o.format != REPORT_JSON && next(&h) % 2;
		}
		o.inputs = inputs;
		o.nr_inputs = 1 + next(&h) % 2;
		check_ret(report_write(devnull, p, &o), o.format);
	}
	{
		static const enum report_format diff_formats[] = {
			REPORT_TABLE, REPORT_FOLDED, REPORT_SVG, REPORT_HTML,
		};

		/* against itself, and both ways against a profile with other functions */
		for (size_t i = 0; i < 3 * ARRAY_SIZE(diff_formats); i++) {
			size_t side = i / ARRAY_SIZE(diff_formats);
			const struct profile *base = side == 2 ? other : p;
			const struct profile *new = side == 1 ? other : p;
			int ret;

			memset(&d, 0, sizeof(d));
			d.format = diff_formats[i % ARRAY_SIZE(diff_formats)];
			d.limit = next(&h) % 3 ? 0 : 30;
			d.base_name = "base.data";
			d.new_name = "new.data";
			ret = report_write_diff(devnull, base, new, &d);
			if (ret && ret != -ENODATA && ret != -ENOSYS) {
				fprintf(stderr, "report_write_diff(format %d) returned %d\n",
					(int)d.format, ret);
				abort();
			}
		}
	}
}

/*
 * Deep stacks cost the reports time in proportion to depth times distinct
 * leaves (a 3.5 MB file of 100000 leaves on one 100000-frame chain takes
 * minutes in most formats). That is known; past this limit the fuzzer
 * would only find it again as timeouts, so it keeps to the reader there.
 */
#define MAX_LEAF_DEPTHS (1u << 24)     /* sum of depths of the sampled leaves */

static bool bounded(const struct profile *p)
{
	bool *seen = calloc(p->nr_stacks + 1, 1);
	uint64_t sum = 0;

	if (!seen)
		abort();
	for (size_t i = 0; i < p->nr_samples; i++) {
		uint32_t s = p->samples[i].stack;

		if (seen[s])
			continue;
		seen[s] = true;
		sum += p->stacks[s].depth;
	}
	free(seen);
	return sum <= MAX_LEAF_DEPTHS;
}

/* Where the round trip writes: tmpfs when there is one, fsync costs nothing there. */
static char dir[4096], rt_path[4096 + 16];

static void remove_dir(void)
{
	unlink(rt_path);
	rmdir(dir);
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether Q, read back from what P wrote, holds everything P did. */
static bool same_profile(const struct profile *p, const struct profile *q)
{
	const struct profile_meta *a = &p->meta, *b = &q->meta;
	bool wall = a->mode && !strcmp(a->mode, "wall");

	if (p->nr_funcs != q->nr_funcs || p->nr_locs != q->nr_locs || p->nr_stacks != q->nr_stacks ||
	    p->nr_procs != q->nr_procs || p->nr_threads != q->nr_threads ||
	    p->nr_samples != q->nr_samples || a->nr_stops != b->nr_stops)
		return false;
	if (!str_same(a->tool_version, b->tool_version) || !str_same(a->command, b->command) ||
	    !str_same(a->event, b->event) || !str_same(a->callgraph, b->callgraph) ||
	    !str_same(a->mode, b->mode) || !str_same(a->backend, b->backend) ||
	    !str_same(a->host, b->host) || !str_same(a->kernel, b->kernel) || a->freq != b->freq ||
	    a->period_ns != b->period_ns || a->start_real_ns != b->start_real_ns ||
	    a->duration_ns != b->duration_ns || a->lost != b->lost ||
	    a->cpu_time_ns != b->cpu_time_ns || a->exit_status != b->exit_status)
		return false;
	for (size_t i = 0; i < a->nr_stops; i++)
		if (!str_same(a->stops[i].reason, b->stops[i].reason) ||
		    !str_same(a->stops[i].module, b->stops[i].module) ||
		    a->stops[i].count != b->stops[i].count)
			return false;
	for (size_t i = 0; i < p->nr_funcs; i++)
		if (!str_same(p->funcs[i].name, q->funcs[i].name) ||
		    !str_same(p->funcs[i].module, q->funcs[i].module) ||
		    !str_same(p->funcs[i].file, q->funcs[i].file) || p->funcs[i].line != q->funcs[i].line)
			return false;
	for (size_t i = 0; i < p->nr_locs; i++)
		if (p->locs[i].func != q->locs[i].func || p->locs[i].line != q->locs[i].line)
			return false;
	for (size_t i = 0; i < p->nr_stacks; i++)
		if (p->stacks[i].parent != q->stacks[i].parent || p->stacks[i].loc != q->stacks[i].loc)
			return false;
	for (size_t i = 0; i < p->nr_procs; i++)
		if (p->procs[i].pid != q->procs[i].pid || p->procs[i].ppid != q->procs[i].ppid ||
		    !str_same(p->procs[i].comm, q->procs[i].comm) ||
		    !str_same(p->procs[i].cmdline, q->procs[i].cmdline) ||
		    !str_same(p->procs[i].host, q->procs[i].host) ||
		    memcmp(&p->procs[i].job, &q->procs[i].job, sizeof(p->procs[i].job)))
			return false;
	for (size_t i = 0; i < p->nr_threads; i++)
		if (p->threads[i].tid != q->threads[i].tid || p->threads[i].process != q->threads[i].process ||
		    !str_same(p->threads[i].comm, q->threads[i].comm))
			return false;
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].time_ns != q->samples[i].time_ns ||
		    p->samples[i].thread != q->samples[i].thread ||
		    p->samples[i].stack != q->samples[i].stack ||
		    p->samples[i].weight_ns != q->samples[i].weight_ns ||
		    /* the state column is written for wall-mode profiles only */
		    (wall && p->samples[i].state != q->samples[i].state))
			return false;
	return true;
}

/* What the reader accepted, the writer writes and the reader reads back the same. */
static void round_trip(const struct profile *p)
{
	char err[512];
	struct profile *q;

	if (profile_write(p, rt_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "profile_write: %s\n", err);
		abort();
	}
	q = profile_read(rt_path, err, sizeof(err));
	if (!q) {
		fprintf(stderr, "reading back what profile_write wrote: %s\n", err);
		abort();
	}
	if (!same_profile(p, q)) {
		fprintf(stderr, "the profile read back differs from the one written\n");
		abort();
	}
	profile_free(q);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	(void)argc;
	(void)argv;
	devnull = fopen("/dev/null", "w");
	other = profile_read_mem(other_json, sizeof(other_json) - 1, NULL, 0);
	if (!devnull || !other)
		abort();
	if (!tmp || !*tmp)
		tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof(dir), "%s/proftool-fuzz-profile-XXXXXX", tmp);
	if (!mkdtemp(dir))
		abort();
	snprintf(rt_path, sizeof(rt_path), "%s/rt.data", dir);
	atexit(remove_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct profile *p = profile_read_mem(data, size, err, sizeof(err));
	struct profile *merged;
	uint64_t h;

	if (!p) {
		/* every failure has a reason for the user and an errno for cmd/ */
		if (!err[0] || !errno)
			abort();
		return 0;
	}
	round_trip(p);
	/* cmd/report.c stops here on an empty profile; report/ may assume samples */
	if (p->nr_samples && bounded(p)) {
		h = hash_bytes(data, size, 0x5eed) | 1;
		run_reports(p, h);
		/* proftool report A A: the same profile merged into itself */
		merged = profile_read_mem(data, size, err, sizeof(err));
		if (!merged)
			abort();
		profile_merge(merged, p);
		check_ret(report_write(devnull, merged,
				       &(struct report_opts){ .format = REPORT_TABLE, .limit = 30,
							      .inputs = (const char *[]){ "a", "b" },
							      .nr_inputs = 2 }), REPORT_TABLE);
		profile_free(merged);
	}
	profile_free(p);
	return 0;
}
