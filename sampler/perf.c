// SPDX-License-Identifier: MIT
/* The perf_event_open backend's entry points: one inherited event and ring buffer per CPU, drained in time order. */
#include "perf_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "sampler.h"

long sampler_read_long(const char *path, long def)
{
	FILE *f = fopen(path, "re");
	long v;

	if (!f)
		return def;
	if (fscanf(f, "%ld", &v) != 1)
		v = def;
	fclose(f);
	return v;
}

static const char *const event_names[] = {
	[SAMPLER_EVENT_CPU_CLOCK] = "cpu-clock",
	[SAMPLER_EVENT_TASK_CLOCK] = "task-clock",
	[SAMPLER_EVENT_CYCLES] = "cycles",
	[SAMPLER_EVENT_INSTRUCTIONS] = "instructions",
	[SAMPLER_EVENT_PAGE_FAULTS] = "page-faults",
	[SAMPLER_EVENT_MINOR_FAULTS] = "minor-faults",
	[SAMPLER_EVENT_MAJOR_FAULTS] = "major-faults",
	[SAMPLER_EVENT_CONTEXT_SWITCHES] = "context-switches",
};

int sampler_event_parse(const char *name, enum sampler_event *ev)
{
	/* perf's short names */
	if (!strcmp(name, "faults"))
		name = "page-faults";
	else if (!strcmp(name, "cs"))
		name = "context-switches";
	for (size_t i = 0; i < ARRAY_SIZE(event_names); i++) {
		if (!strcmp(name, event_names[i])) {
			*ev = i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sampler_event_name(enum sampler_event ev)
{
	return (size_t)ev < ARRAY_SIZE(event_names) ? event_names[ev] : "?";
}

/*
 * Whether proftool runs in the first PID namespace: the program keys its
 * maps by the pids the kernel sees there, the samples carry the pids of
 * proftool's namespace. A nested one has a parent to open (a namespace
 * whose parent is out of reach is the first, or one whose user namespace
 * may not load BPF anyway).
 */
static bool init_pid_ns(void)
{
	int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC), parent;

	if (fd < 0)
		return true;
	parent = ioctl(fd, NS_GET_PARENT);
	close(fd);
	if (parent < 0)
		return true;
	close(parent);
	return false;
}

/*
 * Captures at the sample, where the hook can use them and BPF is allowed
 * (and the pids agree: not in a container's own PID namespace): then no
 * sample need wake the drain thread for the hook.
 */
static void capture_try(struct perf_sampler *s, const int *cpus)
{
	const struct sampler_hook *hk = s->opts.hook;
	int max_cpu = 0;

	if (!hk || !hk->capture || s->opts.no_capture || !init_pid_ns())
		return;
	for (unsigned i = 0; i < s->nr_cpus; i++)
		if (cpus[i] + 1 > max_cpu)
			max_cpu = cpus[i] + 1;
	s->capture = perf_capture_new((unsigned)max_cpu);
	if (s->capture)
		s->opts.hook_each_sample = false;
}

/* Attaches the capture to the events opened; on failure the sampler goes on without (hook_each_sample as asked). */
static int capture_start(struct perf_sampler *s)
{
	const struct sampler_hook *hk = s->opts.hook;
	int ret = perf_capture_attach(s, s->capture);

	if (ret < 0) {
		perf_capture_free(s->capture);
		s->capture = NULL;
		s->opts.hook_each_sample = s->hook_each_sample_asked;
		return ret;
	}
	hk->capture(hk->arg, s->capture);
	return 0;
}

struct perf_sampler *perf_sampler_open(const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct perf_sampler *s = xcalloc(1, sizeof(*s));
	int *cpus = NULL;
	int ret;

	s->opts = *opts;
	s->hook_each_sample_asked = opts->hook_each_sample;
	s->wake_fd = s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->procs_lock, NULL);
	s->page_size = sysconf(_SC_PAGESIZE);
	s->max_stack = sampler_read_long("/proc/sys/kernel/perf_event_max_stack", 127);
	if (s->max_stack < 1 || s->max_stack > 65535)
		s->max_stack = 127;
	s->nr_cpus = perf_online_cpus(&cpus);
	s->cpus = xcalloc(s->nr_cpus, sizeof(*s->cpus));
	for (unsigned i = 0; i < s->nr_cpus; i++)
		s->cpus[i].fd = -1;
	perf_setup_attr(s);
	capture_try(s, cpus);
	ret = perf_open_and_map(s, cpus, err, errlen);
	if (!ret && s->capture && capture_start(s) < 0) {
		/* opened for captures, which failed after all: again, each sample waking the hook */
		perf_unmap_all(s);
		perf_close_events(s);
		ret = perf_open_and_map(s, cpus, err, errlen);
	}
	free(cpus);
	if (ret < 0) {
		perf_sampler_close(s);
		errno = -ret;
		return NULL;
	}
	ret = perf_drainer_start(s);
	if (ret < 0) {
		errbuf_set(err, errlen, "cannot start the thread that reads the ring buffers: %s",
			   strerror(-ret));
		perf_sampler_close(s);
		errno = -ret;
		return NULL;
	}
	return s;
}

static int ioctl_all(struct perf_sampler *s, unsigned long req)
{
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		if (ioctl(s->cpus[i].fd, req, 0) < 0)
			return -errno;
		for (size_t j = 0; j < s->cpus[i].nr_more; j++)
			ioctl(s->cpus[i].more[j], req, 0);
	}
	return 0;
}

int perf_sampler_enable(struct perf_sampler *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int perf_sampler_disable(struct perf_sampler *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

int perf_sampler_read(struct perf_sampler *s, int timeout_ms, const sigset_t *sigmask,
		 sampler_cb cb, void *arg)
{
	struct pollfd pfd = { s->wake_fd, POLLIN, 0 };
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	uint64_t n;

	if (ppoll(&pfd, 1, &ts, sigmask) < 0 && errno != EINTR)
		return -errno;
	if (read(s->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
		/* nothing to reset: the stage is looked at all the same */
	}
	return perf_deliver_until(s, perf_take_stage(s), cb, arg);
}

int perf_sampler_flush(struct perf_sampler *s, sampler_cb cb, void *arg)
{
	perf_drainer_stop(s);
	perf_drain_all(s);
	perf_take_stage(s);
	return perf_deliver_until(s, UINT64_MAX, cb, arg);
}

void perf_sampler_get_stats(struct perf_sampler *s, struct sampler_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->samples = s->nr_samples;
	st->lost = s->nr_lost;
	st->nr_cpus = s->nr_cpus;
	st->buffer_bytes = s->nr_cpus ? s->cpus[0].data_size : 0;
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		uint64_t v;

		/* an inherited event's value includes its children, live and exited */
		if (s->cpus[i].fd >= 0 && read(s->cpus[i].fd, &v, sizeof(v)) == sizeof(v))
			st->count += v;
		for (size_t j = 0; j < s->cpus[i].nr_more; j++)
			if (read(s->cpus[i].more[j], &v, sizeof(v)) == sizeof(v))
				st->count += v;
	}
}

void perf_sampler_close(struct perf_sampler *s)
{
	if (!s)
		return;
	perf_drainers_free(s);
	if (s->capture) {
		s->opts.hook->capture(s->opts.hook->arg, NULL);
		perf_capture_free(s->capture);
	}
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->procs_lock);
	free(s->stage.buf);
	free(s->stage.pend);
	perf_unmap_all(s);
	perf_close_events(s);
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		free(s->cpus[i].more);
		free(s->cpus[i].cap);
	}
	free(s->cpus);
	for (size_t k = 0; k < s->nr_chunks; k++)
		free(s->chunks[k].buf);
	free(s->spare);
	free(s->chunks);
	free(s->pend);
	free(s->pend_tmp);
	free(s->runs);
	free(s->procs);
	idx_release(&s->proc_idx);
	free(s->chain);
	free(s);
}
