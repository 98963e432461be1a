// SPDX-License-Identifier: MIT
/*
 * The function model every writer reads: which samples a report keeps,
 * their counts per stack and per function, how a function is labelled,
 * the call tree merged by function and the folded stacks. Nothing here
 * writes a report; the writers (internal.h) and the dispatcher (report.c)
 * build on it, never the other way round.
 */
#ifndef PROFTOOL_REPORT_MODEL_H
#define PROFTOOL_REPORT_MODEL_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "report.h"

/* ---- model.c: samples, functions, sort orders, labels ---- */

/*
 * Marks the samples F keeps: an array of p->nr_samples entries, owned by
 * the caller. ONLY_THREAD or ONLY_PROCESS restricts them further to one
 * thread or process (PROFILE_NONE: any). *KEPT receives how many.
 */
bool *report_select_samples(const struct profile *p, const struct report_filter *f,
			    uint32_t only_thread, uint32_t only_process, uint64_t *kept);

/*
 * Samples and their summed weight per stack node, over the samples KEEP
 * accepts (all when KEEP is NULL): arrays of p->nr_stacks entries, owned
 * by the caller. Returns the number of samples kept; *TOTAL_NS (when not
 * NULL) their weight.
 */
uint64_t report_stack_counts(const struct profile *p, const bool *keep, uint64_t **n,
			     uint64_t **ns, uint64_t *total_ns);

/*
 * "file:line(function)", "module(function)" or the bare name, as the table
 * shows a function, into BUF (N bytes, truncated to fit). Returns the
 * length of the whole label, as snprintf does.
 */
size_t report_func_label(const struct profile_func *f, char *buf, size_t n);

/*
 * The name every writer gives a function (folded stacks, flame graphs, the
 * exports, diff): its own name, but a Python function's label
 * "FILE:FIRSTLINE(QUALNAME)", as cProfile names it, since a qualified name
 * alone ("<module>", "main") is not unique across files. Returns f->name,
 * or BUF (N bytes) holding the label.
 */
const char *report_func_name(const struct profile_func *f, char *buf, size_t n);

/*
 * report_func_name() of every function of P, whole, for writers that keep
 * names: an array of p->nr_funcs strings, freed with report_func_names_free().
 */
const char **report_func_names(const struct profile *p);
void report_func_names_free(const struct profile *p, const char **names);

/*
 * The labels above, whole whatever their length, in S (reused from call to
 * call; sbuf_release it at the end): return S's text, or for a name that
 * is printed as it is, the name itself.
 */
const char *report_func_label_sb(struct sbuf *s, const struct profile_func *f);
const char *report_func_name_sb(struct sbuf *s, const struct profile_func *f);
const char *report_loc_label_sb(struct sbuf *s, const struct profile *p, uint32_t loc);
const char *report_row_label_sb(struct sbuf *s, const struct profile *p,
				const struct report_func_stat *st);
/* profile_region_label(), whole. */
const char *report_region_label_sb(struct sbuf *s, const struct profile *p, uint32_t name);

/* Whether RE (compiled with REG_NOSUB) matches F's name, or a Python function's label. */
bool report_func_matches(const struct profile_func *f, const regex_t *re);

/*
 * Rows by line (--lines): a row is a location, a function's row is the
 * location's function. report_row_of() is the row of stack node STACK: its
 * location BY_LINE, else its function.
 */
uint32_t report_row_of(const struct profile *p, uint32_t stack, bool by_line);
/*
 * "FILE:LINE(NAME)" for location LOC, LINE being the location's (for
 * Python the line being run, for native code the source line); the
 * function's label when the line is 0 or the function has no file. Into
 * BUF (N bytes, truncated); returns the whole length.
 */
size_t report_loc_label(const struct profile *p, uint32_t loc, char *buf, size_t n);
/* The label of a row of report_func_stats() or report_line_stats(). */
size_t report_row_label(const struct profile *p, const struct report_func_stat *st, char *buf,
			size_t n);
/* Whether RE matches the row's function (report_func_matches) or, by line, its label. */
bool report_row_matches(const struct profile *p, const struct report_func_stat *st, const regex_t *re);

/*
 * Whether a row (a function, or BY_LINE a location) of the samples KEEP
 * accepts matches the POSIX ERE MATCH (report_row_matches).
 */
bool report_any_match(const struct profile *p, const bool *keep, const char *match, bool by_line);

/*
 * The kept samples grouped by thread, threads in index order, each in time
 * order: thread t's samples are order[start[t]] up to order[start[t + 1]].
 * Returns order; *START_OUT gets start (p->nr_threads + 1 entries). Both
 * are the caller's to free.
 */
size_t *report_samples_by_thread(const struct profile *p, const bool *keep, size_t **start_out);

/* Per thread of P: whether F's --pid/--tid/--comm keep it (an array to free). */
bool *report_threads_matching(const struct profile *p, const struct report_filter *f);

/*
 * The order of --sort cumtime, tottime and nsamples between two rows of
 * any table that counts self and cumulative samples and time (functions,
 * lines, groups): largest first, the other figure breaking ties. 0 for
 * the other keys, which each table orders by its own names.
 */
struct report_counts {
	uint64_t self, cum, self_ns, cum_ns;
};
#define REPORT_COUNTS(row) \
	((struct report_counts){ (row)->self, (row)->cum, (row)->self_ns, (row)->cum_ns })
int report_counts_cmp(enum report_sort key, struct report_counts x, struct report_counts y);

/* ---- folded.c: folded stacks ---- */

/*
 * Folded stacks of the samples KEEP accepts: "root;...;leaf" by
 * report_func_name() (';' in names made ':'), one entry per distinct text, sorted by
 * text. PREFIX, when not NULL, is put before the root as a frame of its
 * own; with REGION_FRAMES, the path of the region each sample was taken
 * in comes next, a frame per region (report_region_frames). Returns the
 * array (*NR entries), owned by the caller: free each text, then the
 * array (report_folded_free).
 */
struct report_folded {
	char *text;
	uint64_t count;         /* samples */
	uint64_t weight_ns;     /* their summed weight */
};
struct report_folded *report_folded_lines(const struct profile *p, const bool *keep,
					  const char *prefix, bool region_frames, size_t *nr);
void report_folded_free(struct report_folded *lines, size_t nr);

/* ---- regions.c: region paths, their statistics and their order ---- */

/* "outer/inner" (names as profile_region_label gives them), whole, in a string to free. */
char *report_region_path_dup(const struct profile *p, uint32_t node);

/*
 * Per region node: whether it is inside a region SPEC names (a name, a
 * path "a/b" a node's path ends with, "/a/b" from a thread's top), itself
 * or below. *NAMED receives how many nodes SPEC named. An array to free.
 */
bool *report_region_inside(const struct profile *p, const char *spec, size_t *named);

enum report_region_split { REPORT_SPLIT_NONE, REPORT_SPLIT_THREAD, REPORT_SPLIT_PROCESS };

/* One region path's figures (per thread or process when split). */
struct report_region_row {
	uint32_t node;
	uint32_t group;         /* the thread or process, PROFILE_NONE when not split */
	uint64_t count;         /* instances */
	uint64_t total_ns, self_ns, min_ns, max_ns; /* wall time; self less nested regions' */
	uint64_t samples, cpu_ns; /* samples inside it (nested regions' too), their weight */
	uint64_t open;          /* instances open at exit */
	uint64_t open_end;      /* instances open when the recording ended */
	uint64_t open_start;    /* instances begun before it started (attach) */
	size_t path;            /* for the writer */
};

struct report_region_totals {
	uint64_t instances, regions, threads, marks;
};

/* Whether instance R is kept by F's thread and time filters (THREAD_OK from report_threads_matching). */
bool report_region_kept(const struct profile *p, const struct profile_region *r,
			const struct report_filter *f, const bool *thread_ok);

/*
 * A row per region path (and thread or process, SPLIT) of the instances F
 * keeps, with the CPU time of the samples KEEP accepts inside each; in no
 * order. *NR rows; TOT the totals. An array to free.
 */
struct report_region_row *report_region_stats(const struct profile *p, const struct report_filter *f,
					      const bool *keep, enum report_region_split split,
					      size_t *nr, struct report_region_totals *tot);

/*
 * Sorts rows of report_region_stats() as --format regions shows them: by
 * split, then domain (the default one first), then KEY, then path. Sets
 * each row's path to its index in the array returned: the rows' paths
 * ("outer/inner"), freed with report_region_paths_free(paths, NR).
 */
char **report_region_rows_order(const struct profile *p, struct report_region_row *v, size_t nr,
				enum report_region_sort key);
void report_region_paths_free(char **paths, size_t nr);

/*
 * A row's mean duration (0 when it has no instance) and its region's
 * domain ("" for the default one), as that order and the table read them.
 */
uint64_t report_region_mean(const struct report_region_row *x);
const char *report_region_domain(const struct profile *p, const struct report_region_row *x);

/* ---- regions.c: what the exports show of the regions ---- */

/* The frame --region-frames gives a region, before its label: "[region] outer". */
#define REPORT_REGION_FRAME "[region] "

/*
 * Per instance of P: whether the exports show it: kept by F's thread and
 * time filters (report_region_kept) and, with F->region, an instance of a
 * region F names or of one nested in it. An array of p->nr_regions
 * entries to free; *NR (when not NULL) receives how many are shown.
 */
bool *report_regions_shown(const struct profile *p, const struct report_filter *f, size_t *nr);

/*
 * Per mark of P: whether the exports show it: kept by F's thread and time
 * filters and, with F->region, inside an instance SHOWN (from
 * report_regions_shown) on its own thread. An array of p->nr_marks entries
 * to free; *NR (when not NULL) receives how many.
 */
bool *report_marks_shown(const struct profile *p, const struct report_filter *f, const bool *shown,
			 size_t *nr);

/*
 * The instances SHOWN (from report_regions_shown) as a timeline draws
 * them, by thread then start, outer first: each inside its parent or
 * apart from it. An instance that begins inside another and ends after
 * it (only a damaged file has one) ends with it here. An array of *NR
 * spans to free.
 */
struct report_span {
	size_t region;          /* index into p->regions */
	uint32_t thread;
	uint64_t start_ns, end_ns; /* end_ns no later than the parent's */
	size_t parent;          /* index of the enclosing span, SIZE_MAX at the thread's top */
};
struct report_span *report_region_spans(const struct profile *p, const bool *shown, size_t *nr);

/*
 * Region node NODE's path as folded frames, outermost first:
 * "[region] outer;[region] inner" (';' in a name made ':'). A string to free.
 */
char *report_region_frames(const struct profile *p, uint32_t node);

/* ---- summary.c: the figures of the header ---- */

/* Why some stacks ended before a thread's entry, and how many. */
struct report_stop {
	const char *reason;     /* as the profile names it ("no CFI"), or REPORT_STOP_CUT */
	const char *module;     /* NULL when the reason names none, or when not known */
	uint64_t count;         /* samples */
};

/* A [truncated] root, when the profile cannot say which of the two cut it. */
#define REPORT_STOP_CUT "stack copy too small or too many frames"
/* How report_summary's not_entry and unexplained read, in the header and the JSON report. */
#define REPORT_STOP_NOT_ENTRY "at a frame that is not a thread's entry"
#define REPORT_STOP_UNEXPLAINED "for reasons known only for the whole recording"

/*
 * The samples a report keeps, next to the whole profile's. Unfiltered the
 * two agree and the stop reasons are the profile's own. Filtered, each
 * figure is the kept samples': the span is the part of a --time-range
 * window the recording covers (a time window alone), or from the first
 * kept sample to the last. The profile counts stop reasons over all its
 * samples, not per stack, so for a subset only what the stacks show is
 * exact: stops_exact is false when some kept samples' reasons are told
 * apart only by the profile's meta.stops, for the whole recording.
 */
struct report_summary {
	bool filtered;                  /* some sample left out */
	uint64_t samples, samples_total;
	uint64_t weight_ns;             /* the kept samples' summed weight */
	uint64_t duration_ns;           /* what the kept samples span; the recording's unfiltered */
	size_t procs, procs_total;      /* with a kept sample; with any sample */
	size_t threads, threads_total;
	uint64_t states[PROFILE_STATE_NR]; /* kept samples by enum profile_state */
	uint64_t complete, complete_total; /* stacks unwound to a thread's entry */
	struct report_stop *stops;      /* kept stacks that stopped early, for a known reason */
	size_t nr_stops;
	uint64_t not_entry;             /* ... at a frame that is not a thread's entry, no reason given */
	uint64_t unexplained;           /* ... for a reason given only for the whole recording */
	bool stops_exact;               /* no REPORT_STOP_CUT in stops, and unexplained is 0 */
	uint64_t jit_unnamed;           /* kept samples whose innermost frame is JIT code nobody named */
	size_t jit_mappings;            /* the distinct mappings of that code */
};

/* Fills S for the samples KEEP accepts, F being the filter that chose them. */
void report_summarize(struct report_summary *s, const struct profile *p,
		      const struct report_filter *f, const bool *keep);
void report_summary_release(struct report_summary *s);

/* ---- calltree.c: the call tree by function ---- */

/* A node is one function (or location) reached by one path of them from a root. */
struct report_tnode {
	uint32_t parent;        /* PROFILE_NONE for a root */
	uint32_t func;
	uint32_t loc;           /* by line: the location (in func); else PROFILE_NONE */
	uint64_t self, cum;     /* samples */
	uint64_t self_ns, cum_ns;
};

struct report_tree {
	struct report_tnode *nodes;
	size_t nr, alloc;
	struct idx index;       /* (parent, row) -> node */
	uint32_t **kids;        /* per node: its sampled children, largest total first */
	uint32_t *nr_kids;
	uint32_t *roots;        /* sampled roots, largest first */
	size_t nr_roots, alloc_roots;
	uint64_t total, total_ns; /* samples kept, and their weight */
};

/*
 * Builds the tree of the samples KEEP accepts (all when NULL), merged by
 * function, or BY_LINE by location. STACK_NODE, when not NULL, receives the
 * tree node of every stack node (an array of p->nr_stacks, owned by the
 * caller).
 */
void report_tree_build(struct report_tree *t, const struct profile *p, const bool *keep,
		       bool by_line, uint32_t **stack_node);
void report_tree_release(struct report_tree *t);

/* ---- groups.c: groups of samples (--group-by) and the Python split (--split) ---- */

/* What a sample was running, as --split tells them apart. */
enum report_pyclass {
	REPORT_PY_CODE,         /* Python code: a Python frame innermost, or the interpreter's own
				   code (its executable or libpython) under a Python frame */
	REPORT_PY_NATIVE,       /* native code called from Python: a Python frame on the stack,
				   the innermost frame in another module */
	REPORT_PY_OUTSIDE,      /* no Python frame, in a process that ran Python code (native
				   threads, the interpreter before and after Python code) */
	REPORT_PY_NONE,         /* a process that never ran Python code */
	REPORT_PY_NR
};

/*
 * The class of every stack of P, and which processes ran Python code (had
 * a sample with a Python frame, over the whole profile, whatever a filter
 * keeps). In a --frames view (report_frames_init) the classes are the
 * recorded stacks': the view folds frames, not what the samples ran.
 * Freed with report_pysplit_free(), which accepts NULL.
 */
struct report_pysplit;
struct report_pysplit *report_pysplit_new(const struct profile *p);
void report_pysplit_free(struct report_pysplit *s);
/*
 * Per function of P: whether it is the interpreter's own, its module being
 * the file one of p->meta.pythons ran, or named as CPython names its files
 * (python3.11, libpython3.12.so.1.0).
 * An array of p->nr_funcs entries, to free (frames.c).
 */
bool *report_interpreter_funcs(const struct profile *p);
/* Whether some process of the profile ran Python code. */
bool report_pysplit_any(const struct report_pysplit *s);
/* The class of sample SAMPLE (an index into p->samples). */
enum report_pyclass report_pysplit_class(const struct report_pysplit *s, const struct profile *p,
					 size_t sample);

/*
 * Per row (a function, or BY_LINE a location): the samples KEEP accepts
 * with the row on the stack (its cumulative samples, once per sample), by
 * class. An array of p->nr_funcs (BY_LINE p->nr_locs) entries, to free.
 */
struct report_split_row {
	uint64_t n[REPORT_PY_NR];
};
struct report_split_row *report_row_splits(const struct profile *p, const struct report_pysplit *s,
					   const bool *keep, bool by_line);

/*
 * Per function of P: whether its module is NAME. *ANY receives whether
 * some sample of P has its innermost frame in such a function. An array of
 * p->nr_funcs entries, to free.
 */
bool *report_funcs_in_module(const struct profile *p, const char *name, bool *any);

/* A group: one value per key of the grouping, and its samples. */
struct report_group {
	uint32_t value[REPORT_GROUP_NR]; /* per key, in the grouping's order (report_group_label) */
	uint64_t self, cum;     /* samples with the group's module innermost, and with it anywhere
				   on the stack (once per sample); the same without a module key */
	uint64_t self_ns, cum_ns; /* their summed weight */
	uint64_t split[REPORT_PY_NR]; /* the cumulative samples by class */
};

struct report_groups {
	struct report_group_by by;
	struct report_group *rows; /* in no order until report_groups_sort() */
	size_t nr, alloc;
	uint64_t total, total_ns; /* the samples kept, and their weight */
	uint64_t split[REPORT_PY_NR]; /* the samples kept by class */
	/* private: the names of modules, processes and threads (the profile's strings) */
	struct strtab names;
	struct idx row_idx;
	bool wall;              /* the profile knows thread states */
	bool hosts;             /* its processes ran on several hosts: labels name them */
};

/*
 * Groups the samples KEEP accepts (all when NULL) by BY. Every sample is
 * in exactly one group's self count; the rows' self counts add up to
 * total. Release with report_groups_release().
 */
void report_groups_build(struct report_groups *g, const struct profile *p,
			 const struct report_group_by *by, const bool *keep);
void report_groups_release(struct report_groups *g);
/* Sorts the rows by KEY: the sample keys as the table's, the name keys by the groups' values. */
void report_groups_sort(struct report_groups *g, const struct profile *p, enum report_sort key);
/* "module", "comm", "process", "thread", "state", "rank" or "host". */
const char *report_group_key_name(enum report_group_key key);
/*
 * The value of key K (an index into g->by.keys) of row ROW: a module,
 * process or thread name, "COMM (pid P)" for a process ("COMM (rank R of
 * N, local L, pid P on HOST)": report_process_desc), "on-cpu", "off-cpu"
 * or "unknown" for a state, a rank or "none", a host or "?", whole: in S
 * (reused) or a string of the profile's.
 */
const char *report_group_label(const struct report_groups *g, const struct profile *p, size_t row,
			       size_t k, struct sbuf *s);
/* The module of function F as the groups and --module name it ("[unknown]" when it has none). */
const char *report_func_module(const struct profile_func *f);

/* ---- ranks.c: the processes of a distributed job, as reports name them ---- */

/* Whether P's processes ran on more than one host: reports then name each one's host. */
bool report_many_hosts(const struct profile *p);
/* The host process PROC ran on, "?" when unknown. */
const char *report_process_host(const struct profile *p, uint32_t proc);
/*
 * What tells process PROC apart, in titles and labels: "rank 3 of 8, local
 * 1, pid 4242" (what is unknown of its rank left out; "pid 4242" without
 * one, never rank 0), then " on HOST" when HOSTS. In S (reused).
 */
const char *report_process_desc(const struct profile *p, uint32_t proc, bool hosts, struct sbuf *s);
/*
 * "COMM (DESC)" for process PROC, "COMM (DESC, tid TID)" for THREAD (its
 * own name): the titles of --per-process and --per-thread, the process
 * groups' labels. In S (reused).
 */
const char *report_process_title(const struct profile *p, uint32_t proc, bool hosts, struct sbuf *s);
const char *report_thread_title(const struct profile *p, uint32_t thread, bool hosts, struct sbuf *s);
/* PROC's rank as a group's value: "3", or "none"; in BUF (N bytes) or a constant. */
const char *report_rank_label(const struct profile *p, uint32_t proc, char *buf, size_t n);

/*
 * The threads of P grouped by the keys of BY, which must all be a
 * thread's own (report_group_by_threads): groups numbered in the order of
 * their values (ranks ascending, none last; names and hosts by strcmp),
 * each with a label for its title ("rank 3", "host a, rank 3", "no rank").
 * -EINVAL for a key that is not a thread's. Release with
 * report_thread_groups_release(), which accepts a zeroed one.
 */
struct report_thread_groups {
	uint32_t *of;           /* per thread: its group */
	char **label;           /* per group */
	size_t nr;
};
int report_thread_groups_init(struct report_thread_groups *tg, const struct profile *p,
			      const struct report_group_by *by);
void report_thread_groups_release(struct report_thread_groups *tg);
/*
 * The region rows V (*NR of them, split by thread: REPORT_SPLIT_THREAD)
 * added up per region path and group of TG, whose index becomes each row's
 * group: counts, times and samples summed, min and max over them. Frees V;
 * returns the new rows (*NR of them), to free.
 */
struct report_region_row *report_region_rows_by_group(struct report_region_row *v, size_t *nr,
						      const struct report_thread_groups *tg);

#endif
