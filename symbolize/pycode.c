// SPDX-License-Identifier: MIT
/* CPython code objects read from another process: names, location tables, and their cache. */
#include "python.h"

#include <stddef.h>
#include <string.h>

#include "base/base.h"
#include "base/text.h"


#define CODES_HOT 256
/*
 * What the batched read before a stack's decodes (py_codes_prefetch) asks
 * of each name and line table: the object's header and the first bytes
 * after it, never past the end of the header's page (so that asking for
 * more than the object holds never fails the call). Most names and small
 * functions' line tables fit; longer ones are read whole on their own.
 */
#define SPEC_STR 192
#define SPEC_TAB 640
#define SPEC_CODES 64                   /* code objects of one stack whose strings are fetched together */
#define SPEC_KERNEL_PAGE 4096ull

struct py_codes {
	struct py_code *codes;
	size_t nr, alloc;
	struct idx idx;                 /* hash of address -> codes[] */
	uint32_t hot[CODES_HOT];        /* the same, direct-mapped in front of it (id + 1, 0 empty) */
	char **strs;
	size_t strs_nr, strs_alloc;
	struct idx str_idx;             /* hash of bytes -> strs[] */
	size_t decode_left;             /* bytes of names and line tables this read may still fetch */
	size_t scan_left;               /* bytes of line tables this read may still scan */
	size_t kept;                    /* bytes of names, line tables and entries kept, <= PY_MAX_KEPT */
	uint64_t now;                   /* when the current read began */
	bool met_transient;             /* the current read decoded a code object soon gone (transient) */
	bool seeded_whole;              /* it took another cache's entries and names whole (seed_whole) */
	uint8_t raw[4 * PY_MAX_STR];    /* a string's characters as read */
	char str[PY_MAX_STR + 1];       /* ... and as UTF-8 */
	/* the ranges py_codes_prefetch read for this stack read, and their bytes */
	struct py_read spec[3 * SPEC_CODES];
	bool spec_ok[3 * SPEC_CODES];
	size_t nr_spec;
	uint8_t *spec_buf;
};

struct py_codes *py_codes_new(void)
{
	struct py_codes *c = xcalloc(1, sizeof(*c));

	py_codes_begin_read(c, 0);
	return c;
}

void py_codes_begin_read(struct py_codes *c, uint64_t now)
{
	c->now = now;
	c->nr_spec = 0;
	c->met_transient = false;
	c->decode_left = PY_MAX_DECODE;
	c->scan_left = PY_MAX_LINE_SCAN;
}

/* Takes N bytes of this read's PY_MAX_DECODE; false when they are not left. */
static bool take(struct py_codes *c, size_t n)
{
	if (n > c->decode_left)
		return false;
	c->decode_left -= n;
	return true;
}

/* Whether N more bytes may be kept within PY_MAX_KEPT. */
static bool room(const struct py_codes *c, size_t n)
{
	return c->kept <= PY_MAX_KEPT && n <= PY_MAX_KEPT - c->kept;
}

/*
 * Names and line tables, once read, never change: a forked process's cache
 * shares its parent's (py_codes_seed) rather than copying them, each with
 * a count of the caches holding it (atomic: caches of different processes
 * are read by different drain threads), freed with the last. Seeding a
 * worker's cache by copying them, and freeing that copy once it exited,
 * were a sixth of proftool's CPU on a PyTorch job of 8 workers an epoch.
 */
struct shared {
	uint64_t refs;
	unsigned char data[];
};

static struct shared *shared_of(void *p)
{
	return (struct shared *)((unsigned char *)p - offsetof(struct shared, data));
}

static void *shared_new(size_t len)
{
	struct shared *b = xmalloc(sizeof(*b) + len);

	b->refs = 1;
	return b->data;
}

static void *shared_get(void *p)
{
	if (p)
		__atomic_add_fetch(&shared_of(p)->refs, 1, __ATOMIC_RELAXED);
	return p;
}

static void shared_put(void *p)
{
	if (p && !__atomic_sub_fetch(&shared_of(p)->refs, 1, __ATOMIC_ACQ_REL))
		free(shared_of(p));
}

void py_codes_free(struct py_codes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++)
		shared_put(c->codes[i].linetable);
	for (size_t i = 0; i < c->strs_nr; i++)
		shared_put(c->strs[i]);
	free(c->codes);
	free(c->strs);
	free(c->spec_buf);
	idx_release(&c->idx);
	idx_release(&c->str_idx);
	free(c);
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Names are kept once per process, however many code objects share them; NULL past PY_MAX_KEPT. */
static const char *intern(struct py_codes *c, const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len, 0);
	size_t pos = 0;
	uint32_t id;
	char *copy;

	while ((id = idx_next(&c->str_idx, h, &pos)) != IDX_NONE)
		if (!strncmp(c->strs[id], s, len) && !c->strs[id][len])
			return c->strs[id];
	if (!room(c, len + 1 + sizeof(char *)))
		return NULL;
	c->kept += len + 1 + sizeof(char *);
	copy = shared_new(len + 1);
	memcpy(copy, s, len);
	copy[len] = '\0';
	ALLOC_GROW(c->strs, c->strs_nr + 1, c->strs_alloc);
	idx_insert(&c->str_idx, h, (uint32_t)c->strs_nr);
	c->strs[c->strs_nr++] = copy;
	return copy;
}

/*
 * Appends code point CP as UTF-8; false when it is no character or does
 * not fit. U+DC80-U+DCFF are the bytes they stand for: Python decodes file
 * names with "surrogateescape", so a file name that is not UTF-8 ("sp\xfflit.py")
 * becomes its own bytes again, as os.fsencode() gives them. Other lone
 * surrogates are U+FFFD.
 */
static bool put_utf8(char *out, size_t *n, uint32_t cp)
{
	size_t need = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

	if (cp > 0x10ffff || *n + need > PY_MAX_STR)
		return false;
	if (cp >= 0xdc80 && cp <= 0xdcff) {
		out[(*n)++] = (char)(cp & 0xff);
		return true;
	}
	if (cp >= 0xd800 && cp < 0xe000)
		cp = 0xfffd;
	if (need == 1) {
		out[(*n)++] = cp ? (char)cp : '?';
		return true;
	}
	if (need == 2) {
		out[(*n)++] = (char)(0xc0 | cp >> 6);
	} else if (need == 3) {
		out[(*n)++] = (char)(0xe0 | cp >> 12);
		out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | cp >> 18);
		out[(*n)++] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
	}
	out[(*n)++] = (char)(0x80 | (cp & 0x3f));
	return true;
}

/*
 * Whether S (N bytes, S[N] a NUL; NULs inside are allowed, they become
 * '?') is UTF-8 (base/text.h: no overlong forms, surrogates or code points
 * past U+10FFFF). A cached copy that is not is the target's forgery, or
 * memory being reused: the characters themselves are read instead.
 */
static bool utf8_valid(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t k = s[i] ? text_utf8_len(s + i) : 1;

		if (!k || k > n - i)
			return false;
		i += k;
	}
	return true;
}

/* *OUT is the name S (LEN bytes), interned; TOO_DEEP when the cache is full. */
static enum py_status name(struct py_codes *c, const char *s, size_t len, const char **out)
{
	*out = intern(c, s, len);
	return *out ? PY_STACK_COMPLETE : PY_STACK_TOO_DEEP;
}

/*
 * LEN bytes at ADDR into BUF: from what this read's prefetch fetched when
 * it holds them, else read now.
 */
static bool code_read(const struct py_codes *c, const struct py_target *t, uint64_t addr, void *buf, size_t len)
{
	for (size_t i = 0; i < c->nr_spec; i++) {
		const struct py_read *r = &c->spec[i];

		if (c->spec_ok[i] && addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr)) {
			memcpy(buf, (const uint8_t *)r->buf + (addr - r->addr), len);
			return true;
		}
	}
	return py_target_read(t, addr, buf, len);
}

/*
 * A compact str object (all names of code objects are compact: ASCII data
 * right after PyASCIIObject, other kinds after PyCompactUnicodeObject)
 * as UTF-8: its cached utf8 copy when it has one and that is UTF-8 (it is
 * the target's word, and CPython makes none for a str it cannot encode),
 * else its 1, 2 or 4-byte characters encoded. Bits of the state word are
 * the same in 3.11-3.13: interned 0-1, kind 2-4, compact 5, ascii 6. The
 * characters read are taken from this read's PY_MAX_DECODE.
 */
static enum py_status read_str(struct py_codes *c, const struct py_target *t, uint64_t addr,
			       const char **out)
{
	const struct py_layout *l = &t->l;
	uint8_t hdr[PY_STR_HDR_MAX];
	uint32_t state, kind;
	int64_t len;
	size_t n = 0;

	if (!py_ptr_ok(addr))
		return PY_STACK_TORN;
	if (!code_read(c, t, addr, hdr, l->str_ascii_size))
		return PY_STACK_UNREADABLE;
	if (t->unicode_type && u64_at(hdr, 8) != t->unicode_type)
		return PY_STACK_TORN;
	memcpy(&state, hdr + l->str_state, 4);
	memcpy(&len, hdr + l->str_length, 8);
	kind = state >> 2 & 7;
	if (!(state >> 5 & 1) || len < 0 || len > PY_MAX_STR)
		return PY_STACK_TORN;
	if (state >> 6 & 1) {
		if (kind != 1)
			return PY_STACK_TORN;
		if (!take(c, (size_t)len))
			return PY_STACK_TOO_DEEP;
		if (!code_read(c, t, addr + l->str_ascii_size, c->raw, (size_t)len))
			return PY_STACK_UNREADABLE;
		for (n = 0; n < (size_t)len; n++) {
			if (c->raw[n] >= 0x80)
				return PY_STACK_TORN;
			c->str[n] = c->raw[n] ? (char)c->raw[n] : '?';
		}
		return name(c, c->str, n, out);
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return PY_STACK_TORN;
	if (!code_read(c, t, addr + l->str_ascii_size, hdr + l->str_ascii_size,
			    l->str_compact_size - l->str_ascii_size))
		return PY_STACK_UNREADABLE;
	{
		uint64_t utf8 = u64_at(hdr, l->str_utf8);
		int64_t utf8_len;

		memcpy(&utf8_len, hdr + l->str_utf8_length, 8);
		if (utf8 && utf8_len >= len && utf8_len <= PY_MAX_STR) {
			if (!take(c, (size_t)utf8_len))
				return PY_STACK_TOO_DEEP;
			bool got = code_read(c, t, utf8, c->str, (size_t)utf8_len);

			c->str[utf8_len] = '\0';
			if (got && utf8_valid(c->str, (size_t)utf8_len)) {
				for (n = 0; n < (size_t)utf8_len; n++)
					if (!c->str[n])
						c->str[n] = '?';
				return name(c, c->str, n, out);
			}
		}
	}
	if (!take(c, (size_t)len * kind))
		return PY_STACK_TOO_DEEP;
	if (!code_read(c, t, addr + l->str_compact_size, c->raw, (size_t)len * kind))
		return PY_STACK_UNREADABLE;
	for (size_t i = 0; i < (size_t)len; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = c->raw[i];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, c->raw + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, c->raw + 4 * i, 4);
		}
		if (!put_utf8(c->str, &n, cp))
			return PY_STACK_TORN;
	}
	return name(c, c->str, n, out);
}

/*
 * The location table as bytes; NULL when it cannot be used (too long,
 * unreadable, or more than the cache may keep besides EXTRA bytes), which
 * only costs the frame its line. TOO_DEEP when this read may not fetch it.
 */
static enum py_status read_linetable(struct py_codes *c, const struct py_target *t, uint64_t addr,
				     size_t extra, uint8_t **tab, size_t *len)
{
	const struct py_layout *l = &t->l;
	uint8_t hdr[PY_STR_HDR_MAX];
	int64_t size;

	*tab = NULL;
	*len = 0;
	if (!py_ptr_ok(addr))
		return PY_STACK_TORN;
	if (!code_read(c, t, addr, hdr, l->bytes_sval))
		return PY_STACK_UNREADABLE;
	if (t->bytes_type && u64_at(hdr, 8) != t->bytes_type)
		return PY_STACK_TORN;
	memcpy(&size, hdr + l->bytes_size, 8);
	if (size <= 0 || size > PY_MAX_LINETABLE || !room(c, extra + (size_t)size))
		return PY_STACK_COMPLETE;
	if (!take(c, (size_t)size))
		return PY_STACK_TOO_DEEP;
	*tab = shared_new((size_t)size);
	if (!code_read(c, t, addr + l->bytes_sval, *tab, (size_t)size)) {
		shared_put(*tab);
		*tab = NULL;
		return PY_STACK_COMPLETE;
	}
	*len = (size_t)size;
	return PY_STACK_COMPLETE;
}

static struct py_code *cached(struct py_codes *c, uint64_t addr)
{
	uint64_t h = hash_u64(addr);
	uint32_t *hot = &c->hot[h & (CODES_HOT - 1)], id = *hot - 1;
	size_t pos = 0;

	if (*hot && c->codes[id].addr == addr)
		return &c->codes[id];
	while ((id = idx_next(&c->idx, h, &pos)) != IDX_NONE)
		if (c->codes[id].addr == addr) {
			*hot = id + 1;
			return &c->codes[id];
		}
	return NULL;
}

/* The cached code object at ADDR when its header matched within the last NS, else NULL. */
static struct py_code *checked_within(struct py_codes *c, uint64_t addr, uint64_t ns)
{
	struct py_code *code = cached(c, addr);

	/* 0: never checked in this process (taken from another's cache, or from a capture) */
	return code && code->checked_ns && c->now - code->checked_ns < ns ? code : NULL;
}

struct py_code *py_code_recent(struct py_codes *c, uint64_t addr)
{
	return checked_within(c, addr, PY_CODE_RECHECK_NS);
}

struct py_code *py_code_trusted(struct py_codes *c, uint64_t addr)
{
	return checked_within(c, addr, PY_CODE_TRUST_NS);
}

/* Whether HDR, the header of the code object at ADDR, matches its cached entry's. */
static bool hdr_matches(const struct py_code *code, const struct py_layout *l, const uint8_t *hdr)
{
	int32_t firstlineno;

	memcpy(&firstlineno, hdr + l->code_firstlineno, 4);
	return code && code->filename_ptr == u64_at(hdr, l->code_filename) &&
	       code->qualname_ptr == u64_at(hdr, l->code_qualname) &&
	       code->linetable_ptr == u64_at(hdr, l->code_linetable) && code->firstlineno == firstlineno;
}

/* Adds the range of up to WANT bytes at ADDR, cut at the end of its page, to the prefetch (once). */
static void spec_add(struct py_codes *c, uint64_t addr, size_t want, size_t *used)
{
	size_t len = SPEC_KERNEL_PAGE - (addr & (SPEC_KERNEL_PAGE - 1));

	if (!py_ptr_ok(addr) || c->nr_spec == ARRAY_SIZE(c->spec))
		return;
	for (size_t i = 0; i < c->nr_spec; i++)
		if (c->spec[i].addr == addr)
			return;
	if (len > want)
		len = want;
	c->spec[c->nr_spec++] = (struct py_read){ addr, c->spec_buf + *used, len };
	*used += len;
}

size_t py_codes_prefetch(struct py_codes *c, const struct py_target *t, const uint64_t *addrs,
			 const uint8_t (*hdrs)[PY_HDR_MAX], const uint32_t *which, size_t n)
{
	const struct py_layout *l = &t->l;
	size_t used = 0, done = 0, codes = 0;

	c->nr_spec = 0;
	for (size_t i = 0; i < n && codes < SPEC_CODES; i++) {
		const uint8_t *hdr = hdrs[which[i]];

		if ((t->code_type && u64_at(hdr, 8) != t->code_type) || hdr_matches(cached(c, addrs[which[i]]), l, hdr))
			continue;
		if (!c->spec_buf)
			c->spec_buf = xmalloc(SPEC_CODES * (2 * SPEC_STR + SPEC_TAB));
		spec_add(c, u64_at(hdr, l->code_qualname), SPEC_STR, &used);
		spec_add(c, u64_at(hdr, l->code_filename), SPEC_STR, &used);
		spec_add(c, u64_at(hdr, l->code_linetable), SPEC_TAB, &used);
		codes++;
	}
	/* a range that fails stops a call; the next goes on after it */
	while (done < c->nr_spec) {
		int got = t->read(t->read_arg, c->spec + done, c->nr_spec - done);

		if (got < 0)
			got = 0;
		for (size_t k = 0; k < (size_t)got; k++)
			c->spec_ok[done + k] = true;
		done += (size_t)got;
		if (done < c->nr_spec)
			c->spec_ok[done++] = false;
	}
	return codes;
}

/* CODE, a copy of another cache's entry, as this cache's: checked at CHECKED_NS (0: never), its line table shared. */
static void taken_over(struct py_code *code, uint64_t checked_ns)
{
	shared_get(code->linetable);
	code->checked_ns = checked_ns;
	code->last_off = -1;
	code->last_line = 0;
}

/*
 * A copy of FROM (another cache's) as DST's, checked at CHECKED_NS (0:
 * never), its names interned in DST and its line table shared; false when
 * DST has no room left for it.
 */
static bool copy_code(struct py_codes *dst, const struct py_code *from, uint64_t checked_ns)
{
	size_t need = sizeof(*from) + sizeof(uint32_t) + from->linetable_len;
	struct py_code fresh = *from;

	if (!room(dst, need))
		return false;
	fresh.qualname = intern(dst, from->qualname, strlen(from->qualname));
	fresh.filename = intern(dst, from->filename, strlen(from->filename));
	/* the names took the room left (they stay interned, counted: another entry may use them) */
	if (!fresh.qualname || !fresh.filename || !room(dst, need))
		return false;
	taken_over(&fresh, checked_ns);
	ALLOC_GROW(dst->codes, dst->nr + 1, dst->alloc);
	idx_insert(&dst->idx, hash_u64(fresh.addr), (uint32_t)dst->nr);
	dst->codes[dst->nr++] = fresh;
	dst->kept += need;
	return true;
}

/*
 * DST, empty, as SRC with each entry never checked: the entries copied,
 * their names and line tables shared, the indexes copied whole rather
 * than built again entry by entry. A new worker's first sample seeds its
 * cache so, from its parent's.
 */
static size_t seed_whole(struct py_codes *dst, const struct py_codes *src)
{
	free(dst->codes);
	free(dst->strs);
	idx_release(&dst->idx);
	idx_release(&dst->str_idx);
	dst->codes = xmalloc(st_mult(src->nr ? src->nr : 1, sizeof(*dst->codes)));
	dst->nr = dst->alloc = src->nr;
	if (src->nr)
		memcpy(dst->codes, src->codes, src->nr * sizeof(*dst->codes));
	/* never checked here: a header of this process's must match before one is used */
	for (size_t i = 0; i < dst->nr; i++)
		taken_over(&dst->codes[i], 0);
	dst->strs = xmalloc(st_mult(src->strs_nr ? src->strs_nr : 1, sizeof(*dst->strs)));
	dst->strs_nr = dst->strs_alloc = src->strs_nr;
	for (size_t i = 0; i < dst->strs_nr; i++)
		dst->strs[i] = shared_get(src->strs[i]);
	idx_copy(&dst->idx, &src->idx);
	idx_copy(&dst->str_idx, &src->str_idx);
	memset(dst->hot, 0, sizeof(dst->hot));
	dst->kept = src->kept;
	dst->seeded_whole = true;
	return src->nr;
}

bool py_codes_seeded_whole(const struct py_codes *c)
{
	return c->seeded_whole;
}

size_t py_codes_seed(struct py_codes *dst, const struct py_codes *src, size_t max_bytes)
{
	size_t added = 0, taken = 0;

	if (!dst->nr && !dst->strs_nr && src->kept <= max_bytes)
		return seed_whole(dst, src);

	for (size_t i = 0; i < src->nr; i++) {
		const struct py_code *from = &src->codes[i];
		size_t need = sizeof(*from) + sizeof(uint32_t) + from->linetable_len;

		if (cached(dst, from->addr))
			continue;
		/* never checked here: a header of this process's must match before it is used */
		if (need > max_bytes - taken || !copy_code(dst, from, 0))
			break;
		taken += need;
		added++;
	}
	return added;
}

#define ADOPT_BATCH 256         /* headers read in one call of the reader */

size_t py_codes_adopt(struct py_codes *dst, const struct py_target *t, const struct py_codes *src,
		      size_t max_bytes)
{
	const struct py_code *cand[ADOPT_BATCH];
	struct py_read r[ADOPT_BATCH];
	uint8_t (*hdrs)[PY_HDR_MAX] = NULL;
	size_t added = 0, taken = 0, i = 0;
	bool full = false;

	while (i < src->nr && !full) {
		size_t n = 0, done = 0;

		/* the next batch of those DST lacks */
		for (; i < src->nr && n < ADOPT_BATCH; i++) {
			if (cached(dst, src->codes[i].addr))
				continue;
			if (!hdrs)
				hdrs = xmalloc(ADOPT_BATCH * sizeof(*hdrs));
			cand[n] = &src->codes[i];
			r[n] = (struct py_read){ src->codes[i].addr, hdrs[n], t->hdr_code };
			n++;
		}
		while (done < n) {
			int got = t->read(t->read_arg, r + done, n - done);
			size_t k;

			if (got < 0)
				got = 0;
			for (k = done; k < done + (size_t)got && !full; k++) {
				const struct py_code *from = cand[k];
				size_t need = sizeof(*from) + sizeof(uint32_t) + from->linetable_len;

				/* the same object here: the same header, of a code object */
				if ((t->code_type && u64_at(hdrs[k], 8) != t->code_type) ||
				    !hdr_matches(from, &t->l, hdrs[k]))
					continue;
				if (need > max_bytes - taken || !copy_code(dst, from, dst->now)) {
					full = true;
					break;
				}
				taken += need;
				added++;
			}
			if (full)
				break;
			/* a range that fails stops a call; the next goes on after it */
			done += (size_t)got + 1;
		}
	}
	free(hdrs);
	return added;
}

struct py_code *py_code_matching(struct py_codes *c, const struct py_target *t, uint64_t addr, const uint8_t *hdr)
{
	struct py_code *code = cached(c, addr);

	/* (not checked now: the header is the sample's, which may be long past) */
	if ((t->code_type && u64_at(hdr, 8) != t->code_type) || !hdr_matches(code, &t->l, hdr))
		return NULL;
	return code;
}

/*
 * Whether code object C is of those freed soon after they run: a module's
 * body (once imported) or code compiled from a string (exec, eval). A
 * function's lives as long as its module; so do the frozen modules'.
 */
static bool transient(const struct py_code *c)
{
	return !strcmp(c->qualname, "<module>") || (c->filename[0] == '<' && strncmp(c->filename, "<frozen ", 8));
}

bool py_codes_met_transient(const struct py_codes *c)
{
	return c->met_transient;
}

enum py_status py_code_get(struct py_codes *c, const struct py_target *t, uint64_t addr,
			   const uint8_t *hdr, bool at_sample, struct py_code **out)
{
	const struct py_layout *l = &t->l;
	struct py_code fresh = { .addr = addr, .last_off = -1 }, *code;
	enum py_status st;
	size_t need;

	if (t->code_type && u64_at(hdr, 8) != t->code_type)
		return PY_STACK_TORN;
	fresh.filename_ptr = u64_at(hdr, l->code_filename);
	fresh.qualname_ptr = u64_at(hdr, l->code_qualname);
	fresh.linetable_ptr = u64_at(hdr, l->code_linetable);
	memcpy(&fresh.firstlineno, hdr + l->code_firstlineno, 4);
	code = cached(c, addr);
	if (hdr_matches(code, l, hdr)) {
		if (!at_sample)
			code->checked_ns = c->now;
		*out = code;
		return PY_STACK_COMPLETE;
	}
	if (fresh.firstlineno < 0)
		return PY_STACK_TORN;
	/* a new entry's bytes; a code object decoded again in its place frees its old table after */
	need = code ? 0 : sizeof(*code) + sizeof(uint32_t);
	if (!room(c, need))
		return PY_STACK_TOO_DEEP;
	if ((st = read_str(c, t, fresh.qualname_ptr, &fresh.qualname)) != PY_STACK_COMPLETE ||
	    (st = read_str(c, t, fresh.filename_ptr, &fresh.filename)) != PY_STACK_COMPLETE ||
	    (st = read_linetable(c, t, fresh.linetable_ptr, need, &fresh.linetable, &fresh.linetable_len)) !=
		    PY_STACK_COMPLETE)
		return st;
	if (!room(c, need + fresh.linetable_len)) {
		/* the names took the room left */
		shared_put(fresh.linetable);
		return PY_STACK_TOO_DEEP;
	}
	if (code) {
		c->kept -= code->linetable_len;
		shared_put(code->linetable);
	} else {
		ALLOC_GROW(c->codes, c->nr + 1, c->alloc);
		idx_insert(&c->idx, hash_u64(addr), (uint32_t)c->nr);
		code = &c->codes[c->nr++];
	}
	c->kept += need + fresh.linetable_len;
	c->met_transient |= transient(&fresh);
	fresh.checked_ns = at_sample ? 0 : c->now;
	*code = fresh;
	*out = code;
	return PY_STACK_COMPLETE;
}

uint32_t py_code_line(struct py_codes *c, struct py_code *code, int64_t off)
{
	size_t len = code->linetable_len, used;
	uint32_t line;

	if (off == code->last_off)
		return code->last_line;
	if (off < 0 || !code->linetable) {
		line = py_linetable_line(code->linetable, len, code->firstlineno, off);
	} else {
		if (len > c->scan_left)
			len = c->scan_left;
		line = py_linetable_scan(code->linetable, len, code->firstlineno, off, &used);
		c->scan_left -= used;
		/* the table not scanned to its end for want of budget: a line found stands, none is unknown */
		if (!line && len < code->linetable_len)
			return 0;
	}
	code->last_off = off;
	code->last_line = line;
	return line;
}
