// SPDX-License-Identifier: MIT
/* Recursion 2000 frames deep with the work at the bottom: stacks deeper than any stack copy. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) uint64_t bottom(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		asm volatile("" : "+r" (x));
	}
	return x;
}

static __attribute__((noinline, noclone)) uint64_t dive(int depth, uint64_t n)
{
	volatile char pad[16];	/* a real frame per level, like most recursive code */
	uint64_t r;

	pad[0] = (char)depth;
	r = depth ? dive(depth - 1, n) : bottom(n);
	return r + pad[0];
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? strtod(argv[1], NULL) : 1.0;
	int depth = argc > 2 ? atoi(argv[2]) : 2000;
	uint64_t rounds = (uint64_t)(200 * scale);

	if (!(scale > 0) || scale > 1e6 || depth < 0 || depth > 100000) {
		fprintf(stderr, "usage: deep [SCALE] [DEPTH]\n");
		return 2;
	}
	for (uint64_t i = 0; i < rounds; i++)
		sink += dive(depth, 1500000);
	return 0;
}
