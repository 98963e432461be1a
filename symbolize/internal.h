// SPDX-License-Identifier: MIT
/* Internals shared by the symbolizer's files. */
#ifndef PROFTOOL_SYMBOLIZE_INTERNAL_H
#define PROFTOOL_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

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

/* Demangles C++ (and Rust legacy) names; returns a malloc'd string or NULL. */
char *sym_demangle(const char *name);

#endif
