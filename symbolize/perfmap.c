// SPDX-License-Identifier: MIT
/* JIT symbols from /tmp/perf-PID.map, the format node --perf-basic-prof and python -X perf write. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

struct jit_sym {
	uint64_t start, size;
	char *name;
};

struct sym_perfmap {
	struct jit_sym *syms;   /* sorted by start */
	size_t nr, alloc;
};

static int jit_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct sym_perfmap *sym_perfmap_load(int32_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct sym_perfmap *m;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	m = xcalloc(1, sizeof(*m));
	/*
	 * each line: START SIZE NAME, addresses in hex; NAME may hold spaces and
	 * be of any length (a JIT's C++ names): read whole, never in pieces
	 * whose tails would parse as lines of their own
	 */
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, size;
		int at = 0;

		if (sscanf(line, "%llx %llx %n", &start, &size, &at) != 2 || !at || !size)
			continue;
		line[strcspn(line, "\n")] = '\0';
		ALLOC_GROW(m->syms, m->nr + 1, m->alloc);
		m->syms[m->nr].start = start;
		m->syms[m->nr].size = size;
		m->syms[m->nr].name = xstrdup(line + at);
		m->nr++;
	}
	free(line);
	fclose(f);
	/* stable: a later entry for the same start (recompiled code) wins below */
	QSORT(m->syms, m->nr, jit_cmp);
	return m;
}

void sym_perfmap_free(struct sym_perfmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr; i++)
		free(m->syms[i].name);
	free(m->syms);
	free(m);
}

const char *sym_perfmap_find(const struct sym_perfmap *m, uint64_t addr, uint64_t *start)
{
	size_t lo = 0, hi = m->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->syms[lo - 1].start + m->syms[lo - 1].size)
		return NULL;
	*start = m->syms[lo - 1].start;
	return m->syms[lo - 1].name;
}
