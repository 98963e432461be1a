// SPDX-License-Identifier: MIT
/* The ptrace backend's own: its state, shared by ptrace.c (the tracer thread and the reader's side), ptrace_events.c (tasks and their stops) and ptrace_tick.c (sampling). */
#ifndef PROFTOOL_SAMPLER_PTRACE_INT_H
#define PROFTOOL_SAMPLER_PTRACE_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "internal.h"

#define MAPS_REFRESH_NS 100000000ull   /* re-read /proc/PID/maps and comm this often */
#define STARTUP_NS 1000000000ull       /* ... and at every tick in a program's first second */

/* A record waiting in the queue, with copies of what it points to after it. */
struct qrec {
	struct qrec *next;
	size_t bytes;
	struct sampler_rec r;
};

struct task {
	pid_t tid, pid;
	bool group_stopped;    /* parked with PTRACE_LISTEN until SIGCONT */
	char comm[16];
	uint64_t comm_checked_ns;
	uint64_t born_ns;       /* when the tracer first saw it */
	uint64_t cpu_ns;        /* on-CPU time at the last tick (schedstat) */
	int64_t credit_ns;      /* on-CPU time not yet covered by a sample, less samples ahead of it */
	bool pick_second;       /* on-CPU mode: its tick of the current pair is the second (else the first) */
	int schedstat_fd;       /* /proc/PID/task/TID/schedstat, opened at the first tick; -1 */
	/*
	 * Interrupted, but not stopped within WAIT_LIMIT_NS: a runnable thread
	 * waiting for a CPU on a busy machine. Its stack cannot change before
	 * it runs, so the sample is taken when its stop comes, and in wall
	 * mode stands for the ticks it missed meanwhile too.
	 */
	bool late;
	/*
	 * Interrupted and not stopped since. Whatever ptrace stop comes first
	 * answers the interrupt (the kernel clears a pending one at every
	 * trap): when it is another one (an exec, a fork, a signal), the
	 * interrupt is asked again, or the thread would go unsampled until
	 * LATE_EXPIRE_NS.
	 */
	bool asked;
	enum sampler_state late_state;
	uint32_t late_ticks;
	uint64_t late_since_ns;
};

struct pmap {
	uint64_t start, end, pgoff, ino;
};

struct proc_maps {
	pid_t pid;
	struct pmap *maps;
	size_t nr, alloc;
	uint64_t read_ns;
	uint64_t exec_ns;       /* when the program started (or was first seen) */
};

struct ptrace_sampler {
	struct sampler_opts opts;
	struct task *tasks;
	size_t nr_tasks, alloc_tasks;
	struct proc_maps *procs;
	size_t nr_procs, alloc_procs;
	pid_t root;             /* record: the spawned command */
	bool root_done;
	int root_status;
	struct rusage root_usage;
	uint64_t attach_cpu_ns; /* attach: the target's CPU time when seized */
	bool enabled;           /* atomic: set by either thread */
	bool exec_enable;       /* atomic: enable at the root's exec, unless told otherwise first */
	bool stop;              /* atomic: the reader asks the tracer to let go */
	uint64_t period_ns, next_tick_ns;
	uint64_t stratum_ns;    /* start of the stretch of wall time the next tick falls in (pt_plan_tick()) */
	uint64_t nr_ticks;      /* ticks so far: on-CPU mode pairs them */
	uint32_t rng;
	uint8_t *stack;
	uint64_t *extra;        /* the hook's bytes for one sample (opts.hook->cap) */

	/* the tracer thread, and what it shares with the reader under lock */
	pthread_t thread;
	bool thread_running;
	sem_t ready;            /* the tracer has seized the tasks, or failed to */
	int open_errno;
	char *err;
	size_t errlen;
	pthread_mutex_t lock;
	struct qrec *head, *last;
	size_t queued;          /* bytes */
	int wake_fd;            /* eventfd: records are waiting */
	uint64_t nr_samples, nr_missed;
	size_t nr_schedstat_fds;
	uint64_t late_lost;     /* samples of late tasks that exited first; counted at the next tick */
	/* tasks announced at their first stop, whose maker's event has not come yet (it may outlive them) */
	pid_t *early;
	size_t nr_early, alloc_early;
};

/* ptrace.c: the queue of records for the reader */
void pt_wake_reader(struct ptrace_sampler *s);
/* Queues a copy of R for the reader (tracer thread). */
void pt_emit(struct ptrace_sampler *s, struct sampler_rec *r);
/* Counts COUNT samples lost (none: nothing). */
void pt_emit_lost(struct ptrace_sampler *s, uint64_t count);

/* ptrace_events.c: the tasks traced, their mappings and names, their stops */
struct task *pt_find_task(struct ptrace_sampler *s, pid_t tid);
struct task *pt_add_task(struct ptrace_sampler *s, pid_t tid, pid_t pid);
void pt_remove_task(struct ptrace_sampler *s, pid_t tid);
/* Adds TID, whose first stop came before its maker's clone or fork event, and announces it. */
void pt_add_early_task(struct ptrace_sampler *s, pid_t tid);
struct proc_maps *pt_maps_of(struct ptrace_sampler *s, pid_t pid);
/* Emits an MMAP record for every executable mapping of PID not seen before (none when QUIET). */
void pt_refresh_maps(struct ptrace_sampler *s, pid_t pid, bool quiet);
/* Emits a COMM record when T's name changed (or always, at an exec). */
void pt_check_comm(struct ptrace_sampler *s, struct task *t, bool exec);
/*
 * Acts on one wait status that is not the stop a sample waits for, and
 * lets the task run on. Returns true when the task is gone.
 */
bool pt_handle_status(struct ptrace_sampler *s, pid_t tid, int status, const struct rusage *ru);
/* Handles every status waiting to be collected, without blocking. */
void pt_collect(struct ptrace_sampler *s);

/* ptrace_tick.c: sampling */
/* Samples TID, stopped for it, as REPEAT samples in STATE, and lets it run on. */
void pt_take_sample(struct ptrace_sampler *s, pid_t tid, enum sampler_state state, uint32_t repeat);
/* Whether STATUS is the stop PTRACE_INTERRUPT asks for. */
bool pt_is_interrupt_stop(int status);
/* Samples the threads a tick finds due. */
void pt_tick(struct ptrace_sampler *s);
/*
 * Sets next_tick_ns, in the stretch of wall time after the last tick's (or
 * one starting at NOW for the first tick, or when the tracer fell behind).
 * Returns the periods it skipped for being behind, which wall mode counts lost.
 */
uint64_t pt_plan_tick(struct ptrace_sampler *s, uint64_t now);

#endif
