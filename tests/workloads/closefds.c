// SPDX-License-Identifier: MIT
// Profiler test workload: closes every file descriptor it inherited (0..1023), then works.
// Exits 1 if any of them is still open afterwards.

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define WORK_SECS	0.3

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void after_close_work(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? parse_scale(argv[1]) : 1.0;
	int still_open = 0;

	/* as daemons do: whatever the parent left open (a profiler's too) goes */
	for (int fd = 0; fd < 1024; fd++)
		close(fd);
	for (int i = 0; i < 10; i++)
		after_close_work((uint64_t)(ITERS_PER_SEC * WORK_SECS * scale / 10));
	for (int fd = 0; fd < 1024; fd++)
		still_open += fcntl(fd, F_GETFD) != -1;
	return still_open ? 1 : 0;
}
