// SPDX-License-Identifier: MIT
/* DWARF CFI unwinding of sampled user stacks with libdwfl, one live Dwfl per address space. */
#include "internal.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/*
 * One load of a module: its id and where its file offset 0 would be. A
 * library unloaded and loaded again elsewhere is a second load, to be
 * reported again (perf sends no munmap, so the old one stays until
 * something maps over it).
 */
struct loaded {
	uint32_t module;
	uint64_t base;          /* start - pgoff of a mapping */
};

/*
 * libdwfl lets dwfl_attach_state() run once per Dwfl and keeps its ARG
 * pointer, so the unwinder is that stable ARG: each sample's registers and
 * stack copy are swapped in behind it and the Dwfl, with its CFI, symbol
 * and file caches, lives as long as the address space does (see
 * ../shared/DESIGN-NOTES.md: a Dwfl per sample is what made perf slow).
 */
struct sym_unwinder {
	unsigned refs;          /* address spaces using it: forked processes share it */
	Dwfl *dwfl;
	bool attached;
	struct loaded *reported;/* loads reported to dwfl, sorted */
	size_t nr_reported, alloc_reported;

	/* the sample being unwound */
	int32_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	uint64_t stack_size, sp;
	uint64_t *pcs;
	int nr_pcs;
	bool read_past_copy;    /* a read just beyond the copy failed */
	bool read_failed;
};

/* perf's x86-64 register order (mask 0xff0fff packed) for each DWARF register 0..16 */
static const uint8_t dwarf_from_perf[17] = {
	0,      /* rax <- AX */
	3,      /* rdx <- DX */
	2,      /* rcx <- CX */
	1,      /* rbx <- BX */
	4,      /* rsi <- SI */
	5,      /* rdi <- DI */
	6,      /* rbp <- BP */
	7,      /* rsp <- SP */
	12, 13, 14, 15, 16, 17, 18, 19, /* r8..r15 <- R8..R15 (after the 12 low bits) */
	8,      /* rip <- IP */
};
#define PERF_POS_SP 7
#define PERF_POS_IP 8

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct sym_unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct sym_unwinder *u = arg;

	(void)dwfl;
	if (addr >= u->sp && addr - u->sp <= u->stack_size && u->stack_size - (addr - u->sp) >= 8) {
		memcpy(result, u->stack + (addr - u->sp), 8);
		return true;
	}
	/* reads just past the copy mean a deeper stack than we copied */
	if (addr >= u->sp + u->stack_size && addr < u->sp + u->stack_size + (1u << 20))
		u->read_past_copy = true;
	else
		u->read_failed = true;
	return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct sym_unwinder *u = arg;
	Dwarf_Word regs[17];

	for (int i = 0; i < 17; i++)
		regs[i] = u->regs[dwarf_from_perf[i]];
	if (!dwfl_thread_state_registers(thread, 0, 17, regs))
		return false;
	dwfl_thread_state_register_pc(thread, u->regs[PERF_POS_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct sym_unwinder *sym_unwinder_new(void)
{
	struct sym_unwinder *u = xcalloc(1, sizeof(*u));

	u->refs = 1;
	return u;
}

struct sym_unwinder *sym_unwinder_ref(struct sym_unwinder *u)
{
	u->refs++;
	return u;
}

bool sym_unwinder_shared(const struct sym_unwinder *u)
{
	return u->refs > 1;
}

void sym_unwinder_free(struct sym_unwinder *u)
{
	if (!u || --u->refs)
		return;
	dwfl_end(u->dwfl);
	free(u->reported);
	free(u);
}

static int loaded_cmp(const struct loaded *a, const struct loaded *b)
{
	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	return a->base < b->base ? -1 : a->base > b->base;
}

static bool was_reported(const struct sym_unwinder *u, const struct loaded *l)
{
	size_t lo = 0, hi = u->nr_reported;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = loaded_cmp(&u->reported[mid], l);

		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static void mark_reported(struct sym_unwinder *u, const struct loaded *l)
{
	size_t i = u->nr_reported;

	ALLOC_GROW(u->reported, u->nr_reported + 1, u->alloc_reported);
	while (i > 0 && loaded_cmp(&u->reported[i - 1], l) > 0) {
		u->reported[i] = u->reported[i - 1];
		i--;
	}
	u->reported[i] = *l;
	u->nr_reported++;
}

/*
 * XXX: every process gets its own Dwfl, so a library mapped by 150 short
 * processes is opened and its .eh_frame index read 150 times (make bench,
 * fork+exec -g dwarf: 0.31 s of CPU for proftool in all, 0.36 s for perf).
 * Sharing parsed modules across address spaces, keyed by build-id or
 * dev/inode, would remove that part.
 */
/*
 * The unwinder reads CFI from .eh_frame, which every x86-64 ELF file
 * carries, and from the file's own .debug_frame. It does not look for
 * separate debug files: libdwfl turns to .debug_frame whenever a frame's
 * .eh_frame entry does not unwind it (a thread's outermost frame, for
 * one), and opening libc6-dbg's file decompressed all its DWARF for every
 * new process (make bench, 150 fork+execs: 0.9 s of CPU in inflate).
 * Symbolization, at the end, reads the separate files once per module.
 */
static int no_separate_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
				 Dwarf_Addr base, const char *file_name, const char *debuglink_file,
				 GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks unwind_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = no_separate_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static void report(struct sym_unwinder *u, const struct sym_mapping *m)
{
	struct loaded l = { m->module, m->start - m->pgoff };
	uint64_t bias;
	int fd;

	if (was_reported(u, &l))
		return;
	mark_reported(u, &l);           /* tried once, even when it fails */
	fd = m->fd >= 0 ? dup(m->fd) : open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!sym_elf_bias(fd, m->start, m->pgoff, &bias)) {
		close(fd);
		return;
	}
	/* base = bias with add_p_vaddr: libdwfl places the module at its link addresses + bias */
	if (!dwfl_report_elf(u->dwfl, m->name, m->path, fd, bias, true))
		close(fd);
}

void sym_unwinder_sync(struct sym_unwinder *u, const struct sym_mapping *maps, size_t nr,
		       bool add_only)
{
	if (!add_only || !u->dwfl) {
		dwfl_end(u->dwfl);
		u->dwfl = dwfl_begin(&unwind_callbacks);
		u->attached = false;
		u->nr_reported = 0;
		if (!u->dwfl)
			return;
		dwfl_report_begin(u->dwfl);
	} else {
		dwfl_report_begin_add(u->dwfl);
	}
	for (size_t i = 0; i < nr; i++)
		report(u, &maps[i]);
	dwfl_report_end(u->dwfl, NULL, NULL);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct sym_unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (u->nr_pcs >= SYM_MAX_FRAMES)
		return DWARF_CB_ABORT;
	/* a return address belongs to the instruction before it: the call */
	u->pcs[u->nr_pcs++] = activation || !pc ? pc : pc - 1;
	return DWARF_CB_OK;
}

int sym_unwind(struct sym_unwinder *u, int32_t tid, const uint64_t *regs, const uint8_t *stack,
	       uint64_t size, uint64_t *pcs, enum sym_stop *stop, uint32_t *stop_module)
{
	int ret;

	*stop = SYM_STOP_NONE;
	*stop_module = UINT32_MAX;
	u->tid = tid;
	u->regs = regs;
	u->stack = stack;
	u->stack_size = size;
	u->sp = regs[PERF_POS_SP];
	u->pcs = pcs;
	u->nr_pcs = 0;
	u->read_past_copy = u->read_failed = false;
	if (!u->dwfl) {
		pcs[0] = regs[PERF_POS_IP];
		*stop = SYM_STOP_NO_MAPPING;
		return 1;
	}
	if (!u->attached) {
		if (!dwfl_attach_state(u->dwfl, NULL, tid, &thread_callbacks, u)) {
			pcs[0] = regs[PERF_POS_IP];
			*stop = SYM_STOP_NO_MAPPING;
			return 1;
		}
		u->attached = true;
	}
	ret = dwfl_getthread_frames(u->dwfl, tid, frame_cb, u);
	if (u->nr_pcs == 0) {
		pcs[0] = regs[PERF_POS_IP];
		u->nr_pcs = 1;
	}
	if (u->nr_pcs >= SYM_MAX_FRAMES) {
		*stop = SYM_STOP_DEPTH;
	} else if (u->read_past_copy) {
		/* libdwfl may end the walk quietly when the caller's frame is beyond the copy */
		*stop = SYM_STOP_STACK_COPY;
	} else if (ret != 0) {
		Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pcs[u->nr_pcs - 1]);

		if (!mod)
			*stop = SYM_STOP_NO_MAPPING;
		else if (u->read_failed)
			*stop = SYM_STOP_MEMORY;
		else
			*stop = SYM_STOP_NO_CFI;
	}
	return u->nr_pcs;
}
