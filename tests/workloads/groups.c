// SPDX-License-Identifier: MIT
/*
 * Profiler test workload for report --group-by: a parent named "main" and three
 * children it forks, each named "worker", all four at once, each spending 60 % of its
 * work in alpha_work (ALPHALIB, libalpha.so) and 40 % in beta_work (BETALIB,
 * libbeta.so), in rounds of both, counted in iterations. Exits 0 when every child did.
 *   groups ALPHALIB BETALIB [SCALE]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU each of the four processes uses at SCALE 1. */
#define PROC_SECS	0.25
#define WORKERS		3
/* Work is split into rounds so that a partial profile keeps the split. */
#define ROUNDS		50
#define ALPHA_PCT	60

typedef uint64_t (*work_fn)(uint64_t x, uint64_t n);

static volatile uint64_t sink;

static work_fn load(const char *path, const char *sym)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	work_fn fn = h ? (work_fn)(uintptr_t)dlsym(h, sym) : NULL;

	if (!fn) {
		fprintf(stderr, "groups: %s\n", dlerror());
		exit(1);
	}
	return fn;
}

/* This process's share: ROUNDS rounds of alpha's 60 % and beta's 40 % of N iterations. */
static __attribute__((noinline, noclone)) void run(work_fn alpha, work_fn beta, uint64_t n)
{
	uint64_t x = (uint64_t)getpid();

	for (int r = 0; r < ROUNDS; r++) {
		x = alpha(x, n / ROUNDS * ALPHA_PCT / 100);
		x = beta(x, n / ROUNDS * (100 - ALPHA_PCT) / 100);
	}
	sink = x;
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	work_fn alpha, beta;
	pid_t kids[WORKERS];
	uint64_t n;
	int ret = 0;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s ALPHALIB BETALIB [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 3)
		scale = parse_scale(argv[3]);
	n = (uint64_t)(ITERS_PER_SEC * PROC_SECS * scale);
	prctl(PR_SET_NAME, "main", 0, 0, 0);
	alpha = load(argv[1], "alpha_work");
	beta = load(argv[2], "beta_work");
	for (int i = 0; i < WORKERS; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("groups: fork");
			return 1;
		}
		if (kids[i] == 0) {
			prctl(PR_SET_NAME, "worker", 0, 0, 0);
			run(alpha, beta, n);
			_exit(0);
		}
	}
	run(alpha, beta, n);
	for (int i = 0; i < WORKERS; i++) {
		int status;

		while (waitpid(kids[i], &status, 0) < 0) {
			if (errno != EINTR) {
				perror("groups: waitpid");
				return 1;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = 1;
	}
	return ret;
}
