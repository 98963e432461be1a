// SPDX-License-Identifier: MIT
/*
 * What the header says about the samples a report keeps (and about the
 * whole profile): counts, span, processes and threads, and how their
 * stacks unwound. The text header and the JSON report both print it.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report.h"

/* How a stack's outermost frame says it ended. */
enum stack_end {
	END_UNKNOWN,            /* not looked at yet */
	END_ROOT,               /* at a thread's entry: unwound completely */
	END_TRUNCATED,          /* [truncated]: cut by the stack copy or the depth limit */
	END_EARLY,              /* anywhere else */
};

/* The reasons that leave a [truncated] frame at the root (symbolize/session.c). */
static bool cuts_stack(const char *reason)
{
	return !strcmp(reason, "stack copy too small") || !strcmp(reason, "too many frames");
}

static enum stack_end stack_end(const struct profile *p, uint32_t stack)
{
	const struct profile_func *f;

	if (report_stack_complete(p, stack))
		return END_ROOT;
	while (p->stacks[stack].parent != PROFILE_NONE)
		stack = p->stacks[stack].parent;
	f = &p->funcs[p->locs[p->stacks[stack].loc].func];
	if (!strcmp(f->name, "[truncated]") && f->module && !strcmp(f->module, "[truncated]"))
		return END_TRUNCATED;
	return END_EARLY;
}

static void add_stop(struct report_summary *s, const char *reason, const char *module,
		     uint64_t count)
{
	s->stops = xrealloc(s->stops, st_mult(s->nr_stops + 1, sizeof(*s->stops)));
	s->stops[s->nr_stops++] = (struct report_stop){ reason, module, count };
}

/* The recording's stop reasons of one kind: cutting the stack short, or any other. */
struct group {
	const struct profile_unwind_stop *first; /* NULL when the kind has none */
	bool modules;           /* the first reason comes with several modules */
	bool several;           /* there are several reasons */
	uint64_t count;         /* the samples they stopped, saturating */
};

/*
 * The profile counts stop reasons for all its samples, not per stack, so a
 * subset of the samples gets what its stacks tell apart: a [truncated]
 * root was cut by the stack copy or the depth limit, any other early end
 * had one of the other reasons or none. Within each kind a single reason
 * is exact; several leave the kind's count unexplained.
 */
static void kept_stops(struct report_summary *s, const struct profile *p, uint64_t truncated,
		       uint64_t early, uint64_t early_total)
{
	const struct profile_meta *m = &p->meta;
	struct group cut = { 0 }, other = { 0 };

	for (size_t i = 0; i < m->nr_stops; i++) {
		const struct profile_unwind_stop *st = &m->stops[i];
		struct group *g = cuts_stack(st->reason) ? &cut : &other;

		if (!g->first)
			g->first = st;
		else if (!strcmp(g->first->reason, st->reason))
			g->modules = true;
		else
			g->several = true;
		g->count = st->count > UINT64_MAX - g->count ? UINT64_MAX : g->count + st->count;
	}
	if (truncated && cut.first && !cut.several) {
		add_stop(s, cut.first->reason, cut.modules ? NULL : cut.first->module, truncated);
	} else if (truncated) {
		add_stop(s, REPORT_STOP_CUT, NULL, truncated);
		s->stops_exact = false;
	}
	if (!early)
		return;
	if (!other.first) {
		s->not_entry = early;
	} else if (!other.several && other.count >= early_total) {
		/* every early end in the recording had this one reason */
		add_stop(s, other.first->reason, other.modules ? NULL : other.first->module, early);
	} else {
		s->unexplained = early;
		s->stops_exact = false;
	}
}

void report_summarize(struct report_summary *s, const struct profile *p,
		      const struct report_filter *f, const bool *keep)
{
	const struct profile_meta *m = &p->meta;
	/* how far a stack was unwound is the recorded stack's, whatever the view folds */
	const struct profile *rec = p->recorded ? p->recorded : p;
	uint8_t *end = xcalloc(rec->nr_stacks + 1, 1);
	bool *seen_p = xcalloc(p->nr_procs + 1, 1), *seen_t = xcalloc(p->nr_threads + 1, 1);
	bool *kept_p = xcalloc(p->nr_procs + 1, 1), *kept_t = xcalloc(p->nr_threads + 1, 1);
	bool *jit = xcalloc(rec->nr_funcs + 1, 1);
	uint64_t truncated = 0, early = 0, early_total = 0;
	uint64_t first = UINT64_MAX, last = 0;

	memset(s, 0, sizeof(*s));
	s->stops_exact = true;
	s->samples_total = p->nr_samples;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *sm = &p->samples[i];
		uint32_t t = sm->thread, pr = p->threads[t].process, st = rec->samples[i].stack;

		if (!end[st])
			end[st] = stack_end(rec, st);
		s->complete_total += end[st] == END_ROOT;
		early_total += end[st] == END_EARLY;
		s->threads_total += !seen_t[t];
		s->procs_total += !seen_p[pr];
		seen_t[t] = seen_p[pr] = true;
		if (!keep[i])
			continue;
		s->samples++;
		s->weight_ns += sm->weight_ns;
		s->states[sm->state < PROFILE_STATE_NR ? sm->state : PROFILE_STATE_UNKNOWN]++;
		s->complete += end[st] == END_ROOT;
		truncated += end[st] == END_TRUNCATED;
		early += end[st] == END_EARLY;
		s->threads += !kept_t[t];
		s->procs += !kept_p[pr];
		kept_t[t] = kept_p[pr] = true;
		if (st != PROFILE_NONE) {
			uint32_t fn = rec->locs[rec->stacks[st].loc].func;

			if (profile_func_is_unnamed_jit(&rec->funcs[fn])) {
				s->jit_unnamed++;
				s->jit_mappings += !jit[fn];
				jit[fn] = true;
			}
		}
		first = sm->time_ns < first ? sm->time_ns : first;
		last = sm->time_ns > last ? sm->time_ns : last;
	}
	s->filtered = s->samples < s->samples_total;
	if (!s->filtered) {
		s->duration_ns = m->duration_ns;
	} else if (!f->pid && !f->tid && !f->comm && !f->state && !f->module) {
		/* a time window alone: the part of it the recording covers */
		uint64_t from = f->from_ns < m->duration_ns ? f->from_ns : m->duration_ns;
		uint64_t to = f->to_ns && f->to_ns < m->duration_ns ? f->to_ns : m->duration_ns;

		s->duration_ns = to - from;
	} else if (s->samples) {
		s->duration_ns = last - first;
	}

	if (!s->filtered) {
		/* all samples: the profile's own counts are exact */
		uint64_t explained = 0;

		for (size_t i = 0; i < m->nr_stops; i++) {
			add_stop(s, m->stops[i].reason, m->stops[i].module, m->stops[i].count);
			explained = m->stops[i].count > UINT64_MAX - explained ? UINT64_MAX :
				    explained + m->stops[i].count;
		}
		if (truncated + early > explained)
			s->not_entry = truncated + early - explained;
	} else {
		kept_stops(s, p, truncated, early, early_total);
	}
	free(jit);
	free(end);
	free(seen_p);
	free(seen_t);
	free(kept_p);
	free(kept_t);
}

void report_summary_release(struct report_summary *s)
{
	free(s->stops);
	memset(s, 0, sizeof(*s));
}
