// SPDX-License-Identifier: MIT
/* Turning a profile into what people read (tables, trees) and what other tools open. */
#ifndef PROFTOOL_REPORT_H
#define PROFTOOL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum report_format {
	REPORT_TABLE,
	REPORT_FOLDED,
	REPORT_TREE,
	REPORT_CALLERS,
	REPORT_CALLEES,
	REPORT_REGIONS,    /* the named regions' table */
	REPORT_GROUPS,     /* the groups' table alone (--group-by; comm,module by default) */
	/* whole-profile formats: no header, no per-thread sections */
	REPORT_JSON,       /* the aggregated profile (docs/report-json.md) */
	REPORT_TIMERS,     /* hierarchical timers: total/self/count/children */
	REPORT_SPEEDSCOPE, /* speedscope's file format, one sampled profile per thread */
	REPORT_CHROME,     /* Chrome trace events, a timeline per thread */
	REPORT_PPROF,      /* gzip'd profile.proto */
	REPORT_SVG,        /* interactive flame graph */
	REPORT_HTML,       /* the same flame graph in an HTML page */
};

/* Whether FMT is a whole-profile format (threads kept apart inside it, if at all). */
bool report_format_is_export(enum report_format fmt);

enum report_sort {
	REPORT_SORT_CUMTIME,
	REPORT_SORT_TOTTIME,
	REPORT_SORT_NSAMPLES,
	REPORT_SORT_NAME,
	REPORT_SORT_FILENAME,
	REPORT_SORT_NFL,
};

/* --format regions: MXNet's keys, and self, cpu */
enum report_region_sort {
	REPORT_RSORT_TOTAL,
	REPORT_RSORT_AVG,
	REPORT_RSORT_MIN,
	REPORT_RSORT_MAX,
	REPORT_RSORT_COUNT,
	REPORT_RSORT_SELF,
	REPORT_RSORT_CPU,
	REPORT_RSORT_NAME,
};

/*
 * --group-by: what a group is, one key or several ("comm,module"). module:
 * the library of the sample's innermost frame ("[python]" for a Python
 * function); comm: its process's name, every process of that name merged;
 * process: its process; thread: its thread's name, across processes;
 * state: on-cpu, off-cpu (wall mode) or unknown; rank: its process's rank
 * in a distributed job (none for a process without one); host: the host
 * its process ran on.
 */
enum report_group_key {
	REPORT_GROUP_MODULE,
	REPORT_GROUP_COMM,
	REPORT_GROUP_PROCESS,
	REPORT_GROUP_THREAD,
	REPORT_GROUP_STATE,
	REPORT_GROUP_RANK,
	REPORT_GROUP_HOST,
	REPORT_GROUP_NR
};

struct report_group_by {
	enum report_group_key keys[REPORT_GROUP_NR]; /* in the order given, each once */
	size_t nr;              /* 0: no grouping */
};

/* --frames: how a process with Python frames is shown (frames.c). */
enum report_frames {
	REPORT_FRAMES_MIXED,    /* Python, and the native code it calls outside the interpreter */
	REPORT_FRAMES_PYTHON,   /* Python functions only */
	REPORT_FRAMES_ALL,      /* every frame as recorded */
};

/* Which samples to keep; a zero/NULL field keeps everything. */
struct report_filter {
	int32_t pid;
	int32_t tid;
	const char *comm;       /* thread or process name */
	const char *module;     /* the module of the innermost frame, as --group-by module names it */
	uint64_t from_ns, to_ns; /* time since the start; to_ns 0 = to the end */
	uint8_t state;          /* enum profile_state; PROFILE_STATE_UNKNOWN = any */
	const char *region;     /* only samples inside this region (a name or a/b path) */
};

struct report_opts {
	enum report_format format;
	enum report_sort sort;
	size_t limit;           /* table rows; 0 = all */
	bool per_thread;        /* one section per thread */
	bool per_process;       /* one section per process */
	double min_percent;     /* tree: fold nodes below this share of samples */
	const char *match;      /* callers/callees: only functions matching this POSIX ERE */
	bool lines;             /* table, tree, callers, callees: a row per source line (location) */
	enum report_region_sort region_sort; /* --format regions */
	bool by_region;         /* table: one section per region path */
	bool region_frames;     /* folded, svg, html: each sample's region path as frames below its stack */
	struct report_group_by group_by; /* table: a groups' table first; groups, json: the groups;
					    regions: a region table per group (keys of threads only) */
	enum report_sort group_sort; /* the groups' order (cmd/: --sort when given, else tottime) */
	bool split;             /* table, groups: the Python split columns (py%, native%, outside%) */
	enum report_frames frames; /* every format: the view of Python processes' stacks */
	struct report_filter filter;
	const char *const *inputs; /* file names, for the header */
	size_t nr_inputs;
};

/* Parse user spellings, aliases included; 0 or -EINVAL. */
int report_sort_parse(const char *s, enum report_sort *out);
int report_format_parse(const char *s, enum report_format *out);
int report_region_sort_parse(const char *s, enum report_region_sort *out);
int report_frames_parse(const char *s, enum report_frames *out);
/* "mixed", "python" or "all". */
const char *report_frames_name(enum report_frames how);
/*
 * "comm,module": keys separated by commas. -EINVAL for an unknown key
 * (*BAD, when not NULL, then points at it, its length in *BAD_LEN),
 * -EEXIST for a key given twice, -ENODATA for an empty key.
 */
int report_group_by_parse(const char *s, struct report_group_by *out, const char **bad,
			  size_t *bad_len);
/*
 * Whether every key of BY is the same for all the samples of a thread
 * (comm, process, thread, rank, host; not module or state): what
 * --format regions can group by. *BAD receives the first that is not.
 */
bool report_group_by_threads(const struct report_group_by *by, enum report_group_key *bad);

/*
 * Writes the report of P to OUT. Returns 0, -ENODATA when no sample
 * passes the filter, -ENOENT when no function matches o->match, -ESRCH
 * when no region is named o->filter.region, -ENXIO when no sample's
 * innermost frame is in module o->filter.module, -ENOEXEC for o->split
 * when no process of P ran Python code (none has a Python frame),
 * -ENOMSG for --format regions of a profile without regions, -EINVAL for
 * --format regions grouped by a key that is not a thread's (module,
 * state), or a negative errno from writing.
 */
int report_write(FILE *out, const struct profile *p, const struct report_opts *o);

/* proftool diff: how each function's share changed from BASE to NEW. */
struct report_diff_opts {
	enum report_format format; /* table, folded, svg or html */
	size_t limit;           /* table rows; 0 = all */
	const char *base_name, *new_name; /* for the titles */
	enum report_frames frames; /* the view of both profiles' Python stacks */
};

/* Writes the comparison; -ENODATA when either profile has no samples, -EINVAL for another format. */
int report_write_diff(FILE *out, const struct profile *base, const struct profile *new,
		      const struct report_diff_opts *o);

/* ---- the aggregation underneath, shared by the formats ---- */

struct report_func_stat {
	uint32_t func;
	uint32_t loc;                   /* by line: the location (in func); else PROFILE_NONE */
	uint64_t self, cum;             /* samples */
	uint64_t self_ns, cum_ns;       /* sum of sample weights */
};

/*
 * Per-function self and cumulative totals over the samples KEEP accepts
 * (all when KEEP is NULL). A function appearing several times in one stack
 * counts once toward its cumulative total. Returns an array of every
 * function with at least one sample (*NR entries), owned by the caller;
 * TOTAL receives the kept samples and their weight.
 */
struct report_func_stat *report_func_stats(const struct profile *p, const bool *keep_sample,
					   size_t *nr, uint64_t *total, uint64_t *total_ns);
/*
 * The same per location (a function and a line: for Python the line being
 * run, for native code the source line): self counts the samples whose
 * leaf is the location, cumulative those with it anywhere on the stack,
 * once per sample.
 */
struct report_func_stat *report_line_stats(const struct profile *p, const bool *keep_sample,
					   size_t *nr, uint64_t *total, uint64_t *total_ns);

/* Sorts by KEY; rows by line take the location's line where a key has a line. */
void report_sort_stats(const struct profile *p, struct report_func_stat *st, size_t nr,
		       enum report_sort key);

/*
 * A profile of a counting event (meta.event page-faults, minor-faults,
 * major-faults or context-switches): its samples' weights are events, not
 * nanoseconds, and the reports print counts where they print seconds.
 */
bool report_counts_events(const struct profile *p);
/* WEIGHT as the text reports print it, into BUF (N bytes): "%.3f" seconds, or a count. */
const char *report_weight_str(const struct profile *p, uint64_t weight, char *buf, size_t n);
/*
 * The percentage a row of N samples weighing W is of TOTAL samples weighing
 * TOTAL_W: by samples, or for a counting event by events (sampled by
 * frequency, its samples weigh their own periods).
 */
double report_share(const struct profile *p, uint64_t n, uint64_t w, uint64_t total, uint64_t total_w);
/* The tables' headings of self and cumulative weight: tottime/cumtime, or totevents/cumevents. */
const char *report_self_heading(const struct profile *p);
const char *report_cum_heading(const struct profile *p);

/* Whether the outermost frame of STACK is where a thread starts (_start, clone, ...). */
bool report_stack_complete(const struct profile *p, uint32_t stack);

/*
 * ---- display.c: a profile as reports print it ----
 * Names are bytes (base/text.h); a report prints bytes that are not valid
 * UTF-8 as "\xNN", in every format, so that what it writes is UTF-8 and
 * JSON-based exports stay valid. Rather than
 * each writer escaping each string it prints, the writers get a view of
 * the profile whose strings are already printable: the profile itself when
 * every string is, else a shallow copy that shares its samples and stacks
 * and has copies of the tables whose strings needed escaping. The profile
 * is never changed, so that a recording still writes exactly the bytes it
 * saw. report_write() and report_write_diff() print through such a view;
 * cmd/'s own printers (top, dump) make one.
 */
struct report_display {
	struct profile view;    /* the copy, when one was needed: never freed as a profile */
	char **owned;           /* the escaped strings and copied tables, freed on release */
	size_t nr_owned, alloc_owned;
};

/*
 * Returns P, or D's view of P with every string printable (NULL for a
 * NULL P). D is initialized here; release it (report_display_release) once the view is
 * no longer used. P must not change meanwhile.
 */
const struct profile *report_display_init(struct report_display *d, const struct profile *p);
/* S printable: S itself, or an escaped copy D owns. NULL for NULL. */
const char *report_display_str(struct report_display *d, const char *s);
void report_display_release(struct report_display *d);

/*
 * ---- frames.c: the --frames view of a profile ----
 * The recorded stacks keep every frame; --frames mixed and python fold
 * those of processes that ran Python code (report_frames_init). The view
 * is a shallow copy of the profile with stacks and samples of its own, the
 * samples in the same order as the profile's (a per-sample array of one
 * serves the other), and view.recorded pointing at the profile, whose
 * stacks tell how far each sample was unwound. A profile whose samples
 * have no Python frame is its own view, unchanged, in every mode.
 */
struct report_frames_view {
	struct profile view;
	bool folded;            /* the view differs from the profile */
	/* owned */
	struct profile_stack *stacks;
	struct profile_sample *samples;
	struct profile_func *funcs;     /* the profile's, and [native] (python) */
	struct profile_loc *locs;
};

/* The one frame --frames python shows for a sample of a Python process with no Python frame. */
#define REPORT_FRAMES_NATIVE "[native]"

/*
 * Returns P (for ALL, or a profile without Python frames, or one whose
 * samples are partly spilled to disk) or V's view of P folded HOW. V is
 * initialized here; release it once the view is no longer used. P must
 * not change meanwhile.
 */
const struct profile *report_frames_init(struct report_frames_view *v, const struct profile *p,
					 enum report_frames how);
void report_frames_release(struct report_frames_view *v);
/* Whether a sample of P has a Python frame (the profile's, or its view's). */
bool report_has_python_frames(const struct profile *p);

#endif
