// SPDX-License-Identifier: MIT
/* Small helpers every stage shares: checked allocation, growable arrays, an id index. */
#ifndef PROFTOOL_BASE_H
#define PROFTOOL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Allocation never returns NULL: on exhaustion it calls the handler installed
 * with base_set_oom_handler() (cmd/ installs one that prints and exits), or
 * abort()s. This is git's rule for xmalloc; it keeps every library call from
 * threading -ENOMEM through code that could do nothing useful with it.
 */
void base_set_oom_handler(void (*fn)(size_t bytes));
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Duplicates S, or returns NULL when S is NULL. */
char *xstrdup_or_null(const char *s);
/* Multiplies with overflow treated as out of memory. */
size_t st_mult(size_t a, size_t b);

/*
 * Grows array P (of NR used elements, ALLOC allocated) so that it holds at
 * least N elements; git's ALLOC_GROW. NR and ALLOC are size_t lvalues.
 */
#define ALLOC_GROW(p, n, alloc)                                              \
	do {                                                                 \
		if ((n) > (alloc)) {                                         \
			size_t grow_ = (alloc) < 16 ? 16 : (alloc) * 2;      \
			if (grow_ < (n))                                     \
				grow_ = (n);                                 \
			(p) = xrealloc((p), st_mult(grow_, sizeof(*(p))));   \
			(alloc) = grow_;                                     \
		}                                                            \
	} while (0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * qsort(3) for arrays that may be empty (and NULL): passing NULL is
 * undefined even with no elements, which UBSan rightly reports (git's QSORT).
 */
#define QSORT(base, n, cmp)                                              \
	do {                                                             \
		if ((n) > 1)                                             \
			qsort((base), (n), sizeof(*(base)), (cmp));      \
	} while (0)
#define QSORT_R(base, n, cmp, arg)                                       \
	do {                                                             \
		if ((n) > 1)                                             \
			qsort_r((base), (n), sizeof(*(base)), (cmp), (arg)); \
	} while (0)

/* 64-bit hashing (FNV-1a for bytes, a mixer for integers). */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hash_str(const char *s, uint64_t seed);
uint64_t hash_u64(uint64_t x);
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

/*
 * An open-addressing index from a 64-bit hash to 32-bit ids of elements kept
 * in the caller's own array. The caller compares candidates itself: find
 * returns each id with a matching hash in turn.
 *
 *	IDX_INIT; idx_release(&idx);
 */
struct idx_slot {
	uint64_t hash;  /* meaningful only where id != 0 */
	uint32_t id;    /* element id + 1, 0 = empty */
};
struct idx {
	struct idx_slot *slot;  /* side by side: a probe touches one cache line */
	size_t mask;            /* slots - 1; slots is a power of two or 0 */
	size_t count;
};
#define IDX_INIT { 0 }
#define IDX_NONE UINT32_MAX

void idx_release(struct idx *x);
void idx_insert(struct idx *x, uint64_t hash, uint32_t id);
/* DST (empty, or released) as a copy of SRC: the same ids under the same hashes. */
void idx_copy(struct idx *dst, const struct idx *src);
/*
 * Iterates the ids stored under HASH: start with *pos = 0; returns IDX_NONE
 * when there are no more.
 */
uint32_t idx_next(const struct idx *x, uint64_t hash, size_t *pos);

/*
 * /proc/PID/statm's text BUF as bytes resident (*RSS) and of them anonymous
 * (*ANON: resident less shared). False when it cannot be read, or nothing
 * is resident (a zombie).
 */
bool proc_statm_parse(const char *buf, uint64_t *rss, uint64_t *anon);
/* Reads /proc/PID/statm so; false when the process is gone. */
bool proc_statm_read(int32_t pid, uint64_t *rss, uint64_t *anon);

/* A word and what it stands for, in the tables that parse user spellings (aliases included). */
struct name_value {
	const char *name;
	int value;
};
/* The value of NAME in TABLE (N entries), or -1 when it has none. */
int name_lookup(const struct name_value *table, size_t n, const char *name);

/*
 * Strings interned by value: equal texts get one id, ids count from 0 in
 * order of first use. The table keeps the caller's pointers, not copies:
 * they must outlive it.
 */
struct strtab {
	const char **str;       /* by id */
	size_t nr, alloc;
	struct idx idx;
};
uint32_t strtab_intern(struct strtab *t, const char *s);
void strtab_release(struct strtab *t);

/*
 * A growable string (git's strbuf in miniature), for text of any length:
 * sbuf_printf replaces the contents and returns them; the memory is kept
 * for the next use until sbuf_release.
 *
 *	struct sbuf s = SBUF_INIT; ... sbuf_release(&s);
 */
struct sbuf {
	char *buf;              /* NUL-terminated once written; NULL before */
	size_t alloc;
};
#define SBUF_INIT { 0 }
__attribute__((format(printf, 2, 3)))
const char *sbuf_printf(struct sbuf *s, const char *fmt, ...);
/* Makes room for N bytes (the NUL included) and returns the buffer. */
char *sbuf_grow(struct sbuf *s, size_t n);
void sbuf_release(struct sbuf *s);
/* A formatted string to free (git's xstrfmt). */
__attribute__((format(printf, 1, 2)))
char *xstrfmt(const char *fmt, ...);

/* Formats a message into a caller's error buffer (perf's strerror-into-buf style); ERR may be NULL. */
__attribute__((format(printf, 3, 4)))
void errbuf_set(char *err, size_t errlen, const char *fmt, ...);

/*
 * Reads /proc/PID/task/TID/stat (/proc/PID/stat, the whole process, when
 * TID <= 0) into BUF and returns where its fields start after the name:
 * the state letter, then ppid, pgrp... NULL when the task is gone.
 */
const char *proc_stat_fields(int pid, int tid, char *buf, size_t n);
/* Where PID's main thread's stack began (startstack in /proc/PID/stat); 0 when not known. */
uint64_t proc_start_stack(int pid);

/* One line of /proc/PID/maps. */
struct proc_map {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	bool exec;              /* 'x' among its permissions */
	const char *path;       /* in the line itself; "" for anonymous memory */
};

/* Parses LINE, cutting its newline; false when it is not a mapping. */
bool proc_maps_parse(char *line, struct proc_map *m);

/*
 * The state letter of task TID of process PID ('R', 'S', 'T', 't', 'Z',
 * ...), and its kernel flags in *FLAGS when not NULL; 0 when it is gone.
 */
char proc_task_state(int pid, int tid, unsigned long *flags);

/* Monotonic and real clocks in nanoseconds. */
uint64_t time_mono_ns(void);
uint64_t time_real_ns(void);

#endif
