// SPDX-License-Identifier: MIT
/* Unit tests for sym_demangle: C++ through __cxa_demangle, Rust legacy and v0 through libiberty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/internal.h"
#include "unit.h"

struct demangle_case {
	const char *mangled;
	const char *want;       /* NULL: not a mangled name, left to the caller as it is */
};

static int check_cases(const struct demangle_case *cases, size_t nr)
{
	int bad = 0;

	for (size_t i = 0; i < nr; i++) {
		char *got = sym_demangle(cases[i].mangled);
		const char *want = cases[i].want;

		if (!got != !want || (got && strcmp(got, want))) {
			fprintf(stderr, "# sym_demangle(\"%s\") == %s%s%s, expected %s%s%s\n",
				cases[i].mangled ? cases[i].mangled : "(null)",
				got ? "\"" : "", got ? got : "NULL", got ? "\"" : "",
				want ? "\"" : "", want ? want : "NULL", want ? "\"" : "");
			bad++;
		}
		free(got);
	}
	return bad;
}

#define CHECK_CASES(c) CHECK(check_cases((c), sizeof(c) / sizeof((c)[0])) == 0)

/* C++ keeps exactly what __cxa_demangle prints: parameters, const, clone suffixes. */
static void cxx(void)
{
	static const struct demangle_case c[] = {
		{ "_ZN2ns5ClassIiE6methodEv", "ns::Class<int>::method()" },
		/* tests/workloads/cxx.cc's hot method as g++ 12 emits it */
		{ "_ZNK5model5LayerImE7forwardEmm.isra.0",
		  "model::Layer<unsigned long>::forward(unsigned long, unsigned long) const [clone .isra.0]" },
		/* a C++ name that merely looks like legacy Rust: the hash has too few distinct digits */
		{ "_ZN3foo17h0000000000000000E", "foo::h0000000000000000" },
	};

	CHECK_CASES(c);
}

/* Legacy Rust (_ZN...17h<hash>E): $LT$/$GT$ decoded, the ::h<hash> segment dropped. */
static void rust_legacy(void)
{
	static const struct demangle_case c[] = {
		/* rustc 1.95, crate r: r::model::Layer<u64>::forward */
		{ "_ZN1r5model16Layer$LT$u64$GT$7forward17h1ece42ec1a3f2770E", "r::model::Layer<u64>::forward" },
		{ "_ZN3foo17h0123456789abcdefE", "foo" },
	};

	CHECK_CASES(c);
}

/* Rust v0 (_R...), as the standard library is built: no crate hashes, no disambiguators. */
static void rust_v0(void)
{
	static const struct demangle_case c[] = {
		/* the same method with -C symbol-mangling-version=v0 */
		{ "_RNvMNtCs6GmmlP4bgsG_1r5modelINtB2_5LayeryE7forward", "<r::model::Layer<u64>>::forward" },
		/* core's impl u64 { fn from_ascii_radix } */
		{ "_RNvMsD_NtCsgEmfK2I1SDS_4core3numy16from_ascii_radix", "<u64>::from_ascii_radix" },
		{ "_RNvXsc_NtNtCsgEmfK2I1SDS_4core3num5errorNtB5_13ParseIntErrorNtNtB9_3fmt5Debug3fmt",
		  "<core::num::error::ParseIntError as core::fmt::Debug>::fmt" },
		/* LLVM's suffixes after a '.' are ignored */
		{ "_RNvNtCsjrHSEGnQ3l9_3std3env4args.llvm.123", "std::env::args" },
	};

	CHECK_CASES(c);
}

/* C names and anything that does not parse: NULL, the caller keeps the name as it is. */
static void not_mangled(void)
{
	static const struct demangle_case c[] = {
		{ NULL, NULL },
		{ "", NULL },
		{ "main", NULL },
		{ "_start", NULL },
		{ "memcpy", NULL },
		{ "_Z", NULL },
		{ "_ZN", NULL },
		{ "_R", NULL },
		{ "_RNv", NULL },
		{ "_RNvMNtCs6GmmlP4bgsG_1r5model", NULL },      /* cut short */
		{ "_RNvB0_1a", NULL },                          /* a back-reference to itself */
		{ "_ZN1r5model16Layer$LT$u64$GT$7forward17h1ece42ec1a3f2770", NULL },   /* no final E */
	};

	CHECK_CASES(c);
}

int main(void)
{
	RUN(cxx);
	RUN(rust_legacy);
	RUN(rust_v0);
	RUN(not_mangled);
	UNIT_DONE();
}
