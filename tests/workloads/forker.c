// SPDX-License-Identifier: MIT
// Profiler test workload: a named parent that forks a renamed child and an exec'd child.

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU for child_work() and parent_work() at SCALE 1. */
#define CHILD_SECS	0.3
#define PARENT_SECS	0.3
/* Work is split into chunks so that a partial profile keeps the split. */
#define CHUNKS		50

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) uint64_t child_work(uint64_t n)
{
	uint64_t x = 1;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t parent_work(uint64_t n)
{
	uint64_t x = 2;
	int i;

	for (i = 0; i < CHUNKS; i++) {
		x = crunch(x, n);
		asm volatile("" ::: "memory");
	}
	return x;
}

/* Wait for @pid; return 0 if it exited with status 0, -1 otherwise. */
static int wait_child(pid_t pid, const char *what)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			return -1;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		fprintf(stderr, "forker: %s exited with status %d\n",
			what, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		fprintf(stderr, "forker: %s killed by signal %d\n",
			what, WTERMSIG(status));
	return -1;
}

int main(int argc, char **argv)
{
	pid_t child1, child2 = -1;
	double scale = 1.0;
	int ret = 0;

	if (argc > 1)
		scale = parse_scale(argv[1]);

	if (prctl(PR_SET_NAME, "forker-parent", 0, 0, 0)) {
		perror("prctl(PR_SET_NAME)");
		return 1;
	}
	fflush(NULL);

	child1 = fork();
	if (child1 < 0) {
		perror("fork");
		return 1;
	}
	if (child1 == 0) {
		prctl(PR_SET_NAME, "forked-child", 0, 0, 0);
		sink = child_work((uint64_t)(ITERS_PER_SEC * CHILD_SECS * scale / CHUNKS));
		_exit(0);
	}

	if (argc > 2) {
		child2 = fork();
		if (child2 < 0) {
			perror("fork");
			ret = 1;
		} else if (child2 == 0) {
			execvp(argv[2], &argv[2]);
			fprintf(stderr, "forker: exec %s: %s\n", argv[2], strerror(errno));
			_exit(127);
		}
	}

	sink = parent_work((uint64_t)(ITERS_PER_SEC * PARENT_SECS * scale / CHUNKS));

	if (wait_child(child1, "forked child"))
		ret = 1;
	if (child2 > 0 && wait_child(child2, argv[2]))
		ret = 1;
	return ret;
}
