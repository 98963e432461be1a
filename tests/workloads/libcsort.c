// SPDX-License-Identifier: MIT
/* Sorts with the C library's qsort, so that most of the time is spent inside libc itself: for
 * the tests of libc's separate debug info (file:line of a hot libc function). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

/* qsort rounds of N keys that take roughly one second on a modern x86-64 core */
#define ROUNDS_PER_SEC	110.0
#define N		(1 << 16)

static uint32_t keys[N];

/* as cheap as a comparison gets: the time goes to qsort's own code */
static int compare_keys(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static __attribute__((noinline, noclone)) void fill_keys(uint32_t seed)
{
	uint32_t x = seed;

	for (size_t i = 0; i < N; i++) {
		x = x * 1664525u + 1013904223u;
		keys[i] = x;
	}
}

int main(int argc, char **argv)
{
	double scale = 1.0;
	long rounds;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);
	rounds = (long)(ROUNDS_PER_SEC * scale);
	if (rounds < 1)
		rounds = 1;
	for (long r = 0; r < rounds; r++) {
		fill_keys((uint32_t)r);
		qsort(keys, N, sizeof(keys[0]), compare_keys);
		for (size_t i = 1; i < N; i++)
			if (keys[i - 1] > keys[i])
				return 1;
	}
	return 0;
}
