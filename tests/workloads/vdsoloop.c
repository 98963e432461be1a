// SPDX-License-Identifier: MIT
/* Calls clock_gettime in a tight loop: nearly every sample lands in the vDSO. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void timing_loop(long n)
{
	struct timespec ts;

	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? strtod(argv[1], NULL) : 1.0;

	if (!(scale > 0) || scale > 1e6) {
		fprintf(stderr, "usage: vdsoloop [SCALE]\n");
		return 2;
	}
	timing_loop((long)(2e7 * scale));
	return 0;
}
