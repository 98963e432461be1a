// SPDX-License-Identifier: MIT
/* Burns CPU until a file appears, then starts a thread and forks a child: for attach tests. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile uint64_t sink;

static __attribute__((noinline, noclone)) void spin(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		asm volatile("" : "+r" (x));
	}
	sink += x;
}

static __attribute__((noinline, noclone)) void before_work(void)
{
	spin(2000000);
	sink++;	/* not a tail call: this function keeps its frame */
}

static __attribute__((noinline, noclone)) void late_thread_work(void)
{
	spin(300000000);
	sink++;	/* not a tail call: this function keeps its frame */
}

/* a different count, or gcc folds the two identical functions into one */
static __attribute__((noinline, noclone)) void late_child_work(void)
{
	spin(300000001);
	sink++;	/* not a tail call: this function keeps its frame */
}

static void *late_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "late-thread");
	late_thread_work();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pid_t child;
	int status;

	if (argc != 2) {
		fprintf(stderr, "usage: late GO-FILE\n");
		return 2;
	}
	prctl(PR_SET_NAME, "late-main");
	/* about 2 ms a round; gives up after a minute so a failed test leaves nothing behind */
	for (int i = 0; access(argv[1], F_OK) != 0; i++) {
		if (i > 30000)
			return 1;
		before_work();
	}
	if (pthread_create(&t, NULL, late_thread, NULL))
		return 1;
	child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, "late-child");
		late_child_work();
		_exit(0);
	}
	pthread_join(t, NULL);
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
