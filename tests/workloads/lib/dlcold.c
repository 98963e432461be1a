// SPDX-License-Identifier: MIT
// The library dlloop loads into the hole dlhot left: the same addresses, other code.

#include <stdint.h>

#include "../work.h"

uint64_t cold_in_lib(uint64_t x, uint64_t n);

__attribute__((noinline)) uint64_t cold_in_lib(uint64_t x, uint64_t n)
{
	x = crunch(x + 7, n);
	asm volatile("" ::: "memory");
	return x;
}
