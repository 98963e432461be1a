// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: a parent that forks and execs short children one
 * after another, so that fork and exec events keep coming while both sides
 * compute. "spawner [ROUNDS [SCALE]]" runs ROUNDS rounds (default 200) of:
 * parent_between (2 ms), then a child that execs this program again as
 * "spawner child SCALE", which runs child_after_exec (2 ms) and exits; the
 * parent waits for it. Exits 0 only if every child exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define PART_SECS	0.002

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void parent_between(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void child_after_exec(uint64_t n)
{
	sink = crunch(sink + 2, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long rounds = 200;
	double scale = 1.0;
	uint64_t n;
	char arg[32];

	if (argc == 3 && !strcmp(argv[1], "child")) {
		child_after_exec((uint64_t)(ITERS_PER_SEC * PART_SECS * parse_scale(argv[2])));
		return 0;
	}
	if (argc > 3) {
		fprintf(stderr, "usage: %s [ROUNDS [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		rounds = parse_count("ROUNDS", argv[1], 1000000);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	n = (uint64_t)(ITERS_PER_SEC * PART_SECS * scale);
	snprintf(arg, sizeof(arg), "%g", scale);
	prctl(PR_SET_NAME, "spawn-parent", 0, 0, 0);
	for (long i = 0; i < rounds; i++) {
		pid_t child;
		int status;

		parent_between(n);
		fflush(NULL);
		child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		if (child == 0) {
			execl("/proc/self/exe", argv[0], "child", arg, (char *)NULL);
			fprintf(stderr, "spawner: exec: %s\n", strerror(errno));
			_exit(127);
		}
		while (waitpid(child, &status, 0) < 0) {
			if (errno != EINTR) {
				perror("waitpid");
				return 1;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
