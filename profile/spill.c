// SPDX-License-Identifier: MIT
/* Samples of a long recording moved to an unlinked temporary file, so memory stays flat. */
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Every CHUNK samples the in-memory array is written to the end of the
 * file as one run and emptied (runs lie one after another from offset 0;
 * profile_drop_samples() may leave gaps). The file is unlinked from the start, so
 * nothing is left behind whatever happens to proftool. Runs are sorted by
 * profile_sort_samples() and read back by a k-way merge, which keeps the
 * whole in time order with one small buffer per run.
 */
struct spill_run {
	off_t off;
	size_t n;
};

struct profile_spill {
	int fd;                 /* opened when the first chunk is full; -1 before */
	char *dir;
	bool failed;            /* the file could not be made or written: memory it is */
	size_t chunk;
	struct spill_run *runs;
	size_t nr_runs, alloc_runs;
	size_t nr;              /* samples in the file */
	off_t end;              /* where the next run goes (runs shrink where they lie) */
	int err;                /* samples could not be read back: they are lost */
};

/* An unlinked file in DIR: O_TMPFILE where the filesystem has it, else mkstemp and unlink. */
static int open_unlinked(const char *dir)
{
	size_t n = strlen(dir) + 32;
	char *path;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	path = xmalloc(n);
	snprintf(path, n, "%s/.proftool-spill.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	else
		unlink(path);
	free(path);
	return fd;
}

int profile_spill_start(struct profile *p, const char *dir, size_t chunk)
{
	if (p->spill || !chunk)
		return -EINVAL;
	/* the file comes with the first full chunk: a short recording holds nothing open */
	p->spill = xcalloc(1, sizeof(*p->spill));
	p->spill->fd = -1;
	p->spill->dir = xstrdup(dir);
	p->spill->chunk = chunk;
	return 0;
}

static int pio(int fd, void *buf, size_t len, off_t off, bool write)
{
	char *b = buf;

	while (len) {
		ssize_t n = write ? pwrite(fd, b, len, off) : pread(fd, b, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : write ? -ENOSPC : -EIO;
		b += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * The file could not take more (a full disk): its samples come back into
 * memory and the file goes, so that the space is free for the profile
 * itself. A full disk costs memory, never samples.
 */
static void spill_abandon(struct profile *p)
{
	struct profile_spill *sp = p->spill;
	size_t total = sp->nr + p->nr_samples;
	struct profile_sample *all = xmalloc(st_mult(total ? total : 1, sizeof(*all)));
	size_t at = 0;
	int ret = 0;

	for (size_t r = 0; r < sp->nr_runs && !ret; r++) {
		ret = pio(sp->fd, all + at, sp->runs[r].n * sizeof(*all), sp->runs[r].off, false);
		at += sp->runs[r].n;
	}
	if (ret < 0) {
		/* kept, so that profile_write() says the samples are lost */
		sp->err = ret == -ENOSPC ? -EIO : ret;
		free(all);
		return;
	}
	memcpy(all + sp->nr, p->samples, p->nr_samples * sizeof(*all));
	free(p->samples);
	p->samples = all;
	p->nr_samples = p->alloc_samples = total;
	profile_spill_free(sp);
	p->spill = NULL;
}

void profile_spill_maybe(struct profile *p)
{
	struct profile_spill *sp = p->spill;
	off_t off;
	int ret;

	if (!sp || sp->err || sp->failed || p->nr_samples < sp->chunk)
		return;
	if (sp->fd < 0 && (sp->fd = open_unlinked(sp->dir)) < 0) {
		sp->failed = true;
		return;
	}
	off = sp->end;
	ret = pio(sp->fd, p->samples, p->nr_samples * sizeof(*p->samples), off, true);
	if (ret < 0) {
		spill_abandon(p);
		return;
	}
	ALLOC_GROW(sp->runs, sp->nr_runs + 1, sp->alloc_runs);
	sp->runs[sp->nr_runs++] = (struct spill_run){ off, p->nr_samples };
	sp->nr += p->nr_samples;
	sp->end += (off_t)(p->nr_samples * sizeof(*p->samples));
	p->nr_samples = 0;
}

void profile_spill_free(struct profile_spill *sp)
{
	if (!sp)
		return;
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->dir);
	free(sp->runs);
	free(sp);
}

size_t profile_nr_samples(const struct profile *p)
{
	return p->nr_samples + (p->spill ? p->spill->nr : 0);
}

int profile_spill_error(const struct profile *p)
{
	return p->spill ? p->spill->err : 0;
}

/* Rewrites every spilled run through FN (which may sort it) and records read/write errors. */
static void spill_rewrite(struct profile *p,
			  void (*fn)(struct profile_sample *s, size_t n, void *arg), void *arg)
{
	struct profile_spill *sp = p->spill;
	struct profile_sample *buf;

	if (!sp || !sp->nr_runs)
		return;
	buf = xmalloc(st_mult(sp->chunk, sizeof(*buf)));
	for (size_t r = 0; r < sp->nr_runs; r++) {
		const struct spill_run *run = &sp->runs[r];
		size_t len = run->n * sizeof(*buf);
		int ret = pio(sp->fd, buf, len, run->off, false);

		if (!ret) {
			fn(buf, run->n, arg);
			ret = pio(sp->fd, buf, len, run->off, true);
		}
		if (ret < 0) {
			sp->err = ret == -ENOSPC ? -EIO : ret;
			break;
		}
	}
	free(buf);
}

struct map_arg {
	void (*fn)(struct profile_sample *s, void *arg);
	void *arg;
};

static void map_run(struct profile_sample *s, size_t n, void *arg)
{
	struct map_arg *m = arg;

	for (size_t i = 0; i < n; i++)
		m->fn(&s[i], m->arg);
}

void profile_map_samples(struct profile *p, void (*fn)(struct profile_sample *s, void *arg),
			 void *arg)
{
	struct map_arg m = { fn, arg };

	spill_rewrite(p, map_run, &m);
	map_run(p->samples, p->nr_samples, &m);
}

struct keep_arg {
	bool (*keep)(const struct profile_sample *s, void *arg);
	void *arg;
};

/* Compacts S[0..N) to the samples KEEP accepts; returns how many. */
static size_t keep_run(struct profile_sample *s, size_t n, const struct keep_arg *k)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++)
		if (k->keep(&s[i], k->arg))
			s[out++] = s[i];
	return out;
}

void profile_drop_samples(struct profile *p, bool (*keep)(const struct profile_sample *s, void *arg),
			  void *arg)
{
	struct keep_arg k = { keep, arg };
	struct profile_spill *sp = p->spill;
	struct profile_sample *buf;

	p->nr_samples = keep_run(p->samples, p->nr_samples, &k);
	if (!sp || !sp->nr_runs)
		return;
	/* a run shrinks where it lies: the offsets of the others stay */
	buf = xmalloc(st_mult(sp->chunk, sizeof(*buf)));
	for (size_t r = 0; r < sp->nr_runs && !sp->err; r++) {
		struct spill_run *run = &sp->runs[r];
		int ret = pio(sp->fd, buf, run->n * sizeof(*buf), run->off, false);
		size_t n;

		if (!ret) {
			n = keep_run(buf, run->n, &k);
			ret = n ? pio(sp->fd, buf, n * sizeof(*buf), run->off, true) : 0;
			sp->nr -= run->n - n;
			run->n = n;
		}
		if (ret < 0)
			sp->err = ret == -ENOSPC ? -EIO : ret;
	}
	free(buf);
}

int profile_sample_cmp(const void *a, const void *b)
{
	const struct profile_sample *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* ties broken by thread then stack, which keeps the order deterministic */
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void sort_run(struct profile_sample *s, size_t n, void *arg)
{
	(void)arg;
	QSORT(s, n, profile_sample_cmp);
}

void profile_sort_samples(struct profile *p)
{
	spill_rewrite(p, sort_run, NULL);
	sort_run(p->samples, p->nr_samples, NULL);
}

/* ---- reading back in order ---- */

#define ITER_BUF_BYTES (8u << 20) /* shared by all runs' buffers */

struct iter_run {
	const struct profile_sample *cur, *end; /* buffered part */
	off_t off;              /* next file offset to read */
	size_t left;            /* samples in the file not yet buffered */
	struct profile_sample *buf;
	size_t cap;
};

struct profile_iter {
	const struct profile *p;
	struct iter_run *runs;  /* spilled runs, then the in-memory array */
	size_t nr_runs;
	size_t *heap;           /* run indexes, smallest current sample first */
	size_t nr_heap;
	struct profile_sample cur; /* what next() returned last */
	int err;
};

static bool run_fill(struct profile_iter *it, struct iter_run *r)
{
	size_t n;
	int ret;

	if (r->cur < r->end)
		return true;
	if (!r->left || it->err)
		return false;
	n = r->left < r->cap ? r->left : r->cap;
	ret = pio(it->p->spill->fd, r->buf, n * sizeof(*r->buf), r->off, false);
	if (ret < 0) {
		it->err = ret;
		return false;
	}
	r->off += (off_t)(n * sizeof(*r->buf));
	r->left -= n;
	r->cur = r->buf;
	r->end = r->buf + n;
	return true;
}

static bool heap_less(const struct profile_iter *it, size_t a, size_t b)
{
	return profile_sample_cmp(it->runs[it->heap[a]].cur, it->runs[it->heap[b]].cur) < 0;
}

static void heap_down(struct profile_iter *it, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < it->nr_heap && heap_less(it, l, m))
			m = l;
		if (l + 1 < it->nr_heap && heap_less(it, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		t = it->heap[i];
		it->heap[i] = it->heap[m];
		it->heap[m] = t;
		i = m;
	}
}

struct profile_iter *profile_iter_new(const struct profile *p)
{
	struct profile_iter *it = xcalloc(1, sizeof(*it));
	size_t spilled = p->spill ? p->spill->nr_runs : 0, cap;

	it->p = p;
	it->runs = xcalloc(spilled + 1, sizeof(*it->runs));
	it->heap = xmalloc(st_mult(spilled + 1, sizeof(*it->heap)));
	cap = spilled ? ITER_BUF_BYTES / sizeof(struct profile_sample) / spilled : 0;
	if (cap < 256)
		cap = 256;
	for (size_t r = 0; r < spilled; r++) {
		struct iter_run *ir = &it->runs[r];

		ir->off = p->spill->runs[r].off;
		ir->left = p->spill->runs[r].n;
		ir->cap = ir->left < cap ? ir->left : cap;
		ir->buf = xmalloc(st_mult(ir->cap ? ir->cap : 1, sizeof(*ir->buf)));
	}
	it->runs[spilled].cur = p->samples;
	it->runs[spilled].end = p->samples + p->nr_samples;
	it->nr_runs = spilled + 1;
	for (size_t r = 0; r < it->nr_runs; r++)
		if (run_fill(it, &it->runs[r]))
			it->heap[it->nr_heap++] = r;
	for (size_t i = it->nr_heap; i-- > 0;)
		heap_down(it, i);
	return it;
}

const struct profile_sample *profile_iter_next(struct profile_iter *it)
{
	struct iter_run *r;

	if (!it->nr_heap || it->err)
		return NULL;
	r = &it->runs[it->heap[0]];
	/* a copy: the run's buffer may be refilled below */
	it->cur = *r->cur++;
	if (!run_fill(it, r))
		it->heap[0] = it->heap[--it->nr_heap];
	heap_down(it, 0);
	return it->err ? NULL : &it->cur;
}

int profile_iter_free(struct profile_iter *it)
{
	int err;

	if (!it)
		return 0;
	err = it->err;
	for (size_t r = 0; r + 1 < it->nr_runs; r++)
		free(it->runs[r].buf);
	free(it->runs);
	free(it->heap);
	free(it);
	return err;
}
