// SPDX-License-Identifier: MIT
/*
 * What the Python sampling hook (pysample.c) attaches to a sample, and the
 * tables its ids refer to. Private to symbolize/.
 */
#ifndef PROFTOOL_SYMBOLIZE_PYSAMPLE_H
#define PROFTOOL_SYMBOLIZE_PYSAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python.h"

/*
 * A sample of a thread in a process running CPython carries a header, then
 * its Python frames innermost first. A process without CPython gets no
 * attachment at all.
 */
struct pyx_hdr {
	uint32_t interp;        /* index of the interpreter (sym_python_interp) */
	uint32_t status;        /* enum py_status of the read, or PYX_NOT_PERMITTED */
	uint32_t nr;            /* frames that follow */
	uint32_t flags;         /* PYX_CAPTURED */
	uint64_t eval_lo, eval_hi; /* where _PyEval_EvalFrameDefault is in this process; 0, 0 unknown */
};

struct pyx_frame {
	uint32_t func;          /* sym_python_func id */
	uint32_t line;          /* line being run, 0 unknown */
	uint32_t flags;         /* PY_FRAME_* */
};

/* Statuses of its own: the process's memory may not be read (ptrace rights), or it is gone. */
#define PYX_NOT_PERMITTED PY_STACK_NR
#define PYX_GONE (PY_STACK_NR + 1)

/* Bytes the hook may write per sample: the header and PY_MAX_DEPTH frames. */
#define PYX_CAP (sizeof(struct pyx_hdr) + PY_MAX_DEPTH * sizeof(struct pyx_frame))
/* The frames were read whole from what was copied at the sample (sampler_captured). */
#define PYX_CAPTURED 1u

/* An attachment's header and frames, checked against its size; false when malformed. */
bool pyx_decode(const void *buf, size_t len, struct pyx_hdr *hdr, const struct pyx_frame **frames);

struct sym_python;

/* A Python function (safe while the hook runs). */
void sym_python_func(const struct sym_python *py, uint32_t id, const char **qualname,
		     const char **filename, uint32_t *firstlineno);

struct sym_python_interp {
	char *path;             /* the file holding the interpreter, as mapped */
	uint32_t version;       /* PY_VERSION_HEX; 0 unknown */
	char *unsupported;      /* why its stacks cannot be read, NULL when they can */
};
/* Stacks read so far, the nanoseconds they took (retries included), and how many the sample's stack copy moved to another innermost frame. */
void sym_python_read_cost(const struct sym_python *py, uint64_t *reads, uint64_t *ns, uint64_t *moved,
			  uint64_t *captured);

size_t sym_python_nr_interps(const struct sym_python *py);
const struct sym_python_interp *sym_python_interp(const struct sym_python *py, uint32_t id);

#endif
