// SPDX-License-Identifier: MIT
/* Reading region event files (format.h): whatever a program, or its death, left in them. */
#include "regions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "regions/format.h"

void rgn_set_init(struct rgn_set *s)
{
	memset(s, 0, sizeof(*s));
}

void rgn_set_release(struct rgn_set *s)
{
	for (size_t i = 0; i < s->nr_names; i++) {
		free(s->names[i].domain);
		free(s->names[i].name);
	}
	for (size_t i = 0; i < s->nr_threads; i++)
		free(s->threads[i].ev);
	free(s->names);
	free(s->threads);
	idx_release(&s->name_idx);
	memset(s, 0, sizeof(*s));
}

/* The set's index of a name, added when new. */
static uint32_t add_name(struct rgn_set *s, const char *domain, size_t dl, const char *name, size_t nl)
{
	uint64_t h = hash_combine(hash_bytes(domain, dl, 1), hash_bytes(name, nl, 2));
	size_t pos = 0;
	uint32_t id;
	struct rgn_name_entry *e;

	while ((id = idx_next(&s->name_idx, h, &pos)) != IDX_NONE) {
		e = &s->names[id];
		if (strlen(e->domain) == dl && !memcmp(e->domain, domain, dl) && strlen(e->name) == nl &&
		    !memcmp(e->name, name, nl))
			return id;
	}
	ALLOC_GROW(s->names, s->nr_names + 1, s->alloc_names);
	e = &s->names[s->nr_names];
	e->domain = xmalloc(dl + 1);
	memcpy(e->domain, domain, dl);
	e->domain[dl] = '\0';
	e->name = xmalloc(nl + 1);
	memcpy(e->name, name, nl);
	e->name[nl] = '\0';
	id = (uint32_t)s->nr_names++;
	idx_insert(&s->name_idx, h, id);
	return id;
}

/*
 * The names area of a file: its ids (1..max_id) to the set's names in MAP,
 * RGN_NO_NAME where the file gave none. A name may hold no NUL: one that
 * does was not written by a writer of this format and is not taken.
 */
static uint32_t *read_names(struct rgn_set *s, const uint8_t *area, uint64_t size, uint32_t max_id)
{
	uint32_t *map = xmalloc(st_mult((size_t)max_id + 1, sizeof(*map)));
	uint64_t off = 0;

	for (size_t i = 0; i <= max_id; i++)
		map[i] = RGN_NO_NAME;
	while (off + sizeof(struct rgn_name) <= size) {
		struct rgn_name e;
		uint64_t need;

		memcpy(&e, area + off, sizeof(e));
		if (!e.domain_len && !e.name_len && !e.id)
			break;          /* the end, or an entry still being written at a death */
		need = RGN_NAME_SIZE(e.domain_len, e.name_len);
		if (off + need > size)
			break;
		if (e.id && e.id <= max_id && map[e.id] == RGN_NO_NAME) {
			const char *text = (const char *)area + off + sizeof(e);

			if (!memchr(text, '\0', (size_t)e.domain_len + e.name_len))
				map[e.id] = add_name(s, text, e.domain_len, text + e.domain_len, e.name_len);
		}
		off += need;
	}
	return map;
}

static struct rgn_thread *thread_of(struct rgn_set *s, int32_t pid, int32_t tid, const char *comm)
{
	struct rgn_thread *t;

	ALLOC_GROW(s->threads, s->nr_threads + 1, s->alloc_threads);
	t = &s->threads[s->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	memcpy(t->comm, comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
	return t;
}

struct seg_ref {
	uint64_t off;
	uint32_t tid, seq;
};

/*
 * A thread's segments in the order they were handed out, which is the
 * order of their offsets (a fetch-and-add of `next`). Not by seq: the
 * kernel gives the tid of a thread that ended to a later one, whose
 * segments start again at seq 0, and the two must not be interleaved.
 */
static int by_tid_off(const void *a, const void *b)
{
	const struct seg_ref *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Adds the records of segment SEG to T; false when one was torn (the rest of the segment is left). */
static bool read_segment(struct rgn_set *s, struct rgn_thread *t, const uint8_t *seg, uint64_t seg_size,
			 const uint32_t *map, uint32_t max_id)
{
	struct rgn_segment h;
	uint64_t used;

	memcpy(&h, seg, sizeof(h));
	used = h.used < seg_size - sizeof(h) ? h.used : seg_size - sizeof(h);
	used -= used % sizeof(struct rgn_record);
	t->dropped += h.dropped;
	for (uint64_t off = 0; off < used; off += sizeof(struct rgn_record)) {
		struct rgn_record r;
		struct rgn_event *e;
		uint32_t name = RGN_NO_NAME;

		memcpy(&r, seg + sizeof(h) + off, sizeof(r));
		if (r.kind < RGN_BEGIN || r.kind > RGN_RESUME)
			goto torn;
		if (r.kind <= RGN_MARK) {
			if (!r.id || r.id > max_id || map[r.id] == RGN_NO_NAME)
				goto torn;
			name = map[r.id];
		}
		if (t->nr && r.time_ns < t->ev[t->nr - 1].time_ns)
			goto torn;
		ALLOC_GROW(t->ev, t->nr + 1, t->alloc);
		e = &t->ev[t->nr++];
		e->time_ns = r.time_ns;
		e->name = name;
		e->kind = r.kind;
		s->events++;
	}
	return true;
torn:
	s->torn++;
	return false;
}

int rgn_parse(struct rgn_set *s, const uint8_t *buf, size_t len)
{
	struct rgn_header h;
	uint64_t names_end, end, names_size;
	struct seg_ref *segs = NULL;
	size_t nr_segs = 0, alloc_segs = 0;
	uint32_t *map, max_id;
	struct rgn_thread *t = NULL;

	if (len < sizeof(h)) {
		s->bad_files++;
		return -EINVAL;
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, RGN_MAGIC, 8) || h.version != RGN_VERSION || h.header_size < sizeof(h) ||
	    h.header_size > len || h.seg_size <= sizeof(struct rgn_segment) || h.seg_size > (1u << 30) ||
	    h.seg_size % sizeof(struct rgn_record)) {
		s->bad_files++;
		return -EINVAL;
	}
	s->files++;
	s->dropped += h.dropped;
	names_size = h.names_size < len - h.header_size ? h.names_size : len - h.header_size;
	if (h.names_used < names_size)
		names_size = h.names_used;
	/* where the segments start; past the end (none) when names_size is wild, rather than wrapped */
	names_end = h.names_size <= len - h.header_size ? h.header_size + h.names_size : len;
	/* an id is at most one per name entry: a wild next_id allocates no more than the area can name */
	max_id = h.next_id;
	if (max_id > names_size / sizeof(struct rgn_name))
		max_id = (uint32_t)(names_size / sizeof(struct rgn_name));
	map = read_names(s, buf + h.header_size, names_size, max_id);
	end = h.next < len ? h.next : len;
	for (uint64_t off = names_end; off < end && end - off >= h.seg_size && off >= names_end;
	     off += h.seg_size) {
		struct rgn_segment sh;

		memcpy(&sh, buf + off, sizeof(sh));
		if (sh.magic != RGN_SEG_MAGIC)
			continue;       /* handed out, never begun (a death) */
		ALLOC_GROW(segs, nr_segs + 1, alloc_segs);
		segs[nr_segs++] = (struct seg_ref){ off, sh.tid, sh.seq };
	}
	QSORT(segs, nr_segs, by_tid_off);
	for (size_t i = 0; i < nr_segs; i++) {
		const uint8_t *seg = buf + segs[i].off;

		/*
		 * A thread's next segment has the next seq; seq 0 (or a seq that
		 * does not follow) begins another thread that was given the same tid.
		 */
		if (!t || (uint32_t)t->tid != segs[i].tid || !segs[i].seq ||
		    segs[i].seq != segs[i - 1].seq + 1) {
			struct rgn_segment sh;

			memcpy(&sh, seg, sizeof(sh));
			t = thread_of(s, (int32_t)h.pid, (int32_t)segs[i].tid, sh.comm);
		}
		read_segment(s, t, seg, h.seg_size, map, max_id);
	}
	free(segs);
	free(map);
	return 0;
}

static int read_file(struct rgn_set *s, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map;
	int ret;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_size) {
		if (fd >= 0)
			close(fd);
		s->bad_files++;
		return 0;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		s->bad_files++;
		return 0;
	}
	ret = rgn_parse(s, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	return ret == -EINVAL ? 0 : ret;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rgn_read_dir(struct rgn_set *s, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t nr = 0, alloc = 0;
	int ret = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l > 4 && !strcmp(de->d_name + l - 4, ".rgn")) {
			ALLOC_GROW(names, nr + 1, alloc);
			names[nr++] = xstrdup(de->d_name);
		}
	}
	/* the same order every time: the profile does not depend on the directory's */
	QSORT(names, nr, by_name);
	for (size_t i = 0; i < nr; i++) {
		if (!ret)
			ret = read_file(s, dirfd(d), names[i]);
		free(names[i]);
	}
	free(names);
	closedir(d);
	return ret;
}
