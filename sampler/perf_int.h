// SPDX-License-Identifier: MIT
/* The perf_event backend's own: its state, shared by perf.c (the entry points), perf_open.c (opening the events and mapping their ring buffers), perf_drain.c (the thread that empties the ring buffers) and perf_order.c (decoding and delivering records in time order). */
#ifndef PROFTOOL_SAMPLER_PERF_INT_H
#define PROFTOOL_SAMPLER_PERF_INT_H

#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "internal.h"

struct cpu_buf {
	int fd;                 /* the first task's event: owns the ring buffer */
	int *more;              /* the other tasks' events, writing into fd's buffer */
	size_t nr_more, alloc_more;
	int cpu;
	void *base;             /* header page + data area */
	size_t data_size;       /* bytes, a power of two */
	bool hup;               /* the events' tasks are all gone */
	/* under the lock: start of the last sweep of this buffer that completed, and of the one before */
	uint64_t sweep, prev_sweep;
	/*
	 * Its drain thread's: the ring position its records are copied out
	 * to during a sweep. The ring's space is freed (data_tail) only once
	 * they are in the stage, so a buffer the reader finds empty holds
	 * nothing that is not.
	 */
	uint64_t taken;
	/* its drain thread's: the capture just read, for the sample that follows it on this ring */
	unsigned char *cap;
	size_t cap_len, cap_alloc;
	int32_t cap_tid;                /* nonzero: one is pending */
	int32_t woke_tid;               /* nonzero: the program met this thread undescribed, just before */
};

/*
 * A sweep of B that began at START is over (under the lock). Sweeps begin
 * before they take the lock: one that began before the last one completed
 * tells nothing new, and moving the times back would shorten the margin
 * perf_take_stage counts on.
 */
static inline void cpu_swept(struct cpu_buf *b, uint64_t start)
{
	if (start <= b->sweep)
		return;
	b->prev_sweep = b->sweep;
	b->sweep = start;
}

/* What the drain thread has copied out and the reader not taken yet (under lock). */
struct stage {
	unsigned char *buf;
	size_t len, alloc;
	struct pending *pend;   /* .chunk is set when taken */
	size_t nr, alloc_pend;
};

/* A drain thread: the ring buffers [first, first + nr) it sweeps, and its wait. */
struct drainer {
	struct perf_sampler *s;
	unsigned first, nr;
	int pin;                        /* the CPU it runs on, -1 any */
	int epoll_fd;                   /* its buffers and stop_fd */
	pthread_t thread;
	bool running;
	/*
	 * A sweep's records, copied out and shown to the hook without the
	 * lock (the hooks of several CPUs read their processes side by side),
	 * then moved to the stage under it
	 */
	struct stage local;
};

struct pending {
	uint64_t time;
	uint64_t seq;           /* ties keep ring-buffer order */
	size_t off;             /* into its chunk */
	uint32_t chunk;
	uint32_t len;           /* the record's bytes, then what the hook wrote after them */
	uint32_t extra;         /* the hook's bytes (8-byte aligned after the record) */
	uint64_t rss, rss_anon; /* a process's first sample: its resident memory then; 0 none */
};

/*
 * Records copied out of the ring buffers, as the reader took them from the
 * drain thread. A chunk is freed once all its records are delivered, so a
 * record is copied once however long it waits for its turn.
 */
struct chunk {
	unsigned char *buf;     /* NULL: a free slot */
	size_t len, alloc;
	size_t live;            /* records not delivered yet */
};

/* A process the drain thread has seen samples of. */
struct drain_proc {
	int32_t pid;
	bool top_stale;                 /* it exec'd: stack_top is the old image's */
	/*
	 * Where its main thread's stack began (/proc/PID/stat's startstack; 0
	 * unknown): no frame lies above it, only the arguments, environment
	 * and up to 8 KiB of random padding, which the drain leaves out of
	 * the stack copies
	 */
	uint64_t stack_top;
};

struct perf_sampler {
	struct sampler_opts opts;
	struct perf_event_attr attr;
	struct cpu_buf *cpus;
	unsigned nr_cpus;
	size_t page_size;
	unsigned max_stack;

	/*
	 * A thread of its own empties the ring buffers into the stage as they
	 * fill, so that the time the reader spends unwinding (a first sample
	 * of a process reads its libraries' debug information: tens of ms)
	 * never lets them overflow. The reader takes the stage, sorts, and
	 * delivers what is old enough.
	 */
	struct drainer *drainers;       /* each waits in epoll(7): poll(2) would hook into every buffer at each wake-up */
	unsigned nr_drainers;
	pthread_mutex_t lock;
	int wake_fd;                    /* eventfd: the stage has records */
	int stop_fd;                    /* eventfd: the drain threads must end */
	struct stage stage;             /* under lock */
	uint64_t seq;                   /* under lock */
	/* the drain threads': the processes sampled so far (their first sample read their RSS), under procs_lock */
	pthread_mutex_t procs_lock;
	struct drain_proc *procs;
	size_t nr_procs, alloc_procs;
	struct idx proc_idx;            /* hash of pid -> procs[] */
	uint64_t buffered;              /* atomic: bytes copied out, not delivered yet */

	/* the reader's: records taken from the stage, waiting for their turn */
	struct chunk *chunks;
	size_t nr_chunks, alloc_chunks;
	struct pending *pend;
	size_t nr_pend, alloc_pend;
	struct pending *pend_tmp;       /* sorting's scratch */
	size_t alloc_pend_tmp;
	size_t *runs, alloc_runs;       /* where its sorted runs start */
	/*
	 * A delivered chunk's buffer, the stage's next: taken at each sample
	 * where Python is read, a stage of one record would otherwise be
	 * allocated, grown by the record's Python part and freed every time
	 */
	unsigned char *spare;
	size_t alloc_spare;

	/* captures at the sample for the hook (perf_bpf.c), NULL when not */
	struct sampler_capture *capture;
	bool hook_each_sample_asked;    /* opts.hook_each_sample as given (captures clear it) */
	bool woken;                     /* a sweep met a wake-up record (atomic): sweep again soon */

	uint64_t *chain;                /* scratch for one callchain */
	size_t alloc_chain;

	uint64_t nr_samples, nr_lost;
};

/* perf_open.c: the events and their ring buffers */
/* The online CPUs into *OUT (the caller frees it); returns how many. */
unsigned perf_online_cpus(int **out);
/* Fills s->attr from s->opts. */
void perf_setup_attr(struct perf_sampler *s);
/*
 * Opens an event per CPU of CPUS (s->nr_cpus of them) and maps its ring
 * buffer, as large as the locked-memory budget allows, then the other
 * tasks' events (attach). Returns 0, or a negative errno with ERR filled.
 */
int perf_open_and_map(struct perf_sampler *s, const int *cpus, char *err, size_t errlen);
/* Closes every event (the ring buffers stay mapped). */
void perf_close_events(struct perf_sampler *s);
/* Unmaps every ring buffer. */
void perf_unmap_all(struct perf_sampler *s);

/* perf_bpf.c: captures at the sample */
/* Loads the program and its maps (CPU numbers below MAX_CPU); NULL with errno set where BPF is denied. */
struct sampler_capture *perf_capture_new(unsigned max_cpu);
/* Sends each CPU's captures into its ring buffer and runs the program on every event; 0 or a negative errno. */
int perf_capture_attach(struct perf_sampler *s, struct sampler_capture *c);
void perf_capture_free(struct sampler_capture *c);
/*
 * A capture's record is a PERF_RECORD_SAMPLE too: the high half of its
 * first word (after the header) is this, which no sample's instruction
 * pointer has (not a canonical address).
 */
#define PERF_CAPTURE_MAGIC 0xb0f0c0deu
/* and a wake-up's (the magic, then the tid: a sample of something not described yet) */
#define PERF_CAPTURE_WAKE_MAGIC 0xb0f0c0dfu
/* A thread (and with it, when it is the leader, its process) exited: the program forgets them. */
void perf_capture_exit(struct sampler_capture *c, int32_t pid, int32_t tid);
/* Decodes a capture's raw data (RAW, LEN bytes: 8-byte aligned) into *OUT and *TID; false when malformed. */
bool perf_capture_decode(const void *raw, size_t len, struct sampler_captured *out, int32_t *tid);

/* perf_drain.c: records out of the ring buffers */
/*
 * One sweep of ring buffers [FIRST, FIRST + NR), each record shown to the
 * hook: into LOCAL without the lock, then into the stage under it (a drain
 * thread of its own CPU, beside the others'); or, LOCAL NULL, straight
 * into the stage under the lock. Returns when it began, and the records it
 * copied in *RECORDS (unless NULL).
 */
uint64_t perf_drain_range(struct perf_sampler *s, unsigned first, unsigned nr, struct stage *local,
			  size_t *records);
/* One sweep of every ring buffer: the reader's once the drain threads have stopped. */
void perf_drain_all(struct perf_sampler *s);

/* perf_drainer.c: the drain threads */
/* Starts the drain threads (and the eventfds they signal on); 0 or a negative errno. */
int perf_drainer_start(struct perf_sampler *s);
/* Stops the drain threads and waits for them; does nothing when none runs. */
void perf_drainer_stop(struct perf_sampler *s);
/* Stops them and frees what they used. */
void perf_drainers_free(struct perf_sampler *s);

/* perf_order.c: records in time order, to the consumer */
/*
 * The reader's side, not thread-safe. Takes what the drain thread staged;
 * returns the time before which every record is in hand.
 */
uint64_t perf_take_stage(struct perf_sampler *s);
/* Delivers the records taken that are older than LIMIT, in time order; 0, or CB's first nonzero return (delivery stops there). */
int perf_deliver_until(struct perf_sampler *s, uint64_t limit, sampler_cb cb, void *arg);
/* Sorts the reader's pending records by time, ties by sequence (perf_deliver_until's order). */
void perf_sort_pending(struct perf_sampler *s);

#endif
