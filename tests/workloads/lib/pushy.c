// SPDX-License-Identifier: MIT
/*
 * A library whose hot function is static (named by no dynamic symbol once
 * stripped) and saves five registers in its prologue, so that its CFI has
 * several rows: the samples of one unnamed function must still add up at
 * one address (tests/dwarf.bats strips a copy of it).
 */
#include <stdint.h>

#include "../work.h"

uint64_t pushy_run(uint64_t x, uint64_t n);

/* Short, and called in a loop: its samples spread over prologue, body and epilogue rows. */
static __attribute__((noinline)) uint64_t hot_static(uint64_t x)
{
	x = crunch(x, 16);
	/* every callee-saved register in use: pushed one by one, a CFI row each */
	asm volatile("" : "+r"(x) : : "rbx", "r12", "r13", "r14", "r15", "memory");
	return crunch(x, 16);
}

__attribute__((noinline)) uint64_t pushy_run(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i += 32)
		x = hot_static(x);
	return x + 1;
}
