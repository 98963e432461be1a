// SPDX-License-Identifier: MIT
/* CPython code objects read from another process: names, location tables, and their cache. */
#include "python.h"

#include <string.h>

#include "base/base.h"


struct py_codes {
	struct py_code *codes;
	size_t nr, alloc;
	struct idx idx;                 /* hash of address -> codes[] */
	char **strs;
	size_t strs_nr, strs_alloc;
	struct idx str_idx;             /* hash of bytes -> strs[] */
	uint8_t raw[4 * PY_MAX_STR];    /* a string's characters as read */
	char str[PY_MAX_STR + 1];       /* ... and as UTF-8 */
};

struct py_codes *py_codes_new(void)
{
	return xcalloc(1, sizeof(struct py_codes));
}

void py_codes_free(struct py_codes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr; i++)
		free(c->codes[i].linetable);
	for (size_t i = 0; i < c->strs_nr; i++)
		free(c->strs[i]);
	free(c->codes);
	free(c->strs);
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

/* Names are kept once per process, however many code objects share them. */
static const char *intern(struct py_codes *c, const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len, 0);
	size_t pos = 0;
	uint32_t id;
	char *copy;

	while ((id = idx_next(&c->str_idx, h, &pos)) != IDX_NONE)
		if (!strncmp(c->strs[id], s, len) && !c->strs[id][len])
			return c->strs[id];
	copy = xmalloc(len + 1);
	memcpy(copy, s, len);
	copy[len] = '\0';
	ALLOC_GROW(c->strs, c->strs_nr + 1, c->strs_alloc);
	idx_insert(&c->str_idx, h, (uint32_t)c->strs_nr);
	c->strs[c->strs_nr++] = copy;
	return copy;
}

/* Appends code point CP as UTF-8 (U+FFFD for a lone surrogate); false when it is no character or does not fit. */
static bool put_utf8(char *out, size_t *n, uint32_t cp)
{
	size_t need = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

	if (cp > 0x10ffff || *n + need > PY_MAX_STR)
		return false;
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
 * Whether S (N bytes) is UTF-8 as JSON wants it: no overlong forms,
 * surrogates or code points past U+10FFFF (jansson refuses such a name, and
 * the profile would lose it).
 */
static bool utf8_valid(const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;

	while (i < n) {
		uint32_t cp;
		size_t more;

		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0)
			cp = p[i] & 0x1f, more = 1;
		else if ((p[i] & 0xf0) == 0xe0)
			cp = p[i] & 0x0f, more = 2;
		else if ((p[i] & 0xf8) == 0xf0)
			cp = p[i] & 0x07, more = 3;
		else
			return false;
		if (more >= n - i)
			return false;
		for (size_t k = 1; k <= more; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < (more == 1 ? 0x80u : more == 2 ? 0x800u : 0x10000u) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp < 0xe000))
			return false;
		i += more + 1;
	}
	return true;
}

/*
 * A compact str object (all names of code objects are compact: ASCII data
 * right after PyASCIIObject, other kinds after PyCompactUnicodeObject)
 * as UTF-8: its cached utf8 copy when it has one and that is UTF-8 (it is
 * the target's word, and CPython makes none for a str it cannot encode),
 * else its 1, 2 or 4-byte characters encoded. Bits of the state word are
 * the same in 3.11-3.13: interned 0-1, kind 2-4, compact 5, ascii 6.
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
	if (!py_target_read(t, addr, hdr, l->str_ascii_size))
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
		if (!py_target_read(t, addr + l->str_ascii_size, c->raw, (size_t)len))
			return PY_STACK_UNREADABLE;
		for (n = 0; n < (size_t)len; n++) {
			if (c->raw[n] >= 0x80)
				return PY_STACK_TORN;
			c->str[n] = c->raw[n] ? (char)c->raw[n] : '?';
		}
		*out = intern(c, c->str, n);
		return PY_STACK_COMPLETE;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return PY_STACK_TORN;
	if (!py_target_read(t, addr + l->str_ascii_size, hdr + l->str_ascii_size,
			    l->str_compact_size - l->str_ascii_size))
		return PY_STACK_UNREADABLE;
	{
		uint64_t utf8 = u64_at(hdr, l->str_utf8);
		int64_t utf8_len;

		memcpy(&utf8_len, hdr + l->str_utf8_length, 8);
		if (utf8 && utf8_len >= len && utf8_len <= PY_MAX_STR &&
		    py_target_read(t, utf8, c->str, (size_t)utf8_len) && utf8_valid(c->str, (size_t)utf8_len)) {
			for (n = 0; n < (size_t)utf8_len; n++)
				if (!c->str[n])
					c->str[n] = '?';
			*out = intern(c, c->str, n);
			return PY_STACK_COMPLETE;
		}
	}
	if (!py_target_read(t, addr + l->str_compact_size, c->raw, (size_t)len * kind))
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
	*out = intern(c, c->str, n);
	return PY_STACK_COMPLETE;
}

/*
 * The location table as bytes; NULL when it cannot be used (too long,
 * unreadable), which only costs the frame its line.
 */
static enum py_status read_linetable(const struct py_target *t, uint64_t addr, uint8_t **tab,
				     size_t *len)
{
	const struct py_layout *l = &t->l;
	uint8_t hdr[PY_STR_HDR_MAX];
	int64_t size;

	*tab = NULL;
	*len = 0;
	if (!py_ptr_ok(addr))
		return PY_STACK_TORN;
	if (!py_target_read(t, addr, hdr, l->bytes_sval))
		return PY_STACK_UNREADABLE;
	if (t->bytes_type && u64_at(hdr, 8) != t->bytes_type)
		return PY_STACK_TORN;
	memcpy(&size, hdr + l->bytes_size, 8);
	if (size <= 0 || size > PY_MAX_LINETABLE)
		return PY_STACK_COMPLETE;
	*tab = xmalloc((size_t)size);
	if (!py_target_read(t, addr + l->bytes_sval, *tab, (size_t)size)) {
		free(*tab);
		*tab = NULL;
		return PY_STACK_COMPLETE;
	}
	*len = (size_t)size;
	return PY_STACK_COMPLETE;
}

static struct py_code *cached(struct py_codes *c, uint64_t addr)
{
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&c->idx, hash_u64(addr), &pos)) != IDX_NONE)
		if (c->codes[id].addr == addr)
			return &c->codes[id];
	return NULL;
}

enum py_status py_code_get(struct py_codes *c, const struct py_target *t, uint64_t addr,
			   const uint8_t *hdr, struct py_code **out)
{
	const struct py_layout *l = &t->l;
	struct py_code fresh = { .addr = addr, .last_off = -1 }, *code;
	enum py_status st;

	if (t->code_type && u64_at(hdr, 8) != t->code_type)
		return PY_STACK_TORN;
	fresh.filename_ptr = u64_at(hdr, l->code_filename);
	fresh.qualname_ptr = u64_at(hdr, l->code_qualname);
	fresh.linetable_ptr = u64_at(hdr, l->code_linetable);
	memcpy(&fresh.firstlineno, hdr + l->code_firstlineno, 4);
	code = cached(c, addr);
	if (code && code->filename_ptr == fresh.filename_ptr && code->qualname_ptr == fresh.qualname_ptr &&
	    code->linetable_ptr == fresh.linetable_ptr && code->firstlineno == fresh.firstlineno) {
		*out = code;
		return PY_STACK_COMPLETE;
	}
	if (fresh.firstlineno < 0)
		return PY_STACK_TORN;
	if ((st = read_str(c, t, fresh.qualname_ptr, &fresh.qualname)) != PY_STACK_COMPLETE ||
	    (st = read_str(c, t, fresh.filename_ptr, &fresh.filename)) != PY_STACK_COMPLETE ||
	    (st = read_linetable(t, fresh.linetable_ptr, &fresh.linetable, &fresh.linetable_len)) !=
		    PY_STACK_COMPLETE)
		return st;
	if (code) {
		free(code->linetable);
	} else {
		ALLOC_GROW(c->codes, c->nr + 1, c->alloc);
		idx_insert(&c->idx, hash_u64(addr), (uint32_t)c->nr);
		code = &c->codes[c->nr++];
	}
	*code = fresh;
	*out = code;
	return PY_STACK_COMPLETE;
}

uint32_t py_code_line(struct py_code *code, int64_t off)
{
	if (off != code->last_off) {
		code->last_line = py_linetable_line(code->linetable, code->linetable_len, code->firstlineno, off);
		code->last_off = off;
	}
	return code->last_line;
}

/* ---- PEP 626 location tables (Objects/locations.md) ---- */

/* A varint of 6-bit chunks, least significant first, bit 6 set on all but the last. */
static bool varint(const uint8_t *tab, size_t len, size_t *i, uint32_t *val)
{
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 32; shift += 6) {
		uint8_t b;

		if (*i >= len || (tab[*i] & 0x80))
			return false;
		b = tab[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		if (!(b & 64)) {
			*val = v;
			return true;
		}
	}
	return false;
}

/*
 * As CPython's PyCode_Addr2Line: entries start with a byte with bit 7
 * set, bits 3-6 the kind and 0-2 the number of code units (2 bytes each)
 * less one; lines are deltas from co_firstlineno. Kinds: 0-9 short form
 * (same line, 1 byte of columns), 10-12 one line form (delta kind - 10,
 * 2 bytes of columns), 13 no columns (signed varint delta), 14 long form
 * (signed varint delta, then 3 varints), 15 no location.
 */
uint32_t py_linetable_line(const uint8_t *tab, size_t len, int32_t firstlineno, int64_t off)
{
	int64_t line = firstlineno, addr = 0;
	size_t i = 0;

	if (off < 0)
		return firstlineno > 0 ? (uint32_t)firstlineno : 0;
	if (!tab)
		return 0;
	while (i < len) {
		uint8_t b = tab[i++];
		int kind = b >> 3 & 15;
		int64_t end = addr + ((b & 7) + 1) * 2;
		uint32_t v, skip = 0;

		if (!(b & 0x80))
			return 0;
		if (kind == 13 || kind == 14) {
			if (!varint(tab, len, &i, &v))
				return 0;
			line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
			skip = kind == 14 ? 3 : 0;
			for (uint32_t k = 0; k < skip; k++)
				if (!varint(tab, len, &i, &v))
					return 0;
		} else if (kind >= 10 && kind <= 12) {
			line += kind - 10;
			skip = 2;
		} else if (kind < 10) {
			skip = 1;
		}
		if (kind < 13) {
			for (uint32_t k = 0; k < skip; k++)
				if (i >= len || (tab[i++] & 0x80))
					return 0;
		}
		if (off < end)
			return kind == 15 || line <= 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
		addr = end;
	}
	return 0;
}
