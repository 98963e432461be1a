// SPDX-License-Identifier: MIT
/*
 * Bench-only helper for bench/run.sh: the workloads the test suite does not
 * have, and a precise timer.
 *
 *   benchload spin NTHREADS SCALE      NTHREADS threads, each SCALE seconds of
 *                                      CPU (at ~520M crunch steps/s) split
 *                                      60/40 between spin_hot and spin_warm
 *   benchload forkexec N PAR SCALE     forks N children, at most PAR at a time;
 *                                      each execs "benchload spin 1 SCALE"
 *   benchload now                      prints CLOCK_MONOTONIC in ns
 *   benchload run OUT CMD [ARGS...]    runs CMD, writes one line to OUT:
 *                                      "wall user sys maxrss start end" (wall,
 *                                      user, sys in s; maxrss in KiB; start and
 *                                      end CLOCK_MONOTONIC ns around fork and
 *                                      wait4), exits with CMD's status
 *
 * Work is counted in loop iterations, never wall-clock time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* crunch(): the unit of CPU work the test workloads use */
#include "../tests/workloads/work.h"

#define ITERS_PER_SEC	520000000.0
#define CHUNKS		50

static volatile uint64_t sink;
static uint64_t iters_per_chunk;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double parse_num(const char *arg, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < lo || v > hi) {
		fprintf(stderr, "benchload: bad number '%s'\n", arg);
		exit(2);
	}
	return v;
}

static __attribute__((noinline, noclone)) uint64_t spin_hot(uint64_t x, uint64_t n)
{
	x = crunch(x, n);
	asm volatile("" ::: "memory");
	return x;
}

static __attribute__((noinline, noclone)) uint64_t spin_warm(uint64_t x, uint64_t n)
{
	x = crunch(x + 1, n);
	asm volatile("" ::: "memory");
	return x;
}

static void *spin_thread(void *arg)
{
	uint64_t x = (uintptr_t)arg;

	for (int i = 0; i < CHUNKS; i++) {
		x = spin_hot(x, iters_per_chunk * 6 / 10);
		x = spin_warm(x, iters_per_chunk * 4 / 10);
	}
	sink = x;
	return NULL;
}

static int do_spin(int nthreads, double scale)
{
	pthread_t tid[64];

	iters_per_chunk = (uint64_t)(ITERS_PER_SEC * scale / CHUNKS);
	for (int i = 1; i < nthreads; i++) {
		int err = pthread_create(&tid[i], NULL, spin_thread, (void *)(uintptr_t)i);

		if (err) {
			fprintf(stderr, "benchload: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	spin_thread((void *)0);
	for (int i = 1; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	return 0;
}

static int reap(int *running)
{
	int status;
	pid_t w;

	while ((w = wait(&status)) < 0 && errno == EINTR)
		;
	if (w < 0) {
		perror("benchload: wait");
		return -1;
	}
	(*running)--;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int do_forkexec(int n, int par, const char *scale)
{
	int running = 0, ret = 0;

	for (int i = 0; i < n; i++) {
		pid_t pid;

		while (running >= par)
			if (reap(&running))
				ret = 1;
		pid = fork();
		if (pid < 0) {
			perror("benchload: fork");
			return 1;
		}
		if (pid == 0) {
			execl("/proc/self/exe", "benchload", "spin", "1", scale, (char *)NULL);
			perror("benchload: exec");
			_exit(127);
		}
		running++;
	}
	while (running > 0)
		if (reap(&running))
			ret = 1;
	return ret;
}

static int do_run(const char *out, char **argv)
{
	struct rusage ru;
	uint64_t t0, t1;
	int status;
	pid_t pid;
	FILE *f;

	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("benchload: fork");
		return 125;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "benchload: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("benchload: wait4");
			return 125;
		}
	}
	t1 = now_ns();
	f = fopen(out, "w");
	if (!f) {
		perror(out);
		return 125;
	}
	/* wait4's rusage covers the child and every descendant it waited for */
	fprintf(f, "%.6f %.6f %.6f %ld %" PRIu64 " %" PRIu64 "\n", (t1 - t0) / 1e9,
		ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss, t0, t1);
	fclose(f);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%" PRIu64 "\n", now_ns());
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "run"))
		return do_run(argv[2], argv + 3);
	if (argc == 4 && !strcmp(argv[1], "spin"))
		return do_spin((int)parse_num(argv[2], 1, 64), parse_num(argv[3], 1e-6, 1e4));
	if (argc == 5 && !strcmp(argv[1], "forkexec")) {
		parse_num(argv[4], 1e-6, 1e4);
		return do_forkexec((int)parse_num(argv[2], 1, 1e6), (int)parse_num(argv[3], 1, 64), argv[4]);
	}
	fprintf(stderr, "usage: benchload spin NTHREADS SCALE | forkexec N PAR SCALE | now | run OUT CMD...\n");
	return 2;
}
