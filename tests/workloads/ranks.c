// SPDX-License-Identifier: MIT
/*
 * Profiler test workload for ranks: a launcher, as torchrun or mpirun are, that
 * starts NRANKS workers at once, each by fork and exec of this program with
 * RANK, LOCAL_RANK and WORLD_SIZE (or the variables named by RANKS_VARS:
 * "OMPI_COMM_WORLD_RANK,OMPI_COMM_WORLD_LOCAL_RANK,OMPI_COMM_WORLD_SIZE") in its
 * environment, then waits for them. Each worker runs STEPS steps of rank_step,
 * every step a region "step"; rank STRAGGLER does twice the work of the others
 * in each step, counted in iterations. Exits 0 when every worker did.
 *   ranks NRANKS STRAGGLER [SCALE]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../include/proftool.h"
#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU a worker that is not the straggler uses at SCALE 1. */
#define RANK_SECS	0.3
#define STEPS		20
#define MAX_RANKS	64

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) uint64_t rank_step(uint64_t x, uint64_t n)
{
	return crunch(x, n);
}

static int worker(int rank, int straggler, double scale)
{
	uint64_t n = (uint64_t)(ITERS_PER_SEC * RANK_SECS * scale / STEPS);
	uint64_t x = (uint64_t)rank + 1;

	if (rank == straggler)
		n *= 2;
	for (int s = 0; s < STEPS; s++) {
		proftool_region_begin("step");
		x = rank_step(x, n);
		proftool_region_end("step");
	}
	sink = x;
	return 0;
}

/* Sets the three variables of VARS ("RANK,LOCAL_RANK,WORLD_SIZE") to RANK, RANK and NRANKS. */
static void set_vars(const char *vars, int rank, int nranks)
{
	char *copy = strdup(vars), *name[3], *save = NULL, num[16];
	int n = 0;

	if (!copy) {
		perror("ranks: strdup");
		_exit(1);
	}
	for (char *t = strtok_r(copy, ",", &save); t && n < 3; t = strtok_r(NULL, ",", &save))
		name[n++] = t;
	if (n != 3) {
		fprintf(stderr, "ranks: RANKS_VARS needs three names: rank,local rank,world size\n");
		_exit(2);
	}
	snprintf(num, sizeof(num), "%d", rank);
	setenv(name[0], num, 1);
	setenv(name[1], num, 1);
	snprintf(num, sizeof(num), "%d", nranks);
	setenv(name[2], num, 1);
	free(copy);
}

/* ARG as a rank 0..NRANKS-1; exits 2 otherwise. */
static int parse_rank(const char *arg, int nranks)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v >= nranks) {
		fprintf(stderr, "invalid STRAGGLER '%s' (want 0..%d)\n", arg, nranks - 1);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	const char *vars = getenv("RANKS_VARS");
	pid_t kids[MAX_RANKS];
	char self[PATH_MAX];
	int nranks, straggler, ret = 0;
	double scale = 1.0;

	if (argc == 5 && !strcmp(argv[1], "--worker"))
		return worker((int)parse_count("rank", argv[2], MAX_RANKS) - 1,
			      (int)parse_count("straggler", argv[3], MAX_RANKS) - 1, parse_scale(argv[4]));
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s NRANKS STRAGGLER [SCALE]\n", argv[0]);
		return 2;
	}
	/* the program by its name, so that the workers' comm is "ranks" (not "exe") */
	if (!realpath("/proc/self/exe", self)) {
		perror("ranks: /proc/self/exe");
		return 1;
	}
	nranks = (int)parse_count("NRANKS", argv[1], MAX_RANKS);
	straggler = parse_rank(argv[2], nranks);
	if (argc > 3)
		scale = parse_scale(argv[3]);
	for (int i = 0; i < nranks; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("ranks: fork");
			return 1;
		}
		if (kids[i] == 0) {
			char r[16], s[16], sc[32];

			set_vars(vars && *vars ? vars : "RANK,LOCAL_RANK,WORLD_SIZE", i, nranks);
			/* ranks and the straggler from 1 on the worker's command line, for parse_count */
			snprintf(r, sizeof(r), "%d", i + 1);
			snprintf(s, sizeof(s), "%d", straggler + 1);
			snprintf(sc, sizeof(sc), "%g", scale);
			execl(self, argv[0], "--worker", r, s, sc, (char *)NULL);
			perror("ranks: exec");
			_exit(127);
		}
	}
	for (int i = 0; i < nranks; i++) {
		int status;

		while (waitpid(kids[i], &status, 0) < 0) {
			if (errno != EINTR) {
				perror("ranks: waitpid");
				return 1;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = 1;
	}
	return ret;
}
