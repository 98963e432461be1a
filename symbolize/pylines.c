// SPDX-License-Identifier: MIT
/* CPython's location tables (3.11+, PEP 626; Objects/locations.md): the line of a code offset. */
#include "python.h"

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
 * One entry of a location table at *I, as CPython's PyCode_Addr2Line reads
 * it: a byte with bit 7 set, bits 3-6 the kind and 0-2 the number of code
 * units (2 bytes each) less one; lines are deltas from co_firstlineno.
 * Kinds: 0-9 short form (same line, 1 byte of columns), 10-12 one line
 * form (delta kind - 10, 2 bytes of columns), 13 no columns (signed
 * varint delta), 14 long form (signed varint delta, then 3 varints), 15
 * no location. Adds its delta to *LINE; false when it is malformed or cut.
 */
static bool entry(const uint8_t *tab, size_t len, size_t *i, int64_t *line, int *kind, unsigned *units)
{
	uint8_t b = tab[(*i)++];
	uint32_t v, skip = 0;

	*kind = b >> 3 & 15;
	*units = (b & 7) + 1u;
	if (!(b & 0x80))
		return false;
	if (*kind == 13 || *kind == 14) {
		if (!varint(tab, len, i, &v))
			return false;
		*line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		for (int k = 0; k < (*kind == 14 ? 3 : 0); k++)
			if (!varint(tab, len, i, &v))
				return false;
		return true;
	}
	if (*kind >= 10 && *kind <= 12) {
		*line += *kind - 10;
		skip = 2;
	} else if (*kind < 10) {
		skip = 1;
	}
	for (uint32_t k = 0; k < skip; k++)
		if (*i >= len || (tab[(*i)++] & 0x80))
			return false;
	return true;
}

uint32_t py_linetable_scan(const uint8_t *tab, size_t len, int32_t firstlineno, int64_t off, size_t *used)
{
	int64_t line = firstlineno, addr = 0;
	uint32_t res = 0;
	size_t i = 0;
	unsigned units;
	int kind;

	while (i < len && entry(tab, len, &i, &line, &kind, &units)) {
		int64_t end = addr + 2 * (int64_t)units;

		if (off < end) {
			res = kind == 15 || line <= 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
			break;
		}
		addr = end;
	}
	*used = i;
	return res;
}

uint32_t py_linetable_line(const uint8_t *tab, size_t len, int32_t firstlineno, int64_t off)
{
	size_t used;

	if (off < 0)
		return firstlineno > 0 ? (uint32_t)firstlineno : 0;
	if (!tab)
		return 0;
	return py_linetable_scan(tab, len, firstlineno, off, &used);
}
