// SPDX-License-Identifier: MIT
// Profiler test workload: threads blocked in read() on a pipe, in pthread_mutex_lock() on a held
// mutex, in condition waits (idle=N) and in vfork() (vfork: uninterruptible, its child waiting),
// a busy one, and the main thread reading a FIFO until released.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

#define MAX_IDLE 4096

static int pipe_fds[2], vfork_fds[2];
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;
static volatile int released;
static volatile uint64_t sink;
static int failures;

/* Each blocking call's result is used after it, so that no call becomes a tail call (and hides its caller). */
static __attribute__((noinline, noclone)) int reader_wait(int fd)
{
	char c = 0;
	ssize_t n = read(fd, &c, 1);

	return n == 1 && c == 'x' ? 0 : -1;
}

static __attribute__((noinline, noclone)) int locker_wait(pthread_mutex_t *m)
{
	int e = pthread_mutex_lock(m);

	if (!e)
		pthread_mutex_unlock(m);
	return e ? -1 : 0;
}

static __attribute__((noinline, noclone)) int idle_wait(void)
{
	int e = 0;

	pthread_mutex_lock(&idle_lock);
	while (!released && !e)
		e = pthread_cond_wait(&idle_cond, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return e ? -1 : 0;
}

static __attribute__((noinline, noclone)) uint64_t busy_loop(void)
{
	uint64_t x = 1;

	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
		x = crunch(x, 100000);
	return x;
}

/*
 * The parent of a vfork() sleeps uninterruptibly (state D) until its child
 * execs or exits; this child waits for a byte on a pipe, with raw system
 * calls only (it runs on the parent's memory).
 */
static __attribute__((noinline, noclone)) int vfork_wait(void)
{
	int status = 0;
	pid_t p = vfork();

	if (p == 0) {
		char c;

		/* its own copy of the write end closed, the parent's death ends the wait too */
		syscall(SYS_close, vfork_fds[1]);
		syscall(SYS_read, vfork_fds[0], &c, 1);
		syscall(SYS_exit_group, 0);
	}
	if (p < 0 || waitpid(p, &status, 0) != p)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static __attribute__((noinline, noclone)) int wait_for_release(int fd)
{
	char c = 0;
	ssize_t n = read(fd, &c, 1);

	return n == 1 ? 0 : -1;
}

static void fail(const char *what)
{
	__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
	fprintf(stderr, "blocked: %s failed\n", what);
}

static void *reader(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "blk-reader");
	pthread_barrier_wait(&started);
	if (reader_wait(pipe_fds[0]) < 0)
		fail("read");
	return NULL;
}

static void *locker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "blk-locker");
	pthread_barrier_wait(&started);
	if (locker_wait(&held) < 0)
		fail("pthread_mutex_lock");
	return NULL;
}

static void *busy(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "blk-busy");
	pthread_barrier_wait(&started);
	sink = busy_loop();
	return NULL;
}

static void *vforker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "blk-vfork");
	pthread_barrier_wait(&started);
	if (vfork_wait() < 0)
		fail("vfork");
	return NULL;
}

static void *idler(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "blk-idle");
	pthread_barrier_wait(&started);
	if (idle_wait() < 0)
		fail("pthread_cond_wait");
	return NULL;
}

/* Writes TEXT into PATH whole (a temporary file renamed over it), so a reader never sees half. */
static void write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static pthread_t t[4 + MAX_IDLE];
	static void *(*fns[4 + MAX_IDLE])(void *) = { reader, locker, busy };
	long nr = 3;
	bool vfork_thread = false, idle_given = false;
	char text[64];
	int fifo;

	if (argc < 3) {
		fprintf(stderr, "usage: blocked FIFO READYFILE [idle=N] [vfork]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strncmp(argv[i], "idle=", 5) && !idle_given) {
			idle_given = true;
			for (long k = parse_count("idle=N", argv[i] + 5, MAX_IDLE); k > 0; k--)
				fns[nr++] = idler;
		} else if (!strcmp(argv[i], "vfork") && !vfork_thread) {
			fns[nr++] = vforker;
			vfork_thread = true;
		} else {
			fprintf(stderr, "usage: blocked FIFO READYFILE [idle=N] [vfork]\n");
			return 2;
		}
	}
	prctl(PR_SET_NAME, "blk-main");
	/* read and write: opening does not wait for a writer, and reading waits for one */
	fifo = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fifo < 0 || pipe(pipe_fds) || pipe(vfork_fds)) {
		perror(argv[1]);
		return 1;
	}
	pthread_mutex_lock(&held);
	pthread_barrier_init(&started, NULL, (unsigned)nr + 1);
	for (long i = 0; i < nr; i++) {
		if (pthread_create(&t[i], NULL, fns[i], NULL)) {
			fprintf(stderr, "blocked: cannot create thread %ld\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&started);
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	write_file(argv[2], text);

	if (wait_for_release(fifo) < 0)
		fail("reading the FIFO");
	/* release everyone: the pipe gets its byte, the mutex is let go, the idle ones woken */
	__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
	if (write(pipe_fds[1], "x", 1) != 1 || (vfork_thread && write(vfork_fds[1], "x", 1) != 1))
		fail("write");
	pthread_mutex_unlock(&held);
	pthread_mutex_lock(&idle_lock);
	pthread_cond_broadcast(&idle_cond);
	pthread_mutex_unlock(&idle_lock);
	for (long i = 0; i < nr; i++)
		pthread_join(t[i], NULL);
	if (failures)
		return 1;
	printf("blocked: released %ld threads\n", nr);
	return 0;
}
