// SPDX-License-Identifier: MIT
/* From sampler records to a symbolized profile: processes, address spaces, stacks, libdwfl. */
#ifndef PROFTOOL_SYMBOLIZE_H
#define PROFTOOL_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sampler/sampler.h"

/*
 * A session follows the records of one recording in time order: which
 * processes and threads exist and what their names are, which files each
 * address space maps, and every sample's stack as (module, file offset)
 * pairs. Samples are kept in compact interned form; nothing is symbolized
 * until sym_session_finish(), which resolves each distinct address once.
 *
 * Mapped files are opened when first mapped, so that a binary deleted or
 * replaced during the run is still symbolized from what actually ran.
 * Not thread-safe.
 */
struct sym_session;

/*
 * Python frames. A sym_python finds CPython in the sampled processes and
 * reads each sample's Python stack through a sampler hook, at sample time;
 * a session given it (sym_opts.python) merges those frames into the native
 * stacks. It must outlive both the sampler and the session's finish.
 */
struct sym_python;
struct sym_python *sym_python_new(void);
void sym_python_free(struct sym_python *py);
const struct sampler_hook *sym_python_hook(struct sym_python *py);

struct sym_opts {
	uint64_t start_ns;      /* CLOCK_MONOTONIC origin of sample times */
	uint32_t weight_ns;     /* time one sample stands for (1 s at most) */
	bool weight_is_period;  /* counting events: a sample stands for its period, in events */
	const char *spill_dir;  /* where samples past SPILL_CHUNK go (profile_spill_start); NULL: memory */
	size_t spill_chunk;
	struct sym_python *python;      /* NULL: native stacks only */
	bool rss;               /* read each process's resident memory when it appears */
	bool no_unwind_scan;    /* no stack scanning: past code without usable CFI, frame pointers only */
};

/*
 * Samples that carry registers and a stack copy (SAMPLER_CG_DWARF) are
 * unwound as they arrive, with one libdwfl state per process kept across
 * samples, so that no stack copy outlives its record. Stacks the unwinder
 * could not finish are counted by reason in the profile's meta.
 */

struct sym_session *sym_session_new(const struct sym_opts *opts);
void sym_session_free(struct sym_session *ss);

/* Feeds one record (in time order). Returns 0; records it cannot use are ignored. */
int sym_session_add(struct sym_session *ss, const struct sampler_rec *rec);

/*
 * Declares a task that existed before recording began (attach): its
 * process, name and the executable mappings listed in /proc/PID/maps.
 * Returns 0 or a negative errno when /proc/PID cannot be read.
 */
int sym_session_add_existing(struct sym_session *ss, int32_t pid, int32_t tid);

/*
 * Reads the resident memory of every process the session knows that still
 * runs (/proc/PID/statm) into the profile (profile_add_rss), timed now.
 * The recorder calls it a few times a second.
 */
void sym_session_read_rss(struct sym_session *ss);

struct sym_counts {
	uint64_t samples;
	size_t processes, threads;
};
void sym_session_counts(const struct sym_session *ss, struct sym_counts *c);

/*
 * Resolves every distinct address (function, inline frames, file:line)
 * and returns the finished profile, with samples sorted by time; its meta
 * is for the caller to fill. PROGRESS, when not NULL, is called now and
 * then with the addresses done and their total. The session is left
 * empty and must still be freed. The caller owns the profile.
 */
struct profile *sym_session_finish(struct sym_session *ss,
				   void (*progress)(size_t done, size_t total, void *arg),
				   void *arg);

/*
 * The same for the samples added since the last take (or the start), while
 * the session goes on: processes, threads, address spaces, unwind tables,
 * open files and every address already resolved are kept, so each take
 * resolves only addresses it has not seen before. The profile lists every
 * process and thread seen so far; its samples' times count from
 * opts.start_ns as always.
 */
struct profile *sym_session_take(struct sym_session *ss,
				 void (*progress)(size_t done, size_t total, void *arg),
				 void *arg);

/*
 * Ranks (rank.c): a process's rank, local rank and world size in a
 * distributed job, from the variables launchers set: RANK, LOCAL_RANK,
 * WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/_LOCAL_RANK/_SIZE (Open MPI),
 * PMI_RANK, PMI_SIZE, MPI_LOCALRANKID (MPICH, Intel MPI), PMIX_RANK,
 * MV2_COMM_WORLD_* (MVAPICH2), SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS
 * (srun), in that order, the first that holds a whole decimal number
 * winning: a value that is not one ("abc", "-1", "3 ") is passed over, and
 * with none the field is unknown (PROFILE_RANK_NONE, world size 0), never 0.
 *
 * sym_rank_parse asks LOOKUP for each variable's value (NULL when unset).
 * sym_rank_of_environ reads a block of LEN bytes of NAME=VALUE entries,
 * each ended by a NUL, as /proc/PID/environ holds them (BUF[LEN] must be
 * readable and NUL). sym_rank_of_pid reads /proc/PID/environ: the
 * environment the process was started with (its execve), not the changes
 * it made to it since (setenv, os.environ); it returns a negative errno,
 * and no rank, when that cannot be read (another user's process, one gone).
 * sym_rank_of_self is our own environment, which a command we start gets.
 */
void sym_rank_parse(const char *(*lookup)(const char *name, void *arg), void *arg,
		    struct profile_rank *out);
void sym_rank_of_environ(const char *buf, size_t len, struct profile_rank *out);
int sym_rank_of_pid(int32_t pid, struct profile_rank *out);
void sym_rank_of_self(struct profile_rank *out);

#endif
