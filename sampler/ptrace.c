// SPDX-License-Identifier: MIT
/* The ptrace backend: sampling by interrupting threads, for where perf_event_open is denied, and wall-clock mode. */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
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
 */

#define SEIZE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
		       PTRACE_O_TRACEEXEC)
#define MAPS_REFRESH_NS 100000000ull   /* re-read /proc/PID/maps and comm this often */
#define STARTUP_NS 1000000000ull       /* ... and at every tick in a program's first second */
#define QUEUE_LIMIT (256u << 20)       /* bytes of records waiting for the reader */
#define IDLE_WAIT_NS 20000000ull       /* the tracer's longest sleep: how soon it sees a stop */

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
};

/* ---- tasks ---- */

static struct task *find_task(struct ptrace_sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->nr_tasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

static struct task *add_task(struct ptrace_sampler *s, pid_t tid, pid_t pid)
{
	struct task *t;

	ALLOC_GROW(s->tasks, s->nr_tasks + 1, s->alloc_tasks);
	t = &s->tasks[s->nr_tasks++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	t->born_ns = time_mono_ns();
	t->schedstat_fd = -1;
	return t;
}

static void remove_task(struct ptrace_sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->nr_tasks; i++) {
		if (s->tasks[i].tid == tid) {
			/* gone before its late stop came: those samples are lost */
			if (s->tasks[i].late)
				s->late_lost += 1 + s->tasks[i].late_ticks;
			if (s->tasks[i].schedstat_fd >= 0) {
				close(s->tasks[i].schedstat_fd);
				s->nr_schedstat_fds--;
			}
			s->tasks[i] = s->tasks[--s->nr_tasks];
			return;
		}
	}
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = tid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return tid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

bool sampler_read_comm(pid_t pid, pid_t tid, char *buf, size_t n)
{
	char path[96];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, n, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* Descriptors kept open for schedstat: the rest of a big process's threads open and close. */
#define SCHEDSTAT_FDS 256

/*
 * Nanoseconds T has run on a CPU (/proc/.../schedstat), or 0 when unknown.
 * Read on every tick of every task, so the file stays open for the first
 * SCHEDSTAT_FDS tasks (a pread costs a tenth of an fopen).
 */
static uint64_t task_cpu_ns(struct ptrace_sampler *s, struct task *t)
{
	char buf[96];
	int fd = t->schedstat_fd;
	ssize_t n;

	if (fd < 0) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/schedstat", (int)t->pid, (int)t->tid);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (t->schedstat_fd < 0 && s->nr_schedstat_fds < SCHEDSTAT_FDS) {
		t->schedstat_fd = fd;
		s->nr_schedstat_fds++;
	} else if (t->schedstat_fd < 0) {
		close(fd);
	}
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

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

static void wake_reader(struct ptrace_sampler *s)
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
static void emit(struct ptrace_sampler *s, struct sampler_rec *r)
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
		wake_reader(s);
}

/* Counts COUNT samples lost (none: nothing). */
static void emit_lost(struct ptrace_sampler *s, uint64_t count)
{
	struct sampler_rec r;

	if (!count)
		return;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_LOST;
	r.lost.count = count;
	emit(s, &r);
}

static void task_event(struct ptrace_sampler *s, enum sampler_task_event ev, pid_t pid)
{
	if (s->opts.hook && s->opts.hook->task)
		s->opts.hook->task(s->opts.hook->arg, ev, pid);
}

static struct proc_maps *maps_of(struct ptrace_sampler *s, pid_t pid)
{
	struct proc_maps *pm;

	for (size_t i = 0; i < s->nr_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	ALLOC_GROW(s->procs, s->nr_procs + 1, s->alloc_procs);
	pm = &s->procs[s->nr_procs++];
	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
	pm->exec_ns = time_mono_ns();
	return pm;
}

/* Emits an MMAP record for every executable mapping of PID not seen before. */
static void refresh_maps(struct ptrace_sampler *s, pid_t pid, bool quiet)
{
	struct proc_maps *pm = maps_of(s, pid);
	char path[64], line[4096];
	FILE *f;

	pm->read_ns = time_mono_ns();
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct proc_map m;
		bool known = false;
		struct sampler_rec r;

		if (!proc_maps_parse(line, &m) || !m.exec)
			continue;
		for (size_t i = 0; i < pm->nr && !known; i++)
			known = pm->maps[i].start == m.start && pm->maps[i].end == m.end &&
				pm->maps[i].pgoff == m.pgoff && pm->maps[i].ino == m.ino;
		if (known)
			continue;
		ALLOC_GROW(pm->maps, pm->nr + 1, pm->alloc);
		pm->maps[pm->nr++] = (struct pmap){ m.start, m.end, m.pgoff, m.ino };
		if (quiet)
			continue;
		memset(&r, 0, sizeof(r));
		r.type = SAMPLER_REC_MMAP;
		r.pid = r.tid = pid;
		r.mmap.start = m.start;
		r.mmap.len = m.end - m.start;
		r.mmap.pgoff = m.pgoff;
		r.mmap.maj = m.maj;
		r.mmap.min = m.min;
		r.mmap.ino = m.ino;
		r.mmap.prot = 4; /* PROT_EXEC */
		r.mmap.filename = m.path;
		emit(s, &r);
		task_event(s, SAMPLER_TASK_MMAP, pid);
	}
	fclose(f);
}

static void check_comm(struct ptrace_sampler *s, struct task *t, bool exec)
{
	char comm[16];
	struct sampler_rec r;

	t->comm_checked_ns = time_mono_ns();
	if (!sampler_read_comm(t->pid, t->tid, comm, sizeof(comm)) || (!exec && !strcmp(comm, t->comm)))
		return;
	memcpy(t->comm, comm, sizeof(comm));
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_COMM;
	r.pid = t->pid;
	r.tid = t->tid;
	r.comm.comm = t->comm;
	r.comm.exec = exec;
	emit(s, &r);
}

/* ---- stops and events ---- */

static void on_new_task(struct ptrace_sampler *s, pid_t parent, int event)
{
	unsigned long msg = 0;
	struct task *pt = find_task(s, parent), *t;
	struct sampler_rec r;
	pid_t child, pid;

	if (ptrace(PTRACE_GETEVENTMSG, parent, 0, &msg) < 0 || !msg)
		return;
	child = (pid_t)msg;
	pid = event == PTRACE_EVENT_CLONE ? tgid_of(child) : child;
	if (find_task(s, child))
		return;
	t = add_task(s, child, pid);
	if (pt)
		memcpy(t->comm, pt->comm, sizeof(t->comm));
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_FORK;
	r.pid = pid;
	r.tid = child;
	r.fork.ppid = pt ? pt->pid : parent;
	r.fork.ptid = parent;
	emit(s, &r);
}

static void on_exec(struct ptrace_sampler *s, pid_t tid)
{
	struct task *t = find_task(s, tid);
	struct proc_maps *pm;

	if (!t)
		return;
	/* the program changed: forget its old mappings, report the new ones */
	task_event(s, SAMPLER_TASK_EXEC, t->pid);
	pm = maps_of(s, t->pid);
	pm->nr = 0;
	pm->exec_ns = time_mono_ns();
	check_comm(s, t, true);
	refresh_maps(s, t->pid, false);
}

static void on_task_exit(struct ptrace_sampler *s, pid_t tid, int status, const struct rusage *ru)
{
	struct task *t = find_task(s, tid);
	struct sampler_rec r;

	if (t) {
		memset(&r, 0, sizeof(r));
		r.type = SAMPLER_REC_EXIT;
		r.pid = t->pid;
		r.tid = tid;
		emit(s, &r);
		if (tid == t->pid)
			task_event(s, SAMPLER_TASK_EXIT, t->pid);
		remove_task(s, tid);
	}
	if (tid == s->root) {
		pthread_mutex_lock(&s->lock);
		s->root_done = true;
		s->root_status = status;
		s->root_usage = *ru;
		pthread_mutex_unlock(&s->lock);
		wake_reader(s);
	}
}

/*
 * Acts on one wait status that is not the stop a sample waits for, and
 * lets the task run on. Returns true when the task is gone.
 */
static void take_sample(struct ptrace_sampler *s, pid_t tid, enum sampler_state state,
			uint32_t repeat);
static bool is_interrupt_stop(int status);

static void handle_stop(struct ptrace_sampler *s, pid_t tid, int status);

static bool handle_status(struct ptrace_sampler *s, pid_t tid, int status, const struct rusage *ru)
{
	struct task *t;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		on_task_exit(s, tid, status, ru);
		return true;
	}
	if (!WIFSTOPPED(status))
		return false;
	t = find_task(s, tid);
	if (t && t->asked && !is_interrupt_stop(status)) {
		/* this stop took the place of the interrupt's: ask again once it runs on */
		handle_stop(s, tid, status);
		t = find_task(s, tid);
		if (t && !t->group_stopped && ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0)
			return false;
		if (t)
			t->asked = t->late = false;
		return false;
	}
	if (t)
		t->asked = false;
	handle_stop(s, tid, status);
	return false;
}

/* Acts on one ptrace stop of TID and lets the task run on (or listen, in a group-stop). */
static void handle_stop(struct ptrace_sampler *s, pid_t tid, int status)
{
	int event = status >> 16, sig = WSTOPSIG(status);
	siginfo_t si;

	switch (event) {
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		on_new_task(s, tid, event);
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	case PTRACE_EVENT_EXEC:
		on_exec(s, tid);
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	case PTRACE_EVENT_STOP:
		/* group-stop (no siginfo) stays stopped until SIGCONT; any other trap runs on */
		if (ptrace(PTRACE_GETSIGINFO, tid, 0, &si) < 0 && errno == EINVAL &&
		    (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)) {
			struct task *t = find_task(s, tid);

			if (t)
				t->group_stopped = true;
			ptrace(PTRACE_LISTEN, tid, 0, 0);
		} else {
			struct task *t = find_task(s, tid);

			if (t)
				t->group_stopped = false;
			if (t && t->late && is_interrupt_stop(status)) {
				uint32_t n = 1 + t->late_ticks;

				t->late = false;
				take_sample(s, tid, t->late_state, n);
			} else {
				ptrace(PTRACE_CONT, tid, 0, 0);
			}
		}
		return;
	case 0:
		/* a signal on its way to the task: deliver it */
		ptrace(PTRACE_CONT, tid, 0, sig);
		return;
	default:
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
}

/* Handles every status waiting to be collected, without blocking. */
static void collect(struct ptrace_sampler *s)
{
	struct rusage ru;
	int status;
	pid_t tid;

	while ((tid = wait4(-1, &status, WNOHANG | __WALL, &ru)) > 0) {
		if (!find_task(s, tid) && tid != s->root && (status >> 16) == PTRACE_EVENT_STOP) {
			/* a new task's first stop can come before its parent's clone event */
			add_task(s, tid, tgid_of(tid));
		}
		handle_status(s, tid, status, &ru);
	}
}

/* ---- sampling ---- */

void sampler_perf_regs(const struct user_regs_struct *u, uint64_t *r)
{
	r[0] = u->rax; r[1] = u->rbx; r[2] = u->rcx; r[3] = u->rdx;
	r[4] = u->rsi; r[5] = u->rdi; r[6] = u->rbp; r[7] = u->rsp;
	r[8] = u->rip; r[9] = u->eflags; r[10] = u->cs; r[11] = u->ss;
	r[12] = u->r8; r[13] = u->r9; r[14] = u->r10; r[15] = u->r11;
	r[16] = u->r12; r[17] = u->r13; r[18] = u->r14; r[19] = u->r15;
}

uint64_t sampler_read_stack(pid_t pid, uint64_t sp, uint8_t *buf, uint64_t size)
{
	struct iovec local = { buf, size }, remote[20];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), at = sp, end = sp + size;
	int n = 0;
	ssize_t got;

	/* one iovec per page: process_vm_readv never splits an iovec, so it stops at a hole */
	while (at < end && n < 20) {
		uint64_t next = (at & ~(page - 1)) + page;

		if (next > end)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)at;
		remote[n].iov_len = next - at;
		n++;
		at = next;
	}
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (uint64_t)got : 0;
}

long sampler_cut_syscall(const struct user_regs_struct *regs)
{
	long long nr = (long long)regs->orig_rax, ret = (long long)regs->rax;

	/* ERESTARTSYS 512, ERESTARTNOINTR 513, ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516 */
	if (nr >= 0 && (ret == -EINTR || (ret <= -512 && ret >= -516)))
		return (long)nr;
	return -1;
}

/* System calls whose only work is to wait, on x86-64. */
static bool waiting_syscall(long long nr)
{
	switch (nr) {
	case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_futex: case SYS_poll:
	case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_epoll_wait:
	case SYS_epoll_pwait: case SYS_wait4: case SYS_waitid: case SYS_pause:
	case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait: case SYS_semtimedop:
		return true;
	default:
		return false;
	}
}

/*
 * Whether a thread stopped with REGS was waiting rather than running: its
 * stop cut a system call short (a sleep, a poll, a futex, a read of a pipe),
 * which will be restarted or fail with EINTR; or it came as a wait-only
 * system call returned, the thread woken but not yet back in its own code
 * (the tracer's tick and the thread's timer often expire together). A
 * system call at work in the kernel finishes before the stop is taken,
 * with its own result, and counts as running.
 */
static bool stopped_waiting(const struct user_regs_struct *regs)
{
	long long nr = (long long)regs->orig_rax;

	return sampler_cut_syscall(regs) >= 0 || (nr >= 0 && waiting_syscall(nr));
}

/*
 * Reads the sample of TID, which is in its interrupt stop, and lets it go.
 * STATE is what the thread was doing just before it was interrupted.
 */
static void take_sample(struct ptrace_sampler *s, pid_t tid, enum sampler_state state,
			uint32_t repeat)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	uint64_t perf_regs[20], ip;
	struct sampler_rec r;
	struct task *t = find_task(s, tid);

	if (t)
		t->asked = false;
	if (!t || ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0) {
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	if (!s->opts.wall && stopped_waiting(&regs)) {
		/* on-CPU mode: it was waiting, not running; its time is sampled when it runs */
		t->credit_ns += (int64_t)(s->period_ns * repeat);
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	sampler_perf_regs(&regs, perf_regs);
	ip = regs.rip;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_SAMPLE;
	r.pid = t->pid;
	r.tid = tid;
	r.sample.ip = ip;
	r.sample.user = true;
	r.sample.chain = &ip;
	r.sample.nr_chain = 1;
	r.sample.period = s->period_ns;
	r.sample.state = state;
	if (s->opts.callgraph != SAMPLER_CG_NONE) {
		/* frame pointers or not, the unwinder does better from registers and stack */
		r.sample.regs = perf_regs;
		r.sample.regs_mask = SAMPLER_PERF_REGS_MASK;
		r.sample.stack = s->stack;
		r.sample.stack_size = sampler_read_stack(t->pid, regs.rsp, s->stack, s->opts.stack_size);
	}
	if (s->opts.hook && s->opts.hook->sample) {
		/* the hook reads what it needs while the thread cannot change it */
		r.sample.extra = s->extra;
		r.sample.extra_size = s->opts.hook->sample(s->opts.hook->arg, t->pid, tid, s->extra,
							   s->opts.hook->cap);
	}
	/* registers and stack are copied: let the thread go before the slow part */
	ptrace(PTRACE_CONT, tid, 0, 0);
	for (uint32_t i = 0; i < repeat; i++)
		emit(s, &r);
}

static bool is_interrupt_stop(int status)
{
	return WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP;
}

/*
 * Interrupts every thread in TIDS at once and samples each as its stop
 * arrives: a runnable thread stops only when it next gets a CPU, so doing
 * them one by one would add up those waits. A thread that has not stopped
 * after WAIT_LIMIT_NS is left "late" and sampled when its stop comes.
 */
#define WAIT_LIMIT_NS 20000000ull
/* The tracer thread's nice value, when it may raise its priority. */
#define TRACER_NICE -10
/* Ticks a late sample may stand for (wall mode); past them they count as lost. */
#define LATE_TICKS_MAX 1000
/* How long a late thread's stop is waited for before the thread is sampled afresh. */
#define LATE_EXPIRE_NS 200000000ull

static void sample_tasks(struct ptrace_sampler *s, pid_t *tids, size_t n)
{
	/*
	 * Wall mode samples every thread on every tick, runnable ones too, which
	 * on a busy machine may take long to stop: waiting for them would miss
	 * the next ticks, and miss them most while threads compute. So it waits
	 * a period at most, and a late thread is sampled when its stop comes,
	 * for the ticks it missed as well (struct task). On-CPU mode samples
	 * running threads, which stop at once, and waits the full limit.
	 */
	uint64_t limit = s->opts.wall && s->period_ns < WAIT_LIMIT_NS ? s->period_ns : WAIT_LIMIT_NS;
	uint64_t deadline = time_mono_ns() + limit;
	struct timespec nap = { 0, 0 };
	enum sampler_state *states = xmalloc(st_mult(n + 1, sizeof(*states)));
	size_t left = 0;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);

	/*
	 * Wall mode: whether each thread runs or waits, read from /proc just
	 * before it is interrupted (the stop itself makes it look stopped).
	 */
	for (size_t i = 0; i < n; i++) {
		struct task *t = s->opts.wall ? find_task(s, tids[i]) : NULL;
		char st = t ? proc_task_state(t->pid, t->tid, NULL) : 0;

		if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) == 0) {
			if (t || (t = find_task(s, tids[i])))
				t->asked = true;
			states[left] = !st ? SAMPLER_STATE_UNKNOWN : st == 'R' ? SAMPLER_STATE_RUNNING :
				       SAMPLER_STATE_WAITING;
			tids[left++] = tids[i];
		}
	}
	while (left) {
		struct rusage ru;
		int status;
		pid_t w = wait4(-1, &status, WNOHANG | __WALL, &ru);
		struct task *t;
		bool gone;
		size_t k;

		if (w <= 0) {
			uint64_t now = time_mono_ns();

			if ((w < 0 && errno != EINTR) || now > deadline)
				break;
			/*
			 * Each stop arrives as SIGCHLD, which the caller keeps blocked:
			 * wait for it rather than poll, since the thread stays stopped
			 * for as long as we dawdle here.
			 */
			nap.tv_nsec = deadline - now < 1000000 ? (long)(deadline - now) : 1000000;
			sigtimedwait(&chld, NULL, &nap);
			continue;
		}
		for (k = 0; k < left && tids[k] != w; k++)
			;
		if (k < left && is_interrupt_stop(status)) {
			enum sampler_state st = states[k];

			tids[k] = tids[--left];
			states[k] = states[left];
			take_sample(s, w, st, 1);
			continue;
		}
		if (!find_task(s, w) && w != s->root && (status >> 16) == PTRACE_EVENT_STOP)
			add_task(s, w, tgid_of(w));
		gone = handle_status(s, w, status, &ru);
		if (k < left && (gone || !(t = find_task(s, w)) || !t->asked)) {
			/* gone, or an interrupt that cannot be asked again */
			tids[k] = tids[--left];
			states[k] = states[left];
		}
	}
	/* threads that did not stop in time (a busy machine): sampled when they do */
	for (size_t k = 0; k < left; k++) {
		struct task *t = find_task(s, tids[k]);

		if (t) {
			t->late = true;
			t->late_state = states[k];
			t->late_ticks = 0;
			t->late_since_ns = time_mono_ns();
		}
	}
	free(states);
}

/* A pseudo-random number in (0, 1). */
static double next_unit(struct ptrace_sampler *s)
{
	s->rng = s->rng * 1664525u + 1013904223u;
	return ((s->rng >> 8) + 0.5) / 16777216.0;
}

/*
 * Exponential intervals, so that periodic work cannot alias with the
 * samples. Wall mode samples every thread on every tick: the intervals
 * average one period. On-CPU mode ticks twice as often and samples a
 * running thread on half of them (see tick()), which leaves room to catch
 * up: with ticks as frequent as the samples they must give, a thread's
 * unsampled time would pile up past the cap after every long gap and the
 * rate would fall short (93 Hz of 99 measured).
 */
static uint64_t next_interval(struct ptrace_sampler *s)
{
	double u = next_unit(s), x;

	/* -ln(u) has mean 1; the tail is clamped at 4 so one gap never swallows many periods */
	x = -__builtin_log(u);
	x = (x < 4 ? x : 4) / (1 - __builtin_exp(-4.0));
	return (uint64_t)(s->period_ns * x / (s->opts.wall ? 1 : 2));
}

/* On-CPU mode: periods of running time a thread may be ahead of its samples. */
#define CARRY_MAX 8

static void tick(struct ptrace_sampler *s)
{
	uint64_t now = time_mono_ns(), missed = 0;
	size_t n = s->nr_tasks, nr_due = 0;
	pid_t *tids, *due;

	/* copies: sampling may add and remove tasks */
	tids = xmalloc(st_mult(n + 1, sizeof(*tids)));
	due = xmalloc(st_mult(n + 1, sizeof(*due)));
	for (size_t i = 0; i < n; i++)
		tids[i] = s->tasks[i].tid;
	for (size_t i = 0; i < n; i++) {
		struct task *t = find_task(s, tids[i]);
		struct proc_maps *pm;
		char st;

		if (!t)
			continue;
		if (t->late && now - t->late_since_ns > LATE_EXPIRE_NS) {
			/*
			 * The stop never came (a stop that took the interrupt's place
			 * is answered by asking again, see struct task): a safety net,
			 * so that a thread is never left unsampled for good.
			 */
			t->late = t->asked = false;
			missed += 1 + t->late_ticks;
		}
		if (t->late) {
			/* its last interrupt is still pending: this tick is in the sample it will give */
			if (s->opts.wall && t->late_ticks < LATE_TICKS_MAX)
				t->late_ticks++;
			else if (s->opts.wall)
				missed++;
			continue;
		}
		if (t->group_stopped) {
			/* SIGCONT ends a group-stop without always telling the tracer */
			st = proc_task_state(t->pid, t->tid, NULL);
			if (st == 'T' || st == 't')
				continue;
			t->group_stopped = false;
		}
		/*
		 * There are no comm events either: a new thread usually names
		 * itself right away and may be gone within 100 ms, so young
		 * tasks are checked on every tick.
		 */
		if (now - t->comm_checked_ns > MAPS_REFRESH_NS || now - t->born_ns < STARTUP_NS)
			check_comm(s, t, false);
		/*
		 * There are no mmap events to follow: re-read the maps on every
		 * tick while the dynamic loader is at work, then every 100 ms.
		 */
		pm = maps_of(s, t->pid);
		if (now - pm->read_ns > MAPS_REFRESH_NS || now - pm->exec_ns < STARTUP_NS)
			refresh_maps(s, t->pid, false);
		/*
		 * On-CPU mode: each tick that finds a thread running samples it
		 * with a probability of one half (ticks come twice a period on
		 * average), so a thread gets a sample per period it runs, taken at
		 * moments that do not depend on what it did before: a loop of
		 * short bursts and naps gets its bursts' split. A thread that
		 * sleeps is not stopped: it would be sampled where it sleeps. What
		 * it ran (schedstat) less what it was sampled for steers the odds,
		 * so the samples keep up with its CPU time exactly, like perf's
		 * cpu-clock, and a runnable thread waiting for a CPU is not counted
		 * as running. Running time no tick could sample (a tracer short of
		 * CPU, bursts too short to be seen) goes over the cap and is
		 * counted lost rather than paid later with one stack.
		 */
		if (!s->opts.wall) {
			uint64_t cpu = task_cpu_ns(s, t);
			int64_t period = (int64_t)s->period_ns;
			double odds;

			t->credit_ns += cpu > t->cpu_ns && t->cpu_ns ? (int64_t)(cpu - t->cpu_ns) : 0;
			t->cpu_ns = cpu;
			if (t->credit_ns >= CARRY_MAX * period) {
				uint64_t over = (uint64_t)(t->credit_ns / period - (CARRY_MAX - 1));

				missed += over;
				t->credit_ns -= (int64_t)over * period;
			}
			odds = 0.5 + (double)t->credit_ns / ((double)period * CARRY_MAX);
			if (next_unit(s) >= odds || proc_task_state(t->pid, t->tid, NULL) != 'R')
				continue;
			t->credit_ns -= period;
		}
		due[nr_due++] = tids[i];
	}
	emit_lost(s, missed + s->late_lost);
	s->late_lost = 0;
	if (nr_due)
		sample_tasks(s, due, nr_due);
	free(tids);
	free(due);
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
		add_task(s, tid, opts->pid);
		sampler_read_comm(opts->pid, tid, s->tasks[s->nr_tasks - 1].comm, 16);
	}
	if (!s->root) {
		/* attach: the session took the existing mappings from /proc already */
		refresh_maps(s, opts->pid, true);
		s->attach_cpu_ns = proc_cpu_ns(opts->pid);
	}
	return true;
}

/* Detaches every task, leaving each running (or stopped, if it was) as before. */
static void detach_all(struct ptrace_sampler *s)
{
	collect(s);
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
				handle_status(s, tid, status, &ru);
			}
		}
		remove_task(s, tid);
	}
}

/* One pass of the tracer: events, a tick when one is due, then sleep until the next. */
static void step(struct ptrace_sampler *s)
{
	uint64_t now, wait_ns = IDLE_WAIT_NS;
	struct timespec ts;
	sigset_t chld;

	collect(s);
	/* spawning: sampling starts at the exec, like enable_on_exec */
	if (s->root && __atomic_load_n(&s->exec_enable, __ATOMIC_ACQUIRE) && maps_of(s, s->root)->nr &&
	    __atomic_exchange_n(&s->exec_enable, false, __ATOMIC_ACQ_REL))
		__atomic_store_n(&s->enabled, true, __ATOMIC_RELEASE);
	now = time_mono_ns();
	if (__atomic_load_n(&s->enabled, __ATOMIC_ACQUIRE) && s->nr_tasks) {
		if (!s->next_tick_ns)
			s->next_tick_ns = now;
		if (now >= s->next_tick_ns) {
			tick(s);
			now = time_mono_ns();
			s->next_tick_ns += next_interval(s);
			if (s->next_tick_ns + 4 * s->period_ns < now && !s->opts.wall) {
				/* on-CPU mode: the threads' CPU time says what was missed (tick()) */
				s->next_tick_ns = now + next_interval(s);
			} else if (s->next_tick_ns + 4 * s->period_ns < now) {
				/* behind schedule: say so rather than catch up in a burst */
				emit_lost(s, (now - s->next_tick_ns) / s->period_ns);
				s->next_tick_ns = now + next_interval(s);
			}
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
		errbuf_set(err, errlen, "the ptrace backend samples time only; use -e cpu-clock");
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
