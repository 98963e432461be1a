// SPDX-License-Identifier: MIT
/* What record and attach share: sampling options, the sampling loop, writing the profile. */
#ifndef PROFTOOL_CMD_SAMPLING_H
#define PROFTOOL_CMD_SAMPLING_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "live.h"
#include "regions.h"
#include "sampler/sampler.h"

struct sampling_opts {
	const char *output;     /* -o as given, then (sampling_name_output) the name it stands for */
	char *output_named;     /* that name, when -o has patterns (%h, %p, %r, %%) */
	unsigned long freq;
	bool freq_given;        /* -F on the command line */
	unsigned long period;   /* -c N: counting events, a sample every N; 0 by default */
	enum sampler_callgraph callgraph;
	enum sampler_event event;
	unsigned long stack_size; /* bytes of stack per sample with -g dwarf */
	double duration;        /* seconds, 0 = until the target ends */
	bool quiet;
	bool user_only;
	enum { BACKEND_AUTO, BACKEND_PERF, BACKEND_PTRACE } backend;
	bool wall;              /* --mode wall */
	bool python;            /* --python auto or on: merge CPython frames */
	bool python_on;         /* --python on: read every sample's at once, Python command or not */
	bool python_capture;    /* --python-capture auto: copy the frames at the sample where BPF may (the default) */
	bool unwind_scan;       /* --unwind-scan on: scan for the callers of code without CFI */
	bool python_likely;     /* the target looks like Python from the start (set by the caller) */
	enum regions_mode regions; /* --regions */
	struct live_opts live;  /* --delay, --paused, --control, --snapshot-every, --keep */
	enum sampler_backend used; /* what sampling_open settled on */
	struct sym_python *py;  /* sampling_open's, when python; freed by sampling_finish */
};

enum {
	OPT_BACKEND = 256,
	OPT_MODE,
	OPT_DURATION,
	OPT_STACK_SIZE,
	OPT_USER_ONLY,
	OPT_PYTHON,
	OPT_PYTHON_CAPTURE,
	OPT_UNWIND_SCAN,
	OPT_REGIONS,
	OPT_DELAY,
	OPT_PAUSED,
	OPT_CONTROL,
	OPT_SNAPSHOT_EVERY,
	OPT_KEEP,
	OPT_HELP,
};

/* Short options and long options every sampling command takes. */
#define SAMPLING_SHORTOPTS "o:F:c:g:e:q"
#define SAMPLING_LONGOPTS                                                   \
	{ "backend", required_argument, NULL, OPT_BACKEND },                \
	{ "mode", required_argument, NULL, OPT_MODE },                      \
	{ "duration", required_argument, NULL, OPT_DURATION },              \
	{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },          \
	{ "user-only", no_argument, NULL, OPT_USER_ONLY },                  \
	{ "python", required_argument, NULL, OPT_PYTHON },                  \
	{ "python-capture", required_argument, NULL, OPT_PYTHON_CAPTURE },  \
	{ "unwind-scan", required_argument, NULL, OPT_UNWIND_SCAN },        \
	{ "regions", required_argument, NULL, OPT_REGIONS },                \
	{ "delay", required_argument, NULL, OPT_DELAY },                    \
	{ "paused", no_argument, NULL, OPT_PAUSED },                        \
	{ "control", required_argument, NULL, OPT_CONTROL },                \
	{ "snapshot-every", required_argument, NULL, OPT_SNAPSHOT_EVERY },  \
	{ "keep", required_argument, NULL, OPT_KEEP }

/* The help lines for those options, shared by the usage texts. */
extern const char sampling_usage[];

void sampling_opts_init(struct sampling_opts *o);
/* Frees what parsing allocated (the --control paths). */
void sampling_opts_release(struct sampling_opts *o);
/*
 * Handles option C of COMMAND. Returns 0 when handled, 1 when C is not a
 * sampling option, or EXIT_USAGE after printing the error.
 */
int sampling_parse_opt(int c, const char *arg, struct sampling_opts *o, const char *command);

/* Checks combinations of options; prints and returns EXIT_USAGE when they clash. */
int sampling_validate(const struct sampling_opts *o, const char *command);

/*
 * Replaces -o's patterns (%h, %p, %r, %%) in o->output with the host
 * name, PID and RANK; snapshots, the control FIFO's answers and the last
 * profile all use the result.
 */
void sampling_name_output(struct sampling_opts *o, pid_t pid, int32_t rank);

/* Checks that the profile can be created before any work is done; prints and returns EXIT_FAIL if not. */
int sampling_check_output(const struct sampling_opts *o);

struct sampling_run;
struct profile;

/*
 * A live view of a recording (proftool top): TICK runs on every pass of
 * the sampling loop (about every 100 ms; false stops the recording), END
 * gets the last part's profile instead of it being written to -o (it
 * frees it, and returns the exit code).
 */
struct sampling_view {
	bool (*tick)(struct sampling_run *r, void *arg);
	int (*end)(struct sampling_run *r, struct profile *p, void *arg);
	void *arg;
};

/*
 * One sampling run. The caller opens the sampler, then runs the loop
 * until its target ends, --duration passes or (for attach) an interrupt.
 */
struct sampling_run {
	const struct sampling_opts *o;  /* after sampling_open: it records the backend used */
	struct sampler *sampler;
	struct sym_session *syms;
	const char *command;     /* what was profiled, for the profile's meta */
	uint64_t start_ns, start_real_ns, end_ns;
	int status;              /* record: wait status of the command, -1 while it runs */
	pid_t child;             /* record: the command, which gets our signals */
	pid_t target;            /* attach: the process whose end stops the run */
	bool interrupted;        /* attach: stopped by SIGINT, SIGTERM or SIGHUP */
	bool tty;
	uint64_t last_status_ns;
	uint64_t deadline_from;  /* --duration counts from here (the start, or the end of --delay) */
	uint64_t next_rss_ns;    /* when the processes' resident memory is read next */
	struct regions_run regions; /* the caller prepares it; sampling_finish joins and releases it */
	struct live live;        /* pauses and snapshots (live_start) */
	const struct sampling_view *view; /* NULL: none */
	bool jit_maps;           /* record set ONEDNN_JIT_PROFILE: the oneDNN perf maps are its own */
};

/* record and attach, whole (cmd/record.c, cmd/attach.c); VIEW may be NULL. */
int record_command(struct sampling_opts *o, char **command, const struct sampling_view *view);
int attach_process(struct sampling_opts *o, pid_t pid, const struct sampling_view *view);

/*
 * Installs the signal handlers (they only set flags) and blocks the signals
 * outside the loop's wait; WAITMASK receives the mask to wait with.
 */
void sampling_signals(sigset_t *waitmask);
/*
 * Opens the sampler with the options in O (and, with O->python, the
 * reader of Python frames in O->py); prints the error and returns NULL on
 * failure.
 */
struct sampler *sampling_open(struct sampling_opts *o, struct sampler_opts *so);
void sampling_begin(struct sampling_run *r);

/*
 * Whether a command (after env, nice, time...) is a Python interpreter or
 * a script with a python #! line, or a running process has one: then the
 * sampler reads Python stacks promptly from the first sample on.
 */
bool sampling_python_command(char *const argv[]);
bool sampling_python_process(pid_t pid);
void sampling_loop(struct sampling_run *r, const sigset_t *waitmask);
/*
 * Writes OUT.N: a complete profile of what was recorded since the last
 * snapshot (or the start), atomically, while the recording goes on; with
 * --keep, the oldest beyond it goes. PATH gets the file's name. Returns 0,
 * or EXIT_FAIL after printing why.
 */
int sampling_snapshot(struct sampling_run *r, char *path, size_t n);
/*
 * The profile of what was recorded since the last take or snapshot (or
 * the start), as a snapshot's, without writing it; the caller frees it.
 * Its meta.series_offset_ns says where it begins in the recording.
 */
struct profile *sampling_take(struct sampling_run *r);
/*
 * Drains what is left, symbolizes, writes the profile and prints the
 * closing line. Returns 0 or EXIT_FAIL; frees the run's sampler and session.
 */
int sampling_finish(struct sampling_run *r);

#endif
