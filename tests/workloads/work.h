// SPDX-License-Identifier: MIT
// What the test workloads share: a unit of CPU work that cannot be optimised away, and SCALE parsing.
#ifndef PROFTOOL_WORKLOAD_H
#define PROFTOOL_WORKLOAD_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * n0 steps of a 64-bit LCG plus a xorshift, starting from x0; the empty asm
 * makes the value opaque so the compiler can neither vectorise nor shortcut
 * the loop. The volatile stack slot is touched on entry so that, in
 * frame-pointer builds, the calling work function sets up its frame before
 * the loop instead of shrink-wrapping it away (which would hide its caller).
 *
 * A macro rather than an inline function on purpose: inlined functions get
 * their own frames in the profile, and the workloads want each named
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

/* Parses the SCALE argument every workload takes; exits 2 on nonsense. */
static inline double parse_scale(const char *arg)
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

/* A whole number from 1 to MAX for the argument called WHAT; exits 2 otherwise. */
static inline long parse_count(const char *what, const char *arg, long max)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > max) {
		fprintf(stderr, "invalid %s '%s' (want 1..%ld)\n", what, arg, max);
		exit(2);
	}
	return n;
}

#endif
