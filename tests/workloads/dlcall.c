// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: loads the library at PATH and calls its
 * pushy_run() for about SECONDS of CPU (default 1).
 *   dlcall PATH [SECONDS]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0

typedef uint64_t (*run_fn)(uint64_t x, uint64_t n);

int main(int argc, char **argv)
{
	double secs = argc > 2 ? parse_scale(argv[2]) : 1.0;
	void *h;
	run_fn run;

	if (argc < 2) {
		fprintf(stderr, "usage: dlcall PATH [SECONDS]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW);
	run = h ? (run_fn)dlsym(h, "pushy_run") : NULL;
	if (!run) {
		fprintf(stderr, "dlcall: %s\n", dlerror());
		return 1;
	}
	printf("dlcall: %llu\n", (unsigned long long)run(1, (uint64_t)(secs * ITERS_PER_SEC)));
	return 0;
}
