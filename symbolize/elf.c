// SPDX-License-Identifier: MIT
/* Symbolizing addresses of one ELF file with libdwfl: symbols, inline frames, file:line. */
#include "internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

struct sym_elf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct sym_syms *syms;  /* built at the first lookup */
	struct sym_fdes *fdes;  /* likewise */
	GElf_Phdr *loads;       /* PT_LOAD headers, in file order */
	size_t nr_loads;
	char **owned;           /* demangled names handed out, freed at close */
	size_t nr_owned, alloc_owned;
	uint64_t entry;         /* e_entry: where the program starts; 0 when none */
};

/* NULL: the default search path, next to the file, its .debug directory, /usr/lib/debug */
static char *debuginfo_path;

/*
 * elfutils' search, less one case: a .gnu_debuglink that names no file
 * (an empty name) makes elfutils 0.188 open the directory it looks in,
 * take it for the debug file when there is no CRC or build-id to check,
 * and lose the name it built for it. Such a link is a link to nothing.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	if (debuglink_file && !*debuglink_file)
		debuglink_file = NULL;
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

const Dwfl_Callbacks sym_dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct sym_elf *sym_elf_open(const char *path, int fd)
{
	struct sym_elf *e;
	const char *slash = strrchr(path, '/');
	GElf_Addr bias;
	Elf *elf;

	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	e = xcalloc(1, sizeof(*e));
	e->dwfl = dwfl_begin(&sym_dwfl_callbacks);
	if (!e->dwfl) {
		close(fd);
		free(e);
		return NULL;
	}
	dwfl_report_begin(e->dwfl);
	/*
	 * base 0 with add_p_vaddr: the module sits at its link-time addresses
	 * (bias 0), so one Dwfl serves every process that maps the file.
	 * libdwfl owns FD from here on.
	 */
	e->mod = dwfl_report_elf(e->dwfl, slash ? slash + 1 : path, path, fd, 0, true);
	dwfl_report_end(e->dwfl, NULL, NULL);
	if (!e->mod) {
		close(fd);
		goto fail;
	}
	elf = dwfl_module_getelf(e->mod, &bias);
	if (!elf || !sym_elf_loads(elf, &e->loads, &e->nr_loads))
		goto fail;
	{
		GElf_Ehdr eh;

		if (gelf_getehdr(elf, &eh))
			e->entry = eh.e_entry;
	}
	return e;
fail:
	sym_elf_close(e);
	return NULL;
}

void sym_elf_close(struct sym_elf *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nr_owned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->loads);
	sym_syms_free(e->syms);
	sym_fdes_free(e->fdes);
	dwfl_end(e->dwfl);
	free(e);
}

bool sym_elf_offset_to_vaddr(struct sym_elf *e, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < e->nr_loads; i++) {
		const GElf_Phdr *ph = &e->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_memsz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return true;
		}
	}
	return false;
}

static const char *keep(struct sym_elf *e, const char *name)
{
	const char *at = strchr(name, '@');
	char *d;

	/* "memcpy@@GLIBC_2.14": the symbol version is noise in a profile */
	if (at && at != name) {
		char *bare = strndup(name, at - name);
		char *dm = bare ? sym_demangle(bare) : NULL;

		if (!bare)
			return name;
		if (dm) {
			free(bare);
			bare = dm;
		}
		ALLOC_GROW(e->owned, e->nr_owned + 1, e->alloc_owned);
		e->owned[e->nr_owned++] = bare;
		return bare;
	}
	d = sym_demangle(name);
	if (!d)
		return name;
	ALLOC_GROW(e->owned, e->nr_owned + 1, e->alloc_owned);
	e->owned[e->nr_owned++] = d;
	return d;
}

static const char *die_name(struct sym_elf *e, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (n)
		return keep(e, n);
	/* an inlined instance names its function only through DW_AT_abstract_origin */
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		return dwarf_formstring(&attr);
	return NULL;
}

static void decl_of(Dwarf_Die *die, struct sym_frame *f)
{
	int line = 0;

	f->file = dwarf_decl_file(die);
	if (dwarf_decl_line(die, &line) == 0 && line > 0)
		f->decl_line = line;
}

/*
 * The line of the code at ADDR (a module address) when it is in FILE: for
 * functions with no declaration line (written in assembly, as many of
 * libc's are), where they begin stands in for it.
 */
static uint32_t line_at(struct sym_elf *e, Dwarf_Addr addr, const char *file)
{
	Dwfl_Line *dl = dwfl_module_getsrc(e->mod, addr);
	const char *f;
	int line = 0;

	if (!dl || !(f = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL)))
		return 0;
	/* the line table may spell the path another way ("./string/../sysdeps/..."): same base name */
	if (file && strcmp(strrchr(f, '/') ? strrchr(f, '/') + 1 : f,
			   strrchr(file, '/') ? strrchr(file, '/') + 1 : file))
		return 0;
	return line > 0 ? (uint32_t)line : 0;
}

/* The symbol covering VADDR and VADDR's offset into it; NULL when none does. */
static const char *symbol_at(struct sym_elf *e, uint64_t vaddr, uint64_t *off)
{
	uint64_t addr = 0;
	const char *name;

	if (!e->syms)
		e->syms = sym_syms_build(e->mod);
	name = sym_syms_find(e->syms, vaddr, &addr);
	*off = vaddr - addr;
	return name;
}

int sym_elf_resolve(struct sym_elf *e, uint64_t vaddr, struct sym_frame *out)
{
	uint64_t symoff = 0;
	const char *symname = symbol_at(e, vaddr, &symoff);
	Dwfl_Line *dl = dwfl_module_getsrc(e->mod, vaddr);
	const char *srcfile = NULL;
	int srcline = 0;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(e->mod, vaddr, &bias);
	Dwarf_Die *scopes = NULL, *chain = NULL;
	Dwarf_Die *fn[SYM_MAX_INLINE];
	int nscopes = 0, nchain = 0, nfn = 0;

	if (dl)
		srcfile = dwfl_lineinfo(dl, NULL, &srcline, NULL, NULL, NULL);
	if (cu)
		nscopes = dwarf_getscopes(cu, vaddr - bias, &scopes);
	/*
	 * dwarf_getscopes stops at an inlined instance and goes on with its
	 * abstract origin's scopes; the functions it was inlined into come from
	 * the instance's own DIE chain (what eu-addr2line -i does).
	 */
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram) {
			fn[nfn++] = &scopes[i];
			break;
		}
		if (tag == DW_TAG_inlined_subroutine) {
			nchain = dwarf_getscopes_die(&scopes[i], &chain);
			break;
		}
	}
	/* innermost first: inlined subroutines, then the subprogram that holds them */
	for (int i = 0; i < nchain && nfn < SYM_MAX_INLINE; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag == DW_TAG_inlined_subroutine) {
			fn[nfn++] = &chain[i];
		} else if (tag == DW_TAG_subprogram) {
			fn[nfn++] = &chain[i];
			break;
		}
	}
	if (!nfn) {
		free(scopes);
		free(chain);
		if (!symname)
			return 0;
		memset(out, 0, sizeof(*out));
		out[0].func = keep(e, symname);
		out[0].line = srcline > 0 ? srcline : 0;
		/* line information without a function DIE: assembly */
		out[0].file = srcfile;
		if (srcfile)
			out[0].decl_line = line_at(e, vaddr - symoff, srcfile);
		return 1;
	}
	/* out[] is outermost first: out[k] is fn[nfn - 1 - k] */
	for (int k = 0; k < nfn; k++) {
		Dwarf_Die *die = fn[nfn - 1 - k];
		struct sym_frame *f = &out[k];

		memset(f, 0, sizeof(*f));
		if (k == 0 && symname)
			f->func = keep(e, symname);
		else
			f->func = die_name(e, die);
		if (!f->func)
			f->func = symname ? keep(e, symname) : NULL;
		decl_of(die, f);
		if (k == nfn - 1) {
			f->line = srcline > 0 ? srcline : 0;
		} else {
			/* where the next inner function was inlined */
			Dwarf_Die *inner = fn[nfn - 2 - k];
			Dwarf_Attribute attr;
			Dwarf_Word w;

			if (dwarf_attr(inner, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &w) == 0)
				f->line = w;
		}
		if (!f->file && k == nfn - 1)
			f->file = srcfile;
		if (!f->decl_line && f->file) {
			Dwarf_Addr low;

			if (k == 0 && symname)
				f->decl_line = line_at(e, vaddr - symoff, f->file);
			else if (dwarf_lowpc(die, &low) == 0)
				f->decl_line = line_at(e, low + bias, f->file);
		}
	}
	free(scopes);
	free(chain);
	if (!out[0].func)
		out[0].func = "[unknown]";
	return nfn;
}

bool sym_load_bias(const GElf_Phdr *loads, size_t nr, uint64_t start, uint64_t pgoff,
		   uint64_t *bias)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE) - 1;
	bool ok = false, exec = false;

	/*
	 * The kernel maps a segment from its page-aligned offset to its
	 * page-aligned address. Linkers that pack segments (lld, mold) start
	 * the code in the file page where the read-only data ends, so two
	 * segments cover that offset with addresses a page apart: the mapping
	 * is code (only executable mappings come here), so the executable
	 * segment wins.
	 */
	for (size_t i = 0; i < nr && !exec; i++) {
		const GElf_Phdr *ph = &loads[i];

		if (ph->p_type != PT_LOAD || (ok && !(ph->p_flags & PF_X)))
			continue;
		if (pgoff >= (ph->p_offset & ~page) && pgoff < ph->p_offset + ph->p_filesz) {
			uint64_t vaddr = (ph->p_vaddr & ~page) + (pgoff - (ph->p_offset & ~page));

			*bias = start - vaddr;
			ok = true;
			exec = ph->p_flags & PF_X;
		}
	}
	return ok;
}

bool sym_elf_loads(Elf *elf, GElf_Phdr **loads, size_t *nr)
{
	size_t phnum;

	*loads = NULL;
	*nr = 0;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) != 0)
		return false;
	*loads = xmalloc(st_mult(phnum + 1, sizeof(**loads)));
	for (size_t i = 0; i < phnum; i++)
		if (gelf_getphdr(elf, i, &(*loads)[*nr]) && (*loads)[*nr].p_type == PT_LOAD)
			(*nr)++;
	return true;
}

bool sym_elf_bias(int fd, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	GElf_Phdr *loads;
	size_t nr;
	bool ok;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return false;
	ok = sym_elf_loads(elf, &loads, &nr) && sym_load_bias(loads, nr, start, pgoff, bias);
	free(loads);
	elf_end(elf);
	return ok;
}

uint64_t sym_elf_entry(const struct sym_elf *e)
{
	return e->entry;
}

bool sym_elf_func_start(struct sym_elf *e, uint64_t vaddr, uint64_t *start)
{
	GElf_Addr bias;

	if (!e->fdes)
		e->fdes = sym_fdes_build(dwfl_module_getelf(e->mod, &bias));
	return sym_fdes_find(e->fdes, vaddr, start);
}
