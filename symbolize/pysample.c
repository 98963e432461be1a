// SPDX-License-Identifier: MIT
/*
 * Python frames at sample time: the sampler hook that finds CPython in each
 * sampled process and reads the sampled thread's Python stack while it is
 * still (nearly) the one the sample saw, as ids into tables of functions
 * and interpreters that the session names once recording is over.
 *
 * A process is looked at on its first sample: its executable and any
 * libpython3.*.so* it maps are probed for _PyRuntime (each file once, by
 * device and inode). An exec, an exit or a new executable mapping makes it
 * look again, so wrapper scripts, launchers that exec the interpreter and
 * interpreters loaded late are all found (pyfind.c).
 *
 * The hook runs on the sampler's drain threads, one per CPU, at once: the
 * tables (files, processes, interpreters, functions) are under py->lock,
 * held briefly; a process's reader, memo and scratch under its own lock,
 * held for a whole read, so that the stacks of different processes (the
 * ranks of a job, its DataLoader workers) are read side by side. A thread
 * never waits for a process's lock while it holds py->lock.
 */
#include "pysample_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "internal.h"
#include "symbolize.h"

/* ---- tables ---- */

/* The function's id (under py->lock). */
static uint32_t intern_func(struct sym_python *py, const char *qualname, const char *filename,
			    uint32_t firstlineno)
{
	uint64_t h = hash_combine(hash_str(qualname, hash_str(filename, 0)), firstlineno);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&py->func_idx, h, &pos)) != IDX_NONE) {
		const struct pyfunc *f = &py->funcs[id];

		if (f->firstlineno == firstlineno && !strcmp(f->qualname, qualname) &&
		    !strcmp(f->filename, filename))
			return id;
	}
	ALLOC_GROW(py->funcs, py->nr_funcs + 1, py->alloc_funcs);
	id = (uint32_t)py->nr_funcs++;
	py->funcs[id] = (struct pyfunc){ xstrdup(qualname), xstrdup(filename), firstlineno };
	idx_insert(&py->func_idx, h, id);
	return id;
}

/*
 * The function of frame FR, through the process's memo (under PP's lock):
 * strings are compared by pointer there.
 */
static uint32_t func_of(struct sym_python *py, struct pyproc *pp, const struct py_frame *fr)
{
	uint64_t h = hash_combine(hash_u64(fr->code), (uintptr_t)fr->qualname);
	uint32_t *hot = &pp->memo_hot[h & (MEMO_HOT - 1)], id = *hot - 1;
	size_t pos = 0;
	struct pymemo *m;

	if (*hot && (m = &pp->memo[id])->code == fr->code && m->qualname == fr->qualname &&
	    m->filename == fr->filename && m->firstlineno == fr->firstlineno)
		return m->func;
	while ((id = idx_next(&pp->memo_idx, h, &pos)) != IDX_NONE) {
		m = &pp->memo[id];
		if (m->code == fr->code && m->qualname == fr->qualname && m->filename == fr->filename &&
		    m->firstlineno == fr->firstlineno) {
			*hot = id + 1;
			return m->func;
		}
	}
	ALLOC_GROW(pp->memo, pp->nr_memo + 1, pp->alloc_memo);
	id = (uint32_t)pp->nr_memo++;
	m = &pp->memo[id];
	*m = (struct pymemo){ fr->code, fr->qualname, fr->filename, fr->firstlineno, 0 };
	pthread_mutex_lock(&py->lock);
	m->func = intern_func(py, fr->qualname, fr->filename, fr->firstlineno);
	pthread_mutex_unlock(&py->lock);
	idx_insert(&pp->memo_idx, h, id);
	*hot = id + 1;
	return m->func;
}

/* ---- the hook ---- */

/* What the sampler captures is what the reader takes a capture to hold. */
_Static_assert(PY_CAPTURE_NODES == SAMPLER_CAPTURE_NODES && PY_CAPTURE_TS_MAX == SAMPLER_CAPTURE_START_MAX &&
		       PY_CAPTURE_FRAME_MAX == SAMPLER_CAPTURE_NODE_MAX && PY_CAPTURE_CODE_MAX == SAMPLER_CAPTURE_CODE_MAX,
	       "the capture's bounds differ");

/* With captures, how long the sampler hurries after a stack was read later than its sample. */
#define EAGER_HOLD_NS 50000000ull

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread: what a read costs, however the thread was scheduled. */
static uint64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/*
 * Captures (under PP's lock): the process's layout once its reader is set
 * up, and each thread state the reads found (0 for a thread without one);
 * a process without a reader (no interpreter, or not ours to read) as
 * nothing to copy, so that its samples do not wake the sampler. A process
 * the capture does not know, or whose layout it cannot copy, wakes it at
 * each sample, to be read at once as without captures. UNKNOWN: the
 * program met this thread without an entry for it or its process (gone
 * with a thread or process whose tid or pid is used again, or a map
 * full): they are described again.
 */
static void capture_register(struct sym_python *py, struct pyproc *pp, int32_t tid, bool dead, bool unknown)
{
	struct sampler_capture *c = __atomic_load_n(&py->capture, __ATOMIC_ACQUIRE);
	struct sampler_capture_layout l;
	uint64_t tstate;
	bool ok;

	if (!c || dead)
		return;
	if (unknown) {
		pp->cap_registered = false;
		__atomic_store_n(&pp->cap_empty, false, __ATOMIC_RELAXED);
		if (pp->reader)
			py_proc_tstate_unregistered(pp->reader, tid);
	}
	if (!pp->reader) {
		/* (not one that has ended: its entry would outlive it) */
		if (pp->open_errno != ENOENT && pp->open_errno != ESRCH &&
		    !__atomic_exchange_n(&pp->cap_empty, true, __ATOMIC_RELAXED))
			sampler_capture_proc(c, pp->pid, NULL);
		return;
	}
	if (!pp->cap_registered) {
		pp->cap_registered = true;
		/* a layout now, not nothing: a new mapping does not drop it */
		__atomic_store_n(&pp->cap_empty, false, __ATOMIC_RELAXED);
		ok = py_capture_layout(pp->reader, &l.start_len, &l.node_len, &l.ind1, &l.ind2, &l.next);
		/* and each frame's code object's header, where it fits */
		if (!ok || !py_capture_code(pp->reader, l.node_len, &l.code_at, &l.code_len)) {
			l.code_at = SAMPLER_CAPTURE_NONE;
			l.code_len = 0;
		}
		if (!ok || sampler_capture_proc(c, pp->pid, &l) < 0) {
			if (py->debug)
				fprintf(stderr, "proftool: debug: no captures for %d: thread state %u, frame %u bytes\n",
					(int)pp->pid, l.start_len, l.node_len);
			return;
		}
	}
	if (py_proc_tstate_to_register(pp->reader, tid, &tstate))
		sampler_capture_thread(c, tid, tstate);
}

static void hook_capture(void *arg, struct sampler_capture *c)
{
	struct sym_python *py = arg;

	__atomic_store_n(&py->capture, c, __ATOMIC_RELEASE);
}

static size_t hook_sample(void *arg, int32_t pid, int32_t tid, const struct sampler_ustack *sus,
			  const struct sampler_captured *scap, void *buf, size_t cap)
{
	struct sym_python *py = arg;
	struct pyproc *pp;
	struct pyx_hdr hdr = { 0 };
	struct pyx_frame *out = (struct pyx_frame *)((char *)buf + sizeof(hdr));
	enum py_status st = PY_STACK_UNSUPPORTED;
	const struct py_ustack us = { sus ? sus->sp : 0, sus ? sus->data : NULL, sus ? sus->size : 0 };
	const struct py_capture pc = {
		scap ? scap->start : 0, scap ? scap->first : 0, scap ? scap->start_bytes : NULL,
		scap ? scap->start_len : 0, scap ? scap->nr_nodes : 0, scap ? scap->nodes : NULL,
		scap ? scap->node_stride : 0, scap ? scap->code_offset : 0,
	};
	/* an empty capture: the program met this thread undescribed */
	const bool unknown = scap && !scap->start;
	bool moved = false, dead;
	size_t max, n = 0;
	uint64_t t0;

	if (cap < sizeof(hdr))
		return 0;
	pthread_mutex_lock(&py->lock);
	pp = pyproc_of(py, pid);
	pthread_mutex_unlock(&py->lock);
	pthread_mutex_lock(&pp->lock);
	/* it may have ended since it was looked up */
	dead = __atomic_load_n(&pp->dead, __ATOMIC_ACQUIRE);
	if (__atomic_exchange_n(&pp->look, false, __ATOMIC_RELAXED) && !dead)
		pyproc_discover(py, pp);
	if (!pp->found) {
		capture_register(py, pp, tid, dead, unknown);
		pthread_mutex_unlock(&pp->lock);
		return 0;
	}
	if (pp->reader && !pp->frames)
		pp->frames = xmalloc(PY_MAX_DEPTH * sizeof(*pp->frames));
	/* a forked process starts with its parent's code objects, and its exited children's */
	if (pp->reader && pp->seed_pending && !dead)
		pyproc_seed(py, pp);
	if (pp->reader)
		pyproc_adopt(py, pp);
	max = (cap - sizeof(hdr)) / sizeof(*out);
	if (max > PY_MAX_DEPTH)
		max = PY_MAX_DEPTH;
	/*
	 * A running thread's chain can change under the walk (the perf
	 * backend reads without stopping it): a torn or unreadable read is
	 * tried again at once, which almost always gets a whole stack. A
	 * capture is as it was at the sample: torn there, it is read again
	 * from the process; torn past its end, where the walk went on in the
	 * process, or stopped at a code object gone since the sample (a
	 * module's body once imported), the frames it got are kept, the
	 * sample's own, where a read later still would find the thread
	 * further on.
	 */
	t0 = pp->reader && py->debug ? thread_cpu_ns() : 0;
	for (int tries = 0; pp->reader && tries < 3; tries++) {
		n = py_read_stack_cap(pp->reader, tid, sus ? &us : NULL, scap && !unknown && !tries ? &pc : NULL, pp->frames,
				      max, &st, py->debug ? &moved : NULL);
		if ((st != PY_STACK_TORN && st != PY_STACK_UNREADABLE) ||
		    (n && py_proc_capture_use(pp->reader) == PY_CAP_PART) ||
		    (py_proc_capture_use(pp->reader) != PY_CAP_NONE && py_proc_code_failed(pp->reader)))
			break;
	}
	if (pp->reader) {
		bool whole = py_proc_capture_use(pp->reader) == PY_CAP_WHOLE;

		capture_register(py, pp, tid, dead, unknown);
		__atomic_add_fetch(&py->captured, whole, __ATOMIC_RELAXED);
		hdr.flags = whole ? PYX_CAPTURED : 0;
		/*
		 * read later than the sample, or met code soon gone (imports:
		 * a module's body is gone once it has run): the sampler
		 * hurries for a while, so that what is read late is read
		 * soon. Not for each function new to the cache: a long job
		 * meets them one by one for hours, and they live as long as
		 * their modules. Nor for a thread the program met undescribed:
		 * its samples wake the sampler at once until it is
		 * (perf_bpf.c), and then are copied. Nor for a process gone
		 * (a worker's last samples, drained after it exited).
		 */
		if ((!whole && n && !unknown) ||
		    (py_proc_hurry(pp->reader) && !dead && pyproc_unreadable_why(pid, pp->eval_lo) != ESRCH))
			__atomic_store_n(&py->late_ns, monotonic_ns(), __ATOMIC_RELAXED);
		__atomic_add_fetch(&py->reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&py->moved, moved, __ATOMIC_RELAXED);
		if (py->debug)
			__atomic_add_fetch(&py->read_ns, thread_cpu_ns() - t0, __ATOMIC_RELAXED);
	}
	if (!pp->reader)
		capture_register(py, pp, tid, dead, unknown);
	dead |= __atomic_load_n(&pp->dead, __ATOMIC_ACQUIRE);
	hdr.interp = pp->interp;
	hdr.status = !pp->reader && pp->open_errno == EPERM ? PYX_NOT_PERMITTED :
		     !pp->reader && pp->open_errno == EFAULT ? PY_STACK_UNREADABLE : st;
	/* the perf backend reads a few ms late: the process may have ended meanwhile */
	if ((hdr.status == PY_STACK_UNREADABLE && !n && pyproc_unreadable_why(pid, pp->eval_lo) == ESRCH) ||
	    (dead && !pp->reader))
		hdr.status = PYX_GONE;
	hdr.nr = (uint32_t)n;
	hdr.eval_lo = pp->eval_lo;
	hdr.eval_hi = pp->eval_hi;
	for (size_t i = 0; i < n; i++) {
		struct pyx_frame fr = { func_of(py, pp, &pp->frames[i]), pp->frames[i].line,
					pp->frames[i].flags };

		memcpy(&out[i], &fr, sizeof(fr));
	}
	/* it ended while this read held it (hook_task could not release it) */
	if (dead)
		pyproc_retire(py, pp, false);
	pthread_mutex_unlock(&pp->lock);
	memcpy(buf, &hdr, sizeof(hdr));
	return sizeof(hdr) + n * sizeof(*out);
}

/*
 * Whether some process has an interpreter to read: until then the sampler
 * need not hurry. With captures, only while stacks were lately read later
 * than their samples (EAGER_HOLD_NS): a thread before its first capture,
 * a stack deeper than a capture holds.
 */
static bool hook_eager(void *arg)
{
	const struct sym_python *py = arg;

	if (!__atomic_load_n(&py->capture, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&py->nr_interps, __ATOMIC_ACQUIRE) > 0;
	return monotonic_ns() - __atomic_load_n(&py->late_ns, __ATOMIC_RELAXED) < EAGER_HOLD_NS;
}

static void hook_task(void *arg, enum sampler_task_event ev, int32_t pid)
{
	struct sym_python *py = arg;
	struct sampler_capture *c = __atomic_load_n(&py->capture, __ATOMIC_ACQUIRE);
	uint64_t h = hash_u64((uint64_t)(uint32_t)pid);
	size_t pos = 0;
	uint32_t id;

	pthread_mutex_lock(&py->lock);
	while ((id = idx_next(&py->proc_idx, h, &pos)) != IDX_NONE) {
		struct pyproc *pp = py->procs[id];

		if (pp->pid != pid || pp->dead)
			continue;
		if (ev == SAMPLER_TASK_MMAP) {
			pp->dirty = true;
			/* an interpreter may have come with it: the next sample wakes, to look */
			if (c && __atomic_exchange_n(&pp->cap_empty, false, __ATOMIC_RELAXED))
				sampler_capture_forget_proc(c, pid);
			continue;
		}
		__atomic_store_n(&pp->dead, true, __ATOMIC_RELEASE);
		if (c)
			sampler_capture_forget_proc(c, pid);
		/* what its exited children kept for it (a new process with its pid is another's parent) */
		pyproc_orphans_drop(py, pid);
		/* a read holding it releases it when done (it sees DEAD) */
		if (!pthread_mutex_trylock(&pp->lock)) {
			pyproc_retire(py, pp, true);
			pthread_mutex_unlock(&pp->lock);
		}
	}
	pthread_mutex_unlock(&py->lock);
}

/* ---- the interface ---- */

struct sym_python *sym_python_new(void)
{
	struct sym_python *py = xcalloc(1, sizeof(*py));

	py->hook.sample = hook_sample;
	py->hook.task = hook_task;
	py->hook.eager = hook_eager;
	py->hook.capture = hook_capture;
	py->hook.arg = py;
	py->hook.cap = PYX_CAP;
	py->debug = getenv("PROFTOOL_DEBUG_PYTHON") != NULL;
	pthread_mutex_init(&py->lock, NULL);
	return py;
}

void sym_python_free(struct sym_python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->nr_procs; i++) {
		pyproc_release(py->procs[i]);
		pthread_mutex_destroy(&py->procs[i]->lock);
		free(py->procs[i]);
	}
	free(py->procs);
	idx_release(&py->proc_idx);
	for (size_t i = 0; i < py->nr_orphans; i++)
		py_proc_free(py->orphans[i].reader);
	free(py->orphans);
	for (size_t i = 0; i < py->nr_files; i++) {
		free(py->files[i]->path);
		free(py->files[i]);
	}
	free(py->files);
	for (size_t i = 0; i < py->nr_interps; i++) {
		free(py->interps[i]->path);
		free(py->interps[i]->unsupported);
		free(py->interps[i]);
	}
	free(py->interps);
	for (size_t i = 0; i < py->nr_funcs; i++) {
		free(py->funcs[i].qualname);
		free(py->funcs[i].filename);
	}
	free(py->funcs);
	idx_release(&py->func_idx);
	pthread_mutex_destroy(&py->lock);
	free(py);
}

const struct sampler_hook *sym_python_hook(struct sym_python *py)
{
	return &py->hook;
}

bool pyx_decode(const void *buf, size_t len, struct pyx_hdr *hdr, const struct pyx_frame **frames)
{
	if (!buf || len < sizeof(*hdr))
		return false;
	memcpy(hdr, buf, sizeof(*hdr));
	if (hdr->nr > PY_MAX_DEPTH || hdr->nr * sizeof(struct pyx_frame) > len - sizeof(*hdr) ||
	    hdr->status > PYX_GONE)
		return false;
	*frames = (const struct pyx_frame *)((const char *)buf + sizeof(*hdr));
	return true;
}

/*
 * The accessors below may be called while the hook runs (a live view
 * names what it has so far): they take the lock, and what they return
 * (strings, interpreter entries) is never moved or freed before the end.
 */
void sym_python_func(const struct sym_python *cpy, uint32_t id, const char **qualname,
		     const char **filename, uint32_t *firstlineno)
{
	struct sym_python *py = (struct sym_python *)cpy;
	const struct pyfunc *f;

	pthread_mutex_lock(&py->lock);
	f = id < py->nr_funcs ? &py->funcs[id] : NULL;
	*qualname = f ? f->qualname : "[unknown]";
	*filename = f ? f->filename : NULL;
	*firstlineno = f ? f->firstlineno : 0;
	pthread_mutex_unlock(&py->lock);
}

size_t sym_python_nr_interps(const struct sym_python *py)
{
	return py ? __atomic_load_n(&py->nr_interps, __ATOMIC_ACQUIRE) : 0;
}

const struct sym_python_interp *sym_python_interp(const struct sym_python *cpy, uint32_t id)
{
	struct sym_python *py = (struct sym_python *)cpy;
	const struct sym_python_interp *in;

	if (!py)
		return NULL;
	pthread_mutex_lock(&py->lock);
	in = id < py->nr_interps ? py->interps[id] : NULL;
	pthread_mutex_unlock(&py->lock);
	return in;
}

void sym_python_read_cost(const struct sym_python *py, uint64_t *reads, uint64_t *ns, uint64_t *moved,
			  uint64_t *captured)
{
	*captured = py ? __atomic_load_n(&py->captured, __ATOMIC_RELAXED) : 0;
	*moved = py ? __atomic_load_n(&py->moved, __ATOMIC_RELAXED) : 0;
	*reads = py ? __atomic_load_n(&py->reads, __ATOMIC_RELAXED) : 0;
	*ns = py ? __atomic_load_n(&py->read_ns, __ATOMIC_RELAXED) : 0;
}
