// SPDX-License-Identifier: MIT
// Profiler test workload: three leaf functions sharing the CPU 50/30/20.

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Number of a/b/c rounds; any prefix of the run keeps the 5:3:2 ratio. */
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
	uint64_t unit;
	int i;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);

	/* One unit is a tenth of a round; a round is 5 + 3 + 2 units. */
	unit = (uint64_t)(ITERS_PER_SEC * scale / (ROUNDS * 10.0));
	if (!unit)
		unit = 1;

	for (i = 0; i < ROUNDS; i++) {
		leaf_a(5 * unit);
		leaf_b(3 * unit);
		leaf_c(2 * unit);
	}
	return 0;
}
