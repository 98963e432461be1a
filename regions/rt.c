// SPDX-License-Identifier: MIT
/*
 * The regions runtime: the code <proftool.h> loads into a recorded program
 * (libproftool-rt.so, found through PROFTOOL_RT). It writes the program's
 * region events into a file of the directory PROFTOOL_REGIONS names, in the
 * format of regions/format.h, and depends on nothing but libc: it runs
 * inside somebody else's process.
 *
 * The hot path (one event) is a clock read, a name lookup that is a
 * pointer compare and a compare of the text once the name was seen, and a
 * 16-byte store into the thread's own segment: no lock, and no system call
 * but one every 4096 events, which makes the segment's next 64 KiB ready
 * (room()). A fork resets it, so the child writes a file of its own; an
 * exec starts it afresh.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "include/proftool.h"
#include "regions/format.h"
#include "regions/rt.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the process's file ---- */

enum { RT_UNKNOWN, RT_ON, RT_OFF };

static struct {
	int state;                      /* enum above; read without the lock */
	bool full;                      /* no room left for segments, in the file or on the disk */
	bool names_full;                /* no room left for a name on the disk */
	bool no_populate;               /* the kernel has no MADV_POPULATE_WRITE (before 5.14) */
	struct rgn_header *h;
	uint8_t *base;
	uint64_t size;
} rt;

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

struct name;

/*
 * A thread's segment: its next record goes at pos, and there is room up
 * to end (the part of the segment made ready so far, see room()). All zero
 * in a thread that has none yet (pos == end: the first event takes one),
 * and in the thread that forked, in the child (see after_fork_child: the
 * only thread a child has).
 */
struct rt_thread {
	struct rgn_record *pos, *end;
	struct rgn_segment *seg;        /* NULL: none yet, or none could be had */
	const struct name *last;        /* the name of its last event, NULL when none (see intern) */
	uint32_t seq;
	uint32_t tid;
};

static __thread struct rt_thread rt_self __attribute__((tls_model("initial-exec")));

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t file_bytes(void)
{
	const char *mb = getenv("PROFTOOL_REGIONS_MB");
	char *end;
	unsigned long v = mb && *mb ? strtoul(mb, &end, 10) : 0;

	if (!v || *end || v > (1ul << 20))
		v = RGN_FILE_MB;
	/* room for the header, the names and one segment at the least */
	if (v < 3)
		v = 3;
	return (uint64_t)v << 20;
}

/*
 * Pages of the file are given memory (and, on a disk, room in the file
 * system) before anything is written there, by MADV_POPULATE_WRITE: a full
 * tmpfs or disk then fails here, where the events can be dropped and
 * counted, instead of killing the program with SIGBUS at its next store.
 * Segments are made ready a chunk at a time: a system call every 4096
 * events, and a thread that records little takes little (the Python writer
 * reserves its file the same way, with posix_fallocate). Errno is the
 * program's and is kept.
 */
#define CHUNK (64u << 10)

static bool populate(void *p, size_t len)
{
	int errsv = errno;
	bool ok = true;

	if (__atomic_load_n(&rt.no_populate, __ATOMIC_RELAXED))
		return true;    /* written unprepared, as before */
	if (madvise(p, len, MADV_POPULATE_WRITE) < 0) {
		if (errno == EINVAL)
			__atomic_store_n(&rt.no_populate, true, __ATOMIC_RELAXED);
		else
			ok = false;     /* EFAULT: it would have been SIGBUS; ENOMEM */
	}
	errno = errsv;
	return ok;
}

/* Makes this process's file; false when it cannot (the program then runs unrecorded). */
static bool open_file(void)
{
	const char *dir = getenv("PROFTOOL_REGIONS");
	char path[4096];
	uint64_t size = file_bytes();
	void *map;
	int fd = -1;

	if (!dir || !*dir)
		return false;
	for (int n = 0; n < 1000 && fd < 0; n++) {
		if (snprintf(path, sizeof(path), "%s/%d-c-%d.rgn", dir, (int)getpid(), n) >= (int)sizeof(path))
			return false;
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return false;
	}
	if (fd < 0)
		return false;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		unlink(path);
		return false;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		unlink(path);
		return false;
	}
	if (!populate(map, RGN_HEADER_SIZE)) {
		munmap(map, size);
		unlink(path);
		return false;
	}
	rt.h = map;
	rt.base = map;
	rt.size = size;
	rt.h->version = RGN_VERSION;
	rt.h->header_size = RGN_HEADER_SIZE;
	rt.h->pid = (uint32_t)getpid();
	rt.h->writer = RGN_WRITER_C;
	rt.h->size = size;
	rt.h->names_size = RGN_NAMES_SIZE;
	rt.h->next = RGN_HEADER_SIZE + RGN_NAMES_SIZE;
	rt.h->seg_size = RGN_SEG_SIZE;
	rt.h->start_ns = now_ns();
	/* the magic last: a reader takes a file with it as complete */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(rt.h->magic, RGN_MAGIC, 8);
	return true;
}

static void after_fork_child(void);

/*
 * The process's state, set up at the first call. Errno is the program's
 * and is kept (open_file sets it: a file name taken, a directory missing).
 */
static __attribute__((noinline)) bool ready_slow(void)
{
	int errsv = errno;

	if (__atomic_load_n(&rt.state, __ATOMIC_ACQUIRE) != RT_UNKNOWN)
		return rt.state == RT_ON;
	pthread_mutex_lock(&rt_lock);
	if (rt.state == RT_UNKNOWN) {
		static bool atfork;

		if (!atfork && pthread_atfork(NULL, NULL, after_fork_child) == 0)
			atfork = true;
		__atomic_store_n(&rt.state, open_file() ? RT_ON : RT_OFF, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&rt_lock);
	errno = errsv;
	return rt.state == RT_ON;
}

static inline bool ready(void)
{
	if (__builtin_expect(__atomic_load_n(&rt.state, __ATOMIC_ACQUIRE) == RT_ON, 1))
		return true;
	return ready_slow();
}

/* ---- names ---- */

/*
 * Two tables, both only growing and both read without the lock: by the
 * name's address (a call site's string, seen again), and by its text.
 * An entry is made whole before its slot is published.
 */
struct name {
	const char *dom_ptr, *name_ptr; /* the addresses it was asked by */
	char *domain, *text;            /* own copies */
	uint64_t hash;
	uint32_t id;
};

#define NAME_SLOTS 8192                 /* per table; names past 3/4 of it are not cached */
#define PROBES 16

static struct name *by_ptr[NAME_SLOTS], *by_text[NAME_SLOTS];
static unsigned nr_by_ptr, nr_by_text;

static uint64_t hash_text(const char *d, const char *n)
{
	uint64_t h = 1469598103934665603ull;

	for (; *d; d++)
		h = (h ^ (uint8_t)*d) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (; *n; n++)
		h = (h ^ (uint8_t)*n) * 1099511628211ull;
	return h;
}

static unsigned hash_ptrs(const char *d, const char *n)
{
	uint64_t h = ((uintptr_t)n * 0x9e3779b97f4a7c15ull) ^ (uintptr_t)d;

	return (unsigned)(h >> 40) & (NAME_SLOTS - 1);
}

/* strcmp(A, B) == 0, inline: names are short, and a call into libc costs as much as the compare */
static inline bool same_text(const char *a, const char *b)
{
	for (; *a == *b; a++, b++)
		if (!*a)
			return true;
	return false;
}

static inline bool same(const struct name *e, const char *d, const char *n)
{
	return same_text(e->text, n) && same_text(e->domain, d);
}

/* Writes a name into the file's names area; its id, or 0 when there is no room. */
static uint32_t write_name(const char *d, const char *n)
{
	size_t dl = strlen(d), nl = strlen(n);
	uint64_t need, off, start;
	struct rgn_name *e;
	uint32_t id;

	if (dl > UINT16_MAX || nl > UINT16_MAX)
		return 0;
	need = RGN_NAME_SIZE(dl, nl);
	if (rt.names_full)
		return 0;
	off = __atomic_fetch_add(&rt.h->names_used, need, __ATOMIC_RELAXED);
	if (off + need > rt.h->names_size)
		return 0;
	/* its pages (from the start of the first: madvise takes whole pages) */
	start = (RGN_HEADER_SIZE + off) & ~(uint64_t)4095;
	if (!populate(rt.base + start, RGN_HEADER_SIZE + off + need - start)) {
		/* the entry stays zero, where the reader stops: no name may follow it */
		rt.names_full = true;
		return 0;
	}
	id = __atomic_add_fetch(&rt.h->next_id, 1, __ATOMIC_RELAXED);
	e = (struct rgn_name *)(rt.base + RGN_HEADER_SIZE + off);
	e->domain_len = (uint16_t)dl;
	e->name_len = (uint16_t)nl;
	memcpy((char *)(e + 1), d, dl);
	memcpy((char *)(e + 1) + dl, n, nl);
	__atomic_store_n(&e->id, id, __ATOMIC_RELEASE);
	return id;
}

static void publish(struct name **table, unsigned *nr, unsigned slot, struct name *e)
{
	for (unsigned i = 0; i < PROBES && *nr < NAME_SLOTS / 4 * 3; i++) {
		unsigned k = (slot + i) & (NAME_SLOTS - 1);

		if (!table[k]) {
			__atomic_store_n(&table[k], e, __ATOMIC_RELEASE);
			(*nr)++;
			return;
		}
	}
}

/* The slow way: by the text, under the lock; the name is added when new. */
static __attribute__((noinline)) uint32_t intern_slow(const char *d, const char *n)
{
	int errsv = errno;
	uint64_t h = hash_text(d, n);
	unsigned slot = (unsigned)h & (NAME_SLOTS - 1);
	struct name *e = NULL;
	uint32_t id = 0;

	pthread_mutex_lock(&rt_lock);
	for (unsigned i = 0; i < PROBES; i++) {
		struct name *x = by_text[(slot + i) & (NAME_SLOTS - 1)];

		if (!x)
			break;
		if (x->hash == h && same(x, d, n)) {
			e = x;
			break;
		}
	}
	if (!e) {
		id = write_name(d, n);
		e = id ? calloc(1, sizeof(*e)) : NULL;
		if (e) {
			e->domain = strdup(d);
			e->text = strdup(n);
			e->hash = h;
			e->id = id;
			if (!e->domain || !e->text) {
				/* the name is in the file; it just cannot be cached */
				free(e->domain);
				free(e->text);
				free(e);
				pthread_mutex_unlock(&rt_lock);
				errno = errsv;
				return id;
			}
			e->dom_ptr = d;
			e->name_ptr = n;
			publish(by_text, &nr_by_text, slot, e);
		}
	}
	if (e && (e->name_ptr != n || e->dom_ptr != d)) {
		/* known by its text, asked for by another address: one more entry for that address */
		struct name *alias = malloc(sizeof(*alias));

		if (alias) {
			*alias = *e;
			alias->dom_ptr = d;
			alias->name_ptr = n;
			e = alias;
		}
	}
	if (e)
		publish(by_ptr, &nr_by_ptr, hash_ptrs(d, n), e);
	id = e ? e->id : id;
	pthread_mutex_unlock(&rt_lock);
	errno = errsv;
	return id;
}

static inline uint32_t intern(const char *d, const char *n)
{
	const struct name *e;
	unsigned slot;

	if (!n)
		return 0;
	if (!d)
		d = "";
	/* the same address may hold another text by now (a reused buffer): compare */
	e = rt_self.last;
	if (e && e->name_ptr == n && e->dom_ptr == d && same(e, d, n))
		return e->id;   /* an end after its begin, a loop's region: no hash */
	slot = hash_ptrs(d, n);
	for (unsigned i = 0; i < PROBES; i++) {
		e = __atomic_load_n(&by_ptr[(slot + i) & (NAME_SLOTS - 1)], __ATOMIC_ACQUIRE);
		if (!e)
			break;
		if (e->name_ptr == n && e->dom_ptr == d && same(e, d, n)) {
			rt_self.last = e;
			return e->id;
		}
	}
	return intern_slow(d, n);
}

/* ---- events ---- */

/*
 * Room for the thread's next record: the next chunk of its segment, or a
 * new segment (the thread's first, or its last is full). NULL when the
 * file or the disk has no room left; the event is then counted dropped, in
 * the thread's last segment or, for a thread that never had one, in the
 * file's header.
 */
static __attribute__((noinline)) struct rgn_record *room(void)
{
	struct rt_thread *t = &rt_self;
	struct rgn_segment *s = t->seg;
	uint8_t *end = (uint8_t *)t->end;
	uint64_t off;

	if (__atomic_load_n(&rt.full, __ATOMIC_RELAXED))
		goto full;
	if (s && end < (uint8_t *)s + RGN_SEG_SIZE) {
		if (!populate(end, CHUNK))
			goto no_room;
		t->end = (struct rgn_record *)(end + CHUNK);
		return t->pos;
	}
	off = __atomic_fetch_add(&rt.h->next, RGN_SEG_SIZE, __ATOMIC_RELAXED);
	if (off + RGN_SEG_SIZE > rt.size || !populate(rt.base + off, CHUNK))
		goto no_room;
	if (!s) {
		int errsv = errno;

		t->tid = (uint32_t)gettid();
		errno = errsv;
	}
	t->seq = s ? t->seq + 1 : 0;
	s = (struct rgn_segment *)(rt.base + off);
	s->tid = t->tid;
	s->seq = t->seq;
	prctl(PR_GET_NAME, s->comm, 0, 0, 0);
	__atomic_store_n(&s->magic, RGN_SEG_MAGIC, __ATOMIC_RELEASE);
	t->seg = s;
	t->pos = (struct rgn_record *)(s + 1);
	t->end = (struct rgn_record *)((uint8_t *)s + CHUNK);
	return t->pos;
no_room:
	__atomic_store_n(&rt.full, true, __ATOMIC_RELAXED);
full:
	/* the thread keeps its last segment, to count its drops in */
	__atomic_fetch_add(s ? &s->dropped : &rt.h->dropped, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * Stamped where the program's own code is nearest: an end, a mark or a pause
 * when called, a begin or a resume once room for it is made (the thread's
 * first record maps its segment: a sample taken meanwhile is the runtime's,
 * outside the region).
 */
static inline void put(uint32_t id, uint16_t kind)
{
	bool opens = kind == RGN_BEGIN || kind == RGN_RESUME;
	uint64_t now = opens ? 0 : now_ns();
	struct rt_thread *t = &rt_self;
	struct rgn_record *r = t->pos;

	if (__builtin_expect(r == t->end, 0) && !(r = room()))
		return;
	if (opens)
		now = now_ns();
	r->time_ns = now;
	r->id = id;
	r->kind = kind;
	r->flags = 0;
	t->pos = r + 1;
	/* commits the record: the reader takes what lies below `used` */
	__atomic_store_n(&t->seg->used, (uint64_t)((uint8_t *)t->pos - (uint8_t *)(t->seg + 1)),
			 __ATOMIC_RELEASE);
}

/*
 * The directory's pause switch (format.h), mapped at the first pause; the
 * mapping is shared, so a forked child keeps using it.
 */
static void set_switch(bool paused)
{
	static struct rgn_control *ctl;
	struct rgn_control *c = __atomic_load_n(&ctl, __ATOMIC_ACQUIRE);
	int errsv = errno;

	if (!c) {
		const char *dir = getenv("PROFTOOL_REGIONS");
		char path[4096];
		void *map = MAP_FAILED;
		int fd;

		if (!dir || snprintf(path, sizeof(path), "%s/" RGN_CONTROL_FILE, dir) >= (int)sizeof(path))
			return;
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			map = mmap(NULL, RGN_CONTROL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			close(fd);
		}
		errno = errsv;
		if (map == MAP_FAILED)
			return;
		c = map;
		if (memcmp(c->magic, RGN_CONTROL_MAGIC, 8)) {
			munmap(map, RGN_CONTROL_SIZE);
			return;
		}
		if (!__atomic_compare_exchange_n(&ctl, &(struct rgn_control *){ NULL }, c, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			munmap(map, RGN_CONTROL_SIZE);
			c = __atomic_load_n(&ctl, __ATOMIC_ACQUIRE);
		}
	}
	__atomic_store_n(&c->paused, paused ? 1u : 0u, __ATOMIC_RELAXED);
	__atomic_store_n(&c->pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&c->time_ns, now_ns(), __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->seq, 1, __ATOMIC_RELEASE);
}

void rt_event(const char *domain, const char *name, int kind)
{
	uint32_t id;

	if (!ready())
		return;
	if (kind == RGN_PAUSE || kind == RGN_RESUME) {
		put(0, (uint16_t)kind);
		set_switch(kind == RGN_PAUSE);
		return;
	}
	id = intern(domain, name);
	if (id)
		put(id, (uint16_t)kind);
	else
		__atomic_fetch_add(&rt.h->dropped, 1, __ATOMIC_RELAXED);
}

/* In the child of a fork: the parent's file is the parent's; the child makes its own when it writes. */
static void after_fork_child(void)
{
	if (rt.h)
		munmap(rt.base, rt.size);
	rt.h = NULL;
	rt.base = NULL;
	rt.size = 0;
	rt.full = false;
	rt.names_full = false;
	/* the child's one thread: the one that forked */
	memset(&rt_self, 0, sizeof(rt_self));
	pthread_mutex_init(&rt_lock, NULL);
	/* the name caches stay: their ids are the parent file's, so they are emptied */
	memset(by_ptr, 0, sizeof(by_ptr));
	memset(by_text, 0, sizeof(by_text));
	nr_by_ptr = nr_by_text = 0;
	rt.state = RT_UNKNOWN;
}

static const struct proftool_rt_v1 api = {
	.size = sizeof(struct proftool_rt_v1),
	.event = rt_event,
};

EXPORT const struct proftool_rt_v1 *proftool_rt_v1(void);

const struct proftool_rt_v1 *proftool_rt_v1(void)
{
	return &api;
}
