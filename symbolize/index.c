// SPDX-License-Identifier: MIT
/* Address indexes of an ELF file: its code symbols, and the ranges of its FDEs. */
#include "internal.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* A function symbol of the file, at its link-time address. */
struct elf_sym {
	uint64_t addr, size;    /* size 0: an assembly label, its end unknown */
	uint64_t sec_end;       /* end of its section: a label covers nothing past it */
	const char *name;       /* libdwfl's, valid while the module lives */
	uint32_t rank;          /* preference among symbols at one address: higher wins */
};

struct sym_syms {
	struct elf_sym *syms;   /* sorted by address, then rank */
	size_t nr_syms;
	uint64_t *max_end;      /* per index: the largest end of a sized symbol up to it */
	uint32_t *prev_label;   /* per index: the nearest sizeless symbol up to it, or UINT32_MAX */
};

/* The addresses one FDE (one function's call frame information) covers. */
struct fde_range {
	uint64_t start, end;
};

struct sym_fdes {
	struct fde_range *fdes; /* sorted by start */
	size_t nr_fdes;
};

/* ---- code symbols ---- */

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

struct sym_syms *sym_syms_build(Dwfl_Module *mod)
{
	struct shdr_cache cache[2] = { { 0 } };
	struct sym_syms *e = xcalloc(1, sizeof(*e));
	int n = mod ? dwfl_module_getsymtab(mod) : 0;
	size_t nr = 0, alloc = 0;

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		uint64_t sec_end;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, NULL);
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
	return e;
}

void sym_syms_free(struct sym_syms *e)
{
	if (!e)
		return;
	free(e->syms);
	free(e->max_end);
	free(e->prev_label);
	free(e);
}

/* Returns the symbol's entry (see sym_syms_find). */
static const struct elf_sym *find_sym(const struct sym_syms *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->nr_syms, p;

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

const char *sym_syms_find(const struct sym_syms *e, uint64_t vaddr, uint64_t *addr)
{
	const struct elf_sym *s = e ? find_sym(e, vaddr) : NULL;

	if (!s)
		return NULL;
	*addr = s->addr;
	return s->name;
}

/* ---- where unnamed functions start: the FDEs of .eh_frame and .debug_frame ---- */

/*
 * Reads a pointer in the DW_EH_PE encoding ENC at *P (the field's link-time
 * address FIELD), advancing *P. False for encodings CFI on x86-64 never
 * uses for code addresses (indirect, aligned, text- or data-relative).
 */
static bool read_encoded(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t field,
			 uint64_t *out)
{
	uint64_t v = 0;
	size_t n;

	if (enc == 0xff)        /* DW_EH_PE_omit */
		return false;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: n = 8; break;  /* absptr, udata8, sdata8 */
	case 0x03: case 0x0b: n = 4; break;             /* udata4, sdata4 */
	case 0x02: case 0x0a: n = 2; break;             /* udata2, sdata2 */
	default: return false;
	}
	if ((size_t)(end - *p) < n)
		return false;
	memcpy(&v, *p, n);      /* x86-64: little-endian, as the file */
	if (n < 8 && (enc & 0x08) && (v >> (8 * n - 1)))
		v |= ~0ull << (8 * n);                  /* sign-extend sdata */
	*p += n;
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += field; break;                   /* pcrel */
	default: return false;
	}
	if (enc & 0x80)                                 /* indirect */
		return false;
	*out = v;
	return true;
}

/* The FDE pointer encoding a CIE's augmentation ("zR", "zPLR", ...) gives. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie, bool eh)
{
	const uint8_t *p = cie->augmentation_data, *end = p + cie->augmentation_data_size;
	const char *a = cie->augmentation;

	if (!eh || !a || !*a)
		return 0x00;    /* absptr */
	if (*a != 'z')
		return 0xff;
	for (a++; *a && p && p < end; a++) {
		uint64_t skip;
		uint8_t enc;

		switch (*a) {
		case 'R':
			return *p;
		case 'L':
			p++;
			break;
		case 'P':
			enc = *p++;
			if (!read_encoded(enc & 0x0f, &p, end, 0, &skip))
				return 0xff;
			break;
		case 'S': case 'B':
			break;
		default:
			return 0xff;
		}
	}
	return 0x00;
}

struct cie_enc {
	Dwarf_Off off;
	uint8_t enc;
};

static void add_section_fdes(struct sym_fdes *e, Elf *elf, Elf_Scn *scn, bool eh, size_t *alloc)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Elf_Data *data = elf_getdata(scn, NULL);
	struct cie_enc *cies = NULL;
	size_t nr_cies = 0, alloc_cies = 0;
	Dwarf_Off off = 0, next;
	GElf_Shdr sh;

	if (!ident || !data || !data->d_buf || !gelf_getshdr(scn, &sh))
		return;
	for (; off != (Dwarf_Off)-1; off = next) {
		Dwarf_CFI_Entry entry;
		int r = dwarf_next_cfi(ident, data, eh, off, &next, &entry);
		const uint8_t *p, *end;
		uint64_t start, len;
		uint8_t enc = 0xff;

		if (r > 0 || (r < 0 && (next == (Dwarf_Off)-1 || next <= off)))
			break;
		if (r < 0)
			continue;
		if (dwarf_cfi_cie_p(&entry)) {
			ALLOC_GROW(cies, nr_cies + 1, alloc_cies);
			cies[nr_cies++] = (struct cie_enc){ off, cie_fde_encoding(&entry.cie, eh) };
			continue;
		}
		/* CIEs come before the FDEs that use them: look back for this one */
		for (size_t i = nr_cies; i-- > 0;)
			if (cies[i].off == entry.fde.CIE_pointer) {
				enc = cies[i].enc;
				break;
			}
		p = entry.fde.start;
		end = entry.fde.end;
		if (enc == 0xff ||
		    !read_encoded(enc, &p, end, sh.sh_addr + (p - (const uint8_t *)data->d_buf), &start) ||
		    !read_encoded(enc & 0x0f, &p, end, 0, &len) || !len || start + len < start)
			continue;
		ALLOC_GROW(e->fdes, e->nr_fdes + 1, *alloc);
		e->fdes[e->nr_fdes++] = (struct fde_range){ start, start + len };
	}
	free(cies);
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct sym_fdes *sym_fdes_build(Elf *elf)
{
	struct sym_fdes *e = xcalloc(1, sizeof(*e));
	Elf_Scn *scn = NULL;
	size_t shstrndx, alloc = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return e;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame"))
			add_section_fdes(e, elf, scn, !strcmp(name, ".eh_frame"), &alloc);
	}
	QSORT(e->fdes, e->nr_fdes, fde_cmp);
	return e;
}

void sym_fdes_free(struct sym_fdes *e)
{
	if (!e)
		return;
	free(e->fdes);
	free(e);
}

bool sym_fdes_find(const struct sym_fdes *e, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = e ? e->nr_fdes : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->fdes[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the nearest FDE starting at or before VADDR; FDEs do not overlap */
	if (!lo || vaddr >= e->fdes[lo - 1].end)
		return false;
	*start = e->fdes[lo - 1].start;
	return true;
}

