// SPDX-License-Identifier: MIT
/* Checked allocation, hashing, the id index and clocks shared by every stage. */
#include "base.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void (*oom_handler)(size_t);

void base_set_oom_handler(void (*fn)(size_t bytes))
{
	oom_handler = fn;
}

static void *oom(size_t n)
{
	if (oom_handler)
		oom_handler(n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	return p ? p : oom(n);
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	return p ? p : oom(nmemb * size);
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	return q ? q : oom(n);
}

char *xstrdup(const char *s)
{
	char *d = strdup(s);

	return d ? d : oom(strlen(s) + 1);
}

char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

size_t st_mult(size_t a, size_t b)
{
	size_t r;

	if (__builtin_mul_overflow(a, b, &r))
		oom(SIZE_MAX);
	return r;
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *c = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	while (n--) {
		h ^= *c++;
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t hash_str(const char *s, uint64_t seed)
{
	return s ? hash_bytes(s, strlen(s), seed) : hash_u64(seed ^ 0x5a5a);
}

uint64_t hash_u64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void idx_release(struct idx *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}

void idx_copy(struct idx *dst, const struct idx *src)
{
	size_t slots = src->mask ? src->mask + 1 : 0;

	memset(dst, 0, sizeof(*dst));
	if (!slots)
		return;
	dst->slot = xmalloc(st_mult(slots, sizeof(*dst->slot)));
	memcpy(dst->slot, src->slot, slots * sizeof(*dst->slot));
	dst->mask = src->mask;
	dst->count = src->count;
}

static void idx_put(struct idx *x, uint64_t hash, uint32_t id)
{
	size_t i = hash & x->mask;

	while (x->slot[i].id)
		i = (i + 1) & x->mask;
	x->slot[i] = (struct idx_slot){ hash, id + 1 };
}

void idx_insert(struct idx *x, uint64_t hash, uint32_t id)
{
	size_t slots = x->mask ? x->mask + 1 : 0;

	if ((x->count + 1) * 2 > slots) {
		struct idx old = *x;
		size_t n = slots ? slots * 2 : 64;

		x->slot = xcalloc(n, sizeof(*x->slot));
		x->mask = n - 1;
		for (size_t i = 0; i < slots; i++)
			if (old.slot[i].id)
				idx_put(x, old.slot[i].hash, old.slot[i].id - 1);
		free(old.slot);
	}
	idx_put(x, hash, id);
	x->count++;
}

int name_lookup(const struct name_value *table, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].name, name))
			return table[i].value;
	return -1;
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	uint64_t h = hash_str(s, 0);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&t->idx, h, &pos)) != IDX_NONE)
		if (!strcmp(t->str[id], s))
			return id;
	ALLOC_GROW(t->str, t->nr + 1, t->alloc);
	id = (uint32_t)t->nr++;
	t->str[id] = s;
	idx_insert(&t->idx, h, id);
	return id;
}

void strtab_release(struct strtab *t)
{
	free(t->str);
	idx_release(&t->idx);
	memset(t, 0, sizeof(*t));
}

uint32_t idx_next(const struct idx *x, uint64_t hash, size_t *pos)
{
	if (!x->mask)
		return IDX_NONE;
	for (size_t i = (hash + *pos) & x->mask; x->slot[i].id; i = (i + 1) & x->mask) {
		(*pos)++;
		if (x->slot[i].hash == hash)
			return x->slot[i].id - 1;
	}
	return IDX_NONE;
}

char *sbuf_grow(struct sbuf *s, size_t n)
{
	if (n > s->alloc) {
		s->buf = xrealloc(s->buf, n);
		s->alloc = n;
	}
	return s->buf;
}

static const char *sbuf_vprintf(struct sbuf *s, const char *fmt, va_list ap)
{
	va_list again;
	int len;

	va_copy(again, ap);
	len = vsnprintf(s->buf, s->alloc, fmt, ap);
	if (len < 0)
		len = 0;        /* a bad format: an empty string rather than none */
	else if ((size_t)len >= s->alloc)
		vsnprintf(sbuf_grow(s, (size_t)len + 1), (size_t)len + 1, fmt, again);
	va_end(again);
	if (!s->buf || len == 0)
		sbuf_grow(s, 1)[0] = '\0';
	return s->buf;
}

const char *sbuf_printf(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	const char *r;

	va_start(ap, fmt);
	r = sbuf_vprintf(s, fmt, ap);
	va_end(ap);
	return r;
}

void sbuf_release(struct sbuf *s)
{
	free(s->buf);
	s->buf = NULL;
	s->alloc = 0;
}

char *xstrfmt(const char *fmt, ...)
{
	struct sbuf s = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vprintf(&s, fmt, ap);
	va_end(ap);
	return s.buf;
}

void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *proc_stat_fields(int pid, int tid, char *buf, size_t n)
{
	char path[96], *p;
	size_t len;
	FILE *f;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	len = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* the name may hold spaces and parentheses: the fields start after the last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

uint64_t proc_start_stack(int pid)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, 0, buf, sizeof(buf));
	unsigned long long v = 0;

	/* startstack is field 28, the 26th after the name */
	for (int i = 0; f && i < 25; i++) {
		f = strchr(f, ' ');
		f = f ? f + 1 : NULL;
	}
	return f && sscanf(f, "%llu", &v) == 1 ? v : 0;
}

bool proc_maps_parse(char *line, struct proc_map *m)
{
	unsigned long long start, end, pgoff, ino;
	unsigned maj, min;
	char perms[8];
	int at = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min,
		   &ino, &at) < 7)
		return false;
	line[strcspn(line, "\n")] = '\0';
	*m = (struct proc_map){ start, end, pgoff, ino, maj, min, perms[2] == 'x',
				at ? line + at : "" };
	return true;
}

char proc_task_state(int pid, int tid, unsigned long *flags)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, tid, buf, sizeof(buf));
	unsigned long fl = 0;

	if (!f)
		return 0;
	/* state ppid pgrp session tty tpgid flags */
	if (flags && sscanf(f, "%*c %*d %*d %*d %*d %*d %lu", &fl) == 1)
		*flags = fl;
	return f[0];
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t time_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t time_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

bool proc_statm_parse(const char *buf, uint64_t *rss, uint64_t *anon)
{
	long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
	unsigned long long size, resident, shared;

	if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 || !resident)
		return false;
	*rss = resident * (uint64_t)page;
	*anon = resident > shared ? (resident - shared) * (uint64_t)page : 0;
	return true;
}

bool proc_statm_read(int32_t pid, uint64_t *rss, uint64_t *anon)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return proc_statm_parse(buf, rss, anon);
}
