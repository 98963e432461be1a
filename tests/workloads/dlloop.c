// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: dlopen, call, dlclose, in a loop. Each round loads HOTLIB
 * and calls its hot_in_lib, unloads it, holds a page where it was (not executable,
 * mapped until exit), loads it again (so at a new address, with nothing over the
 * old one) and calls it again, unloads it, then loads COLDLIB, which the loader
 * puts where HOTLIB was, and calls its cold_in_lib as long as both hot calls took.
 * Prints "dlloop: R rounds, hot library at A addresses, cold library where hot was N times".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU in each library per round at SCALE 1 (hot: two halves). */
#define CALL_SECS	0.01
#define HOLD_BYTES	4096	/* one page at the old base is enough to keep it off */
#define MAX_ROUNDS	10000

typedef uint64_t (*lib_fn)(uint64_t x, uint64_t n);

static volatile uint64_t sink;

/* Loads PATH, calls SYM for N iterations through call_lib, unloads it; returns its load address. */
static __attribute__((noinline, noclone)) uintptr_t call_lib(const char *path, const char *sym, uint64_t n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	struct link_map *lm;
	uintptr_t base;
	lib_fn fn;

	if (!h) {
		fprintf(stderr, "dlloop: %s\n", dlerror());
		exit(1);
	}
	fn = (lib_fn)(uintptr_t)dlsym(h, sym);
	if (!fn || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		fprintf(stderr, "dlloop: %s\n", dlerror());
		exit(1);
	}
	base = lm->l_addr;
	sink = fn(sink, n);
	asm volatile("" ::: "memory");
	if (dlclose(h)) {
		fprintf(stderr, "dlloop: %s\n", dlerror());
		exit(1);
	}
	return base;
}

int main(int argc, char **argv)
{
	static uintptr_t seen[MAX_ROUNDS];
	long rounds = 20;
	double scale = 1.0;
	uint64_t n;
	int nr_seen = 0, reused = 0;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s HOTLIB COLDLIB [ROUNDS [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 3)
		rounds = parse_count("ROUNDS", argv[3], MAX_ROUNDS);
	if (argc > 4)
		scale = parse_scale(argv[4]);
	n = (uint64_t)(ITERS_PER_SEC * CALL_SECS * scale);

	for (long r = 0; r < rounds && nr_seen + 2 <= MAX_ROUNDS; r++) {
		uintptr_t hot[2], cold;

		for (int k = 0; k < 2; k++) {
			int known = 0;

			hot[k] = call_lib(argv[1], "hot_in_lib", n / 2);
			for (int i = 0; i < nr_seen; i++)
				known |= seen[i] == hot[k];
			if (!known)
				seen[nr_seen++] = hot[k];
			/* keep it off this place from now on */
			if (k == 0)
				mmap((void *)hot[k], HOLD_BYTES, PROT_NONE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		}
		cold = call_lib(argv[2], "cold_in_lib", n);
		reused += cold == hot[1];
	}
	printf("dlloop: %ld rounds, hot library at %d addresses, cold library where hot was %d times\n",
	       rounds, nr_seen, reused);
	return 0;
}
