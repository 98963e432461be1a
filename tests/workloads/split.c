// SPDX-License-Identifier: MIT
// Profiler test workload: three leaf functions sharing the CPU 50/30/20 (or as told).

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Number of a/b/c rounds; any prefix of the run keeps the ratio. */
#define ROUNDS		100

static volatile uint64_t sink;

/* The leaves differ only in their seed, which keeps them from being folded into one. */
static __attribute__((noinline, noclone)) void leaf_a(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void leaf_b(uint64_t n)
{
	sink = crunch(sink + 2, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void leaf_c(uint64_t n)
{
	sink = crunch(sink + 3, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	unsigned long pct[3] = { 50, 30, 20 };
	uint64_t unit;
	int i;

	if (argc != 1 && argc != 2 && argc != 5) {
		fprintf(stderr, "usage: %s [SCALE [A B C]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);
	for (i = 0; argc == 5 && i < 3; i++) {
		char *end;

		pct[i] = strtoul(argv[2 + i], &end, 10);
		if (*end || pct[i] > 100) {
			fprintf(stderr, "%s: shares are whole percentages\n", argv[0]);
			return 2;
		}
	}
	if (pct[0] + pct[1] + pct[2] != 100) {
		fprintf(stderr, "%s: the shares must add up to 100\n", argv[0]);
		return 2;
	}

	/* One unit is a hundredth of a round; a round is A + B + C units. */
	unit = (uint64_t)(ITERS_PER_SEC * scale / (ROUNDS * 100.0));
	if (!unit)
		unit = 1;

	for (i = 0; i < ROUNDS; i++) {
		if (pct[0])
			leaf_a(pct[0] * unit);
		if (pct[1])
			leaf_b(pct[1] * unit);
		if (pct[2])
			leaf_c(pct[2] * unit);
	}
	return 0;
}
