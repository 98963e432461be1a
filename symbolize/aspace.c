// SPDX-License-Identifier: MIT
/* Modules (the files and special areas code runs from) and each process's address space. */
#include "session.h"

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

uint32_t ss_get_module(struct sym_session *ss, const char *path, uint32_t maj, uint32_t min,
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
/* The maps' versions, unique in the recorder (sessions of several threads among them) */
static uint64_t aspace_gen;

bool ss_aspace_insert(struct aspace *as, const struct map *nm)
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
	as->gen = __atomic_add_fetch(&aspace_gen, 1, __ATOMIC_RELAXED);
	return cut;
}

struct map *ss_aspace_find(const struct aspace *as, uint64_t addr)
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

void ss_on_mmap(struct sym_session *ss, const struct sampler_rec *r)
{
	uint32_t proc = ss_find_proc(ss, r->pid);
	struct map m;

	if (!(r->mmap.prot & 4) || !r->mmap.len)  /* PROT_EXEC only: code, never data */
		return;
	if (proc == IDX_NONE) {
		ss_get_thread(ss, r->pid, r->tid, NULL);
		proc = ss_find_proc(ss, r->pid);
	}
	m.start = r->mmap.start;
	m.end = r->mmap.start + r->mmap.len;
	m.pgoff = r->mmap.pgoff;
	m.module = ss_get_module(ss, r->mmap.filename, r->mmap.maj, r->mmap.min, r->mmap.ino,
			      r->pid, m.start, m.end);
	m.bias_state = BIAS_UNKNOWN;
	ss_aspace_insert(&ss->procs[proc].as, &m);
}
