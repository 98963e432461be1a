// SPDX-License-Identifier: MIT
/* One snapshot of every thread of a running process: seize, interrupt, copy and release, one thread at a time. */
#include "internal.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
 * How long one thread's stop is waited for before the next thread is
 * taken: a blocked thread stops within microseconds, a runnable one when
 * it next gets a CPU, one in uninterruptible sleep (D) only when its
 * system call ends. The late ones are waited for again at the end, up to
 * LATE_WAIT_NS in all, and looked at between the other threads meanwhile.
 */
#define STOP_WAIT_NS 10000000ull
#define LATE_WAIT_NS 1000000000ull
/*
 * The tracer's nice value where it may raise its priority (CAP_SYS_NICE,
 * RLIMIT_NICE): a thread is held stopped for as long as the tracer waits
 * for a CPU between its stop and its release, which on a busy machine is
 * most of it. As the ptrace backend's tracer does.
 */
#define TRACER_NICE -10

/* What was copied of one thread while it was stopped. */
struct shot {
	uint64_t regs[20];      /* perf's order, SAMPLER_PERF_REGS_MASK */
	uint64_t ip;
	uint8_t *stack;
	uint64_t stack_size;    /* bytes valid in stack */
	uint64_t *extra;        /* the hook's bytes, 8-byte aligned */
	size_t extra_size;
	uint64_t time;          /* CLOCK_MONOTONIC, when it was copied */
};

struct snap_thread {
	struct sampler_thread pub;
	struct shot shot;
	bool pending;           /* seized and interrupted, not stopped yet */
	uint64_t checked_ns;    /* when it was last seen not stopped yet */
};

struct sampler_snapshot {
	struct sampler_snapshot_opts opts;
	struct snap_thread *threads;    /* sorted by tid */
	size_t nr, alloc;
	size_t nr_pending;
	uint64_t start_ns, end_ns;
	int err_no;             /* the tracer's failure, 0 when none */
	char *err;
	size_t errlen;
};

static int tid_cmp(const void *a, const void *b)
{
	const struct snap_thread *x = a, *y = b;

	return (x->pub.tid > y->pub.tid) - (x->pub.tid < y->pub.tid);
}

/* Lists /proc/PID/task; false when the process is not there. */
static bool list_threads(struct sampler_snapshot *s)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->opts.pid);
	d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		struct snap_thread *t;

		if (*end || tid <= 0 || de->d_name[0] == '0')
			continue;
		ALLOC_GROW(s->threads, s->nr + 1, s->alloc);
		t = &s->threads[s->nr++];
		memset(t, 0, sizeof(*t));
		t->pub.tid = (int32_t)tid;
		t->pub.syscall = -1;
		t->pub.outcome = SAMPLER_THREAD_GONE;
	}
	closedir(d);
	qsort(s->threads, s->nr, sizeof(*s->threads), tid_cmp);
	return s->nr > 0;
}

/* Reads the small /proc file /proc/PID/task/TID/NAME into BUF; its length, or -1. */
static ssize_t read_task_file(pid_t pid, pid_t tid, const char *name, char *buf, size_t n)
{
	char path[96];
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	got = fread(buf, 1, n - 1, f);
	/* a file the owner may open but not read: the kernel stack, without CAP_SYS_ADMIN */
	if (ferror(f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* /proc's kernel stack ("[<0>] pipe_read+0x2f6/0x410" lines) as function names, one per line. */
static char *kernel_stack(pid_t pid, pid_t tid)
{
	char buf[8192], *out, *at;

	if (read_task_file(pid, tid, "stack", buf, sizeof(buf)) < 0)
		return NULL;
	out = xmalloc(strlen(buf) + 1);
	at = out;
	for (const char *line = buf; *line; ) {
		size_t n = strcspn(line, "\n"), len;
		const char *name = memchr(line, ']', n);

		name = name ? name + 1 : line;
		name += strspn(name, " ");
		len = strcspn(name, "+ \n");
		memcpy(at, name, len);
		at += len;
		if (len)
			*at++ = '\n';
		line += n + (line[n] == '\n');
	}
	*at = '\0';
	if (at == out) {
		free(out);
		return NULL;
	}
	return out;
}

/* What /proc says of thread T before it is stopped: its stop would hide it. */
static void read_proc(struct sampler_snapshot *s, struct snap_thread *t)
{
	pid_t pid = s->opts.pid, tid = t->pub.tid;
	char buf[128];

	t->pub.state = proc_task_state(pid, tid, NULL);
	sampler_read_comm(pid, tid, t->pub.comm, sizeof(t->pub.comm));
	/* "0" while it runs, or where kernel addresses are not shown */
	if (read_task_file(pid, tid, "wchan", buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
		snprintf(t->pub.wchan, sizeof(t->pub.wchan), "%.*s", (int)strcspn(buf, "\n"), buf);
	if (s->opts.kernel_stack)
		t->pub.kernel_stack = kernel_stack(pid, tid);
}

/* Why thread TID may not be traced, into S->err. */
static void seize_error(struct sampler_snapshot *s, pid_t tid, int e)
{
	char buf[1024], comm[16] = "?";
	const char *at;
	long tracer = 0;

	if (read_task_file(s->opts.pid, tid, "status", buf, sizeof(buf)) > 0 &&
	    (at = strstr(buf, "\nTracerPid:")))
		tracer = strtol(at + 11, NULL, 10);
	if (e == EPERM && tracer > 0) {
		sampler_read_comm((pid_t)tracer, (pid_t)tracer, comm, sizeof(comm));
		errbuf_set(s->err, s->errlen, "process %d is traced by process %ld (%s), and ptrace allows one "
			   "tracer at a time; detach that one first", (int)s->opts.pid, tracer, comm);
	} else if (e == EPERM || e == EACCES) {
		errbuf_set(s->err, s->errlen, "not allowed to trace process %d: ptrace was denied "
			   "(another user's process, kernel.yama.ptrace_scope, or a seccomp filter)",
			   (int)s->opts.pid);
	} else {
		errbuf_set(s->err, s->errlen, "cannot trace process %d: %s", (int)s->opts.pid, strerror(e));
	}
	s->err_no = e;
}

/* Copies thread T, which is in a ptrace-stop, and releases it (passing SIG on). */
static void take(struct sampler_snapshot *s, struct snap_thread *t, int sig)
{
	const struct sampler_hook *hook = s->opts.hook;
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	struct shot *sh = &t->shot;
	pid_t tid = t->pub.tid;

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) == 0) {
		sampler_perf_regs(&regs, sh->regs);
		sh->ip = regs.rip;
		t->pub.syscall = (int32_t)sampler_cut_syscall(&regs);
		sh->stack = xmalloc(s->opts.stack_size ? s->opts.stack_size : 8);
		sh->stack_size = sampler_read_stack(s->opts.pid, regs.rsp, sh->stack, s->opts.stack_size);
		if (hook && hook->sample) {
			sh->extra = xmalloc(hook->cap + 8);
			sh->extra_size = hook->sample(hook->arg, s->opts.pid, tid, NULL, NULL, sh->extra, hook->cap);
		}
		sh->time = time_mono_ns();
		t->pub.outcome = SAMPLER_THREAD_SAMPLED;
	}
	ptrace(PTRACE_DETACH, tid, 0, sig);
	s->end_ns = time_mono_ns();
	t->pub.stopped_ns = s->end_ns - t->checked_ns;
	t->pending = false;
	s->nr_pending--;
}

/* Acts on T's stop or exit, if it came; never blocks. */
static void check(struct sampler_snapshot *s, struct snap_thread *t)
{
	int status;
	pid_t w;

	while ((w = waitpid(t->pub.tid, &status, WNOHANG | __WALL)) < 0 && errno == EINTR)
		;
	if (w == 0) {
		t->checked_ns = time_mono_ns();
		return;
	}
	if (w < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
		t->pub.outcome = SAMPLER_THREAD_GONE;
		t->pending = false;
		s->nr_pending--;
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	/*
	 * Any ptrace-stop will do: the interrupt's, a stopped process's
	 * group-stop (left stopped by the release), or the delivery of a
	 * signal that came first, which the release passes on.
	 */
	take(s, t, (status >> 16) == 0 ? WSTOPSIG(status) : 0);
}

/*
 * Waits until thread T (or, when T is NULL, every pending thread) has
 * stopped and been taken, or until DEADLINE; every stop arrives as SIGCHLD,
 * which this thread keeps blocked.
 */
static void wait_stops(struct sampler_snapshot *s, struct snap_thread *t, uint64_t deadline)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		struct timespec nap = { 0, 0 };
		uint64_t now;

		for (size_t i = 0; i < s->nr; i++)
			if (s->threads[i].pending)
				check(s, &s->threads[i]);
		if (t ? !t->pending : !s->nr_pending)
			return;
		now = time_mono_ns();
		if (now >= deadline)
			return;
		nap.tv_nsec = deadline - now < 1000000 ? (long)(deadline - now) : 1000000;
		sigtimedwait(&chld, NULL, &nap);
	}
}

static void *tracer_main(void *arg)
{
	struct sampler_snapshot *s = arg;
	const struct sampler_hook *hook = s->opts.hook;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TRACER_NICE);
	if (hook && hook->sample) {
		/*
		 * The hook's first call in a process looks for an interpreter (it
		 * reads /proc/PID/maps and probes files, slow on a cold page
		 * cache): made once before any thread is stopped, on the main
		 * thread as it runs, and its bytes thrown away.
		 */
		uint64_t *scratch = xmalloc(hook->cap + 8);

		hook->sample(hook->arg, s->opts.pid, s->opts.pid, NULL, NULL, scratch, hook->cap);
		free(scratch);
	}
	s->start_ns = s->end_ns = time_mono_ns();
	for (size_t i = 0; i < s->nr; i++) {
		struct snap_thread *t = &s->threads[i];

		read_proc(s, t);
		if (!t->pub.state || t->pub.state == 'Z' || t->pub.state == 'X')
			continue;	/* gone already, or going: nothing to read */
		t->checked_ns = time_mono_ns();
		if (ptrace(PTRACE_SEIZE, t->pub.tid, 0, 0) < 0) {
			if (errno == ESRCH)
				continue;
			seize_error(s, t->pub.tid, errno);
			break;
		}
		if (ptrace(PTRACE_INTERRUPT, t->pub.tid, 0, 0) < 0) {
			/* exiting: the kernel lets it go with this thread */
			continue;
		}
		t->pending = true;
		t->pub.outcome = SAMPLER_THREAD_NOT_STOPPED;
		s->nr_pending++;
		wait_stops(s, t, time_mono_ns() + STOP_WAIT_NS);
	}
	if (s->nr_pending)
		wait_stops(s, NULL, time_mono_ns() + LATE_WAIT_NS);
	for (size_t i = 0; i < s->nr; i++) {
		struct snap_thread *t = &s->threads[i];
		char buf[256];

		/* no registers to say what it waits in; the kernel tells a blocked thread's ("running" otherwise) */
		if (t->pending && read_task_file(s->opts.pid, t->pub.tid, "syscall", buf, sizeof(buf)) > 0 &&
		    buf[0] >= '0' && buf[0] <= '9')
			t->pub.syscall = (int32_t)strtol(buf, NULL, 10);
	}
	/*
	 * A thread that never stopped is still seized, its interrupt pending:
	 * the kernel detaches the tracees of a tracer that exits, and clears
	 * that, as this thread now does.
	 */
	return NULL;
}

static void snapshot_free_threads(struct sampler_snapshot *s)
{
	for (size_t i = 0; i < s->nr; i++) {
		free(s->threads[i].pub.kernel_stack);
		free(s->threads[i].shot.stack);
		free(s->threads[i].shot.extra);
	}
	free(s->threads);
}

struct sampler_snapshot *sampler_snapshot_take(const struct sampler_snapshot_opts *o, char *err,
					       size_t errlen)
{
	struct sampler_snapshot *s = xcalloc(1, sizeof(*s));
	sigset_t chld, old;
	pthread_t thread;
	size_t sampled = 0;
	int e;

	s->opts = *o;
	s->err = err;
	s->errlen = errlen;
	if (!list_threads(s)) {
		errbuf_set(err, errlen, "no such process %d", (int)o->pid);
		e = ESRCH;
		goto fail;
	}
	/* stops are reported as SIGCHLD, which the tracer waits for: no other thread may take it */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	e = pthread_create(&thread, NULL, tracer_main, s);
	if (!e)
		pthread_join(thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errbuf_set(err, errlen, "cannot start the tracer thread: %s", strerror(e));
		goto fail;
	}
	if ((e = s->err_no))
		goto fail;
	for (size_t i = 0; i < s->nr; i++)
		sampled += s->threads[i].pub.outcome == SAMPLER_THREAD_SAMPLED;
	if (!sampled && s->threads[0].pub.state == 0) {
		errbuf_set(err, errlen, "no such process %d", (int)o->pid);
		e = ESRCH;
		goto fail;
	}
	s->err = NULL;
	return s;

fail:
	snapshot_free_threads(s);
	free(s);
	errno = e;
	return NULL;
}

size_t sampler_snapshot_nr_threads(const struct sampler_snapshot *s)
{
	return s->nr;
}

const struct sampler_thread *sampler_snapshot_thread(const struct sampler_snapshot *s, size_t i)
{
	return &s->threads[i].pub;
}

uint64_t sampler_snapshot_duration(const struct sampler_snapshot *s)
{
	return s->end_ns - s->start_ns;
}

int sampler_snapshot_read(struct sampler_snapshot *s, sampler_cb cb, void *arg)
{
	for (size_t i = 0; i < s->nr; i++) {
		const struct snap_thread *t = &s->threads[i];
		struct sampler_rec r;
		int ret;

		if (t->pub.outcome != SAMPLER_THREAD_SAMPLED)
			continue;
		memset(&r, 0, sizeof(r));
		r.type = SAMPLER_REC_SAMPLE;
		r.time = t->shot.time;
		r.pid = s->opts.pid;
		r.tid = t->pub.tid;
		r.sample.ip = t->shot.ip;
		r.sample.user = true;
		r.sample.chain = &t->shot.ip;
		r.sample.nr_chain = 1;
		r.sample.period = 1;
		r.sample.regs = t->shot.regs;
		r.sample.regs_mask = SAMPLER_PERF_REGS_MASK;
		r.sample.stack = t->shot.stack;
		r.sample.stack_size = t->shot.stack_size;
		r.sample.state = t->pub.state == 'R' ? SAMPLER_STATE_RUNNING : SAMPLER_STATE_WAITING;
		r.sample.extra = t->shot.extra_size ? t->shot.extra : NULL;
		r.sample.extra_size = t->shot.extra_size;
		if ((ret = cb(&r, arg)))
			return ret;
	}
	return 0;
}

void sampler_snapshot_free(struct sampler_snapshot *s)
{
	if (!s)
		return;
	snapshot_free_threads(s);
	free(s);
}
