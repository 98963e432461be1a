// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: a job that changes phase. Each argument is a
 * phase, PHASE:SECONDS (burn the function f_PHASE for that long, wall
 * clock) or PHASE:FILE (burn it until FILE exists); PHASE is one of a, b,
 * c, d. Entering a phase creates the file "in_PHASE" in the working
 * directory, so that a test can follow it without guessing at times.
 *
 *   phases a:2 b:2              f_a for 2 s, then f_b for 2 s
 *   phases a:go_b b:go_c c:0.3  f_a until go_b exists, f_b until go_c, f_c 0.3 s
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether the phase is over: its time has passed, or its file exists. */
static int done(const char *until, double end)
{
	return end > 0 ? now() >= end : access(until, F_OK) == 0;
}

#define PHASE(name, seed)							\
	static __attribute__((noinline, noclone)) void name(const char *until, double end) \
	{									\
		while (!done(until, end))					\
			sink = crunch(sink + (seed), 200000);			\
		asm volatile("" ::: "memory");					\
	}

PHASE(f_a, 1)
PHASE(f_b, 2)
PHASE(f_c, 3)
PHASE(f_d, 4)

int main(int argc, char **argv)
{
	static void (*const fns[])(const char *, double) = { f_a, f_b, f_c, f_d };

	if (argc < 2) {
		fprintf(stderr, "usage: phases PHASE:SECONDS|PHASE:FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *until = arg + 2;
		char marker[8];
		char *end;
		double secs;
		int fd;

		if (arg[0] < 'a' || arg[0] > 'd' || arg[1] != ':' || !*until) {
			fprintf(stderr, "phases: bad phase '%s'\n", arg);
			return 2;
		}
		secs = strtod(until, &end);
		if (*end || end == until)
			secs = 0;       /* a file name */
		snprintf(marker, sizeof(marker), "in_%c", arg[0]);
		fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
		fns[arg[0] - 'a'](until, secs > 0 ? now() + secs : 0);
	}
	return 0;
}
