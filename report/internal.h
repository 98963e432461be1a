// SPDX-License-Identifier: MIT
/* Internals shared between the report's files. */
#ifndef PROFTOOL_REPORT_INTERNAL_H
#define PROFTOOL_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/*
 * Samples and their summed weight per stack node, over the samples KEEP
 * accepts (all when KEEP is NULL): arrays of p->nr_stacks entries, owned
 * by the caller. Returns the number of samples kept; *TOTAL_NS (when not
 * NULL) their weight.
 */
uint64_t report_stack_counts(const struct profile *p, const bool *keep, uint64_t **n,
			     uint64_t **ns, uint64_t *total_ns);

/* "file:line(function)", "module(function)" or the bare name, as the table shows a function. */
void report_func_label(const struct profile_func *f, char *buf, size_t n);

/* The call tree of the samples KEEP accepts, children by total, small nodes folded. */
void report_write_tree(FILE *out, const struct profile *p, const bool *keep, double min_percent);

/* Whether a function of the samples KEEP accepts has a name matching the POSIX ERE MATCH. */
bool report_any_match(const struct profile *p, const bool *keep, const char *match);

/*
 * pstats' print_callers/print_callees: for each function (matching MATCH, in
 * SORT order, at most LIMIT), who called it or what it called, with the
 * samples in which both were on the stack. -ENOENT when none matched.
 */
int report_write_calls(FILE *out, const struct profile *p, const bool *keep, bool callers,
		       const char *match, size_t limit, enum report_sort sort);

#endif
