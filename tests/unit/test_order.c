// SPDX-License-Identifier: MIT
/* Unit tests for the perf backend's time order: the pending records' sort, which merges runs. */
#include <stdint.h>
#include <string.h>

#include "sampler/perf_int.h"
#include "unit.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * Fills S with N records in RUNS runs, each in time order (as one buffer's
 * records of one sweep are), times drawn from [0, SPAN): ties within and
 * across runs included when SPAN is small. seq numbers them as taken, and
 * off keeps where each started, to check nothing is lost or doubled.
 */
static void fill(struct perf_sampler *s, size_t n, size_t runs, uint64_t span)
{
	size_t per = runs ? (n + runs - 1) / runs : n;

	s->nr_pend = 0;
	ALLOC_GROW(s->pend, n, s->alloc_pend);
	for (size_t i = 0; i < n; i += per) {
		uint64_t t = next() % span;

		for (size_t k = i; k < n && k < i + per; k++) {
			t += next() % 3; /* non-decreasing: equal times too */
			memset(&s->pend[k], 0, sizeof(s->pend[k]));
			s->pend[k].time = t;
			s->pend[k].seq = k;
			s->pend[k].off = k;
		}
	}
	s->nr_pend = n;
}

/* Whether S's records are in (time, seq) order and are the N filled, each once. */
static int sorted_whole(const struct perf_sampler *s, size_t n)
{
	unsigned char *seen = calloc(n ? n : 1, 1);
	int ok = s->nr_pend == n;

	for (size_t i = 0; ok && i < n; i++) {
		const struct pending *p = &s->pend[i];

		if (p->off >= n || seen[p->off] || p->seq != p->off)
			ok = 0;
		else
			seen[p->off] = 1;
		if (i && (p[-1].time > p->time || (p[-1].time == p->time && p[-1].seq > p->seq)))
			ok = 0;
	}
	free(seen);
	return ok;
}

static void free_sampler(struct perf_sampler *s)
{
	free(s->pend);
	free(s->pend_tmp);
	free(s->runs);
	memset(s, 0, sizeof(*s));
}

static void test_sorts_runs(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 7, 64, 1000, 4097 };
	static const size_t runs[] = { 1, 2, 3, 5, 16, 1000 };
	struct perf_sampler s;

	memset(&s, 0, sizeof(s));
	for (size_t a = 0; a < sizeof(sizes) / sizeof(*sizes); a++)
		for (size_t b = 0; b < sizeof(runs) / sizeof(*runs); b++)
			for (uint64_t span = 4; span <= 1u << 20; span <<= 8) {
				fill(&s, sizes[a], runs[b], span);
				perf_sort_pending(&s);
				CHECK(sorted_whole(&s, sizes[a]));
				/* sorting what is sorted changes nothing, and sorting again works */
				perf_sort_pending(&s);
				CHECK(sorted_whole(&s, sizes[a]));
			}
	free_sampler(&s);
}

/* Records in no order at all (a run each) and in reverse come out sorted too. */
static void test_sorts_any_order(void)
{
	struct perf_sampler s;
	const size_t n = 3001;

	memset(&s, 0, sizeof(s));
	ALLOC_GROW(s.pend, n, s.alloc_pend);
	for (size_t k = 0; k < n; k++) {
		memset(&s.pend[k], 0, sizeof(s.pend[k]));
		s.pend[k].time = next() % 50;
		s.pend[k].seq = s.pend[k].off = k;
	}
	s.nr_pend = n;
	perf_sort_pending(&s);
	CHECK(sorted_whole(&s, n));
	for (size_t k = 0; k < n; k++) {
		s.pend[k].time = n - k;
		s.pend[k].seq = s.pend[k].off = k;
	}
	perf_sort_pending(&s);
	CHECK(sorted_whole(&s, n));
	CHECK_EQ_U(s.pend[0].time, 1);
	free_sampler(&s);
}

int main(void)
{
	RUN(test_sorts_runs);
	RUN(test_sorts_any_order);
	UNIT_DONE();
}
