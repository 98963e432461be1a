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

/* A function symbol of the file, at its link-time address. */
struct elf_sym {
	uint64_t addr, size;    /* size 0: an assembly label, its end unknown */
	uint64_t sec_end;       /* end of its section: a label covers nothing past it */
	const char *name;       /* libdwfl's, valid while the module lives */
	uint32_t rank;          /* preference among symbols at one address: higher wins */
};

struct sym_elf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	/*
	 * Every code symbol, sorted by address (then rank), built at the first
	 * lookup. libdwfl's dwfl_module_addrinfo scans every symbol of the
	 * module for each address: with libtorch's 100k+ symbols that was 91 %
	 * of proftool's CPU on a PyTorch job.
	 */
	struct elf_sym *syms;
	size_t nr_syms;
	uint64_t *max_end;      /* per index: the largest end of a sized symbol up to it */
	uint32_t *prev_label;   /* per index: the nearest sizeless symbol up to it, or UINT32_MAX */
	bool syms_built;
	GElf_Phdr *loads;       /* PT_LOAD headers, in file order */
	size_t nr_loads, alloc_loads;
	char **owned;           /* demangled names handed out, freed at close */
	size_t nr_owned, alloc_owned;
	uint64_t entry;         /* e_entry: where the program starts; 0 when none */
};

/* NULL: the default search path, next to the file, its .debug directory, /usr/lib/debug */
static char *debuginfo_path;

const Dwfl_Callbacks sym_dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct sym_elf *sym_elf_open(const char *path, int fd)
{
	struct sym_elf *e;
	const char *slash = strrchr(path, '/');
	GElf_Addr bias;
	Elf *elf;
	size_t phnum;

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
	if (!elf || elf_getphdrnum(elf, &phnum) < 0)
		goto fail;
	{
		GElf_Ehdr eh;

		if (gelf_getehdr(elf, &eh))
			e->entry = eh.e_entry;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD) {
			ALLOC_GROW(e->loads, e->nr_loads + 1, e->alloc_loads);
			e->loads[e->nr_loads++] = ph;
		}
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
	free(e->syms);
	free(e->max_end);
	free(e->prev_label);
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

/* ---- the symbol index ---- */

/* Which sections of one ELF file hold code, and where they end; filled as asked. */
struct shdr_cache {
	Elf *elf;
	uint8_t *state;         /* per section: 0 unknown, 1 code, 2 not code */
	uint64_t *end;          /* per code section: its end address */
	size_t nr;
};

/* Whether section SHNDX of ELF holds code, and where it ends. */
static bool section_is_code(struct shdr_cache *c, size_t nc, Elf *elf, GElf_Word shndx,
			    uint64_t *end)
{
	struct shdr_cache *slot = NULL;
	GElf_Shdr sh;
	Elf_Scn *scn;

	for (size_t i = 0; i < nc && !slot; i++)
		if (c[i].elf == elf || !c[i].elf)
			slot = &c[i];
	if (!slot)
		return false;
	if (!slot->elf) {
		size_t shnum = 0;

		slot->elf = elf;
		if (elf_getshdrnum(elf, &shnum) == 0 && shnum < (1u << 24)) {
			slot->state = xcalloc(shnum ? shnum : 1, 1);
			slot->end = xcalloc(shnum ? shnum : 1, sizeof(*slot->end));
			slot->nr = shnum;
		}
	}
	if (shndx >= slot->nr)
		return false;
	if (!slot->state[shndx]) {
		scn = elf_getscn(elf, shndx);
		slot->state[shndx] = scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) ? 1 : 2;
		if (slot->state[shndx] == 1)
			slot->end[shndx] = sh.sh_addr + sh.sh_size;
	}
	*end = slot->end[shndx];
	return slot->state[shndx] == 1;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * The rank libdwfl's choice amounts to: a sized symbol over a label, then
 * global over weak over local, then the earlier in the table.
 */
static uint32_t sym_rank(const GElf_Sym *sym, int i)
{
	static const uint32_t bind_rank[] = { [STB_LOCAL] = 1, [STB_GLOBAL] = 3, [STB_WEAK] = 2 };
	unsigned bind = GELF_ST_BIND(sym->st_info);
	uint32_t r = bind < ARRAY_SIZE(bind_rank) ? bind_rank[bind] : 0;

	return (sym->st_size ? 1u << 31 : 0) | r << 28 | ((1u << 28) - 1 - ((uint32_t)i & ((1u << 28) - 1)));
}

/* Reads every code symbol libdwfl knows (.symtab, else .dynsym, and MiniDebugInfo's). */
static void build_syms(struct sym_elf *e)
{
	struct shdr_cache cache[2] = { { 0 } };
	int n = dwfl_module_getsymtab(e->mod);
	size_t nr = 0, alloc = 0;

	e->syms_built = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		uint64_t sec_end;
		const char *name = dwfl_module_getsym_info(e->mod, i, &sym, &addr, &shndx, &elf, NULL);
		unsigned type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || !elf || shndx == SHN_UNDEF || shndx == SHN_ABS ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		if (!section_is_code(cache, ARRAY_SIZE(cache), elf, shndx, &sec_end))
			continue;
		ALLOC_GROW(e->syms, nr + 1, alloc);
		e->syms[nr++] = (struct elf_sym){ addr, sym.st_size, sec_end, name, sym_rank(&sym, i) };
	}
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++) {
		free(cache[i].state);
		free(cache[i].end);
	}
	QSORT(e->syms, nr, sym_cmp);
	e->nr_syms = nr;
	e->max_end = xmalloc(st_mult(nr + 1, sizeof(*e->max_end)));
	e->prev_label = xmalloc(st_mult(nr + 1, sizeof(*e->prev_label)));
	for (size_t i = 0; i < nr; i++) {
		uint64_t end = e->syms[i].size ? e->syms[i].addr + e->syms[i].size : 0;
		uint64_t before = i ? e->max_end[i - 1] : 0;

		e->max_end[i] = end > before ? end : before;
		e->prev_label[i] = !e->syms[i].size ? (uint32_t)i : i ? e->prev_label[i - 1] : UINT32_MAX;
	}
}

/*
 * The symbol covering VADDR, chosen as libdwfl chooses: the sized symbol
 * containing it that starts nearest, else the nearest label before it, in
 * its section, provided no sized symbol ends between the two. NULL for
 * none (the address is in a function the symbol table does not name).
 */
static const struct elf_sym *find_sym(struct sym_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi, p;

	if (!e->syms_built)
		build_syms(e);
	hi = e->nr_syms;
	/* p: the last symbol starting at or before VADDR */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	p = lo - 1;
	if (e->max_end[p] > vaddr) {
		/* some sized symbol contains VADDR: the first one met going back starts nearest */
		for (size_t i = p + 1; i-- > 0;) {
			const struct elf_sym *s = &e->syms[i];

			if (s->size && vaddr - s->addr < s->size)
				return s;
		}
		return NULL;
	}
	if (e->prev_label[p] != UINT32_MAX) {
		const struct elf_sym *l = &e->syms[e->prev_label[p]];

		if (l->addr >= e->max_end[p] && vaddr < l->sec_end)
			return l;
	}
	return NULL;
}

int sym_elf_resolve(struct sym_elf *e, uint64_t vaddr, struct sym_frame *out)
{
	const struct elf_sym *es = find_sym(e, vaddr);
	const char *symname = es ? es->name : NULL;
	uint64_t symoff = es ? vaddr - es->addr : 0;
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

bool sym_elf_bias(int fd, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	GElf_Phdr *loads = NULL;
	size_t phnum, nr = 0;
	bool ok = false;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return false;
	if (elf_kind(elf) == ELF_K_ELF && elf_getphdrnum(elf, &phnum) == 0) {
		loads = xmalloc(st_mult(phnum + 1, sizeof(*loads)));
		for (size_t i = 0; i < phnum; i++)
			if (gelf_getphdr(elf, i, &loads[nr]) && loads[nr].p_type == PT_LOAD)
				nr++;
		ok = sym_load_bias(loads, nr, start, pgoff, bias);
	}
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
	Dwarf_Addr bias;
	Dwarf_CFI *cfi[2];

	cfi[0] = dwfl_module_eh_cfi(e->mod, &bias);
	cfi[1] = dwfl_module_dwarf_cfi(e->mod, &bias);
	for (int i = 0; i < 2; i++) {
		Dwarf_Frame *frame;
		Dwarf_Addr lo, hi;

		if (!cfi[i] || dwarf_cfi_addrframe(cfi[i], vaddr - bias, &frame) != 0)
			continue;
		if (dwarf_frame_info(frame, &lo, &hi, NULL) >= 0) {
			*start = lo + bias;
			free(frame);
			return true;
		}
		free(frame);
	}
	return false;
}
