// SPDX-License-Identifier: MIT
/* A minimal TAP-printing harness for the C unit tests. */
#ifndef PROFTOOL_UNIT_H
#define PROFTOOL_UNIT_H

#include <stdio.h>
#include <stdlib.h>

static int unit_failed, unit_count, unit_bad_tests;

#define CHECK(cond)                                                               \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "# %s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                                 \
			unit_failed++;                                            \
		}                                                                 \
	} while (0)

#define CHECK_EQ_U(a, b)                                                            \
	do {                                                                        \
		unsigned long long a_ = (a), b_ = (b);                              \
		if (a_ != b_) {                                                     \
			fprintf(stderr, "# %s:%d: %s == %llu, expected %llu\n",    \
				__FILE__, __LINE__, #a, a_, b_);                   \
			unit_failed++;                                              \
		}                                                                   \
	} while (0)

#define RUN(fn)                                                                 \
	do {                                                                    \
		int before_ = unit_failed;                                      \
		fn();                                                           \
		printf("%s %d - %s\n", unit_failed == before_ ? "ok" : "not ok", \
		       ++unit_count, #fn);                                      \
		unit_bad_tests += unit_failed != before_;                      \
	} while (0)

#define UNIT_DONE()                                \
	do {                                       \
		printf("1..%d\n", unit_count);     \
		return unit_bad_tests ? 1 : 0;     \
	} while (0)

#endif
