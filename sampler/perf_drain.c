// SPDX-License-Identifier: MIT
/* The perf_event backend: the drain thread, which copies records out of the ring buffers into the stage as they fill. */
#include "perf_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

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
/*
 * A wake-up per sample (a Python command) reads each sample at once, at
 * the price of a context switch each. Past this many a second (several
 * CPUs sampling: each CPU's event wakes the thread for its own samples)
 * the thread sweeps every DRAIN_PERIOD_HOOK_MS instead, all the samples
 * that arrived meanwhile at once, where the hook can read that late
 * (late_ok); below a third of it, per sample again. Judged over
 * RATE_WINDOW_NS. Two Python processes on 2 CPUs: 0.98 -> 0.50 wake-ups
 * and 16-17 -> 13 us of CPU per sample; callback.py's stacks at odds
 * 0.3 -> 0.4-0.7 % (3.11; on 3.13, which can only read as the thread is
 * at the read, 2-3 % -> 5 %: it stays per sample).
 */
#define WAKE_RATE_MAX 1500u
#define RATE_WINDOW_NS 200000000ull
/*
 * How often the reader (the main loop) is woken for what the sweeps
 * staged: it symbolizes in batches, and nothing it does needs records
 * sooner (live views refresh at most ten times a second). More staged than
 * a sixteenth of DRAIN_LIMIT wakes it at once.
 */
#define WAKE_PERIOD_NS 50000000ull
/* Bytes a hook may attach to one sample. */
#define HOOK_MAX (1u << 20)
/* The stack pointer's index in perf's x86-64 user registers (asm/perf_regs.h) */
#define PERF_REG_SP 7

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

/* Copies LEN bytes at ring position POS, wrapping at the end of the ring, to DST. */
static void ring_copy(void *dst, const unsigned char *data, size_t data_size, uint64_t pos, size_t len)
{
	size_t off = pos & (data_size - 1), first = data_size - off < len ? data_size - off : len;

	memcpy(dst, data + off, first);
	memcpy((unsigned char *)dst + first, data, len - first);
}

static uint64_t ring_u64(const unsigned char *data, size_t data_size, uint64_t pos)
{
	uint64_t v;

	ring_copy(&v, data, data_size, pos, 8);
	return v;
}

/*
 * A sample's user stack copy is always the requested size; only its first
 * dyn_size bytes hold the stack. For the sample record of LEN bytes at ring
 * position POS, finds the unused rest of the copy, [*CUT, *RESUME) from the
 * record's start, so that the drain leaves it in the ring: copying it out
 * would be most of a sample's cost (32 KiB by default, a few KiB used).
 * *SIZE_AT is where the copy's size word is, to be set to what was kept.
 * False when there is nothing to leave out (or the record is not as the
 * attributes say).
 */
static bool stack_unused(const struct perf_sampler *s, const unsigned char *data, size_t data_size, uint64_t pos,
			 size_t len, size_t *cut, size_t *resume, size_t *size_at)
{
	const uint64_t type = s->attr.sample_type;
	/* ip, tid, time, cpu, and the period unless it is fixed (perf_setup_attr) */
	size_t off = sizeof(struct perf_event_header) + (type & PERF_SAMPLE_PERIOD ? 5 : 4) * 8;
	uint64_t v, size, dyn, keep;

	if (!(type & PERF_SAMPLE_STACK_USER))
		return false;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return false;
		v = ring_u64(data, data_size, pos + off);
		if (v > (len - off - 8) / 8)
			return false;
		off += 8 + v * 8;
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > len)
			return false;
		v = ring_u64(data, data_size, pos + off);
		off += 8 + (v ? 8ull * __builtin_popcountll(s->attr.sample_regs_user) : 0);
	}
	if (off + 8 > len)
		return false;
	size = ring_u64(data, data_size, pos + off);
	if (!size || len - off < 16 || size > len - off - 16)
		return false;
	dyn = ring_u64(data, data_size, pos + off + 8 + size);
	/* whole words, as the kernel writes them: rounded up, never cutting into the stack */
	keep = dyn < size ? (dyn + 7) & ~7ull : size;
	if (keep >= size)
		return false;
	*size_at = off;
	*cut = off + 8 + keep;
	/* the dyn_size word and whatever follows it stay */
	*resume = off + 8 + size;
	return true;
}

/*
 * Copies the record of LEN bytes at ring position POS to DST, less the
 * unused part of its stack copy; returns the bytes copied.
 */
static size_t copy_record(const struct perf_sampler *s, unsigned char *dst, const unsigned char *data,
			  size_t data_size, uint64_t pos, size_t len, bool sample)
{
	size_t cut, resume, size_at;
	struct perf_event_header h;
	uint64_t keep;

	if (!sample || !stack_unused(s, data, data_size, pos, len, &cut, &resume, &size_at)) {
		ring_copy(dst, data, data_size, pos, len);
		return len;
	}
	ring_copy(dst, data, data_size, pos, cut);
	ring_copy(dst + cut, data, data_size, pos + resume, len - resume);
	keep = cut - size_at - 8;
	memcpy(dst + size_at, &keep, 8);
	len -= resume - cut;
	memcpy(&h, dst, sizeof(h));
	h.size = (uint16_t)len;
	memcpy(dst, &h, sizeof(h));
	return len;
}

/*
 * The stack copy of the sample record at P (LEN bytes, trimmed) and the
 * stack pointer it starts at; false when the record has none.
 */
static bool sample_ustack(const struct perf_sampler *s, const unsigned char *p, size_t len,
			  struct sampler_ustack *us)
{
	const uint64_t type = s->attr.sample_type, mask = s->attr.sample_regs_user;
	size_t off = sizeof(struct perf_event_header) + (type & PERF_SAMPLE_PERIOD ? 5 : 4) * 8;
	uint64_t v, size, dyn;

	if (!(type & PERF_SAMPLE_STACK_USER) || !(type & PERF_SAMPLE_REGS_USER) || !(mask >> PERF_REG_SP & 1))
		return false;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return false;
		memcpy(&v, p + off, 8);
		if (v > (len - off - 8) / 8)
			return false;
		off += 8 + v * 8;
	}
	if (off + 8 > len)
		return false;
	memcpy(&v, p + off, 8);
	if (!v || off + 8 + 8ull * __builtin_popcountll(mask) + 8 > len)
		return false;
	memcpy(&us->sp, p + off + 8 + 8ull * __builtin_popcountll(mask & ((1ull << PERF_REG_SP) - 1)), 8);
	off += 8 + 8ull * __builtin_popcountll(mask);
	memcpy(&size, p + off, 8);
	if (!size || len - off < 16 || size > len - off - 16)
		return false;
	memcpy(&dyn, p + off + 8 + size, 8);
	us->data = p + off + 8;
	us->size = dyn < size ? dyn : size;
	return us->size > 0;
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
	struct sampler_ustack us;
	bool has_us;

	memcpy(&h, st->buf + off, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		/* ip, then pid and tid */
		if (!hk->sample || len < sizeof(h) + 16)
			return 0;
		memcpy(u32, st->buf + off + sizeof(h) + 8, 8);
		ALLOC_GROW(st->buf, off + len + cap, st->alloc);
		has_us = sample_ustack(s, st->buf + off, len, &us);
		n = hk->sample(hk->arg, (int32_t)u32[0], (int32_t)u32[1], has_us ? &us : NULL, st->buf + off + len,
			       cap);
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

/*
 * The first sample of a process read the process's resident memory into
 * PE, while it still runs: the recorder's own readings, a few times a
 * second, miss a process that lives a few ms. (An exec'd process keeps its
 * pid and is read by them.)
 */
static void first_rss(struct perf_sampler *s, const unsigned char *rec, struct pending *pe)
{
	uint32_t pid;
	uint64_t h;
	size_t pos = 0;
	uint32_t id;

	/* header, ip, then pid and tid */
	memcpy(&pid, rec + sizeof(struct perf_event_header) + 8, 4);
	h = hash_u64(pid);
	while ((id = idx_next(&s->rss_pids, h, &pos)) != IDX_NONE)
		if (s->rss_pid[id] == (int32_t)pid)
			return;
	ALLOC_GROW(s->rss_pid, s->nr_rss_pid + 1, s->alloc_rss_pid);
	s->rss_pid[s->nr_rss_pid] = (int32_t)pid;
	idx_insert(&s->rss_pids, h, (uint32_t)s->nr_rss_pid++);
	if (!proc_statm_read((int32_t)pid, &pe->rss, &pe->rss_anon))
		pe->rss = pe->rss_anon = 0;
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
		size_t len;
		uint32_t extra;
		struct pending *pe;

		/* the header itself is 8-byte aligned and never wraps */
		memcpy(&h, data + (tail & mask), sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		ALLOC_GROW(st->buf, st->len + h.size, st->alloc);
		len = copy_record(s, st->buf + st->len, data, b->data_size, tail, h.size,
				  h.type == PERF_RECORD_SAMPLE);
		extra = s->opts.hook ? hook_record(s, st, st->len, len) : 0;
		ALLOC_GROW(st->pend, st->nr + 1, st->alloc_pend);
		pe = &st->pend[st->nr++];
		pe->off = st->len;
		pe->len = len + extra;
		pe->extra = extra;
		pe->seq = s->seq++;
		pe->time = record_time((struct perf_event_header *)(st->buf + st->len));
		pe->rss = pe->rss_anon = 0;
		if (h.type == PERF_RECORD_SAMPLE)
			first_rss(s, st->buf + st->len, pe);
		st->len += len + extra;
		__atomic_add_fetch(&s->buffered, len + extra, __ATOMIC_RELAXED);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

/* One sweep of every ring buffer into the stage. */
void perf_drain_all(struct perf_sampler *s)
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

/*
 * Whether to sweep on a timer rather than at each sample's wake-up, from
 * the wake-ups (or, on the timer, the records) of the window so far.
 */
static bool wake_rate(const struct perf_sampler *s, bool timed, uint64_t *start, uint64_t *wakes, uint64_t *seq)
{
	const struct sampler_hook *hk = s->opts.hook;
	uint64_t now = time_mono_ns(), n;

	(*wakes)++;
	if (!*start) {
		*start = now;
		*seq = s->seq;
		*wakes = 0;
		return timed;
	}
	if (now - *start < RATE_WINDOW_NS)
		return timed;
	/* the drain thread's own count of records: read by it alone while it runs */
	n = timed ? s->seq - *seq : *wakes;
	if (!timed && n * 1000000000ull > (uint64_t)WAKE_RATE_MAX * (now - *start) && hk->late_ok &&
	    hk->late_ok(hk->arg))
		timed = true;
	else if (timed && n * 1000000000ull * 3 < (uint64_t)WAKE_RATE_MAX * (now - *start))
		timed = false;
	*start = now;
	*seq = s->seq;
	*wakes = 0;
	return timed;
}

static void *drainer_main(void *arg)
{
	struct perf_sampler *s = arg;
	struct pollfd *pfd = xcalloc(s->nr_cpus + 1, sizeof(*pfd));
	const uint64_t one = 1;
	const struct sampler_hook *hk = s->opts.hook;
	int period = DRAIN_PERIOD_MS;
	uint64_t boost_wall = 0, boost_cpu = 0, woke = 0, rate_start = 0, rate_wakes = 0, rate_seq = 0;
	bool eager = false, boosted = false, timed = false;

	for (;;) {
		for (unsigned i = 0; i < s->nr_cpus; i++) {
			/* a negative fd is ignored: a hung-up event would otherwise wake us forever */
			pfd[i].fd = s->cpus[i].hup ? -1 : s->cpus[i].fd;
			pfd[i].events = POLLIN;
		}
		pfd[s->nr_cpus].fd = s->stop_fd;
		pfd[s->nr_cpus].events = POLLIN;
		/* on a timer: the events' wake-ups find nobody waiting, which costs the kernel nothing much */
		if ((timed ? poll(&pfd[s->nr_cpus], 1, DRAIN_PERIOD_HOOK_MS) :
			     poll(pfd, s->nr_cpus + 1, period)) < 0 && errno != EINTR)
			break;
		if (pfd[s->nr_cpus].revents)
			break;
		if (s->opts.hook_each_sample)
			timed = wake_rate(s, timed, &rate_start, &rate_wakes, &rate_seq);
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
		perf_drain_all(s);
		if (!eager && hk && hk->eager && hk->eager(hk->arg)) {
			eager = true;
			/* the events wake us for each sample already: no timer needed */
			if (!s->opts.hook_each_sample)
				period = DRAIN_PERIOD_HOOK_MS;
			boosted = boost(true);
		}
		if (boosted && boost_spent(&boost_wall, &boost_cpu))
			boosted = boost(false);
		if (time_mono_ns() - woke >= WAKE_PERIOD_NS ||
		    __atomic_load_n(&s->buffered, __ATOMIC_RELAXED) >= DRAIN_LIMIT / 16) {
			woke = time_mono_ns();
			if (write(s->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				break;
		}
	}
	free(pfd);
	return NULL;
}

/* Starts the drain thread with every signal blocked: they are the reader's. */
int perf_drainer_start(struct perf_sampler *s)
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

void perf_drainer_stop(struct perf_sampler *s)
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
