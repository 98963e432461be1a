// SPDX-License-Identifier: MIT
/* The in-memory profile: interning of functions, locations and stacks, the meta's counts, and merging. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct profile *profile_new(void)
{
	struct profile *p = xcalloc(1, sizeof(*p));

	p->meta.exit_status = -1;
	return p;
}

static void meta_release(struct profile_meta *m)
{
	free(m->tool_version);
	free(m->command);
	free(m->event);
	free(m->callgraph);
	free(m->mode);
	free(m->backend);
	free(m->host);
	free(m->kernel);
	free(m->series);
	for (size_t i = 0; i < m->nr_stops; i++) {
		free(m->stops[i].reason);
		free(m->stops[i].module);
	}
	free(m->stops);
	for (size_t i = 0; i < m->nr_pythons; i++) {
		struct profile_python *py = &m->pythons[i];

		free(py->interpreter);
		free(py->version);
		free(py->unsupported);
		for (size_t j = 0; j < py->nr_misses; j++)
			free(py->misses[j].reason);
		free(py->misses);
	}
	free(m->pythons);
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	meta_release(&p->meta);
	for (size_t i = 0; i < p->nr_funcs; i++) {
		free(p->funcs[i].name);
		free(p->funcs[i].module);
		free(p->funcs[i].file);
	}
	for (size_t i = 0; i < p->nr_procs; i++) {
		free(p->procs[i].comm);
		free(p->procs[i].cmdline);
		free(p->procs[i].rss);
		free(p->procs[i].host);
	}
	for (size_t i = 0; i < p->nr_threads; i++)
		free(p->threads[i].comm);
	free(p->funcs);
	free(p->locs);
	free(p->stacks);
	free(p->procs);
	free(p->threads);
	free(p->samples);
	profile_spill_free(p->spill);
	idx_release(&p->func_idx);
	idx_release(&p->loc_idx);
	idx_release(&p->stack_idx);
	profile_regions_release(p);
	free(p);
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

uint32_t profile_add_func(struct profile *p, const char *name, const char *module,
			  const char *file, uint32_t line)
{
	uint64_t h = hash_combine(hash_combine(hash_str(name, 1), hash_str(module, 2)),
				  hash_combine(hash_str(file, 3), line));
	size_t pos = 0;
	uint32_t id;
	struct profile_func *f;

	while ((id = idx_next(&p->func_idx, h, &pos)) != IDX_NONE) {
		f = &p->funcs[id];
		if (f->line == line && str_eq(f->name, name) &&
		    str_eq(f->module, module) && str_eq(f->file, file))
			return id;
	}
	ALLOC_GROW(p->funcs, p->nr_funcs + 1, p->alloc_funcs);
	id = p->nr_funcs++;
	f = &p->funcs[id];
	f->name = xstrdup(name ? name : "[unknown]");
	f->module = xstrdup(module ? module : "[unknown]");
	f->file = xstrdup_or_null(file);
	f->line = line;
	idx_insert(&p->func_idx, h, id);
	return id;
}

uint32_t profile_add_loc(struct profile *p, uint32_t func, uint32_t line)
{
	uint64_t h = hash_combine(hash_u64(func), line);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&p->loc_idx, h, &pos)) != IDX_NONE)
		if (p->locs[id].func == func && p->locs[id].line == line)
			return id;
	ALLOC_GROW(p->locs, p->nr_locs + 1, p->alloc_locs);
	id = p->nr_locs++;
	p->locs[id].func = func;
	p->locs[id].line = line;
	idx_insert(&p->loc_idx, h, id);
	return id;
}

uint32_t profile_add_stack(struct profile *p, uint32_t parent, uint32_t loc)
{
	uint64_t h = hash_combine(hash_u64(parent), loc);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&p->stack_idx, h, &pos)) != IDX_NONE)
		if (p->stacks[id].parent == parent && p->stacks[id].loc == loc)
			return id;
	ALLOC_GROW(p->stacks, p->nr_stacks + 1, p->alloc_stacks);
	id = p->nr_stacks++;
	p->stacks[id].parent = parent;
	p->stacks[id].loc = loc;
	p->stacks[id].depth = parent == PROFILE_NONE ? 1 : p->stacks[parent].depth + 1;
	idx_insert(&p->stack_idx, h, id);
	return id;
}

uint32_t profile_add_process(struct profile *p, int32_t pid, int32_t ppid,
			     const char *comm, const char *cmdline)
{
	struct profile_process *pr;

	ALLOC_GROW(p->procs, p->nr_procs + 1, p->alloc_procs);
	pr = &p->procs[p->nr_procs];
	memset(pr, 0, sizeof(*pr));
	pr->pid = pid;
	pr->ppid = ppid;
	pr->comm = xstrdup(comm ? comm : "?");
	pr->cmdline = xstrdup_or_null(cmdline);
	pr->host = NULL;
	pr->job = (struct profile_rank)PROFILE_RANK_INIT;
	return p->nr_procs++;
}

uint32_t profile_copy_process(struct profile *p, const struct profile_process *pr)
{
	uint32_t id = profile_add_process(p, pr->pid, pr->ppid, pr->comm, pr->cmdline);

	p->procs[id].host = xstrdup_or_null(pr->host);
	p->procs[id].job = pr->job;
	return id;
}

void profile_set_host(struct profile *p, const char *host)
{
	free(p->meta.host);
	p->meta.host = xstrdup_or_null(host);
	for (size_t i = 0; i < p->nr_procs; i++) {
		free(p->procs[i].host);
		p->procs[i].host = xstrdup_or_null(host);
	}
}

size_t profile_hosts(const struct profile *p, const char ***hosts)
{
	const char **h = xmalloc(st_mult(p->nr_procs + 1, sizeof(*h)));
	size_t n = 0;

	for (size_t i = 0; i < p->nr_procs; i++) {
		size_t k = 0;

		while (k < n && !str_eq(h[k], p->procs[i].host))
			k++;
		if (k == n)
			h[n++] = p->procs[i].host;
	}
	*hosts = h;
	return n;
}

uint32_t profile_add_thread(struct profile *p, int32_t tid, uint32_t process,
			    const char *comm)
{
	struct profile_thread *t;

	ALLOC_GROW(p->threads, p->nr_threads + 1, p->alloc_threads);
	t = &p->threads[p->nr_threads];
	t->tid = tid;
	t->process = process;
	t->comm = xstrdup(comm ? comm : "?");
	return p->nr_threads++;
}

void profile_add_sample(struct profile *p, uint64_t time_ns, uint32_t thread,
			uint32_t stack, uint32_t weight_ns, enum profile_state state)
{
	struct profile_sample *s;

	profile_spill_maybe(p);
	ALLOC_GROW(p->samples, p->nr_samples + 1, p->alloc_samples);
	s = &p->samples[p->nr_samples++];
	s->time_ns = time_ns;
	s->thread = thread;
	s->stack = stack;
	s->weight_ns = weight_ns;
	s->region = PROFILE_NONE;
	s->state = (uint8_t)state;
}

/* Where the process and its threads start, in glibc, musl and the dynamic loader. */
static const char *const root_funcs[] = {
	"_start", "__libc_start_main", "__libc_start_call_main", "_dl_start_user", "_dl_start",
	"clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3",
	"start_thread", "__libc_start_main_impl", "start",
};

bool profile_func_is_root(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(root_funcs); i++)
		if (!strcmp(name, root_funcs[i]))
			return true;
	return false;
}

bool profile_func_is_unnamed_jit(const struct profile_func *f)
{
	return f->module && !strcmp(f->module, PROFILE_JIT_MODULE) && f->name &&
	       !strncmp(f->name, PROFILE_JIT_UNNAMED, strlen(PROFILE_JIT_UNNAMED));
}

/*
 * Counts in the meta saturate at INT64_MAX, the largest a JSON integer in
 * the file holds: a sum beyond it (duplicate entries in a hostile file,
 * merged files) would be written negative and dropped when read back.
 */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	if (a > INT64_MAX)
		a = INT64_MAX;
	if (b > INT64_MAX)
		b = INT64_MAX;
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

void profile_add_unwind_stop(struct profile *p, const char *reason, const char *module,
			     uint64_t count)
{
	struct profile_meta *m = &p->meta;
	struct profile_unwind_stop *st;

	for (size_t i = 0; i < m->nr_stops; i++) {
		st = &m->stops[i];
		if (!strcmp(st->reason, reason) && str_eq(st->module, module)) {
			st->count = sat_add(st->count, count);
			return;
		}
	}
	ALLOC_GROW(m->stops, m->nr_stops + 1, m->alloc_stops);
	st = &m->stops[m->nr_stops++];
	st->reason = xstrdup(reason);
	st->module = xstrdup_or_null(module);
	st->count = sat_add(0, count);
}

uint32_t profile_add_python(struct profile *p, const char *interpreter, const char *version,
			    const char *unsupported)
{
	struct profile_meta *m = &p->meta;
	struct profile_python *py;

	for (size_t i = 0; i < m->nr_pythons; i++) {
		py = &m->pythons[i];
		if (!strcmp(py->interpreter, interpreter) && str_eq(py->version, version)) {
			if (!py->unsupported)
				py->unsupported = xstrdup_or_null(unsupported);
			return i;
		}
	}
	ALLOC_GROW(m->pythons, m->nr_pythons + 1, m->alloc_pythons);
	py = &m->pythons[m->nr_pythons];
	memset(py, 0, sizeof(*py));
	py->interpreter = xstrdup(interpreter);
	py->version = xstrdup_or_null(version);
	py->unsupported = xstrdup_or_null(unsupported);
	return m->nr_pythons++;
}

void profile_add_python_miss(struct profile *p, uint32_t py, const char *reason, uint64_t count)
{
	struct profile_python *e = &p->meta.pythons[py];
	struct profile_python_miss *ms;

	for (size_t i = 0; i < e->nr_misses; i++) {
		if (!strcmp(e->misses[i].reason, reason)) {
			e->misses[i].count = sat_add(e->misses[i].count, count);
			return;
		}
	}
	ALLOC_GROW(e->misses, e->nr_misses + 1, e->alloc_misses);
	ms = &e->misses[e->nr_misses++];
	ms->reason = xstrdup(reason);
	ms->count = sat_add(0, count);
}

bool profile_func_is_python(const struct profile_func *f)
{
	return f->module && !strcmp(f->module, PROFILE_MODULE_PYTHON);
}

/* Adds SRC's interpreters and their counts to DST's, by (interpreter, version). */
static void merge_pythons(struct profile *dst, const struct profile_meta *src)
{
	for (size_t i = 0; i < src->nr_pythons; i++) {
		const struct profile_python *s = &src->pythons[i];
		uint32_t d = profile_add_python(dst, s->interpreter, s->version, s->unsupported);
		struct profile_python *e = &dst->meta.pythons[d];

		e->samples = sat_add(e->samples, s->samples);
		e->with_frames = sat_add(e->with_frames, s->with_frames);
		for (size_t j = 0; j < s->nr_misses; j++)
			profile_add_python_miss(dst, d, s->misses[j].reason, s->misses[j].count);
	}
}

void profile_count_sampled(const struct profile *p, size_t *procs, size_t *threads)
{
	bool *seen_p = xcalloc(p->nr_procs + 1, 1), *seen_t = xcalloc(p->nr_threads + 1, 1);
	struct profile_iter *it = profile_iter_new(p);
	const struct profile_sample *s;

	*procs = *threads = 0;
	while ((s = profile_iter_next(it))) {
		uint32_t t = s->thread;

		if (!seen_t[t]) {
			seen_t[t] = true;
			(*threads)++;
		}
		if (!seen_p[p->threads[t].process]) {
			seen_p[p->threads[t].process] = true;
			(*procs)++;
		}
	}
	profile_iter_free(it);
	free(seen_p);
	free(seen_t);
}

/* DST's process equal to PR, or PROFILE_NONE. */
static uint32_t find_process(const struct profile *dst, const struct profile_process *pr)
{
	for (size_t i = dst->nr_procs; i-- > 0;) {
		const struct profile_process *d = &dst->procs[i];

		if (d->pid == pr->pid && d->ppid == pr->ppid && str_eq(d->comm, pr->comm) &&
		    str_eq(d->cmdline, pr->cmdline) && str_eq(d->host, pr->host) &&
		    !memcmp(&d->job, &pr->job, sizeof(d->job)))
			return (uint32_t)i;
	}
	return PROFILE_NONE;
}

/* DST's thread equal to T in DST's process PROC, or PROFILE_NONE. */
static uint32_t find_thread(const struct profile *dst, const struct profile_thread *t, uint32_t proc)
{
	for (size_t i = dst->nr_threads; i-- > 0;) {
		const struct profile_thread *d = &dst->threads[i];

		if (d->tid == t->tid && d->process == proc && str_eq(d->comm, t->comm))
			return (uint32_t)i;
	}
	return PROFILE_NONE;
}

static void shift_sample(struct profile_sample *s, void *arg)
{
	s->time_ns += *(const uint64_t *)arg;
}

void profile_add_rss(struct profile *p, uint32_t proc, uint64_t time_ns, uint64_t rss, uint64_t anon)
{
	struct profile_process *pr = &p->procs[proc];
	size_t at = pr->nr_rss;

	ALLOC_GROW(pr->rss, pr->nr_rss + 1, pr->alloc_rss);
	/* a reading taken with a sample may come after a later one: kept in time order */
	while (at && pr->rss[at - 1].time_ns > time_ns)
		at--;
	memmove(&pr->rss[at + 1], &pr->rss[at], (pr->nr_rss - at) * sizeof(*pr->rss));
	pr->rss[at] = (struct profile_rss){ time_ns, rss, anon };
	pr->nr_rss++;
}

const struct profile_rss *profile_rss_peak(const struct profile *p, uint32_t proc)
{
	const struct profile_process *pr = &p->procs[proc];
	const struct profile_rss *best = NULL;

	for (size_t i = 0; i < pr->nr_rss; i++)
		if (!best || pr->rss[i].rss > best->rss)
			best = &pr->rss[i];
	return best;
}

void profile_shift_times(struct profile *p, uint64_t delta)
{
	if (!delta)
		return;
	profile_map_samples(p, shift_sample, &delta);
	for (size_t i = 0; i < p->nr_procs; i++)
		for (size_t k = 0; k < p->procs[i].nr_rss; k++)
			p->procs[i].rss[k].time_ns += delta;
	for (size_t i = 0; i < p->nr_regions; i++) {
		p->regions[i].start_ns += delta;
		p->regions[i].end_ns += delta;
	}
	for (size_t i = 0; i < p->nr_marks; i++)
		p->marks[i].time_ns += delta;
	for (size_t i = 0; i < p->nr_pauses; i++) {
		p->pauses[i].start_ns += delta;
		p->pauses[i].end_ns += delta;
	}
}

void profile_merge(struct profile *dst, const struct profile *src)
{
	bool same_series = dst->meta.series && src->meta.series && !strcmp(dst->meta.series, src->meta.series);
	uint32_t *fmap = xmalloc(st_mult(src->nr_funcs + 1, sizeof(*fmap)));
	uint32_t *lmap = xmalloc(st_mult(src->nr_locs + 1, sizeof(*lmap)));
	uint32_t *smap = xmalloc(st_mult(src->nr_stacks + 1, sizeof(*smap)));
	uint32_t *pmap = xmalloc(st_mult(src->nr_procs + 1, sizeof(*pmap)));
	uint32_t *tmap = xmalloc(st_mult(src->nr_threads + 1, sizeof(*tmap)));
	uint32_t *rmap;

	for (size_t i = 0; i < src->nr_funcs; i++) {
		const struct profile_func *f = &src->funcs[i];

		fmap[i] = profile_add_func(dst, f->name, f->module, f->file, f->line);
	}
	for (size_t i = 0; i < src->nr_locs; i++)
		lmap[i] = profile_add_loc(dst, fmap[src->locs[i].func], src->locs[i].line);
	for (size_t i = 0; i < src->nr_stacks; i++) {
		const struct profile_stack *s = &src->stacks[i];

		smap[i] = profile_add_stack(dst, s->parent == PROFILE_NONE ? PROFILE_NONE :
					    smap[s->parent], lmap[s->loc]);
	}
	for (size_t i = 0; i < src->nr_procs; i++) {
		const struct profile_process *pr = &src->procs[i];

		pmap[i] = same_series ? find_process(dst, pr) : PROFILE_NONE;
		if (pmap[i] == PROFILE_NONE)
			pmap[i] = profile_copy_process(dst, pr);
		/* a snapshot's readings follow the earlier ones' */
		for (size_t k = 0; k < pr->nr_rss; k++)
			profile_add_rss(dst, pmap[i], pr->rss[k].time_ns, pr->rss[k].rss, pr->rss[k].anon);
	}
	for (size_t i = 0; i < src->nr_threads; i++) {
		const struct profile_thread *t = &src->threads[i];

		tmap[i] = same_series ? find_thread(dst, t, pmap[t->process]) : PROFILE_NONE;
		if (tmap[i] == PROFILE_NONE)
			tmap[i] = profile_add_thread(dst, t->tid, pmap[t->process], t->comm);
	}
	rmap = profile_regions_merge(dst, src, tmap);
	for (size_t i = 0; i < src->nr_samples; i++) {
		const struct profile_sample *s = &src->samples[i];

		profile_add_sample(dst, s->time_ns, tmap[s->thread], smap[s->stack], s->weight_ns,
				   (enum profile_state)s->state);
		if (s->region != PROFILE_NONE)
			dst->samples[dst->nr_samples - 1].region = rmap[s->region];
	}
	for (size_t i = 0; i < src->meta.nr_stops; i++)
		profile_add_unwind_stop(dst, src->meta.stops[i].reason, src->meta.stops[i].module,
					src->meta.stops[i].count);
	merge_pythons(dst, &src->meta);
	dst->meta.lost += src->meta.lost;
	dst->meta.scanned += src->meta.scanned;
	dst->meta.python_captured += src->meta.python_captured;
	dst->meta.duration_ns += src->meta.duration_ns;
	/* a rate is only meaningful while every file has one frequency and a CPU time */
	if (dst->meta.freq != src->meta.freq)
		dst->meta.freq = 0;
	if (same_series)
		dst->meta.cpu_time_ns += src->meta.cpu_time_ns; /* one event; a short part may have counted 0 */
	else if (!dst->meta.cpu_time_ns || !src->meta.cpu_time_ns)
		dst->meta.cpu_time_ns = 0;
	else
		dst->meta.cpu_time_ns += src->meta.cpu_time_ns;
	free(fmap);
	free(lmap);
	free(smap);
	free(pmap);
	free(tmap);
	free(rmap);
}
