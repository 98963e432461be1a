// SPDX-License-Identifier: MIT
// Profiler test workload: N busy threads, thread K (1..N) running spin_odd or spin_even, 0.5 s each.

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU per thread at SCALE 1. */
#define THREAD_SECS	0.5
#define CHUNKS		50
#define MAX_THREADS	256

static volatile uint64_t sink;
static uint64_t iters;

static __attribute__((noinline, noclone)) uint64_t spin_odd(uint64_t n)
{
	uint64_t x = 1;

	for (int i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t spin_even(uint64_t n)
{
	uint64_t x = 2;

	for (int i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static void *spinner(void *arg)
{
	int k = (int)(intptr_t)arg;
	char name[16];

	snprintf(name, sizeof(name), "spinner-%d", k);
	pthread_setname_np(pthread_self(), name);
	sink = k % 2 ? spin_odd(iters) : spin_even(iters);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	long n = 2;
	double scale = 1.0;
	int err;

	if (argc > 3) {
		fprintf(stderr, "usage: %s [NTHREADS [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		n = parse_count("NTHREADS", argv[1], MAX_THREADS);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	iters = (uint64_t)(ITERS_PER_SEC * THREAD_SECS * scale / CHUNKS);
	for (long k = 0; k < n; k++) {
		if ((err = pthread_create(&t[k], NULL, spinner, (void *)(intptr_t)(k + 1)))) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (long k = 0; k < n; k++)
		pthread_join(t[k], NULL);
	return 0;
}
