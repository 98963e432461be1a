// SPDX-License-Identifier: MIT
/* What several writers share: JSON strings. */
#include "internal.h"

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
