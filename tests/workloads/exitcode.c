// SPDX-License-Identifier: MIT
// Profiler test workload: burns some CPU, then ends in a chosen way (exit code, signal, or run until interrupted).

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC	520000000.0
/* Seconds of CPU burnt before acting on MODE, at SCALE 1. */
#define BURN_SECS	0.2
/* Seconds per burn() call; also the chunk size of the endless modes. */
#define CHUNK_SECS	0.05

static volatile uint64_t sink;
static volatile sig_atomic_t got_sigint;

static __attribute__((noinline, noclone)) void burn(uint64_t n)
{
	sink = crunch(sink + 1, n);
	asm volatile("" ::: "memory");
}

static void on_sigint(int sig)
{
	(void)sig;
	got_sigint++;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s MODE [SCALE]\n"
		"MODE: ok | fail | segv | abort | kill | sleep | trap-int\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const uint64_t chunk = (uint64_t)(ITERS_PER_SEC * CHUNK_SECS);
	double scale = 1.0;
	const char *mode;
	uint64_t total, done;

	if (argc < 2 || argc > 3)
		usage(argv[0]);
	mode = argv[1];
	if (strcmp(mode, "ok") && strcmp(mode, "fail") && strcmp(mode, "segv") &&
	    strcmp(mode, "abort") && strcmp(mode, "kill") &&
	    strcmp(mode, "sleep") && strcmp(mode, "trap-int"))
		usage(argv[0]);
	if (argc > 2)
		scale = parse_scale(argv[2]);

	/*
	 * "sleep" must die from SIGINT even when started in the background by
	 * a non-interactive shell, which leaves SIGINT ignored.
	 */
	if (!strcmp(mode, "sleep"))
		signal(SIGINT, SIG_DFL);

	/* Catch SIGINT before burning so an early Ctrl-C is not fatal. */
	if (!strcmp(mode, "trap-int")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigint;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGINT, &sa, NULL)) {
			perror("sigaction");
			return 1;
		}
	}

	/* Burn in chunks; the final chunk takes whatever remains. */
	total = (uint64_t)(ITERS_PER_SEC * BURN_SECS * scale);
	/* trap-int: a SIGINT during the burn ends it (it would go on for SCALE x BURN_SECS) */
	for (done = 0; done < total && !got_sigint; done += chunk)
		burn(total - done < chunk ? total - done : chunk);

	if (!strcmp(mode, "ok"))
		return 0;
	if (!strcmp(mode, "fail"))
		return 3;
	if (!strcmp(mode, "segv")) {
		volatile int *volatile p = NULL;

		signal(SIGSEGV, SIG_DFL);
		*p = 42;
		return 1;
	}
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "kill")) {
		raise(SIGKILL);
		return 1;
	}
	if (!strcmp(mode, "sleep")) {
		for (;;)
			burn(chunk);
	}

	/* trap-int: a second SIGINT for one Ctrl-C would show within 0.1 s */
	while (!got_sigint)
		burn(chunk);
	burn(chunk);
	burn(chunk);
	if (got_sigint == 1)
		printf("got SIGINT\n");
	else
		printf("got SIGINT %d times\n", (int)got_sigint);
	fflush(stdout);
	return 0;
}
