// SPDX-License-Identifier: MIT
// Demo workload: a small training loop with a data-loader thread, two compute threads and a forked eval process.

#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

/* Iterations of crunch() that take roughly one second on a modern x86-64 core. */
#define ITERS_PER_SEC		520000000.0

#define NR_EPOCHS		3
#define BATCHES_PER_EPOCH	16
#define NR_BATCHES		(NR_EPOCHS * BATCHES_PER_EPOCH)
#define NR_COMPUTE		2
#define QUEUE_CAP		4
#define BATCH_ELEMS		64
#define EVAL_ROUNDS		(NR_EPOCHS * 4)

/*
 * CPU cost of one batch on a compute thread, in seconds at SCALE 1; every
 * other cost is a fixed fraction of it.  Each compute thread handles
 * NR_BATCHES / NR_COMPUTE = 24 batches (about 1.36 s), the loader all 48,
 * so the CPU splits compute-0 40 %, compute-1 40 %, data-loader 12 %,
 * eval-worker 8 % (about 3.4 s in all).
 */
#define BATCH_SECS		0.0567
#define FORWARD_SHARE		0.6	/* of a compute batch */
#define BACKWARD_SHARE		0.4	/* of a compute batch */
#define DECODE_SHARE		0.1	/* of a compute batch, on the loader */
#define AUGMENT_SHARE		0.05	/* of a compute batch, on the loader */
#define EVAL_SHARE		0.2	/* of one compute thread's total */

struct batch {
	int id;
	double x[BATCH_ELEMS];
	double pred;
	double loss;
};

/* Bounded FIFO of batches, handed from the loader to the compute threads. */
struct queue {
	pthread_mutex_t lock;
	pthread_cond_t not_full;
	pthread_cond_t not_empty;
	struct batch *slot[QUEUE_CAP];
	int count;
	int closed;
};

static volatile uint64_t sink;
static struct batch batches[NR_BATCHES];
static struct queue queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
};

static uint64_t decode_iters, augment_iters;
static uint64_t forward_iters, backward_iters;
static uint64_t eval_iters;

/*
 * The "model" arithmetic below uses a fixed amount of work so the printed
 * loss does not depend on SCALE; the scaled crunch() calls are the cost.
 */
static __attribute__((noinline, noclone)) void decode_batch(struct batch *b)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(b->id + 1);
	int i;

	for (i = 0; i < BATCH_ELEMS; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		b->x[i] = (double)(s >> 11) / 9007199254740992.0;
	}
	sink = crunch(s, decode_iters);
}

static __attribute__((noinline, noclone)) void augment_batch(struct batch *b)
{
	int i;

	for (i = 0; i < BATCH_ELEMS; i++)
		b->x[i] = 0.9 * b->x[i] + 0.05 * ((i & 1) ? 1.0 : -1.0);
	sink = crunch((uint64_t)b->id, augment_iters);
}

static __attribute__((noinline, noclone)) void forward_pass(struct batch *b)
{
	double acc = 0.0;
	int i;

	for (i = 0; i < BATCH_ELEMS; i++)
		acc += b->x[i] * (1.0 + (double)i / BATCH_ELEMS);
	b->pred = acc / (1.5 * BATCH_ELEMS);
	sink = crunch((uint64_t)b->id + 1, forward_iters);
}

static __attribute__((noinline, noclone)) void backward_pass(struct batch *b)
{
	/* The error shrinks as training "progresses" through the batches. */
	double err = (b->pred - 0.5) + 1.0 / (1.0 + (double)b->id / 16.0);

	b->loss = err * err;
	sink = crunch((uint64_t)b->id + 2, backward_iters);
}

static __attribute__((noinline, noclone)) uint64_t evaluate(uint64_t seed)
{
	return crunch(seed, eval_iters);
}

static void queue_push(struct queue *q, struct batch *b)
{
	pthread_mutex_lock(&q->lock);
	while (q->count == QUEUE_CAP)
		pthread_cond_wait(&q->not_full, &q->lock);
	q->slot[q->count++] = b;
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

static void queue_close(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = 1;
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

/*
 * Take the oldest batch meant for compute thread @worker (batch id modulo
 * NR_COMPUTE), so each thread gets the same batches, and thus the same CPU
 * time, on every run.  Returns NULL once the queue is closed and drained.
 */
static struct batch *queue_pop(struct queue *q, int worker)
{
	struct batch *b = NULL;
	int i;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		for (i = 0; i < q->count; i++) {
			if (q->slot[i]->id % NR_COMPUTE == worker)
				break;
		}
		if (i < q->count) {
			b = q->slot[i];
			memmove(&q->slot[i], &q->slot[i + 1],
				(q->count - i - 1) * sizeof(q->slot[0]));
			q->count--;
			pthread_cond_signal(&q->not_full);
			break;
		}
		if (q->closed)
			break;
		pthread_cond_wait(&q->not_empty, &q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return b;
}

static void *loader_thread(void *arg)
{
	int i;

	(void)arg;
	pthread_setname_np(pthread_self(), "data-loader");

	for (i = 0; i < NR_BATCHES; i++) {
		struct batch *b = &batches[i];

		b->id = i;
		decode_batch(b);
		augment_batch(b);
		queue_push(&queue, b);
	}
	queue_close(&queue);
	return NULL;
}

static void *compute_thread(void *arg)
{
	int worker = (int)(intptr_t)arg;
	struct batch *b;
	char name[16];

	snprintf(name, sizeof(name), "compute-%d", worker);
	pthread_setname_np(pthread_self(), name);

	while ((b = queue_pop(&queue, worker))) {
		forward_pass(b);
		backward_pass(b);
	}
	return NULL;
}

static void eval_worker(void)
{
	uint64_t x = 42;
	int i;

	prctl(PR_SET_NAME, "eval-worker", 0, 0, 0);
	for (i = 0; i < EVAL_ROUNDS; i++)
		x = evaluate(x + i);
	sink = x;
}

static int start_thread(pthread_t *tid, void *(*fn)(void *), void *arg,
			const char *name)
{
	int err;

	err = pthread_create(tid, NULL, fn, arg);
	if (err) {
		fprintf(stderr, "train: pthread_create: %s\n", strerror(err));
		return -1;
	}
	/* The thread names itself too; setting it here as well is harmless. */
	pthread_setname_np(*tid, name);
	return 0;
}

int main(int argc, char **argv)
{
	const double per_batch = ITERS_PER_SEC * BATCH_SECS;
	pthread_t loader, compute[NR_COMPUTE];
	double scale = 1.0, loss = 0.0;
	char name[16];
	int i, status, ret = 0;
	pid_t eval_pid;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [SCALE]\n", argv[0]);
		return 2;
	}
	if (argc > 1)
		scale = parse_scale(argv[1]);

	decode_iters = (uint64_t)(per_batch * DECODE_SHARE * scale);
	augment_iters = (uint64_t)(per_batch * AUGMENT_SHARE * scale);
	forward_iters = (uint64_t)(per_batch * FORWARD_SHARE * scale);
	backward_iters = (uint64_t)(per_batch * BACKWARD_SHARE * scale);
	eval_iters = (uint64_t)(per_batch * (NR_BATCHES / NR_COMPUTE) *
				EVAL_SHARE * scale / EVAL_ROUNDS);

	if (prctl(PR_SET_NAME, "train", 0, 0, 0)) {
		perror("prctl(PR_SET_NAME)");
		return 1;
	}

	/* Fork before starting any thread, so the child is single-threaded. */
	fflush(NULL);
	eval_pid = fork();
	if (eval_pid < 0) {
		perror("fork");
		return 1;
	}
	if (eval_pid == 0) {
		eval_worker();
		_exit(0);
	}

	if (start_thread(&loader, loader_thread, NULL, "data-loader"))
		return 1;
	for (i = 0; i < NR_COMPUTE; i++) {
		snprintf(name, sizeof(name), "compute-%d", i);
		if (start_thread(&compute[i], compute_thread,
				 (void *)(intptr_t)i, name))
			return 1;
	}

	pthread_join(loader, NULL);
	for (i = 0; i < NR_COMPUTE; i++)
		pthread_join(compute[i], NULL);

	while (waitpid(eval_pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("waitpid");
			return 1;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "train: eval-worker failed (status 0x%x)\n", status);
		ret = 1;
	}

	/* Report the mean loss of the last epoch, summed in batch order. */
	for (i = NR_BATCHES - BATCHES_PER_EPOCH; i < NR_BATCHES; i++)
		loss += batches[i].loss;
	loss /= BATCHES_PER_EPOCH;

	printf("train: %d epochs, %d batches, loss %.4f\n",
	       NR_EPOCHS, NR_BATCHES, loss);
	return ret;
}
