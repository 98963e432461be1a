// SPDX-License-Identifier: MIT
/* The perf_event_open backend: one inherited event and ring buffer per CPU, drained in time order. */
#include "sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"

/* x86-64 user registers, every index of asm/perf_regs.h except DS, ES, FS, GS */
#define SAMPLE_REGS_USER 0xff0fffull

#define SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct cpu_buf {
	int fd;                 /* the first task's event: owns the ring buffer */
	int *more;              /* the other tasks' events, writing into fd's buffer */
	size_t nr_more, alloc_more;
	int cpu;
	void *base;             /* header page + data area */
	size_t data_size;       /* bytes, a power of two */
	bool hup;               /* the events' tasks are all gone */
};

/*
 * Bytes of copied-out records, not delivered yet, past which the drain
 * thread leaves the ring buffers to the kernel (which then counts what it
 * drops). Stack copies are trimmed to the part that holds the stack, so
 * this is thousands of samples.
 */
#define DRAIN_LIMIT (256u << 20)
/*
 * The drain thread sweeps at least this often, however few records come;
 * more often once a hook reads the sampled processes as their records are
 * drained: the sooner, the closer to what the sample saw.
 */
#define DRAIN_PERIOD_MS 20
#define DRAIN_PERIOD_HOOK_MS 1
/* Bytes a hook may attach to one sample. */
#define HOOK_MAX (1u << 20)

struct pending {
	uint64_t time;
	uint64_t seq;           /* ties keep ring-buffer order */
	size_t off;             /* into its chunk */
	uint32_t chunk;
	uint32_t len;           /* the record's bytes, then what the hook wrote after them */
	uint32_t extra;         /* the hook's bytes (8-byte aligned after the record) */
};

/*
 * Records copied out of the ring buffers, as the reader took them from the
 * drain thread. A chunk is freed once all its records are delivered, so a
 * record is copied once however long it waits for its turn.
 */
struct chunk {
	unsigned char *buf;     /* NULL: a free slot */
	size_t len, alloc;
	size_t live;            /* records not delivered yet */
};

/* What the drain thread has copied out and the reader not taken yet (under lock). */
struct stage {
	unsigned char *buf;
	size_t len, alloc;
	struct pending *pend;   /* .chunk is set when taken */
	size_t nr, alloc_pend;
	uint64_t sweep;         /* start of the last sweep of every buffer that completed */
	uint64_t prev_sweep;    /* start of the one before it */
};

struct perf_sampler {
	struct sampler_opts opts;
	struct perf_event_attr attr;
	struct cpu_buf *cpus;
	unsigned nr_cpus;
	size_t page_size;
	unsigned max_stack;

	/*
	 * A thread of its own empties the ring buffers into the stage as they
	 * fill, so that the time the reader spends unwinding (a first sample
	 * of a process reads its libraries' debug information: tens of ms)
	 * never lets them overflow. The reader takes the stage, sorts, and
	 * delivers what is old enough.
	 */
	pthread_t drainer;
	bool drainer_running;
	pthread_mutex_t lock;
	int wake_fd;                    /* eventfd: the stage has records */
	int stop_fd;                    /* eventfd: the drain thread must end */
	struct stage stage;             /* under lock */
	uint64_t seq;                   /* drain thread (or the reader once it ended) */
	uint64_t buffered;              /* atomic: bytes copied out, not delivered yet */

	/* the reader's: records taken from the stage, waiting for their turn */
	struct chunk *chunks;
	size_t nr_chunks, alloc_chunks;
	struct pending *pend;
	size_t nr_pend, alloc_pend;

	uint64_t *chain;                /* scratch for one callchain */
	size_t alloc_chain;

	uint64_t nr_samples, nr_lost;
};

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
};

int sampler_event_parse(const char *name, enum sampler_event *ev)
{
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

/* Parses /sys/devices/system/cpu/online ("0-3,5"); returns the number of CPUs found. */
static unsigned online_cpus(int **out)
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

static void setup_attr(struct perf_sampler *s)
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
	}
	a->freq = 1;
	a->sample_freq = o->freq;
	a->sample_type = SAMPLE_TYPE;
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

static void close_events(struct perf_sampler *s)
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
static int open_and_map(struct perf_sampler *s, const int *cpus, char *err, size_t errlen)
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
			/* a wake-up per sample: the hook reads the process the sooner */
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
		close_events(s);
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

static int start_drainer(struct perf_sampler *s);

struct perf_sampler *perf_sampler_open(const struct sampler_opts *opts, char *err, size_t errlen)
{
	struct perf_sampler *s = xcalloc(1, sizeof(*s));
	int *cpus = NULL;
	int ret;

	s->opts = *opts;
	s->wake_fd = s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->page_size = sysconf(_SC_PAGESIZE);
	s->max_stack = sampler_read_long("/proc/sys/kernel/perf_event_max_stack", 127);
	if (s->max_stack < 1 || s->max_stack > 65535)
		s->max_stack = 127;
	s->nr_cpus = online_cpus(&cpus);
	s->cpus = xcalloc(s->nr_cpus, sizeof(*s->cpus));
	for (unsigned i = 0; i < s->nr_cpus; i++)
		s->cpus[i].fd = -1;
	setup_attr(s);
	ret = open_and_map(s, cpus, err, errlen);
	free(cpus);
	if (ret < 0) {
		perf_sampler_close(s);
		errno = -ret;
		return NULL;
	}
	ret = start_drainer(s);
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

/* The time of a record: in the sample body, or in the sample_id trailer of the others. */
static uint64_t record_time(const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)h;
	uint64_t t;

	if (h->type == PERF_RECORD_SAMPLE) {
		/* ip, pid/tid, time */
		if (h->size < sizeof(*h) + 24)
			return 0;
		memcpy(&t, p + sizeof(*h) + 16, 8);
		return t;
	}
	/* trailer: pid/tid, time, cpu/res */
	if (h->size < sizeof(*h) + 24)
		return 0;
	memcpy(&t, p + h->size - 16, 8);
	return t;
}

/*
 * A sample's user stack copy is always the requested size; only its first
 * dyn_size bytes hold the stack. The copy at P (LEN bytes, a whole sample
 * record) is cut down to those, in place; returns the record's new length.
 */
static size_t trim_stack(const struct perf_sampler *s, unsigned char *p, size_t len)
{
	const uint64_t type = s->attr.sample_type;
	size_t off = sizeof(struct perf_event_header) + 5 * 8; /* ip, tid, time, cpu, period */
	uint64_t v, size, dyn, keep;
	struct perf_event_header h;

	if (!(type & PERF_SAMPLE_STACK_USER))
		return len;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return len;
		memcpy(&v, p + off, 8);
		if (v > (len - off - 8) / 8)
			return len;
		off += 8 + v * 8;
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > len)
			return len;
		memcpy(&v, p + off, 8);
		off += 8 + (v ? 8ull * __builtin_popcountll(s->attr.sample_regs_user) : 0);
	}
	if (off + 8 > len)
		return len;
	memcpy(&size, p + off, 8);
	if (!size || len - off < 16 || size > len - off - 16)
		return len;
	memcpy(&dyn, p + off + 8 + size, 8);
	/* whole words, as the kernel writes them: rounded up, never cutting into the stack */
	keep = dyn < size ? (dyn + 7) & ~7ull : size;
	if (keep >= size)
		return len;
	memcpy(p + off, &keep, 8);
	/* the dyn_size word and whatever follows it move down */
	memmove(p + off + 8 + keep, p + off + 8 + size, len - (off + 8 + size));
	len -= size - keep;
	memcpy(&h, p, sizeof(h));
	h.size = (uint16_t)len;
	memcpy(p, &h, sizeof(h));
	return len;
}

/*
 * Shows the hook a record just copied to the stage at OFF: a sample gets
 * what the hook writes after it; returns those bytes, 8-byte aligned.
 */
static uint32_t hook_record(struct perf_sampler *s, struct stage *st, size_t off, size_t len)
{
	const struct sampler_hook *hk = s->opts.hook;
	struct perf_event_header h;
	uint32_t u32[4];
	size_t cap = hk->cap < HOOK_MAX ? hk->cap : HOOK_MAX, n;

	memcpy(&h, st->buf + off, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		/* ip, then pid and tid */
		if (!hk->sample || len < sizeof(h) + 16)
			return 0;
		memcpy(u32, st->buf + off + sizeof(h) + 8, 8);
		ALLOC_GROW(st->buf, off + len + cap, st->alloc);
		n = hk->sample(hk->arg, (int32_t)u32[0], (int32_t)u32[1], st->buf + off + len, cap);
		return (uint32_t)((n < cap ? n : cap) + 7) & ~7u;
	case PERF_RECORD_COMM:
		if (hk->task && (h.misc & PERF_RECORD_MISC_COMM_EXEC) && len >= sizeof(h) + 8) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			hk->task(hk->arg, SAMPLER_TASK_EXEC, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_EXIT:
		/*
		 * pid, ppid, tid: the leader's exit stands for the process's (when
		 * it leaves before its threads, the next sample looks again)
		 */
		if (hk->task && len >= sizeof(h) + 16) {
			memcpy(u32, st->buf + off + sizeof(h), 16);
			if (u32[0] == u32[2])
				hk->task(hk->arg, SAMPLER_TASK_EXIT, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_MMAP2:
		/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot */
		if (hk->task && len >= sizeof(h) + 64) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			memcpy(&u32[1], st->buf + off + sizeof(h) + 56, 4);
			if (u32[1] & PROT_EXEC)
				hk->task(hk->arg, SAMPLER_TASK_MMAP, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_MMAP:
		if (hk->task && len >= sizeof(h) + 8) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			hk->task(hk->arg, SAMPLER_TASK_MMAP, (int32_t)u32[0]);
		}
		return 0;
	default:
		return 0;
	}
}

/* Copies the records of one ring buffer into the stage. Called with the lock held. */
static void drain_one(struct perf_sampler *s, struct cpu_buf *b, struct stage *st)
{
	struct perf_event_mmap_page *mp = b->base;
	unsigned char *data = (unsigned char *)b->base + s->page_size;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	size_t mask = b->data_size - 1;

	while (tail < head) {
		struct perf_event_header h;
		size_t off = tail & mask, first, len;
		uint32_t extra;
		struct pending *pe;

		/* the header itself is 8-byte aligned and never wraps */
		memcpy(&h, data + off, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		ALLOC_GROW(st->buf, st->len + h.size, st->alloc);
		first = b->data_size - off < h.size ? b->data_size - off : h.size;
		memcpy(st->buf + st->len, data + off, first);
		memcpy(st->buf + st->len + first, data, h.size - first);
		len = h.type == PERF_RECORD_SAMPLE ? trim_stack(s, st->buf + st->len, h.size) : h.size;
		extra = s->opts.hook ? hook_record(s, st, st->len, len) : 0;
		ALLOC_GROW(st->pend, st->nr + 1, st->alloc_pend);
		pe = &st->pend[st->nr++];
		pe->off = st->len;
		pe->len = len + extra;
		pe->extra = extra;
		pe->seq = s->seq++;
		pe->time = record_time((struct perf_event_header *)(st->buf + st->len));
		st->len += len + extra;
		__atomic_add_fetch(&s->buffered, len + extra, __ATOMIC_RELAXED);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

/* One sweep of every ring buffer into the stage. */
static void drain_all(struct perf_sampler *s)
{
	uint64_t start = time_mono_ns();

	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->nr_cpus; i++)
		drain_one(s, &s->cpus[i], &s->stage);
	s->stage.prev_sweep = s->stage.sweep;
	s->stage.sweep = start;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Once the hook has something to read, the drain thread sweeps every
 * millisecond and asks for real-time priority where it may (root, or an
 * RLIMIT_RTPRIO): on a machine whose CPUs the target keeps busy, an
 * ordinary thread runs a millisecond or more after it is due, and the hook
 * reads a process that has moved on. Measured on a PyTorch job filling
 * both CPUs: the process read 3.2 ms after the sample with 4 ms sweeps,
 * 1.5 ms with a wake-up per sample, 0.2-0.3 ms real-time; Python stacks
 * at odds with their native ones 28 %, 9 %, 3-4 %. Should the hook ever
 * take more than a quarter of a CPU, the thread goes back to ordinary
 * scheduling, so it can never starve the target.
 */
#define BOOST_WINDOW_NS 200000000ull
#define BOOST_MAX_SHARE 4       /* of the window: a quarter */

static bool boost(bool on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };

	return pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp) == 0 && on;
}

/* Whether the thread used more than its share of the CPU in the last window. */
static bool boost_spent(uint64_t *wall, uint64_t *cpu)
{
	struct timespec ts;
	uint64_t now = time_mono_ns(), used;

	if (now - *wall < BOOST_WINDOW_NS)
		return false;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	used = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (*wall && (used - *cpu) * BOOST_MAX_SHARE > now - *wall)
		return true;
	*wall = now;
	*cpu = used;
	return false;
}

static void *drainer_main(void *arg)
{
	struct perf_sampler *s = arg;
	struct pollfd *pfd = xcalloc(s->nr_cpus + 1, sizeof(*pfd));
	const uint64_t one = 1;
	const struct sampler_hook *hk = s->opts.hook;
	int period = DRAIN_PERIOD_MS;
	uint64_t boost_wall = 0, boost_cpu = 0;
	bool eager = false, boosted = false;

	for (;;) {
		for (unsigned i = 0; i < s->nr_cpus; i++) {
			/* a negative fd is ignored: a hung-up event would otherwise wake us forever */
			pfd[i].fd = s->cpus[i].hup ? -1 : s->cpus[i].fd;
			pfd[i].events = POLLIN;
		}
		pfd[s->nr_cpus].fd = s->stop_fd;
		pfd[s->nr_cpus].events = POLLIN;
		if (poll(pfd, s->nr_cpus + 1, period) < 0 && errno != EINTR)
			break;
		if (pfd[s->nr_cpus].revents)
			break;
		for (unsigned i = 0; i < s->nr_cpus; i++)
			if (pfd[i].revents & (POLLHUP | POLLERR))
				s->cpus[i].hup = true;
		/*
		 * Past the bound the kernel drops samples, and counts them; the
		 * buffers stay readable, so wait for the reader without polling them.
		 */
		if (__atomic_load_n(&s->buffered, __ATOMIC_RELAXED) >= DRAIN_LIMIT) {
			if (poll(&pfd[s->nr_cpus], 1, DRAIN_PERIOD_MS) > 0)
				break;
			continue;
		}
		drain_all(s);
		if (!eager && hk && hk->eager && hk->eager(hk->arg)) {
			eager = true;
			period = DRAIN_PERIOD_HOOK_MS;
			boosted = boost(true);
		}
		if (boosted && boost_spent(&boost_wall, &boost_cpu))
			boosted = boost(false);
		if (write(s->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			break;
	}
	free(pfd);
	return NULL;
}

/* Starts the drain thread with every signal blocked: they are the reader's. */
static int start_drainer(struct perf_sampler *s)
{
	sigset_t all, old;
	int ret;

	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0 || s->stop_fd < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&s->drainer, NULL, drainer_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	s->drainer_running = true;
	return 0;
}

static void stop_drainer(struct perf_sampler *s)
{
	const uint64_t one = 1;

	if (!s->drainer_running)
		return;
	if (write(s->stop_fd, &one, sizeof(one)) < 0) {
		/* an eventfd takes a write unless its counter is full, which one write never makes it */
	}
	pthread_join(s->drainer, NULL);
	s->drainer_running = false;
}

/*
 * Moves what the stage holds into a chunk of the reader's own, and returns
 * the time up to which every record is in hand: the start of the sweep
 * before the last completed one. A record is written just after its time,
 * possibly after the last sweep read its buffer, so one whole sweep of
 * margin keeps a fork record ahead of its child's first samples however
 * often the reader takes.
 */
static uint64_t take_stage(struct perf_sampler *s)
{
	uint64_t limit;
	size_t k;

	pthread_mutex_lock(&s->lock);
	if (s->stage.nr) {
		for (k = 0; k < s->nr_chunks && s->chunks[k].buf; k++)
			;
		if (k == s->nr_chunks) {
			ALLOC_GROW(s->chunks, s->nr_chunks + 1, s->alloc_chunks);
			memset(&s->chunks[s->nr_chunks++], 0, sizeof(*s->chunks));
		}
		s->chunks[k] = (struct chunk){ s->stage.buf, s->stage.len, s->stage.alloc, s->stage.nr };
		ALLOC_GROW(s->pend, s->nr_pend + s->stage.nr, s->alloc_pend);
		for (size_t i = 0; i < s->stage.nr; i++) {
			s->pend[s->nr_pend] = s->stage.pend[i];
			s->pend[s->nr_pend++].chunk = (uint32_t)k;
		}
		s->stage.buf = NULL;
		s->stage.len = s->stage.alloc = 0;
		s->stage.nr = 0;
	}
	limit = s->stage.prev_sweep;
	pthread_mutex_unlock(&s->lock);
	return limit;
}

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads a u64 at *p within [p, end); returns false past the end. */
static bool take_u64(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	if (end - *p < 8)
		return false;
	memcpy(v, *p, 8);
	*p += 8;
	return true;
}

static bool parse_sample(struct perf_sampler *s, const unsigned char *p, const unsigned char *end,
			 uint16_t misc, struct sampler_rec *r)
{
	uint64_t v, nr = 0, ip;
	uint32_t nr_kernel = 0, nr_out = 0;
	int ctx = 0; /* 1 kernel, 2 user */

	r->type = SAMPLER_REC_SAMPLE;
	if (!take_u64(&p, end, &ip) || !take_u64(&p, end, &v))
		return false;
	r->pid = (int32_t)(v & 0xffffffff);
	r->tid = (int32_t)(v >> 32);
	if (!take_u64(&p, end, &r->time) || !take_u64(&p, end, &v))
		return false;
	r->cpu = (uint32_t)v;
	if (!take_u64(&p, end, &r->sample.period))
		return false;
	r->sample.ip = ip;
	r->sample.user = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER;
	r->sample.chain_full = false;
	if (s->attr.sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint32_t nr_ips = 0;

		if (!take_u64(&p, end, &nr) || nr > (uint64_t)(end - p) / 8)
			return false;
		ALLOC_GROW(s->chain, nr + 1, s->alloc_chain);
		/* kernel frames first, then user frames, each leaf first */
		for (uint64_t i = 0; i < nr; i++) {
			take_u64(&p, end, &v);
			if (v >= (uint64_t)PERF_CONTEXT_MAX) {
				ctx = v == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
				      v == (uint64_t)PERF_CONTEXT_USER ? 2 : 3;
				continue;
			}
			nr_ips++;
			if (ctx == 1) {
				s->chain[nr_out++] = v;
				nr_kernel++;
			} else if (ctx == 2) {
				s->chain[nr_out++] = v;
			}
		}
		r->sample.chain_full = nr_ips >= s->max_stack;
	} else {
		ALLOC_GROW(s->chain, 1, s->alloc_chain);
		s->chain[0] = ip;
		nr_out = 1;
		nr_kernel = r->sample.user ? 0 : 1;
	}
	r->sample.chain = s->chain;
	r->sample.nr_chain = nr_out;
	r->sample.nr_kernel = nr_kernel;
	r->sample.regs = NULL;
	r->sample.regs_mask = 0;
	r->sample.stack = NULL;
	r->sample.stack_size = 0;
	if (s->attr.sample_type & PERF_SAMPLE_REGS_USER) {
		uint64_t abi;

		if (!take_u64(&p, end, &abi))
			return false;
		if (abi) {
			unsigned n = __builtin_popcountll(s->attr.sample_regs_user);

			if ((uint64_t)(end - p) < n * 8ull)
				return false;
			r->sample.regs = (const uint64_t *)p;
			r->sample.regs_mask = s->attr.sample_regs_user;
			p += n * 8;
		}
	}
	if (s->attr.sample_type & PERF_SAMPLE_STACK_USER) {
		uint64_t size, dyn;

		if (!take_u64(&p, end, &size))
			return false;
		if (size) {
			const unsigned char *data = p;

			if ((uint64_t)(end - p) < size)
				return false;
			p += size;
			if (!take_u64(&p, end, &dyn))
				return false;
			r->sample.stack = data;
			r->sample.stack_size = dyn < size ? dyn : size;
		}
	}
	return true;
}

/* Non-sample records carry pid, tid, time, cpu in a trailer (sample_id_all). */
static void parse_trailer(const struct perf_event_header *h, struct sampler_rec *r)
{
	const unsigned char *t = (const unsigned char *)h + h->size - 24;
	uint64_t v;

	memcpy(&v, t, 8);
	r->pid = (int32_t)(v & 0xffffffff);
	r->tid = (int32_t)(v >> 32);
	memcpy(&r->time, t + 8, 8);
	memcpy(&v, t + 16, 8);
	r->cpu = (uint32_t)v;
}

/* Copies a NUL-terminated string bounded by END into a scratch buffer. */
static const char *bounded_str(const unsigned char *p, const unsigned char *end, char *buf, size_t n)
{
	size_t len = 0;

	while (p + len < end && p[len] && len + 1 < n)
		len++;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

static int deliver(struct perf_sampler *s, const struct perf_event_header *h, uint32_t extra,
		   sampler_cb cb, void *arg)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	const unsigned char *end = (const unsigned char *)h + h->size;
	const unsigned char *tend = end - 24; /* start of the sample_id trailer */
	struct sampler_rec r;
	char name[4096];
	uint32_t u32[4];
	uint64_t u64[4];

	memset(&r, 0, sizeof(r));
	if (h->type != PERF_RECORD_SAMPLE) {
		if (h->size < sizeof(*h) + 24)
			return 0;
		parse_trailer(h, &r);
	}
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (!parse_sample(s, p, end, h->misc, &r))
			return 0;
		r.sample.extra = extra ? end : NULL;
		r.sample.extra_size = extra;
		s->nr_samples++;
		break;
	case PERF_RECORD_MMAP2:
		/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename */
		if (tend - p < 8 + 24 + 8 + 16 + 8)
			return 0;
		r.type = SAMPLER_REC_MMAP;
		memcpy(u32, p, 8);
		r.pid = u32[0];
		r.tid = u32[1];
		memcpy(u64, p + 8, 24);
		r.mmap.start = u64[0];
		r.mmap.len = u64[1];
		r.mmap.pgoff = u64[2];
		memcpy(u32, p + 32, 8);
		r.mmap.maj = u32[0];
		r.mmap.min = u32[1];
		memcpy(&r.mmap.ino, p + 40, 8);
		memcpy(u32, p + 56, 8);
		r.mmap.prot = u32[0];
		r.mmap.filename = bounded_str(p + 64, tend, name, sizeof(name));
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
			r.mmap.maj = r.mmap.min = 0, r.mmap.ino = 0;
		break;
	case PERF_RECORD_MMAP:
		/* pid, tid, addr, len, pgoff, filename: only from old kernels */
		if (tend - p < 8 + 24)
			return 0;
		r.type = SAMPLER_REC_MMAP;
		memcpy(u64, p + 8, 24);
		r.mmap.start = u64[0];
		r.mmap.len = u64[1];
		r.mmap.pgoff = u64[2];
		r.mmap.prot = 4; /* PROT_EXEC: without mmap_data only exec maps are reported */
		r.mmap.filename = bounded_str(p + 32, tend, name, sizeof(name));
		break;
	case PERF_RECORD_COMM:
		if (tend - p < 8)
			return 0;
		r.type = SAMPLER_REC_COMM;
		/* the task renamed, which is not always the one writing (pthread_setname_np) */
		memcpy(u32, p, 8);
		r.pid = u32[0];
		r.tid = u32[1];
		r.comm.comm = bounded_str(p + 8, tend, name, sizeof(name));
		r.comm.exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (tend - p < 16)
			return 0;
		r.type = h->type == PERF_RECORD_FORK ? SAMPLER_REC_FORK : SAMPLER_REC_EXIT;
		memcpy(u32, p, 16);
		r.pid = u32[0];
		r.fork.ppid = u32[1];
		r.tid = u32[2];
		r.fork.ptid = u32[3];
		break;
	case PERF_RECORD_LOST:
		if (tend - p < 16)
			return 0;
		r.type = SAMPLER_REC_LOST;
		memcpy(&r.lost.count, p + 8, 8);
		s->nr_lost += r.lost.count;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (tend - p < 8)
			return 0;
		r.type = SAMPLER_REC_LOST;
		memcpy(&r.lost.count, p, 8);
		s->nr_lost += r.lost.count;
		break;
	default:
		return 0;
	}
	return cb(&r, arg);
}

/*
 * Delivers pending records older than LIMIT in time order and keeps the
 * rest. A record is safe once every buffer has been read after it was
 * written: records carry their time when written, and each pass reads all
 * buffers, so whatever is older than the previous pass's start is in hand.
 */
static int deliver_until(struct perf_sampler *s, uint64_t limit, sampler_cb cb, void *arg)
{
	size_t i;
	int ret = 0;

	QSORT(s->pend, s->nr_pend, pending_cmp);
	for (i = 0; i < s->nr_pend && s->pend[i].time < limit; i++) {
		struct chunk *c = &s->chunks[s->pend[i].chunk];

		ret = deliver(s, (struct perf_event_header *)(c->buf + s->pend[i].off), s->pend[i].extra,
			      cb, arg);
		c->live--;
		__atomic_sub_fetch(&s->buffered, s->pend[i].len, __ATOMIC_RELAXED);
		if (ret) {
			i++;
			break;
		}
	}
	if (i && i < s->nr_pend)
		memmove(s->pend, s->pend + i, (s->nr_pend - i) * sizeof(*s->pend));
	s->nr_pend -= i;
	for (size_t k = 0; k < s->nr_chunks; k++) {
		struct chunk *c = &s->chunks[k];

		if (c->buf && !c->live) {
			free(c->buf);
			memset(c, 0, sizeof(*c));
		}
	}
	return ret;
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
	return deliver_until(s, take_stage(s), cb, arg);
}

int perf_sampler_flush(struct perf_sampler *s, sampler_cb cb, void *arg)
{
	stop_drainer(s);
	drain_all(s);
	take_stage(s);
	return deliver_until(s, UINT64_MAX, cb, arg);
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
	stop_drainer(s);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_mutex_destroy(&s->lock);
	free(s->stage.buf);
	free(s->stage.pend);
	for (unsigned i = 0; i < s->nr_cpus; i++)
		if (s->cpus[i].base)
			munmap(s->cpus[i].base, s->cpus[i].data_size + s->page_size);
	close_events(s);
	for (unsigned i = 0; i < s->nr_cpus; i++)
		free(s->cpus[i].more);
	free(s->cpus);
	for (size_t k = 0; k < s->nr_chunks; k++)
		free(s->chunks[k].buf);
	free(s->chunks);
	free(s->pend);
	free(s->chain);
	free(s);
}
