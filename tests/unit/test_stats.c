// SPDX-License-Identifier: MIT
/* Unit tests for the call-tree aggregation: self/cumulative totals, recursion, sort keys. */
#include <string.h>

#include "profile/profile.h"
#include "report/report.h"
#include "unit.h"

/* Adds a sample whose stack is NAMES (root first), COUNT times. */
static void add(struct profile *p, uint32_t thread, const char *const *names, size_t n, int count)
{
	uint32_t s = PROFILE_NONE;

	for (size_t i = 0; i < n; i++) {
		uint32_t f = profile_add_func(p, names[i], "mod", "x.c", 10 + (uint32_t)strlen(names[i]));

		s = profile_add_stack(p, s, profile_add_loc(p, f, 1));
	}
	for (int i = 0; i < count; i++)
		profile_add_sample(p, i, thread, s, 1000, PROFILE_STATE_UNKNOWN);
}

/* The same with the samples at T0, T0 + 1000, ... ns. */
static void add_at(struct profile *p, uint32_t thread, const char *const *names, size_t n, int count,
		   uint64_t t0)
{
	uint32_t s = PROFILE_NONE;

	for (size_t i = 0; i < n; i++)
		s = profile_add_stack(p, s, profile_add_loc(p, profile_add_func(p, names[i], "mod", "x.c", 1), 1));
	for (int i = 0; i < count; i++)
		profile_add_sample(p, t0 + 1000 * (uint64_t)i, thread, s, 1000, PROFILE_STATE_UNKNOWN);
}

static struct profile *make(void)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_add_process(p, 1, 0, "t", NULL);

	profile_add_thread(p, 1, proc, "t");
	return p;
}

static const struct report_func_stat *find(const struct profile *p, const struct report_func_stat *st,
					   size_t nr, const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(p->funcs[st[i].func].name, name))
			return &st[i];
	return NULL;
}

static void self_and_cumulative(void)
{
	struct profile *p = make();
	const char *a[] = { "main", "a" }, *b[] = { "main", "b" }, *m[] = { "main" };
	struct report_func_stat *st;
	uint64_t total, total_ns;
	size_t nr;

	add(p, 0, a, 2, 5);
	add(p, 0, b, 2, 3);
	add(p, 0, m, 1, 2);
	st = report_func_stats(p, NULL, &nr, &total, &total_ns);
	CHECK_EQ_U(total, 10);
	CHECK_EQ_U(total_ns, 10000);
	CHECK_EQ_U(nr, 3);
	CHECK_EQ_U(find(p, st, nr, "main")->self, 2);
	CHECK_EQ_U(find(p, st, nr, "main")->cum, 10);
	CHECK_EQ_U(find(p, st, nr, "a")->self, 5);
	CHECK_EQ_U(find(p, st, nr, "a")->cum, 5);
	CHECK_EQ_U(find(p, st, nr, "b")->cum_ns, 3000);
	free(st);
	profile_free(p);
}

static void recursion_counts_once(void)
{
	struct profile *p = make();
	const char *r[] = { "main", "rec", "rec", "rec", "leaf" };
	const char *pp[] = { "main", "ping", "pong", "ping", "pong" };
	struct report_func_stat *st;
	uint64_t total, total_ns;
	size_t nr;

	add(p, 0, r, 5, 4);
	add(p, 0, pp, 5, 6);
	st = report_func_stats(p, NULL, &nr, &total, &total_ns);
	CHECK_EQ_U(find(p, st, nr, "rec")->cum, 4);
	CHECK_EQ_U(find(p, st, nr, "rec")->self, 0);
	CHECK_EQ_U(find(p, st, nr, "ping")->cum, 6);
	CHECK_EQ_U(find(p, st, nr, "pong")->cum, 6);
	CHECK_EQ_U(find(p, st, nr, "pong")->self, 6);
	CHECK_EQ_U(find(p, st, nr, "main")->cum, 10);
	for (size_t i = 0; i < nr; i++)
		CHECK(st[i].cum <= total);
	free(st);
	profile_free(p);
}

static void filter_by_sample(void)
{
	struct profile *p = make();
	const char *a[] = { "main", "a" }, *b[] = { "main", "b" };
	struct report_func_stat *st;
	uint64_t total, total_ns;
	bool keep[8] = { 0 };
	size_t nr;

	add(p, 0, a, 2, 4);
	add(p, 0, b, 2, 4);
	for (int i = 4; i < 8; i++)
		keep[i] = true;
	st = report_func_stats(p, keep, &nr, &total, &total_ns);
	CHECK_EQ_U(total, 4);
	CHECK(find(p, st, nr, "a") == NULL);
	CHECK_EQ_U(find(p, st, nr, "b")->self, 4);
	free(st);
	profile_free(p);
}

static void sort_keys(void)
{
	struct profile *p = make();
	const char *a[] = { "main", "zeta" }, *b[] = { "main", "alpha" }, *c[] = { "main", "mid", "beta" };
	struct report_func_stat *st;
	uint64_t total, total_ns;
	size_t nr;
	enum report_sort k;

	add(p, 0, a, 2, 7);
	add(p, 0, b, 2, 2);
	add(p, 0, c, 3, 4);
	st = report_func_stats(p, NULL, &nr, &total, &total_ns);

	report_sort_stats(p, st, nr, REPORT_SORT_CUMTIME);
	CHECK(!strcmp(p->funcs[st[0].func].name, "main"));
	CHECK(!strcmp(p->funcs[st[1].func].name, "zeta"));
	report_sort_stats(p, st, nr, REPORT_SORT_TOTTIME);
	CHECK(!strcmp(p->funcs[st[0].func].name, "zeta"));
	CHECK(!strcmp(p->funcs[st[1].func].name, "beta"));
	CHECK(!strcmp(p->funcs[st[2].func].name, "alpha"));
	report_sort_stats(p, st, nr, REPORT_SORT_NAME);
	CHECK(!strcmp(p->funcs[st[0].func].name, "alpha"));
	CHECK(!strcmp(p->funcs[st[nr - 1].func].name, "zeta"));
	/* filename ties on "x.c", then the line (10 + strlen): "mid" (13) before "main" (14) */
	report_sort_stats(p, st, nr, REPORT_SORT_FILENAME);
	CHECK(!strcmp(p->funcs[st[0].func].name, "mid"));

	CHECK(report_sort_parse("cumulative", &k) == 0 && k == REPORT_SORT_CUMTIME);
	CHECK(report_sort_parse("time", &k) == 0 && k == REPORT_SORT_TOTTIME);
	CHECK(report_sort_parse("calls", &k) == 0 && k == REPORT_SORT_NSAMPLES);
	CHECK(report_sort_parse("ncalls", &k) == 0 && k == REPORT_SORT_NSAMPLES);
	CHECK(report_sort_parse("nfl", &k) == 0 && k == REPORT_SORT_NFL);
	CHECK(report_sort_parse("bogus", &k) < 0);
	free(st);
	profile_free(p);
}

static void complete_stacks(void)
{
	struct profile *p = make();
	const char *full[] = { "_start", "__libc_start_main", "main", "f" };
	const char *thr[] = { "clone3", "start_thread", "worker" };
	const char *cut[] = { "[truncated]", "f" };

	add(p, 0, full, 4, 1);
	add(p, 0, thr, 3, 1);
	add(p, 0, cut, 2, 1);
	CHECK(report_stack_complete(p, p->samples[0].stack));
	CHECK(report_stack_complete(p, p->samples[1].stack));
	CHECK(!report_stack_complete(p, p->samples[2].stack));
	profile_free(p);
}

/* The timers JSON of P, in a string the caller frees. */
static char *timers(const struct profile *p)
{
	struct report_opts o = { .format = REPORT_TIMERS };
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	CHECK(report_write(f, p, &o) == 0);
	fclose(f);
	return buf;
}

/* is_parallel: set where two threads were in a node at overlapping times, and nowhere else. */
static void timers_parallel(void)
{
	struct profile *p = make();
	const char *work[] = { "start", "work" }, *solo[] = { "start", "solo" };
	uint32_t t2 = profile_add_thread(p, 2, 0, "u");
	char *j;

	/* one after the other: thread 0 in work from 0 to 9 us, thread 1 from 20 us */
	add_at(p, 0, work, 2, 10, 0);
	add_at(p, t2, work, 2, 10, 20000);
	j = timers(p);
	CHECK(!strstr(j, "is_parallel"));
	CHECK(strstr(j, "\"work\": {"));
	free(j);
	/* thread 0 in solo while thread 1 is in work: start and the root overlap, work does not */
	add_at(p, 0, solo, 2, 10, 21000);
	j = timers(p);
	CHECK(strstr(j, "\"is_parallel\": true") && strstr(j, "\"is_parallel\": true") < strstr(j, "\"work\""));
	CHECK(!strstr(strstr(j, "\"work\""), "is_parallel"));
	free(j);
	/* now thread 0 works at the same time too */
	add_at(p, 0, work, 2, 5, 25000);
	j = timers(p);
	CHECK(strstr(strstr(j, "\"work\""), "is_parallel"));
	free(j);
	profile_free(p);
}

int main(void)
{
	RUN(self_and_cumulative);
	RUN(recursion_counts_once);
	RUN(filter_by_sample);
	RUN(sort_keys);
	RUN(complete_stacks);
	RUN(timers_parallel);
	UNIT_DONE();
}
