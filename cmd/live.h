// SPDX-License-Identifier: MIT
/*
 * A recording under control while it runs: pause and resume (a FIFO,
 * signals, the program's own proftool_pause(), --paused, --delay) and
 * snapshots written as it goes (--snapshot-every, `snapshot`). Used by
 * record and attach through the sampling loop.
 */
#ifndef PROFTOOL_CMD_LIVE_H
#define PROFTOOL_CMD_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct live_opts {
	double delay;           /* --delay: seconds before sampling starts */
	bool paused;            /* --paused: nothing is sampled until `resume` */
	char *fifo, *ack;       /* --control fifo:PATH[,ACK] */
	double every_secs;      /* --snapshot-every SEC */
	uint64_t every_bytes;   /* --snapshot-every SIZE: bytes of sample data */
	unsigned long keep;     /* --keep N: snapshots kept (0: all) */
};

/* Parsing; 0 or -EINVAL. */
int live_parse_control(const char *arg, struct live_opts *o);
int live_parse_every(const char *arg, struct live_opts *o);

struct live_span {
	uint64_t start, end;    /* CLOCK_MONOTONIC */
};

struct live {
	bool open;              /* live_open ran: fifo_fd is set */
	int fifo_fd;            /* -1: none */
	bool fifo_made;         /* we made the FIFO and remove it */
	char line[512];
	size_t len;
	bool user;              /* paused from outside: control, a signal, --paused, --delay */
	bool program;           /* paused by the program (proftool_pause) */
	bool off;               /* the sampler is disabled */
	uint64_t user_since;    /* when the user's pause began */
	uint64_t delay_until;   /* --delay: when sampling starts (0: not waiting) */
	struct live_span *spans; /* the user's pauses that ended */
	size_t nr_spans, alloc_spans;
	/* snapshots */
	uint64_t from;          /* where the current part of the recording began */
	uint64_t due;           /* the next timed snapshot (0: none) */
	uint64_t bytes;         /* sample data since FROM */
	uint64_t count_from;    /* the event count at FROM */
	unsigned index;         /* the last OUT.N written */
	char series[48];        /* shared by the files of this recording; empty without snapshots */
	bool stop;              /* `stop` came */
};

struct sampling_run;

/* Before the target runs: opens (or makes) the control FIFO. Prints and returns EXIT_FAIL on error. */
int live_open(struct sampling_run *r);
/* Once the sampler runs (record: after the exec; attach: once enabled): the initial pause. */
void live_begin(struct sampling_run *r);
/* Once per pass of the sampling loop; false when the recording must stop. */
bool live_poll(struct sampling_run *r);
/* Pauses or resumes sampling as `pause` and `resume` on --control do (top's p key). */
void live_pause(struct sampling_run *r, bool on);
/* Counts a record's sample data for --snapshot-every SIZE. */
void live_count(struct live *l, size_t bytes);
/* Adds the user's pauses within [FROM, TO] to P, in P's time (since FROM). */
struct profile;
void live_add_pauses(const struct sampling_run *r, struct profile *p, uint64_t from, uint64_t to);
/* Closes and removes what live_start made. */
void live_end(struct sampling_run *r);

/* The signals that control a recording: SIGUSR1 asks for a snapshot, SIGUSR2 toggles the pause. */
void live_signal(int sig);

#endif
