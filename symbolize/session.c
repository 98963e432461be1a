// SPDX-License-Identifier: MIT
/* Following processes, threads and address spaces through a recording, and interning raw stacks. */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"

/* Special modules for addresses that have no file behind them. */
enum {
	MOD_UNKNOWN,    /* no mapping covers the address */
	MOD_KERNEL,
	MOD_STOP,       /* root pseudo-frame: why unwinding stopped (off = reason << 32 | module) */
	MOD_FIRST_REAL,
};

struct module {
	char *path;             /* as the kernel reported it */
	char *name;             /* shown in reports: basename, "[vdso]", "[anon]"... */
	uint32_t maj, min;
	uint64_t ino;
	int fd;                 /* opened when first mapped; -1 if not a file or unopenable */
	bool is_file;           /* an ELF image to symbolize (files, and [vdso]) */
	int32_t pid;            /* anonymous memory belongs to one process; 0 for files */
	struct sym_cfi *cfi;    /* unwind tables, read at the first unwind through the file */
	bool cfi_tried;
};

struct map {
	uint64_t start, end, pgoff;
	uint32_t module;
	uint8_t bias_state;     /* enum bias_state: the load bias is computed when first needed */
	uint64_t bias;
};

enum bias_state { BIAS_UNKNOWN, BIAS_OK, BIAS_NONE };

/* An address space, shared by the threads of one process incarnation. */
struct aspace {
	struct map *maps;       /* sorted by start, non-overlapping */
	size_t nr, alloc;
};

/* One incarnation of a process: a new one starts at fork and at exec. */
struct proc {
	int32_t pid;
	uint32_t out;           /* index in the profile's processes */
	struct aspace as;
};

/* An address inside a module: a file offset, or an absolute address for special modules. */
struct rawframe {
	uint32_t module;
	uint64_t off;
};

struct rawnode {
	uint32_t parent;        /* PROFILE_NONE at the root */
	uint32_t frame;
};

static const char *const stop_reasons[SYM_STOP_NR] = {
	[SYM_STOP_STACK_COPY] = "stack copy too small",
	[SYM_STOP_MEMORY] = "unreadable memory",
	[SYM_STOP_NO_CFI] = "no CFI",
	[SYM_STOP_NO_MAPPING] = "unknown mapping",
	[SYM_STOP_DEPTH] = "too many frames",
};

struct sym_session {
	struct sym_opts opts;
	struct profile *prof;   /* processes, threads and samples go straight in */

	struct module *mods;
	size_t nr_mods, alloc_mods;
	struct idx mod_idx;

	struct proc *procs;     /* parallel to prof->procs */
	size_t nr_procs, alloc_procs;
	struct idx pid_idx;     /* pid -> proc, latest incarnation has the highest id */
	struct idx tid_idx;     /* tid -> prof->threads index, likewise */

	struct rawframe *frames;
	size_t nr_frames, alloc_frames;
	struct idx frame_idx;
	struct rawnode *nodes;
	size_t nr_nodes, alloc_nodes;
	struct idx node_idx;

	uint64_t *pcs;          /* scratch: one unwound stack */
};

struct sym_session *sym_session_new(const struct sym_opts *opts)
{
	struct sym_session *ss = xcalloc(1, sizeof(*ss));
	static const char *const special[] = { "[unknown]", "[kernel]", "[stop]" };

	ss->opts = *opts;
	ss->prof = profile_new();
	/* without a spill file samples stay in memory: slower to grow, nothing lost */
	if (opts->spill_dir && opts->spill_chunk)
		(void)profile_spill_start(ss->prof, opts->spill_dir, opts->spill_chunk);
	for (size_t i = 0; i < ARRAY_SIZE(special); i++) {
		ALLOC_GROW(ss->mods, ss->nr_mods + 1, ss->alloc_mods);
		memset(&ss->mods[ss->nr_mods], 0, sizeof(*ss->mods));
		ss->mods[ss->nr_mods].path = xstrdup(special[i]);
		ss->mods[ss->nr_mods].name = xstrdup(special[i]);
		ss->mods[ss->nr_mods].fd = -1;
		ss->nr_mods++;
	}
	return ss;
}

void sym_session_free(struct sym_session *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->nr_mods; i++) {
		free(ss->mods[i].path);
		free(ss->mods[i].name);
		if (ss->mods[i].fd >= 0)
			close(ss->mods[i].fd);
		sym_cfi_free(ss->mods[i].cfi);
	}
	for (size_t i = 0; i < ss->nr_procs; i++)
		free(ss->procs[i].as.maps);
	free(ss->pcs);
	free(ss->mods);
	free(ss->procs);
	free(ss->frames);
	free(ss->nodes);
	idx_release(&ss->mod_idx);
	idx_release(&ss->pid_idx);
	idx_release(&ss->tid_idx);
	idx_release(&ss->frame_idx);
	idx_release(&ss->node_idx);
	profile_free(ss->prof);
	free(ss);
}

/* ---- processes and threads ---- */

static uint32_t find_proc(struct sym_session *ss, int32_t pid)
{
	uint64_t h = hash_u64((uint32_t)pid);
	uint32_t id, best = IDX_NONE;
	size_t pos = 0;

	while ((id = idx_next(&ss->pid_idx, h, &pos)) != IDX_NONE)
		if (ss->procs[id].pid == pid && (best == IDX_NONE || id > best))
			best = id;
	return best;
}

static uint32_t find_thread(struct sym_session *ss, int32_t tid)
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
 * A new process incarnation; a forked one starts with a copy of the address
 * space of FROM (a proc id, IDX_NONE for none). An id, not a pointer: growing
 * the array moves the parent.
 */
static uint32_t new_proc(struct sym_session *ss, int32_t pid, int32_t ppid, const char *comm,
			 uint32_t from)
{
	char *cmdline = read_cmdline(pid);
	uint32_t out = profile_add_process(ss->prof, pid, ppid, comm, cmdline);
	const struct aspace *copy;
	struct proc *pr;

	free(cmdline);
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
	}
	idx_insert(&ss->pid_idx, hash_u64((uint32_t)pid), ss->nr_procs);
	return ss->nr_procs++;
}

static uint32_t new_thread(struct sym_session *ss, int32_t tid, uint32_t proc, const char *comm)
{
	uint32_t t = profile_add_thread(ss->prof, tid, ss->procs[proc].out, comm);

	idx_insert(&ss->tid_idx, hash_u64((uint32_t)tid), t);
	return t;
}

/* Returns the thread for TID in process PID, creating both on first sight. */
static uint32_t get_thread(struct sym_session *ss, int32_t pid, int32_t tid, const char *comm)
{
	uint32_t t = find_thread(ss, tid), proc;

	if (t != IDX_NONE && ss->prof->procs[ss->prof->threads[t].process].pid == pid)
		return t;
	proc = find_proc(ss, pid);
	if (proc == IDX_NONE)
		proc = new_proc(ss, pid, 0, comm, IDX_NONE);
	return new_thread(ss, tid, proc, comm ? comm : ss->prof->procs[ss->procs[proc].out].comm);
}

static struct proc *proc_of_thread(struct sym_session *ss, uint32_t t)
{
	uint32_t out = ss->prof->threads[t].process;
	uint32_t proc = find_proc(ss, ss->prof->procs[out].pid);

	return proc == IDX_NONE ? NULL : &ss->procs[proc];
}

static void set_comm(char **dst, const char *comm)
{
	free(*dst);
	*dst = xstrdup(comm);
}

static void on_comm(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t t = find_thread(ss, r->tid);

	if (r->comm.exec) {
		/* a new program: new process incarnation and address space, same pid */
		uint32_t old = find_proc(ss, r->pid);
		int32_t ppid = old == IDX_NONE ? 0 : ss->prof->procs[ss->procs[old].out].ppid;
		uint32_t proc = new_proc(ss, r->pid, ppid, r->comm.comm, IDX_NONE);

		new_thread(ss, r->tid, proc, r->comm.comm);
		return;
	}
	if (t == IDX_NONE) {
		get_thread(ss, r->pid, r->tid, r->comm.comm);
		return;
	}
	set_comm(&ss->prof->threads[t].comm, r->comm.comm);
	/* the main thread's name is the process's name */
	if (r->pid == r->tid)
		set_comm(&ss->prof->procs[ss->prof->threads[t].process].comm, r->comm.comm);
}

static void on_fork(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t parent_t = find_thread(ss, r->fork.ptid);
	const char *comm = parent_t == IDX_NONE ? NULL : ss->prof->threads[parent_t].comm;
	uint32_t proc;

	if (r->pid == r->fork.ppid) {
		/* a new thread: it inherits its creator's name */
		proc = find_proc(ss, r->pid);
		if (proc == IDX_NONE)
			proc = new_proc(ss, r->pid, 0, comm, IDX_NONE);
		new_thread(ss, r->tid, proc, comm);
		return;
	}
	/*
	 * a new process: a copy of its parent's address space; what it knows
	 * of each file (CFI, symbols) is per file and shared already
	 */
	proc = new_proc(ss, r->pid, r->fork.ppid, comm, find_proc(ss, r->fork.ppid));
	new_thread(ss, r->tid, proc, comm);
}

/* ---- address spaces ---- */

static bool is_file_path(const char *path)
{
	return path[0] == '/' && strncmp(path, "//anon", 6) != 0;
}

static char *display_name(const char *path)
{
	const char *slash;

	if (!path[0] || !strncmp(path, "//anon", 6) || !strncmp(path, "/dev/zero", 9) ||
	    !strncmp(path, "/anon_hugepage", 14) || !strncmp(path, "/memfd:", 7))
		return xstrdup(!strncmp(path, "/memfd:", 7) ? path + 1 : "[anon]");
	if (path[0] == '[')
		return xstrdup(path);
	slash = strrchr(path, '/');
	return xstrdup(slash ? slash + 1 : path);
}

/*
 * Opens a mapped file now, while it is certain to exist; a file deleted
 * since is still reachable through /proc/PID/map_files.
 */
static int open_module(const struct module *m, int32_t pid, uint64_t start, uint64_t end)
{
	struct stat st;
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && (!m->ino || st.st_ino == m->ino))
		return fd;
	if (fd >= 0)
		close(fd);
	if (pid > 0) {
		char mf[128];

		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
		fd = open(mf, O_RDONLY | O_CLOEXEC);
	}
	return fd;
}

/*
 * The kernel's vDSO image, copied from our own address space into a memfd:
 * every process on this kernel maps the same one, so its symbols and CFI
 * serve the targets' [vdso] frames.
 */
static int vdso_image_fd(void)
{
	const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	size_t size;
	int fd;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	/* the section headers come last in the image */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size < sizeof(*eh) || size > (1u << 20))
		return -1;
	fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, base, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint32_t get_module(struct sym_session *ss, const char *path, uint32_t maj, uint32_t min,
			   uint64_t ino, int32_t pid, uint64_t start, uint64_t end)
{
	bool file = is_file_path(path);
	int32_t owner = file || !strcmp(path, "[vdso]") ? 0 : pid;
	uint64_t h = hash_combine(hash_combine(hash_str(path, 7), (uint32_t)owner),
				  hash_combine(((uint64_t)maj << 32) | min, ino));
	struct module *m;
	uint32_t id;
	size_t pos = 0;

	while ((id = idx_next(&ss->mod_idx, h, &pos)) != IDX_NONE) {
		m = &ss->mods[id];
		if (m->maj == maj && m->min == min && m->ino == ino && m->pid == owner &&
		    !strcmp(m->path, path))
			return id;
	}
	ALLOC_GROW(ss->mods, ss->nr_mods + 1, ss->alloc_mods);
	id = ss->nr_mods++;
	m = &ss->mods[id];
	memset(m, 0, sizeof(*m));
	m->path = xstrdup(path);
	m->name = display_name(path);
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	m->pid = owner;
	m->is_file = file;
	m->fd = file ? open_module(m, pid, start, end) : -1;
	if (!strcmp(path, "[vdso]")) {
		m->fd = vdso_image_fd();
		m->is_file = m->fd >= 0;
	}
	idx_insert(&ss->mod_idx, h, id);
	return id;
}

/*
 * Inserts a mapping, trimming or splitting the ones it overlaps, as mmap(2)
 * does. Returns true when an existing mapping was cut or replaced.
 */
static bool aspace_insert(struct aspace *as, const struct map *nm)
{
	bool cut = false;

	struct map *out = NULL;
	size_t nr = 0, alloc = 0;
	bool placed = false;

	for (size_t i = 0; i < as->nr; i++) {
		struct map m = as->maps[i];

		if (!placed && m.start >= nm->start) {
			ALLOC_GROW(out, nr + 1, alloc);
			out[nr++] = *nm;
			placed = true;
		}
		if (m.end <= nm->start || m.start >= nm->end) {
			ALLOC_GROW(out, nr + 1, alloc);
			out[nr++] = m;
			continue;
		}
		cut = true;
		if (m.start < nm->start) {
			struct map left = m;

			left.end = nm->start;
			ALLOC_GROW(out, nr + 1, alloc);
			out[nr++] = left;
			if (!placed) {
				ALLOC_GROW(out, nr + 1, alloc);
				out[nr++] = *nm;
				placed = true;
			}
		}
		if (m.end > nm->end) {
			struct map right = m;

			right.pgoff += nm->end - m.start;
			right.start = nm->end;
			if (!placed) {
				ALLOC_GROW(out, nr + 1, alloc);
				out[nr++] = *nm;
				placed = true;
			}
			ALLOC_GROW(out, nr + 1, alloc);
			out[nr++] = right;
		}
	}
	if (!placed) {
		ALLOC_GROW(out, nr + 1, alloc);
		out[nr++] = *nm;
	}
	free(as->maps);
	as->maps = out;
	as->nr = nr;
	as->alloc = alloc;
	return cut;
}

static const struct map *aspace_find(const struct aspace *as, uint64_t addr)
{
	size_t lo = 0, hi = as->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < as->maps[mid].start)
			hi = mid;
		else if (addr >= as->maps[mid].end)
			lo = mid + 1;
		else
			return &as->maps[mid];
	}
	return NULL;
}

static void on_mmap(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t proc = find_proc(ss, r->pid);
	struct map m;

	if (!(r->mmap.prot & 4) || !r->mmap.len)  /* PROT_EXEC only: code, never data */
		return;
	if (proc == IDX_NONE) {
		get_thread(ss, r->pid, r->tid, NULL);
		proc = find_proc(ss, r->pid);
	}
	m.start = r->mmap.start;
	m.end = r->mmap.start + r->mmap.len;
	m.pgoff = r->mmap.pgoff;
	m.module = get_module(ss, r->mmap.filename, r->mmap.maj, r->mmap.min, r->mmap.ino,
			      r->pid, m.start, m.end);
	m.bias_state = BIAS_UNKNOWN;
	aspace_insert(&ss->procs[proc].as, &m);
}

/* ---- stacks ---- */

static uint32_t intern_frame(struct sym_session *ss, uint32_t module, uint64_t off)
{
	uint64_t h = hash_combine(hash_u64(module), off);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&ss->frame_idx, h, &pos)) != IDX_NONE)
		if (ss->frames[id].module == module && ss->frames[id].off == off)
			return id;
	ALLOC_GROW(ss->frames, ss->nr_frames + 1, ss->alloc_frames);
	id = ss->nr_frames++;
	ss->frames[id].module = module;
	ss->frames[id].off = off;
	idx_insert(&ss->frame_idx, h, id);
	return id;
}

static uint32_t intern_node(struct sym_session *ss, uint32_t parent, uint32_t frame)
{
	uint64_t h = hash_combine(hash_u64(parent), frame);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&ss->node_idx, h, &pos)) != IDX_NONE)
		if (ss->nodes[id].parent == parent && ss->nodes[id].frame == frame)
			return id;
	ALLOC_GROW(ss->nodes, ss->nr_nodes + 1, ss->alloc_nodes);
	id = ss->nr_nodes++;
	ss->nodes[id].parent = parent;
	ss->nodes[id].frame = frame;
	idx_insert(&ss->node_idx, h, id);
	return id;
}

static uint32_t user_frame(struct sym_session *ss, const struct aspace *as, uint64_t addr)
{
	const struct map *m = as ? aspace_find(as, addr) : NULL;

	if (!m)
		return intern_frame(ss, MOD_UNKNOWN, 0);
	if (!ss->mods[m->module].is_file)
		return intern_frame(ss, m->module, addr);
	return intern_frame(ss, m->module, addr - m->start + m->pgoff);
}

/*
 * The unwinder's view of an address in PR: the file's CFI, read at its
 * first use and kept for every process that maps the file, and the
 * mapping's load bias, computed once per mapping.
 */
struct code_arg {
	struct sym_session *ss;
	struct proc *pr;
};

static void code_at(void *arg, uint64_t pc, struct sym_code *out)
{
	struct code_arg *a = arg;
	struct map *m = (struct map *)aspace_find(&a->pr->as, pc);
	struct module *mod = m ? &a->ss->mods[m->module] : NULL;

	out->cfi = NULL;
	out->bias = 0;
	out->module = UINT32_MAX;
	if (!mod || !mod->is_file)
		return;
	if (!mod->cfi_tried) {
		int fd = mod->fd >= 0 ? mod->fd : open(mod->path, O_RDONLY | O_CLOEXEC);

		mod->cfi_tried = true;
		mod->cfi = fd >= 0 ? sym_cfi_open(fd) : NULL;
		if (fd >= 0 && fd != mod->fd)
			close(fd);
	}
	if (!mod->cfi)
		return;
	if (m->bias_state == BIAS_UNKNOWN)
		m->bias_state = sym_cfi_bias(mod->cfi, m->start, m->pgoff, &m->bias) ? BIAS_OK : BIAS_NONE;
	if (m->bias_state != BIAS_OK)
		return;
	out->cfi = mod->cfi;
	out->bias = m->bias;
	out->module = m->module;
}

/* Finds the module of ADDR in PR's address space (for naming a stop reason). */
static uint32_t module_at(const struct proc *pr, uint64_t addr)
{
	const struct map *m = pr ? aspace_find(&pr->as, addr) : NULL;

	return m ? m->module : UINT32_MAX;
}

static void on_sample(struct sym_session *ss, const struct sampler_rec *r)
{
	const uint64_t *chain = r->sample.chain;
	uint32_t nk = r->sample.nr_kernel;
	uint32_t t = get_thread(ss, r->pid, r->tid, NULL);
	struct proc *pr = proc_of_thread(ss, t);
	uint32_t node = PROFILE_NONE, nr_user = 0;
	enum sym_stop stop = SYM_STOP_NONE;
	uint32_t stop_module = UINT32_MAX;
	const uint64_t *user;

	if (!ss->pcs)
		ss->pcs = xmalloc(SYM_MAX_FRAMES * sizeof(*ss->pcs));
	if (r->sample.regs && r->sample.stack && pr) {
		/* DWARF: unwind the copied stack now; the copy dies with this record */
		struct code_arg ca = { ss, pr };
		uint32_t mod = UINT32_MAX;

		nr_user = sym_unwind(code_at, &ca, r->sample.regs, r->sample.stack,
				     r->sample.stack_size, ss->pcs, &stop, &mod);
		if (stop == SYM_STOP_NO_CFI || stop == SYM_STOP_MEMORY)
			stop_module = module_at(pr, ss->pcs[nr_user - 1]);
		user = ss->pcs;
	} else {
		/* frame pointers: callers are return addresses, so look up the call (addr - 1) */
		nr_user = r->sample.nr_chain - nk;
		if (nr_user > SYM_MAX_FRAMES)
			nr_user = SYM_MAX_FRAMES;
		for (uint32_t i = 0; i < nr_user; i++)
			ss->pcs[i] = i ? chain[nk + i] - 1 : chain[nk + i];
		user = ss->pcs;
		if (r->sample.chain_full)
			stop = SYM_STOP_DEPTH;
		/*
		 * Past a function built without frame pointers (ld.so's, most
		 * libraries') the kernel's walk reads whatever the register held:
		 * a caller in no mapping is such garbage, and the stack ends there
		 * instead of growing [unknown] roots.
		 */
		for (uint32_t i = 1; pr && i < nr_user; i++) {
			if (module_at(pr, ss->pcs[i]) == UINT32_MAX) {
				nr_user = i;
				stop = SYM_STOP_NO_MAPPING;
				break;
			}
		}
	}
	if (!nr_user && !nk)
		return;
	/*
	 * Why the walk stopped rides along as a pseudo root frame; finishing
	 * decides, once names are known, whether the stack was complete anyway
	 * (ld.so's _start has no CFI and is still the root).
	 */
	if (stop != SYM_STOP_NONE)
		node = intern_node(ss, node, intern_frame(ss, MOD_STOP,
							  (uint64_t)stop << 32 | stop_module));
	for (uint32_t i = nr_user; i-- > 0;)
		node = intern_node(ss, node, user_frame(ss, pr ? &pr->as : NULL, user[i]));
	/* kernel frames, outermost first; callers are return addresses too */
	for (uint32_t i = nk; i-- > 0;)
		node = intern_node(ss, node, intern_frame(ss, MOD_KERNEL, i ? chain[i] - 1 : chain[i]));
	profile_add_sample(ss->prof, r->time > ss->opts.start_ns ? r->time - ss->opts.start_ns : 0,
			   t, node, ss->opts.weight_ns,
			   r->sample.state == SAMPLER_STATE_RUNNING ? PROFILE_STATE_ON_CPU :
			   r->sample.state == SAMPLER_STATE_WAITING ? PROFILE_STATE_OFF_CPU :
			   PROFILE_STATE_UNKNOWN);
}

int sym_session_add(struct sym_session *ss, const struct sampler_rec *r)
{
	switch (r->type) {
	case SAMPLER_REC_SAMPLE:
		on_sample(ss, r);
		break;
	case SAMPLER_REC_MMAP:
		on_mmap(ss, r);
		break;
	case SAMPLER_REC_COMM:
		on_comm(ss, r);
		break;
	case SAMPLER_REC_FORK:
		on_fork(ss, r);
		break;
	case SAMPLER_REC_LOST:
		ss->prof->meta.lost += r->lost.count;
		break;
	case SAMPLER_REC_EXIT:
		/* nothing per process outlives its address space, which the next exec or fork replaces */
		break;
	}
	return 0;
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
	proc = find_proc(ss, pid);
	if (proc != IDX_NONE) {
		new_thread(ss, tid, proc, comm);
		return 0;
	}
	proc = new_proc(ss, pid, 0, comm, IDX_NONE);
	new_thread(ss, tid, proc, comm);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8];
		int name_at = 0;
		struct map m;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &min, &ino, &name_at) < 7 || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		m.start = start;
		m.end = end;
		m.pgoff = pgoff;
		m.module = get_module(ss, name_at ? line + name_at : "", maj, min, ino, pid, start, end);
		m.bias_state = BIAS_UNKNOWN;
		aspace_insert(&ss->procs[proc].as, &m);
	}
	fclose(f);
	return 0;
}

void sym_session_counts(const struct sym_session *ss, struct sym_counts *c)
{
	c->samples = profile_nr_samples(ss->prof);
	c->processes = ss->prof->nr_procs;
	c->threads = ss->prof->nr_threads;
}

/* ---- finishing: resolve each distinct frame once ---- */

struct finish_arg {
	const uint32_t *final, *stop_of;
	uint64_t *stop_count;
};

/* A sample's raw node becomes its symbolized stack; stacks that stopped early are counted. */
static void finish_sample(struct profile_sample *s, void *arg)
{
	struct finish_arg *a = arg;
	uint32_t raw = s->stack;

	if (a->stop_of[raw] != PROFILE_NONE)
		a->stop_count[a->stop_of[raw]]++;
	s->stack = a->final[raw];
}

static int frame_by_module(const void *a, const void *b, void *arg)
{
	const struct rawframe *f = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (f[x].module != f[y].module)
		return f[x].module < f[y].module ? -1 : 1;
	return f[x].off < f[y].off ? -1 : f[x].off > f[y].off;
}

/* Interns the locations for one raw frame; returns how many (outermost first in LOCS). */
static size_t resolve_frame(struct profile *p, const struct module *m, struct sym_elf *elf,
			    const struct sym_kallsyms *ksyms, const struct sym_perfmap *jit,
			    const struct rawframe *rf, uint32_t *locs)
{
	struct sym_frame fr[SYM_MAX_INLINE];
	char buf[512];
	uint64_t vaddr = rf->off;
	int n = 0;

	if (elf && sym_elf_offset_to_vaddr(elf, rf->off, &vaddr))
		n = sym_elf_resolve(elf, vaddr, fr);
	if (n > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t f = profile_add_func(p, fr[i].func, m->name, fr[i].file, fr[i].decl_line);

			locs[i] = profile_add_loc(p, f, fr[i].line);
		}
		return n;
	}
	if (rf->module == MOD_STOP)
		return 0;  /* decided per stack in sym_session_finish */
	if (rf->module == MOD_KERNEL && ksyms && sym_kallsyms_find(ksyms, rf->off)) {
		snprintf(buf, sizeof(buf), "[kernel] %s", sym_kallsyms_find(ksyms, rf->off));
		locs[0] = profile_add_loc(p, profile_add_func(p, buf, "[kernel]", NULL, 0), 0);
		return 1;
	}
	if (jit && !m->is_file) {
		uint64_t start;
		const char *name = sym_perfmap_find(jit, rf->off, &start);

		if (name) {
			locs[0] = profile_add_loc(p, profile_add_func(p, name, "[jit]", NULL, 0), 0);
			return 1;
		}
	}
	if (rf->module < MOD_FIRST_REAL) {
		locs[0] = profile_add_loc(p, profile_add_func(p, m->name, m->name, NULL, 0), 0);
		return 1;
	}
	/*
	 * No symbol: name the enclosing function by its start, from the CFI.
	 * The one at the file's entry point is where the program (or, in
	 * ld.so, the dynamic loader) starts: _start, whatever was stripped,
	 * so that the stacks of stripped programs (every distribution binary)
	 * count as whole.
	 */
	if (elf && sym_elf_func_start(elf, vaddr, &vaddr) && vaddr == sym_elf_entry(elf) && vaddr) {
		locs[0] = profile_add_loc(p, profile_add_func(p, "_start", m->name, NULL, 0), 0);
		return 1;
	}
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, m->name, vaddr);
	locs[0] = profile_add_loc(p, profile_add_func(p, buf, m->name, NULL, 0), 0);
	return 1;
}

struct profile *sym_session_finish(struct sym_session *ss,
				   void (*progress)(size_t done, size_t total, void *arg),
				   void *arg)
{
	struct profile *p = ss->prof;
	uint32_t *order = xmalloc(st_mult(ss->nr_frames + 1, sizeof(*order)));
	uint32_t *loc_start = xmalloc(st_mult(ss->nr_frames + 1, sizeof(*loc_start)));
	uint8_t *loc_count = xcalloc(ss->nr_frames + 1, 1);
	uint32_t *locs = NULL, *final = NULL, *stop_of = NULL;
	uint64_t *stop_count = NULL;
	size_t nr_locs = 0, alloc_locs = 0;
	struct sym_elf *elf = NULL;
	struct sym_kallsyms *ksyms = NULL;
	struct sym_perfmap *jit = NULL;
	int32_t jit_pid = 0;
	uint32_t elf_mod = UINT32_MAX;

	/* unwinding is over: the files' CFI can go before libdwfl takes their fds */
	for (size_t i = 0; i < ss->nr_mods; i++) {
		sym_cfi_free(ss->mods[i].cfi);
		ss->mods[i].cfi = NULL;
	}
	for (size_t i = 0; i < ss->nr_frames; i++)
		order[i] = i;
	QSORT_R(order, ss->nr_frames, frame_by_module, ss->frames);
	for (size_t k = 0; k < ss->nr_frames; k++) {
		const struct rawframe *rf = &ss->frames[order[k]];
		struct module *m = &ss->mods[rf->module];

		if (rf->module == MOD_KERNEL && !ksyms && rf->off)
			ksyms = sym_kallsyms_load("/proc/kallsyms");
		if (rf->module != elf_mod) {
			sym_elf_close(elf);
			elf = NULL;
			elf_mod = rf->module;
			if (m->is_file) {
				elf = sym_elf_open(m->path, m->fd);
				m->fd = -1; /* owned by elf now */
			} else if (m->pid && m->pid != jit_pid) {
				sym_perfmap_free(jit);
				jit = sym_perfmap_load(m->pid);
				jit_pid = m->pid;
			}
		}
		ALLOC_GROW(locs, nr_locs + SYM_MAX_INLINE, alloc_locs);
		loc_start[order[k]] = nr_locs;
		loc_count[order[k]] = resolve_frame(p, m, elf, ksyms, m->pid == jit_pid ? jit : NULL,
						    rf, locs + nr_locs);
		nr_locs += loc_count[order[k]];
		if (progress && (k % 4096 == 0 || k + 1 == ss->nr_frames))
			progress(k + 1, ss->nr_frames, arg);
	}
	sym_elf_close(elf);
	sym_kallsyms_free(ksyms);
	sym_perfmap_free(jit);

	/*
	 * Raw nodes come parent first, so one pass rebuilds the tree with real
	 * locations. A stop pseudo-frame is dropped when the frame under it is
	 * a thread's entry after all; otherwise it is counted, and a stack
	 * cut by the copy size or the depth limit starts with [truncated].
	 */
	final = xmalloc(st_mult(ss->nr_nodes + 1, sizeof(*final)));
	stop_of = xmalloc(st_mult(ss->nr_nodes + 1, sizeof(*stop_of)));
	for (size_t i = 0; i < ss->nr_nodes; i++) {
		const struct rawnode *n = &ss->nodes[i];
		uint32_t s = n->parent == PROFILE_NONE ? PROFILE_NONE : final[n->parent];

		stop_of[i] = n->parent == PROFILE_NONE ? PROFILE_NONE : stop_of[n->parent];
		if (n->parent != PROFILE_NONE && ss->frames[ss->nodes[n->parent].frame].module == MOD_STOP) {
			uint64_t off = ss->frames[ss->nodes[n->parent].frame].off;
			enum sym_stop why = off >> 32;
			bool root = loc_count[n->frame] &&
				    profile_func_is_root(p->funcs[p->locs[locs[loc_start[n->frame]]].func].name);

			stop_of[i] = root ? PROFILE_NONE : ss->nodes[n->parent].frame;
			if (!root && (why == SYM_STOP_STACK_COPY || why == SYM_STOP_DEPTH))
				s = profile_add_stack(p, PROFILE_NONE, profile_add_loc(p,
					profile_add_func(p, "[truncated]", "[truncated]", NULL, 0), 0));
		}
		for (uint8_t j = 0; j < loc_count[n->frame]; j++)
			s = profile_add_stack(p, s, locs[loc_start[n->frame] + j]);
		final[i] = s;
	}
	stop_count = xcalloc(ss->nr_frames + 1, sizeof(*stop_count));
	profile_map_samples(p, finish_sample, &(struct finish_arg){ final, stop_of, stop_count });
	for (size_t f = 0; f < ss->nr_frames; f++) {
		uint32_t mod = (uint32_t)ss->frames[f].off;

		if (!stop_count[f])
			continue;
		profile_add_unwind_stop(p, stop_reasons[ss->frames[f].off >> 32],
					mod < ss->nr_mods ? ss->mods[mod].name : NULL, stop_count[f]);
	}
	profile_sort_samples(p);

	free(order);
	free(loc_start);
	free(loc_count);
	free(locs);
	free(final);
	free(stop_of);
	free(stop_count);
	ss->prof = profile_new();
	return p;
}
