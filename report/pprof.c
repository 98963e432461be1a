// SPDX-License-Identifier: MIT
/*
 * pprof: the kept samples as a gzip-compressed profile.proto
 * (github.com/google/pprof/proto/profile.proto), encoded by hand.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/text.h"
#include "model.h"
#include "protobuf.h"

/* Field numbers of profile.proto, by message. */
enum {
	PB_PROFILE_SAMPLE_TYPE = 1,
	PB_PROFILE_SAMPLE = 2,
	PB_PROFILE_MAPPING = 3,
	PB_PROFILE_LOCATION = 4,
	PB_PROFILE_FUNCTION = 5,
	PB_PROFILE_STRING_TABLE = 6,
	PB_PROFILE_TIME_NANOS = 9,
	PB_PROFILE_DURATION_NANOS = 10,
	PB_PROFILE_PERIOD_TYPE = 11,
	PB_PROFILE_PERIOD = 12,
	PB_PROFILE_COMMENT = 13,
	PB_PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	PB_VALUE_TYPE_TYPE = 1,
	PB_VALUE_TYPE_UNIT = 2,

	PB_SAMPLE_LOCATION_ID = 1,
	PB_SAMPLE_VALUE = 2,
	PB_SAMPLE_LABEL = 3,

	PB_LABEL_KEY = 1,
	PB_LABEL_STR = 2,
	PB_LABEL_NUM = 3,

	PB_MAPPING_ID = 1,
	PB_MAPPING_MEMORY_START = 2,
	PB_MAPPING_MEMORY_LIMIT = 3,
	PB_MAPPING_FILENAME = 5,
	PB_MAPPING_HAS_FUNCTIONS = 7,
	PB_MAPPING_HAS_FILENAMES = 8,
	PB_MAPPING_HAS_LINE_NUMBERS = 9,

	PB_LOCATION_ID = 1,
	PB_LOCATION_MAPPING_ID = 2,
	PB_LOCATION_ADDRESS = 3,
	PB_LOCATION_LINE = 4,

	PB_LINE_FUNCTION_ID = 1,
	PB_LINE_LINE = 2,

	PB_FUNCTION_ID = 1,
	PB_FUNCTION_NAME = 2,
	PB_FUNCTION_SYSTEM_NAME = 3,
	PB_FUNCTION_FILENAME = 4,
	PB_FUNCTION_START_LINE = 5,
};

/* ---- the tables ---- */

/* A Mapping: one per module, over a made-up address range. */
struct mapping {
	uint32_t module;        /* string index of the module name */
	uint64_t start, limit;  /* synthetic addresses [start, limit), one per location */
	uint64_t next;          /* the address the next location of this module gets */
	bool has_filenames, has_line_numbers;
};

/* A pprof Sample: the kept samples of one stack node in one thread and region. */
struct agg {
	uint32_t stack, thread;
	uint32_t region;        /* the innermost region's path node, PROFILE_NONE outside any */
	uint64_t n, ns;         /* samples, their summed weight */
};

struct pprof {
	const struct profile *p;
	/* the string table; [0] is "" as profile.proto requires */
	struct strtab str;
	struct mapping *maps;   /* the main binary's first; Mapping id = index + 1 */
	size_t nr_maps, alloc_maps;
	const char **names;     /* per profile function: report_func_name() */
	uint32_t *func_id;      /* per profile function: Function id, 0 when unused */
	uint32_t *func_map;     /* per profile function: index into maps */
	uint32_t *loc_id;       /* per profile location: Location id, 0 when unused */
	uint64_t *loc_addr;     /* per profile location: its synthetic address */
	struct agg *samples;    /* sorted by (stack, thread, region), each once */
	size_t nr_samples;
	char **region_path;     /* per region node with samples: "outer/inner"; else NULL */
	char **region_name;     /* per region node with samples: "inner" (its label) */
	bool has_regions;       /* some sample is in a region */
	char **rank;            /* per process: its rank label, "3"; NULL without a rank */
};

/* The string table index of S, added on first use (S stays the profile's). */
static uint32_t intern(struct pprof *pp, const char *s)
{
	return strtab_intern(&pp->str, s);
}

/* The index into maps of MODULE's Mapping, added on first use. */
static uint32_t mapping_of(struct pprof *pp, const char *module)
{
	uint32_t s = intern(pp, module ? module : "");

	for (size_t i = 0; i < pp->nr_maps; i++)	/* a profile has a few dozen modules */
		if (pp->maps[i].module == s)
			return i;
	ALLOC_GROW(pp->maps, pp->nr_maps + 1, pp->alloc_maps);
	memset(&pp->maps[pp->nr_maps], 0, sizeof(*pp->maps));
	pp->maps[pp->nr_maps].module = s;
	return pp->nr_maps++;
}

static int agg_cmp(const void *a, const void *b)
{
	const struct agg *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->region < y->region ? -1 : x->region > y->region;
}

/* One entry per (stack node, thread, region) of the kept samples, in a fixed order. */
static void aggregate(struct pprof *pp, const bool *keep)
{
	const struct profile *p = pp->p;
	struct agg *a = xmalloc(st_mult(p->nr_samples + 1, sizeof(*a)));
	size_t n = 0, out = 0;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			a[n++] = (struct agg){ p->samples[i].stack, p->samples[i].thread,
					       p->samples[i].region, 1, p->samples[i].weight_ns };
	QSORT(a, n, agg_cmp);
	for (size_t i = 0; i < n; i++) {
		if (out && !agg_cmp(&a[out - 1], &a[i])) {
			a[out - 1].n += a[i].n;
			a[out - 1].ns += a[i].ns;
		} else {
			a[out++] = a[i];
		}
	}
	pp->samples = a;
	pp->nr_samples = out;
}

/*
 * Numbers the locations and functions the kept stacks reach, in profile
 * order, and lays out one Mapping per module. Stacks are a prefix tree, so
 * a walk stops at the first node an earlier stack already went through.
 */
static void number_tables(struct pprof *pp)
{
	const struct profile *p = pp->p;
	bool *seen = xcalloc(p->nr_stacks + 1, 1);
	uint32_t nr_funcs = 0, nr_locs = 0;
	uint64_t addr;

	pp->func_id = xcalloc(p->nr_funcs + 1, sizeof(*pp->func_id));
	pp->func_map = xcalloc(p->nr_funcs + 1, sizeof(*pp->func_map));
	pp->loc_id = xcalloc(p->nr_locs + 1, sizeof(*pp->loc_id));
	pp->loc_addr = xcalloc(p->nr_locs + 1, sizeof(*pp->loc_addr));
	for (size_t i = 0; i < pp->nr_samples; i++) {
		for (uint32_t s = pp->samples[i].stack; s != PROFILE_NONE && !seen[s];
		     s = p->stacks[s].parent) {
			seen[s] = true;
			pp->loc_id[p->stacks[s].loc] = 1;
			pp->func_id[p->locs[p->stacks[s].loc].func] = 1;
		}
	}
	free(seen);

	/* pprof takes the first Mapping for the main binary ("File:" in its reports) */
	for (size_t f = 0; f < p->nr_funcs; f++) {
		if (pp->func_id[f] && !strcmp(p->funcs[f].name, "main") &&
		    !profile_func_is_python(&p->funcs[f])) {
			mapping_of(pp, p->funcs[f].module);
			break;
		}
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		if (!pp->func_id[f])
			continue;
		pp->func_id[f] = ++nr_funcs;
		pp->func_map[f] = mapping_of(pp, p->funcs[f].module);
		intern(pp, pp->names[f]);
		intern(pp, p->funcs[f].name);
		intern(pp, p->funcs[f].file ? p->funcs[f].file : "");
	}

	/*
	 * We keep no addresses, but pprof wants each Location inside its
	 * Mapping's range: give each module a run of consecutive made-up
	 * addresses, one per location, the runs side by side from 1 up.
	 */
	for (size_t l = 0; l < p->nr_locs; l++) {
		struct mapping *m;

		if (!pp->loc_id[l])
			continue;
		pp->loc_id[l] = ++nr_locs;
		m = &pp->maps[pp->func_map[p->locs[l].func]];
		m->limit++;	/* counts the module's locations for now */
		m->has_filenames |= p->funcs[p->locs[l].func].file != NULL;
		m->has_line_numbers |= p->locs[l].line != 0;
	}
	addr = 1;
	for (size_t i = 0; i < pp->nr_maps; i++) {
		struct mapping *m = &pp->maps[i];

		m->start = m->next = addr;
		addr += m->limit;
		m->limit = addr;
	}
	for (size_t l = 0; l < p->nr_locs; l++)
		if (pp->loc_id[l])
			pp->loc_addr[l] = pp->maps[pp->func_map[p->locs[l].func]].next++;
}

/* ---- writing ---- */

static void put_value_type(struct pb_gz *z, struct pb *m, uint32_t field, uint32_t type, uint32_t unit)
{
	pb_int(m, PB_VALUE_TYPE_TYPE, type);
	pb_int(m, PB_VALUE_TYPE_UNIT, unit);
	pb_gz_field(z, field, m);
}

static void put_label(struct pb *m, struct pb *sub, uint32_t key, uint32_t str, int64_t num)
{
	pb_int(sub, PB_LABEL_KEY, key);
	pb_int(sub, PB_LABEL_STR, str);
	pb_int(sub, PB_LABEL_NUM, (uint64_t)num);	/* int64: two's complement, as protobuf does */
	pb_msg(m, PB_SAMPLE_LABEL, sub);
	sub->len = 0;
}

/* The comm label: the name of the thread's process, as --group-by comm has it. */
static const char *comm_of(const struct profile *p, uint32_t thread)
{
	const char *comm = p->procs[p->threads[thread].process].comm;

	return comm ? comm : "";
}

/* The module label: the module of the stack's innermost frame. */
static const char *leaf_module(const struct profile *p, uint32_t stack)
{
	return report_func_module(&p->funcs[p->locs[p->stacks[stack].loc].func]);
}

static void put_samples(struct pprof *pp, struct pb_gz *z, struct pb *m, struct pb *sub)
{
	const struct profile *p = pp->p;
	uint32_t k_thread = intern(pp, "thread"), k_pid = intern(pp, "pid"), k_tid = intern(pp, "tid");
	uint32_t k_comm = intern(pp, "comm"), k_module = intern(pp, "module");
	uint32_t k_rank = intern(pp, "rank"), k_host = intern(pp, "host");
	/* interned by name_regions() when some sample is in a region */
	uint32_t k_region = pp->has_regions ? intern(pp, "region") : 0;
	uint32_t k_region_name = pp->has_regions ? intern(pp, "region_name") : 0;
	uint64_t *ids = NULL;
	size_t alloc_ids = 0;

	for (size_t i = 0; i < pp->nr_samples; i++) {
		const struct agg *a = &pp->samples[i];
		const struct profile_thread *th = &p->threads[a->thread];
		uint64_t values[2] = { a->n, a->ns };
		size_t n = 0;

		/* leaf first, as pprof lists them */
		for (uint32_t s = a->stack; s != PROFILE_NONE; s = p->stacks[s].parent) {
			ALLOC_GROW(ids, n + 1, alloc_ids);
			ids[n++] = pp->loc_id[p->stacks[s].loc];
		}
		pb_packed(m, PB_SAMPLE_LOCATION_ID, ids, n);
		pb_packed(m, PB_SAMPLE_VALUE, values, 2);
		put_label(m, sub, k_thread, intern(pp, th->comm ? th->comm : ""), 0);
		put_label(m, sub, k_pid, 0, p->procs[th->process].pid);
		put_label(m, sub, k_tid, 0, th->tid);
		put_label(m, sub, k_comm, intern(pp, comm_of(p, a->thread)), 0);
		put_label(m, sub, k_module, intern(pp, leaf_module(p, a->stack)), 0);
		/*
		 * A string: pprof drops a numeric label of 0 without a unit, and
		 * rank 0 is a rank. A process without a rank has none, never "0".
		 */
		if (pp->rank[th->process])
			put_label(m, sub, k_rank, intern(pp, pp->rank[th->process]), 0);
		put_label(m, sub, k_host, intern(pp, report_process_host(p, th->process)), 0);
		if (a->region != PROFILE_NONE) {
			put_label(m, sub, k_region, intern(pp, pp->region_path[a->region]), 0);
			put_label(m, sub, k_region_name, intern(pp, pp->region_name[a->region]), 0);
		}
		pb_gz_field(z, PB_PROFILE_SAMPLE, m);
	}
	free(ids);
}

static void put_mappings(struct pprof *pp, struct pb_gz *z, struct pb *m)
{
	for (size_t i = 0; i < pp->nr_maps; i++) {
		const struct mapping *mp = &pp->maps[i];

		pb_int(m, PB_MAPPING_ID, i + 1);
		pb_int(m, PB_MAPPING_MEMORY_START, mp->start);
		pb_int(m, PB_MAPPING_MEMORY_LIMIT, mp->limit);
		pb_int(m, PB_MAPPING_FILENAME, mp->module);
		/* every Location has its function: pprof must not try to symbolize */
		pb_int(m, PB_MAPPING_HAS_FUNCTIONS, 1);
		pb_int(m, PB_MAPPING_HAS_FILENAMES, mp->has_filenames);
		pb_int(m, PB_MAPPING_HAS_LINE_NUMBERS, mp->has_line_numbers);
		pb_gz_field(z, PB_PROFILE_MAPPING, m);
	}
}

/* Inline frames are stack nodes of their own already, so each Location has one Line. */
static void put_locations(struct pprof *pp, struct pb_gz *z, struct pb *m, struct pb *sub)
{
	const struct profile *p = pp->p;

	for (size_t l = 0; l < p->nr_locs; l++) {
		if (!pp->loc_id[l])
			continue;
		pb_int(m, PB_LOCATION_ID, pp->loc_id[l]);
		pb_int(m, PB_LOCATION_MAPPING_ID, pp->func_map[p->locs[l].func] + 1);
		pb_int(m, PB_LOCATION_ADDRESS, pp->loc_addr[l]);
		pb_int(sub, PB_LINE_FUNCTION_ID, pp->func_id[p->locs[l].func]);
		pb_int(sub, PB_LINE_LINE, p->locs[l].line);
		pb_msg(m, PB_LOCATION_LINE, sub);
		sub->len = 0;
		pb_gz_field(z, PB_PROFILE_LOCATION, m);
	}
}

static void put_functions(struct pprof *pp, struct pb_gz *z, struct pb *m)
{
	const struct profile *p = pp->p;

	for (size_t f = 0; f < p->nr_funcs; f++) {
		const struct profile_func *fn = &p->funcs[f];

		if (!pp->func_id[f])
			continue;
		pb_int(m, PB_FUNCTION_ID, pp->func_id[f]);
		/* a Python function: named by its label, its qualified name the system's */
		pb_int(m, PB_FUNCTION_NAME, intern(pp, pp->names[f]));
		pb_int(m, PB_FUNCTION_SYSTEM_NAME, intern(pp, fn->name));
		pb_int(m, PB_FUNCTION_FILENAME, intern(pp, fn->file ? fn->file : ""));
		pb_int(m, PB_FUNCTION_START_LINE, fn->line);
		pb_gz_field(z, PB_PROFILE_FUNCTION, m);
	}
}

static void release(struct pprof *pp)
{
	strtab_release(&pp->str);
	report_func_names_free(pp->p, pp->names);
	free(pp->maps);
	free(pp->func_id);
	free(pp->func_map);
	free(pp->loc_id);
	free(pp->loc_addr);
	free(pp->samples);
	if (pp->region_path)
		for (size_t n = 0; n < pp->p->nr_region_nodes; n++) {
			free(pp->region_path[n]);
			free(pp->region_name[n]);
		}
	free(pp->region_path);
	free(pp->region_name);
	if (pp->rank)
		for (size_t i = 0; i < pp->p->nr_procs; i++)
			free(pp->rank[i]);
	free(pp->rank);
}

/* The labels of the regions the samples were taken in: their paths and names, interned. */
static void name_regions(struct pprof *pp)
{
	const struct profile *p = pp->p;

	pp->region_path = xcalloc(p->nr_region_nodes + 1, sizeof(*pp->region_path));
	pp->region_name = xcalloc(p->nr_region_nodes + 1, sizeof(*pp->region_name));
	for (size_t i = 0; i < pp->nr_samples; i++) {
		uint32_t r = pp->samples[i].region;
		struct sbuf label = SBUF_INIT;

		if (r == PROFILE_NONE || pp->region_path[r])
			continue;
		pp->region_path[r] = report_region_path_dup(p, r);
		pp->region_name[r] = xstrdup(report_region_label_sb(&label, p, p->region_nodes[r].name));
		sbuf_release(&label);
		intern(pp, "region");
		intern(pp, "region_name");
		pp->has_regions = true;
		intern(pp, pp->region_path[r]);
		intern(pp, pp->region_name[r]);
	}
}

/*
 * Samples are aggregated by stack node, thread and region, with the
 * thread's name and ids as labels, so pprof's -tags and -tagfocus still
 * tell threads apart; with the process's name and the innermost frame's
 * module as labels comm and module (what --group-by comm and module group
 * by), so that -tagfocus comm=worker picks a kind of process; the
 * process's rank (for a process that has one) and host as labels rank and
 * host, so that -tagfocus 'rank=^3$' picks one rank's samples; and the
 * region's path ("outer/inner") and name ("inner") as labels region and
 * region_name, so that -tagfocus region=outer/inner picks the samples
 * taken in it. Fields go out in field-number order, as pprof's own writer does;
 * every string is interned before the string table is written.
 */
int report_write_pprof(FILE *out, const struct profile *p, const bool *keep)
{
	const struct profile_meta *meta = &p->meta;
	bool wall = meta->mode && !strcmp(meta->mode, "wall");
	struct pprof pp = { .p = p };
	struct pb m = { 0 }, sub = { 0 };
	uint32_t s_samples, s_count, s_time, s_ns, s_command = 0;
	struct pb_gz *z = xmalloc(sizeof(*z));	/* 64 KiB of buffer: not on the stack */
	int ret;

	intern(&pp, "");
	s_samples = intern(&pp, "samples");
	s_count = intern(&pp, "count");
	/* a counting event's samples stand for events: "page-faults"/"count" */
	s_time = intern(&pp, report_counts_events(p) ? meta->event : wall ? "wall" : "cpu");
	s_ns = intern(&pp, report_counts_events(p) ? "count" : "nanoseconds");
	intern(&pp, "thread");
	intern(&pp, "pid");
	intern(&pp, "tid");
	intern(&pp, "comm");
	intern(&pp, "module");
	intern(&pp, "rank");
	intern(&pp, "host");
	pp.names = report_func_names(p);
	aggregate(&pp, keep);
	number_tables(&pp);
	name_regions(&pp);
	for (size_t i = 0; i < pp.nr_samples; i++) {
		const struct agg *a = &pp.samples[i];
		const struct profile_thread *th = &p->threads[a->thread];

		intern(&pp, th->comm ? th->comm : "");
		intern(&pp, comm_of(p, a->thread));
		intern(&pp, leaf_module(p, a->stack));
		intern(&pp, report_process_host(p, th->process));
	}
	pp.rank = xcalloc(p->nr_procs + 1, sizeof(*pp.rank));
	for (size_t i = 0; i < p->nr_procs; i++)
		if (p->procs[i].job.rank >= 0)
			pp.rank[i] = xstrfmt("%d", (int)p->procs[i].job.rank);
	for (size_t i = 0; i < pp.nr_samples; i++)
		if (pp.rank[p->threads[pp.samples[i].thread].process])
			intern(&pp, pp.rank[p->threads[pp.samples[i].thread].process]);
	if (meta->command)
		s_command = intern(&pp, meta->command);

	ret = pb_gz_open(z, out);
	if (ret < 0)
		goto out;
	put_value_type(z, &m, PB_PROFILE_SAMPLE_TYPE, s_samples, s_count);
	put_value_type(z, &m, PB_PROFILE_SAMPLE_TYPE, s_time, s_ns);
	put_samples(&pp, z, &m, &sub);
	put_mappings(&pp, z, &m);
	put_locations(&pp, z, &m, &sub);
	put_functions(&pp, z, &m);
	for (size_t i = 0; i < pp.str.nr; i++) {
		/* protobuf strings must be UTF-8: the names are printable already, the rest escaped */
		char *clean = text_printable(pp.str.str[i]);
		const char *s = clean ? clean : pp.str.str[i];

		pb_bytes(&m, PB_PROFILE_STRING_TABLE, s, strlen(s));
		free(clean);
		pb_gz_put(z, m.b, m.len);
		m.len = 0;
	}
	pb_gz_int(z, PB_PROFILE_TIME_NANOS, meta->start_real_ns);
	pb_gz_int(z, PB_PROFILE_DURATION_NANOS, meta->duration_ns);
	put_value_type(z, &m, PB_PROFILE_PERIOD_TYPE, s_time, s_ns);
	pb_gz_int(z, PB_PROFILE_PERIOD, meta->period_ns);
	if (s_command) {
		uint64_t c = s_command;

		pb_packed(&m, PB_PROFILE_COMMENT, &c, 1);
		pb_gz_put(z, m.b, m.len);
		m.len = 0;
	}
	pb_gz_int(z, PB_PROFILE_DEFAULT_SAMPLE_TYPE, s_time);
	ret = pb_gz_close(z);
out:
	free(z);
	free(m.b);
	free(sub.b);
	release(&pp);
	return ret;
}
