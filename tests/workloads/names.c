// SPDX-License-Identifier: MIT
/*
 * Names no report may lose or choke on (tests/names.bats):
 *
 *   names [SCALE [plain|ARG...]]
 *                   work_caf\xe9 (a symbol that is not UTF-8) 40 % of the CPU time, in a
 *                   region named "caf\xe9" (none with "plain"); Q_left and Q_right (Q: 1500
 *                   'q's, two symbols sharing a 1500-byte prefix) 20 % each, and L (6000
 *                   'L's) 20 %; the thread is named "w\xff" (prctl), the process keeps its
 *                   own name. Other arguments are for the command line only.
 *
 * SCALE 1 is about 1 s of CPU time.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>

#include "../../include/proftool.h"
#include "work.h"

#define Q10 "qqqqqqqqqq"
#define Q100 Q10 Q10 Q10 Q10 Q10 Q10 Q10 Q10 Q10 Q10
#define Q1500 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100 Q100
#define L10 "LLLLLLLLLL"
#define L100 L10 L10 L10 L10 L10 L10 L10 L10 L10 L10
#define L1000 L100 L100 L100 L100 L100 L100 L100 L100 L100 L100
#define L6000 L1000 L1000 L1000 L1000 L1000 L1000

#define UNIT 50000000ull

/* The symbols' names come from asm labels: C identifiers cannot hold such bytes. */
__attribute__((noinline)) uint64_t work_cafe(uint64_t n) __asm__("work_caf\xe9");
__attribute__((noinline)) uint64_t q_left(uint64_t n) __asm__(Q1500 "_left");
__attribute__((noinline)) uint64_t q_right(uint64_t n) __asm__(Q1500 "_right");
__attribute__((noinline)) uint64_t long_l(uint64_t n) __asm__(L6000);

uint64_t work_cafe(uint64_t n)
{
	return crunch(n, n);
}

uint64_t q_left(uint64_t n)
{
	return crunch(n, n);
}

uint64_t q_right(uint64_t n)
{
	return crunch(n, n);
}

uint64_t long_l(uint64_t n)
{
	return crunch(n, n);
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? parse_scale(argv[1]) : 1.0;
	uint64_t n = (uint64_t)(UNIT * scale), sum = 0;
	bool region = !(argc > 2 && !strcmp(argv[2], "plain"));

	prctl(PR_SET_NAME, "w\xff", 0, 0, 0);
	/* interleaved, so that every part is sampled alike whatever the machine does meanwhile */
	for (int round = 0; round < 20; round++) {
		if (region)
			proftool_region_begin("caf\xe9");
		sum += work_cafe(n / 10);
		if (region)
			proftool_region_end("caf\xe9");
		sum += q_left(n / 20);
		sum += q_right(n / 20);
		sum += long_l(n / 20);
	}
	printf("%llu\n", (unsigned long long)(sum & 1));
	return 0;
}
