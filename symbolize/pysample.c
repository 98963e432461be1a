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
 * interpreters loaded late are all found.
 */
#include "pysample.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"
#include "symbolize.h"

/* A file probed for an interpreter. */
struct pyfile {
	uint32_t maj, min;
	uint64_t ino;
	char *path;
	bool found;
	struct py_probe probe;
	uint32_t interp;        /* when found */
};

/* A code object's function, remembered per process by its address and strings. */
struct pymemo {
	uint64_t code;
	const char *qualname, *filename;        /* the py_proc's interned strings */
	uint32_t firstlineno;
	uint32_t func;
};

/* One process incarnation. */
#define MEMO_HOT 64

struct pyproc {
	int32_t pid;
	bool dead;              /* exited or exec'd: a later sample looks again */
	bool dirty;             /* a new executable mapping: look again if no interpreter yet */
	bool found;
	int open_errno;         /* why there is no reader: EPERM, ENOTSUP... */
	uint32_t interp;
	uint64_t eval_lo, eval_hi;
	struct py_proc *reader;
	struct pymemo *memo;
	size_t nr_memo, alloc_memo;
	struct idx memo_idx;
	uint32_t memo_hot[MEMO_HOT]; /* the same, direct-mapped in front of it (id + 1, 0 empty) */
};

struct pyfunc {
	char *qualname, *filename;
	uint32_t firstlineno;
};

struct sym_python {
	struct sampler_hook hook;

	struct pyfile *files;
	size_t nr_files, alloc_files;

	struct pyproc *procs;   /* every incarnation seen, latest last */
	size_t nr_procs, alloc_procs;
	struct idx proc_idx;    /* by pid */

	struct sym_python_interp *interps;
	size_t nr_interps, alloc_interps;

	struct pyfunc *funcs;
	size_t nr_funcs, alloc_funcs;
	struct idx func_idx;

	struct py_frame *frames; /* scratch: one stack */
	uint64_t reads, read_ns; /* stacks read, and the time it took (for the bench) */
	bool debug;             /* PROFTOOL_DEBUG_PYTHON: time each read (two system calls a sample), count MOVED */
	uint64_t moved;         /* stacks whose sample's copy showed another innermost frame than the thread's */
};

/* ---- tables ---- */

static uint32_t add_interp(struct sym_python *py, const char *path, uint32_t version,
			   const char *unsupported)
{
	for (size_t i = 0; i < py->nr_interps; i++) {
		struct sym_python_interp *in = &py->interps[i];

		if (!strcmp(in->path, path) && in->version == version &&
		    !in->unsupported == !unsupported)
			return (uint32_t)i;
	}
	ALLOC_GROW(py->interps, py->nr_interps + 1, py->alloc_interps);
	py->interps[py->nr_interps] = (struct sym_python_interp){
		xstrdup(path), version, xstrdup_or_null(unsupported)
	};
	return (uint32_t)py->nr_interps++;
}

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

/* The function of frame FR, through the process's memo: strings are compared by pointer there. */
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
	*m = (struct pymemo){ fr->code, fr->qualname, fr->filename, fr->firstlineno,
			      intern_func(py, fr->qualname, fr->filename, fr->firstlineno) };
	idx_insert(&pp->memo_idx, h, id);
	*hot = id + 1;
	return m->func;
}

/* ---- finding the interpreter ---- */

/* PATH as process PID sees it: through its root, for it may live in another mount namespace (a container). */
static int open_in(int32_t pid, const char *path)
{
	char root[PATH_MAX + 32];
	int fd;

	snprintf(root, sizeof(root), "/proc/%d/root%s", (int)pid, path);
	fd = open(root, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : open(path, O_RDONLY | O_CLOEXEC);
}

/* The probe of the file at PATH in PID's file system, once per file. */
static struct pyfile *probe(struct sym_python *py, int32_t pid, const char *path, uint32_t maj,
			    uint32_t min, uint64_t ino)
{
	struct pyfile *f;
	int fd;

	for (size_t i = 0; i < py->nr_files; i++) {
		f = &py->files[i];
		if (f->ino == ino && f->maj == maj && f->min == min && !strcmp(f->path, path))
			return f;
	}
	ALLOC_GROW(py->files, py->nr_files + 1, py->alloc_files);
	f = &py->files[py->nr_files++];
	memset(f, 0, sizeof(*f));
	f->maj = maj;
	f->min = min;
	f->ino = ino;
	f->path = xstrdup(path);
	fd = open_in(pid, path);
	if (fd >= 0) {
		f->found = py_probe_file(fd, path, &f->probe) == 0;
		close(fd);
	}
	return f;
}

/* Whether the mapped file at PATH may hold an interpreter: the executable, or libpython3. */
static bool candidate(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(path, exe) || !strncmp(base, "libpython3", 10);
}

static bool load_bias(int32_t pid, const char *path, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	int fd = open_in(pid, path);
	bool ok = fd >= 0 && sym_elf_bias(fd, start, pgoff, bias);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Why ADDR in PID cannot be read: EPERM (no ptrace rights), ESRCH (gone), else EFAULT. */
static int unreadable_why(int32_t pid, uint64_t addr)
{
	char c;
	struct iovec local = { &c, 1 }, remote = { (void *)(uintptr_t)addr, 1 };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1 ? EFAULT : errno;
}

/* Sets up PP's reader from the first interpreter file PID maps, if any. */
static void discover(struct sym_python *py, struct pyproc *pp)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 256], err[256] = "";
	struct py_proc_opts o = { 0 };
	struct pyfile *f = NULL;
	uint64_t start = 0, pgoff = 0, bias = 0;
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pp->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pp->pid);
	fp = fopen(path, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		struct proc_map m;

		if (!proc_maps_parse(line, &m) || m.path[0] != '/' || !candidate(m.path, exe))
			continue;
		f = probe(py, pp->pid, m.path, m.maj, m.min, m.ino);
		if (f->found) {
			start = m.start;
			pgoff = m.pgoff;
			break;
		}
		f = NULL;
	}
	fclose(fp);
	if (!f)
		return;
	pp->found = true;
	if (!load_bias(pp->pid, f->path, start, pgoff, &bias)) {
		pp->interp = add_interp(py, f->path, f->probe.version, NULL);
		pp->open_errno = EFAULT;
		return;
	}
	if (f->probe.eval.addr) {
		pp->eval_lo = f->probe.eval.addr + bias;
		pp->eval_hi = pp->eval_lo + (f->probe.eval.size ? f->probe.eval.size : 1);
	}
	py_proc_opts_from_probe(&o, &f->probe, bias);
	o.pid = pp->pid;
	pp->reader = py_proc_new(&o, err, sizeof(err));
	if (pp->reader) {
		pp->interp = add_interp(py, f->path, py_proc_version(pp->reader), NULL);
		return;
	}
	pp->open_errno = errno;
	if (errno == ENOTSUP || errno == EPROTO) {
		/* the interpreter's own fault: every process running it is the same */
		pp->interp = add_interp(py, f->path, f->probe.version, err);
		return;
	}
	/* this process only: its memory is not ours to read (ptrace rights), or it is going */
	pp->interp = add_interp(py, f->path, f->probe.version, NULL);
	pp->open_errno = unreadable_why(pp->pid, o.runtime);
}

/* The process entry for PID, looked at on first sight and after an exec or a new mapping. */
static struct pyproc *proc_of(struct sym_python *py, int32_t pid)
{
	uint64_t h = hash_u64((uint64_t)(uint32_t)pid);
	size_t pos = 0;
	uint32_t id, latest = IDX_NONE;
	struct pyproc *pp;

	while ((id = idx_next(&py->proc_idx, h, &pos)) != IDX_NONE)
		if (py->procs[id].pid == pid && (latest == IDX_NONE || id > latest))
			latest = id;
	if (latest != IDX_NONE) {
		pp = &py->procs[latest];
		if (!pp->dead && !(pp->dirty && !pp->found))
			return pp;
		if (!pp->dead) {
			/* no interpreter yet, and a file was mapped since: look again, in place */
			pp->dirty = false;
			discover(py, pp);
			return pp;
		}
	}
	ALLOC_GROW(py->procs, py->nr_procs + 1, py->alloc_procs);
	id = (uint32_t)py->nr_procs++;
	pp = &py->procs[id];
	memset(pp, 0, sizeof(*pp));
	pp->pid = pid;
	idx_insert(&py->proc_idx, h, id);
	discover(py, pp);
	return pp;
}

static void release(struct pyproc *pp)
{
	py_proc_free(pp->reader);
	pp->reader = NULL;
	free(pp->memo);
	pp->memo = NULL;
	pp->nr_memo = pp->alloc_memo = 0;
	idx_release(&pp->memo_idx);
	memset(pp->memo_hot, 0, sizeof(pp->memo_hot));
}

/* ---- the hook ---- */

/* CPU time of the calling thread: what a read costs, however the thread was scheduled. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t hook_sample(void *arg, int32_t pid, int32_t tid, const struct sampler_ustack *sus, void *buf,
			  size_t cap)
{
	struct sym_python *py = arg;
	struct pyproc *pp = proc_of(py, pid);
	struct pyx_hdr hdr = { 0 };
	struct pyx_frame *out = (struct pyx_frame *)((char *)buf + sizeof(hdr));
	enum py_status st = PY_STACK_UNSUPPORTED;
	const struct py_ustack us = { sus ? sus->sp : 0, sus ? sus->data : NULL, sus ? sus->size : 0 };
	bool moved = false;
	size_t max, n = 0;
	uint64_t t0;

	if (!pp->found || cap < sizeof(hdr))
		return 0;
	max = (cap - sizeof(hdr)) / sizeof(*out);
	if (max > PY_MAX_DEPTH)
		max = PY_MAX_DEPTH;
	/*
	 * A running thread's chain can change under the walk (the perf
	 * backend reads without stopping it): a torn or unreadable read is
	 * tried again at once, which almost always gets a whole stack.
	 */
	t0 = pp->reader && py->debug ? thread_cpu_ns() : 0;
	for (int tries = 0; pp->reader && tries < 3; tries++) {
		n = py_read_stack_at(pp->reader, tid, sus ? &us : NULL, py->frames, max, &st,
				     py->debug ? &moved : NULL);
		if (st != PY_STACK_TORN && st != PY_STACK_UNREADABLE)
			break;
	}
	if (pp->reader) {
		py->reads++;
		py->moved += moved;
		if (py->debug)
			py->read_ns += thread_cpu_ns() - t0;
	}
	hdr.interp = pp->interp;
	hdr.status = !pp->reader && pp->open_errno == EPERM ? PYX_NOT_PERMITTED :
		     !pp->reader && pp->open_errno == EFAULT ? PY_STACK_UNREADABLE : st;
	/* the perf backend reads a few ms late: the process may have ended meanwhile */
	if (hdr.status == PY_STACK_UNREADABLE && !n && unreadable_why(pid, pp->eval_lo) == ESRCH)
		hdr.status = PYX_GONE;
	hdr.nr = (uint32_t)n;
	hdr.eval_lo = pp->eval_lo;
	hdr.eval_hi = pp->eval_hi;
	for (size_t i = 0; i < n; i++) {
		struct pyx_frame fr = { func_of(py, pp, &py->frames[i]), py->frames[i].line,
					py->frames[i].flags };

		memcpy(&out[i], &fr, sizeof(fr));
	}
	memcpy(buf, &hdr, sizeof(hdr));
	return sizeof(hdr) + n * sizeof(*out);
}

/* Whether some process has an interpreter to read: until then the sampler need not hurry. */
static bool hook_eager(void *arg)
{
	const struct sym_python *py = arg;

	return py->nr_interps > 0;
}

static void hook_task(void *arg, enum sampler_task_event ev, int32_t pid)
{
	struct sym_python *py = arg;
	uint64_t h = hash_u64((uint64_t)(uint32_t)pid);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&py->proc_idx, h, &pos)) != IDX_NONE) {
		struct pyproc *pp = &py->procs[id];

		if (pp->pid != pid || pp->dead)
			continue;
		if (ev == SAMPLER_TASK_MMAP) {
			pp->dirty = true;
			continue;
		}
		pp->dead = true;
		release(pp);
	}
}

/* ---- the interface ---- */

struct sym_python *sym_python_new(void)
{
	struct sym_python *py = xcalloc(1, sizeof(*py));

	py->hook.sample = hook_sample;
	py->hook.task = hook_task;
	py->hook.eager = hook_eager;
	py->hook.arg = py;
	py->hook.cap = PYX_CAP;
	py->debug = getenv("PROFTOOL_DEBUG_PYTHON") != NULL;
	py->frames = xmalloc(PY_MAX_DEPTH * sizeof(*py->frames));
	return py;
}

void sym_python_free(struct sym_python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->nr_procs; i++)
		release(&py->procs[i]);
	free(py->procs);
	idx_release(&py->proc_idx);
	for (size_t i = 0; i < py->nr_files; i++)
		free(py->files[i].path);
	free(py->files);
	for (size_t i = 0; i < py->nr_interps; i++) {
		free(py->interps[i].path);
		free(py->interps[i].unsupported);
	}
	free(py->interps);
	for (size_t i = 0; i < py->nr_funcs; i++) {
		free(py->funcs[i].qualname);
		free(py->funcs[i].filename);
	}
	free(py->funcs);
	idx_release(&py->func_idx);
	free(py->frames);
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

void sym_python_func(const struct sym_python *py, uint32_t id, const char **qualname,
		     const char **filename, uint32_t *firstlineno)
{
	const struct pyfunc *f = id < py->nr_funcs ? &py->funcs[id] : NULL;

	*qualname = f ? f->qualname : "[unknown]";
	*filename = f ? f->filename : NULL;
	*firstlineno = f ? f->firstlineno : 0;
}

size_t sym_python_nr_interps(const struct sym_python *py)
{
	return py ? py->nr_interps : 0;
}

const struct sym_python_interp *sym_python_interp(const struct sym_python *py, uint32_t id)
{
	return py && id < py->nr_interps ? &py->interps[id] : NULL;
}

void sym_python_read_cost(const struct sym_python *py, uint64_t *reads, uint64_t *ns, uint64_t *moved)
{
	*moved = py ? py->moved : 0;
	*reads = py ? py->reads : 0;
	*ns = py ? py->read_ns : 0;
}
