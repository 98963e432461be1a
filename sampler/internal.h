// SPDX-License-Identifier: MIT
/* Internals shared between the sampler's files. */
#ifndef PROFTOOL_SAMPLER_INTERNAL_H
#define PROFTOOL_SAMPLER_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

/* Reads a small integer from a /proc or /sys file; returns DEF when unreadable. */
long sampler_read_long(const char *path, long def);

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler.h"

/* perf.c */
struct perf_sampler;
struct perf_sampler *perf_sampler_open(const struct sampler_opts *opts, char *err, size_t errlen);
int perf_sampler_enable(struct perf_sampler *s);
int perf_sampler_disable(struct perf_sampler *s);
int perf_sampler_read(struct perf_sampler *s, int timeout_ms, const sigset_t *sigmask,
		      sampler_cb cb, void *arg);
int perf_sampler_flush(struct perf_sampler *s, sampler_cb cb, void *arg);
void perf_sampler_get_stats(struct perf_sampler *s, struct sampler_stats *st);
void perf_sampler_close(struct perf_sampler *s);

/* ptrace.c */
struct ptrace_sampler;
struct ptrace_sampler *ptrace_sampler_open(const struct sampler_opts *opts, char *err, size_t errlen);
int ptrace_sampler_enable(struct ptrace_sampler *s);
int ptrace_sampler_disable(struct ptrace_sampler *s);
int ptrace_sampler_read(struct ptrace_sampler *s, int timeout_ms, const sigset_t *sigmask,
			sampler_cb cb, void *arg);
int ptrace_sampler_flush(struct ptrace_sampler *s, sampler_cb cb, void *arg);
void ptrace_sampler_get_stats(struct ptrace_sampler *s, struct sampler_stats *st);
bool ptrace_sampler_reap(struct ptrace_sampler *s, pid_t pid, int *status);
void ptrace_sampler_close(struct ptrace_sampler *s);

#endif
