// SPDX-License-Identifier: MIT
/* The perf_event backend: records taken from the drain thread, sorted by time, decoded and delivered to the consumer once every ring buffer has been read past them. */
#include "perf_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/*
 * A delivered chunk's buffer larger than this is freed, not kept as the
 * stage's next. A batch of DWARF samples is often larger than a MiB (a
 * PyTorch job's 50 ms: 1-2 MiB): freed, the next stage grew again from
 * nothing, copied by realloc at each doubling, a twentieth of proftool's
 * CPU there. The drain thread wakes the reader past 16 MiB staged, so a
 * buffer of the usual batch is kept, and one that a burst made larger is not.
 */
#define SPARE_MAX (16u << 20)

/*
 * Moves what the stage holds into a chunk of the reader's own, and returns
 * the time up to which every record is in hand: the start of the sweep
 * before the last completed one, of the buffer swept least lately. A record is written just after its time,
 * possibly after the last sweep read its buffer, so one whole sweep of
 * margin keeps a fork record ahead of its child's first samples however
 * often the reader takes.
 */
uint64_t perf_take_stage(struct perf_sampler *s)
{
	uint64_t limit, start = time_mono_ns();
	size_t k;

	pthread_mutex_lock(&s->lock);
	/*
	 * An empty buffer is swept here, as its drain thread would sweep it
	 * (the lock keeps that thread out): an idle CPU's thread sleeps long.
	 */
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		struct cpu_buf *b = &s->cpus[i];
		struct perf_event_mmap_page *mp = b->base;

		if (mp && __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE) == mp->data_tail)
			cpu_swept(b, start);
	}
	if (s->stage.nr) {
		for (k = 0; k < s->nr_chunks && s->chunks[k].buf; k++)
			;
		if (k == s->nr_chunks) {
			ALLOC_GROW(s->chunks, s->nr_chunks + 1, s->alloc_chunks);
			memset(&s->chunks[s->nr_chunks++], 0, sizeof(*s->chunks));
		}
		s->chunks[k] = (struct chunk){ s->stage.buf, s->stage.len, s->stage.alloc, s->stage.nr };
		ALLOC_GROW(s->pend, s->nr_pend + s->stage.nr, s->alloc_pend);
		for (size_t i = 0; i < s->stage.nr; i++) {
			s->pend[s->nr_pend] = s->stage.pend[i];
			s->pend[s->nr_pend++].chunk = (uint32_t)k;
		}
		/*
		 * the next stage starts as large as this one was, where no
		 * delivered chunk is spare yet (it still holds records newer
		 * than the limit), and room for one twice as large: not grown
		 * from nothing, copied at each doubling (what it does not use
		 * is never written; fresh pages of it take no memory)
		 */
		if (!s->spare && s->stage.len <= SPARE_MAX / 2) {
			s->alloc_spare = 2 * s->stage.len;
			s->spare = xmalloc(s->alloc_spare);
		}
		s->stage.buf = s->spare;
		s->stage.alloc = s->alloc_spare;
		s->stage.len = s->stage.nr = 0;
		s->spare = NULL;
		s->alloc_spare = 0;
	}
	/* swept by threads of their own (perf_drainer.c): the buffer swept least lately */
	limit = UINT64_MAX;
	for (unsigned i = 0; i < s->nr_cpus; i++)
		if (s->cpus[i].prev_sweep < limit)
			limit = s->cpus[i].prev_sweep;
	pthread_mutex_unlock(&s->lock);
	return limit;
}

/* Whether pending record A goes before B: by time, ties in ring-buffer order. */
static inline bool pend_before(const struct pending *a, const struct pending *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

/*
 * Sorts S's pending records by time. They come in runs already in order:
 * what the last delivery left, then each buffer's records of each sweep.
 * So the runs are found and merged pairwise, a pass per doubling: two or
 * three passes for a reader's batch where a general sort makes log2(n)
 * (qsort was a tenth of proftool's CPU on a C job).
 */
void perf_sort_pending(struct perf_sampler *s)
{
	size_t n = s->nr_pend, nr_runs = 0, *runs;
	struct pending *a = s->pend, *b, *t;
	size_t alloc_t;

	for (size_t i = 0; i < n;) {
		ALLOC_GROW(s->runs, nr_runs + 2, s->alloc_runs);
		s->runs[nr_runs++] = i++;
		while (i < n && !pend_before(&a[i], &a[i - 1]))
			i++;
	}
	if (nr_runs < 2)
		return;
	runs = s->runs;
	runs[nr_runs] = n;
	ALLOC_GROW(s->pend_tmp, n, s->alloc_pend_tmp);
	b = s->pend_tmp;
	while (nr_runs > 1) {
		size_t k = 0;

		for (size_t r = 0; r < nr_runs; r += 2) {
			/* a last run without a pair is copied as it is: mid = hi = n */
			size_t lo = runs[r], mid = runs[r + 1], hi = r + 2 <= nr_runs ? runs[r + 2] : n;
			size_t i = lo, j = mid, o = lo;

			while (i < mid && j < hi)
				b[o++] = pend_before(&a[j], &a[i]) ? a[j++] : a[i++];
			memcpy(&b[o], &a[i], (mid - i) * sizeof(*a));
			o += mid - i;
			memcpy(&b[o], &a[j], (hi - j) * sizeof(*a));
			runs[k++] = lo;
		}
		runs[k] = n;
		nr_runs = k;
		t = a, a = b, b = t;
	}
	if (a != s->pend) {
		/* the sorted copy is the array from now on, the old one the scratch */
		alloc_t = s->alloc_pend;
		s->pend_tmp = s->pend;
		s->alloc_pend = s->alloc_pend_tmp;
		s->alloc_pend_tmp = alloc_t;
		s->pend = a;
	}
}

/* Reads a u64 at *p within [p, end); returns false past the end. */
static bool take_u64(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	if (end - *p < 8)
		return false;
	memcpy(v, *p, 8);
	*p += 8;
	return true;
}

static bool parse_sample(struct perf_sampler *s, const unsigned char *p, const unsigned char *end,
			 uint16_t misc, struct sampler_rec *r)
{
	uint64_t v, nr = 0, ip;
	uint32_t nr_kernel = 0, nr_out = 0;
	int ctx = 0; /* 1 kernel, 2 user */

	r->type = SAMPLER_REC_SAMPLE;
	if (!take_u64(&p, end, &ip) || !take_u64(&p, end, &v))
		return false;
	r->pid = (int32_t)(v & 0xffffffff);
	r->tid = (int32_t)(v >> 32);
	if (!take_u64(&p, end, &r->time) || !take_u64(&p, end, &v))
		return false;
	r->cpu = (uint32_t)v;
	/* a fixed period is not in the record (see perf_setup_attr) */
	r->sample.period = s->opts.period;
	if ((s->attr.sample_type & PERF_SAMPLE_PERIOD) && !take_u64(&p, end, &r->sample.period))
		return false;
	r->sample.ip = ip;
	r->sample.user = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	r->sample.chain_full = false;
	if (s->attr.sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint32_t nr_ips = 0;

		if (!take_u64(&p, end, &nr) || nr > (uint64_t)(end - p) / 8)
			return false;
		ALLOC_GROW(s->chain, nr + 1, s->alloc_chain);
		/* kernel frames first, then user frames, each leaf first */
		for (uint64_t i = 0; i < nr; i++) {
			take_u64(&p, end, &v);
			if (v >= (uint64_t)PERF_CONTEXT_MAX) {
				ctx = v == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
				      v == (uint64_t)PERF_CONTEXT_USER ? 2 : 3;
				continue;
			}
			nr_ips++;
			if (ctx == 1) {
				s->chain[nr_out++] = v;
				nr_kernel++;
			} else if (ctx == 2) {
				s->chain[nr_out++] = v;
			}
		}
		r->sample.chain_full = nr_ips >= s->max_stack;
	} else {
		ALLOC_GROW(s->chain, 1, s->alloc_chain);
		s->chain[0] = ip;
		nr_out = 1;
		nr_kernel = r->sample.user ? 0 : 1;
	}
	r->sample.chain = s->chain;
	r->sample.nr_chain = nr_out;
	r->sample.nr_kernel = nr_kernel;
	r->sample.regs = NULL;
	r->sample.regs_mask = 0;
	r->sample.stack = NULL;
	r->sample.stack_size = 0;
	if (s->attr.sample_type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;

		if (!take_u64(&p, end, &abi))
			return false;
		if (abi) {
			unsigned n = __builtin_popcountll(s->attr.sample_regs_user);

			if ((uint64_t)(end - p) < n * 8ull)
				return false;
			r->sample.regs = (const uint64_t *)p;
			r->sample.regs_mask = s->attr.sample_regs_user;
			p += n * 8;
		}
	}
	if (s->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		uint64_t size, dyn;

		if (!take_u64(&p, end, &size))
			return false;
		if (size) {
			const unsigned char *data = p;

			if ((uint64_t)(end - p) < size)
				return false;
			p += size;
			if (!take_u64(&p, end, &dyn))
				return false;
			r->sample.stack = data;
			r->sample.stack_size = dyn < size ? dyn : size;
		}
	}
	return true;
}

/* Non-sample records carry pid, tid, time, cpu in a trailer (sample_id_all). */
static void parse_trailer(const struct perf_event_header *h, struct sampler_rec *r)
{
	const unsigned char *t = (const unsigned char *)h + h->size - 24;
	uint64_t v;

	memcpy(&v, t, 8);
	r->pid = (int32_t)(v & 0xffffffff);
	r->tid = (int32_t)(v >> 32);
	memcpy(&r->time, t + 8, 8);
	memcpy(&v, t + 16, 8);
	r->cpu = (uint32_t)v;
}

/* Copies a NUL-terminated string bounded by END into a scratch buffer. */
static const char *bounded_str(const unsigned char *p, const unsigned char *end, char *buf, size_t n)
{
	size_t len = 0;

	while (p + len < end && p[len] && len + 1 < n)
		len++;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

static int deliver(struct perf_sampler *s, const struct perf_event_header *h, const struct pending *pe,
		   sampler_cb cb, void *arg)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	const unsigned char *end = (const unsigned char *)h + h->size;
	const unsigned char *tend = end - 24; /* start of the sample_id trailer */
	struct sampler_rec r;
	char name[4096];
	uint32_t u32[4];
	uint64_t u64[4];

	memset(&r, 0, sizeof(r));
	if (h->type != PERF_RECORD_SAMPLE) {
		if (h->size < sizeof(*h) + 24)
			return 0;
		parse_trailer(h, &r);
	}
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (!parse_sample(s, p, end, h->misc, &r))
			return 0;
		r.sample.extra = pe->extra ? end : NULL;
		r.sample.extra_size = pe->extra;
		r.sample.rss = pe->rss;
		r.sample.rss_anon = pe->rss_anon;
		s->nr_samples++;
		break;
	case PERF_RECORD_MMAP2:
		/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename */
		if (tend - p < 8 + 24 + 8 + 16 + 8)
			return 0;
		r.type = SAMPLER_REC_MMAP;
		memcpy(u32, p, 8);
		r.pid = u32[0];
		r.tid = u32[1];
		memcpy(u64, p + 8, 24);
		r.mmap.start = u64[0];
		r.mmap.len = u64[1];
		r.mmap.pgoff = u64[2];
		memcpy(u32, p + 32, 8);
		r.mmap.maj = u32[0];
		r.mmap.min = u32[1];
		memcpy(&r.mmap.ino, p + 40, 8);
		memcpy(u32, p + 56, 8);
		r.mmap.prot = u32[0];
		r.mmap.filename = bounded_str(p + 64, tend, name, sizeof(name));
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
			r.mmap.maj = r.mmap.min = 0, r.mmap.ino = 0;
		break;
	case PERF_RECORD_MMAP:
		/* pid, tid, addr, len, pgoff, filename: only from old kernels */
		if (tend - p < 8 + 24)
			return 0;
		r.type = SAMPLER_REC_MMAP;
		memcpy(u64, p + 8, 24);
		r.mmap.start = u64[0];
		r.mmap.len = u64[1];
		r.mmap.pgoff = u64[2];
		r.mmap.prot = 4; /* PROT_EXEC: without mmap_data only exec maps are reported */
		r.mmap.filename = bounded_str(p + 32, tend, name, sizeof(name));
		break;
	case PERF_RECORD_COMM:
		if (tend - p < 8)
			return 0;
		r.type = SAMPLER_REC_COMM;
		/* the task renamed, which is not always the one writing (pthread_setname_np) */
		memcpy(u32, p, 8);
		r.pid = u32[0];
		r.tid = u32[1];
		r.comm.comm = bounded_str(p + 8, tend, name, sizeof(name));
		r.comm.exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (tend - p < 16)
			return 0;
		r.type = h->type == PERF_RECORD_FORK ? SAMPLER_REC_FORK : SAMPLER_REC_EXIT;
		memcpy(u32, p, 16);
		r.pid = u32[0];
		r.fork.ppid = u32[1];
		r.tid = u32[2];
		r.fork.ptid = u32[3];
		break;
	case PERF_RECORD_LOST:
		if (tend - p < 16)
			return 0;
		r.type = SAMPLER_REC_LOST;
		memcpy(&r.lost.count, p + 8, 8);
		s->nr_lost += r.lost.count;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (tend - p < 8)
			return 0;
		r.type = SAMPLER_REC_LOST;
		memcpy(&r.lost.count, p, 8);
		s->nr_lost += r.lost.count;
		break;
	default:
		return 0;
	}
	return cb(&r, arg);
}

/*
 * Delivers pending records older than LIMIT in time order and keeps the
 * rest. A record is safe once every buffer has been read after it was
 * written: records carry their time when written, and each pass reads all
 * buffers, so whatever is older than the previous pass's start is in hand.
 */
int perf_deliver_until(struct perf_sampler *s, uint64_t limit, sampler_cb cb, void *arg)
{
	size_t i;
	int ret = 0;

	perf_sort_pending(s);
	for (i = 0; i < s->nr_pend && s->pend[i].time < limit; i++) {
		struct chunk *c = &s->chunks[s->pend[i].chunk];

		ret = deliver(s, (struct perf_event_header *)(c->buf + s->pend[i].off), &s->pend[i], cb, arg);
		c->live--;
		__atomic_sub_fetch(&s->buffered, s->pend[i].len, __ATOMIC_RELAXED);
		if (ret) {
			i++;
			break;
		}
	}
	if (i && i < s->nr_pend)
		memmove(s->pend, s->pend + i, (s->nr_pend - i) * sizeof(*s->pend));
	s->nr_pend -= i;
	for (size_t k = 0; k < s->nr_chunks; k++) {
		struct chunk *c = &s->chunks[k];

		if (c->buf && !c->live) {
			/* kept, unless a burst made it large */
			if (!s->spare && c->alloc <= SPARE_MAX) {
				s->spare = c->buf;
				s->alloc_spare = c->alloc;
			} else {
				free(c->buf);
			}
			memset(c, 0, sizeof(*c));
		}
	}
	return ret;
}
