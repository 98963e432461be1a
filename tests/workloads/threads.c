// SPDX-License-Identifier: MIT
// Profiler test workload: a named main thread plus three named worker threads doing equal work.

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
#define NR_WORKERS	3
/* Seconds of CPU per worker thread and for main_spin() at SCALE 1. */
#define WORKER_SECS	0.3
#define MAIN_SECS	0.2
/* Work is split into chunks so that a partial profile keeps the split. */
#define CHUNKS		50

static volatile uint64_t sink;
static uint64_t worker_iters;
static uint64_t main_iters;

/* The workers differ only in their seed, which keeps them from being folded into one. */
static __attribute__((noinline, noclone)) uint64_t worker_fn_1(uint64_t n)
{
	uint64_t x = 1;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t worker_fn_2(uint64_t n)
{
	uint64_t x = 2;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t worker_fn_3(uint64_t n)
{
	uint64_t x = 3;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t main_spin(uint64_t n)
{
	uint64_t x = 4;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static void *worker_thread(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[16];
	uint64_t x;

	/* Name ourselves first so every sample carries the final name. */
	snprintf(name, sizeof(name), "worker-%d", id);
	pthread_setname_np(pthread_self(), name);

	switch (id) {
	case 1:
		x = worker_fn_1(worker_iters);
		break;
	case 2:
		x = worker_fn_2(worker_iters);
		break;
	default:
		x = worker_fn_3(worker_iters);
		break;
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tids[NR_WORKERS];
	double scale = 1.0;
	char name[16];
	int i, err;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);

	worker_iters = (uint64_t)(ITERS_PER_SEC * WORKER_SECS * scale / CHUNKS);
	main_iters = (uint64_t)(ITERS_PER_SEC * MAIN_SECS * scale / CHUNKS);

	if (prctl(PR_SET_NAME, "main-thr", 0, 0, 0)) {
		perror("prctl(PR_SET_NAME)");
		return 1;
	}

	for (i = 0; i < NR_WORKERS; i++) {
		err = pthread_create(&tids[i], NULL, worker_thread,
				     (void *)(intptr_t)(i + 1));
		if (err) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			return 1;
		}
		/* Also name it from here; whichever runs first wins the race harmlessly. */
		snprintf(name, sizeof(name), "worker-%d", i + 1);
		pthread_setname_np(tids[i], name);
	}

	sink = main_spin(main_iters);

	for (i = 0; i < NR_WORKERS; i++) {
		err = pthread_join(tids[i], NULL);
		if (err) {
			fprintf(stderr, "pthread_join: %s\n", strerror(err));
			return 1;
		}
	}
	return 0;
}
