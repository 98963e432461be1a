// SPDX-License-Identifier: MIT
// Profiler test workload: N short threads created and joined in a loop, two at a time.

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU each thread burns at SCALE 1. */
#define THREAD_SECS	0.002
#define AT_ONCE		2

static volatile uint64_t sink;
static uint64_t iters;

static __attribute__((noinline, noclone)) void loop_thread_work(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static void *loop_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "loop-thread");
	loop_thread_work(iters);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = 500;
	double scale = 1.0;

	if (argc > 3) {
		fprintf(stderr, "usage: %s [N [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		n = parse_count("N", argv[1], 1000000);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	iters = (uint64_t)(ITERS_PER_SEC * THREAD_SECS * scale);
	prctl(PR_SET_NAME, "loop-main", 0, 0, 0);
	for (long done = 0; done < n; done += AT_ONCE) {
		pthread_t t[AT_ONCE];
		int k = n - done < AT_ONCE ? (int)(n - done) : AT_ONCE, err;

		for (int i = 0; i < k; i++) {
			if ((err = pthread_create(&t[i], NULL, loop_thread, NULL))) {
				fprintf(stderr, "pthread_create: %s\n", strerror(err));
				return 1;
			}
		}
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}
