// SPDX-License-Identifier: MIT
/*
 * The processes of a distributed job as the reports name them: by rank
 * ("rank 3 of 8, local 1, pid 4242"), and by host when the profile was
 * merged from recordings on several; and threads grouped by the keys that are a thread's own (comm, process,
 * thread, rank, host), the groups of --format regions --group-by.
 */
#include "model.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report.h"

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

bool report_many_hosts(const struct profile *p)
{
	for (size_t i = 1; i < p->nr_procs; i++)
		if (!str_same(p->procs[i].host, p->procs[0].host))
			return true;
	return false;
}

const char *report_process_host(const struct profile *p, uint32_t proc)
{
	return p->procs[proc].host ? p->procs[proc].host : "?";
}

const char *report_process_desc(const struct profile *p, uint32_t proc, bool hosts, struct sbuf *s)
{
	const struct profile_rank *j = &p->procs[proc].job;
	char rank[96] = "", *at = rank;
	size_t left = sizeof(rank);
	int n;

	if (j->rank >= 0) {
		n = snprintf(at, left, "rank %" PRId32, j->rank);
		at += n, left -= n;
		if (j->world_size > 0) {
			n = snprintf(at, left, " of %" PRId32, j->world_size);
			at += n, left -= n;
		}
		if (j->local_rank >= 0) {
			n = snprintf(at, left, ", local %" PRId32, j->local_rank);
			at += n, left -= n;
		}
		snprintf(at, left, ", ");
	}
	return sbuf_printf(s, "%spid %" PRId32 "%s%s", rank, p->procs[proc].pid, hosts ? " on " : "",
			   hosts ? report_process_host(p, proc) : "");
}

/* "NAME (DESC of PROC[, tid TID])" into S. */
static const char *title(const struct profile *p, const char *name, uint32_t proc, int32_t tid,
			 bool hosts, struct sbuf *s)
{
	char *desc = xstrdup(report_process_desc(p, proc, hosts, s)), tids[32] = "";

	if (tid >= 0)
		snprintf(tids, sizeof(tids), ", tid %" PRId32, tid);
	sbuf_printf(s, "%s (%s%s)", name ? name : "", desc, tids);
	free(desc);
	return s->buf;
}

const char *report_process_title(const struct profile *p, uint32_t proc, bool hosts, struct sbuf *s)
{
	return title(p, p->procs[proc].comm, proc, -1, hosts, s);
}

const char *report_thread_title(const struct profile *p, uint32_t thread, bool hosts, struct sbuf *s)
{
	const struct profile_thread *th = &p->threads[thread];

	return title(p, th->comm, th->process, th->tid, hosts, s);
}

const char *report_rank_label(const struct profile *p, uint32_t proc, char *buf, size_t n)
{
	int32_t rank = p->procs[proc].job.rank;

	if (rank < 0)
		return "none";
	snprintf(buf, n, "%" PRId32, rank);
	return buf;
}

/* ---- threads grouped by keys of their own ---- */

bool report_group_by_threads(const struct report_group_by *by, enum report_group_key *bad)
{
	for (size_t k = 0; k < by->nr; k++) {
		if (by->keys[k] == REPORT_GROUP_MODULE || by->keys[k] == REPORT_GROUP_STATE) {
			if (bad)
				*bad = by->keys[k];
			return false;
		}
	}
	return true;
}

struct tg_ctx {
	const struct profile *p;
	const struct report_group_by *by;
};

/* Two threads by the keys, in order: names and hosts ascending, ranks ascending (none last). */
static int thread_cmp(const void *a, const void *b, void *arg)
{
	const struct tg_ctx *c = arg;
	const struct profile *p = c->p;
	const struct profile_thread *x = &p->threads[*(const uint32_t *)a];
	const struct profile_thread *y = &p->threads[*(const uint32_t *)b];
	const struct profile_process *px = &p->procs[x->process], *py = &p->procs[y->process];

	for (size_t k = 0; k < c->by->nr; k++) {
		int r = 0;

		switch (c->by->keys[k]) {
		case REPORT_GROUP_COMM:
			r = strcmp(px->comm, py->comm);
			break;
		case REPORT_GROUP_PROCESS:
			if (!(r = strcmp(px->comm, py->comm)) && !(r = (px->pid > py->pid) - (px->pid < py->pid)))
				r = (x->process > y->process) - (x->process < y->process);
			break;
		case REPORT_GROUP_THREAD:
			r = strcmp(x->comm, y->comm);
			break;
		case REPORT_GROUP_RANK:
			/* none (-1) as the largest */
			r = ((uint32_t)px->job.rank > (uint32_t)py->job.rank) -
			    ((uint32_t)px->job.rank < (uint32_t)py->job.rank);
			break;
		case REPORT_GROUP_HOST:
			r = strcmp(report_process_host(p, x->process), report_process_host(p, y->process));
			break;
		default:
			break;
		}
		if (r)
			return r;
	}
	return 0;
}

/* "rank 3", "host node-a, rank 3", "process ranks (rank 3 of 4, pid 42)": thread T's group. */
static char *group_label(const struct profile *p, const struct report_group_by *by, uint32_t t,
			 bool hosts)
{
	const struct profile_thread *th = &p->threads[t];
	const struct profile_process *pr = &p->procs[th->process];
	struct sbuf desc = SBUF_INIT;
	char *label = xstrdup(""), *next, num[16];

	for (size_t k = 0; k < by->nr; k++) {
		const char *sep = k ? ", " : "";

		switch (by->keys[k]) {
		case REPORT_GROUP_COMM:
			next = xstrfmt("%s%scomm %s", label, sep, pr->comm);
			break;
		case REPORT_GROUP_PROCESS:
			next = xstrfmt("%s%sprocess %s", label, sep,
				       report_process_title(p, th->process, hosts, &desc));
			break;
		case REPORT_GROUP_THREAD:
			next = xstrfmt("%s%sthread %s", label, sep, th->comm);
			break;
		case REPORT_GROUP_RANK:
			next = pr->job.rank < 0 ? xstrfmt("%s%sno rank", label, sep) :
			       xstrfmt("%s%srank %s", label, sep, report_rank_label(p, th->process, num, sizeof(num)));
			break;
		case REPORT_GROUP_HOST:
			next = xstrfmt("%s%shost %s", label, sep, report_process_host(p, th->process));
			break;
		default:
			next = xstrdup(label);
			break;
		}
		free(label);
		label = next;
	}
	sbuf_release(&desc);
	return label;
}

int report_thread_groups_init(struct report_thread_groups *tg, const struct profile *p,
			      const struct report_group_by *by)
{
	struct tg_ctx c = { p, by };
	uint32_t *order;
	bool hosts = report_many_hosts(p);

	memset(tg, 0, sizeof(*tg));
	if (!report_group_by_threads(by, NULL))
		return -EINVAL;
	order = xmalloc(st_mult(p->nr_threads + 1, sizeof(*order)));
	tg->of = xmalloc(st_mult(p->nr_threads + 1, sizeof(*tg->of)));
	tg->label = xmalloc(st_mult(p->nr_threads + 1, sizeof(*tg->label)));
	for (size_t t = 0; t < p->nr_threads; t++)
		order[t] = t;
	QSORT_R(order, p->nr_threads, thread_cmp, &c);
	/* groups numbered in the order of their values */
	for (size_t i = 0; i < p->nr_threads; i++) {
		if (!i || thread_cmp(&order[i - 1], &order[i], &c))
			tg->label[tg->nr++] = group_label(p, by, order[i], hosts);
		tg->of[order[i]] = tg->nr - 1;
	}
	free(order);
	return 0;
}

void report_thread_groups_release(struct report_thread_groups *tg)
{
	if (!tg)
		return;
	for (size_t i = 0; i < tg->nr; i++)
		free(tg->label[i]);
	free(tg->label);
	free(tg->of);
	memset(tg, 0, sizeof(*tg));
}

struct report_region_row *report_region_rows_by_group(struct report_region_row *v, size_t *nr,
						      const struct report_thread_groups *tg)
{
	struct report_region_row *out = xcalloc(*nr + 1, sizeof(*out));
	struct idx index = { 0 };
	size_t n = 0;

	for (size_t i = 0; i < *nr; i++) {
		const struct report_region_row *x = &v[i];
		uint32_t g = tg->of[x->group], id;
		uint64_t h = hash_combine(hash_u64(x->node), g);
		size_t pos = 0;
		struct report_region_row *o = NULL;

		while ((id = idx_next(&index, h, &pos)) != IDX_NONE)
			if (out[id].node == x->node && out[id].group == g)
				o = &out[id];
		if (!o) {
			o = &out[n];
			*o = *x;
			o->group = g;
			idx_insert(&index, h, n++);
			continue;
		}
		o->count += x->count;
		o->total_ns += x->total_ns;
		o->self_ns += x->self_ns;
		o->min_ns = x->min_ns < o->min_ns ? x->min_ns : o->min_ns;
		o->max_ns = x->max_ns > o->max_ns ? x->max_ns : o->max_ns;
		o->samples += x->samples;
		o->cpu_ns += x->cpu_ns;
		o->open += x->open;
		o->open_end += x->open_end;
		o->open_start += x->open_start;
	}
	idx_release(&index);
	free(v);
	*nr = n;
	return out;
}
