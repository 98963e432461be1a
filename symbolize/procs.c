// SPDX-License-Identifier: MIT
/* Following processes and threads (and their names) through fork, exec and comm records. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"

uint32_t ss_find_proc(struct sym_session *ss, int32_t pid)
{
	uint64_t h = hash_u64((uint32_t)pid);
	uint32_t id, best = IDX_NONE;
	size_t pos = 0;

	while ((id = idx_next(&ss->pid_idx, h, &pos)) != IDX_NONE)
		if (ss->procs[id].pid == pid && (best == IDX_NONE || id > best))
			best = id;
	return best;
}

uint32_t ss_find_thread(struct sym_session *ss, int32_t tid)
{
	uint64_t h = hash_u64((uint32_t)tid);
	uint32_t id, best = IDX_NONE;
	size_t pos = 0;

	while ((id = idx_next(&ss->tid_idx, h, &pos)) != IDX_NONE)
		if (ss->prof->threads[id].tid == tid && (best == IDX_NONE || id > best))
			best = id;
	return best;
}

/* Reads /proc/PID/cmdline as one space-separated string; NULL when gone. */
static char *read_cmdline(int32_t pid)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	if (buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return xstrdup(buf);
}

/*
 * Processes whose /proc/PID/statm stays open between readings (one system
 * call a reading rather than three); the others open it each time, so that
 * a job of thousands of processes does not run out of descriptors.
 */
#define STATM_KEPT_OPEN 256

/*
 * Reads process PR's /proc/PID/statm into RSS and ANON (bytes); false when
 * the process is gone, or a zombie (nothing resident).
 */
static bool read_statm(struct sym_session *ss, struct proc *pr, uint64_t *rss, uint64_t *anon)
{
	char path[64], buf[256];
	ssize_t n;
	int fd = pr->statm_fd - 1;

	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/statm", (int)pr->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0 && !pr->statm_fd && ss->statm_open < STATM_KEPT_OPEN) {
		pr->statm_fd = fd + 1;
		ss->statm_open++;
	} else if (n <= 0 || !pr->statm_fd) {
		/* gone (a read of a process that exited fails): the descriptor goes */
		close(fd);
		if (pr->statm_fd) {
			pr->statm_fd = 0;
			ss->statm_open--;
		}
	}
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return proc_statm_parse(buf, rss, anon);
}

/* A reading of process PROC's resident memory, now. */
static void rss_now(struct sym_session *ss, uint32_t proc)
{
	uint64_t rss, anon, now = time_mono_ns();

	if (read_statm(ss, &ss->procs[proc], &rss, &anon))
		profile_add_rss(ss->prof, ss->procs[proc].out,
				now > ss->opts.start_ns ? now - ss->opts.start_ns : 0, rss, anon);
}

/* Closes the descriptors of the readings (the session ends). */
void ss_close_statm(struct sym_session *ss)
{
	for (size_t i = 0; i < ss->nr_procs; i++) {
		if (ss->procs[i].statm_fd)
			close(ss->procs[i].statm_fd - 1);
		ss->procs[i].statm_fd = 0;
	}
	ss->statm_open = 0;
}

void sym_session_read_rss(struct sym_session *ss)
{
	for (size_t i = 0; i < ss->nr_procs; i++) {
		/* the latest incarnation of each pid: an exec'd or gone one reads nothing */
		if (ss_find_proc(ss, ss->procs[i].pid) == i) {
			rss_now(ss, (uint32_t)i);
		} else if (ss->procs[i].statm_fd) {
			close(ss->procs[i].statm_fd - 1);
			ss->procs[i].statm_fd = 0;
			ss->statm_open--;
		}
	}
}

/*
 * A new process incarnation; a forked one starts with a copy of the address
 * space of FROM (a proc id, IDX_NONE for none). An id, not a pointer: growing
 * the array moves the parent.
 */
uint32_t ss_new_proc(struct sym_session *ss, int32_t pid, int32_t ppid, const char *comm,
			 uint32_t from)
{
	char *cmdline = read_cmdline(pid);
	uint32_t out = profile_add_process(ss->prof, pid, ppid, comm, cmdline);
	const struct aspace *copy;
	struct proc *pr;

	free(cmdline);
	/*
	 * Its rank, as its launcher set it in the environment it was started
	 * with; none when that is unreadable (another user's, gone already). A
	 * forked child's is its parent's (the same environment until it execs):
	 * read from /proc now, it could already be what the child exec'd with.
	 */
	if (from != IDX_NONE)
		ss->prof->procs[out].job = ss->prof->procs[ss->procs[from].out].job;
	else
		(void)sym_rank_of_pid(pid, &ss->prof->procs[out].job);
	ALLOC_GROW(ss->procs, ss->nr_procs + 1, ss->alloc_procs);
	pr = &ss->procs[ss->nr_procs];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	pr->out = out;
	copy = from == IDX_NONE ? NULL : &ss->procs[from].as;
	if (copy && copy->nr) {
		pr->as.maps = xmalloc(st_mult(copy->nr, sizeof(*copy->maps)));
		memcpy(pr->as.maps, copy->maps, copy->nr * sizeof(*copy->maps));
		pr->as.nr = pr->as.alloc = copy->nr;
		pr->as.gen = copy->gen;
	}
	idx_insert(&ss->pid_idx, hash_u64((uint32_t)pid), ss->nr_procs);
	/* one reading at least, for a process that lives less than the interval */
	if (ss->opts.rss)
		rss_now(ss, (uint32_t)ss->nr_procs);
	return ss->nr_procs++;
}

uint32_t ss_new_thread(struct sym_session *ss, int32_t tid, uint32_t proc, const char *comm)
{
	uint32_t t = profile_add_thread(ss->prof, tid, ss->procs[proc].out, comm);

	idx_insert(&ss->tid_idx, hash_u64((uint32_t)tid), t);
	return t;
}

/* Returns the thread for TID in process PID, creating both on first sight. */
uint32_t ss_get_thread(struct sym_session *ss, int32_t pid, int32_t tid, const char *comm)
{
	uint32_t t = ss_find_thread(ss, tid), proc;

	if (t != IDX_NONE && ss->prof->procs[ss->prof->threads[t].process].pid == pid)
		return t;
	proc = ss_find_proc(ss, pid);
	if (proc == IDX_NONE)
		proc = ss_new_proc(ss, pid, 0, comm, IDX_NONE);
	return ss_new_thread(ss, tid, proc, comm ? comm : ss->prof->procs[ss->procs[proc].out].comm);
}

struct proc *ss_proc_of_thread(struct sym_session *ss, uint32_t t)
{
	uint32_t out = ss->prof->threads[t].process;
	uint32_t proc = ss_find_proc(ss, ss->prof->procs[out].pid);

	return proc == IDX_NONE ? NULL : &ss->procs[proc];
}

static void set_comm(char **dst, const char *comm)
{
	free(*dst);
	*dst = xstrdup(comm);
}

void ss_on_comm(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t t = ss_find_thread(ss, r->tid);

	if (r->comm.exec) {
		/* a new program: new process incarnation and address space, same pid */
		uint32_t old = ss_find_proc(ss, r->pid);
		int32_t ppid = old == IDX_NONE ? 0 : ss->prof->procs[ss->procs[old].out].ppid;
		uint32_t proc = ss_new_proc(ss, r->pid, ppid, r->comm.comm, IDX_NONE);

		ss_new_thread(ss, r->tid, proc, r->comm.comm);
		return;
	}
	if (t == IDX_NONE) {
		ss_get_thread(ss, r->pid, r->tid, r->comm.comm);
		return;
	}
	set_comm(&ss->prof->threads[t].comm, r->comm.comm);
	/* the main thread's name is the process's name */
	if (r->pid == r->tid)
		set_comm(&ss->prof->procs[ss->prof->threads[t].process].comm, r->comm.comm);
}

void ss_on_fork(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t parent_t = ss_find_thread(ss, r->fork.ptid);
	const char *comm = parent_t == IDX_NONE ? NULL : ss->prof->threads[parent_t].comm;
	uint32_t proc;

	if (r->pid == r->fork.ppid) {
		/* a new thread: it inherits its creator's name */
		proc = ss_find_proc(ss, r->pid);
		if (proc == IDX_NONE)
			proc = ss_new_proc(ss, r->pid, 0, comm, IDX_NONE);
		ss_new_thread(ss, r->tid, proc, comm);
		return;
	}
	/*
	 * a new process: a copy of its parent's address space; what it knows
	 * of each file (CFI, symbols) is per file and shared already
	 */
	proc = ss_new_proc(ss, r->pid, r->fork.ppid, comm, ss_find_proc(ss, r->fork.ppid));
	ss_new_thread(ss, r->tid, proc, comm);
}

int sym_session_add_existing(struct sym_session *ss, int32_t pid, int32_t tid)
{
	char path[64], line[4096], comm[64] = "";
	FILE *f;
	uint32_t proc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	proc = ss_find_proc(ss, pid);
	if (proc != IDX_NONE) {
		ss_new_thread(ss, tid, proc, comm);
		return 0;
	}
	proc = ss_new_proc(ss, pid, 0, comm, IDX_NONE);
	ss_new_thread(ss, tid, proc, comm);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct proc_map pm;
		struct map m;

		if (!proc_maps_parse(line, &pm) || !pm.exec)
			continue;
		m.start = pm.start;
		m.end = pm.end;
		m.pgoff = pm.pgoff;
		m.module = ss_get_module(ss, pm.path, pm.maj, pm.min, pm.ino, pid, pm.start, pm.end);
		m.bias_state = BIAS_UNKNOWN;
		ss_aspace_insert(&ss->procs[proc].as, &m);
	}
	fclose(f);
	return 0;
}
