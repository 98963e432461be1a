// SPDX-License-Identifier: MIT
/*
 * Context switches for -e context-switches: threads ping and pong hand one
 * byte back and forth over two pipes ROUNDS times (default 20000), each
 * blocking in read() until the other writes. Both run on one CPU (the first
 * the process may use), so that every hand-over is a switch on each side,
 * whatever the machine: ping_side and pong_side switch out in turn (so a
 * sample period that is odd lands on each half the time).
 * Usage: pingpong [ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "work.h"

static int to_pong[2], to_ping[2];
static long rounds = 20000;

static __attribute__((noinline)) void pass(int in, int out)
{
	char c;

	if (read(in, &c, 1) != 1 || write(out, &c, 1) != 1)
		exit(1);
}

static __attribute__((noinline)) void *pong_side(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "pong");
	for (long i = 0; i < rounds; i++)
		pass(to_pong[0], to_ping[1]);
	return NULL;
}

static __attribute__((noinline)) void ping_side(void)
{
	char c = 'x';

	prctl(PR_SET_NAME, "ping");
	for (long i = 0; i < rounds; i++) {
		if (write(to_pong[1], &c, 1) != 1 || read(to_ping[0], &c, 1) != 1)
			exit(1);
	}
}

int main(int argc, char **argv)
{
	pthread_t t;
	cpu_set_t cpus, one;

	if (argc > 1)
		rounds = parse_count("ROUNDS", argv[1], 100000000);
	/* one CPU for both: the thread created next inherits it */
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) {
		CPU_ZERO(&one);
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (CPU_ISSET(c, &cpus)) {
				CPU_SET(c, &one);
				break;
			}
		}
		sched_setaffinity(0, sizeof(one), &one);
	}
	if (pipe(to_pong) || pipe(to_ping) || pthread_create(&t, NULL, pong_side, NULL))
		return 1;
	ping_side();
	pthread_join(t, NULL);
	return 0;
}
