// SPDX-License-Identifier: MIT
/* The ptrace backend, for where perf_event_open is denied, and wall-clock mode: its tracer thread and the reader's side. */
#include "ptrace_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/*
 * Each thread is seized once (PTRACE_SEIZE, following clones, forks and
 * execs) and sampled by PTRACE_INTERRUPT, a register read, a copy of its
 * stack with process_vm_readv and PTRACE_CONT. A thread interrupted in a
 * blocking system call restarts it transparently, which is what makes
 * --mode wall possible. The records are the perf backend's kinds, made
 * as things happen, so they are in time order already.
 *
 * All of that runs in a tracer thread of its own (ptrace requests must
 * come from the thread that seized the task), which queues the records
 * like perf's ring buffer does: the caller's unwinding, slow when a
 * library's debug info is first read, never delays a tick. The queue is
 * bounded; samples beyond it are counted lost, other records always fit.
 *
 * Here: the tracer thread's loop and the queue between it and the reader.
 * ptrace_events.c keeps the tasks and acts on their stops (forks, execs,
 * exits); ptrace_tick.c samples them.
 */

#define SEIZE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
		       PTRACE_O_TRACEEXEC)
#define QUEUE_LIMIT (256u << 20)       /* bytes of records waiting for the reader */
#define IDLE_WAIT_NS 20000000ull       /* the tracer's longest sleep: how soon it sees a stop */
/* The tracer thread's nice value, when it may raise its priority. */
#define TRACER_NICE -10

/* CPU time of a whole process (all its threads), from /proc. */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, 0, buf, sizeof(buf));
	unsigned long long ut = 0, st = 0;

	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (!f || sscanf(f, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* ---- records ---- */

void pt_wake_reader(struct ptrace_sampler *s)
{
	uint64_t one = 1;

	if (write(s->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return;	/* the counter is full: the reader is awake anyway */
}


/* Where copies of what REC points to go, and how many bytes they take. */
static size_t payload_size(const struct sampler_rec *r)
{
	switch (r->type) {
	case SAMPLER_REC_SAMPLE:
		return r->sample.nr_chain * sizeof(uint64_t) +
		       (r->sample.regs ? __builtin_popcountll(r->sample.regs_mask) * sizeof(uint64_t) : 0) +
		       ((r->sample.stack_size + 7) & ~7ull) + r->sample.extra_size;
	case SAMPLER_REC_MMAP:
		return strlen(r->mmap.filename) + 1;
	case SAMPLER_REC_COMM:
		return strlen(r->comm.comm) + 1;
	default:
		return 0;
	}
}

static void *copy_out(char **at, const void *src, size_t n)
{
	void *dst = *at;

	memcpy(dst, src, n);
	*at += n;
	return dst;
}

/* Queues a copy of R for the reader (tracer thread). */
void pt_emit(struct ptrace_sampler *s, struct sampler_rec *r)
{
	size_t payload = payload_size(r), bytes = sizeof(struct qrec) + payload;
	struct qrec *q;
	bool was_empty;
	char *at;

	r->time = time_mono_ns();
	pthread_mutex_lock(&s->lock);
	if (r->type == SAMPLER_REC_SAMPLE && s->queued + bytes > QUEUE_LIMIT) {
		/* the reader is far behind: count the sample lost, in the queue's last LOST record if it has one */
		s->nr_missed++;
		if (s->head && s->last->r.type == SAMPLER_REC_LOST) {
			s->last->r.lost.count++;
			pthread_mutex_unlock(&s->lock);
			return;
		}
		memset(r, 0, sizeof(*r));
		r->type = SAMPLER_REC_LOST;
		r->time = time_mono_ns();
		r->lost.count = 1;
		payload = 0;
		bytes = sizeof(struct qrec);
	} else if (r->type == SAMPLER_REC_SAMPLE) {
		s->nr_samples++;
	} else if (r->type == SAMPLER_REC_LOST) {
		s->nr_missed += r->lost.count;
	}
	pthread_mutex_unlock(&s->lock);

	q = xmalloc(bytes);
	q->next = NULL;
	q->bytes = bytes;
	q->r = *r;
	at = (char *)(q + 1);
	switch (r->type) {
	case SAMPLER_REC_SAMPLE:
		q->r.sample.chain = copy_out(&at, r->sample.chain, r->sample.nr_chain * sizeof(uint64_t));
		if (r->sample.regs)
			q->r.sample.regs = copy_out(&at, r->sample.regs,
						    __builtin_popcountll(r->sample.regs_mask) * sizeof(uint64_t));
		q->r.sample.stack = copy_out(&at, r->sample.stack, r->sample.stack_size);
		at += -r->sample.stack_size & 7;        /* the hook's bytes stay 8-byte aligned */
		q->r.sample.extra = r->sample.extra_size ? copy_out(&at, r->sample.extra, r->sample.extra_size) : NULL;
		break;
	case SAMPLER_REC_MMAP:
		q->r.mmap.filename = copy_out(&at, r->mmap.filename, payload);
		break;
	case SAMPLER_REC_COMM:
		q->r.comm.comm = copy_out(&at, r->comm.comm, payload);
		break;
	default:
		break;
	}

	pthread_mutex_lock(&s->lock);
	was_empty = !s->head;
	if (s->head)
		s->last->next = q;
	else
		s->head = q;
	s->last = q;
	s->queued += bytes;
	pthread_mutex_unlock(&s->lock);
	if (was_empty)
		pt_wake_reader(s);
}

/* Counts COUNT samples lost (none: nothing). */
void pt_emit_lost(struct ptrace_sampler *s, uint64_t count)
{
	struct sampler_rec r;

	if (!count)
		return;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_LOST;
	r.lost.count = count;
	pt_emit(s, &r);
}

/* ---- the tracer thread ---- */

/* Seizes the tasks of S->opts; false (with S->err and S->open_errno set) on failure. */
static bool seize_all(struct ptrace_sampler *s)
{
	const struct sampler_opts *opts = &s->opts;
	size_t nr = opts->nr_tids ? opts->nr_tids : 1;

	for (size_t i = 0; i < nr; i++) {
		pid_t tid = opts->nr_tids ? opts->tids[i] : opts->pid;

		if (ptrace(PTRACE_SEIZE, tid, 0, SEIZE_OPTIONS) < 0) {
			int e = errno;

			if (e == ESRCH && opts->nr_tids && i)
				continue;	/* a thread that just exited */
			if (e == EPERM || e == EACCES)
				errbuf_set(s->err, s->errlen, "not allowed to trace process %d: ptrace was denied "
						"(another user's process, kernel.yama.ptrace_scope, or a seccomp filter)",
						(int)opts->pid);
			else
				errbuf_set(s->err, s->errlen, "cannot trace process %d: %s", (int)opts->pid,
					   strerror(e));
			s->open_errno = e;
			return false;
		}
		pt_add_task(s, tid, opts->pid);
		sampler_read_comm(opts->pid, tid, s->tasks[s->nr_tasks - 1].comm, 16);
	}
	if (!s->root) {
		/* attach: the session took the existing mappings from /proc already */
		pt_refresh_maps(s, opts->pid, true);
		s->attach_cpu_ns = proc_cpu_ns(opts->pid);
	}
	return true;
}

/* Detaches every task, leaving each running (or stopped, if it was) as before. */
static void detach_all(struct ptrace_sampler *s)
{
	pt_collect(s);
	while (s->nr_tasks) {
		struct task *t = &s->tasks[s->nr_tasks - 1];
		pid_t tid = t->tid;
		struct rusage ru;
		int status;

		/* PTRACE_DETACH needs a ptrace-stop: interrupt, wait for it, then let go */
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0) {
			for (;;) {
				pid_t w = wait4(tid, &status, __WALL, &ru);

				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0 || WIFEXITED(status) || WIFSIGNALED(status))
					break;
				if ((status >> 16) == PTRACE_EVENT_STOP || (status >> 16) == 0) {
					int sig = (status >> 16) == 0 ? WSTOPSIG(status) : 0;

					ptrace(PTRACE_DETACH, tid, 0, sig);
					break;
				}
				pt_handle_status(s, tid, status, &ru);
			}
		}
		pt_remove_task(s, tid);
	}
}

/* One pass of the tracer: events, a tick when one is due, then sleep until the next. */
static void step(struct ptrace_sampler *s)
{
	uint64_t now, wait_ns = IDLE_WAIT_NS;
	struct timespec ts;
	sigset_t chld;

	pt_collect(s);
	/* spawning: sampling starts at the exec, like enable_on_exec */
	if (s->root && __atomic_load_n(&s->exec_enable, __ATOMIC_ACQUIRE) && pt_maps_of(s, s->root)->nr &&
	    __atomic_exchange_n(&s->exec_enable, false, __ATOMIC_ACQ_REL))
		__atomic_store_n(&s->enabled, true, __ATOMIC_RELEASE);
	now = time_mono_ns();
	if (__atomic_load_n(&s->enabled, __ATOMIC_ACQUIRE) && s->nr_tasks) {
		if (!s->next_tick_ns)
			pt_plan_tick(s, now);
		if (now >= s->next_tick_ns) {
			uint64_t behind;

			pt_tick(s);
			now = time_mono_ns();
			behind = pt_plan_tick(s, now);
			/*
			 * Behind schedule: wall mode says so rather than catch up in a
			 * burst; in on-CPU mode the threads' CPU time says what was
			 * missed (pt_tick())
			 */
			if (s->opts.wall)
				pt_emit_lost(s, behind);
		}
		if (s->next_tick_ns > now && s->next_tick_ns - now < wait_ns)
			wait_ns = s->next_tick_ns - now;
		else if (s->next_tick_ns <= now)
			wait_ns = 0;
	}
	if (!wait_ns)
		return;
	/* every ptrace stop and exit raises SIGCHLD, which all threads keep blocked */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	ts.tv_sec = wait_ns / 1000000000ull;
	ts.tv_nsec = wait_ns % 1000000000ull;
	sigtimedwait(&chld, NULL, &ts);
}

static void *tracer_main(void *arg)
{
	struct ptrace_sampler *s = arg;
	sigset_t all;

	/* signals are the reader's business; SIGCHLD is taken with sigtimedwait */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/*
	 * The ticks are the clock of the samples: a tracer that waits for a CPU
	 * behind the threads it samples misses ticks, and misses them most
	 * while they compute. Ahead of them where allowed (CAP_SYS_NICE or
	 * RLIMIT_NICE); where not, it stays as it is and its losses are counted.
	 */
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TRACER_NICE);
	if (!seize_all(s)) {
		sem_post(&s->ready);
		return NULL;
	}
	sem_post(&s->ready);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		step(s);
	detach_all(s);
	return NULL;
}

/* ---- the interface (the reader's side) ---- */

static void free_queue(struct qrec *q)
{
	while (q) {
		struct qrec *next = q->next;

		free(q);
		q = next;
	}
}

static void ptrace_sampler_free(struct ptrace_sampler *s)
{
	free_queue(s->head);
	for (size_t i = 0; i < s->nr_procs; i++)
		free(s->procs[i].maps);
	free(s->procs);
	for (size_t i = 0; i < s->nr_tasks; i++)
		if (s->tasks[i].schedstat_fd >= 0)
			close(s->tasks[i].schedstat_fd);
	free(s->tasks);
	free(s->early);
	free(s->stack);
	free(s->extra);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	sem_destroy(&s->ready);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct ptrace_sampler *ptrace_sampler_open(const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct ptrace_sampler *s;
	int e;

	if (opts->event != SAMPLER_EVENT_CPU_CLOCK && opts->event != SAMPLER_EVENT_TASK_CLOCK) {
		errbuf_set(err, errlen, sampler_event_counts(opts->event) ?
			   "the ptrace backend samples time only and cannot count events; "
			   "use the perf backend (--backend perf) for -e %s" :
			   "the ptrace backend samples time only; use -e cpu-clock", sampler_event_name(opts->event));
		errno = EINVAL;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->opts = *opts;
	s->opts.tids = NULL;	/* the caller's array is read once, by seize_all */
	s->period_ns = 1000000000ull / opts->freq;
	s->stack = xmalloc(opts->stack_size ? opts->stack_size : 8);
	if (opts->hook)
		s->extra = xmalloc(opts->hook->cap + 8);
	s->rng = (uint32_t)time_mono_ns() | 1;
	s->root = opts->enable_on_exec ? opts->pid : 0;
	s->enabled = !opts->enable_on_exec;
	s->exec_enable = opts->enable_on_exec;
	s->err = err;
	s->errlen = errlen;
	pthread_mutex_init(&s->lock, NULL);
	sem_init(&s->ready, 0, 0);
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		e = errno;
		errbuf_set(err, errlen, "cannot create an eventfd: %s", strerror(e));
		goto fail;
	}
	s->opts.tids = opts->tids;
	e = pthread_create(&s->thread, NULL, tracer_main, s);
	if (e) {
		errbuf_set(err, errlen, "cannot start the tracer thread: %s", strerror(e));
		goto fail;
	}
	while (sem_wait(&s->ready) < 0 && errno == EINTR)
		;
	s->opts.tids = NULL;
	s->err = NULL;
	if (s->open_errno) {
		e = s->open_errno;
		pthread_join(s->thread, NULL);
		goto fail;
	}
	s->thread_running = true;
	return s;

fail:
	ptrace_sampler_free(s);
	errno = e;
	return NULL;
}

int ptrace_sampler_enable(struct ptrace_sampler *s)
{
	__atomic_store_n(&s->exec_enable, false, __ATOMIC_RELEASE);
	__atomic_store_n(&s->enabled, true, __ATOMIC_RELEASE);
	return 0;
}

int ptrace_sampler_disable(struct ptrace_sampler *s)
{
	__atomic_store_n(&s->exec_enable, false, __ATOMIC_RELEASE);
	__atomic_store_n(&s->enabled, false, __ATOMIC_RELEASE);
	return 0;
}

/* Hands every queued record to CB; stops at the first error CB returns. */
static int drain(struct ptrace_sampler *s, sampler_cb cb, void *arg)
{
	struct qrec *q;
	uint64_t n;
	int ret = 0;

	if (read(s->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	pthread_mutex_lock(&s->lock);
	q = s->head;
	s->head = s->last = NULL;
	s->queued = 0;
	pthread_mutex_unlock(&s->lock);
	while (q) {
		struct qrec *next = q->next;

		if (!ret)
			ret = cb(&q->r, arg);
		free(q);
		q = next;
	}
	return ret;
}

int ptrace_sampler_read(struct ptrace_sampler *s, int timeout_ms, const sigset_t *sigmask,
			sampler_cb cb, void *arg)
{
	struct pollfd pfd = { .fd = s->wake_fd, .events = POLLIN };
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	sigset_t mask = *sigmask;
	bool waiting;

	pthread_mutex_lock(&s->lock);
	waiting = s->head != NULL;
	pthread_mutex_unlock(&s->lock);
	/* SIGCHLD stays blocked: the tracer takes it, and wakes us through the eventfd */
	sigaddset(&mask, SIGCHLD);
	if (!waiting && ppoll(&pfd, 1, &ts, &mask) < 0 && errno != EINTR)
		return -errno;
	return drain(s, cb, arg);
}

int ptrace_sampler_flush(struct ptrace_sampler *s, sampler_cb cb, void *arg)
{
	return drain(s, cb, arg);
}

void ptrace_sampler_get_stats(struct ptrace_sampler *s, struct sampler_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->samples = s->nr_samples;
	st->lost = s->nr_missed;
	if (s->root_done)
		st->count = (s->root_usage.ru_utime.tv_sec + s->root_usage.ru_stime.tv_sec) * 1000000000ull +
			    (s->root_usage.ru_utime.tv_usec + s->root_usage.ru_stime.tv_usec) * 1000ull;
	pthread_mutex_unlock(&s->lock);
	if (!s->root && proc_cpu_ns(s->opts.pid) > s->attach_cpu_ns)
		st->count = proc_cpu_ns(s->opts.pid) - s->attach_cpu_ns;
}

bool ptrace_sampler_reap(struct ptrace_sampler *s, pid_t pid, int *status)
{
	bool done;

	pthread_mutex_lock(&s->lock);
	done = pid == s->root && s->root_done;
	if (done)
		*status = s->root_status;
	pthread_mutex_unlock(&s->lock);
	return done;
}

void ptrace_sampler_close(struct ptrace_sampler *s)
{
	if (!s)
		return;
	if (s->thread_running) {
		__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
		pthread_join(s->thread, NULL);
	}
	ptrace_sampler_free(s);
}
