// SPDX-License-Identifier: MIT
// Profiler test workload: a burst of short-lived children, each burning a few ms in a named function.

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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
/* Seconds of CPU each child burns at SCALE 1. */
#define CHILD_SECS	0.005
#define MAX_CHILDREN	10000

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void burst_child_work(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	static pid_t pids[MAX_CHILDREN];
	long n = 200;
	double scale = 1.0;
	int failed = 0;

	if (argc > 3) {
		fprintf(stderr, "usage: %s [N [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		n = parse_count("N", argv[1], MAX_CHILDREN);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	prctl(PR_SET_NAME, "burst-parent", 0, 0, 0);
	fflush(NULL);
	/* all forked at once, then all waited for: a burst, not a sequence */
	for (long i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			failed = 1;
			n = i;
			break;
		}
		if (pids[i] == 0) {
			prctl(PR_SET_NAME, "burst-child", 0, 0, 0);
			burst_child_work((uint64_t)(ITERS_PER_SEC * CHILD_SECS * scale));
			_exit(0);
		}
	}
	for (long i = 0; i < n; i++) {
		int status;

		while (waitpid(pids[i], &status, 0) < 0) {
			if (errno != EINTR) {
				perror("waitpid");
				return 1;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}
