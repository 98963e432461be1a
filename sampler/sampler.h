// SPDX-License-Identifier: MIT
/* Sampling: perf_event_open per CPU, ring buffers, time-ordered records, spawning the target. */
#ifndef PROFTOOL_SAMPLER_H
#define PROFTOOL_SAMPLER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sampler_callgraph {
	SAMPLER_CG_NONE,  /* the sampled instruction only */
	SAMPLER_CG_FP,    /* the kernel walks frame pointers */
	SAMPLER_CG_DWARF, /* registers and a copy of the user stack, unwound later */
};

enum sampler_backend {
	SAMPLER_BACKEND_PERF,   /* perf_event_open: per-CPU inherited events */
	SAMPLER_BACKEND_PTRACE, /* interrupt, read registers and stack, continue */
};

enum sampler_event {
	SAMPLER_EVENT_CPU_CLOCK,
	SAMPLER_EVENT_TASK_CLOCK,
	SAMPLER_EVENT_CYCLES,
	SAMPLER_EVENT_INSTRUCTIONS,
	/* counting software events (perf backend only): a sample every Nth event */
	SAMPLER_EVENT_PAGE_FAULTS,
	SAMPLER_EVENT_MINOR_FAULTS,
	SAMPLER_EVENT_MAJOR_FAULTS,
	SAMPLER_EVENT_CONTEXT_SWITCHES,
	SAMPLER_EVENT_NR
};

/* Whether EV counts occurrences (a sample stands for events), not time. */
static inline bool sampler_event_counts(enum sampler_event ev)
{
	return ev >= SAMPLER_EVENT_PAGE_FAULTS;
}

/*
 * Reading more of a task at sample time, for state that is gone by the
 * time records are delivered (an interpreter's frames live in its heap,
 * not in the stack copy). SAMPLE is called for each sample as soon as the
 * backend has it: the ptrace backend while the thread is still stopped,
 * the perf backend when its drain thread takes the record out of the ring
 * buffer (a few ms after the sample). It writes at most CAP bytes about
 * thread TID of process PID into BUF (8-byte aligned) and returns how many;
 * they reach the callback with the sample as sample.extra. TASK is told of
 * each exec, process exit and new executable mapping as the backend sees
 * them, which across CPUs is not always before a sample that follows them.
 * EAGER, when set, says whether the hook has anything to read yet (the
 * perf backend then drains every millisecond, and at real-time priority
 * where allowed, instead of every 20 ms, or 100 ms with captures); with
 * captures (below), whether it has lately read samples later than they
 * were taken. They run on the sampler's own
 * threads (or the caller's during a flush): the perf backend's drain
 * threads, one per CPU where each sample is read at once, call them side
 * by side, each for the records of its own CPUs in their order; the hook
 * locks what they share.
 */
enum sampler_task_event {
	SAMPLER_TASK_EXEC,
	SAMPLER_TASK_EXIT,      /* the whole process */
	SAMPLER_TASK_MMAP,      /* an executable mapping */
};

/*
 * The user stack a sample copied when it was taken (perf backend, -g
 * dwarf): SIZE bytes from address SP. What a hook reads later may have
 * changed since; this has not.
 */
struct sampler_ustack {
	uint64_t sp;
	const void *data;
	size_t size;
};

/*
 * Memory of the sampled thread copied at the sample, in the sampled
 * thread's own context, by a BPF program on the perf event (perf_bpf.c):
 * what a hook would otherwise read a few ms later. The hook describes per
 * process what to copy (struct sampler_capture_layout) and per thread
 * where to start: START_LEN bytes at the thread's START; then the address
 * of the first node, at START + IND1 (a pointer to follow first, unless
 * SAMPLER_CAPTURE_NONE) + IND2; then each node, NODE_LEN bytes, and the
 * next one's address at NEXT in it, until 0 or SAMPLER_CAPTURE_NODES
 * nodes. With each node, unless CODE_AT is SAMPLER_CAPTURE_NONE, the
 * CODE_LEN bytes at the address the node holds at CODE_AT (an
 * interpreter frame's code object: checked against what the hook knows
 * of it without a read of its own). A chain that could not be read whole
 * ends early; the hook reads what is missing itself.
 */
#define SAMPLER_CAPTURE_NONE 0xffffffffu
#define SAMPLER_CAPTURE_START_MAX 256u  /* bytes */
#define SAMPLER_CAPTURE_NODE_MAX 128u   /* bytes, a multiple of 8 */
#define SAMPLER_CAPTURE_NODES 64u
#define SAMPLER_CAPTURE_CODE_MAX 160u   /* bytes at each node's CODE_AT pointer */

struct sampler_capture_layout {
	uint32_t start_len, node_len;   /* <= the maxima; NODE_LEN a multiple of 8 */
	uint32_t ind1, ind2, next;      /* NEXT + 8 <= NODE_LEN, a multiple of 8 */
	uint32_t code_at, code_len;     /* CODE_AT + 8 <= NODE_LEN, a multiple of 8, or NONE */
};

struct sampler_captured {
	uint64_t start;                 /* the thread's start address, as registered */
	uint64_t first;                 /* the first node's address, 0: the chain is empty */
	const uint8_t *start_bytes;     /* start_len bytes at START */
	size_t start_len;
	/*
	 * each at nodes + i * node_stride: its address (u64), its bytes; at
	 * code_offset in it, the address read at its CODE_AT (u64, 0 when
	 * its bytes were not copied), then CODE_LEN bytes from there
	 */
	size_t nr_nodes;
	const uint8_t *nodes;
	size_t node_stride, code_offset;
};

struct sampler_capture;

/*
 * A sample of a process or thread not described yet wakes the drain
 * thread at once, for the hook to read it while it is fresh and describe
 * it; their entries go when they exit. Any thread may call these.
 *
 * The process PID's layout, or NULL: nothing to copy, and nothing to wake
 * for (no interpreter); 0 or a negative errno.
 */
int sampler_capture_proc(struct sampler_capture *c, int32_t pid, const struct sampler_capture_layout *l);
/* Thread TID's start address, or 0: nothing to copy nor wake for; 0 or a negative errno. */
int sampler_capture_thread(struct sampler_capture *c, int32_t tid, uint64_t start);
/* Forgets process PID (it exited or exec'd, or may have become worth copying): it wakes again. */
void sampler_capture_forget_proc(struct sampler_capture *c, int32_t pid);

struct sampler_hook {
	/*
	 * US: the sample's stack copy, NULL when there is none (or the
	 * thread is stopped); CAP: what was captured at the sample, NULL
	 * when nothing was; an empty one (START 0) when the program had no
	 * entry for the thread or its process (describe them, again: an
	 * exited thread's or process's entry is gone with it)
	 */
	size_t (*sample)(void *arg, int32_t pid, int32_t tid, const struct sampler_ustack *us,
			 const struct sampler_captured *cap, void *buf, size_t cap_bytes);
	void (*task)(void *arg, enum sampler_task_event ev, int32_t pid);
	bool (*eager)(void *arg);
	/*
	 * Set when the hook can use captures: called with the perf backend's
	 * capture before the events are enabled, where captures work (BPF,
	 * root or CAP_BPF and CAP_PERFMON), and with NULL when they stop.
	 * Each sample then need not wake the drain thread.
	 */
	void (*capture)(void *arg, struct sampler_capture *c);
	void *arg;
	size_t cap;
};

struct sampler_opts {
	pid_t pid;              /* task to follow, with everything it creates afterwards */
	const pid_t *tids;      /* or these tasks (attach: every thread that exists) */
	size_t nr_tids;         /* 0: use pid */
	unsigned freq;          /* samples per second of CPU time */
	uint64_t period;        /* counting events: a sample every PERIOD events; 0 for clock events */
	enum sampler_event event;
	enum sampler_callgraph callgraph;
	unsigned stack_size;    /* bytes of user stack per sample (DWARF); multiple of 8 */
	bool enable_on_exec;    /* start counting at the target's next exec (spawning) */
	bool user_only;         /* no kernel frames (samples in the kernel still count) */
	enum sampler_backend backend;
	bool wall;              /* ptrace: sample threads whether running or blocked */
	const struct sampler_hook *hook; /* NULL: none */
	bool hook_each_sample;  /* perf: wake the drain thread at each sample (the target looks like
				   the hook's business from the start), not only once EAGER says so */
	bool no_capture;        /* perf: never capture for the hook at the sample (BPF), read later */
};

/* Parses "cpu-clock", "page-faults" (alias "faults"), "cs"...; returns 0 or -EINVAL. */
int sampler_event_parse(const char *name, enum sampler_event *ev);
const char *sampler_event_name(enum sampler_event ev);

enum sampler_rec_type {
	SAMPLER_REC_SAMPLE,
	SAMPLER_REC_MMAP,  /* an executable mapping */
	SAMPLER_REC_COMM,  /* a thread's name changed, or it exec'd */
	SAMPLER_REC_FORK,  /* a thread or process was created */
	SAMPLER_REC_EXIT,
	SAMPLER_REC_LOST,  /* samples dropped by the kernel */
};

/*
 * One record, valid only during the callback: pointers refer to the
 * sampler's buffers. Records reach the callback in timestamp order.
 */
/* What a sampled thread was doing (wall mode; unknown otherwise). */
enum sampler_state {
	SAMPLER_STATE_UNKNOWN,
	SAMPLER_STATE_RUNNING,  /* on a CPU or waiting for one (state R) */
	SAMPLER_STATE_WAITING,  /* sleeping, blocked in a lock or I/O (S, D...) */
};

struct sampler_rec {
	enum sampler_rec_type type;
	uint64_t time;          /* CLOCK_MONOTONIC, ns */
	int32_t pid, tid;
	uint32_t cpu;
	union {
		struct {
			uint64_t ip;
			bool user;              /* ip is a user-space address */
			const uint64_t *chain;  /* leaf first, context markers removed */
			uint32_t nr_chain;      /* user frames are chain[nr_kernel..] */
			uint32_t nr_kernel;     /* leading kernel frames in chain */
			bool chain_full;        /* the kernel's depth limit was hit */
			uint64_t period;
			const uint64_t *regs;   /* user registers, perf_regs order; NULL if none */
			uint64_t regs_mask;
			const uint8_t *stack;   /* copy of the user stack from SP */
			uint64_t stack_size;    /* bytes valid in stack */
			enum sampler_state state; /* wall mode: running or waiting */
			const void *extra;      /* what the hook wrote (struct sampler_hook) */
			size_t extra_size;
			/*
			 * The process's resident memory read as its first sample
			 * was taken (perf: as it was drained, a few ms later), so
			 * that a process too short for the recorder's own readings
			 * has one: bytes, and of them anonymous; rss 0 when not read
			 */
			uint64_t rss, rss_anon;
		} sample;
		struct {
			uint64_t start, len, pgoff;
			uint32_t maj, min;
			uint64_t ino;
			uint32_t prot;
			const char *filename;
		} mmap;
		struct {
			const char *comm;
			bool exec;
		} comm;
		struct {
			int32_t ppid, ptid;     /* parent; pid == ppid for a new thread */
		} fork;                         /* also used by SAMPLER_REC_EXIT */
		struct {
			uint64_t count;
		} lost;
	};
};

typedef int (*sampler_cb)(const struct sampler_rec *rec, void *arg);

struct sampler;

/*
 * Perf backend: opens disabled (or enable_on_exec) events on every online
 * CPU for opts->pid, with ring buffers sized to the locked-memory budget.
 * Ptrace backend: seizes every thread of opts->pid (or opts->tids) and
 * samples them by interrupting them, as records of the same kinds, each
 * sample with registers and a stack copy. Returns NULL with errno set and
 * a one-line reason (naming the fix where there is one) in ERR.
 */
struct sampler *sampler_open(const struct sampler_opts *opts, char *err, size_t errlen);
int sampler_enable(struct sampler *s);
int sampler_disable(struct sampler *s);

/*
 * Waits up to TIMEOUT_MS (with SIGMASK in force, as ppoll does, so a signal
 * ends the wait), drains every ring buffer and hands the records that can no
 * longer be preceded by an unread one to CB. A non-zero return from CB stops
 * the drain and is returned. Returns 0, or a negative errno.
 */
int sampler_read(struct sampler *s, int timeout_ms, const sigset_t *sigmask,
		 sampler_cb cb, void *arg);
/* Drains everything left, after the events are disabled, and delivers it all. */
int sampler_flush(struct sampler *s, sampler_cb cb, void *arg);

struct sampler_stats {
	uint64_t samples;       /* sample records read */
	uint64_t lost;          /* samples the kernel reported lost */
	uint64_t count;         /* event count (ns for the clock events) */
	unsigned nr_cpus;
	size_t buffer_bytes;    /* per CPU data area */
};
/* Fills STATS; count is read from the events and so is current. */
void sampler_get_stats(struct sampler *s, struct sampler_stats *stats);

void sampler_close(struct sampler *s);

/*
 * Whether the spawned command PID has ended, with its wait status; the
 * sampler does the waiting because ptrace reports through the same
 * waitpid(2). Never blocks.
 */
bool sampler_reap(struct sampler *s, pid_t pid, int *status);

/*
 * One look at every thread of a running process (proftool dump), made
 * without following it. Each thread in turn is seized, interrupted, its
 * registers, the top STACK_SIZE bytes of its stack and what HOOK reads
 * (hook->sample, as the ptrace backend calls it; task and eager are not
 * used) are copied, and it is let go at once: a thread is stopped only for
 * its own copy, never while another is read or anything is unwound. A
 * system call the stop cuts short is restarted, as after any ptrace stop;
 * a process that was stopped (SIGSTOP) is left stopped. A thread that has
 * not stopped within a few milliseconds (uninterruptible sleep, or waiting
 * for a CPU) is waited for again after the others, up to a second in all,
 * and is otherwise left as it was, with its /proc figures only. Threads
 * created while the snapshot is taken are not in it.
 *
 * The work runs on a thread of its own, which is the tracer; SIGCHLD is
 * blocked in the calling thread meanwhile. Not thread-safe otherwise.
 */
struct sampler_snapshot_opts {
	pid_t pid;
	unsigned stack_size;    /* bytes of user stack copied per thread; multiple of 8 */
	bool kernel_stack;      /* also read /proc/PID/task/TID/stack (root only) */
	const struct sampler_hook *hook; /* NULL: none */
};

enum sampler_thread_outcome {
	SAMPLER_THREAD_SAMPLED,     /* stopped, read and let go */
	SAMPLER_THREAD_NOT_STOPPED, /* never stopped in time: no registers, no stack */
	SAMPLER_THREAD_GONE,        /* it exited first */
};

/* One thread as the snapshot saw it; the /proc figures are read just before it was stopped. */
struct sampler_thread {
	int32_t tid;
	char comm[16];
	char state;             /* /proc's state letter (R, S, D, T, t, Z, I...), 0 when unknown */
	int32_t syscall;        /* the system call its stop cut short (x86-64 number), -1 none */
	char wchan[64];         /* the kernel function it sleeps in, "" when none or unreadable */
	char *kernel_stack;     /* kernel functions, innermost first, one per line; NULL when unread */
	enum sampler_thread_outcome outcome;
	uint64_t stopped_ns;    /* from the interrupt to the release: how long it may have been held */
};

struct sampler_snapshot;

/*
 * Takes the snapshot of O->pid. Returns NULL with errno set and a one-line
 * reason in ERR (no such process; ptrace denied, or the process already
 * traced, naming by whom) when no thread could be read.
 */
struct sampler_snapshot *sampler_snapshot_take(const struct sampler_snapshot_opts *o, char *err,
					       size_t errlen);
/* The threads, by thread id; the pointers stay valid until sampler_snapshot_free(). */
size_t sampler_snapshot_nr_threads(const struct sampler_snapshot *s);
const struct sampler_thread *sampler_snapshot_thread(const struct sampler_snapshot *s, size_t i);
/* Wall-clock nanoseconds the whole snapshot took, first seize to last release. */
uint64_t sampler_snapshot_duration(const struct sampler_snapshot *s);
/*
 * Hands CB a SAMPLE record (registers, stack copy, the hook's bytes, the
 * state: running or waiting) for every sampled thread, in thread order.
 * A non-zero return from CB stops and is returned.
 */
int sampler_snapshot_read(struct sampler_snapshot *s, sampler_cb cb, void *arg);
/* Accepts NULL. */
void sampler_snapshot_free(struct sampler_snapshot *s);

/*
 * Spawning. sampler_spawn() forks a child that waits before exec'ing
 * ARGV (a PATH search, like execvp); the caller opens events on its pid,
 * then sampler_spawn_start() lets it exec. start returns 0 once the exec
 * succeeded, or the exec's negative errno (the child has then exited 127).
 */
struct sampler_child {
	pid_t pid;
	int go_fd;      /* write end: one byte releases the child */
	int err_fd;     /* read end: the exec's errno, or EOF on success */
};
int sampler_spawn(struct sampler_child *c, char *const argv[]);
int sampler_spawn_start(struct sampler_child *c);
/* Kills and reaps a child that was never started. */
void sampler_spawn_abort(struct sampler_child *c);

#endif
