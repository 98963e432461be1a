// SPDX-License-Identifier: MIT
/* The perf_event backend: opening one inherited event per CPU (and per task when attaching) and mapping its ring buffer within the locked-memory budget. */
#include "perf_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/* x86-64 user registers, every index of asm/perf_regs.h except DS, ES, FS, GS */
#define SAMPLE_REGS_USER 0xff0fffull

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/* Parses /sys/devices/system/cpu/online ("0-3,5"); returns the number of CPUs found. */
unsigned perf_online_cpus(int **out)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int *cpus = NULL;
	size_t nr = 0, alloc = 0;
	int a, b;
	char sep;

	if (f) {
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = '\n';
			}
			for (int c = a; c <= b && c - a < 65536; c++) {
				ALLOC_GROW(cpus, nr + 1, alloc);
				cpus[nr++] = c;
			}
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!nr) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (long c = 0; c < (n > 0 ? n : 1); c++) {
			ALLOC_GROW(cpus, nr + 1, alloc);
			cpus[nr++] = c;
		}
	}
	*out = cpus;
	return nr;
}

static int perf_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

void perf_setup_attr(struct perf_sampler *s)
{
	struct perf_event_attr *a = &s->attr;
	const struct sampler_opts *o = &s->opts;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	switch (o->event) {
	case SAMPLER_EVENT_CPU_CLOCK:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
		break;
	case SAMPLER_EVENT_TASK_CLOCK:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_TASK_CLOCK;
		break;
	case SAMPLER_EVENT_CYCLES:
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
		break;
	case SAMPLER_EVENT_INSTRUCTIONS:
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_INSTRUCTIONS;
		break;
	case SAMPLER_EVENT_PAGE_FAULTS:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_PAGE_FAULTS;
		break;
	case SAMPLER_EVENT_MINOR_FAULTS:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
		break;
	case SAMPLER_EVENT_MAJOR_FAULTS:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
		break;
	case SAMPLER_EVENT_CONTEXT_SWITCHES:
	case SAMPLER_EVENT_NR:
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		break;
	}
	a->sample_type = SAMPLE_TYPE;
	if (o->period) {
		/*
		 * A software event with PERF_SAMPLE_PERIOD and a fixed period
		 * samples every event, each with its own period of one
		 * (kernel/events/core.c, perf_swevent_event): the period goes
		 * without saying instead.
		 */
		a->sample_period = o->period;
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	if (o->callgraph != SAMPLER_CG_NONE) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->sample_max_stack = s->max_stack;
	}
	if (o->callgraph == SAMPLER_CG_DWARF) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = SAMPLE_REGS_USER;
		a->sample_stack_user = o->stack_size;
		/* the kernel walks its own frames; the user part is ours to unwind */
		a->exclude_callchain_user = 1;
	}
	a->disabled = 1;
	a->enable_on_exec = o->enable_on_exec;
	a->inherit = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_callchain_kernel = o->user_only;
	a->exclude_hv = 1;
	a->exclude_guest = 1;
	a->watermark = 1;
}

static void describe_open_error(int e, const struct sampler_opts *o, char *err, size_t errlen)
{
	long paranoid = sampler_read_long("/proc/sys/kernel/perf_event_paranoid", -100);
	long max_rate = sampler_read_long("/proc/sys/kernel/perf_event_max_sample_rate", -1);

	if ((e == ENOENT || e == EOPNOTSUPP || e == ENODEV) &&
	    (o->event == SAMPLER_EVENT_CYCLES || o->event == SAMPLER_EVENT_INSTRUCTIONS))
		errbuf_set(err, errlen,
				"hardware counters are not available on this machine; use -e cpu-clock");
	else if ((e == EACCES || e == EPERM) && (paranoid > 2 || paranoid == -100))
		errbuf_set(err, errlen,
				"perf_event_open was denied (kernel.perf_event_paranoid is %ld); "
				"run as root, grant CAP_PERFMON, or lower it with "
				"'sysctl kernel.perf_event_paranoid=2'", paranoid);
	else if ((e == EACCES || e == EPERM) && geteuid() == 0)
		/* root refused: not a permission but a filter (a container) or a security module */
		errbuf_set(err, errlen,
				"perf_event_open was denied even to root (a seccomp filter, as containers "
				"have, or a security module); use --backend ptrace, or allow perf_event_open "
				"in the container's seccomp profile");
	else if (e == EACCES || e == EPERM)
		/* the setting allows it: the target's credentials or a security module refused */
		errbuf_set(err, errlen,
				"perf_event_open was denied although kernel.perf_event_paranoid is %ld "
				"(a process with other privileges, a seccomp filter or a security module); "
				"run as root, grant CAP_PERFMON, or use --backend ptrace", paranoid);
	else if (e == EINVAL && o->freq > (unsigned long)max_rate && max_rate > 0)
		/* the kernel lowers it by itself when sampling interrupts take too long */
		errbuf_set(err, errlen,
				"%u samples a second is above kernel.perf_event_max_sample_rate (%ld now); "
				"use -F %ld or less, or raise it with 'sysctl kernel.perf_event_max_sample_rate=%u'",
				o->freq, max_rate, max_rate, o->freq);
	else if (e == ENOSYS)
		errbuf_set(err, errlen,
				"perf_event_open is not available (blocked by a seccomp filter or not built into the kernel); "
				"allow the perf_event_open syscall in the container's seccomp profile");
	else if (e == ESRCH)
		errbuf_set(err, errlen, "the process to profile has already gone");
	else if (e == EMFILE)
		errbuf_set(err, errlen, "too many open files for one event per CPU; raise 'ulimit -n'");
	else
		errbuf_set(err, errlen, "perf_event_open failed: %s", strerror(e));
}

void perf_unmap_all(struct perf_sampler *s)
{
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		if (s->cpus[i].base)
			munmap(s->cpus[i].base, s->cpus[i].data_size + s->page_size);
		s->cpus[i].base = NULL;
	}
}

void perf_close_events(struct perf_sampler *s)
{
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		if (s->cpus[i].fd >= 0)
			close(s->cpus[i].fd);
		s->cpus[i].fd = -1;
		for (size_t j = 0; j < s->cpus[i].nr_more; j++)
			close(s->cpus[i].more[j]);
		s->cpus[i].nr_more = 0;
	}
}

static pid_t first_task(const struct perf_sampler *s)
{
	return s->opts.nr_tids ? s->opts.tids[0] : s->opts.pid;
}

/*
 * Events of the other tasks (attach), one per task and CPU, each writing
 * into the ring buffer of its CPU's first event. A task that exits before
 * its events open is skipped.
 */
static int open_more(struct perf_sampler *s, char *err, size_t errlen)
{
	for (size_t t = 1; t < s->opts.nr_tids; t++) {
		for (unsigned i = 0; i < s->nr_cpus; i++) {
			struct cpu_buf *b = &s->cpus[i];
			int fd = perf_open(&s->attr, s->opts.tids[t], b->cpu);

			if (fd < 0 && errno == ESRCH)
				break;
			if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, b->fd) < 0) {
				int e = errno;

				if (fd >= 0)
					close(fd);
				describe_open_error(e, &s->opts, err, errlen);
				return -e;
			}
			ALLOC_GROW(b->more, b->nr_more + 1, b->alloc_more);
			b->more[b->nr_more++] = fd;
		}
	}
	return 0;
}

static int open_events(struct perf_sampler *s, const int *cpus, char *err, size_t errlen)
{
	for (unsigned i = 0; i < s->nr_cpus; i++) {
		int fd = perf_open(&s->attr, first_task(s), cpus[i]);

		if (fd < 0 && (errno == EACCES || errno == EPERM) && !s->attr.exclude_kernel) {
			/* kernel samples need perf_event_paranoid <= 1 or CAP_PERFMON: user only then */
			s->attr.exclude_kernel = 1;
			s->attr.exclude_callchain_kernel = 1;
			fd = perf_open(&s->attr, first_task(s), cpus[i]);
		}
		if (fd < 0) {
			int e = errno;

			describe_open_error(e, &s->opts, err, errlen);
			return -e;
		}
		s->cpus[i].fd = fd;
		s->cpus[i].cpu = cpus[i];
	}
	return 0;
}

/* The largest data area (pages, a power of two) the unprivileged budget allows per CPU. */
static size_t budget_pages(const struct perf_sampler *s)
{
	long kb = sampler_read_long("/proc/sys/kernel/perf_event_mlock_kb", 516);
	size_t fit = kb > 0 ? (size_t)kb * 1024 / s->page_size : 2, pages = 1;

	while (pages * 2 + 1 <= fit)
		pages *= 2;
	return pages;
}

/*
 * Ring buffers are charged to perf_event_mlock_kb (per CPU, per user) and
 * then RLIMIT_MEMLOCK; past both, mmap fails with EPERM. Start from what
 * the budget should allow (more for root) and halve until it fits. The
 * wake-up watermark is a quarter of the buffer, so the events are opened
 * again for each size tried.
 */
int perf_open_and_map(struct perf_sampler *s, const int *cpus, char *err, size_t errlen)
{
	bool dwarf = s->opts.callgraph == SAMPLER_CG_DWARF;
	size_t pages = budget_pages(s);
	const size_t min_pages = dwarf ? 16 : 8;
	int ret;

	if (geteuid() == 0 && pages < (dwarf ? 1024u : 128u))
		pages = dwarf ? 1024 : 128;
	if (pages < min_pages)
		pages = min_pages;
	for (;;) {
		size_t data = pages * s->page_size;
		unsigned i;
		int e = 0;

		s->attr.wakeup_watermark = data / 4;
		if (s->opts.hook && s->opts.hook_each_sample) {
			/* a wake-up per sample, on its CPU: the sampled thread waits while the hook reads it (perf_drainer.c) */
			s->attr.watermark = 0;
			s->attr.wakeup_events = 1;
		}
		ret = open_events(s, cpus, err, errlen);
		if (ret < 0)
			return ret;
		for (i = 0; i < s->nr_cpus; i++) {
			void *p = mmap(NULL, data + s->page_size, PROT_READ | PROT_WRITE,
				       MAP_SHARED, s->cpus[i].fd, 0);

			if (p == MAP_FAILED) {
				e = errno;
				break;
			}
			s->cpus[i].base = p;
			s->cpus[i].data_size = data;
		}
		if (i == s->nr_cpus)
			return open_more(s, err, errlen);
		while (i--) {
			munmap(s->cpus[i].base, s->cpus[i].data_size + s->page_size);
			s->cpus[i].base = NULL;
		}
		perf_close_events(s);
		if (e != EPERM || pages <= min_pages) {
			errbuf_set(err, errlen,
					"cannot map a %zu KiB ring buffer per CPU: %s; raise "
					"kernel.perf_event_mlock_kb or 'ulimit -l'", data / 1024, strerror(e));
			/*
			 * EPERM here means the locked-memory budget ran out, not that
			 * perf events are denied: say so with an errno of its own, so
			 * that --backend auto does not take it for a denial.
			 */
			return e == EPERM ? -ENOBUFS : -e;
		}
		pages /= 2;
	}
}
