// SPDX-License-Identifier: MIT
/* The sampler interface: one handle over the perf_event and ptrace backends. */
#include "sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "base/base.h"
#include "internal.h"

struct sampler {
	enum sampler_backend backend;
	struct perf_sampler *perf;
	struct ptrace_sampler *ptrace;
};

struct sampler *sampler_open(const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct sampler *s = xcalloc(1, sizeof(*s));

	s->backend = opts->backend;
	if (s->backend == SAMPLER_BACKEND_PTRACE)
		s->ptrace = ptrace_sampler_open(opts, err, errlen);
	else
		s->perf = perf_sampler_open(opts, err, errlen);
	if (!s->perf && !s->ptrace) {
		int errsv = errno;

		free(s);
		errno = errsv;
		return NULL;
	}
	return s;
}

int sampler_enable(struct sampler *s)
{
	return s->perf ? perf_sampler_enable(s->perf) : ptrace_sampler_enable(s->ptrace);
}

int sampler_disable(struct sampler *s)
{
	return s->perf ? perf_sampler_disable(s->perf) : ptrace_sampler_disable(s->ptrace);
}

int sampler_read(struct sampler *s, int timeout_ms, const sigset_t *sigmask,
		 sampler_cb cb, void *arg)
{
	if (s->perf)
		return perf_sampler_read(s->perf, timeout_ms, sigmask, cb, arg);
	return ptrace_sampler_read(s->ptrace, timeout_ms, sigmask, cb, arg);
}

int sampler_flush(struct sampler *s, sampler_cb cb, void *arg)
{
	return s->perf ? perf_sampler_flush(s->perf, cb, arg) : ptrace_sampler_flush(s->ptrace, cb, arg);
}

void sampler_get_stats(struct sampler *s, struct sampler_stats *st)
{
	if (s->perf)
		perf_sampler_get_stats(s->perf, st);
	else
		ptrace_sampler_get_stats(s->ptrace, st);
}

bool sampler_reap(struct sampler *s, pid_t pid, int *status)
{
	pid_t w;

	if (s->ptrace)
		return ptrace_sampler_reap(s->ptrace, pid, status);
	while ((w = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR)
		;
	return w == pid;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	perf_sampler_close(s->perf);
	ptrace_sampler_close(s->ptrace);
	free(s);
}
