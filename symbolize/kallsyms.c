// SPDX-License-Identifier: MIT
/* Kernel function names from /proc/kallsyms, for the kernel part of call chains. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct ksym {
	uint64_t addr;
	char *name;
};

struct sym_kallsyms {
	struct ksym *syms;      /* sorted by address */
	size_t nr, alloc;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct sym_kallsyms *sym_kallsyms_load(const char *path)
{
	struct sym_kallsyms *k;
	char line[512];
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	k = xcalloc(1, sizeof(*k));
	/* 100k+ lines: parsed by hand, sscanf was most of a short recording's cost */
	while (fgets(line, sizeof(line), f)) {
		char *end, *name;
		unsigned long long addr = strtoull(line, &end, 16);
		char type;

		if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
			continue;
		type = end[1];
		/* text symbols only; all-zero addresses mean kptr_restrict hides them */
		if (!addr || (type != 't' && type != 'T' && type != 'W' && type != 'w'))
			continue;
		name = end + 3;
		name[strcspn(name, " \t\n")] = '\0';
		ALLOC_GROW(k->syms, k->nr + 1, k->alloc);
		k->syms[k->nr].addr = addr;
		k->syms[k->nr].name = xstrdup(name);
		k->nr++;
	}
	fclose(f);
	if (!k->nr) {
		sym_kallsyms_free(k);
		return NULL;
	}
	QSORT(k->syms, k->nr, ksym_cmp);
	return k;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr; i++)
		free(k->syms[i].name);
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
	return lo ? k->syms[lo - 1].name : NULL;
}
