// SPDX-License-Identifier: MIT
// The library dlloop loads and unloads: hot while it is loaded.

#include <stdint.h>

#include "../work.h"

uint64_t hot_in_lib(uint64_t x, uint64_t n);

__attribute__((noinline)) uint64_t hot_in_lib(uint64_t x, uint64_t n)
{
	x = crunch(x, n);
	asm volatile("" ::: "memory");
	return x;
}
