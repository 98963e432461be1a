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

/* perf.c (the backend's own internals are in perf_int.h) */
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

/* ptrace_tick.c, ptrace_events.c: reading a thread in a ptrace-stop, shared with snapshot.c */
struct user_regs_struct;
/* perf's x86-64 user register order (mask SAMPLER_PERF_REGS_MASK), which the unwinder expects: R[20] */
#define SAMPLER_PERF_REGS_MASK 0xff0fffull
void sampler_perf_regs(const struct user_regs_struct *u, uint64_t *r);
/* Copies up to SIZE bytes of stack from SP, stopping at the first unmapped page; returns the bytes copied. */
uint64_t sampler_read_stack(pid_t pid, uint64_t sp, uint8_t *buf, uint64_t size);
/* The name of thread TID of PID (/proc's comm) into BUF; false when it cannot be read. */
bool sampler_read_comm(pid_t pid, pid_t tid, char *buf, size_t n);
/*
 * The system call a stop cut short (its number: it will be restarted or
 * fail with EINTR), or -1 when the thread stopped outside one or as one
 * returned with its own result.
 */
long sampler_cut_syscall(const struct user_regs_struct *regs);

#endif
