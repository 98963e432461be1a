// SPDX-License-Identifier: MIT
// A thread that never runs Python, for tests/workloads/py/cthread.py (loaded with
// ctypes): cspin_start starts a pthread that spins in spin_in_c and returns its thread
// id; cspin_join waits for it.

#define _GNU_SOURCE

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <unistd.h>

#include "../work.h"

long cspin_start(uint64_t iterations);
int cspin_join(void);
uint64_t spin_in_c(uint64_t x, uint64_t n);

static pthread_t thread;
static sem_t started;
static volatile long spinner_tid;
static uint64_t spin_iterations;

__attribute__((noinline)) uint64_t spin_in_c(uint64_t x, uint64_t n)
{
	x = crunch(x, n);
	asm volatile("" ::: "memory");
	return x;
}

__attribute__((noinline)) static void *spinner(void *arg)
{
	(void)arg;
	spinner_tid = gettid();
	sem_post(&started);
	return (void *)(uintptr_t)spin_in_c(1, spin_iterations);
}

long cspin_start(uint64_t iterations)
{
	spin_iterations = iterations;
	if (sem_init(&started, 0, 0) || pthread_create(&thread, NULL, spinner, NULL))
		return -1;
	while (sem_wait(&started))
		;
	return spinner_tid;
}

int cspin_join(void)
{
	return pthread_join(thread, NULL);
}
