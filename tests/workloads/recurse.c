// SPDX-License-Identifier: MIT
// Profiler test workload: deep self-recursion and mutual recursion, half the CPU each.

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define RECURSE_DEPTH	50
#define PINGPONG_DEPTH	20
/* Each round descends both paths once; any prefix keeps the 50/50 split. */
#define ROUNDS		200

static volatile uint64_t sink;

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
