// SPDX-License-Identifier: MIT
/* Unit tests for proftool top's window of per-interval profiles and its keys (cmd/top_state.c). */
#include <string.h>

#include "cmd/top.h"
#include "profile/profile.h"
#include "unit.h"

#define SERIES "123-456"
#define SEC 1000000000ull

/*
 * Part K of a recording, as the view gets it after shifting: 1 s long from
 * K s, N samples of FUNC on thread TID (pid 100), LOST lost.
 */
static struct profile *part(unsigned k, const char *func, int32_t tid, size_t n, uint64_t lost)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_add_process(p, 100, 1, "app", "app");
	uint32_t th, stack;

	profile_add_thread(p, 100, proc, "app");
	th = tid == 100 ? 0 : profile_add_thread(p, tid, proc, "worker");
	stack = profile_add_stack(p, profile_add_stack(p, PROFILE_NONE,
				  profile_add_loc(p, profile_add_func(p, "main", "app", "app.c", 1), 0)),
				  profile_add_loc(p, profile_add_func(p, func, "app", "app.c", 10), 0));
	for (size_t i = 0; i < n; i++)
		profile_add_sample(p, k * SEC + i * 1000, th, stack, 1000000, PROFILE_STATE_UNKNOWN);
	p->meta.command = strdup("app");
	p->meta.series = strdup(SERIES);
	p->meta.snapshot = k + 1;
	p->meta.series_offset_ns = k * SEC;
	p->meta.start_real_ns = 1000 * SEC + k * SEC;
	p->meta.duration_ns = SEC;
	p->meta.freq = 1000;
	p->meta.period_ns = 1000000;
	p->meta.lost = lost;
	return p;
}

/* Samples of P whose leaf is function NAME. */
static size_t count_leaf(const struct profile *p, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_stack *s = &p->stacks[p->samples[i].stack];

		n += !strcmp(p->funcs[p->locs[s->loc].func].name, name);
	}
	return n;
}

/* The window's parts' durations, in ms, oldest first, as "1000 1000 10". */
static void spans(const struct top_window *w, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < w->nr && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? " " : "",
					(unsigned long long)(w->parts[i]->meta.duration_ns / 1000000));
}

/* Pushes a part of MS milliseconds. */
static void push_ms(struct top_window *w, uint64_t ms)
{
	struct profile *p = part(0, "f", 100, 1, 0);

	p->meta.duration_ns = ms * 1000000;
	top_window_push(w, p);
}

/* Which parts the window keeps: as many of the newest as cover its span, give or take the slack. */
static void span(void)
{
	struct top_window w;
	char got[256];

	/* 5 s of 1 s intervals: five, whether each came a little early or late */
	top_window_init(&w, 5 * SEC, SEC / 2);
	for (int i = 0; i < 7; i++)
		push_ms(&w, 1000);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "1000 1000 1000 1000 1000"));
	for (int i = 0; i < 7; i++)
		push_ms(&w, 980);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "980 980 980 980 980"));
	for (int i = 0; i < 7; i++)
		push_ms(&w, 1090);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "1090 1090 1090 1090 1090"));
	/* a short last part (top ending) does not push a whole interval out */
	push_ms(&w, 10);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "1090 1090 1090 1090 1090 10"));
	/* a part longer than the span (a pause inside it) is the window alone */
	push_ms(&w, 8000);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "8000"));
	CHECK_EQ_U(w.parts_ns, 8000 * 1000000ull);
	top_window_release(&w);

	/* a span shorter than the interval: the last part */
	top_window_init(&w, SEC / 2, SEC / 2);
	push_ms(&w, 1000);
	push_ms(&w, 1000);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "1000"));
	top_window_release(&w);

	/* 0.3 s of 0.1 s: three */
	top_window_init(&w, 3 * SEC / 10, SEC / 20);
	for (int i = 0; i < 5; i++)
		push_ms(&w, 100);
	spans(&w, got, sizeof(got));
	CHECK(!strcmp(got, "100 100 100"));
	top_window_release(&w);
}

static void sliding(void)
{
	struct top_window w;
	const struct profile *v;

	top_window_init(&w, 3 * SEC, SEC / 2);
	CHECK(top_window_profile(&w) == NULL);
	top_window_push(&w, part(0, "f_a", 100, 10, 1));
	v = top_window_profile(&w);
	CHECK_EQ_U(v->nr_samples, 10);
	CHECK_EQ_U(v->meta.duration_ns, SEC);
	CHECK_EQ_U(v->meta.start_real_ns, 1000 * SEC);
	top_window_push(&w, part(1, "f_a", 100, 20, 2));
	top_window_push(&w, part(2, "f_b", 100, 30, 0));
	v = top_window_profile(&w);
	CHECK_EQ_U(v->nr_samples, 60);
	CHECK_EQ_U(count_leaf(v, "f_a"), 30);
	CHECK_EQ_U(v->meta.lost, 3);
	CHECK_EQ_U(v->meta.duration_ns, 3 * SEC);
	CHECK_EQ_U(v->meta.freq, 1000);
	/* the parts' one process and thread stay one */
	CHECK_EQ_U(v->nr_procs, 1);
	CHECK_EQ_U(v->nr_threads, 1);
	/* full: the oldest goes with each push */
	top_window_push(&w, part(3, "f_b", 100, 40, 0));
	v = top_window_profile(&w);
	CHECK_EQ_U(v->nr_samples, 90);
	CHECK_EQ_U(count_leaf(v, "f_a"), 20);
	CHECK_EQ_U(v->meta.lost, 2);
	CHECK_EQ_U(v->meta.start_real_ns, 1000 * SEC);
	top_window_push(&w, part(4, "f_b", 101, 50, 0));
	top_window_push(&w, part(5, "f_b", 101, 60, 0));
	v = top_window_profile(&w);
	CHECK_EQ_U(count_leaf(v, "f_a"), 0);
	CHECK_EQ_U(count_leaf(v, "f_b"), 150);
	CHECK_EQ_U(v->meta.duration_ns, 3 * SEC);
	CHECK_EQ_U(v->nr_threads, 2);
	/* sample times stay on the recording's time line */
	CHECK_EQ_U(v->samples[0].time_ns, 3 * SEC);
	top_window_release(&w);
}

static void cumulative(void)
{
	struct top_window w, rec;
	struct profile *p;
	const struct profile *v;

	top_window_init(&w, 0, 0);
	top_window_init(&rec, 0, 0);
	for (unsigned k = 0; k < 4; k++) {
		p = part(k, k < 2 ? "f_a" : "f_b", 100, 10 * (k + 1), k);
		top_window_absorb(&rec, p);
		top_window_push(&w, p);
	}
	v = top_window_profile(&w);
	CHECK_EQ_U(v->nr_samples, 100);
	CHECK_EQ_U(count_leaf(v, "f_a"), 30);
	CHECK_EQ_U(v->meta.lost, 6);
	CHECK_EQ_U(v->meta.duration_ns, 4 * SEC);
	CHECK_EQ_U(v->nr_threads, 1);
	CHECK_EQ_U(rec.all->nr_samples, 100);
	CHECK(rec.all->meta.series && !strcmp(rec.all->meta.series, SERIES));
	CHECK_EQ_U(rec.all->meta.series_offset_ns, 0);
	CHECK(!strcmp(rec.all->meta.command, "app"));
	top_window_release(&w);
	top_window_release(&rec);
}

static void paused(void)
{
	struct profile *p = part(0, "f_a", 100, 1, 0);

	profile_add_pause(p, 100, 400);
	profile_add_pause(p, 1000, 1500);
	CHECK_EQ_U(top_profile_paused_ns(p), 800);
	profile_free(p);
}

/* Keys typed one after the other; returns the action of the last. */
static enum top_action type(struct top_ui *ui, const char *keys)
{
	enum top_action a = TOP_NONE;

	for (const char *k = keys; *k; k++)
		a = top_key(ui, (unsigned char)*k);
	return a;
}

static void keys(void)
{
	struct top_ui ui = { .sort = REPORT_SORT_TOTTIME };

	CHECK_EQ_U(top_key(&ui, 'c'), TOP_REDRAW);
	CHECK_EQ_U(ui.sort, REPORT_SORT_CUMTIME);
	CHECK_EQ_U(top_key(&ui, 's'), TOP_REDRAW);
	CHECK_EQ_U(ui.sort, REPORT_SORT_TOTTIME);
	CHECK_EQ_U(top_key(&ui, 't'), TOP_REDRAW);
	CHECK(ui.per_thread);
	CHECK_EQ_U(top_key(&ui, 't'), TOP_REDRAW);
	CHECK(!ui.per_thread);
	CHECK_EQ_U(top_key(&ui, 'p'), TOP_PAUSE);
	CHECK_EQ_U(top_key(&ui, 'x'), TOP_NONE);
	CHECK_EQ_U(top_key(&ui, TOP_KEY_CTRL_L), TOP_REFRESH);
	CHECK_EQ_U(top_key(&ui, TOP_KEY_RESIZE), TOP_REDRAW);
	CHECK_EQ_U(top_key(&ui, TOP_KEY_ESC), TOP_NONE);

	/* '/' edits; keys are text until Enter or Esc: q, s and p do not act */
	CHECK_EQ_U(top_key(&ui, '/'), TOP_REDRAW);
	CHECK(ui.editing);
	CHECK_EQ_U(type(&ui, "f_qsp"), TOP_REDRAW);
	CHECK(!strcmp(ui.edit, "f_qsp"));
	CHECK(!ui.filter[0]);
	CHECK_EQ_U(ui.sort, REPORT_SORT_TOTTIME);
	CHECK_EQ_U(top_key(&ui, TOP_KEY_BACKSPACE), TOP_REDRAW);
	CHECK_EQ_U(top_key(&ui, '\b'), TOP_REDRAW);
	CHECK_EQ_U(top_key(&ui, TOP_KEY_BACKSPACE), TOP_REDRAW);
	CHECK(!strcmp(ui.edit, "f_"));
	CHECK_EQ_U(top_key(&ui, 0x1f), TOP_NONE);     /* a control character is not text */
	CHECK_EQ_U(top_key(&ui, TOP_KEY_ENTER), TOP_REDRAW);
	CHECK(!ui.editing);
	CHECK(!strcmp(ui.filter, "f_"));
	CHECK_EQ_U(top_key(&ui, 'q'), TOP_QUIT);

	/* a new '/' starts from nothing; Esc drops the filter, applied or not */
	type(&ui, "/zz");
	CHECK(!strcmp(ui.filter, "f_"));
	CHECK_EQ_U(top_key(&ui, TOP_KEY_ESC), TOP_REDRAW);
	CHECK(!ui.editing);
	CHECK(!ui.filter[0]);
	type(&ui, "/ab\r");
	CHECK(!strcmp(ui.filter, "ab"));
	CHECK_EQ_U(top_key(&ui, TOP_KEY_ESC), TOP_REDRAW);
	CHECK(!ui.filter[0]);
	/* Enter on nothing shows every row */
	type(&ui, "/x\n/\n");
	CHECK(!ui.filter[0]);

	/* the filter holds at most TOP_FILTER_MAX - 1 characters */
	top_key(&ui, '/');
	for (int i = 0; i < 2 * TOP_FILTER_MAX; i++)
		top_key(&ui, 'a');
	CHECK_EQ_U(ui.edit_len, TOP_FILTER_MAX - 1);
	top_key(&ui, TOP_KEY_ENTER);
	CHECK_EQ_U(strlen(ui.filter), TOP_FILTER_MAX - 1);
}

int main(void)
{
	RUN(span);
	RUN(sliding);
	RUN(cumulative);
	RUN(paused);
	RUN(keys);
	UNIT_DONE();
}
