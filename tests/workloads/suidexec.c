// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: work before and after running a program that may be
 * setuid. "suidexec PROGRAM" runs before_exec_work, forks a child that execs
 * "PROGRAM inner", waits for it, runs after_exec_work and exits with the child's
 * status. "suidexec inner" (what a setuid copy of it runs) prints
 * "inner: ruid R euid E dumpable D", burns in inside_setuid_work and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
#define PART_SECS	0.2

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void before_exec_work(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void inside_setuid_work(uint64_t n)
{
	sink = crunch(sink + 2, n);
	asm volatile("" ::: "memory");
}

static __attribute__((noinline, noclone)) void after_exec_work(uint64_t n)
{
	sink = crunch(sink + 3, n);
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	const uint64_t n = (uint64_t)(ITERS_PER_SEC * PART_SECS);
	pid_t child;
	int status;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PROGRAM | inner\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "inner")) {
		printf("inner: ruid %d euid %d dumpable %d\n", (int)getuid(), (int)geteuid(),
		       prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
		fflush(stdout);
		inside_setuid_work(n);
		return 0;
	}
	before_exec_work(n);
	fflush(NULL);
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		execl(argv[1], argv[1], "inner", (char *)NULL);
		fprintf(stderr, "suidexec: exec %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			return 1;
		}
	}
	after_exec_work(n);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
