// SPDX-License-Identifier: MIT
/* The symbolizer session's tables (modules, address spaces, processes, stacks), shared by its files. */
#ifndef PROFTOOL_SYMBOLIZE_SESSION_H
#define PROFTOOL_SYMBOLIZE_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "internal.h"
#include "symbolize.h"

/* Special modules for addresses that have no file behind them. */
enum {
	MOD_UNKNOWN,    /* no mapping covers the address */
	MOD_KERNEL,
	MOD_STOP,       /* root pseudo-frame: why unwinding stopped (off = reason << 32 | module) */
	MOD_PYTHON,     /* a Python function (off = sym_python function id << 32 | line) */
	MOD_FIRST_REAL,
};

struct module {
	char *path;             /* as the kernel reported it */
	char *name;             /* shown in reports: basename, "[vdso]", "[anon]"... */
	uint32_t maj, min;
	uint64_t ino;
	int fd;                 /* opened when first mapped; -1 if not a file or unopenable */
	bool is_file;           /* an ELF image to symbolize (files, and [vdso]) */
	int32_t pid;            /* anonymous memory belongs to one process; 0 for files */
	struct sym_cfi *cfi;    /* unwind tables, read at the first unwind through the file */
	bool cfi_tried;
	struct sym_elf *elf;    /* symbols, opened at the first take that needs them, kept after */
	bool elf_tried;
};

struct map {
	uint64_t start, end, pgoff;
	uint32_t module;
	uint8_t bias_state;     /* enum bias_state: the load bias is computed when first needed */
	uint64_t bias;
};

enum bias_state { BIAS_UNKNOWN, BIAS_OK, BIAS_NONE };

/* An address space, shared by the threads of one process incarnation. */
struct aspace {
	struct map *maps;       /* sorted by start, non-overlapping */
	size_t nr, alloc;
	uint64_t gen;           /* changes with the maps: no two address spaces mapped apart share one */
};

/* One incarnation of a process: a new one starts at fork and at exec. */
struct proc {
	int32_t pid;
	uint32_t out;           /* index in the profile's processes */
	struct aspace as;
	int statm_fd;           /* /proc/PID/statm kept open for its readings, plus 1; 0 none */
};

/* An address inside a module: a file offset, or an absolute address for special modules. */
struct rawframe {
	uint32_t module;
	uint64_t off;
	/* a module with no file (JIT code): the mapping OFF was first seen in, else 0 */
	uint64_t map_start, map_end;
};

struct rawnode {
	uint32_t parent;        /* PROFILE_NONE at the root */
	uint32_t frame;
};


/* Why a sample of a Python process got no Python frames. */
enum py_miss {
	PY_MISS_NO_THREAD,
	PY_MISS_IDLE,
	PY_MISS_TORN,
	PY_MISS_UNREADABLE,
	PY_MISS_UNSUPPORTED,
	PY_MISS_NOT_PERMITTED,
	PY_MISS_OUTSIDE,
	PY_MISS_GONE,
	PY_MISS_NR,
};

/* Python frames [start, end) of one sample that one native eval loop runs. */
struct ss_py_run {
	uint32_t start, end;
};

/* Samples of the processes running one interpreter (a sym_python interpreter id). */
struct ss_py_stat {
	uint64_t samples, with_frames;
	uint64_t captured;              /* of those with, read from a copy taken at the sample */
	uint64_t miss[PY_MISS_NR];
};

#define SS_HOT 1024

/*
 * A thread's last stack (stacks.c): the frames of its user addresses, and
 * the nodes of its path from the root. The next sample of the thread
 * shares its outer part, which need not be looked up again.
 */
struct ss_last {
	uint64_t key;           /* the thread's and its maps' (the unwind memo's key) */
	uint64_t *pcs;          /* user addresses, innermost first */
	uint32_t *frames;       /* their frames */
	size_t nr_pcs, alloc_pcs;
	uint32_t *path, *nodes; /* the frames from the root, and their nodes */
	size_t nr_path, alloc_path;
};
#define SS_MEMOS 64             /* threads whose last unwind is kept (a direct-mapped cache) */

struct sym_session {
	struct sym_opts opts;   /* opts.spill_dir points at spill_dir */
	char *spill_dir;        /* the session's copy: takes spill long after sym_session_new */
	struct profile *prof;   /* processes, threads and samples go straight in */

	struct module *mods;
	size_t nr_mods, alloc_mods;
	struct idx mod_idx;

	struct proc *procs;     /* parallel to prof->procs */
	size_t nr_procs, alloc_procs;
	size_t statm_open;      /* processes whose statm_fd is open */
	struct idx pid_idx;     /* pid -> proc, latest incarnation has the highest id */
	struct idx tid_idx;     /* tid -> prof->threads index, likewise */

	struct rawframe *frames;
	size_t nr_frames, alloc_frames;
	struct idx frame_idx;
	struct rawnode *nodes;
	size_t nr_nodes, alloc_nodes;
	struct idx node_idx;
	/*
	 * The frames and nodes interned last, direct-mapped in front of their
	 * tables (id + 1, 0 empty): samples repeat the same callers, and the
	 * tables' probes miss the cache once they hold a long run's stacks
	 */
	uint32_t hot_frame[SS_HOT];
	struct idx_slot hot_node[SS_HOT];       /* a node's key's hash (node_key) and id + 1 */

	uint64_t *pcs;          /* scratch: one unwound stack */
	struct sym_memo *memos[SS_MEMOS];
	struct ss_last *last[SS_MEMOS]; /* the thread's last stack, beside its unwind memo */
	uint32_t *path;         /* scratch: a sample's frames, root first */
	size_t alloc_path;
	/*
	 * PROFTOOL_DEBUG_UNWIND: each unwind walked again without its memo,
	 * each stack looked up again without the thread's last, and compared
	 */
	bool memo_check;
	uint64_t *pcs_check;
	uint64_t memo_walks, memo_took, memo_frames, memo_differ;
	uint32_t *stack_frames, *merged; /* scratch: its frames, innermost first, and with Python's */

	/*
	 * What each frame resolved to, kept across sym_session_take: locations
	 * interned in NAMES, RES_COUNT[f] of them from RES_START[f] in
	 * RES_LOCS (RES_COUNT 0xff: not resolved yet).
	 */
	struct profile *names;
	uint32_t *res_start;
	uint8_t *res_count;
	size_t alloc_res;
	uint32_t *res_locs;
	size_t nr_res_locs, alloc_res_locs;
	struct sym_kallsyms *ksyms;
	bool ksyms_tried;

	struct ss_py_stat *py_stats;
	size_t nr_py_stats, alloc_py_stats;
	struct ss_py_run *py_runs;      /* scratch for merging */
	uint32_t *py_evals;
	uint64_t scanned;               /* samples of this take with frames found by scanning */
	uint64_t py_mismatched;         /* stacks whose eval loops and Python runs differed in number */
};

/* ---- procs.c: processes and threads ---- */

/* The latest incarnation of PID / thread TID (an index), IDX_NONE when unknown. */
uint32_t ss_find_proc(struct sym_session *ss, int32_t pid);
uint32_t ss_find_thread(struct sym_session *ss, int32_t tid);
/*
 * A new process incarnation; a forked one starts with a copy of the
 * address space of FROM (a proc id, IDX_NONE for none). Returns its id.
 */
/* Closes the /proc/PID/statm descriptors kept for resident-memory readings. */
void ss_close_statm(struct sym_session *ss);
uint32_t ss_new_proc(struct sym_session *ss, int32_t pid, int32_t ppid, const char *comm,
		     uint32_t from);
uint32_t ss_new_thread(struct sym_session *ss, int32_t tid, uint32_t proc, const char *comm);
/* The thread for TID in process PID, creating both on first sight. */
uint32_t ss_get_thread(struct sym_session *ss, int32_t pid, int32_t tid, const char *comm);
struct proc *ss_proc_of_thread(struct sym_session *ss, uint32_t t);
void ss_on_comm(struct sym_session *ss, const struct sampler_rec *r);
void ss_on_fork(struct sym_session *ss, const struct sampler_rec *r);

/* ---- aspace.c: modules and address spaces ---- */

/* The module of a mapping of PATH (opened now, while it surely exists), made on first sight. */
uint32_t ss_get_module(struct sym_session *ss, const char *path, uint32_t maj, uint32_t min,
		       uint64_t ino, int32_t pid, uint64_t start, uint64_t end);
/* Inserts a mapping as mmap(2) does; true when an existing one was cut or replaced. */
bool ss_aspace_insert(struct aspace *as, const struct map *nm);
/* The mapping containing ADDR, or NULL. */
struct map *ss_aspace_find(const struct aspace *as, uint64_t addr);
void ss_on_mmap(struct sym_session *ss, const struct sampler_rec *r);

/* ---- stacks.c: samples and their raw stacks ---- */

void ss_on_sample(struct sym_session *ss, const struct sampler_rec *r);
uint32_t ss_intern_frame(struct sym_session *ss, uint32_t module, uint64_t off);

/* ---- pymerge.c: Python frames in native stacks ---- */

/*
 * Merges the Python frames the sampler hook attached to a sample (EXTRA)
 * into its native user frames NATIVE[0..NR) (interned ids, innermost
 * first, at addresses PCS; TRUNCATED when the unwind stopped early), into
 * OUT (room for NR + PY_MAX_DEPTH), and counts the sample for its
 * interpreter. Returns the number of frames in OUT.
 */
size_t ss_py_merge(struct sym_session *ss, const void *extra, size_t extra_size,
		   const uint64_t *pcs, const uint32_t *native, size_t nr, bool truncated,
		   uint32_t *out);
const char *ss_py_miss_name(enum py_miss m);

#endif
