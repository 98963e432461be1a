// SPDX-License-Identifier: MIT
/* Internals shared between the report's files. */
#ifndef PROFTOOL_REPORT_INTERNAL_H
#define PROFTOOL_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/*
 * Samples and their summed weight per stack node, over the samples KEEP
 * accepts (all when KEEP is NULL): arrays of p->nr_stacks entries, owned
 * by the caller. Returns the number of samples kept; *TOTAL_NS (when not
 * NULL) their weight.
 */
uint64_t report_stack_counts(const struct profile *p, const bool *keep, uint64_t **n,
			     uint64_t **ns, uint64_t *total_ns);

/* "file:line(function)", "module(function)" or the bare name, as the table shows a function. */
void report_func_label(const struct profile_func *f, char *buf, size_t n);

/* The call tree by function: a node is one function reached by one path of functions from a root. */
struct report_tnode {
	uint32_t parent;        /* PROFILE_NONE for a root */
	uint32_t func;
	uint64_t self, cum;     /* samples */
	uint64_t self_ns, cum_ns;
};

struct report_tree {
	struct report_tnode *nodes;
	size_t nr, alloc;
	struct idx index;       /* (parent, func) -> node */
	uint32_t **kids;        /* per node: its sampled children, largest total first */
	uint32_t *nr_kids;
	uint32_t *roots;        /* sampled roots, largest first */
	size_t nr_roots, alloc_roots;
	uint64_t total, total_ns; /* samples kept, and their weight */
};

/*
 * Builds the tree of the samples KEEP accepts (all when NULL). STACK_NODE,
 * when not NULL, receives the tree node of every stack node (an array of
 * p->nr_stacks, owned by the caller).
 */
void report_tree_build(struct report_tree *t, const struct profile *p, const bool *keep,
		       uint32_t **stack_node);
void report_tree_release(struct report_tree *t);

/* The call tree of the samples KEEP accepts, children by total, small nodes folded. */
void report_write_tree(FILE *out, const struct profile *p, const bool *keep, double min_percent);

/* Whether a function of the samples KEEP accepts has a name matching the POSIX ERE MATCH. */
bool report_any_match(const struct profile *p, const bool *keep, const char *match);

/*
 * pstats' print_callers/print_callees: for each function (matching MATCH, in
 * SORT order, at most LIMIT), who called it or what it called, with the
 * samples in which both were on the stack. -ENOENT when none matched.
 */
int report_write_calls(FILE *out, const struct profile *p, const bool *keep, bool callers,
		       const char *match, size_t limit, enum report_sort sort);

/*
 * Folded stacks of the samples KEEP accepts: "root;...;leaf" by function
 * name (';' in names made ':'), one entry per distinct text, sorted by
 * text. PREFIX, when not NULL, is put before the root as a frame of its
 * own. Returns the array (*NR entries), owned by the caller: free each
 * text, then the array (report_folded_free).
 */
struct report_folded {
	char *text;
	uint64_t count;         /* samples */
	uint64_t weight_ns;     /* their summed weight */
};
struct report_folded *report_folded_lines(const struct profile *p, const bool *keep,
					  const char *prefix, size_t *nr);
void report_folded_free(struct report_folded *lines, size_t nr);

/* ---- text.c: shared by the writers ---- */

/*
 * Length of the well-formed UTF-8 sequence at S (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), 0 when there is none.
 */
size_t report_utf8_len(const unsigned char *s);
/*
 * Names come from symbol tables and may hold any byte. NULL when S is
 * valid UTF-8; otherwise a copy (the caller frees) with each byte that
 * does not start a well-formed sequence replaced by U+FFFD.
 */
char *report_utf8_clean(const char *s);
/* S escaped for the inside of a JSON string (invalid UTF-8 as U+FFFD); with the quotes. */
void report_json_chars(FILE *out, const char *s);
void report_json_string(FILE *out, const char *s);
/*
 * The kept samples grouped by thread, threads in index order, each in time
 * order: thread t's samples are order[start[t]] up to order[start[t + 1]].
 * Returns order; *START_OUT gets start (p->nr_threads + 1 entries). Both
 * are the caller's to free.
 */
size_t *report_samples_by_thread(const struct profile *p, const bool *keep, size_t **start_out);

/* ---- whole-profile formats; each returns 0 or a negative errno ---- */

/* json.c: the aggregated profile, and hierarchical timers. */
int report_write_json(FILE *out, const struct profile *p, const bool *keep);
int report_write_timers(FILE *out, const struct profile *p, const bool *keep);

/* speedscope.c: speedscope's file format, one sampled profile per thread. */
int report_write_speedscope(FILE *out, const struct profile *p, const bool *keep);

/* chrome.c: Chrome trace event JSON, a timeline per process and thread. */
int report_write_chrome(FILE *out, const struct profile *p, const bool *keep);

/* pprof.c: gzip-compressed profile.proto. */
int report_write_pprof(FILE *out, const struct profile *p, const bool *keep);

/* flame.c: self-contained interactive flame graphs. */
struct flame_stack {
	const char *folded;     /* "root;...;leaf" */
	uint64_t count;         /* samples in the profile drawn */
	uint64_t base_count;    /* diff: samples in the base profile */
};
struct flame_input {
	const char *title;
	const char *subtitle;   /* may be NULL */
	uint64_t period_ns;     /* time per sample for tooltips; 0: counts only */
	const struct flame_stack *stacks;
	size_t nr_stacks;
	bool diff;              /* colour frames by change against the base */
	uint64_t total, base_total; /* sums of count and base_count */
};
int report_write_flame(FILE *out, const struct flame_input *in, bool html);
/* The flame graph of the samples KEEP accepts. */
int report_write_flame_profile(FILE *out, const struct profile *p, const bool *keep, bool html);

#endif
