// SPDX-License-Identifier: MIT
/* The symbol index of symbolize/elf.c names every address as libdwfl's dwfl_module_addrinfo does. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"
#include "unit.h"

/* The name libdwfl gives VADDR, as sym_elf_resolve shows it (no @VERSION, demangled); malloc'd. */
static char *libdwfl_name(Dwfl_Module *m, uint64_t vaddr)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m, vaddr, &off, &sym, NULL, NULL, NULL);
	char *bare, *dm;

	if (!name)
		return NULL;
	bare = strdup(name);
	if (strchr(bare, '@') && strchr(bare, '@') != bare)
		*strchr(bare, '@') = '\0';
	dm = sym_demangle(bare);
	if (!dm)
		return bare;
	free(bare);
	return dm;
}

/* Compares the two at about 4000 addresses of every code section of PATH; returns the mismatches. */
static int compare_file(const char *path, size_t *named)
{
	struct sym_elf *e = sym_elf_open(path, -1);
	Dwfl *d = dwfl_begin(&sym_dwfl_callbacks);
	Dwfl_Module *m;
	Elf_Scn *scn = NULL;
	GElf_Addr bias;
	Elf *elf;
	int bad = 0;

	if (!e || !d) {
		fprintf(stderr, "# cannot open %s\n", path);
		sym_elf_close(e);
		dwfl_end(d);
		return 1;
	}
	dwfl_report_begin(d);
	m = dwfl_report_elf(d, "file", path, -1, 0, true);
	dwfl_report_end(d, NULL, NULL);
	elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		uint64_t step;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		step = sh.sh_size / 4000 + 1;
		for (uint64_t v = sh.sh_addr; v < sh.sh_addr + sh.sh_size; v += step) {
			struct sym_frame fr[SYM_MAX_INLINE];
			char *want = libdwfl_name(m, v);
			/* without a symbol, DWARF may still name the function: compare only with one */
			int k = sym_elf_resolve(e, v, fr);
			const char *got = k > 0 ? fr[0].func : NULL;

			*named += want != NULL;
			if (want ? !got || strcmp(want, got) : k > 0 && strcmp(got, "[unknown]") &&
			    dwfl_module_addrdie(m, v, &bias) == NULL) {
				if (bad++ < 5)
					fprintf(stderr, "# %s 0x%llx: libdwfl %s, index %s\n", path,
						(unsigned long long)v, want ? want : "none", got ? got : "none");
			}
			free(want);
		}
	}
	sym_elf_close(e);
	dwfl_end(d);
	return bad;
}

/* This test's own executable (full .symtab, DWARF) and the C library (.dynsym, maybe libc6-dbg). */
static void same_names_as_libdwfl(void)
{
	const char *files[] = { "/proc/self/exe", "/lib/x86_64-linux-gnu/libc.so.6" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		size_t named = 0;

		CHECK_EQ_U(compare_file(files[i], &named), 0);
		CHECK(named > 500);
	}
}

int main(void)
{
	RUN(same_names_as_libdwfl);
	UNIT_DONE();
}
