// SPDX-License-Identifier: MIT
/* proftool top's window of per-interval profiles and its keys: no terminal, no sampler. */
#include "top.h"

#include <string.h>

#include "base/base.h"
#include "profile/profile.h"

void top_window_init(struct top_window *w, uint64_t span_ns, uint64_t slack_ns)
{
	memset(w, 0, sizeof(*w));
	w->span_ns = span_ns;
	w->slack_ns = slack_ns;
}

struct profile *top_profile_like(const struct profile *p)
{
	struct profile *n = profile_new();
	const struct profile_meta *m = &p->meta;

	n->meta.tool_version = xstrdup_or_null(m->tool_version);
	n->meta.command = xstrdup_or_null(m->command);
	n->meta.event = xstrdup_or_null(m->event);
	n->meta.callgraph = xstrdup_or_null(m->callgraph);
	n->meta.mode = xstrdup_or_null(m->mode);
	n->meta.backend = xstrdup_or_null(m->backend);
	n->meta.host = xstrdup_or_null(m->host);
	n->meta.kernel = xstrdup_or_null(m->kernel);
	/* one series: profile_merge takes the parts' processes and threads for the same */
	n->meta.series = xstrdup_or_null(m->series);
	n->meta.freq = m->freq;
	n->meta.period_ns = m->period_ns;
	n->meta.start_real_ns = m->start_real_ns - m->series_offset_ns;
	return n;
}

void top_profile_unspill(struct profile *p)
{
	size_t n = profile_nr_samples(p), i = 0;
	struct profile_sample *all;
	const struct profile_sample *s;
	struct profile_iter *it;

	if (!p->spill)
		return;
	all = xmalloc(st_mult(n + 1, sizeof(*all)));
	it = profile_iter_new(p);
	while (i < n && (s = profile_iter_next(it)))
		all[i++] = *s;
	/* a sample that could not be read back is lost, as it would be from the file */
	profile_iter_free(it);
	profile_spill_free(p->spill);
	p->spill = NULL;
	free(p->samples);
	p->samples = all;
	p->nr_samples = i;
	p->alloc_samples = n + 1;
}

uint64_t top_profile_paused_ns(const struct profile *p)
{
	uint64_t ns = 0;

	for (size_t i = 0; i < p->nr_pauses; i++)
		ns += p->pauses[i].end_ns - p->pauses[i].start_ns;
	return ns;
}

void top_window_absorb(struct top_window *w, const struct profile *part)
{
	if (!w->all) {
		w->all = top_profile_like(part);
		if (w->spill_dir && w->spill_chunk)
			(void)profile_spill_start(w->all, w->spill_dir, w->spill_chunk);
	}
	profile_merge(w->all, part);
	if (part->meta.exit_status >= 0)
		w->all->meta.exit_status = part->meta.exit_status;
}

void top_window_push(struct top_window *w, struct profile *part)
{
	size_t drop = 0;

	if (!w->span_ns) {
		top_window_absorb(w, part);
		profile_free(part);
		return;
	}
	ALLOC_GROW(w->parts, w->nr + 1, w->alloc);
	w->parts[w->nr++] = part;
	w->parts_ns += part->meta.duration_ns;
	/* the oldest goes while the newer ones cover the span without it */
	while (w->nr - drop > 1 && w->parts_ns - w->parts[drop]->meta.duration_ns + w->slack_ns >= w->span_ns) {
		w->parts_ns -= w->parts[drop]->meta.duration_ns;
		profile_free(w->parts[drop++]);
	}
	w->nr -= drop;
	memmove(w->parts, w->parts + drop, w->nr * sizeof(*w->parts));
	profile_free(w->view);
	w->view = top_profile_like(w->parts[0]);
	for (size_t i = 0; i < w->nr; i++)
		profile_merge(w->view, w->parts[i]);
}

const struct profile *top_window_profile(struct top_window *w)
{
	return w->span_ns ? w->view : w->all;
}

void top_window_release(struct top_window *w)
{
	for (size_t i = 0; i < w->nr; i++)
		profile_free(w->parts[i]);
	free(w->parts);
	profile_free(w->view);
	profile_free(w->all);
	memset(w, 0, sizeof(*w));
}

/* ---- keys ---- */

/* A key while the filter is being typed. */
static enum top_action edit_key(struct top_ui *ui, int key)
{
	switch (key) {
	case TOP_KEY_ENTER:
	case '\r':
		memcpy(ui->filter, ui->edit, ui->edit_len);
		ui->filter[ui->edit_len] = '\0';
		ui->editing = false;
		return TOP_REDRAW;
	case TOP_KEY_ESC:
		ui->filter[0] = '\0';
		ui->editing = false;
		return TOP_REDRAW;
	case TOP_KEY_BACKSPACE:
	case '\b':
		if (ui->edit_len)
			ui->edit[--ui->edit_len] = '\0';
		return TOP_REDRAW;
	default:
		if (key < ' ' || key > '~' || ui->edit_len + 1 >= sizeof(ui->edit))
			return TOP_NONE;
		ui->edit[ui->edit_len++] = (char)key;
		ui->edit[ui->edit_len] = '\0';
		return TOP_REDRAW;
	}
}

enum top_action top_key(struct top_ui *ui, int key)
{
	/* the same while a filter is typed */
	if (key == TOP_KEY_RESIZE)
		return TOP_REDRAW;
	if (key == TOP_KEY_CTRL_L)
		return TOP_REFRESH;
	if (ui->editing)
		return edit_key(ui, key);
	switch (key) {
	case 'q':
	case 'Q':
		return TOP_QUIT;
	case 's':
		ui->sort = REPORT_SORT_TOTTIME;
		return TOP_REDRAW;
	case 'c':
		ui->sort = REPORT_SORT_CUMTIME;
		return TOP_REDRAW;
	case 't':
		ui->per_thread = !ui->per_thread;
		return TOP_REDRAW;
	case 'p':
		return TOP_PAUSE;
	case 'f':
		ui->frames = (ui->frames + 1) % (REPORT_FRAMES_ALL + 1);
		return TOP_REDRAW;
	case '/':
		ui->editing = true;
		ui->edit_len = 0;
		ui->edit[0] = '\0';
		return TOP_REDRAW;
	case TOP_KEY_ESC:
		if (!ui->filter[0])
			return TOP_NONE;
		ui->filter[0] = '\0';
		return TOP_REDRAW;
	default:
		return TOP_NONE;
	}
}
