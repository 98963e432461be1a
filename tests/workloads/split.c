// SPDX-License-Identifier: MIT
// Profiler test workload: three leaf functions sharing the CPU 50/30/20.

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Number of a/b/c rounds; any prefix of the run keeps the 5:3:2 ratio. */
#define ROUNDS		100

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
