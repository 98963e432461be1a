// SPDX-License-Identifier: MIT
/*
 * The fork-heavy shape of an ML job without Python: a parent that maps a
 * library with tens of thousands of symbols (bench/biglib.sh, like
 * libtorch) forks W workers, each of which calls its own share of the
 * library's functions for S seconds of CPU, while the parent computes too.
 *   forkjob WORKERS SECONDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NFUNCS 30000

typedef uint64_t (*big_fn)(uint64_t);

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Calls functions FIRST..FIRST+COUNT-1 round robin until SECONDS of CPU are spent. */
static uint64_t work(big_fn *fns, int first, int count, double seconds)
{
	double end = cpu_now() + seconds;
	uint64_t x = 1;

	while (cpu_now() < end)
		for (int i = 0; i < 2000; i++)
			x = fns[first + (i * 7919) % count](x);
	return x;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 16;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 1.0;
	static big_fn fns[NFUNCS];
	char name[32];
	void *lib;
	int share;

	lib = dlopen("libbig.so", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "forkjob: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < NFUNCS; i++) {
		snprintf(name, sizeof(name), "big_fn_%d", i);
		fns[i] = (big_fn)dlsym(lib, name);
		if (!fns[i]) {
			fprintf(stderr, "forkjob: no %s\n", name);
			return 1;
		}
	}
	if (workers < 1 || workers > 1000)
		workers = 16;
	share = NFUNCS / (workers + 1);
	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(work(fns, (w + 1) * share, share, seconds) == 42);
	}
	work(fns, 0, share, seconds);
	while (wait(NULL) > 0)
		;
	return 0;
}
