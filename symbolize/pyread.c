// SPDX-License-Identifier: MIT
/*
 * Reading another process's memory for the CPython reader: ranges in as
 * few process_vm_readv(2) calls as they allow, and the page cache that
 * serves one stack read, its pages fetched together.
 */
#include "python.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "base/base.h"

#define READ_IOVECS 256         /* ranges per process_vm_readv (IOV_MAX is 1024) */

int py_read_process(void *arg, const struct py_read *r, size_t n)
{
	size_t done = 0;

	while (done < n) {
		struct iovec local[READ_IOVECS], remote[READ_IOVECS];
		size_t chunk = n - done < READ_IOVECS ? n - done : READ_IOVECS, nr = 0;
		ssize_t got;

		/*
		 * Ranges that follow each other in the target are one remote
		 * range: the kernel pins each remote range's pages in a call of
		 * its own, which is most of what a read costs.
		 */
		for (size_t i = 0; i < chunk; i++) {
			const struct py_read *ri = &r[done + i];

			local[i] = (struct iovec){ ri->buf, ri->len };
			if (nr && (uintptr_t)remote[nr - 1].iov_base + remote[nr - 1].iov_len == ri->addr)
				remote[nr - 1].iov_len += ri->len;
			else
				remote[nr++] = (struct iovec){ (void *)(uintptr_t)ri->addr, ri->len };
		}
		got = process_vm_readv((pid_t)(intptr_t)arg, local, chunk, remote, nr, 0);
		if (got < 0)
			return done ? (int)done : -errno;
		/* a partial transfer stops in or before the first range that failed */
		for (size_t i = 0; i < chunk; i++) {
			if ((size_t)got < r[done].len)
				return (int)done;
			got -= (ssize_t)r[done].len;
			done++;
		}
	}
	return (int)done;
}

bool py_target_read(const struct py_target *t, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return addr && addr < PY_USER_END && addr + len >= addr && t->read(t->read_arg, &r, 1) == 1;
}

void py_pages_reset(struct py_pages *p)
{
	if (++p->gen_now == 0) {
		memset(p->gen, 0, sizeof(p->gen));
		p->gen_now = 1;
	}
	p->used = 0;
}

/* The slot holding page PG (*HIT), or the empty slot where it would go; PY_PAGE_SLOTS when full. */
static size_t page_slot(const struct py_pages *p, uint64_t pg, bool *hit)
{
	size_t i = hash_u64(pg) & (PY_PAGE_SLOTS - 1);

	for (size_t k = 0; k < PY_PAGE_SLOTS; k++, i = (i + 1) & (PY_PAGE_SLOTS - 1)) {
		*hit = p->gen[i] == p->gen_now;
		if (!*hit || p->addr[i] == pg)
			return i;
	}
	*hit = false;
	return PY_PAGE_SLOTS;
}

static bool range_ok(const struct py_read *r)
{
	return r->addr && r->addr < PY_USER_END && r->addr + r->len >= r->addr;
}

/* Copies range R out of cached pages; false when one of them is not cached. */
static bool copy_cached(const struct py_pages *p, const struct py_read *r)
{
	uint64_t a = r->addr, end = r->addr + r->len;

	while (a < end) {
		uint64_t pg = a & ~(PY_PAGE_SIZE - 1), chunk = pg + PY_PAGE_SIZE - a;
		bool hit;
		size_t slot = page_slot(p, pg, &hit);

		if (!hit || p->bad[slot])
			return false;
		if (chunk > end - a)
			chunk = end - a;
		memcpy((uint8_t *)r->buf + (a - r->addr), p->data[slot] + (a - pg), chunk);
		a += chunk;
	}
	return true;
}

/* Adds page PG to the fetch list F (*NF entries) unless cached, listed, or the cache is full. */
static void want_page(struct py_pages *p, uint64_t pg, struct py_read *f, size_t *slots, size_t *nf)
{
	bool hit, dup = false;
	size_t slot;

	if (!pg || pg >= PY_USER_END)
		return;
	slot = page_slot(p, pg, &hit);
	for (size_t k = 0; k < *nf; k++)
		dup |= f[k].addr == pg;
	if (hit || dup || slot == PY_PAGE_SLOTS || p->used + *nf >= PY_PAGE_SLOTS * 3 / 4)
		return;
	/* claimed now, so that the next page of this call probes past it */
	p->gen[slot] = p->gen_now;
	p->addr[slot] = pg;
	p->bad[slot] = false;
	slots[*nf] = slot;
	f[(*nf)++] = (struct py_read){ pg, p->data[slot], PY_PAGE_SIZE };
}

void py_pages_prefetch(struct py_pages *p, const struct py_target *t, const struct py_read *r, size_t n,
		       const unsigned *below, const struct py_read *extra, size_t nr_extra, bool *extra_ok)
{
	struct py_read fetch[PY_PAGE_SLOTS + PY_PAGES_EXTRA];
	size_t slots[PY_PAGE_SLOTS + PY_PAGES_EXTRA], nf = 0, first_below, all;
	int got;

	for (size_t i = 0; i < n; i++) {
		if (!r[i].len || !range_ok(&r[i]) || r[i].len > PY_PAGES_RANGE_MAX)
			continue;
		for (uint64_t pg = r[i].addr & ~(PY_PAGE_SIZE - 1); pg < r[i].addr + r[i].len; pg += PY_PAGE_SIZE)
			want_page(p, pg, fetch, slots, &nf);
	}
	first_below = nf;
	for (size_t i = 0; i < n && below; i++) {
		uint64_t pg = r[i].addr & ~(PY_PAGE_SIZE - 1);

		if (!r[i].len || !range_ok(&r[i]) || r[i].len > PY_PAGES_RANGE_MAX)
			continue;
		/* lowest first, so that they follow each other in one remote range */
		for (unsigned k = below[i]; k >= 1; k--)
			if (pg >= k * PY_PAGE_SIZE)
				want_page(p, pg - k * PY_PAGE_SIZE, fetch, slots, &nf);
	}
	if (nr_extra > PY_PAGES_EXTRA)
		nr_extra = PY_PAGES_EXTRA;
	/* the direct ranges go between the ranges' pages and the pages below */
	all = nf + nr_extra;
	memmove(&fetch[first_below + nr_extra], &fetch[first_below], (nf - first_below) * sizeof(*fetch));
	memmove(&slots[first_below + nr_extra], &slots[first_below], (nf - first_below) * sizeof(*slots));
	for (size_t i = 0; i < nr_extra; i++) {
		fetch[first_below + i] = extra[i];
		slots[first_below + i] = SIZE_MAX;
		extra_ok[i] = false;
	}
	if (!all)
		return;
	got = t->read(t->read_arg, fetch, all);
	for (size_t k = 0; k < all; k++) {
		if (slots[k] == SIZE_MAX) {
			extra_ok[k - first_below] = (int)k < got;
		} else if ((int)k < got || k >= first_below + nr_extra) {
			/*
			 * Read, or a page below that failed or came after one that
			 * did: below a thread's first frames there is mostly
			 * nothing mapped, and asking again for each frame would
			 * fail again (a frame in such a page is read directly)
			 */
			p->bad[slots[k]] = (int)k >= got;
			p->used++;
		} else {
			p->gen[slots[k]] = p->gen_now - 1;
		}
	}
}

int py_pages_read(struct py_pages *p, const struct py_target *t, const struct py_read *r, size_t n,
		  unsigned below)
{
	unsigned b[2] = { below, below };
	size_t cached = 0;

	while (cached < n && range_ok(&r[cached]) && copy_cached(p, &r[cached]))
		cached++;
	if (cached == n)
		return (int)n;
	/* what is not cached yet, with the pages below it */
	py_pages_prefetch(p, t, r + cached, n - cached < 2 ? n - cached : 2, b, NULL, 0, NULL);
	for (size_t i = cached; i < n; i++) {
		if (!range_ok(&r[i]))
			return (int)i;
		if (!copy_cached(p, &r[i]) && !py_target_read(t, r[i].addr, r[i].buf, r[i].len))
			return (int)i;
	}
	return (int)n;
}

void py_pages_init(struct py_pages *p)
{
	memset(p, 0, sizeof(*p));
	p->data = xmalloc(st_mult(PY_PAGE_SLOTS, PY_PAGE_SIZE));
}

void py_pages_release(struct py_pages *p)
{
	free(p->data);
	p->data = NULL;
}
