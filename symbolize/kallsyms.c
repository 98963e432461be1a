// SPDX-License-Identifier: MIT
/* Kernel function names from /proc/kallsyms, for the kernel part of call chains. */
#include "internal.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#define KALLSYMS_BUF (1u << 16)

struct ksym {
	uint64_t addr;
	size_t name;            /* offset in names */
};

struct sym_kallsyms {
	struct ksym *syms;      /* sorted by address */
	size_t nr, alloc;
	char *names;            /* each NUL-terminated, in one block: 100k+ of them */
	size_t names_nr, names_alloc;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct sym_kallsyms *sym_kallsyms_load(const char *path)
{
	struct sym_kallsyms *k;
	char *buf;
	char line[512];
	bool sorted = true;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	/* each read formats as many lines as fit: 4 KiB at a time was a read every 12 us */
	buf = xmalloc(KALLSYMS_BUF);
	setvbuf(f, buf, _IOFBF, KALLSYMS_BUF);
	k = xcalloc(1, sizeof(*k));
	/* 100k+ lines: parsed by hand, sscanf was most of a short recording's cost */
	while (fgets(line, sizeof(line), f)) {
		char *end, *name;
		unsigned long long addr = strtoull(line, &end, 16);
		size_t len;
		char type;

		if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
			continue;
		type = end[1];
		/* text symbols only; all-zero addresses mean kptr_restrict hides them */
		if (!addr || (type != 't' && type != 'T' && type != 'W' && type != 'w'))
			continue;
		name = end + 3;
		len = strcspn(name, " \t\n");
		ALLOC_GROW(k->names, k->names_nr + len + 1, k->names_alloc);
		memcpy(k->names + k->names_nr, name, len);
		k->names[k->names_nr + len] = '\0';
		ALLOC_GROW(k->syms, k->nr + 1, k->alloc);
		sorted &= !k->nr || k->syms[k->nr - 1].addr <= addr;
		k->syms[k->nr].addr = addr;
		k->syms[k->nr].name = k->names_nr;
		k->names_nr += len + 1;
		k->nr++;
	}
	fclose(f);
	free(buf);
	if (!k->nr) {
		sym_kallsyms_free(k);
		return NULL;
	}
	/* the kernel's own come in address order; modules' after them, each in its own */
	if (!sorted)
		QSORT(k->syms, k->nr, ksym_cmp);
	return k;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	free(k->names);
	free(k->syms);
	free(k);
}

const char *sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->nr;

	/* the last symbol at or below ADDR */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? k->names + k->syms[lo - 1].name : NULL;
}
