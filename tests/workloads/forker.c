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

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU for child_work() and parent_work() at SCALE 1. */
#define CHILD_SECS	0.3
#define PARENT_SECS	0.3
/* Work is split into chunks so that a partial profile keeps the split. */
#define CHUNKS		50

static volatile uint64_t sink;

/*
 * n steps of a 64-bit LCG plus a xorshift; the empty asm makes the value
 * opaque so the compiler can neither vectorise nor shortcut the loop.
 * The volatile stack slot is touched on entry so that, in frame-pointer
 * builds, the calling work function sets up its frame before the loop
 * instead of shrink-wrapping it away (which would hide its caller).
 */
/*
 * A macro rather than an inline function on purpose: inlined functions get
 * their own frames in the profile, and these workloads want each named
 * function to hold its work itself.
 */
#define crunch(x0, n0) ({						\
	volatile uint64_t anchor_ = (x0);				\
	uint64_t x_ = anchor_, n_ = (n0);				\
									\
	for (uint64_t i_ = 0; i_ < n_; i_++) {				\
		x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL; \
		x_ ^= x_ >> 29;						\
		asm volatile("" : "+r" (x_));				\
	}								\
	x_;								\
})

static double parse_scale(const char *arg)
{
	char *end;
	double scale;

	errno = 0;
	scale = strtod(arg, &end);
	if (errno || end == arg || *end != '\0' || !isfinite(scale) ||
	    scale <= 0.0 || scale > 1e6) {
		fprintf(stderr, "invalid SCALE '%s' (want a positive number)\n", arg);
		exit(2);
	}
	return scale;
}

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
