// SPDX-License-Identifier: MIT
/*
 * proftool top: record or attach as usual, and every interval take what
 * was sampled, keep the last few intervals and show their table, on the
 * terminal or as a log; --record writes the whole of it at the end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "sampling.h"
#include "top.h"

/* Samples --record's profile keeps in memory before it moves them to a file, as record's do */
#define SPILL_CHUNK 65536

static const char top_head[] =
	"usage: proftool top [OPTIONS] PID\n"
	"       proftool top [OPTIONS] -- COMMAND [ARGS...]\n"
	"\n"
	"Samples the running process PID (as attach does) or runs COMMAND and samples\n"
	"it (as record does), and shows the hottest functions of the last few seconds\n"
	"in a table refreshed every second, with the columns of 'proftool report'.\n"
	"On a terminal the table fills the screen; keys: q quit, s sort by self time,\n"
	"c by cumulative time, t a row per thread and function, p pause or resume\n"
	"sampling, f the next --frames view, / show only the rows whose name has a text\n"
	"(type it, Enter applies, Esc clears), Ctrl-L repaint. Otherwise each interval appends a table with a\n"
	"timestamped header to standard output. Ctrl-C ends top and leaves PID running;\n"
	"with COMMAND it goes to the command, and top ends when the command exits, with\n"
	"its status (q leaves the command running).\n"
	"\n"
	"  --interval SEC       refresh every SEC seconds, at least 0.1 (default 1)\n"
	"  --window SEC         show the last SEC seconds (default 5)\n"
	"  --cumulative         show everything since the start instead\n"
	"  --sort KEY           order the rows by tottime (self time, the default),\n"
	"                       cumtime, nsamples, name, filename or nfl\n"
	"  --per-thread         start with a row per thread and function\n"
	"  --frames VIEW        how a process with Python frames is shown: mixed\n"
	"                       (default), python or all, as for proftool report\n"
	"  --limit N            rows of each table written to a file or pipe (default 20;\n"
	"                       0 all)\n"
	"  --record FILE        when top ends, also write the profile of the whole run\n"
	"                       (from the start, not only the window) to FILE, its\n"
	"                       patterns replaced as record -o's are (%h, %p, %r, %%)\n";
static const char top_tail[] =
	"  --duration SEC       stop after SEC seconds (COMMAND keeps running)\n"
	"  -q                   no closing line on stderr\n"
	"  -h, --help           show this help\n";

enum {
	OPT_INTERVAL = 512,
	OPT_WINDOW,
	OPT_CUMULATIVE,
	OPT_SORT,
	OPT_PER_THREAD,
	OPT_LIMIT,
	OPT_RECORD,
	OPT_FRAMES,
};

static const struct option top_options[] = {
	SAMPLING_LONGOPTS,
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "cumulative", no_argument, NULL, OPT_CUMULATIVE },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "frames", required_argument, NULL, OPT_FRAMES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct top_opts {
	struct sampling_opts so;
	double interval, window;    /* seconds */
	bool window_given, cumulative, per_thread, quiet;
	enum report_sort sort;
	enum report_frames frames;
	unsigned long limit;
	const char *record;         /* --record FILE, or NULL */
	pid_t pid;                  /* top PID */
	char **command;             /* top -- COMMAND */
};

/* The sampling options' help, but for those top does without (it has --record, and takes no snapshots). */
static void print_help(void)
{
	static const char *const left_out[] = { "  -o ", "  --snapshot-every", "  --keep", "  signals" };
	bool skip = false;

	fputs(top_head, stdout);
	for (const char *line = sampling_usage, *next; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		/* an option's entry goes on in lines indented further */
		if (strncmp(line, "   ", 3)) {
			skip = false;
			for (size_t i = 0; i < ARRAY_SIZE(left_out); i++)
				skip |= !strncmp(line, left_out[i], strlen(left_out[i]));
		}
		if (!skip)
			fwrite(line, 1, (size_t)(next - line), stdout);
	}
	fputs(top_tail, stdout);
}

/* Top's own options; 1 for the others. */
static int parse_top_opt(int c, const char *arg, struct top_opts *t)
{
	switch (c) {
	case OPT_INTERVAL:
		if (!parse_seconds(arg, &t->interval) || t->interval < 0.1)
			return usage_error("top", "--interval must be a number of seconds from 0.1, not '%s'", arg);
		return 0;
	case OPT_WINDOW:
		if (!parse_seconds(arg, &t->window))
			return usage_error("top", "--window must be a positive number of seconds, not '%s'", arg);
		t->window_given = true;
		return 0;
	case OPT_CUMULATIVE:
		t->cumulative = true;
		return 0;
	case OPT_SORT:
		if (report_sort_parse(arg, &t->sort) < 0)
			return usage_error("top", "--sort takes tottime, cumtime, nsamples, name, filename or nfl, not '%s'", arg);
		return 0;
	case OPT_PER_THREAD:
		t->per_thread = true;
		return 0;
	case OPT_FRAMES:
		if (report_frames_parse(arg, &t->frames) < 0)
			return usage_error("top", "--frames takes mixed, python or all, not '%s'", arg);
		return 0;
	case OPT_LIMIT:
		if (!parse_ulong(arg, 0, 1000000, &t->limit))
			return usage_error("top", "--limit must be a whole number of rows (0 for all), not '%s'", arg);
		return 0;
	case OPT_RECORD:
		if (!*arg)
			return usage_error("top", "--record needs a file name");
		if (output_pattern_bad(arg))
			return usage_error("top", "--record takes the patterns %%h (host name), %%p (process id), "
					   "%%r (rank) and %%%% (a %%), not '%.2s' in '%s'",
					   output_pattern_bad(arg), arg);
		t->record = arg;
		return 0;
	case 'o':
		return usage_error("top", "top writes a profile with --record FILE, not -o");
	case OPT_SNAPSHOT_EVERY:
	case OPT_KEEP:
		return usage_error("top", "%s goes with record and attach; top --record FILE writes one whole profile",
				   c == OPT_KEEP ? "--keep" : "--snapshot-every");
	default:
		return 1;
	}
}

static int parse_options(int argc, char **argv, struct top_opts *t)
{
	unsigned long v;
	int c, ret;

	memset(t, 0, sizeof(*t));
	sampling_opts_init(&t->so);
	t->interval = 1;
	t->window = 5;
	t->sort = REPORT_SORT_TOTTIME;
	t->limit = 20;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:" SAMPLING_SHORTOPTS "h", top_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			print_help();
			return -1;
		case ':':
			return usage_error("top", "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage_error("top", "unknown option '%s'", argv[optind - 1]);
		default:
			ret = parse_top_opt(c, optarg, t);
			if (ret == 1)
				ret = sampling_parse_opt(c, optarg, &t->so, "top");
			if (ret)
				return ret == 1 ? usage_error("top", "unknown option '%s'", argv[optind - 1]) : ret;
		}
	}
	if (t->cumulative && t->window_given)
		return usage_error("top", "--window and --cumulative do not go together: --cumulative shows everything");
	t->so.output = t->record;
	if ((ret = sampling_validate(&t->so, "top")))
		return ret;
	if (optind > 1 && !strcmp(argv[optind - 1], "--")) {
		if (optind >= argc)
			return usage_error("top", "no command given after '--'");
		t->command = argv + optind;
		return 0;
	}
	if (optind >= argc)
		return usage_error("top", "no process id or command given (top PID, or top -- COMMAND)");
	if (!parse_ulong(argv[optind], 1, INT32_MAX, &v))
		return usage_error("top", "'%s' is not a process id; to run a command, put it after '--'", argv[optind]);
	if (optind + 1 < argc)
		return usage_error("top", "one process id only, not '%s'", argv[optind + 1]);
	t->pid = (pid_t)v;
	return 0;
}

/* ---- the view ---- */

struct top {
	const struct top_opts *opts;
	struct top_ui ui;
	struct top_window win;      /* what the table shows */
	struct top_window rec;      /* --record without --cumulative: everything */
	struct top_screen *screen;  /* NULL: the tables go to stdout as text */
	bool started;
	uint64_t interval_ns, next_take, next_keys;
	uint64_t total_samples, total_lost;
	char *target;
	char *spill_dir;            /* --record's directory, once its name is made */
};

/* The whole run's profile: --cumulative's window or --record's own. */
static struct top_window *whole(struct top *t)
{
	return t->opts->cumulative ? &t->win : &t->rec;
}

/* A part of the recording: onto the recording's time line, into the window and the whole. */
static void add_part(struct top *t, struct profile *p)
{
	/*
	 * A long run's profile waits beside FILE, as record's does: FILE as
	 * --record's patterns made it, which the first part comes after.
	 */
	if (t->opts->record && !t->spill_dir) {
		const char *out = t->opts->so.output, *slash = strrchr(out, '/');

		t->spill_dir = slash ? xstrdup(out) : xstrdup(".");
		if (slash)
			t->spill_dir[slash - out + (slash == out)] = '\0';
		whole(t)->spill_dir = t->spill_dir;
	}
	top_profile_unspill(p);
	profile_shift_times(p, p->meta.series_offset_ns);
	t->total_samples += p->nr_samples;
	t->total_lost += p->meta.lost;
	if (t->opts->record && !t->opts->cumulative)
		top_window_absorb(&t->rec, p);
	top_window_push(&t->win, p);
}

static void status(const struct top *t, const struct sampling_run *r, struct top_status *st, bool ended)
{
	memset(st, 0, sizeof(*st));
	st->target = t->target ? t->target : r->command;
	st->real_ns = time_real_ns();
	st->elapsed = ((ended ? r->end_ns : time_mono_ns()) - r->start_ns) / 1e9;
	st->cumulative = t->opts->cumulative;
	st->paused = r->live.user;
	st->program_paused = r->live.program;
	st->ended = ended;
	st->total_samples = t->total_samples;
	st->total_lost = t->total_lost;
	st->backend = r->o->used == SAMPLER_BACKEND_PTRACE ? "ptrace" : "perf";
}

static void show(struct top *t, const struct sampling_run *r, bool ended)
{
	struct top_status st;

	status(t, r, &st, ended);
	if (t->screen)
		top_screen_draw(t->screen, top_window_profile(&t->win), &st, &t->ui);
	else
		top_print(stdout, top_window_profile(&t->win), &st, &t->ui, t->opts->limit);
}

static void start(struct top *t, const struct sampling_run *r)
{
	size_t n = strlen(r->command) + 32;

	t->started = true;
	t->next_take = r->start_ns + t->interval_ns;
	if (r->target > 0) {
		t->target = xmalloc(n);
		snprintf(t->target, n, "pid %d: %s", (int)r->target, r->command);
	}
	t->screen = top_screen_open();
}

/* Reads the keys typed; false for q. */
static bool keys(struct top *t, struct sampling_run *r, bool *redraw)
{
	int k;

	while ((k = top_screen_key(t->screen)) >= 0) {
		switch (top_key(&t->ui, k)) {
		case TOP_QUIT:
			return false;
		case TOP_PAUSE:
			/* as `pause` and `resume` on --control: the sampler stops and starts */
			live_pause(r, !r->live.user);
			*redraw = true;
			break;
		case TOP_REFRESH:
			top_screen_touch(t->screen);
			*redraw = true;
			break;
		case TOP_REDRAW:
			*redraw = true;
			break;
		case TOP_NONE:
			break;
		}
	}
	return true;
}

static bool tick(struct sampling_run *r, void *arg)
{
	struct top *t = arg;
	uint64_t now = time_mono_ns();
	bool redraw = false;

	if (!t->started) {
		start(t, r);
		redraw = t->screen != NULL;
	}
	/* the loop may come round far more often than every 100 ms: keys need not */
	if (t->screen && now >= t->next_keys) {
		t->next_keys = now + 20000000;
		if (!keys(t, r, &redraw))
			return false;
	}
	if (now >= t->next_take) {
		while (t->next_take <= now)
			t->next_take += t->interval_ns;
		/* paused, the table stays as it was (the screen's clock goes on) */
		if (!r->live.user)
			add_part(t, sampling_take(r));
		redraw = t->screen || !r->live.user;
	}
	if (redraw)
		show(t, r, false);
	/* the log's reader has gone (top PID | head): as q (the write error stays for main's check) */
	return !ferror(stdout);
}

/* Writes --record's file: the whole run, as record would have written it. */
static int write_record(struct top *t)
{
	struct profile *all = whole(t)->all;
	size_t procs, threads, n;
	char err[512];

	/* one whole recording, no longer a part of a series */
	free(all->meta.series);
	all->meta.series = NULL;
	all->meta.snapshot = 0;
	all->meta.series_offset_ns = 0;
	profile_sort_samples(all);
	/* the name record_command or attach_process made of --record's patterns */
	if (profile_write(all, t->opts->so.output, err, sizeof(err)) < 0) {
		print_error("%s; the profile was not saved (check the path and free space)", err);
		return EXIT_FAIL;
	}
	if (t->opts->quiet)
		return 0;
	n = profile_nr_samples(all);
	profile_count_sampled(all, &procs, &threads);
	print_error("wrote %s: %zu sample%s, %" PRIu64 " lost, %zu process%s, %zu thread%s, %.2f s",
	      t->opts->so.output, n, n == 1 ? "" : "s", all->meta.lost, procs, procs == 1 ? "" : "es",
	      threads, threads == 1 ? "" : "s", all->meta.duration_ns / 1e9);
	return 0;
}

static int end(struct sampling_run *r, struct profile *p, void *arg)
{
	struct top *t = arg;
	int ret = 0;

	/* the last part is not of the series unless snapshots were written: make it one */
	if (!p->meta.series) {
		p->meta.series = xstrdup(r->live.series);
		p->meta.series_offset_ns = r->end_ns - r->start_ns - p->meta.duration_ns;
	}
	add_part(t, p);
	/* on a terminal the screen goes; a log ends with the last table */
	if (t->screen)
		top_screen_close(t->screen);
	else
		show(t, r, true);
	t->screen = NULL;
	if (t->opts->record)
		ret = write_record(t);
	else if (!t->opts->quiet)
		print_error("top ran %.1f s: %" PRIu64 " sample%s, %" PRIu64 " lost", (r->end_ns - r->start_ns) / 1e9,
		      t->total_samples, t->total_samples == 1 ? "" : "s", t->total_lost);
	return ret;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o;
	struct top t = { .opts = &o };
	struct sampling_view view = { tick, end, &t };
	const char *spill = getenv("PROFTOOL_SPILL_SAMPLES"); /* the tests' */
	int ret = parse_options(argc, argv, &o);

	if (ret) {
		sampling_opts_release(&o.so);
		return ret < 0 ? EXIT_OK : ret;
	}
	o.quiet = o.so.quiet;
	/* the screen or the log says what the status line would */
	o.so.quiet = true;
	t.ui.sort = o.sort;
	t.ui.per_thread = o.per_thread;
	t.ui.frames = o.frames;
	t.interval_ns = (uint64_t)(o.interval * 1e9);
	/* parts are an interval long, give or take the loop's 100 ms */
	top_window_init(&t.win, o.cumulative ? 0 : (uint64_t)(o.window * 1e9), t.interval_ns / 2);
	top_window_init(&t.rec, 0, 0);
	if (o.record)
		whole(&t)->spill_chunk = o.cumulative ? 0 : spill && *spill ? strtoul(spill, NULL, 10) : SPILL_CHUNK;
	ret = o.command ? record_command(&o.so, o.command, &view) : attach_process(&o.so, o.pid, &view);
	top_screen_close(t.screen);
	top_window_release(&t.win);
	top_window_release(&t.rec);
	free(t.target);
	free(t.spill_dir);
	sampling_opts_release(&o.so);
	return ret;
}
