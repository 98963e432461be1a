// SPDX-License-Identifier: MIT
/*
 * The profile's regions: names and their paths interned, instances, marks
 * and paused spans; how the file holds them (docs/profile-format.md,
 * "Regions"), and merging.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t profile_add_region_name(struct profile *p, const char *domain, const char *name)
{
	uint64_t h = hash_combine(hash_str(domain, 5), hash_str(name, 6));
	size_t pos = 0;
	uint32_t id;
	struct profile_region_name *e;

	while ((id = idx_next(&p->rname_idx, h, &pos)) != IDX_NONE) {
		e = &p->region_names[id];
		if (!strcmp(e->domain, domain) && !strcmp(e->name, name))
			return id;
	}
	ALLOC_GROW(p->region_names, p->nr_region_names + 1, p->alloc_region_names);
	id = p->nr_region_names++;
	e = &p->region_names[id];
	e->domain = xstrdup(domain);
	e->name = xstrdup(name);
	idx_insert(&p->rname_idx, h, id);
	return id;
}

uint32_t profile_add_region_node(struct profile *p, uint32_t parent, uint32_t name)
{
	uint64_t h = hash_combine(hash_u64(parent), name);
	size_t pos = 0;
	uint32_t id;
	struct profile_region_node *n;

	while ((id = idx_next(&p->rnode_idx, h, &pos)) != IDX_NONE)
		if (p->region_nodes[id].parent == parent && p->region_nodes[id].name == name)
			return id;
	ALLOC_GROW(p->region_nodes, p->nr_region_nodes + 1, p->alloc_region_nodes);
	id = p->nr_region_nodes++;
	n = &p->region_nodes[id];
	n->parent = parent;
	n->name = name;
	n->depth = parent == PROFILE_NONE ? 1 : p->region_nodes[parent].depth + 1;
	idx_insert(&p->rnode_idx, h, id);
	return id;
}

void profile_add_region(struct profile *p, uint32_t thread, uint32_t node, uint64_t start_ns,
			uint64_t end_ns, uint32_t flags)
{
	struct profile_region *r;

	ALLOC_GROW(p->regions, p->nr_regions + 1, p->alloc_regions);
	r = &p->regions[p->nr_regions++];
	r->thread = thread;
	r->node = node;
	r->start_ns = start_ns;
	r->end_ns = end_ns < start_ns ? start_ns : end_ns;
	r->flags = flags;
}

void profile_add_mark(struct profile *p, uint32_t thread, uint32_t name, uint64_t time_ns)
{
	ALLOC_GROW(p->marks, p->nr_marks + 1, p->alloc_marks);
	p->marks[p->nr_marks++] = (struct profile_mark){ thread, name, time_ns };
}

void profile_add_pause(struct profile *p, uint64_t start_ns, uint64_t end_ns)
{
	size_t at = p->nr_pauses, out;

	if (end_ns < start_ns)
		end_ns = start_ns;
	/* kept in time order and apart: a span that meets or overlaps others joins them */
	while (at > 0 && p->pauses[at - 1].start_ns > start_ns)
		at--;
	ALLOC_GROW(p->pauses, p->nr_pauses + 1, p->alloc_pauses);
	memmove(p->pauses + at + 1, p->pauses + at, (p->nr_pauses - at) * sizeof(*p->pauses));
	p->pauses[at] = (struct profile_pause){ start_ns, end_ns };
	p->nr_pauses++;
	out = 0;
	for (size_t i = 1; i < p->nr_pauses; i++) {
		struct profile_pause *last = &p->pauses[out];

		/* touching too: a pause cut in two by a snapshot is one again when they merge */
		if (p->pauses[i].start_ns <= last->end_ns) {
			if (p->pauses[i].end_ns > last->end_ns)
				last->end_ns = p->pauses[i].end_ns;
		} else {
			p->pauses[++out] = p->pauses[i];
		}
	}
	p->nr_pauses = out + 1;
}

bool profile_in_pause(const struct profile *p, uint64_t t)
{
	size_t lo = 0, hi = p->nr_pauses;

	/* the first span that ends after T (spans are in time order, apart) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->pauses[mid].end_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nr_pauses && p->pauses[lo].start_ns <= t;
}

static bool not_paused(const struct profile_sample *s, void *arg)
{
	return !profile_in_pause(arg, s->time_ns);
}

void profile_drop_paused(struct profile *p)
{
	if (p->nr_pauses)
		profile_drop_samples(p, not_paused, p);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int region_cmp(const void *a, const void *b, void *arg)
{
	const struct profile_region *x = a, *y = b;
	const struct profile *p = arg;
	int r;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if ((r = cmp_u64(x->start_ns, y->start_ns)))
		return r;
	/* begun in the same nanosecond: the outer one first */
	if ((r = cmp_u64(p->region_nodes[x->node].depth, p->region_nodes[y->node].depth)))
		return r;
	return cmp_u64(x->node, y->node);
}

static int mark_cmp(const void *a, const void *b)
{
	const struct profile_mark *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return cmp_u64(x->time_ns, y->time_ns) ? cmp_u64(x->time_ns, y->time_ns) : cmp_u64(x->name, y->name);
}

static int pause_cmp(const void *a, const void *b)
{
	const struct profile_pause *x = a, *y = b;

	return cmp_u64(x->start_ns, y->start_ns) ? cmp_u64(x->start_ns, y->start_ns) :
	       cmp_u64(x->end_ns, y->end_ns);
}

void profile_sort_regions(struct profile *p)
{
	QSORT_R(p->regions, p->nr_regions, region_cmp, p);
	QSORT(p->marks, p->nr_marks, mark_cmp);
	QSORT(p->pauses, p->nr_pauses, pause_cmp);
}

const char *profile_region_label(const struct profile *p, uint32_t name, char *buf, size_t n)
{
	const struct profile_region_name *e = &p->region_names[name];

	if (*e->domain)
		snprintf(buf, n, "%s::%s", e->domain, e->name);
	else
		snprintf(buf, n, "%s", e->name);
	return buf;
}

void profile_regions_release(struct profile *p)
{
	for (size_t i = 0; i < p->nr_region_names; i++) {
		free(p->region_names[i].domain);
		free(p->region_names[i].name);
	}
	free(p->region_names);
	free(p->region_nodes);
	free(p->regions);
	free(p->marks);
	free(p->pauses);
	idx_release(&p->rname_idx);
	idx_release(&p->rnode_idx);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	a = a > INT64_MAX ? INT64_MAX : a;
	b = b > INT64_MAX ? INT64_MAX : b;
	return b > INT64_MAX - a ? INT64_MAX : a + b;
}

uint32_t *profile_regions_merge(struct profile *dst, const struct profile *src, const uint32_t *tmap)
{
	uint32_t *nmap = xmalloc(st_mult(src->nr_region_names + 1, sizeof(*nmap)));
	uint32_t *rmap = xmalloc(st_mult(src->nr_region_nodes + 1, sizeof(*rmap)));
	struct profile_region_stats *d = &dst->meta.regions;
	const struct profile_region_stats *s = &src->meta.regions;

	for (size_t i = 0; i < src->nr_region_names; i++)
		nmap[i] = profile_add_region_name(dst, src->region_names[i].domain, src->region_names[i].name);
	for (size_t i = 0; i < src->nr_region_nodes; i++) {
		const struct profile_region_node *n = &src->region_nodes[i];

		rmap[i] = profile_add_region_node(dst, n->parent == PROFILE_NONE ? PROFILE_NONE :
						  rmap[n->parent], nmap[n->name]);
	}
	for (size_t i = 0; i < src->nr_regions; i++) {
		const struct profile_region *r = &src->regions[i];

		profile_add_region(dst, tmap[r->thread], rmap[r->node], r->start_ns, r->end_ns, r->flags);
	}
	for (size_t i = 0; i < src->nr_marks; i++)
		profile_add_mark(dst, tmap[src->marks[i].thread], nmap[src->marks[i].name],
				 src->marks[i].time_ns);
	for (size_t i = 0; i < src->nr_pauses; i++)
		profile_add_pause(dst, src->pauses[i].start_ns, src->pauses[i].end_ns);
	d->events = sat_add(d->events, s->events);
	d->dropped = sat_add(d->dropped, s->dropped);
	d->torn = sat_add(d->torn, s->torn);
	d->unbalanced = sat_add(d->unbalanced, s->unbalanced);
	d->open_at_exit = sat_add(d->open_at_exit, s->open_at_exit);
	d->open_at_end = sat_add(d->open_at_end, s->open_at_end);
	d->open_at_start = sat_add(d->open_at_start, s->open_at_start);
	d->paused = sat_add(d->paused, s->paused);
	free(nmap);
	return rmap;
}

/* ---- the file ---- */

static bool has_regions(const struct profile *p)
{
	const struct profile_region_stats *s = &p->meta.regions;

	return p->nr_region_names || p->nr_pauses || s->events || s->dropped || s->torn;
}

json_t *profile_regions_meta_to_json(struct jbuild *b, const struct profile_meta *m)
{
	const struct profile_region_stats *s = &m->regions;

	return jb_new(b, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "events", profile_count_int(s->events),
			 "dropped", profile_count_int(s->dropped),
			 "torn", profile_count_int(s->torn),
			 "unbalanced", profile_count_int(s->unbalanced),
			 "open_at_exit", profile_count_int(s->open_at_exit),
			 "open_at_end", profile_count_int(s->open_at_end),
			 "open_at_start", profile_count_int(s->open_at_start),
			 "paused", profile_count_int(s->paused)));
}

json_t *profile_regions_tables_to_json(struct jbuild *b, const struct profile *p)
{
	json_t *dom, *name, *par, *nname, *ps, *pe;

	if (!has_regions(p))
		return NULL;
	dom = jb_new(b, json_array());
	name = jb_new(b, json_array());
	par = jb_new(b, json_array());
	nname = jb_new(b, json_array());
	ps = jb_new(b, json_array());
	pe = jb_new(b, json_array());
	for (size_t i = 0; i < p->nr_region_names; i++) {
		jb_append(b, dom, jb_str(b, p->region_names[i].domain));
		jb_append(b, name, jb_str(b, p->region_names[i].name));
	}
	for (size_t i = 0; i < p->nr_region_nodes; i++) {
		uint32_t pa = p->region_nodes[i].parent;

		jb_append(b, par, jb_int(b, pa == PROFILE_NONE ? -1 : (json_int_t)pa));
		jb_append(b, nname, jb_int(b, p->region_nodes[i].name));
	}
	for (size_t i = 0; i < p->nr_pauses; i++) {
		jb_append(b, ps, jb_int(b, (json_int_t)p->pauses[i].start_ns));
		jb_append(b, pe, jb_int(b, (json_int_t)p->pauses[i].end_ns));
	}
	return jb_new(b, json_pack("{s:{s:o, s:o}, s:{s:o, s:o}, s:{s:o, s:o}}",
				   "names", "domain", dom, "name", name,
				   "nodes", "parent", par, "name", nname,
				   "pauses", "start_ns", ps, "end_ns", pe));
}

/* Instances and marks can number millions: written column by column as text, not built in jansson. */
void profile_regions_write_columns(struct zout *z, const struct profile *p)
{
	int64_t prev;

	if (!has_regions(p))
		return;
	zputs(z, ",\"region_instances\":{\"thread\":[");
	for (size_t i = 0; i < p->nr_regions; i++)
		zput_int(z, p->regions[i].thread, !i);
	zputs(z, "],\"node\":[");
	for (size_t i = 0; i < p->nr_regions; i++)
		zput_int(z, p->regions[i].node, !i);
	zputs(z, "],\"start_ns_delta\":[");
	prev = 0;
	for (size_t i = 0; i < p->nr_regions; i++) {
		zput_int(z, (int64_t)p->regions[i].start_ns - prev, !i);
		prev = (int64_t)p->regions[i].start_ns;
	}
	zputs(z, "],\"duration_ns\":[");
	for (size_t i = 0; i < p->nr_regions; i++)
		zput_int(z, (int64_t)(p->regions[i].end_ns - p->regions[i].start_ns), !i);
	zputs(z, "],\"flags\":[");
	for (size_t i = 0; i < p->nr_regions; i++)
		zput_int(z, p->regions[i].flags, !i);
	zputs(z, "]},\"region_marks\":{\"thread\":[");
	for (size_t i = 0; i < p->nr_marks; i++)
		zput_int(z, p->marks[i].thread, !i);
	zputs(z, "],\"name\":[");
	for (size_t i = 0; i < p->nr_marks; i++)
		zput_int(z, p->marks[i].name, !i);
	zputs(z, "],\"time_ns\":[");
	for (size_t i = 0; i < p->nr_marks; i++)
		zput_int(z, (int64_t)p->marks[i].time_ns, !i);
	zputs(z, "]}");
}

void profile_regions_read_meta(struct profile *p, json_t *meta)
{
	json_t *o = json_object_get(meta, "regions");
	struct profile_region_stats *s = &p->meta.regions;
	json_int_t v[8] = { 0 };

	if (!json_is_object(o))
		return;
	/* figures for the header only: a malformed one reads as 0 */
	json_unpack(o, "{s?I, s?I, s?I, s?I, s?I, s?I, s?I, s?I}", "events", &v[0], "dropped", &v[1],
		    "torn", &v[2], "unbalanced", &v[3], "open_at_exit", &v[4], "paused", &v[5],
		    "open_at_end", &v[6], "open_at_start", &v[7]);
	s->events = v[0] > 0 ? v[0] : 0;
	s->dropped = v[1] > 0 ? v[1] : 0;
	s->torn = v[2] > 0 ? v[2] : 0;
	s->unbalanced = v[3] > 0 ? v[3] : 0;
	s->open_at_exit = v[4] > 0 ? v[4] : 0;
	s->paused = v[5] > 0 ? v[5] : 0;
	s->open_at_end = v[6] > 0 ? v[6] : 0;
	s->open_at_start = v[7] > 0 ? v[7] : 0;
}

/* Times are at most INT64_MAX / 2 ns (146 years): sums of two never overflow. */
#define TIME_MAX (INT64_MAX / 2)

static void read_instances(struct reader *r, struct profile *p, json_t *o)
{
	json_t *a = reader_array(r, o, "thread", 0, false);
	size_t n = a ? json_array_size(a) : 0;
	json_t *b = reader_array(r, o, "node", n, true), *c = reader_array(r, o, "start_ns_delta", n, true);
	json_t *d = reader_array(r, o, "duration_ns", n, true), *e = reader_array(r, o, "flags", n, true);
	int64_t start = 0;

	if (n && (!p->nr_threads || !p->nr_region_nodes))
		reader_bad(r, "region instances refer to empty thread or region tables");
	for (size_t i = 0; !r->bad && i < n; i++) {
		uint32_t th = reader_int_at(r, a, i, 0, (json_int_t)p->nr_threads - 1, "region thread");
		uint32_t node = reader_int_at(r, b, i, 0, (json_int_t)p->nr_region_nodes - 1, "region node");
		json_int_t dt = reader_int_at(r, c, i, -start, TIME_MAX - start, "region start");
		json_int_t len = reader_int_at(r, d, i, 0, TIME_MAX, "region duration");
		uint32_t flags = reader_int_at(r, e, i, 0, PROFILE_REGION_OPEN_AT_EXIT |
					       PROFILE_REGION_OPEN_AT_END | PROFILE_REGION_OPEN_AT_START,
					       "region flags");

		start += dt;
		profile_add_region(p, th, node, (uint64_t)start, (uint64_t)start + (uint64_t)len, flags);
	}
}

static void read_marks(struct reader *r, struct profile *p, json_t *o)
{
	json_t *a = reader_array(r, o, "thread", 0, false);
	size_t n = a ? json_array_size(a) : 0;
	json_t *b = reader_array(r, o, "name", n, true), *c = reader_array(r, o, "time_ns", n, true);

	if (n && (!p->nr_threads || !p->nr_region_names))
		reader_bad(r, "region marks refer to empty thread or name tables");
	for (size_t i = 0; !r->bad && i < n; i++) {
		uint32_t th = reader_int_at(r, a, i, 0, (json_int_t)p->nr_threads - 1, "mark thread");
		uint32_t name = reader_int_at(r, b, i, 0, (json_int_t)p->nr_region_names - 1, "mark name");
		json_int_t t = reader_int_at(r, c, i, 0, TIME_MAX, "mark time");

		profile_add_mark(p, th, name, (uint64_t)t);
	}
}

void profile_regions_read_tables(struct reader *r, struct profile *p, json_t *root)
{
	json_t *tables = json_object_get(root, "regions"), *names, *nodes, *pauses, *a, *b;
	size_t n;

	/* optional, added without a version bump: files without regions have none */
	if (!tables)
		return;
	names = json_object_get(tables, "names");
	nodes = json_object_get(tables, "nodes");
	pauses = json_object_get(tables, "pauses");
	a = reader_array(r, names, "domain", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, names, "name", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		const char *dom = reader_str_at(r, a, i, false, "region domain");
		const char *name = reader_str_at(r, b, i, false, "region name");

		if (!r->bad && profile_add_region_name(p, dom, name) != i)
			reader_bad(r, "region name %zu is a duplicate", i);
	}
	a = reader_array(r, nodes, "parent", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, nodes, "name", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		json_int_t par = reader_int_at(r, a, i, -1, (json_int_t)i - 1, "region node parent");
		uint32_t name = reader_int_at(r, b, i, 0, (json_int_t)p->nr_region_names - 1, "region node name");

		if (!r->bad && profile_add_region_node(p, par < 0 ? PROFILE_NONE : (uint32_t)par, name) != i)
			reader_bad(r, "region node %zu is a duplicate", i);
	}
	a = reader_array(r, pauses, "start_ns", 0, false);
	n = a ? json_array_size(a) : 0;
	b = reader_array(r, pauses, "end_ns", n, true);
	for (size_t i = 0; !r->bad && i < n; i++) {
		json_int_t s = reader_int_at(r, a, i, 0, TIME_MAX, "pause start");
		json_int_t e = reader_int_at(r, b, i, s, TIME_MAX, "pause end");

		profile_add_pause(p, (uint64_t)s, (uint64_t)e);
	}
	if (!r->bad)
		read_instances(r, p, json_object_get(root, "region_instances"));
	if (!r->bad)
		read_marks(r, p, json_object_get(root, "region_marks"));
	if (!r->bad)
		profile_sort_regions(p);
}
