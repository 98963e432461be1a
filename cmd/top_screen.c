// SPDX-License-Identifier: MIT
/* proftool top's table, as text (a log) or on a full-screen terminal (ncurses). */
#include "top.h"

#include <curses.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "profile/profile.h"
#include "report/model.h"

/* ---- the rows ---- */

struct row {
	struct report_func_stat st;
	uint32_t thread;        /* PROFILE_NONE: all threads */
	size_t order;           /* the row's place before sorting: ties keep it */
};

struct table {
	struct row *rows;       /* those the filter keeps, sorted */
	size_t nr, alloc;
	uint64_t total;         /* samples in the window: the base of the shares */
	enum report_sort sort;
};

/* Appends the stats ST (sorted) of THREAD that the filter keeps. */
static void add_rows(struct table *t, const struct profile *p, const struct report_func_stat *st,
		     size_t nr, uint32_t thread, const char *filter)
{
	char label[4096];

	for (size_t i = 0; i < nr; i++) {
		if (*filter) {
			report_row_label(p, &st[i], label, sizeof(label));
			if (!strstr(label, filter))
				continue;
		}
		ALLOC_GROW(t->rows, t->nr + 1, t->alloc);
		t->rows[t->nr] = (struct row){ st[i], thread, t->nr };
		t->nr++;
	}
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct row *x = a, *y = b;
	int r = report_counts_cmp(*(const enum report_sort *)arg, REPORT_COUNTS(&x->st),
				  REPORT_COUNTS(&y->st));

	return r ? r : x->order < y->order ? -1 : x->order > y->order;
}

/* The rows of the window, by function or by thread and function, as UI asks. */
static void table_build(struct table *t, const struct profile *p, const struct top_ui *ui)
{
	uint64_t total, total_ns;
	struct report_func_stat *st;
	size_t nr;
	bool *keep;

	memset(t, 0, sizeof(*t));
	t->sort = ui->sort;
	if (!p)
		return;
	t->total = p->nr_samples;
	if (!ui->per_thread) {
		st = report_func_stats(p, NULL, &nr, &total, &total_ns);
		report_sort_stats(p, st, nr, ui->sort);
		add_rows(t, p, st, nr, PROFILE_NONE, ui->filter);
		free(st);
		return;
	}
	keep = xcalloc(p->nr_samples + 1, sizeof(*keep));
	for (uint32_t th = 0; th < p->nr_threads; th++) {
		bool any = false;

		for (size_t i = 0; i < p->nr_samples; i++)
			any |= keep[i] = p->samples[i].thread == th;
		if (!any)
			continue;
		st = report_func_stats(p, keep, &nr, &total, &total_ns);
		report_sort_stats(p, st, nr, ui->sort);
		add_rows(t, p, st, nr, th, ui->filter);
		free(st);
	}
	free(keep);
	/* by the counts across threads; name orders stay thread by thread */
	QSORT_R(t->rows, t->nr, row_cmp, &t->sort);
}

static const char *sort_name(enum report_sort key)
{
	switch (key) {
	case REPORT_SORT_CUMTIME: return "cumulative time";
	case REPORT_SORT_TOTTIME: return "self time";
	case REPORT_SORT_NSAMPLES: return "self samples";
	case REPORT_SORT_NAME: return "name";
	case REPORT_SORT_FILENAME: return "file name";
	default: return "file, line and name";
	}
}

#define COLUMNS_HEAD "       nsamples   tottime   tot%   cumtime   cum%  "
#define THREAD_WIDTH 24

/* The column heads, into BUF. */
static void head_text(char *buf, size_t n, bool per_thread)
{
	snprintf(buf, n, "%s%-*s%s", COLUMNS_HEAD, per_thread ? THREAD_WIDTH : 0,
		 per_thread ? "thread" : "", "filename:lineno(function)");
}

/* Row R as the report's table shows it, with the thread column when per thread. */
static void row_text(char *buf, size_t n, const struct profile *p, const struct table *t,
		     const struct row *r)
{
	char label[4096], ns[48], th[THREAD_WIDTH + 48] = "";
	const struct report_func_stat *s = &r->st;

	report_row_label(p, s, label, sizeof(label));
	snprintf(ns, sizeof(ns), "%" PRIu64 "/%" PRIu64, s->self, s->cum);
	if (r->thread != PROFILE_NONE) {
		const struct profile_thread *pt = &p->threads[r->thread];
		int32_t rank = p->procs[pt->process].job.rank;
		char name[THREAD_WIDTH + 48];

		/* the rank first, where the column is cut: which rank's thread it is */
		if (rank >= 0)
			snprintf(name, sizeof(name), "[rank %d] %s (%d)", (int)rank, pt->comm ? pt->comm : "?",
				 (int)pt->tid);
		else
			snprintf(name, sizeof(name), "%s (%d)", pt->comm ? pt->comm : "?", (int)pt->tid);
		snprintf(th, sizeof(th), "%-*.*s ", THREAD_WIDTH - 1, THREAD_WIDTH - 1, name);
	}
	snprintf(buf, n, "%15s %9.3f %5.1f%% %9.3f %5.1f%%  %s%s", ns, s->self_ns / 1e9,
		 t->total ? 100.0 * s->self / t->total : 0.0, s->cum_ns / 1e9,
		 t->total ? 100.0 * s->cum / t->total : 0.0, th, label);
}

/* ---- the header ---- */

#define HEAD_LINES 3

/*
 * ", RSS 81.3 MiB" (", RSS 181.3 MiB in 2 processes"): the resident memory of
 * the window's processes at their latest readings, into BUF; "" without any.
 */
static void rss_text(const struct profile *p, char *buf, size_t n)
{
	uint64_t total = 0;
	size_t procs = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->nr_procs; i++) {
		const struct profile_process *pr = &p->procs[i];
		bool latest = pr->nr_rss > 0;

		/* a process cut into several parts: its latest reading counts, once */
		for (size_t k = 0; latest && k < p->nr_procs; k++)
			latest = k == i || p->procs[k].pid != pr->pid || !p->procs[k].nr_rss ||
				 p->procs[k].rss[p->procs[k].nr_rss - 1].time_ns < pr->rss[pr->nr_rss - 1].time_ns ||
				 (p->procs[k].rss[p->procs[k].nr_rss - 1].time_ns == pr->rss[pr->nr_rss - 1].time_ns && k > i);
		if (latest) {
			total += pr->rss[pr->nr_rss - 1].rss;
			procs++;
		}
	}
	if (procs == 1)
		snprintf(buf, n, ", RSS %.1f MiB", total / 1048576.0);
	else if (procs)
		snprintf(buf, n, ", RSS %.1f MiB in %zu processes", total / 1048576.0, procs);
}

/*
 * What the header says: the target and its state; the window's samples,
 * rate, losses, processes and threads; the totals and how the rows are
 * shown. Into LINES.
 */
static void head(char lines[HEAD_LINES][512], const struct profile *p, const struct top_status *st,
		 const struct top_ui *ui)
{
	size_t procs = 0, threads = 0, n = p ? p->nr_samples : 0;
	double secs = p ? p->meta.duration_ns / 1e9 : 0;
	double active = p ? (p->meta.duration_ns - top_profile_paused_ns(p)) / 1e9 : 0;
	char filter[TOP_FILTER_MAX + 32] = "", frames[32] = "", rss[64] = "";

	snprintf(lines[0], sizeof(lines[0]), "%s%s%s", st->target,
		 st->paused ? "  PAUSED" : st->program_paused ? "  PAUSED by the program" : "",
		 st->ended ? "  (ended)" : "");
	if (p) {
		profile_count_sampled(p, &procs, &threads);
		rss_text(p, rss, sizeof(rss));
	}
	if (!p)
		snprintf(lines[1], sizeof(lines[1]), "waiting for the first %s",
			 st->paused ? "samples: sampling is paused" : "samples");
	else
		snprintf(lines[1], sizeof(lines[1]),
			 "%zu sample%s %s %.1f s (%.1f/s), %" PRIu64 " lost; %zu process%s, %zu thread%s%s",
			 n, n == 1 ? "" : "s", st->cumulative ? "since the start," : "in the last", secs,
			 active > 0 ? n / active : 0.0, p->meta.lost, procs, procs == 1 ? "" : "es",
			 threads, threads == 1 ? "" : "s", rss);
	if (ui->filter[0])
		snprintf(filter, sizeof(filter), ", filter '%s'", ui->filter);
	/* the view, once there are Python frames to fold */
	if (p && (p->recorded || (ui->frames == REPORT_FRAMES_ALL && report_has_python_frames(p))))
		snprintf(frames, sizeof(frames), ", frames %s", report_frames_name(ui->frames));
	snprintf(lines[2], sizeof(lines[2]),
		 "since the start: %" PRIu64 " samples, %" PRIu64 " lost, %.1f s; %s backend; by %s%s%s%s",
		 st->total_samples, st->total_lost, st->elapsed, st->backend, sort_name(ui->sort),
		 ui->per_thread ? ", per thread" : "", frames, filter);
}

void top_print(FILE *out, const struct profile *raw, const struct top_status *st,
	       const struct top_ui *ui, size_t limit)
{
	char lines[HEAD_LINES][512], text[4608], when[64];
	struct report_display d;
	struct report_frames_view v;
	const struct profile *p = report_frames_init(&v, report_display_init(&d, raw), ui->frames);
	struct top_status shown = *st;
	time_t secs = (time_t)(st->real_ns / 1000000000u);
	struct table t;
	struct tm tm;
	size_t rows;

	shown.target = report_display_str(&d, st->target);
	head(lines, p, &shown, ui);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&secs, &tm));
	fprintf(out, "proftool top at %s, %.1f s in: %s\n%s\n%s\n", when, st->elapsed, lines[0],
		lines[1], lines[2]);
	table_build(&t, p, ui);
	head_text(text, sizeof(text), ui->per_thread);
	fprintf(out, "\n%s\n", text);
	rows = limit && limit < t.nr ? limit : t.nr;
	for (size_t i = 0; i < rows; i++) {
		row_text(text, sizeof(text), p, &t, &t.rows[i]);
		fprintf(out, "%s\n", text);
	}
	if (rows < t.nr)
		fprintf(out, "... %zu more row%s (--limit 0 shows all)\n", t.nr - rows,
			t.nr - rows == 1 ? "" : "s");
	fputc('\n', out);
	fflush(out);
	free(t.rows);
	report_frames_release(&v);
	report_display_release(&d);
}

/* ---- the terminal ---- */

struct top_screen {
	SCREEN *scr;
	FILE *err;              /* what went to stderr meanwhile */
	int saved_err;          /* the real stderr, -1 when not redirected */
	bool touch;
};

/*
 * For the exits that skip top_screen_close: exit() (atexit) and fatal
 * signals, which can only write the terminal's reset strings and modes.
 */
static struct top_screen *active;
static struct termios saved_modes;
static bool have_modes;
static const char *reset_seq[2];
static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

static void on_fatal(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(reset_seq); i++)
		if (reset_seq[i] && write(STDOUT_FILENO, reset_seq[i], strlen(reset_seq[i])) < 0)
			break;
	if (have_modes)
		tcsetattr(STDOUT_FILENO, TCSANOW, &saved_modes);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void at_exit(void)
{
	top_screen_close(active);
}

static const char *cap(const char *name)
{
	char *s = tigetstr(name);

	return s && s != (char *)-1 ? s : NULL;
}

struct top_screen *top_screen_open(void)
{
	static bool registered;
	const char *term = getenv("TERM");
	struct top_screen *s;

	if (!isatty(STDOUT_FILENO) || !term || !*term || !strcmp(term, "dumb"))
		return NULL;
	have_modes = tcgetattr(STDOUT_FILENO, &saved_modes) == 0;
	fflush(stdout);
	s = xcalloc(1, sizeof(*s));
	s->saved_err = -1;
	s->scr = newterm(NULL, stdout, stdin);
	if (!s->scr) {
		free(s);
		return NULL;
	}
	set_term(s->scr);
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	reset_seq[0] = cap("rmcup");
	reset_seq[1] = cap("cnorm");
	/* messages while the screen is up would land in it: they wait in a file */
	s->err = tmpfile();
	if (s->err) {
		fflush(stderr);
		s->saved_err = dup(STDERR_FILENO);
		if (s->saved_err < 0 || dup2(fileno(s->err), STDERR_FILENO) < 0) {
			if (s->saved_err >= 0)
				close(s->saved_err);
			s->saved_err = -1;
		}
	}
	active = s;
	if (!registered)
		atexit(at_exit);
	registered = true;
	for (size_t i = 0; i < ARRAY_SIZE(fatal_sigs); i++)
		signal(fatal_sigs[i], on_fatal);
	return s;
}

int top_screen_key(struct top_screen *s)
{
	int c;

	(void)s;
	switch ((c = getch())) {
	case ERR:
		return -1;
	case KEY_BACKSPACE:
		return TOP_KEY_BACKSPACE;
	case KEY_ENTER:
		return TOP_KEY_ENTER;
	case KEY_RESIZE:
		return TOP_KEY_RESIZE;
	default:
		return c > 255 ? 0 : c;
	}
}

void top_screen_touch(struct top_screen *s)
{
	s->touch = true;
}

/* TEXT at row Y, cut to the width, the rest of the line cleared; with ATTR over the whole width. */
static void put(int y, const char *text, attr_t attr)
{
	if (y >= LINES)
		return;
	if (attr)
		attron(attr);
	mvaddnstr(y, 0, text, COLS);
	clrtoeol();
	if (attr) {
		for (int x = getcurx(stdscr); x < COLS; x++)
			addch(' ');
		attroff(attr);
	}
}

void top_screen_draw(struct top_screen *s, const struct profile *raw, const struct top_status *st,
		     const struct top_ui *ui)
{
	char lines[HEAD_LINES][512], text[4608], clock[16];
	struct report_display d;
	struct report_frames_view v;
	const struct profile *p = report_frames_init(&v, report_display_init(&d, raw), ui->frames);
	struct top_status shown = *st;
	time_t now = (time_t)(st->real_ns / 1000000000u);
	struct table t;
	struct tm tm;
	int y = 0;

	shown.target = report_display_str(&d, st->target);
	head(lines, p, &shown, ui);
	erase();
	snprintf(text, sizeof(text), "proftool top - %s", lines[0]);
	put(y, text, A_BOLD);
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&now, &tm));
	if (COLS > (int)strlen(text) + (int)strlen(clock) + 2)
		mvaddstr(y, COLS - (int)strlen(clock), clock);
	put(++y, lines[1], 0);
	put(++y, lines[2], 0);
	if (ui->editing)
		snprintf(text, sizeof(text), "filter: %s", ui->edit);
	else
		snprintf(text, sizeof(text), "q quit  s self  c cumulative  t per thread  p %s  f frames  / filter%s",
			 st->paused ? "resume" : "pause", ui->filter[0] ? "  Esc all rows" : "");
	put(++y, text, ui->editing ? A_BOLD : A_DIM);
	y++;
	head_text(text, sizeof(text), ui->per_thread);
	put(++y, text, A_REVERSE);
	table_build(&t, p, ui);
	for (size_t i = 0; i < t.nr && y + 1 < LINES; i++) {
		row_text(text, sizeof(text), p, &t, &t.rows[i]);
		put(++y, text, 0);
	}
	free(t.rows);
	if (ui->editing) {
		curs_set(1);
		move(HEAD_LINES, (int)(strlen("filter: ") + ui->edit_len) < COLS ?
			     (int)(strlen("filter: ") + ui->edit_len) : COLS - 1);
	} else {
		curs_set(0);
	}
	if (s->touch)
		clearok(curscr, TRUE);
	s->touch = false;
	refresh();
	report_frames_release(&v);
	report_display_release(&d);
}

void top_screen_close(struct top_screen *s)
{
	char buf[4096];
	size_t n;

	if (!s)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(fatal_sigs); i++)
		signal(fatal_sigs[i], SIG_DFL);
	active = NULL;
	/* endwin leaves the alternate screen and shows the cursor again */
	endwin();
	delscreen(s->scr);
	reset_seq[0] = reset_seq[1] = NULL;
	if (s->saved_err >= 0) {
		fflush(stderr);
		dup2(s->saved_err, STDERR_FILENO);
		close(s->saved_err);
	}
	if (s->err) {
		rewind(s->err);
		while ((n = fread(buf, 1, sizeof(buf), s->err)) > 0)
			fwrite(buf, 1, n, stderr);
		fclose(s->err);
	}
	free(s);
}
