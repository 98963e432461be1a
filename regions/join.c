// SPDX-License-Identifier: MIT
/*
 * Joining the programs' region events with the profile: each thread's
 * events become region instances (nested by its own begins and ends),
 * marks and paused spans; each sample learns the innermost region its
 * thread was in when it was taken; samples in a paused span go.
 */
#include "regions.h"

#include <stdlib.h>
#include <string.h>

#include "regions/format.h"

/* The profile's threads by (pid, tid): a tid can have several entries (an exec makes a new process). */
struct key_threads {
	int32_t pid, tid;
	uint32_t *threads;              /* profile thread indexes, in creation order */
	size_t nr, alloc;
	uint64_t *first;                /* their first sample's time, UINT64_MAX without any */
	struct rgn_event *ev;           /* every writer's events of this thread, merged by time */
	size_t nr_ev;
	/* where the innermost region changed: at time[i] it became node[i] (PROFILE_NONE: none) */
	uint64_t *t_time;
	uint32_t *t_node;
	size_t nr_t, alloc_t;
};

struct join {
	bool (*alive)(int32_t pid);
	struct profile *p;
	struct rgn_set *s;
	uint64_t start_ns, end_ns;      /* the span joined (the recording's, or a snapshot's), CLOCK_MONOTONIC */
	uint64_t events;                /* events in it */
	struct key_threads *keys;
	size_t nr_keys, alloc_keys;
	struct idx key_idx;
	uint32_t *key_of_thread;        /* per profile thread */
	uint32_t *name_map;             /* the set's names to the profile's */
	uint64_t *last_sample;          /* per key: its threads' last sample time */
};

static uint64_t key_hash(int32_t pid, int32_t tid)
{
	return hash_combine(hash_u64((uint32_t)pid), (uint32_t)tid);
}

static uint32_t find_key(struct join *j, int32_t pid, int32_t tid, bool add)
{
	uint64_t h = key_hash(pid, tid);
	size_t pos = 0;
	uint32_t id;
	struct key_threads *k;

	while ((id = idx_next(&j->key_idx, h, &pos)) != IDX_NONE)
		if (j->keys[id].pid == pid && j->keys[id].tid == tid)
			return id;
	if (!add)
		return IDX_NONE;
	ALLOC_GROW(j->keys, j->nr_keys + 1, j->alloc_keys);
	id = (uint32_t)j->nr_keys++;
	k = &j->keys[id];
	memset(k, 0, sizeof(*k));
	k->pid = pid;
	k->tid = tid;
	idx_insert(&j->key_idx, h, id);
	return id;
}

static void key_add_thread(struct key_threads *k, uint32_t thread)
{
	size_t alloc = k->alloc;

	ALLOC_GROW(k->threads, k->nr + 1, k->alloc);
	if (k->alloc != alloc)
		k->first = xrealloc(k->first, st_mult(k->alloc, sizeof(*k->first)));
	k->threads[k->nr] = thread;
	k->first[k->nr++] = UINT64_MAX;
}

static void index_threads(struct join *j)
{
	struct profile *p = j->p;

	j->key_of_thread = xmalloc(st_mult(p->nr_threads + 1, sizeof(uint32_t)));
	for (size_t t = 0; t < p->nr_threads; t++) {
		const struct profile_thread *th = &p->threads[t];
		uint32_t k = find_key(j, p->procs[th->process].pid, th->tid, true);

		j->key_of_thread[t] = k;
		key_add_thread(&j->keys[k], (uint32_t)t);
	}
}

/* A process entry for PID: the last one the profile has, else a new one. */
static uint32_t process_of(struct profile *p, int32_t pid, const char *comm)
{
	for (size_t i = p->nr_procs; i-- > 0;)
		if (p->procs[i].pid == pid)
			return (uint32_t)i;
	return profile_add_process(p, pid, 0, comm, NULL);
}

/* A thread that wrote events but was never sampled still gets its entry, for its regions. */
static void add_unsampled(struct join *j)
{
	struct rgn_set *s = j->s;

	for (size_t i = 0; i < s->nr_threads; i++) {
		const struct rgn_thread *rt = &s->threads[i];
		uint32_t k;

		if (!rt->nr || find_key(j, rt->pid, rt->tid, false) != IDX_NONE)
			continue;
		k = find_key(j, rt->pid, rt->tid, true);
		key_add_thread(&j->keys[k], profile_add_thread(j->p, rt->tid,
							       process_of(j->p, rt->pid, rt->comm), rt->comm));
		j->key_of_thread = xrealloc(j->key_of_thread, st_mult(j->p->nr_threads + 1, sizeof(uint32_t)));
		j->key_of_thread[j->p->nr_threads - 1] = k;
	}
}

/* Sorts EV by time, keeping the order of equal times (qsort would not): a merge sort. */
static void sort_by_time(struct rgn_event *ev, size_t n)
{
	struct rgn_event *tmp = xmalloc(st_mult(n + 1, sizeof(*tmp))), *src = ev, *dst = tmp, *swap;

	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = src[b].time_ns < src[a].time_ns ? src[b++] : src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != ev)
		memcpy(ev, src, n * sizeof(*ev));
	free(tmp);
}

/*
 * Each key's events from every writer (the C runtime, Python, an exec's
 * next image), in time order; a stable sort keeps each writer's own order
 * where times tie.
 */
static void gather_events(struct join *j)
{
	struct rgn_set *s = j->s;

	for (size_t i = 0; i < s->nr_threads; i++) {
		const struct rgn_thread *rt = &s->threads[i];
		struct key_threads *k;

		s->dropped += rt->dropped;
		if (!rt->nr)
			continue;
		k = &j->keys[find_key(j, rt->pid, rt->tid, false)];
		k->ev = xrealloc(k->ev, st_mult(k->nr_ev + rt->nr, sizeof(*k->ev)));
		/* what a program that runs on wrote after the recording ended is not in it */
		for (size_t e = 0; e < rt->nr; e++) {
			if (rt->ev[e].time_ns > j->end_ns)
				continue;
			k->ev[k->nr_ev++] = rt->ev[e];
			j->events += rt->ev[e].time_ns >= j->start_ns;
		}
	}
	for (size_t i = 0; i < j->nr_keys; i++) {
		struct key_threads *k = &j->keys[i];
		bool sorted = true;

		for (size_t e = 1; e < k->nr_ev && sorted; e++)
			sorted = k->ev[e - 1].time_ns <= k->ev[e].time_ns;
		if (!sorted)
			sort_by_time(k->ev, k->nr_ev);
	}
}

/* Event time to the profile's: since the span began, an earlier one at 0. */
static uint64_t rel(const struct join *j, uint64_t t)
{
	return t > j->start_ns ? t - j->start_ns : 0;
}

/* PAUSE and RESUME of every process, in time order: the recording is paused between them. */
static void find_pauses(struct join *j)
{
	struct rgn_event *all = NULL;
	size_t nr = 0, alloc = 0;
	bool paused = false;
	uint64_t from = 0;

	for (size_t i = 0; i < j->nr_keys; i++) {
		const struct key_threads *k = &j->keys[i];

		for (size_t e = 0; e < k->nr_ev; e++) {
			if (k->ev[e].kind != RGN_PAUSE && k->ev[e].kind != RGN_RESUME)
				continue;
			ALLOC_GROW(all, nr + 1, alloc);
			all[nr++] = k->ev[e];
		}
	}
	sort_by_time(all, nr);
	for (size_t i = 0; i < nr; i++) {
		if (all[i].kind == RGN_PAUSE && !paused) {
			paused = true;
			from = rel(j, all[i].time_ns);
		} else if (all[i].kind == RGN_RESUME && paused) {
			paused = false;
			/* a span over before the snapshot is the earlier one's */
			if (all[i].time_ns >= j->start_ns)
				profile_add_pause(j->p, from, rel(j, all[i].time_ns));
		}
	}
	if (paused)
		profile_add_pause(j->p, from, rel(j, j->end_ns > j->start_ns ? j->end_ns : j->start_ns));
	free(all);
}

static void first_last_samples(struct profile_sample *s, void *arg)
{
	struct join *j = arg;
	struct key_threads *k = &j->keys[j->key_of_thread[s->thread]];
	uint64_t *last = &j->last_sample[j->key_of_thread[s->thread]];

	for (size_t i = 0; i < k->nr; i++)
		if (k->threads[i] == s->thread && s->time_ns < k->first[i])
			k->first[i] = s->time_ns;
	if (s->time_ns > *last)
		*last = s->time_ns;
}

/* The profile thread an instance beginning at T belongs to: the last entry sampled by then. */
static uint32_t thread_at(const struct key_threads *k, uint64_t t)
{
	uint32_t best = k->threads[0];

	for (size_t i = 1; i < k->nr; i++)
		if (k->first[i] != UINT64_MAX && k->first[i] <= t)
			best = k->threads[i];
	return best;
}

struct open_region {
	uint32_t name;                  /* the set's */
	uint32_t node;                  /* the profile's; PROFILE_NONE for one begun while paused */
	uint32_t under;                 /* the innermost recorded region at its begin */
	uint64_t start;                 /* relative */
	bool before;                    /* begun before the recording (attach): counted from its start */
};

static void transition(struct key_threads *k, uint64_t t, uint32_t node)
{
	if (k->nr_t && k->t_time[k->nr_t - 1] == t) {
		k->t_node[k->nr_t - 1] = node;  /* the later change of one instant wins */
		return;
	}
	if (k->nr_t && k->t_node[k->nr_t - 1] == node)
		return;
	if (k->nr_t + 1 > k->alloc_t) {
		k->alloc_t = k->alloc_t ? 2 * k->alloc_t : 16;
		k->t_time = xrealloc(k->t_time, st_mult(k->alloc_t, sizeof(*k->t_time)));
		k->t_node = xrealloc(k->t_node, st_mult(k->alloc_t, sizeof(*k->t_node)));
	}
	k->t_time[k->nr_t] = t;
	k->t_node[k->nr_t++] = node;
}

static uint32_t top_node(const struct open_region *st, size_t depth)
{
	return depth ? (st[depth - 1].node != PROFILE_NONE ? st[depth - 1].node : st[depth - 1].under) :
		       PROFILE_NONE;
}

static void close_region(struct join *j, struct key_threads *k, const struct open_region *o,
			 uint64_t end, uint32_t flags)
{
	if (o->node == PROFILE_NONE)
		return;
	profile_add_region(j->p, thread_at(k, o->start), o->node, o->start, end,
			   flags | (o->before ? PROFILE_REGION_OPEN_AT_START : 0));
	j->p->meta.regions.open_at_start += o->before;
}

/* One thread's events, begin to end, into instances, marks and transitions. */
static void walk_thread(struct join *j, struct key_threads *k, uint64_t last_sample)
{
	struct profile_region_stats *st = &j->p->meta.regions;
	struct open_region *stack = NULL;
	size_t depth = 0, alloc = 0;
	uint64_t last = 0;
	uint32_t end_flag = PROFILE_REGION_OPEN_AT_EXIT;

	for (size_t e = 0; e < k->nr_ev; e++) {
		const struct rgn_event *ev = &k->ev[e];
		uint64_t t = rel(j, ev->time_ns);
		bool before = ev->time_ns < j->start_ns, paused = profile_in_pause(j->p, t);
		size_t at, kept;

		last = t;
		switch (ev->kind) {
		case RGN_BEGIN: {
			uint32_t under = top_node(stack, depth);

			ALLOC_GROW(stack, depth + 1, alloc);
			stack[depth] = (struct open_region){ ev->name, PROFILE_NONE, under, t, before };
			if (paused)
				st->paused += !before;
			else
				stack[depth].node = profile_add_region_node(j->p, under, j->name_map[ev->name]);
			depth++;
			transition(k, t, top_node(stack, depth));
			break;
		}
		case RGN_END:
			for (at = depth; at > 0 && stack[at - 1].name != ev->name; at--)
				;
			if (!at) {
				st->unbalanced += !before; /* an end with no begin: left out */
				break;
			}
			/*
			 * Regions of its domain begun inside it and never ended close
			 * with it (unbalanced); those of other domains (ITT's
			 * interleave) stay open, where they are.
			 */
			kept = 0;
			for (size_t x = at - 1; x < depth; x++) {
				struct open_region *o = &stack[x];

				if (x > at - 1 && strcmp(j->s->names[o->name].domain,
							 j->s->names[ev->name].domain)) {
					stack[at - 1 + kept++] = *o;
					continue;
				}
				if (x > at - 1)
					st->unbalanced += !before;
				/* attach: what ended before the recording is not in it */
				if (!before)
					close_region(j, k, o, t, 0);
			}
			depth = at - 1 + kept;
			transition(k, t, top_node(stack, depth));
			break;
		case RGN_MARK:
			if (before)
				break;
			if (paused)
				st->paused++;
			else
				profile_add_mark(j->p, thread_at(k, t), j->name_map[ev->name], t);
			break;
		default:
			break;                  /* pauses: find_pauses() */
		}
	}
	/*
	 * Open when the recording ended: in a process still running, closed
	 * there; else at the thread's end (an exit, a crash, a kill), at its
	 * last sign of life.
	 */
	if (last_sample > last)
		last = last_sample;
	if (depth && j->alive && j->alive(k->pid))
		end_flag = PROFILE_REGION_OPEN_AT_END;
	if (end_flag == PROFILE_REGION_OPEN_AT_END && rel(j, j->end_ns) > last)
		last = rel(j, j->end_ns);
	while (depth) {
		bool counted = stack[depth - 1].node != PROFILE_NONE;

		close_region(j, k, &stack[depth - 1], last, end_flag);
		if (counted && end_flag == PROFILE_REGION_OPEN_AT_EXIT)
			st->open_at_exit++;
		else if (counted)
			st->open_at_end++;
		depth--;
	}
	transition(k, last, PROFILE_NONE);
	free(stack);
}

static void tag_sample(struct profile_sample *s, void *arg)
{
	struct join *j = arg;
	const struct key_threads *k = &j->keys[j->key_of_thread[s->thread]];
	size_t lo = 0, hi = k->nr_t;

	/* the last change at or before the sample */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->t_time[mid] <= s->time_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	s->region = lo ? k->t_node[lo - 1] : PROFILE_NONE;
}

void rgn_join(struct profile *p, struct rgn_set *s, uint64_t start_ns, uint64_t end_ns,
	      bool (*alive)(int32_t pid))
{
	struct join j = { .alive = alive, .p = p, .s = s, .start_ns = start_ns, .end_ns = end_ns };
	struct profile_region_stats *st = &p->meta.regions;

	index_threads(&j);
	add_unsampled(&j);
	j.name_map = xmalloc(st_mult(s->nr_names + 1, sizeof(*j.name_map)));
	for (size_t i = 0; i < s->nr_names; i++)
		j.name_map[i] = profile_add_region_name(p, s->names[i].domain, s->names[i].name);
	gather_events(&j);
	find_pauses(&j);
	j.last_sample = xcalloc(j.nr_keys + 1, sizeof(*j.last_sample));
	profile_map_samples(p, first_last_samples, &j);
	for (size_t i = 0; i < j.nr_keys; i++)
		if (j.keys[i].nr_ev)
			walk_thread(&j, &j.keys[i], j.last_sample[i]);
	if (p->nr_region_nodes)
		profile_map_samples(p, tag_sample, &j);
	profile_drop_paused(p);
	profile_sort_regions(p);
	st->events += j.events;
	st->dropped += s->dropped;
	st->torn += s->torn;
	for (size_t i = 0; i < j.nr_keys; i++) {
		struct key_threads *k = &j.keys[i];

		free(k->threads);
		free(k->first);
		free(k->ev);
		free(k->t_time);
		free(k->t_node);
	}
	free(j.keys);
	idx_release(&j.key_idx);
	free(j.key_of_thread);
	free(j.name_map);
	free(j.last_sample);
}
