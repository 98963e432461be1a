// SPDX-License-Identifier: MIT
/* The profile: symbolized samples in memory, and the versioned file that stores them. */
#ifndef PROFTOOL_PROFILE_H
#define PROFTOOL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/*
 * A profile is self-contained: everything report/ needs is in it, nothing
 * refers back to the profiled binaries. Its tables refer to each other by
 * index (uint32_t), and every index points backwards or into an earlier
 * table, so a profile read from disk is checked once and then trusted:
 *
 *   functions  name, module, source file and declaration line
 *   locations  a function and a source line inside it
 *   stacks     a prefix tree: (parent stack, location), root first;
 *              parent < own index, PROFILE_NONE at the root
 *   processes  pid, parent pid, name, command line, host, rank in a distributed job
 *   threads    tid, the process it belongs to, name
 *   samples    time since the start, thread, leaf stack node
 *
 * Strings are owned by the profile. Nothing here is thread-safe.
 */

#define PROFILE_NONE UINT32_MAX
#define PROFILE_FORMAT "proftool-profile"
/* The newest version this proftool reads (a file without byte strings is written as 1). */
#define PROFILE_VERSION 2
/* The module of a Python function: one the interpreter ran, read from its frames. */
#define PROFILE_MODULE_PYTHON "[python]"

/*
 * A native function, or a Python one (module PROFILE_MODULE_PYTHON): name
 * is then the code object's co_qualname ("Trainer.step", "<module>",
 * "f.<locals>.g"), file its co_filename as the interpreter has it and line
 * its co_firstlineno.
 */
struct profile_func {
	char *name;   /* demangled; "[unknown]", "module+0xOFF" when no symbol */
	char *module; /* basename of the ELF file, "[kernel]", "[vdso]"..., "[python]" */
	char *file;   /* source file, NULL without debug info */
	uint32_t line; /* declaration line, 0 when unknown */
};

struct profile_loc {
	uint32_t func;
	uint32_t line; /* source line of this location (Python: the line being run), 0 when unknown */
};

struct profile_stack {
	uint32_t parent; /* PROFILE_NONE for an outermost frame */
	uint32_t loc;
	uint32_t depth; /* 1 for an outermost frame; derived, not stored */
};

/* A reading of a process's resident memory (/proc/PID/statm). */
struct profile_rss {
	uint64_t time_ns;    /* since the recording started, on the samples' clock */
	uint64_t rss;        /* bytes resident */
	uint64_t anon;       /* of which anonymous (the rest: files and shared memory) */
};
/*
 * A process's place in a distributed job (torchrun, mpirun, srun: one
 * process per rank), as its environment says when it was started.
 */
#define PROFILE_RANK_NONE (-1)
struct profile_rank {
	int32_t rank;        /* 0.., PROFILE_RANK_NONE when the process has none */
	int32_t local_rank;  /* its rank among the job's processes on its host; PROFILE_RANK_NONE */
	int32_t world_size;  /* ranks in the job, 1..; 0 when unknown */
};
#define PROFILE_RANK_INIT { PROFILE_RANK_NONE, PROFILE_RANK_NONE, 0 }

struct profile_process {
	int32_t pid, ppid;   /* ppid 0 when unknown */
	char *comm;
	char *cmdline;       /* arguments joined by spaces, NULL when unknown */
	struct profile_rss *rss; /* readings in time order, several a second while it ran */
	size_t nr_rss, alloc_rss;
	char *host;          /* the host it ran on (uname -n), NULL when unknown: merged files keep them apart */
	struct profile_rank job; /* from its environment when first seen; PROFILE_RANK_INIT: none */
};

struct profile_thread {
	int32_t tid;
	uint32_t process;    /* index into processes */
	char *comm;
};

/* What the thread was doing when sampled: known in wall mode only. */
enum profile_state {
	PROFILE_STATE_UNKNOWN,
	PROFILE_STATE_ON_CPU,   /* running, or runnable and waiting for a CPU */
	PROFILE_STATE_OFF_CPU,  /* sleeping, blocked on a lock or I/O, stopped */
	PROFILE_STATE_NR
};

struct profile_sample {
	uint64_t time_ns;    /* since the recording started */
	uint32_t thread;
	uint32_t stack;      /* leaf node; never PROFILE_NONE */
	uint32_t weight_ns;  /* time this sample stands for (its file's period, at most 1 s) */
	uint32_t region;     /* the innermost open region's path node, PROFILE_NONE outside any */
	uint8_t state;       /* enum profile_state */
};

/*
 * Named regions the program marked (regions/): names by (domain, name),
 * their nesting per thread as a prefix tree of paths, as the stacks are,
 * and every instance with its exact times. Times are ns since the
 * recording started, on the samples' clock.
 */
struct profile_region_name {
	char *domain;        /* "" for the default domain */
	char *name;
};

struct profile_region_node {
	uint32_t parent;     /* the enclosing region's node, PROFILE_NONE at a thread's top */
	uint32_t name;       /* index into region_names */
	uint32_t depth;      /* 1 at the top; derived, not stored */
};

#define PROFILE_REGION_OPEN_AT_EXIT 1 /* never ended: closed at its thread's last sign of life */
#define PROFILE_REGION_OPEN_AT_END 2 /* still open when the recording ended: closed there */
#define PROFILE_REGION_OPEN_AT_START 4 /* begun before the recording (attach): counted from its start */

/* One instance: a region from its begin to its end on one thread. */
struct profile_region {
	uint32_t thread;
	uint32_t node;
	uint64_t start_ns, end_ns;
	uint32_t flags;      /* PROFILE_REGION_* */
};

/* An instant event (proftool_mark) on one thread. */
struct profile_mark {
	uint32_t thread;
	uint32_t name;       /* index into region_names */
	uint64_t time_ns;
};

/* A span while the recording was paused: no sample and no region was kept in it. */
struct profile_pause {
	uint64_t start_ns, end_ns;
};

/* What the recording made of the region events, for the header. Counts saturate at INT64_MAX. */
struct profile_region_stats {
	uint64_t events;     /* read from the programs' files */
	uint64_t dropped;    /* the programs could not write them: their buffers were full */
	uint64_t torn;       /* records cut short or malformed (a death mid-write), left out */
	uint64_t unbalanced; /* ends with no matching begin, or begins closed by an outer end */
	uint64_t open_at_exit; /* regions never ended, closed at their thread's end and flagged */
	uint64_t open_at_end; /* regions still open when the recording ended (the process ran on) */
	uint64_t open_at_start; /* regions begun before the recording started (attach) */
	uint64_t paused;     /* events left out because the recording was paused */
};

/* How many stacks stopped early for one reason (and module, when there is one). */
struct profile_unwind_stop {
	char *reason;        /* "stack copy too small", "no CFI", ... */
	char *module;        /* NULL when the reason names none */
	uint64_t count;
};

/* Samples of a Python process that got no Python frames, for one reason. */
struct profile_python_miss {
	char *reason;        /* "no Python thread state", "torn", "unreadable", ... */
	uint64_t count;      /* samples; saturates at INT64_MAX */
};

/*
 * One interpreter the recording found, over the whole recording: how many
 * samples of the processes running it got Python frames, and why the
 * others did not. Counts saturate at INT64_MAX, as unwind stops do.
 */
struct profile_python {
	char *interpreter;   /* the file holding the interpreter, as mapped: "/usr/bin/python3.11" */
	char *version;       /* "3.11.2"; NULL when unknown */
	char *unsupported;   /* NULL when its stacks were read; else one line saying why not */
	uint64_t samples;    /* samples of the processes running it */
	uint64_t with_frames; /* those that got Python frames */
	struct profile_python_miss *misses; /* the others, by reason; unique by reason */
	size_t nr_misses, alloc_misses;
};

struct profile_meta {
	char *tool_version;
	char *command;       /* what was profiled, as the user typed it */
	char *event;         /* "cpu-clock", ... */
	char *callgraph;     /* "fp", "dwarf", "none" */
	char *mode;          /* "cpu" or "wall" */
	char *backend;       /* "perf" or "ptrace" */
	char *host, *kernel;
	uint32_t freq;       /* requested samples per second */
	uint64_t period_ns;  /* time one sample stands for */
	uint64_t start_real_ns; /* wall-clock start, ns since the epoch */
	uint64_t duration_ns;
	uint64_t lost;       /* samples the kernel or sampler dropped */
	uint64_t scanned;    /* samples with callers found by stack scanning (code without usable CFI) */
	uint64_t python_captured; /* samples whose Python stack was read whole from a copy taken at the sample */
	uint64_t cpu_time_ns;/* CPU time of the targets as the event counted it; 0 unknown */
	int32_t exit_status; /* record's exit status, -1 when none */
	struct profile_unwind_stop *stops; /* unique by (reason, module) */
	size_t nr_stops, alloc_stops;
	struct profile_python *pythons; /* unique by (interpreter, version) */
	size_t nr_pythons, alloc_pythons;
	struct profile_region_stats regions;
	/*
	 * Snapshots (record --snapshot-every, or `snapshot` on --control): the
	 * recording's files share SERIES; SNAPSHOT is N in OUT.N, or 0 in the
	 * file the recording ended with. NULL and 0 for a whole recording.
	 */
	char *series;
	uint32_t snapshot;
	uint64_t series_offset_ns; /* where this file begins, since the recording began */
};

struct profile {
	struct profile_meta meta;
	struct profile_func *funcs;
	size_t nr_funcs, alloc_funcs;
	struct profile_loc *locs;
	size_t nr_locs, alloc_locs;
	struct profile_stack *stacks;
	size_t nr_stacks, alloc_stacks;
	struct profile_process *procs;
	size_t nr_procs, alloc_procs;
	struct profile_thread *threads;
	size_t nr_threads, alloc_threads;
	struct profile_sample *samples;
	size_t nr_samples, alloc_samples;
	struct profile_spill *spill; /* earlier samples on disk; NULL unless recording long */
	struct profile_region_name *region_names;
	size_t nr_region_names, alloc_region_names;
	struct profile_region_node *region_nodes;
	size_t nr_region_nodes, alloc_region_nodes;
	struct profile_region *regions; /* by thread, then start time */
	size_t nr_regions, alloc_regions;
	struct profile_mark *marks;     /* by thread, then time */
	size_t nr_marks, alloc_marks;
	struct profile_pause *pauses;   /* in time order, apart */
	size_t nr_pauses, alloc_pauses;
	/*
	 * NULL, but in a report's view of a profile with its stacks folded
	 * (report/frames.c): the profile as recorded, whose samples are the
	 * view's, in the same order, with every frame.
	 */
	const struct profile *recorded;
	/* interning indexes, built as entries are added */
	struct idx func_idx, loc_idx, stack_idx, rname_idx, rnode_idx;
};

struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Interning: return the index of an equal entry, adding one if needed. */
uint32_t profile_add_func(struct profile *p, const char *name, const char *module,
			  const char *file, uint32_t line);
uint32_t profile_add_loc(struct profile *p, uint32_t func, uint32_t line);
uint32_t profile_add_stack(struct profile *p, uint32_t parent, uint32_t loc);
/* Adds a reading to process PROC's, which are kept in time order. */
void profile_add_rss(struct profile *p, uint32_t proc, uint64_t time_ns, uint64_t rss, uint64_t anon);
/* PROC's largest reading, or NULL when it has none. */
const struct profile_rss *profile_rss_peak(const struct profile *p, uint32_t proc);

/*
 * Not interned: every call adds an entry. Strings are copied; a process
 * has no host (profile_set_host gives it the recording's) and no rank
 * until they are set.
 */
uint32_t profile_add_process(struct profile *p, int32_t pid, int32_t ppid,
			     const char *comm, const char *cmdline);
/* A copy of PR (of another profile): everything it knows, host and rank included. */
uint32_t profile_copy_process(struct profile *p, const struct profile_process *pr);
/* Sets the recording's host (meta.host) and every process's to HOST (copied; NULL: unknown). */
void profile_set_host(struct profile *p, const char *host);
/* The distinct hosts of P's processes, in the order first met, into HOSTS (P's strings); how many. NULL counts as one. */
size_t profile_hosts(const struct profile *p, const char ***hosts);
uint32_t profile_add_thread(struct profile *p, int32_t tid, uint32_t process,
			    const char *comm);
void profile_add_sample(struct profile *p, uint64_t time_ns, uint32_t thread,
			uint32_t stack, uint32_t weight_ns, enum profile_state state);

/* Regions (profile/regions.c). Names and path nodes are interned; strings are copied. */
uint32_t profile_add_region_name(struct profile *p, const char *domain, const char *name);
uint32_t profile_add_region_node(struct profile *p, uint32_t parent, uint32_t name);
void profile_add_region(struct profile *p, uint32_t thread, uint32_t node, uint64_t start_ns,
			uint64_t end_ns, uint32_t flags);
void profile_add_mark(struct profile *p, uint32_t thread, uint32_t name, uint64_t time_ns);
void profile_add_pause(struct profile *p, uint64_t start_ns, uint64_t end_ns);
/* Whether time T falls in one of P's paused spans; profile_drop_paused drops the samples that do. */
bool profile_in_pause(const struct profile *p, uint64_t t);
void profile_drop_paused(struct profile *p);
/* Sorts instances by thread then start (outer first), marks by thread then time, pauses by time. */
void profile_sort_regions(struct profile *p);
/* "NAME", or "DOMAIN::NAME" outside the default domain, into BUF (N bytes); returns BUF. */
const char *profile_region_label(const struct profile *p, uint32_t name, char *buf, size_t n);

/* Adds COUNT to the unwind-stop entry for (REASON, MODULE); counts saturate at INT64_MAX. */
void profile_add_unwind_stop(struct profile *p, const char *reason, const char *module,
			     uint64_t count);

/*
 * Returns the entry for (INTERPRETER, VERSION) in p->meta.pythons, adding
 * it (counts 0) when new; UNSUPPORTED is kept when not NULL (an entry that
 * has one keeps its first). The recorder sets samples and with_frames on
 * the entry directly. Strings are copied.
 */
uint32_t profile_add_python(struct profile *p, const char *interpreter, const char *version,
			    const char *unsupported);
/* Adds COUNT samples without Python frames for REASON to entry PY; counts saturate at INT64_MAX. */
void profile_add_python_miss(struct profile *p, uint32_t py, const char *reason, uint64_t count);

/* Whether F is a Python function (module PROFILE_MODULE_PYTHON). */
bool profile_func_is_python(const struct profile_func *f);

/* Keeps only the samples, spilled or not, that KEEP accepts. */
void profile_drop_samples(struct profile *p, bool (*keep)(const struct profile_sample *s, void *arg),
			  void *arg);

/* Sorts samples by time, ties by thread then stack. */
void profile_sort_samples(struct profile *p);
int profile_sample_cmp(const void *a, const void *b);

/*
 * A recording that runs for hours must not hold every sample in memory.
 * After profile_spill_start(), each time CHUNK samples have gathered in
 * P->samples they move to an unlinked temporary file in DIR (the output's
 * directory: O_TMPFILE, else mkstemp and unlink; made when the first chunk
 * is full, so a short recording holds no file open), so P->samples holds only
 * the newest ones and profile_nr_samples() counts them all. Nothing is
 * left behind, whatever becomes of the process. When the file cannot be
 * written (a full disk) its samples come back into memory and it is
 * closed, freeing the space for the profile itself. Such a
 * profile is for writing: loops over P->samples see only the newest
 * samples, so everything that needs all of them goes through
 * profile_map_samples() or a profile_iter. Returns 0 or a negative errno.
 */
int profile_spill_start(struct profile *p, const char *dir, size_t chunk);
/* Called by profile_add_sample(): spills when a chunk is full. */
void profile_spill_maybe(struct profile *p);
void profile_spill_free(struct profile_spill *sp);
size_t profile_nr_samples(const struct profile *p);
/* A negative errno when spilled samples could not be read back (they are lost), else 0. */
int profile_spill_error(const struct profile *p);

/* Calls FN on every sample, spilled or not, in no particular order; FN may change it. */
void profile_map_samples(struct profile *p, void (*fn)(struct profile_sample *s, void *arg),
			 void *arg);

/*
 * All samples in time order, spilled or not, provided the profile was
 * sorted by profile_sort_samples() (or read from a file). The pointer from
 * next() is valid until the following call; NULL at the end or on a read
 * error, which free() returns as a negative errno.
 */
struct profile_iter;
struct profile_iter *profile_iter_new(const struct profile *p);
const struct profile_sample *profile_iter_next(struct profile_iter *it);
int profile_iter_free(struct profile_iter *it);

/*
 * Whether NAME is where a thread's stack begins (_start, __libc_start_main,
 * clone, start_thread...): a stack whose outermost frame is one was
 * unwound completely.
 */
bool profile_func_is_root(const char *name);

/*
 * JIT code (executable memory with no file) is in module "[jit]": named
 * from the process's perf map, or, where nobody named it, one function per
 * mapping, "[jit] anon 0xSTART-0xEND" ("[jit] memfd:NAME 0x...-0x..."),
 * which profile_func_is_unnamed_jit recognises.
 */
#define PROFILE_JIT_MODULE "[jit]"
#define PROFILE_JIT_UNNAMED "[jit] "
bool profile_func_is_unnamed_jit(const struct profile_func *f);

/* Counts the processes and threads that have at least one sample. */
void profile_count_sampled(const struct profile *p, size_t *procs, size_t *threads);

/*
 * Adds everything in SRC to DST: tables are merged by value, processes and
 * threads appended, each process keeping its host (so that two with one
 * pid on two hosts stay two), but for two files of one recording's
 * snapshots, whose equal processes and threads are one, sample times kept relative to each
 * file's own start (profile_shift_times moves them);
 * lost counts, durations, CPU times and the Python interpreters' counts
 * (by interpreter and version) add up. A frequency that differs
 * between the two becomes 0 (mixed), a CPU time unknown in either 0.
 */
void profile_merge(struct profile *dst, const struct profile *src);
/* Adds DELTA to every time in P: samples, regions, marks, paused spans. */
void profile_shift_times(struct profile *p, uint64_t delta);

/*
 * Writes P to PATH atomically: a temporary file created with O_EXCL in the
 * same directory, flushed, fsync'ed and renamed over PATH. On failure
 * nothing is left behind and an existing PATH is untouched. Returns 0 or a
 * negative errno; ERR (when non-NULL) receives a description.
 */
int profile_write(const struct profile *p, const char *path, char *err, size_t errlen);

/*
 * Reads a profile written by any supported version. Returns NULL and sets
 * errno on failure (ENOENT..., EPROTO for a file that is not a profile,
 * EBADMSG for a corrupt or truncated one, ENOTSUP for a newer version),
 * with a description in ERR.
 */
struct profile *profile_read(const char *path, char *err, size_t errlen);

/*
 * The same from the LEN bytes at BUF, the whole contents of a file (gzip'd
 * or plain JSON); BUF stays the caller's. Errors as for profile_read().
 */
struct profile *profile_read_mem(const void *buf, size_t len, char *err, size_t errlen);

#endif
