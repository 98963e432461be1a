// SPDX-License-Identifier: MIT
// Profiler test workload: deep self-recursion and mutual recursion, half the CPU each.

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define RECURSE_DEPTH	50
#define PINGPONG_DEPTH	20
/* Each round descends both paths once; any prefix keeps the 50/50 split. */
#define ROUNDS		200

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

static __attribute__((noinline, noclone)) uint64_t bottom_work(uint64_t n)
{
	return crunch(sink + 1, n);
}

/*
 * Recurse down to RECURSE_DEPTH, then do all the work in bottom_work().
 * The asm after each call keeps the calls from becoming tail calls or loops,
 * so every level really is a frame on the stack.
 */
static __attribute__((noinline, noclone)) uint64_t recurse(int depth, uint64_t n)
{
	uint64_t r;

	if (depth >= RECURSE_DEPTH)
		r = bottom_work(n);
	else
		r = recurse(depth + 1, n);
	asm volatile("" : "+r" (r) :: "memory");
	return r + depth;
}

static __attribute__((noinline, noclone)) uint64_t pong(int depth, uint64_t n);

/*
 * ping(0) -> pong(1) -> ping(2) -> ... -> ping(PINGPONG_DEPTH); the bottom
 * call (always a ping, as the depth is even) does the work itself, so all
 * of this path's self time lands in ping.
 */
static __attribute__((noinline, noclone)) uint64_t ping(int depth, uint64_t n)
{
	uint64_t r;

	if (depth >= PINGPONG_DEPTH)
		r = crunch(sink + 2, n);
	else
		r = pong(depth + 1, n);
	asm volatile("" : "+r" (r) :: "memory");
	return r + depth;
}

static __attribute__((noinline, noclone)) uint64_t pong(int depth, uint64_t n)
{
	uint64_t r;

	if (depth >= PINGPONG_DEPTH)
		r = crunch(sink + 3, n);
	else
		r = ping(depth + 1, n);
	asm volatile("" : "+r" (r) :: "memory");
	return r + depth;
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	uint64_t n;
	int i;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);

	/* Half of the work per path, spread over ROUNDS rounds. */
	n = (uint64_t)(ITERS_PER_SEC * scale / (2.0 * ROUNDS));

	for (i = 0; i < ROUNDS; i++) {
		sink = recurse(0, n);
		sink = ping(0, n);
	}
	return 0;
}
