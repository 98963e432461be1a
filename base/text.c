// SPDX-License-Identifier: MIT
/* Names as bytes: UTF-8 checks, the reports' \xNN escapes and the profile file's reversible form. */
#include "text.h"

#include <string.h>

#include "base.h"

size_t text_utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (u[0] < 0x80)
		return 1;
	if (u[0] < 0xc2)        /* a continuation byte, or an overlong two-byte form */
		return 0;
	if (u[0] < 0xe0) {
		n = 2;
	} else if (u[0] < 0xf0) {
		n = 3;
		if (u[0] == 0xe0)
			lo = 0xa0;      /* overlong */
		else if (u[0] == 0xed)
			hi = 0x9f;      /* surrogates */
	} else if (u[0] < 0xf5) {
		n = 4;
		if (u[0] == 0xf0)
			lo = 0x90;      /* overlong */
		else if (u[0] == 0xf4)
			hi = 0x8f;      /* past U+10FFFF */
	} else {
		return 0;
	}
	/* the second byte has the narrowed range, the others any continuation byte */
	if (u[1] < lo || u[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (u[i] < 0x80 || u[i] > 0xbf)
			return 0;
	return n;
}

bool text_is_utf8(const char *s)
{
	while (*s) {
		size_t n = text_utf8_len(s);

		if (!n)
			return false;
		s += n;
	}
	return true;
}

static char *put_hex(char *q, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

	*q++ = '\\';
	*q++ = 'x';
	*q++ = hex[c >> 4];
	*q++ = hex[c & 15];
	return q;
}

/*
 * S with every byte that is not part of a valid UTF-8 character as "\xNN",
 * and with BACKSLASHES each backslash doubled; NULL when S is UTF-8.
 */
static char *escape(const char *s, bool backslashes)
{
	char *out, *q;

	if (text_is_utf8(s))
		return NULL;
	/* every byte may become four: "\xNN" */
	out = q = xmalloc(st_mult(strlen(s), 4) + 1);
	while (*s) {
		size_t n = text_utf8_len(s);

		if (!n) {
			q = put_hex(q, (unsigned char)*s++);
		} else if (*s == '\\' && backslashes) {
			*q++ = '\\';
			*q++ = '\\';
			s++;
		} else {
			memcpy(q, s, n);
			q += n;
			s += n;
		}
	}
	*q = '\0';
	return out;
}

char *text_printable(const char *s)
{
	return escape(s, false);
}

char *text_bytes_encode(const char *s)
{
	return escape(s, true);
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *text_bytes_decode(const char *t)
{
	char *out = xmalloc(strlen(t) + 1), *q = out;

	while (*t) {
		int h, l;

		if (*t != '\\') {
			*q++ = *t++;
			continue;
		}
		if (t[1] == '\\') {
			*q++ = '\\';
			t += 2;
			continue;
		}
		if (t[1] != 'x' || (h = hex_value(t[2])) < 0 || (l = hex_value(t[3])) < 0 ||
		    !(h | l)) {
			free(out);
			return NULL;
		}
		*q++ = (char)(h << 4 | l);
		t += 4;
	}
	*q = '\0';
	return out;
}
