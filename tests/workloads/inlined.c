// SPDX-License-Identifier: MIT
/* A hot always_inline function inside a caller that does no work of its own: inline frames. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t hot_inline(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		asm volatile("" : "+r" (x));
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t outer_fn(uint64_t n)
{
	return hot_inline(n, n);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? strtod(argv[1], NULL) : 1.0;

	if (!(scale > 0) || scale > 1e6) {
		fprintf(stderr, "usage: inlined [SCALE]\n");
		return 2;
	}
	for (int i = 0; i < 100; i++)
		sink += outer_fn((uint64_t)(6e6 * scale));
	return 0;
}
