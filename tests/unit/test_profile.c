// SPDX-License-Identifier: MIT
/* Unit tests for the profile: interning, write-then-read round trip, merging, rejecting bad files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "unit.h"

static char dir[] = "/tmp/proftool-unit-XXXXXX";

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_add_process(p, 100, 1, "app", "app --flag 'x y'");
	uint32_t t1 = profile_add_thread(p, 100, proc, "app");
	uint32_t t2 = profile_add_thread(p, 101, proc, "worker;1");
	uint32_t fm = profile_add_func(p, "main", "app", "/src/app.c", 3);
	uint32_t fw = profile_add_func(p, "std::vector<int>::push_back(int const&)", "libstdc++.so.6", NULL, 0);
	uint32_t s1 = profile_add_stack(p, PROFILE_NONE, profile_add_loc(p, fm, 7));
	uint32_t s2 = profile_add_stack(p, s1, profile_add_loc(p, fw, 0));

	p->meta.command = strdup("app --flag 'x y'");
	p->meta.event = strdup("cpu-clock");
	p->meta.freq = 999;
	p->meta.period_ns = 1001001;
	p->meta.duration_ns = 123456789;
	p->meta.lost = 3;
	p->meta.exit_status = 0;
	profile_add_sample(p, 5000, t1, s1, 1001001, PROFILE_STATE_UNKNOWN);
	profile_add_sample(p, 7000, t2, s2, 1001001, PROFILE_STATE_UNKNOWN);
	profile_add_sample(p, 7000, t1, s2, 1001001, PROFILE_STATE_UNKNOWN);
	return p;
}

static void interning(void)
{
	struct profile *p = profile_new();
	uint32_t a = profile_add_func(p, "f", "m", "f.c", 1);

	CHECK_EQ_U(profile_add_func(p, "f", "m", "f.c", 1), a);
	CHECK(profile_add_func(p, "f", "m", NULL, 1) != a);
	CHECK(profile_add_func(p, "f", "m2", "f.c", 1) != a);
	CHECK_EQ_U(profile_add_loc(p, a, 5), profile_add_loc(p, a, 5));
	CHECK_EQ_U(profile_add_stack(p, PROFILE_NONE, 0), profile_add_stack(p, PROFILE_NONE, 0));
	CHECK_EQ_U(p->stacks[profile_add_stack(p, 0, 0)].depth, 2);
	profile_free(p);
}

static void round_trip(void)
{
	struct profile *p = sample_profile(), *q;
	char path[128], err[256] = "";

	snprintf(path, sizeof(path), "%s/rt.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (!q) {
		fprintf(stderr, "# %s\n", err);
		profile_free(p);
		return;
	}
	CHECK_EQ_U(q->nr_funcs, p->nr_funcs);
	CHECK_EQ_U(q->nr_stacks, p->nr_stacks);
	CHECK_EQ_U(q->nr_samples, 3);
	CHECK_EQ_U(q->nr_threads, 2);
	CHECK(!strcmp(q->threads[1].comm, "worker;1"));
	CHECK(!strcmp(q->procs[0].cmdline, "app --flag 'x y'"));
	CHECK(!strcmp(q->funcs[1].name, "std::vector<int>::push_back(int const&)"));
	CHECK(q->funcs[1].file == NULL);
	CHECK_EQ_U(q->funcs[0].line, 3);
	CHECK_EQ_U(q->samples[1].time_ns, 7000);
	CHECK_EQ_U(q->samples[1].stack, p->samples[1].stack);
	CHECK_EQ_U(q->samples[2].weight_ns, 1001001);
	CHECK_EQ_U(q->meta.lost, 3);
	CHECK_EQ_U(q->meta.duration_ns, 123456789);
	CHECK(!strcmp(q->meta.command, "app --flag 'x y'"));
	CHECK_EQ_U(q->stacks[1].depth, 2);
	profile_free(q);
	profile_free(p);
	unlink(path);
}

static void merging(void)
{
	struct profile *a = sample_profile(), *b = sample_profile();

	profile_merge(a, b);
	CHECK_EQ_U(a->nr_samples, 6);
	CHECK_EQ_U(a->nr_funcs, 2);     /* same functions merge */
	CHECK_EQ_U(a->nr_stacks, 2);
	CHECK_EQ_U(a->nr_threads, 4);   /* threads of two runs stay apart */
	CHECK_EQ_U(a->meta.lost, 6);
	CHECK_EQ_U(a->samples[4].stack, a->samples[1].stack);
	profile_free(a);
	profile_free(b);
}

/* Found by fuzz_profile_read: a sum past INT64_MAX was written negative and lost on reading. */
static void stop_counts_saturate(void)
{
	struct profile *p = sample_profile(), *q;
	char path[128], err[256] = "";

	profile_add_unwind_stop(p, "no CFI", "app", INT64_MAX);
	profile_add_unwind_stop(p, "no CFI", "app", INT64_MAX);
	profile_add_unwind_stop(p, "no CFI", NULL, UINT64_MAX);
	CHECK_EQ_U(p->meta.nr_stops, 2);
	CHECK_EQ_U(p->meta.stops[0].count, INT64_MAX);
	CHECK_EQ_U(p->meta.stops[1].count, INT64_MAX);
	snprintf(path, sizeof(path), "%s/stops.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ_U(q->meta.nr_stops, 2);
		CHECK_EQ_U(q->meta.stops[0].count, INT64_MAX);
	}
	profile_free(q);
	profile_free(p);
	unlink(path);
}

/* Per-interpreter counts: written, read back, merged by (interpreter, version), saturating. */
static void pythons(void)
{
	struct profile *p = sample_profile(), *q, *r = sample_profile();
	char path[128], err[256] = "";
	uint32_t a = profile_add_python(p, "/usr/bin/python3.11", "3.11.2", NULL);
	uint32_t b = profile_add_python(p, "/usr/bin/python3.10", "3.10.12", "3.10 is not supported");

	CHECK_EQ_U(profile_add_python(p, "/usr/bin/python3.11", "3.11.2", NULL), a);
	CHECK(profile_add_python(p, "/usr/bin/python3.11", NULL, NULL) != a);
	p->meta.pythons[a].samples = 3000;
	p->meta.pythons[a].with_frames = 2987;
	profile_add_python_miss(p, a, "no Python thread state", 10);
	profile_add_python_miss(p, a, "torn", 3);
	profile_add_python_miss(p, a, "no Python thread state", UINT64_MAX);
	CHECK_EQ_U(p->meta.pythons[a].nr_misses, 2);
	CHECK_EQ_U(p->meta.pythons[a].misses[0].count, INT64_MAX);
	p->meta.pythons[b].samples = 40;
	snprintf(path, sizeof(path), "%s/py.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ_U(q->meta.nr_pythons, 3);
		CHECK(!strcmp(q->meta.pythons[0].version, "3.11.2"));
		CHECK(q->meta.pythons[0].unsupported == NULL);
		CHECK_EQ_U(q->meta.pythons[0].samples, 3000);
		CHECK_EQ_U(q->meta.pythons[0].with_frames, 2987);
		CHECK_EQ_U(q->meta.pythons[0].nr_misses, 2);
		CHECK(!strcmp(q->meta.pythons[0].misses[1].reason, "torn"));
		CHECK_EQ_U(q->meta.pythons[0].misses[1].count, 3);
		CHECK(!strcmp(q->meta.pythons[1].unsupported, "3.10 is not supported"));
		CHECK(q->meta.pythons[2].version == NULL);
		profile_merge(r, q);
		profile_merge(r, q);
		CHECK_EQ_U(r->meta.nr_pythons, 3);
		CHECK_EQ_U(r->meta.pythons[0].samples, 6000);
		CHECK_EQ_U(r->meta.pythons[0].misses[1].count, 6);
		CHECK_EQ_U(r->meta.pythons[0].misses[0].count, INT64_MAX);
		CHECK_EQ_U(r->meta.pythons[1].samples, 80);
	}
	CHECK(profile_func_is_python(&p->funcs[0]) == false);
	CHECK(profile_func_is_python(&p->funcs[profile_add_func(p, "<module>", PROFILE_MODULE_PYTHON,
								  "/tmp/x/train.py", 1)]));
	profile_free(q);
	profile_free(r);
	profile_free(p);
	unlink(path);
}

static void write_failure_leaves_nothing(void)
{
	struct profile *p = sample_profile();
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/missing/x.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == -ENOENT);
	profile_free(p);
}

static uint32_t plus_one_stack(uint32_t s)
{
	return s == 0 ? 1 : 0;
}

static void swap_stack(struct profile_sample *s, void *arg)
{
	(*(size_t *)arg)++;
	s->stack = plus_one_stack(s->stack);
}

/* Fills P with N samples whose times go back and forth (arrival order is not time order). */
static struct profile *spill_profile(size_t n)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_add_process(p, 100, 1, "app", NULL);
	uint32_t t[3] = { profile_add_thread(p, 100, proc, "app"), profile_add_thread(p, 101, proc, "w1"),
			  profile_add_thread(p, 102, proc, "w2") };
	uint32_t f = profile_add_func(p, "main", "app", NULL, 0);
	uint32_t s0 = profile_add_stack(p, PROFILE_NONE, profile_add_loc(p, f, 1));

	profile_add_stack(p, s0, profile_add_loc(p, f, 2));
	p->meta.freq = 999;
	p->meta.period_ns = 1001001;
	for (size_t i = 0; i < n; i++)
		profile_add_sample(p, 1000000 + i * 997 % 5003 * 1000 + (i % 7) * 13000, t[i % 3], i % 2, 1001001,
				   (enum profile_state)(i % PROFILE_STATE_NR));
	return p;
}

/* Bytes of the file at PATH, NUL-terminated; LEN receives their number. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 20);

	*len = f ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

/* A profile whose samples went to a spill file writes exactly what one kept in memory does. */
static void spilling(void)
{
	struct profile *mem = spill_profile(5000), *sp = spill_profile(0), *q;
	char a[128], b[128], err[256] = "";
	size_t na, nb, mapped = 0, procs, threads;
	char *ba, *bb;

	CHECK(profile_spill_start(sp, dir, 64) == 0);
	for (size_t i = 0; i < 5000; i++)
		profile_add_sample(sp, mem->samples[i].time_ns, mem->samples[i].thread,
				   mem->samples[i].stack, mem->samples[i].weight_ns,
				   (enum profile_state)mem->samples[i].state);
	CHECK(sp->nr_samples < 64);
	CHECK_EQ_U(profile_nr_samples(sp), 5000);
	profile_count_sampled(sp, &procs, &threads);
	CHECK_EQ_U(threads, 3);
	profile_map_samples(sp, swap_stack, &mapped);
	CHECK_EQ_U(mapped, 5000);
	for (size_t i = 0; i < 5000; i++)
		mem->samples[i].stack = plus_one_stack(mem->samples[i].stack);
	profile_sort_samples(mem);
	profile_sort_samples(sp);
	snprintf(a, sizeof(a), "%s/mem.data", dir);
	snprintf(b, sizeof(b), "%s/spill.data", dir);
	CHECK(profile_write(mem, a, err, sizeof(err)) == 0);
	CHECK(profile_write(sp, b, err, sizeof(err)) == 0);
	ba = slurp(a, &na);
	bb = slurp(b, &nb);
	CHECK(na > 100);
	CHECK(na == nb && memcmp(ba, bb, na) == 0);
	q = profile_read(b, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ_U(q->nr_samples, 5000);
		for (size_t i = 1; i < q->nr_samples; i++)
			CHECK(q->samples[i - 1].time_ns <= q->samples[i].time_ns);
	}
	free(ba);
	free(bb);
	unlink(a);
	unlink(b);
	profile_free(q);
	profile_free(mem);
	profile_free(sp);
	/* nothing of the spill file is left in the directory */
	CHECK(rmdir(dir) == 0);
	CHECK(mkdir(dir, 0700) == 0);
}

static bool odd_thread_kept(const struct profile_sample *s, void *arg)
{
	(void)arg;
	return s->thread != 1;
}

/* Dropping samples reaches the spilled ones too, and spilling goes on after it. */
static void dropping_spilled(void)
{
	struct profile *mem = spill_profile(5000), *sp = spill_profile(0);
	const struct profile_sample *x;
	struct profile_iter *it;
	size_t n = 0, kept = 0;

	CHECK(profile_spill_start(sp, dir, 64) == 0);
	for (size_t i = 0; i < 3000; i++)
		profile_add_sample(sp, mem->samples[i].time_ns, mem->samples[i].thread,
				   mem->samples[i].stack, mem->samples[i].weight_ns, PROFILE_STATE_UNKNOWN);
	profile_drop_samples(sp, odd_thread_kept, NULL);
	for (size_t i = 3000; i < 5000; i++)
		profile_add_sample(sp, mem->samples[i].time_ns, mem->samples[i].thread,
				   mem->samples[i].stack, mem->samples[i].weight_ns, PROFILE_STATE_UNKNOWN);
	for (size_t i = 0; i < 5000; i++)
		kept += i >= 3000 || mem->samples[i].thread != 1;
	CHECK_EQ_U(profile_nr_samples(sp), kept);
	profile_sort_samples(sp);
	it = profile_iter_new(sp);
	while ((x = profile_iter_next(it))) {
		n++;
		if (x->time_ns < 1000000)
			CHECK(0);
	}
	CHECK(profile_iter_free(it) == 0);
	CHECK_EQ_U(n, kept);
	profile_free(mem);
	profile_free(sp);
}

/* Region names, paths, instances, marks, pauses and each sample's region survive a round trip and a merge. */
static void regions_round_trip(void)
{
	struct profile *p = sample_profile(), *q;
	char path[128], err[256] = "";
	uint32_t outer, inner, n_outer, n_inner;

	snprintf(path, sizeof(path), "%s/rg.data", dir);
	outer = profile_add_region_name(p, "", "outer");
	inner = profile_add_region_name(p, "net", "inner");
	CHECK_EQ_U(profile_add_region_name(p, "", "outer"), outer);
	n_outer = profile_add_region_node(p, PROFILE_NONE, outer);
	n_inner = profile_add_region_node(p, n_outer, inner);
	CHECK_EQ_U(p->region_nodes[n_inner].depth, 2);
	profile_add_region(p, 1, n_inner, 5000, 6000, 0);
	profile_add_region(p, 0, n_outer, 1000, 9000, PROFILE_REGION_OPEN_AT_EXIT);
	profile_add_region(p, 0, n_inner, 2000, 3000, 0);
	profile_add_mark(p, 0, outer, 4000);
	profile_add_pause(p, 7000, 8000);
	p->meta.regions.events = 7;
	p->meta.regions.unbalanced = 1;
	profile_sort_regions(p);
	CHECK_EQ_U(p->regions[0].start_ns, 1000);
	p->samples[0].region = n_inner;
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (!q) {
		profile_free(p);
		return;
	}
	CHECK_EQ_U(q->nr_region_names, 2);
	CHECK_EQ_U(q->nr_region_nodes, 2);
	CHECK_EQ_U(q->nr_regions, 3);
	CHECK_EQ_U(q->nr_marks, 1);
	CHECK_EQ_U(q->nr_pauses, 1);
	CHECK_EQ_U(q->regions[0].end_ns, 9000);
	CHECK_EQ_U(q->regions[0].flags, PROFILE_REGION_OPEN_AT_EXIT);
	CHECK_EQ_U(q->regions[2].thread, 1);
	CHECK_EQ_U(q->regions[2].start_ns, 5000);
	CHECK(!strcmp(q->region_names[q->region_nodes[q->samples[0].region].name].domain, "net"));
	CHECK_EQ_U(q->samples[1].region, PROFILE_NONE);
	CHECK_EQ_U(q->meta.regions.events, 7);
	CHECK_EQ_U(q->meta.regions.unbalanced, 1);
	profile_merge(q, p);
	CHECK_EQ_U(q->nr_region_nodes, 2);
	CHECK_EQ_U(q->nr_regions, 6);
	CHECK_EQ_U(q->meta.regions.events, 14);
	CHECK_EQ_U(q->samples[q->nr_samples - p->nr_samples].region, n_inner);
	unlink(path);
	profile_free(q);
	profile_free(p);
}

/* Wall-mode profiles keep each sample's thread state; others have none to keep. */
static void states_round_trip(void)
{
	struct profile *p = sample_profile(), *q;
	char path[128], err[256] = "";

	snprintf(path, sizeof(path), "%s/st.data", dir);
	p->meta.mode = strdup("wall");
	p->samples[0].state = PROFILE_STATE_ON_CPU;
	p->samples[1].state = PROFILE_STATE_OFF_CPU;
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ_U(q->samples[0].state, PROFILE_STATE_ON_CPU);
		CHECK_EQ_U(q->samples[1].state, PROFILE_STATE_OFF_CPU);
		CHECK_EQ_U(q->samples[2].state, PROFILE_STATE_UNKNOWN);
	}
	profile_free(q);
	free(p->meta.mode);
	p->meta.mode = strdup("cpu");
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q)
		CHECK_EQ_U(q->samples[0].state, PROFILE_STATE_UNKNOWN);
	profile_free(q);
	profile_free(p);
	unlink(path);
}

/* A process's rank, local rank and world size come back; one without them has none, never 0. */
static void ranks_round_trip(void)
{
	struct profile *p = sample_profile(), *q;
	uint32_t r = profile_add_process(p, 200, 100, "worker", NULL);
	char path[128], err[256] = "";

	p->procs[r].job = (struct profile_rank){ 3, 1, 8 };
	r = profile_add_process(p, 201, 100, "half", NULL);
	p->procs[r].job.rank = 0;       /* a rank, no local rank nor world size */
	snprintf(path, sizeof(path), "%s/ranks.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ_U(q->nr_procs, 3);
		CHECK(q->procs[0].job.rank == PROFILE_RANK_NONE);
		CHECK(q->procs[0].job.local_rank == PROFILE_RANK_NONE);
		CHECK(q->procs[0].job.world_size == 0);
		CHECK(q->procs[1].job.rank == 3 && q->procs[1].job.local_rank == 1 &&
		      q->procs[1].job.world_size == 8);
		CHECK(q->procs[2].job.rank == 0 && q->procs[2].job.local_rank == PROFILE_RANK_NONE &&
		      q->procs[2].job.world_size == 0);
		/* merged, each keeps its own */
		profile_merge(q, p);
		CHECK_EQ_U(q->nr_procs, 6);
		CHECK(q->procs[4].job.rank == 3 && q->procs[4].job.world_size == 8);
		CHECK(q->procs[3].job.rank == PROFILE_RANK_NONE);
	}
	profile_free(q);
	profile_free(p);
	unlink(path);
}

/*
 * Every process has its host: the recording's when read from a file that
 * names none; merged, processes of two hosts with one pid stay two and
 * keep their hosts through a write and a read.
 */
static void hosts(void)
{
	struct profile *a = sample_profile(), *b = sample_profile(), *q;
	char path[128], err[256] = "";
	const char **h;

	profile_set_host(a, "node-a");
	profile_set_host(b, "node-b");
	CHECK(!strcmp(a->procs[0].host, "node-a"));
	profile_merge(a, b);
	CHECK_EQ_U(a->nr_procs, 2);
	CHECK_EQ_U(a->procs[0].pid, a->procs[1].pid);
	CHECK(!strcmp(a->procs[1].host, "node-b"));
	CHECK(!strcmp(a->meta.host, "node-a"));
	CHECK_EQ_U(profile_hosts(a, &h), 2);
	CHECK(!strcmp(h[0], "node-a") && !strcmp(h[1], "node-b"));
	free(h);
	snprintf(path, sizeof(path), "%s/hosts.data", dir);
	CHECK(profile_write(a, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (q) {
		CHECK(!strcmp(q->procs[0].host, "node-a"));
		CHECK(!strcmp(q->procs[1].host, "node-b"));
		CHECK_EQ_U(q->nr_threads, 4);
	}
	profile_free(q);
	/* a process of a recording whose host is unknown stays unknown */
	profile_free(b);
	b = sample_profile();
	profile_merge(a, b);
	CHECK(a->procs[2].host == NULL);
	CHECK_EQ_U(profile_hosts(a, &h), 3);
	free(h);
	/* the snapshots of one recording: one process, on one host */
	profile_free(a);
	profile_free(b);
	a = sample_profile();
	b = sample_profile();
	profile_set_host(a, "node-a");
	profile_set_host(b, "node-a");
	a->meta.series = strdup("s");
	b->meta.series = strdup("s");
	profile_merge(a, b);
	CHECK_EQ_U(a->nr_procs, 1);
	profile_free(b);
	b = sample_profile();
	profile_set_host(b, "node-b");
	b->meta.series = strdup("s");
	profile_merge(a, b);
	CHECK_EQ_U(a->nr_procs, 2);
	profile_free(a);
	profile_free(b);
	unlink(path);
}

static void rejects(const char *text, int want_errno, const char *want_msg)
{
	char path[128], err[256] = "";
	FILE *f;
	struct profile *p;

	snprintf(path, sizeof(path), "%s/bad.data", dir);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	p = profile_read(path, err, sizeof(err));
	CHECK(p == NULL);
	CHECK_EQ_U(errno, want_errno);
	if (!strstr(err, want_msg)) {
		fprintf(stderr, "# for %s: got '%s', want '%s'\n", text, err, want_msg);
		unit_failed++;
	}
	profile_free(p);
	unlink(path);
}

static void bad_files(void)
{
	rejects("", EBADMSG, "empty");
	rejects("hello", EPROTO, "not a proftool profile");
	rejects("{\"format\":\"other\"}", EPROTO, "not a proftool profile");
	rejects("{\"format\":\"proftool-profile\",\"version\":3}", ENOTSUP, "newer");
	rejects("{\"format\":\"proftool-profile\",\"version\":1}", EBADMSG, "meta");
	rejects("{\"format\":\"proftool-profile\",\"version\":1,\"meta\":{},"
		"\"functions\":{\"name\":[\"f\"],\"module\":[\"m\"],\"file\":[null],\"line\":[0]},"
		"\"locations\":{\"function\":[0],\"line\":[0]},"
		"\"stacks\":{\"parent\":[0],\"location\":[0]},"
		"\"processes\":[],\"threads\":[],"
		"\"samples\":{\"time_us_delta\":[],\"thread\":[],\"stack\":[]}}", EBADMSG, "stack parent");
	rejects("{\"format\":\"proftool-profile\",\"version\":1,\"meta\":{},"
		"\"functions\":{\"name\":[\"f\"],\"module\":[\"m\"],\"file\":[null],\"line\":[0]},"
		"\"locations\":{\"function\":[3],\"line\":[0]},"
		"\"stacks\":{\"parent\":[],\"location\":[]},\"processes\":[],\"threads\":[],"
		"\"samples\":{\"time_us_delta\":[],\"thread\":[],\"stack\":[]}}", EBADMSG, "location function");
	rejects("{\"format\":\"proftool-profile\",\"version\":1,\"meta\":{},"
		"\"functions\":{\"name\":[],\"module\":[],\"file\":[],\"line\":[]},"
		"\"locations\":{\"function\":[],\"line\":[]},"
		"\"stacks\":{\"parent\":[],\"location\":[]},\"processes\":[],\"threads\":[],"
		"\"samples\":{\"time_us_delta\":[1],\"thread\":[0],\"stack\":[0]}}", EBADMSG, "empty");
#define PY_META(x) "{\"format\":\"proftool-profile\",\"version\":1,\"meta\":{\"python\":" x "}}"
	rejects(PY_META("{}"), EBADMSG, "meta field 'python' is not an array");
	rejects(PY_META("[1]"), EBADMSG, "python entry 0 is malformed");
	rejects(PY_META("[{\"interpreter\":\"/p\",\"samples\":1}]"), EBADMSG, "python entry 0 is malformed");
	rejects(PY_META("[{\"interpreter\":\"/p\",\"samples\":1,\"with_frames\":2}]"), EBADMSG,
		"python entry 0 is malformed");
	rejects(PY_META("[{\"interpreter\":\"/p\",\"version\":3,\"samples\":1,\"with_frames\":0}]"),
		EBADMSG, "python entry 0 is malformed");
	rejects(PY_META("[{\"interpreter\":\"/p\",\"samples\":-1,\"with_frames\":0}]"), EBADMSG,
		"python entry 0 is malformed");
	rejects(PY_META("[{\"interpreter\":\"/p\",\"samples\":1,\"with_frames\":0,\"misses\":[{\"count\":1}]}]"),
		EBADMSG, "python entry 0: miss 0 is malformed");
#undef PY_META
#define PROC(x) "{\"format\":\"proftool-profile\",\"version\":1,\"meta\":{}," \
	"\"functions\":{\"name\":[],\"module\":[],\"file\":[],\"line\":[]}," \
	"\"locations\":{\"function\":[],\"line\":[]},\"stacks\":{\"parent\":[],\"location\":[]}," \
	"\"processes\":[{\"pid\":1,\"ppid\":0,\"comm\":\"a\"," x "}],\"threads\":[]," \
	"\"samples\":{\"time_us_delta\":[],\"thread\":[],\"stack\":[]}}"
	rejects(PROC("\"rank\":-1"), EBADMSG, "process 0 is malformed");
	rejects(PROC("\"rank\":\"3\""), EBADMSG, "process 0 is malformed");
	rejects(PROC("\"local_rank\":2147483648"), EBADMSG, "process 0 is malformed");
	rejects(PROC("\"world_size\":0"), EBADMSG, "process 0 is malformed");
	rejects(PROC("\"world_size\":null"), EBADMSG, "process 0 is malformed");
	rejects(PROC("\"host\":1"), EBADMSG, "process 0 is malformed");
#undef PROC
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(interning);
	RUN(round_trip);
	RUN(merging);
	RUN(stop_counts_saturate);
	RUN(pythons);
	RUN(write_failure_leaves_nothing);
	RUN(bad_files);
	RUN(spilling);
	RUN(states_round_trip);
	RUN(dropping_spilled);
	RUN(regions_round_trip);
	RUN(ranks_round_trip);
	RUN(hosts);
	rmdir(dir);
	UNIT_DONE();
}
