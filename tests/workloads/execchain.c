// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: one process that execs itself again and again.
 * "execchain [LINKS [SCALE]]" runs before_chain_work (0.3 s), then execs
 * itself LINKS times (default 300) as "execchain link N SCALE"; each link
 * runs chain_link_work (1 ms) and execs the next, the last exits 0. Both
 * functions get the same CPU time at the default LINKS; how much of it is
 * in the kernel's exec depends on the machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define BEFORE_SECS	0.3
#define LINK_SECS	0.001

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void before_chain_work(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void chain_link_work(uint64_t n)
{
	sink = crunch(sink + 2, n);
	asm volatile("" ::: "memory");
}

/* Execs the next link, the first of the LEFT still to run; returns only on failure. */
static int next_link(const char *argv0, long left, const char *scale)
{
	char n[32];

	snprintf(n, sizeof(n), "%ld", left);
	execl("/proc/self/exe", argv0, "link", n, scale, (char *)NULL);
	fprintf(stderr, "execchain: exec: %s\n", strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	long links = 300;
	double scale = 1.0;
	char arg[32];

	if (argc == 4 && !strcmp(argv[1], "link")) {
		long left = parse_count("N", argv[2], 1000000);

		chain_link_work((uint64_t)(ITERS_PER_SEC * LINK_SECS * parse_scale(argv[3])));
		return left > 1 ? next_link(argv[0], left - 1, argv[3]) : 0;
	}
	if (argc > 3) {
		fprintf(stderr, "usage: %s [LINKS [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		links = parse_count("LINKS", argv[1], 1000000);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	snprintf(arg, sizeof(arg), "%.17g", scale);
	prctl(PR_SET_NAME, "execchain", 0, 0, 0);
	before_chain_work((uint64_t)(ITERS_PER_SEC * BEFORE_SECS * scale));
	return next_link(argv[0], links, arg);
}
