// SPDX-License-Identifier: MIT
/*
 * A thread that computes half of the wall-clock time and sleeps the other half: wall vs cpu mode.
 * Prints "work SECONDS sleep SECONDS", the wall-clock time the worker spent in each phase.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Computes for MS milliseconds of wall-clock time. */
static __attribute__((noinline, noclone)) void work_phase(unsigned ms)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + ms * 1000000ull, x = 1;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		for (int i = 0; i < 10000; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			asm volatile("" : "+r" (x));
		}
	}
	sink += x;
}

static __attribute__((noinline, noclone)) void sleep_phase(unsigned ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
	sink++;
}

/* wall-clock nanoseconds the worker spent in each phase, calls included: its own measure */
static uint64_t work_ns, sleep_ns;

static void *worker(void *arg)
{
	int rounds = *(int *)arg;

	prctl(PR_SET_NAME, "sleepy-worker");
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC), t1;

		work_phase(20);
		t1 = now_ns(CLOCK_MONOTONIC);
		sleep_phase(20);
		work_ns += t1 - t0;
		sleep_ns += now_ns(CLOCK_MONOTONIC) - t1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? strtod(argv[1], NULL) : 1.0;
	int rounds = (int)(50 * scale);
	pthread_t t;

	if (!(scale > 0) || scale > 1e4) {
		fprintf(stderr, "usage: sleepy [SCALE]\n");
		return 2;
	}
	/* the main thread only waits; the worker is the one with the 50/50 split */
	if (pthread_create(&t, NULL, worker, &rounds))
		return 1;
	pthread_join(t, NULL);
	/* on a busy machine each phase runs over by as long as the worker waits for a CPU */
	printf("work %.3f sleep %.3f\n", work_ns / 1e9, sleep_ns / 1e9);
	return 0;
}
