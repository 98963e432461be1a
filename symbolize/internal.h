// SPDX-License-Identifier: MIT
/* Internals shared by the symbolizer's files. */
#ifndef PROFTOOL_SYMBOLIZE_INTERNAL_H
#define PROFTOOL_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>

/* One frame of a resolved address; strings stay valid until the sym_elf is closed. */
struct sym_frame {
	const char *func;       /* NULL when there is no symbol */
	const char *file;       /* source file of the function, NULL without DWARF */
	uint32_t decl_line;     /* line of the function's declaration */
	uint32_t line;          /* line of this address, or of the inlined call */
};

#define SYM_MAX_INLINE 32

/* An ELF file opened for symbolization (libdwfl, one module at bias 0). */
struct sym_elf;

/* Takes ownership of FD (may be -1: PATH is opened). NULL when it is not a readable ELF file. */
struct sym_elf *sym_elf_open(const char *path, int fd);
void sym_elf_close(struct sym_elf *e);

/* Converts a file offset (of an executable mapping) to a link-time address. */
bool sym_elf_offset_to_vaddr(struct sym_elf *e, uint64_t off, uint64_t *vaddr);

/*
 * Resolves VADDR into up to SYM_MAX_INLINE frames, outermost first (a
 * function, then the functions inlined into it). Returns the number of
 * frames; 0 when no symbol covers VADDR. Names are demangled.
 */
int sym_elf_resolve(struct sym_elf *e, uint64_t vaddr, struct sym_frame *out);

/*
 * The start of the function around VADDR when there is no symbol: the
 * initial location of the CFI entry (.eh_frame FDE) covering it, so that
 * the samples of one unnamed function add up at one address.
 */
bool sym_elf_func_start(struct sym_elf *e, uint64_t vaddr, uint64_t *start);

/* The file's entry point (e_entry, a link-time address), 0 when it has none. */
uint64_t sym_elf_entry(const struct sym_elf *e);

/*
 * Demangles C++, Rust legacy and Rust v0 names (Rust without its hashes).
 * Returns a malloc'd string the caller frees, or NULL when NAME is NULL, not
 * mangled, malformed, or memory ran out. Thread-safe.
 */
char *sym_demangle(const char *name);

/*
 * The load bias of an ELF file mapped at START from file offset PGOFF
 * (runtime address = link-time address + bias). False when FD is not ELF
 * or PGOFF lies in no PT_LOAD segment.
 */
bool sym_elf_bias(int fd, uint64_t start, uint64_t pgoff, uint64_t *bias);

/* ---- kernel symbols (kallsyms.c) ---- */

struct sym_kallsyms;
/* Loads text symbols; NULL when unreadable or hidden (kptr_restrict). */
struct sym_kallsyms *sym_kallsyms_load(const char *path);
void sym_kallsyms_free(struct sym_kallsyms *k);
/* The function containing ADDR, or NULL; the string stays the table's. */
const char *sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr);

/* ---- JIT symbols (perfmap.c) ---- */

struct sym_perfmap;
/* Loads /tmp/perf-PID.map; NULL when there is none. */
struct sym_perfmap *sym_perfmap_load(int32_t pid);
void sym_perfmap_free(struct sym_perfmap *m);
/* The JIT function containing ADDR and its start, or NULL; the string stays the map's. */
const char *sym_perfmap_find(const struct sym_perfmap *m, uint64_t addr, uint64_t *start);

/*
 * libdwfl callbacks for modules reported from files we hand it: debug info
 * found next to the file, in .debug/ and /usr/lib/debug (build-id too).
 */
extern const Dwfl_Callbacks sym_dwfl_callbacks;

/* ---- DWARF unwinding of copied user stacks (unwind.c) ---- */

/* A file mapping as the unwinder needs it; the session owns the strings and fd. */
struct sym_mapping {
	uint64_t start, end, pgoff;
	uint32_t module;        /* the session's module id */
	const char *path;       /* file to open when fd < 0 */
	const char *name;       /* module name for libdwfl */
	int fd;                 /* open fd of the file, or -1 */
};

/* Why an unwind stopped before the outermost frame. */
enum sym_stop {
	SYM_STOP_NONE,          /* reached a frame without caller */
	SYM_STOP_STACK_COPY,    /* the next frame lies beyond the copied stack */
	SYM_STOP_MEMORY,        /* a read outside the copied stack */
	SYM_STOP_NO_CFI,        /* no unwind information for the module of the last frame */
	SYM_STOP_NO_MAPPING,    /* the last frame is in no known file */
	SYM_STOP_DEPTH,         /* more frames than SYM_MAX_FRAMES */
	SYM_STOP_NR,
};

#define SYM_MAX_FRAMES 1024

struct sym_unwinder;

/*
 * An unwinder is reference-counted: a forked process, whose address space is
 * its parent's, shares the parent's until either one's mappings change (the
 * one that changed then takes a new one). Unwinding itself reads nothing of
 * the process but the sample, so any thread of any sharer may use it.
 * sym_unwinder_free() drops one reference.
 */
struct sym_unwinder *sym_unwinder_new(void);
struct sym_unwinder *sym_unwinder_ref(struct sym_unwinder *u);
bool sym_unwinder_shared(const struct sym_unwinder *u);
void sym_unwinder_free(struct sym_unwinder *u);

/*
 * Makes the unwinder's view match MAPS (sorted, file mappings only). With
 * ADD_ONLY the mappings since the last sync were only added, and the
 * existing libdwfl state (with its caches) is kept.
 */
void sym_unwinder_sync(struct sym_unwinder *u, const struct sym_mapping *maps, size_t nr,
		       bool add_only);

/*
 * Unwinds one sample: REGS are perf's x86-64 user registers (mask 0xff0fff
 * order), STACK the copy of SIZE bytes starting at the sampled SP. Fills
 * PCS leaf first with lookup addresses (a caller's return address minus
 * one) and returns their number; *STOP says why the walk ended and
 * *STOP_MODULE the module id of the last frame (UINT32_MAX if none).
 */
int sym_unwind(struct sym_unwinder *u, int32_t tid, const uint64_t *regs, const uint8_t *stack,
	       uint64_t size, uint64_t *pcs, enum sym_stop *stop, uint32_t *stop_module);

#endif
