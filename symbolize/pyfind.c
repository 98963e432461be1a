// SPDX-License-Identifier: MIT
/*
 * Finding CPython in a sampled process, for the Python sampling hook
 * (pysample.c): the table of processes by pid, the files probed for
 * _PyRuntime (each once, by device and inode, through the process's root:
 * it may be in a container), and the interpreters found.
 */
#include "pysample_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"
#include "symbolize.h"

/* ---- interpreters ---- */

/* The interpreter's id (under py->lock). */
static uint32_t add_interp(struct sym_python *py, const char *path, uint32_t version,
			   const char *unsupported)
{
	struct sym_python_interp *in;

	for (size_t i = 0; i < py->nr_interps; i++) {
		in = py->interps[i];
		if (!strcmp(in->path, path) && in->version == version &&
		    !in->unsupported == !unsupported)
			return (uint32_t)i;
	}
	ALLOC_GROW(py->interps, py->nr_interps + 1, py->alloc_interps);
	in = xmalloc(sizeof(*in));
	*in = (struct sym_python_interp){ xstrdup(path), version, xstrdup_or_null(unsupported) };
	py->interps[py->nr_interps] = in;
	/* hook_eager reads the count without the lock */
	__atomic_store_n(&py->nr_interps, py->nr_interps + 1, __ATOMIC_RELEASE);
	return (uint32_t)py->nr_interps - 1;
}

/* The same, taking py->lock (a reader holding a process's lock may, the other way round never). */
static uint32_t add_interp_locked(struct sym_python *py, const char *path, uint32_t version,
				  const char *unsupported)
{
	uint32_t id;

	pthread_mutex_lock(&py->lock);
	id = add_interp(py, path, version, unsupported);
	pthread_mutex_unlock(&py->lock);
	return id;
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

/* The probe of the file at PATH in PID's file system, once per file (under py->lock). */
static struct pyfile *probe(struct sym_python *py, int32_t pid, const char *path, uint32_t maj,
			    uint32_t min, uint64_t ino)
{
	struct pyfile *f;
	int fd;

	for (size_t i = 0; i < py->nr_files; i++) {
		f = py->files[i];
		if (f->ino == ino && f->maj == maj && f->min == min && !strcmp(f->path, path))
			return f;
	}
	ALLOC_GROW(py->files, py->nr_files + 1, py->alloc_files);
	f = xcalloc(1, sizeof(*f));
	py->files[py->nr_files++] = f;
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
int pyproc_unreadable_why(int32_t pid, uint64_t addr)
{
	char c;
	struct iovec local = { &c, 1 }, remote = { (void *)(uintptr_t)addr, 1 };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1 ? EFAULT : errno;
}

/* PID's parent, from /proc; 0 when unknown. */
static int32_t ppid_of(int32_t pid)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, 0, buf, sizeof(buf));
	int ppid = 0;

	/* state ppid */
	return f && sscanf(f, "%*c %d", &ppid) == 1 && ppid > 0 ? ppid : 0;
}

/* Sets up PP's reader from the first interpreter file PID maps, if any (under PP's lock). */
void pyproc_discover(struct sym_python *py, struct pyproc *pp)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 256], err[256] = "";
	struct py_proc_opts o = { 0 };
	struct pyfile *f = NULL;
	uint64_t start = 0, pgoff = 0, bias = 0;
	bool known;
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pp->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pp->pid);
	fp = fopen(path, "re");
	if (!fp) {
		/* gone (ENOENT): nothing to say of it, to the capture either */
		pp->open_errno = errno;
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		struct proc_map m;

		if (!proc_maps_parse(line, &m) || m.path[0] != '/' || !candidate(m.path, exe))
			continue;
		pthread_mutex_lock(&py->lock);
		f = probe(py, pp->pid, m.path, m.maj, m.min, m.ino);
		/* a found file's entry is never changed again: read without the lock below */
		if (!f->found)
			f = NULL;
		pthread_mutex_unlock(&py->lock);
		if (f) {
			start = m.start;
			pgoff = m.pgoff;
			break;
		}
	}
	fclose(fp);
	if (!f)
		return;
	__atomic_store_n(&pp->found, true, __ATOMIC_RELAXED);
	pthread_mutex_lock(&py->lock);
	known = f->bias_known && f->bias_start == start && f->bias_pgoff == pgoff;
	bias = f->bias;
	pthread_mutex_unlock(&py->lock);
	if (!known && !load_bias(pp->pid, f->path, start, pgoff, &bias)) {
		pp->interp = add_interp_locked(py, f->path, f->probe.version, NULL);
		pp->open_errno = EFAULT;
		return;
	}
	if (!known) {
		pthread_mutex_lock(&py->lock);
		f->bias_known = true;
		f->bias_start = start;
		f->bias_pgoff = pgoff;
		f->bias = bias;
		pthread_mutex_unlock(&py->lock);
	}
	if (f->probe.eval.addr) {
		pp->eval_lo = f->probe.eval.addr + bias;
		pp->eval_hi = pp->eval_lo + (f->probe.eval.size ? f->probe.eval.size : 1);
	}
	py_proc_opts_from_probe(&o, &f->probe, bias);
	o.pid = pp->pid;
	pp->reader = py_proc_new(&o, err, sizeof(err));
	if (pp->reader) {
		pp->interp = add_interp_locked(py, f->path, py_proc_version(pp->reader), NULL);
		pp->ppid = ppid_of(pp->pid);
		pp->seed_pending = pp->ppid > 0;
		return;
	}
	pp->open_errno = errno;
	if (errno == ENOTSUP || errno == EPROTO) {
		/* the interpreter's own fault: every process running it is the same */
		pp->interp = add_interp_locked(py, f->path, f->probe.version, err);
		return;
	}
	/* this process only: its memory is not ours to read (ptrace rights), or it is going */
	pp->interp = add_interp_locked(py, f->path, f->probe.version, NULL);
	pp->open_errno = pyproc_unreadable_why(pp->pid, o.runtime);
}

/*
 * The process entry for PID (under py->lock), to be looked at (LOOK) on
 * first sight and after an exec or a new mapping, by whoever takes its
 * lock next.
 */
/* The latest incarnation of PID, or NULL (under py->lock). */
static struct pyproc *pyproc_latest(struct sym_python *py, int32_t pid)
{
	uint64_t h = hash_u64((uint64_t)(uint32_t)pid);
	size_t pos = 0;
	uint32_t id, latest = IDX_NONE;

	while ((id = idx_next(&py->proc_idx, h, &pos)) != IDX_NONE)
		if (py->procs[id]->pid == pid && (latest == IDX_NONE || id > latest))
			latest = id;
	return latest == IDX_NONE ? NULL : py->procs[latest];
}

struct pyproc *pyproc_of(struct sym_python *py, int32_t pid)
{
	uint64_t h = hash_u64((uint64_t)(uint32_t)pid);
	struct pyproc *pp = pyproc_latest(py, pid);
	uint32_t id;

	if (pp) {
		if (!pp->dead && pp->dirty && !__atomic_load_n(&pp->found, __ATOMIC_RELAXED)) {
			/* no interpreter yet, and a file was mapped since: look again, in place */
			pp->dirty = false;
			__atomic_store_n(&pp->look, true, __ATOMIC_RELAXED);
		}
		if (!pp->dead)
			return pp;
	}
	ALLOC_GROW(py->procs, py->nr_procs + 1, py->alloc_procs);
	id = (uint32_t)py->nr_procs++;
	pp = xcalloc(1, sizeof(*pp));
	py->procs[id] = pp;
	pp->pid = pid;
	pp->look = true;
	pthread_mutex_init(&pp->lock, NULL);
	idx_insert(&py->proc_idx, h, id);
	return pp;
}

/* The latest incarnation of PID that has not ended, or NULL (under py->lock). */
static struct pyproc *pyproc_live(struct sym_python *py, int32_t pid)
{
	struct pyproc *pp = pyproc_latest(py, pid);

	return pp && !pp->dead ? pp : NULL;
}

void pyproc_retire(struct sym_python *py, struct pyproc *pp, bool py_locked)
{
	struct pyproc *parent;

	if (pp->reader && pp->ppid > 0) {
		if (!py_locked)
			pthread_mutex_lock(&py->lock);
		/* only for a parent running an interpreter: no one else would take it */
		parent = pyproc_live(py, pp->ppid);
		if (parent && parent != pp && __atomic_load_n(&parent->found, __ATOMIC_RELAXED)) {
			size_t nr = py->nr_orphans;

			/* the oldest goes first: a parent that never samples again holds on to none for long */
			if (nr == MAX_ORPHANS) {
				py_proc_free(py->orphans[0].reader);
				memmove(py->orphans, py->orphans + 1, --nr * sizeof(*py->orphans));
			}
			ALLOC_GROW(py->orphans, nr + 1, py->alloc_orphans);
			py_proc_trim(pp->reader);
			py->orphans[nr] = (struct pyorphan){ pp->ppid, pp->reader };
			__atomic_store_n(&py->nr_orphans, nr + 1, __ATOMIC_RELAXED);
			pp->reader = NULL;
		}
		if (!py_locked)
			pthread_mutex_unlock(&py->lock);
	}
	pyproc_release(pp);
}

/* The readers of PPID's children that exited, out of the list into MINE; how many (under py->lock). */
static size_t orphans_take(struct sym_python *py, int32_t ppid, struct py_proc *mine[MAX_ORPHANS])
{
	size_t n = 0, kept = 0;

	for (size_t i = 0; i < py->nr_orphans; i++) {
		if (py->orphans[i].ppid == ppid)
			mine[n++] = py->orphans[i].reader;
		else
			py->orphans[kept++] = py->orphans[i];
	}
	__atomic_store_n(&py->nr_orphans, kept, __ATOMIC_RELAXED);
	return n;
}

void pyproc_orphans_drop(struct sym_python *py, int32_t ppid)
{
	struct py_proc *mine[MAX_ORPHANS];
	size_t n = orphans_take(py, ppid, mine);

	for (size_t i = 0; i < n; i++)
		py_proc_free(mine[i]);
}

void pyproc_adopt(struct sym_python *py, struct pyproc *pp)
{
	struct py_proc *mine[MAX_ORPHANS];
	size_t n;

	if (!__atomic_load_n(&py->nr_orphans, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&py->lock);
	n = orphans_take(py, pp->pid, mine);
	pthread_mutex_unlock(&py->lock);
	/* copied without py->lock: the children's readers are no one else's now */
	for (size_t i = 0; i < n; i++) {
		py_proc_adopt(pp->reader, mine[i]);
		py_proc_free(mine[i]);
	}
}

/* PP's memo of functions (empty) as a copy of FROM's, whose names PP's reader shares (under both locks). */
static void memo_copy(struct pyproc *pp, const struct pyproc *from)
{
	if (!from->nr_memo)
		return;
	free(pp->memo);
	pp->memo = xmalloc(st_mult(from->nr_memo, sizeof(*pp->memo)));
	memcpy(pp->memo, from->memo, from->nr_memo * sizeof(*pp->memo));
	pp->nr_memo = pp->alloc_memo = from->nr_memo;
	idx_release(&pp->memo_idx);
	idx_copy(&pp->memo_idx, &from->memo_idx);
	memcpy(pp->memo_hot, from->memo_hot, sizeof(pp->memo_hot));
}

void pyproc_seed(struct sym_python *py, struct pyproc *pp)
{
	struct pyproc *parent;

	pthread_mutex_lock(&py->lock);
	parent = pyproc_live(py, pp->ppid);
	pthread_mutex_unlock(&py->lock);
	if (!parent || parent == pp) {
		pp->seed_pending = false;
		return;
	}
	/* not waited for: the parent's own read goes first (this one's next sample tries again) */
	if (pthread_mutex_trylock(&parent->lock))
		return;
	/* the parent not looked at yet (its first sample is still to come): later */
	if (!parent->reader && __atomic_load_n(&parent->look, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&parent->lock);
		return;
	}
	if (parent->reader) {
		/* what its children that exited knew first: this one's siblings, forked from the same */
		pyproc_adopt(py, parent);
		/* its names the parent's, pointer for pointer: so is the parent's memo of functions */
		if (py_proc_seed(pp->reader, parent->reader) && py_proc_seeded_whole(pp->reader) && !pp->nr_memo)
			memo_copy(pp, parent);
	}
	pthread_mutex_unlock(&parent->lock);
	pp->seed_pending = false;
}

/* Frees what PP's reads need, once it is gone (under its lock). */
void pyproc_release(struct pyproc *pp)
{
	py_proc_free(pp->reader);
	pp->reader = NULL;
	free(pp->memo);
	pp->memo = NULL;
	pp->nr_memo = pp->alloc_memo = 0;
	idx_release(&pp->memo_idx);
	memset(pp->memo_hot, 0, sizeof(pp->memo_hot));
	free(pp->frames);
	pp->frames = NULL;
}
