// SPDX-License-Identifier: MIT
/* Internals shared by the symbolizer's files. */
#ifndef PROFTOOL_SYMBOLIZE_INTERNAL_H
#define PROFTOOL_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

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
 * initial location of the CFI entry (the .eh_frame or .debug_frame FDE)
 * covering it, not of the CFI row (a function that pushes registers has
 * several), so that the samples of one unnamed function add up at one
 * address.
 */
bool sym_elf_func_start(struct sym_elf *e, uint64_t vaddr, uint64_t *start);

/*
 * The code symbols of a libdwfl module (.symtab, else .dynsym, and
 * MiniDebugInfo's), sorted once: libdwfl's dwfl_module_addrinfo scans
 * every symbol of the module for each address, and with libtorch's 100k+
 * symbols that was 91 % of proftool's CPU on a PyTorch job. Names stay
 * the module's. sym_syms_find returns the symbol covering VADDR as libdwfl
 * would choose it (the nearest sized symbol containing it, else the
 * nearest label before it in its section with no sized symbol ending in
 * between) and its address in *ADDR, or NULL.
 */
struct sym_syms;
struct sym_syms *sym_syms_build(Dwfl_Module *mod);
void sym_syms_free(struct sym_syms *s);
const char *sym_syms_find(const struct sym_syms *s, uint64_t vaddr, uint64_t *addr);

/*
 * The address ranges of every FDE in ELF's .eh_frame and .debug_frame:
 * sym_fdes_find gives the start of the one covering VADDR.
 */
struct sym_fdes;
struct sym_fdes *sym_fdes_build(Elf *elf);
void sym_fdes_free(struct sym_fdes *f);
bool sym_fdes_find(const struct sym_fdes *f, uint64_t vaddr, uint64_t *start);

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

/* ---- call frame information of one file (cfi.c) ---- */

/* x86-64 DWARF registers 0..16 (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip) */
#define SYM_NREGS 17
#define SYM_REG_RA 16           /* the return address column: a frame's pc */

/* One frame's registers, DWARF numbering. */
struct sym_regs {
	uint64_t r[SYM_NREGS];
	uint32_t valid;         /* bit N: r[N] is known */
};

/* Reads 8 bytes of the target at ADDR; false when they are not available. */
typedef bool sym_read_fn(void *arg, uint64_t addr, uint64_t *val);

/*
 * The unwind tables of one ELF file (.eh_frame, and the file's own
 * .debug_frame), with each address's rule compiled once and cached: one
 * per file, shared by every process that maps it. FD stays the caller's
 * and may be closed once this returns (the file is mapped). NULL when FD
 * is not an ELF file. Not thread-safe.
 */
struct sym_cfi;
struct sym_cfi *sym_cfi_open(int fd);
void sym_cfi_free(struct sym_cfi *c);

/* The load bias of this file mapped at START from file offset PGOFF (see sym_elf_bias). */
bool sym_cfi_bias(const struct sym_cfi *c, uint64_t start, uint64_t pgoff, uint64_t *bias);

/*
 * Copies N bytes of the file's code at link-time address VADDR into BUF;
 * false when they are not all in the file's loaded segments.
 */
bool sym_cfi_read_code(const struct sym_cfi *c, uint64_t vaddr, uint8_t *buf, size_t n);
/* Whether link-time address VADDR is in the file's PLT (.plt, .plt.sec, .plt.got). */
bool sym_cfi_in_plt(const struct sym_cfi *c, uint64_t vaddr);
/* Whether CFI covers link-time address VADDR (an FDE's range holds it). */
bool sym_cfi_covers(struct sym_cfi *c, uint64_t vaddr);

enum sym_cfi_step {
	SYM_CFI_OK,             /* REGS are now the caller's */
	SYM_CFI_END,            /* the frame has no caller: the thread's first function */
	SYM_CFI_NONE,           /* no CFI covers the address; REGS untouched */
	SYM_CFI_READ,           /* the return address could not be found (a read failed) */
};

/*
 * Unwinds one frame: REGS are those of a frame executing at link-time
 * address ADDR of this file (a return address minus one, except in the
 * first and interrupted frames); on SYM_CFI_OK they become its caller's,
 * the caller's pc in REGS->r[SYM_REG_RA]. *SIGNAL says that the frame is a
 * signal trampoline (its caller was interrupted, not calling).
 */
enum sym_cfi_step sym_cfi_step(struct sym_cfi *c, uint64_t addr, struct sym_regs *regs,
			       sym_read_fn *read, void *arg, bool *signal);

/*
 * The PT_LOAD headers of ELF, in file order, into a malloc'd *LOADS the
 * caller frees (*NR of them); false when ELF is not an ELF file.
 */
bool sym_elf_loads(Elf *elf, GElf_Phdr **loads, size_t *nr);

/*
 * The load bias of the PT_LOAD segments LOADS mapped at START from file
 * offset PGOFF (runtime address = link-time address + bias).
 */
bool sym_load_bias(const GElf_Phdr *loads, size_t nr, uint64_t start, uint64_t pgoff,
		   uint64_t *bias);

/* ---- DWARF unwinding of copied user stacks (unwind.c) ---- */

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

/* Where the code at an address comes from, as the unwinder needs it. */
struct sym_code {
	struct sym_cfi *cfi;    /* NULL: no CFI (anonymous memory, or no ELF file behind it) */
	uint64_t bias;          /* of the mapping: runtime address = link-time address + bias */
	uint32_t module;        /* the session's module id; UINT32_MAX when no ELF file maps it */
};
typedef void sym_code_fn(void *arg, uint64_t pc, struct sym_code *out);

/*
 * Unwinds one sample: PERF_REGS are perf's x86-64 user registers (mask
 * 0xff0fff order), STACK the copy of SIZE bytes starting at the sampled
 * SP; CODE tells, for an address, the file's CFI and load bias. Fills PCS
 * leaf first with lookup addresses (a caller's return address minus one)
 * and returns their number (SYM_MAX_FRAMES at most); *STOP says why the
 * walk ended and, for no CFI or unreadable memory, *STOP_MODULE the module
 * id of the last frame (UINT32_MAX otherwise). Reads nothing but the copy
 * (and the files' code). Where the innermost frame has no CFI, or any
 * frame a CFA that needs memory outside the copy, its return address
 * is found by scanning the copy upwards from its stack pointer for a value
 * just after a call instruction in a file with CFI, whose callers then
 * unwind consistently (each return address after a call that can have led
 * to its callee) to a thread's first frame or the end of the copy; so is
 * that of a frame without CFI reached by unwinding, in a file with CFI, for
 * a direct call of code no CFI covers; the frame pointer is the fallback.
 * *SCANNED says how many frames were found
 * so (0: a stack of CFI and frame pointers alone). Without SCAN, the frame
 * pointer alone.
 */
struct sym_memo;
int sym_unwind(sym_code_fn *code, void *code_arg, const uint64_t *perf_regs, const uint8_t *stack,
	       uint64_t size, bool scan, struct sym_memo *memo, uint64_t key, uint64_t *pcs,
	       enum sym_stop *stop, uint32_t *stop_module, uint32_t *scanned);

/*
 * A thread's last walk, kept for its next (unwind.c): MEMO (NULL: none)
 * gives sym_unwind the callers that walk shares with this one, without
 * walking them again, and then holds this walk. KEY names the thread and
 * the files its process maps: a memo of another key is not used.
 */
struct sym_memo *sym_memo_new(void);
void sym_memo_free(struct sym_memo *m);
/* The frames the last sym_unwind with M took from it (0: it walked them all). */
size_t sym_memo_took(const struct sym_memo *m);

#endif
