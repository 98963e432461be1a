// SPDX-License-Identifier: MIT
// One of the two libraries the groups workload loads (tests/workloads/groups.c): its
// work, counted in iterations, happens in alpha_work, in libalpha.so.

#include <stdint.h>

#include "../work.h"

uint64_t alpha_work(uint64_t x, uint64_t n);

__attribute__((noinline)) uint64_t alpha_work(uint64_t x, uint64_t n)
{
	x = crunch(x, n);
	asm volatile("" ::: "memory");
	return x;
}
