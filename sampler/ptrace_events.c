// SPDX-License-Identifier: MIT
/* The ptrace backend: the tasks it traces, their mappings and names, and what their stops say (forks, execs, exits, signals). */
#include "ptrace_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

/* ---- tasks ---- */

struct task *pt_find_task(struct ptrace_sampler *s, pid_t tid)
{
	for (size_t i = 0; i < s->nr_tasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

struct task *pt_add_task(struct ptrace_sampler *s, pid_t tid, pid_t pid)
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

void pt_remove_task(struct ptrace_sampler *s, pid_t tid)
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

/* The process thread TID belongs to and that process's parent (/proc); TID and 0 when unknown. */
static pid_t tgid_of(pid_t tid, pid_t *ppid)
{
	char path[64], line[128];
	pid_t tgid = tid, pp = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Tgid: %d", &tgid) != 1 && sscanf(line, "PPid: %d", &pp) == 1)
				break;
		fclose(f);
	}
	if (ppid)
		*ppid = pp;
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

static void task_event(struct ptrace_sampler *s, enum sampler_task_event ev, pid_t pid)
{
	if (s->opts.hook && s->opts.hook->task)
		s->opts.hook->task(s->opts.hook->arg, ev, pid);
}

struct proc_maps *pt_maps_of(struct ptrace_sampler *s, pid_t pid)
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
void pt_refresh_maps(struct ptrace_sampler *s, pid_t pid, bool quiet)
{
	struct proc_maps *pm = pt_maps_of(s, pid);
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
		pt_emit(s, &r);
		task_event(s, SAMPLER_TASK_MMAP, pid);
	}
	fclose(f);
}

void pt_check_comm(struct ptrace_sampler *s, struct task *t, bool exec)
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
	pt_emit(s, &r);
}

/* ---- stops and events ---- */

static void on_new_task(struct ptrace_sampler *s, pid_t parent, int event)
{
	unsigned long msg = 0;
	struct task *pt = pt_find_task(s, parent), *t;
	pid_t child, pid, ppid = pt ? pt->pid : parent;
	char comm[sizeof(t->comm)] = "";
	struct sampler_rec r;

	if (ptrace(PTRACE_GETEVENTMSG, parent, 0, &msg) < 0 || !msg)
		return;
	child = (pid_t)msg;
	pid = event == PTRACE_EVENT_CLONE ? tgid_of(child, NULL) : child;
	for (size_t i = 0; i < s->nr_early; i++) {
		if (s->early[i] == child) {
			/* announced at its first stop already; perhaps even gone */
			s->early[i] = s->early[--s->nr_early];
			return;
		}
	}
	if (pt_find_task(s, child))
		return;
	/* adding a task may move the table: what the parent's entry says is read first */
	if (pt)
		memcpy(comm, pt->comm, sizeof(comm));
	t = pt_add_task(s, child, pid);
	memcpy(t->comm, comm, sizeof(t->comm));
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_FORK;
	r.pid = pid;
	r.tid = child;
	r.fork.ppid = ppid;
	r.fork.ptid = parent;
	pt_emit(s, &r);
}

void pt_add_early_task(struct ptrace_sampler *s, pid_t tid)
{
	struct sampler_rec r;
	pid_t ppid, pid = tgid_of(tid, &ppid);

	/*
	 * Its maker's event, when it comes (perhaps after the task is gone),
	 * finds it in S->early and says nothing: the FORK record goes now,
	 * from /proc, so that the process has its parent (a thread's maker is
	 * not known: its process stands for it).
	 */
	pt_add_task(s, tid, pid);
	ALLOC_GROW(s->early, s->nr_early + 1, s->alloc_early);
	s->early[s->nr_early++] = tid;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_FORK;
	r.pid = pid;
	r.tid = tid;
	r.fork.ppid = pid == tid ? ppid : pid;
	r.fork.ptid = r.fork.ppid;
	pt_emit(s, &r);
}

static void on_exec(struct ptrace_sampler *s, pid_t tid)
{
	struct task *t = pt_find_task(s, tid);
	struct proc_maps *pm;

	if (!t)
		return;
	/* the program changed: forget its old mappings, report the new ones */
	task_event(s, SAMPLER_TASK_EXEC, t->pid);
	pm = pt_maps_of(s, t->pid);
	pm->nr = 0;
	pm->exec_ns = time_mono_ns();
	pt_check_comm(s, t, true);
	pt_refresh_maps(s, t->pid, false);
}

static void on_task_exit(struct ptrace_sampler *s, pid_t tid, int status, const struct rusage *ru)
{
	struct task *t = pt_find_task(s, tid);
	struct sampler_rec r;

	if (t) {
		memset(&r, 0, sizeof(r));
		r.type = SAMPLER_REC_EXIT;
		r.pid = t->pid;
		r.tid = tid;
		pt_emit(s, &r);
		if (tid == t->pid)
			task_event(s, SAMPLER_TASK_EXIT, t->pid);
		pt_remove_task(s, tid);
	}
	if (tid == s->root) {
		pthread_mutex_lock(&s->lock);
		s->root_done = true;
		s->root_status = status;
		s->root_usage = *ru;
		pthread_mutex_unlock(&s->lock);
		pt_wake_reader(s);
	}
}

static void handle_stop(struct ptrace_sampler *s, pid_t tid, int status);

bool pt_handle_status(struct ptrace_sampler *s, pid_t tid, int status, const struct rusage *ru)
{
	struct task *t;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		on_task_exit(s, tid, status, ru);
		return true;
	}
	if (!WIFSTOPPED(status))
		return false;
	t = pt_find_task(s, tid);
	if (t && t->asked && !pt_is_interrupt_stop(status)) {
		/* this stop took the place of the interrupt's: ask again once it runs on */
		handle_stop(s, tid, status);
		t = pt_find_task(s, tid);
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
			struct task *t = pt_find_task(s, tid);

			if (t)
				t->group_stopped = true;
			ptrace(PTRACE_LISTEN, tid, 0, 0);
		} else {
			struct task *t = pt_find_task(s, tid);

			if (t)
				t->group_stopped = false;
			if (t && t->late && pt_is_interrupt_stop(status)) {
				uint32_t n = 1 + t->late_ticks;

				t->late = false;
				pt_take_sample(s, tid, t->late_state, n);
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
void pt_collect(struct ptrace_sampler *s)
{
	struct rusage ru;
	int status;
	pid_t tid;

	while ((tid = wait4(-1, &status, WNOHANG | __WALL, &ru)) > 0) {
		if (!pt_find_task(s, tid) && tid != s->root && (status >> 16) == PTRACE_EVENT_STOP)
			pt_add_early_task(s, tid);
		pt_handle_status(s, tid, status, &ru);
	}
}
