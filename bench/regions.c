// SPDX-License-Identifier: MIT
/*
 * What a named region costs in C, and whether a million of them come back:
 * bench/regions.sh (make bench) runs it. <proftool.h> decides at its first
 * call whether the process records, so every case runs in a child forked
 * before any call, with PROFTOOL_REGIONS set or not.
 *
 *   regions time DIR PAIRS RUNS [CASE...]
 *       prints "CASE wall=NS cpu=NS min=NS" per case: ns per begin/end
 *       pair (or per pair of clock reads), the median over RUNS runs of
 *       PAIRS each less an empty loop's; wall from CLOCK_MONOTONIC, cpu
 *       from the thread's CPU clock (which a loaded machine does not
 *       inflate), min the fastest run's cpu. The cases: clock (two
 *       clock_gettime), unrecorded and recorded (begin/end), their -scope
 *       forms (PROFTOOL_REGION), recorded-warm (into pages given memory
 *       beforehand), cold (a fresh process: its first call, in us, and its
 *       next 1000 pairs); all of them without CASE. Recorded cases write
 *       into DIR/CASE.
 *   regions count DIR PAIRS
 *       records PAIRS begin/end pairs of "tiny" into DIR at the default
 *       sizes, then reads DIR back (regions/read.c) as "read" does
 *   regions read DIR
 *       prints "pairs=N begins=N ends=N other=N dropped=N torn=N threads=N
 *       files=N bad=N" for the *.rgn files of DIR; a pair is an end right
 *       after a begin of the same name on the same thread
 *
 * PROFTOOL_RT must name the runtime (build/libproftool-rt.so).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/proftool.h"
#include "regions/format.h"
#include "regions/regions.h"

#define MAX_RUNS 1000

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define BARRIER() __asm__ volatile("" ::: "memory")

static void loop_empty(long n)
{
	for (long i = 0; i < n; i++)
		BARRIER();
}

static void loop_begin_end(long n)
{
	for (long i = 0; i < n; i++) {
		proftool_region_begin("tiny");
		BARRIER();
		proftool_region_end("tiny");
	}
}

static void loop_scope(long n)
{
	for (long i = 0; i < n; i++) {
		PROFTOOL_REGION("tiny") {
			BARRIER();
		}
	}
}

static void loop_clock(long n)
{
	struct timespec a, b;

	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		BARRIER();
		clock_gettime(CLOCK_MONOTONIC, &b);
		__asm__ volatile("" : : "r"(&a), "r"(&b) : "memory");
	}
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* RUNS runs of N iterations of F less as many of an empty loop: prints the case's line. */
static void timed(const char *name, void (*f)(long), long n, int runs)
{
	double wall[MAX_RUNS], cpu[MAX_RUNS];

	for (int r = 0; r < runs; r++) {
		double w0, c0, w1, c1, we, ce;

		w0 = now(CLOCK_MONOTONIC);
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		loop_empty(n);
		we = now(CLOCK_MONOTONIC) - w0;
		ce = now(CLOCK_THREAD_CPUTIME_ID) - c0;
		w0 = now(CLOCK_MONOTONIC);
		c0 = now(CLOCK_THREAD_CPUTIME_ID);
		f(n);
		w1 = now(CLOCK_MONOTONIC);
		c1 = now(CLOCK_THREAD_CPUTIME_ID);
		wall[r] = (w1 - w0 - we) / (double)n;
		cpu[r] = (c1 - c0 - ce) / (double)n;
	}
	printf("%s wall=%.2f cpu=%.2f", name, median(wall, runs), median(cpu, runs));
	printf(" min=%.2f\n", cpu[0]);     /* sorted by median() */
}

/*
 * A fresh process's first calls: the very first (which loads the runtime
 * and makes the file), in us, and the 1000 pairs after it, in ns per pair,
 * medians over RUNS processes.
 */
static void cold(const char *dir, int runs)
{
	double first[MAX_RUNS], next[MAX_RUNS];

	for (int r = 0; r < runs; r++) {
		int fds[2];
		pid_t pid;
		double v[2] = { 0, 0 };

		if (pipe(fds) < 0 || (pid = fork()) < 0) {
			perror("regions: cold");
			exit(1);
		}
		if (!pid) {
			double w0 = now(CLOCK_MONOTONIC), w1;

			close(fds[0]);
			setenv("PROFTOOL_REGIONS", dir, 1);
			proftool_region_begin("first");
			w1 = now(CLOCK_MONOTONIC);
			v[0] = (w1 - w0) / 1e3;
			loop_begin_end(1000);
			v[1] = (now(CLOCK_MONOTONIC) - w1) / 1000;
			if (write(fds[1], v, sizeof(v)) != (ssize_t)sizeof(v))
				_exit(1);
			_exit(0);
		}
		close(fds[1]);
		if (read(fds[0], v, sizeof(v)) != (ssize_t)sizeof(v)) {
			fprintf(stderr, "regions: cold: the child said nothing\n");
			exit(1);
		}
		close(fds[0]);
		waitpid(pid, NULL, 0);
		first[r] = v[0];
		next[r] = v[1];
	}
	printf("first-call wall=%.2f\n", median(first, runs));
	printf("cold-1000 wall=%.2f\n", median(next, runs));
}

/*
 * For "recorded-warm": gives memory to the part of the process's file in
 * DIR that RUNS x PAIRS pairs will take, through a mapping of its own,
 * before they are timed. The runtime's stores then find the pages there:
 * what is left is the clock, the runtime's work and mapping pages that
 * exist (minor faults), without the zeroing and allocation of fresh ones.
 */
static void warm_pages(const char *dir, long pairs, int runs)
{
	char path[4096];
	size_t len = RGN_HEADER_SIZE + RGN_NAMES_SIZE + (size_t)runs * (size_t)pairs * 32 + (4u << 20);
	uint8_t *m;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%d-c-0.rgn", dir, (int)getpid()) >= (int)sizeof(path)) {
		fprintf(stderr, "regions: %s: the name is too long\n", dir);
		exit(1);
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	m = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || madvise(m, len, MADV_POPULATE_WRITE) < 0) {
		fprintf(stderr, "regions: cannot make %s ready: %s\n", path, strerror(errno));
		exit(1);
	}
	munmap(m, len);
	close(fd);
}

/* Runs case NAME in a child, recording into DIR/NAME when it is one that records, and waits for it. */
static int in_child(const char *dir, const char *name, long pairs, int runs)
{
	char sub[4096];
	int record = !strncmp(name, "recorded", 8) || !strcmp(name, "cold");
	pid_t pid;
	int status;

	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	if (record && mkdir(sub, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "regions: mkdir %s: %s\n", sub, strerror(errno));
		return -1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (record)
			setenv("PROFTOOL_REGIONS", sub, 1);
		else
			unsetenv("PROFTOOL_REGIONS");
		if (!strcmp(name, "clock")) {
			timed(name, loop_clock, pairs, runs);
		} else if (!strcmp(name, "cold")) {
			cold(sub, runs);
		} else {
			/* the first call loads the runtime and makes the file: not timed */
			proftool_region_begin("warm");
			proftool_region_end("warm");
			if (!strcmp(name, "recorded-warm"))
				warm_pages(sub, pairs, runs);
			timed(name, strstr(name, "scope") ? loop_scope : loop_begin_end, pairs, runs);
		}
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return 0;
}

static int read_dir(const char *dir)
{
	struct rgn_set s;
	uint64_t begins = 0, ends = 0, other = 0, pairs = 0, dropped;
	int ret;

	rgn_set_init(&s);
	ret = rgn_read_dir(&s, dir);
	if (ret < 0) {
		fprintf(stderr, "regions: cannot read '%s': %s\n", dir, strerror(-ret));
		return 1;
	}
	dropped = s.dropped;
	for (size_t i = 0; i < s.nr_threads; i++) {
		const struct rgn_thread *t = &s.threads[i];

		dropped += t->dropped;
		for (size_t j = 0; j < t->nr; j++) {
			const struct rgn_event *e = &t->ev[j];

			if (e->kind == RGN_BEGIN)
				begins++;
			else if (e->kind == RGN_END)
				ends++;
			else
				other++;
			/* an end right after the begin of the same name: one tiny region */
			if (e->kind == RGN_END && j && t->ev[j - 1].kind == RGN_BEGIN && t->ev[j - 1].name == e->name)
				pairs++;
		}
	}
	printf("pairs=%llu begins=%llu ends=%llu other=%llu dropped=%llu torn=%llu threads=%zu files=%zu bad=%zu\n",
	       (unsigned long long)pairs, (unsigned long long)begins, (unsigned long long)ends,
	       (unsigned long long)other, (unsigned long long)dropped, (unsigned long long)s.torn,
	       s.nr_threads, s.files, s.bad_files);
	rgn_set_release(&s);
	return 0;
}

static int count(const char *dir, long pairs)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		setenv("PROFTOOL_REGIONS", dir, 1);
		unsetenv("PROFTOOL_REGIONS_MB");
		for (long i = 0; i < pairs; i++) {
			proftool_region_begin("tiny");
			proftool_region_end("tiny");
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return read_dir(dir);
}

static long number(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "regions: '%s' is not a number from %ld to %ld\n", s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const char *const all[] = {
		"clock", "unrecorded", "unrecorded-scope", "recorded", "recorded-scope",
		"recorded-warm", "cold",
	};

	if (!getenv("PROFTOOL_RT")) {
		fprintf(stderr, "regions: PROFTOOL_RT must name the runtime (build/libproftool-rt.so)\n");
		return 2;
	}
	if (argc >= 5 && !strcmp(argv[1], "time")) {
		long pairs = number(argv[3], 64, 100000000);
		int runs = (int)number(argv[4], 1, MAX_RUNS);

		if (argc == 5) {
			for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
				if (in_child(argv[2], all[i], pairs, runs) < 0)
					return 1;
			return 0;
		}
		for (int i = 5; i < argc; i++)
			if (in_child(argv[2], argv[i], pairs, runs) < 0)
				return 1;
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "count"))
		return count(argv[2], number(argv[3], 1, 1000000000));
	if (argc == 3 && !strcmp(argv[1], "read"))
		return read_dir(argv[2]);
	fprintf(stderr, "usage: regions time DIR PAIRS RUNS [CASE...] | count DIR PAIRS | read DIR\n");
	return 2;
}
