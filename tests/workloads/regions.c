// SPDX-License-Identifier: MIT
/*
 * Named regions with known counts and durations, through <proftool.h>:
 *
 *   regions nest [SCALE]     10 x outer { 5 x inner (inner_spin: 2 ms), outer_spin: 1 ms };
 *                            prints "outer 10 SECONDS inner 50 SECONDS cpu SECONDS", its own
 *                            measure (the last: the CPU time the thread had inside inner)
 *   regions threads [SCALE]  4 threads, each 20 x its own region (t0..t3) around its own
 *                            function (work_t0..work_t3: 5 ms)
 *   regions procs [SCALE]    parent { fork: child 4 x in_child (child_spin 5 ms);
 *                            fork+exec: "regions nest" }, parent 4 x in_parent (parent_spin 5 ms)
 *   regions unbalanced       a { b { } end a } (b closed unbalanced), end c (no begin),
 *                            then 3 x ok (ok_spin 2 ms)
 *   regions kill|abort       open { killed_spin: 100 ms of CPU } then SIGKILL or abort() inside it
 *   regions many N           N empty regions "tiny", then 1 mark "done"
 *   regions pause [SCALE]    before_spin 100 ms, pause, paused_spin 100 ms, resume,
 *                            after_spin 100 ms; a region "paused_region" inside the pause;
 *                            prints "paused SECONDS", its own measure of the pause
 *   regions domains          10 x begin_in("net", "step") and 10 x region "step" (default domain),
 *                            5 marks "tick" in domain "net"
 *
 * Spins run on the wall clock (killed_spin on the thread's CPU clock), so a
 * region lasts at least its spins whatever else the machine does, and longer
 * when the machine is busy; its CPU time is what the sampler sees.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../include/proftool.h"
#include "work.h"

static double scale = 1.0;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The CPU time of the calling thread. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Computes until MS milliseconds (times the scale) have passed on the wall clock. */
#define SPIN(ms) do {							\
	uint64_t end_ = now_ns() + (uint64_t)((ms) * scale * 1e6);	\
	while (now_ns() < end_)						\
		crunch(end_, 2000);					\
} while (0)

/* A function of its own that spins: noipa, or gcc folds identical ones into one (-fipa-icf). */
#define SPIN_FN(name, ms) __attribute__((noipa)) static void name(void) { SPIN(ms); }

SPIN_FN(inner_spin, 2)
SPIN_FN(outer_spin, 1)

/*
 * Prints its own measure of the regions' totals and of the CPU time inside inner, which
 * is less than its wall time when the machine is busy: "outer 10 SECONDS inner 50
 * SECONDS cpu SECONDS".
 */
static void nest(void)
{
	uint64_t outer_ns = 0, inner_ns = 0, inner_cpu_ns = 0;

	for (int i = 0; i < 10; i++) {
		uint64_t t0 = now_ns();

		proftool_region_begin("outer");
		for (int k = 0; k < 5; k++) {
			uint64_t t1 = now_ns(), c1 = cpu_ns();

			PROFTOOL_REGION("inner")
				inner_spin();
			inner_ns += now_ns() - t1;
			inner_cpu_ns += cpu_ns() - c1;
		}
		outer_spin();
		proftool_region_end("outer");
		outer_ns += now_ns() - t0;
	}
	printf("outer 10 %.6f inner 50 %.6f cpu %.6f\n", outer_ns / 1e9, inner_ns / 1e9,
	       inner_cpu_ns / 1e9);
}

SPIN_FN(work_t0, 5)
SPIN_FN(work_t1, 5)
SPIN_FN(work_t2, 5)
SPIN_FN(work_t3, 5)

static void *thread_main(void *arg)
{
	static const char *const names[] = { "t0", "t1", "t2", "t3" };
	static void (*const work[])(void) = { work_t0, work_t1, work_t2, work_t3 };
	long id = (long)arg;

	for (int i = 0; i < 20; i++) {
		proftool_region_begin(names[id]);
		work[id]();
		proftool_region_end(names[id]);
	}
	return NULL;
}

static void threads(void)
{
	pthread_t t[4];

	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

SPIN_FN(child_spin, 5)
SPIN_FN(parent_spin, 5)

static void procs(const char *self)
{
	pid_t a, b;

	proftool_region_begin("parent");
	a = fork();
	if (a == 0) {
		for (int i = 0; i < 4; i++) {
			proftool_region_begin("in_child");
			child_spin();
			proftool_region_end("in_child");
		}
		_exit(0);
	}
	b = fork();
	if (b == 0) {
		execl("/proc/self/exe", self, "nest", NULL);
		_exit(127);
	}
	for (int i = 0; i < 4; i++) {
		PROFTOOL_REGION("in_parent")
			parent_spin();
	}
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	proftool_region_end("parent");
}

SPIN_FN(ok_spin, 2)

static void unbalanced(void)
{
	proftool_region_begin("a");
	proftool_region_begin("b");
	proftool_region_end("a");
	proftool_region_end("c");
	for (int i = 0; i < 3; i++) {
		proftool_region_begin("ok");
		ok_spin();
		proftool_region_end("ok");
	}
}

/*
 * Computes until the thread has had 100 ms of CPU: the region it dies in then lasts that long
 * at least up to its last sample (at most a sampling period of CPU before its death), however
 * little CPU a busy machine gives it; a spin on the wall clock could end with its last
 * sample tens of milliseconds before.
 */
__attribute__((noipa)) static void killed_spin(void)
{
	uint64_t end = cpu_ns() + (uint64_t)(100 * scale * 1e6);

	while (cpu_ns() < end)
		crunch(end, 2000);
}

static void die(bool kill_it)
{
	proftool_region_begin("open");
	killed_spin();
	if (kill_it)
		raise(SIGKILL);
	abort();
}

static void many(long n)
{
	for (long i = 0; i < n; i++) {
		proftool_region_begin("tiny");
		proftool_region_end("tiny");
	}
	proftool_mark("done");
}

SPIN_FN(before_spin, 100)
SPIN_FN(paused_spin, 100)
SPIN_FN(after_spin, 100)

/* Prints its own measure of the pause, from before proftool_pause() to after proftool_resume(). */
static void pause_resume(void)
{
	uint64_t t0;

	before_spin();
	t0 = now_ns();
	proftool_pause();
	proftool_region_begin("paused_region");
	paused_spin();
	proftool_region_end("paused_region");
	proftool_resume();
	printf("paused %.6f\n", (now_ns() - t0) / 1e9);
	after_spin();
}

static void domains(void)
{
	for (int i = 0; i < 10; i++) {
		proftool_region_begin_in("net", "step");
		ok_spin();
		proftool_region_end_in("net", "step");
		PROFTOOL_REGION("step")
			ok_spin();
	}
	for (int i = 0; i < 5; i++)
		proftool_mark_in("net", "tick");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "nest";

	if (argc > 2 && strcmp(mode, "many"))
		scale = parse_scale(argv[2]);
	if (!strcmp(mode, "nest"))
		nest();
	else if (!strcmp(mode, "threads"))
		threads();
	else if (!strcmp(mode, "procs"))
		procs(argv[0]);
	else if (!strcmp(mode, "unbalanced"))
		unbalanced();
	else if (!strcmp(mode, "kill") || !strcmp(mode, "abort"))
		die(!strcmp(mode, "kill"));
	else if (!strcmp(mode, "many"))
		many(argc > 2 ? parse_count("N", argv[2], 100000000) : 1000000);
	else if (!strcmp(mode, "pause"))
		pause_resume();
	else if (!strcmp(mode, "domains"))
		domains();
	else {
		fprintf(stderr, "usage: regions nest|threads|procs|unbalanced|kill|abort|many|pause|domains [SCALE|N]\n");
		return 2;
	}
	return 0;
}
