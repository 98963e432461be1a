// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: code that moves. Each round runs the same number of
 * iterations three ways: direct_work where the loader put it; aliased_work
 * through a second mapping of the program's own text (the file, mapped again at
 * a new address each round, then unmapped); and a copy of a small machine-code
 * loop in anonymous memory, mapped at a new address each round, then unmapped.
 * Prints "remap: R rounds, text alias at A addresses, anonymous code at B addresses".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU for each of the three ways per round at SCALE 1. */
#define PART_SECS	0.01

typedef uint64_t (*work_fn)(uint64_t x, uint64_t n);

static volatile uint64_t sink;

/* No calls and no globals: it runs as well from any other mapping of the text. */
static __attribute__((noinline, noclone)) uint64_t aliased_work(uint64_t x, uint64_t n)
{
	x = crunch(x, n);
	asm volatile("" ::: "memory");
	return x;
}

static __attribute__((noinline, noclone)) uint64_t direct_work(uint64_t x, uint64_t n)
{
	x = crunch(x + 3, n);
	asm volatile("" ::: "memory");
	return x;
}

/*
 * uint64_t loop(uint64_t x, uint64_t n): n rounds of x = x * 0x2545f491 + 1
 *   mov %rdi,%rax; test %rsi,%rsi; jz 1f
 *   0: imul $0x2545f491,%rax,%rax; add $1,%rax; dec %rsi; jnz 0b
 *   1: ret
 */
static const unsigned char loop_code[] = {
	0x48, 0x89, 0xf8, 0x48, 0x85, 0xf6, 0x74, 0x10,
	0x48, 0x69, 0xc0, 0x91, 0xf4, 0x45, 0x25, 0x48, 0x83, 0xc0, 0x01,
	0x48, 0xff, 0xce, 0x75, 0xf0,
	0xc3,
};

/* The executable mapping of our own file that holds FN: its start, length and file offset. */
static int find_text(uintptr_t fn, uintptr_t *start, size_t *len, off_t *off)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = -1;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		unsigned long long o;
		char perms[8];

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx", &s, &e, perms, &o) == 4 &&
		    fn >= s && fn < e && perms[2] == 'x') {
			*start = s;
			*len = e - s;
			*off = (off_t)o;
			found = 0;
		}
	}
	fclose(f);
	return found;
}

static void die(const char *what)
{
	fprintf(stderr, "remap: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	uintptr_t text, fn = (uintptr_t)aliased_work;
	void *prev_alias = NULL, *prev_anon = NULL;
	uintptr_t last_alias = 0, last_anon = 0;
	int moves_alias = 0, moves_anon = 0;
	long rounds = 20;
	double scale = 1.0;
	size_t text_len, pg = (size_t)sysconf(_SC_PAGESIZE);
	off_t text_off;
	uint64_t n;
	int fd;

	if (argc > 3) {
		fprintf(stderr, "usage: %s [ROUNDS [SCALE]]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		rounds = parse_count("ROUNDS", argv[1], 100000);
	if (argc > 2)
		scale = parse_scale(argv[2]);
	n = (uint64_t)(ITERS_PER_SEC * PART_SECS * scale);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || find_text(fn, &text, &text_len, &text_off))
		die("cannot find the program's text");

	for (long r = 0; r < rounds; r++) {
		void *alias, *anon;
		work_fn f;

		sink = direct_work(sink, n);

		/* mapped before the previous one goes, so never at the same address twice running */
		alias = mmap(NULL, text_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, text_off);
		if (alias == MAP_FAILED)
			die("mmap of the text");
		if (prev_alias)
			munmap(prev_alias, text_len);
		prev_alias = alias;
		moves_alias += (uintptr_t)alias != last_alias;
		last_alias = (uintptr_t)alias;
		f = (work_fn)((uintptr_t)alias + (fn - text));
		sink = f(sink, n);

		anon = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon == MAP_FAILED)
			die("mmap of anonymous memory");
		memcpy(anon, loop_code, sizeof(loop_code));
		if (mprotect(anon, pg, PROT_READ | PROT_EXEC))
			die("mprotect");
		if (prev_anon)
			munmap(prev_anon, pg);
		prev_anon = anon;
		moves_anon += (uintptr_t)anon != last_anon;
		last_anon = (uintptr_t)anon;
		f = (work_fn)(uintptr_t)anon;
		sink = f(sink, n);
	}
	printf("remap: %ld rounds, text alias at %d addresses, anonymous code at %d addresses\n",
	       rounds, moves_alias, moves_anon);
	return 0;
}
