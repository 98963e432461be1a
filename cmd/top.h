// SPDX-License-Identifier: MIT
/*
 * proftool top's parts, shared by cmd/top.c (options, the view of the
 * recording), cmd/top_screen.c (the table and the terminal) and
 * cmd/top_state.c (the window of profiles and the keys: pure, tested by
 * tests/unit/test_top.c).
 */
#ifndef PROFTOOL_CMD_TOP_H
#define PROFTOOL_CMD_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

/* ---- top_state.c: the window ---- */

/*
 * The profiles of the last few intervals, each part's sample times since
 * the recording's start and its meta.series set: as many of the newest
 * parts as cover SPAN_NS, give or take SLACK_NS (parts are only about an
 * interval long). With SPAN_NS 0, one profile of everything pushed
 * (--cumulative, --record). The window owns what it holds.
 */
struct top_window {
	uint64_t span_ns, slack_ns;
	struct profile **parts; /* oldest first */
	size_t nr, alloc;
	uint64_t parts_ns;      /* their durations, summed */
	struct profile *all;    /* span 0: everything, merged */
	const char *spill_dir;  /* span 0, when set: all moves its samples to a file here, for writing */
	size_t spill_chunk;
	struct profile *view;   /* span > 0: the parts merged, rebuilt after a push */
};

void top_window_init(struct top_window *w, uint64_t span_ns, uint64_t slack_ns);
/* Takes PART: the oldest parts go that the window no longer needs; with span 0 merged and freed. */
void top_window_push(struct top_window *w, struct profile *part);
/* Span 0 only: merges a copy of PART, which stays the caller's. */
void top_window_absorb(struct top_window *w, const struct profile *part);
/*
 * The window's profile: its parts merged (the window's to keep, valid
 * until the next push), or NULL while it is empty.
 */
const struct profile *top_window_profile(struct top_window *w);
void top_window_release(struct top_window *w);

/*
 * A new empty profile described as P is (command, event, rate, unwinding,
 * host, series), its start the recording's: what parts are merged into.
 */
struct profile *top_profile_like(const struct profile *p);
/* Brings the samples P moved to a temporary file back into memory, in time order. */
void top_profile_unspill(struct profile *p);
/* The paused time of P within its duration, in ns. */
uint64_t top_profile_paused_ns(const struct profile *p);

/* ---- top_state.c: the keys ---- */

#define TOP_FILTER_MAX 64

/* What the keys changed: how the table is shown. */
struct top_ui {
	enum report_sort sort;
	bool per_thread;        /* a row per thread and function, with a thread column */
	enum report_frames frames; /* the view of Python processes' stacks (f: the next) */
	char filter[TOP_FILTER_MAX]; /* only rows whose label has this; "" all */
	bool editing;           /* after '/': the filter being typed */
	char edit[TOP_FILTER_MAX];
	size_t edit_len;
};

enum top_action {
	TOP_NONE,               /* nothing changed */
	TOP_REDRAW,             /* the table is shown differently */
	TOP_REFRESH,            /* the terminal is to be painted again whole (Ctrl-L) */
	TOP_PAUSE,              /* pause or resume sampling */
	TOP_QUIT,
};

/* Keys: characters, and these for the ones that are not */
#define TOP_KEY_ENTER '\n'
#define TOP_KEY_ESC 27
#define TOP_KEY_BACKSPACE 127
#define TOP_KEY_CTRL_L 12
#define TOP_KEY_RESIZE 0x10000 /* the terminal changed size */

/* Applies KEY to UI; returns what the caller has to do. */
enum top_action top_key(struct top_ui *ui, int key);

/* ---- top_screen.c: the table and the terminal ---- */

/* What the header says besides the profile's own figures. */
struct top_status {
	const char *target;     /* "pid 123 (name)" or the command */
	uint64_t real_ns;       /* wall-clock time of the table */
	double elapsed;         /* seconds since the recording began */
	bool cumulative;        /* the window is everything since the start */
	bool paused, program_paused;
	bool ended;             /* the last table */
	uint64_t total_samples, total_lost; /* since the start */
	const char *backend;
};

/*
 * Writes one table as text to OUT (non-tty output): a timestamped header,
 * then at most LIMIT rows (0: all). P may be NULL (no samples yet).
 */
void top_print(FILE *out, const struct profile *p, const struct top_status *st,
	       const struct top_ui *ui, size_t limit);

/*
 * The full-screen table on the terminal (ncurses). top_screen_open returns
 * NULL when the terminal cannot be driven; from then until
 * top_screen_close (which every exit path reaches: also exit() and fatal
 * signals) standard error goes to a file, printed after the screen is gone.
 */
struct top_screen;
struct top_screen *top_screen_open(void);
/* The next key typed (as top_key takes it), or -1 when none is waiting. */
int top_screen_key(struct top_screen *s);
void top_screen_draw(struct top_screen *s, const struct profile *p, const struct top_status *st,
		     const struct top_ui *ui);
/* Paints the whole terminal again at the next draw. */
void top_screen_touch(struct top_screen *s);
void top_screen_close(struct top_screen *s);

#endif
