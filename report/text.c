// SPDX-License-Identifier: MIT
/* Text the writers share: JSON strings, and XML and HTML text (the flame graphs). */
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/text.h"

void report_json_chars(FILE *out, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	while (*c) {
		size_t n = 0;

		/* the common case, a run of printable ASCII, in one go */
		while (c[n] >= 0x20 && c[n] < 0x80 && c[n] != '"' && c[n] != '\\')
			n++;
		if (n) {
			fwrite(c, 1, n, out);
			c += n;
			continue;
		}
		n = text_utf8_len((const char *)c);
		if (!n) {
			fprintf(out, "\\\\x%02x", *c++);
		} else if (*c == '"' || *c == '\\') {
			fputc('\\', out);
			fputc(*c++, out);
		} else if (*c == '\n') {
			fputs("\\n", out);
			c++;
		} else if (*c == '\t') {
			fputs("\\t", out);
			c++;
		} else if (*c < 0x20) {
			fprintf(out, "\\u%04x", *c++);
		} else {
			fwrite(c, 1, n, out);
			c += n;
		}
	}
}

void report_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	report_json_chars(out, s);
	fputc('"', out);
}

#define REPLACEMENT 0xfffd

/*
 * Decodes the UTF-8 character at S (N > 0 bytes left) and sets *LEN to its
 * size. What XML cannot carry comes back as U+FFFD: bytes that are not
 * UTF-8 (one at a time; overlong forms, surrogates and values past
 * U+10FFFF included), control characters and U+FFFE/U+FFFF. Tabs and line
 * ends become spaces, since a name or title is one line.
 */
static uint32_t next_char(const unsigned char *s, size_t n, size_t *len)
{
	uint32_t c = s[0], min;
	size_t need;

	*len = 1;
	if (c < 0x80) {
		if (c == '\t' || c == '\n' || c == '\r')
			return ' ';
		return c < 0x20 ? REPLACEMENT : c;
	}
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, c &= 0x07, min = 0x10000;
	else
		return REPLACEMENT;
	if (n < need + 1)
		return REPLACEMENT;
	for (size_t i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return REPLACEMENT;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return REPLACEMENT;
	*len = need + 1;
	return c;
}

/* Writes character C escaped for XML and HTML text and attribute values. */
static void put_char(FILE *out, uint32_t c)
{
	switch (c) {
	case '&':
		fputs("&amp;", out);
		return;
	case '<':
		fputs("&lt;", out);
		return;
	case '>':
		fputs("&gt;", out);
		return;
	case '"':
		fputs("&quot;", out);
		return;
	case '\'':
		fputs("&#39;", out);
		return;
	}
	if (c < 0x80) {
		fputc(c, out);
	} else if (c < 0x800) {
		fputc(0xc0 | c >> 6, out);
		fputc(0x80 | (c & 0x3f), out);
	} else if (c < 0x10000) {
		fputc(0xe0 | c >> 12, out);
		fputc(0x80 | (c >> 6 & 0x3f), out);
		fputc(0x80 | (c & 0x3f), out);
	} else {
		fputc(0xf0 | c >> 18, out);
		fputc(0x80 | (c >> 12 & 0x3f), out);
		fputc(0x80 | (c >> 6 & 0x3f), out);
		fputc(0x80 | (c & 0x3f), out);
	}
}

/* Characters (not bytes) in the N bytes at S, as report_xml_text writes them. */
static size_t text_chars(const char *s, size_t n)
{
	size_t chars = 0, len;

	for (size_t i = 0; i < n; i += len, chars++)
		next_char((const unsigned char *)s + i, n - i, &len);
	return chars;
}

void report_xml_text(FILE *out, const char *s, size_t n, size_t max)
{
	size_t keep = SIZE_MAX, len;

	if (max != SIZE_MAX && text_chars(s, n) > max) {
		if (max < 3)
			return;
		keep = max - 2;
	}
	for (size_t i = 0; i < n && keep; i += len, keep--)
		put_char(out, next_char((const unsigned char *)s + i, n - i, &len));
	if (!keep)
		fputs("..", out);
}
