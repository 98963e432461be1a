// SPDX-License-Identifier: MIT
/*
 * The Python sampling hook's tables, shared by the hook (pysample.c) and
 * the finding of CPython in a process (pyfind.c). Private to those two.
 *
 * Locking: the tables (files, processes, interpreters, functions) are
 * under py->lock, held briefly; a process's reader, memo and scratch
 * under its own lock, held for a whole read. A thread never waits for a
 * process's lock while it holds py->lock.
 */
#ifndef PROFTOOL_SYMBOLIZE_PYSAMPLE_INT_H
#define PROFTOOL_SYMBOLIZE_PYSAMPLE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "pysample.h"
#include "sampler/sampler.h"

/* A file probed for an interpreter. */
struct pyfile {
	uint32_t maj, min;
	uint64_t ino;
	char *path;
	bool found;
	struct py_probe probe;
	uint32_t interp;        /* when found */
	/*
	 * The load bias of its mapping last found at BIAS_START, file offset
	 * BIAS_PGOFF (under py->lock): a forked worker maps it where its
	 * parent did, and need not read the file's headers again
	 */
	bool bias_known;
	uint64_t bias_start, bias_pgoff, bias;
};

/* A code object's function, remembered per process by its address and strings. */
struct pymemo {
	uint64_t code;
	const char *qualname, *filename;        /* the py_proc's interned strings */
	uint32_t firstlineno;
	uint32_t func;
};

/* One process incarnation. */
#define MEMO_HOT 64

struct pyproc {
	int32_t pid;
	/* under py->lock; the holder of LOCK reads them atomically */
	bool dead;              /* exited or exec'd: a later sample looks again */
	bool dirty;             /* a new executable mapping: look again if no interpreter yet */
	bool look;              /* the next read looks for an interpreter first (cleared under LOCK) */
	bool found;             /* written under LOCK, read atomically under py->lock */
	/* the rest under LOCK */
	pthread_mutex_t lock;
	int open_errno;         /* why there is no reader: EPERM, ENOTSUP... */
	uint32_t interp;
	uint64_t eval_lo, eval_hi;
	struct py_proc *reader;
	struct pymemo *memo;
	size_t nr_memo, alloc_memo;
	struct idx memo_idx;
	uint32_t memo_hot[MEMO_HOT]; /* the same, direct-mapped in front of it (id + 1, 0 empty) */
	struct py_frame *frames; /* scratch: one stack */
	bool cap_registered;    /* its layout is the capture's (under LOCK) */
	int32_t ppid;           /* its parent when its reader was set up, 0 unknown (under LOCK) */
	bool seed_pending;      /* its reader is to take its parent's code objects (under LOCK) */
	bool cap_empty;         /* the capture has it as nothing to copy (atomic) */
};

struct pyorphan {
	int32_t ppid;
	struct py_proc *reader;
};
#define MAX_ORPHANS 64

struct pyfunc {
	char *qualname, *filename;
	uint32_t firstlineno;
};

struct sym_python {
	struct sampler_hook hook;
	pthread_mutex_t lock;   /* the tables below, and each process's flags */

	struct pyfile **files;  /* never moved or freed before the end */
	size_t nr_files, alloc_files;

	struct pyproc **procs;  /* every incarnation seen, latest last; never moved or freed before the end */
	size_t nr_procs, alloc_procs;
	struct idx proc_idx;    /* by pid */

	struct sym_python_interp **interps;
	size_t nr_interps, alloc_interps;

	struct pyfunc *funcs;
	size_t nr_funcs, alloc_funcs;
	struct idx func_idx;

	/*
	 * Readers of processes that exited, for their parents' code caches
	 * (their next children are forked with the same code objects); at
	 * most MAX_ORPHANS
	 */
	struct pyorphan *orphans;
	size_t nr_orphans, alloc_orphans;       /* nr_orphans also read atomically */

	/* atomic */
	struct sampler_capture *capture; /* the sampler's captures at the sample, NULL none */
	uint64_t reads, read_ns; /* stacks read, and the time it took (for the bench) */
	uint64_t captured;      /* stacks read from what was captured at the sample */
	uint64_t late_ns;       /* when a Python stack was last read without a whole capture */
	uint64_t moved;         /* stacks whose sample's copy showed another innermost frame than the thread's */
	bool debug;             /* PROFTOOL_DEBUG_PYTHON: time each read (two system calls a sample), count MOVED */
};

/*
 * The process entry for PID (under py->lock), to be looked at (LOOK) on
 * first sight and after an exec or a new mapping, by whoever takes its
 * lock next.
 */
struct pyproc *pyproc_of(struct sym_python *py, int32_t pid);
/* Sets up PP's reader from the first interpreter file it maps, if any (under PP's lock). */
void pyproc_discover(struct sym_python *py, struct pyproc *pp);
/* Frees what PP's reads need, once it is gone (under its lock). */
void pyproc_release(struct pyproc *pp);
/*
 * The same, its reader kept for its parent's code cache (pyproc_adopt);
 * PY_LOCKED: the caller holds py->lock.
 */
void pyproc_retire(struct sym_python *py, struct pyproc *pp, bool py_locked);
/* The children of PPID that exited, kept for it: it has ended too (under py->lock). */
void pyproc_orphans_drop(struct sym_python *py, int32_t ppid);
/*
 * PP (under its lock, with a reader) takes the code objects of its children
 * that exited that its own memory holds the same (py_proc_adopt).
 */
void pyproc_adopt(struct sym_python *py, struct pyproc *pp);
/*
 * PP (under its lock, with a reader), newly set up, takes its parent's
 * code objects if its parent's lock is free now (it is not waited for);
 * clears pp->seed_pending once done, or once there is nothing to take.
 */
void pyproc_seed(struct sym_python *py, struct pyproc *pp);
/* Why ADDR in PID cannot be read: EPERM (no ptrace rights), ESRCH (gone), else EFAULT. */
int pyproc_unreadable_why(int32_t pid, uint64_t addr);

#endif
