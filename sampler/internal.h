// SPDX-License-Identifier: MIT
/* Internals shared between the sampler's files. */
#ifndef PROFTOOL_SAMPLER_INTERNAL_H
#define PROFTOOL_SAMPLER_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4)))
static inline void sampler_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Reads a small integer from a /proc or /sys file; returns DEF when unreadable. */
long sampler_read_long(const char *path, long def);

#endif
