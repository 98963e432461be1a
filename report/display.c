// SPDX-License-Identifier: MIT
/* The printable view of a profile: every name as reports print it (report.h). */
#include "report.h"

#include <string.h>

#include "base/text.h"

static void *own(struct report_display *d, void *mem)
{
	ALLOC_GROW(d->owned, d->nr_owned + 1, d->alloc_owned);
	d->owned[d->nr_owned++] = mem;
	return mem;
}

const char *report_display_str(struct report_display *d, const char *s)
{
	char *e;

	if (!s || !(e = text_printable(s)))
		return s;
	return own(d, e);
}

/* Points *S at its printable form; whether that is another string. */
static bool fix(struct report_display *d, char **s)
{
	const char *e = report_display_str(d, *s);

	if (e == *s)
		return false;
	*s = (char *)e;
	return true;
}

/* *ARR, copied into memory D owns the first time one of its entries must change. */
static void *copy_once(struct report_display *d, void *arr, size_t n, size_t size, bool *copied)
{
	if (*copied)
		return arr;
	*copied = true;
	return memcpy(own(d, xmalloc(st_mult(n, size))), arr, n * size);
}

/* Fixes field FIELD of entry I of view array ARR (N entries), copying ARR first when needed. */
#define FIX_ENTRY(d, arr, n, i, field, copied, changed)                                  \
	do {                                                                             \
		char *s_ = (arr)[i].field;                                              \
		if (fix((d), &s_)) {                                                     \
			(arr) = copy_once((d), (arr), (n), sizeof(*(arr)), &(copied));   \
			(arr)[i].field = s_;                                             \
			(changed) = true;                                                \
		}                                                                        \
	} while (0)

static bool fix_meta(struct report_display *d, struct profile_meta *m)
{
	bool changed = false, copied = false;
	char **strs[] = { &m->tool_version, &m->command, &m->event, &m->callgraph, &m->mode,
			  &m->backend, &m->host, &m->kernel, &m->series };

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		changed |= fix(d, strs[i]);
	for (size_t i = 0; i < m->nr_stops; i++) {
		FIX_ENTRY(d, m->stops, m->nr_stops, i, reason, copied, changed);
		FIX_ENTRY(d, m->stops, m->nr_stops, i, module, copied, changed);
	}
	copied = false;
	for (size_t i = 0; i < m->nr_pythons; i++) {
		bool mcopied = false, mchanged = false;
		struct profile_python_miss *misses = m->pythons[i].misses;

		FIX_ENTRY(d, m->pythons, m->nr_pythons, i, interpreter, copied, changed);
		FIX_ENTRY(d, m->pythons, m->nr_pythons, i, version, copied, changed);
		FIX_ENTRY(d, m->pythons, m->nr_pythons, i, unsupported, copied, changed);
		for (size_t j = 0; j < m->pythons[i].nr_misses; j++)
			FIX_ENTRY(d, misses, m->pythons[i].nr_misses, j, reason, mcopied, mchanged);
		if (mchanged) {
			m->pythons = copy_once(d, m->pythons, m->nr_pythons, sizeof(*m->pythons), &copied);
			m->pythons[i].misses = misses;
			changed = true;
		}
	}
	return changed;
}

const struct profile *report_display_init(struct report_display *d, const struct profile *p)
{
	struct profile *v = &d->view;
	bool changed = false, copied;

	memset(d, 0, sizeof(*d));
	if (!p)
		return NULL;
	*v = *p;
	copied = false;
	for (size_t i = 0; i < v->nr_funcs; i++) {
		FIX_ENTRY(d, v->funcs, v->nr_funcs, i, name, copied, changed);
		FIX_ENTRY(d, v->funcs, v->nr_funcs, i, module, copied, changed);
		FIX_ENTRY(d, v->funcs, v->nr_funcs, i, file, copied, changed);
	}
	copied = false;
	for (size_t i = 0; i < v->nr_procs; i++) {
		FIX_ENTRY(d, v->procs, v->nr_procs, i, comm, copied, changed);
		FIX_ENTRY(d, v->procs, v->nr_procs, i, cmdline, copied, changed);
		FIX_ENTRY(d, v->procs, v->nr_procs, i, host, copied, changed);
	}
	copied = false;
	for (size_t i = 0; i < v->nr_threads; i++)
		FIX_ENTRY(d, v->threads, v->nr_threads, i, comm, copied, changed);
	copied = false;
	for (size_t i = 0; i < v->nr_region_names; i++) {
		FIX_ENTRY(d, v->region_names, v->nr_region_names, i, domain, copied, changed);
		FIX_ENTRY(d, v->region_names, v->nr_region_names, i, name, copied, changed);
	}
	changed |= fix_meta(d, &v->meta);
	return changed ? v : p;
}

void report_display_release(struct report_display *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_owned; i++)
		free(d->owned[i]);
	free(d->owned);
	d->owned = NULL;
	d->nr_owned = d->alloc_owned = 0;
}
