// SPDX-License-Identifier: MIT
/* What several writers share: names made valid UTF-8, and JSON strings. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

size_t report_utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	/* the second byte's range is what rules out overlong forms, surrogates and > U+10FFFF */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

char *report_utf8_clean(const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	size_t bad = 0, len = 0;
	char *out, *o;

	for (const unsigned char *q = c; *q; ) {
		size_t n = report_utf8_len(q);

		bad += !n;
		q += n ? n : 1;
		len += n ? n : 3;
	}
	if (!bad)
		return NULL;
	o = out = xmalloc(len + 1);
	while (*c) {
		size_t n = report_utf8_len(c);

		if (n) {
			memcpy(o, c, n);
			o += n;
			c += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			c++;
		}
	}
	*o = '\0';
	return out;
}

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
		n = report_utf8_len(c);
		if (!n) {
			fputs("\\ufffd", out);
			c++;
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
