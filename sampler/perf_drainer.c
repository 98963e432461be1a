// SPDX-License-Identifier: MIT
/*
 * The perf_event backend's drain threads, which sweep the ring buffers into
 * the stage (perf_drain.c) as they fill, and wake the reader for it.
 */
#include "perf_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
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
 * With captures, a sample carries its Python stack and a process or thread
 * the program does not know wakes the drain thread at once (perf_bpf.c):
 * the timer mostly bounds how long records wait. What a capture does not
 * hold (a stack deeper than it copies, a code object's names) is read from
 * the process: the first such sample of a while waits for a sweep, up to
 * this long, and where what it met may soon be gone (frames past the copy,
 * a module's body) the hook's eagerness then sweeps every millisecond.
 * Each sweep costs a wake-up of the drain thread, and of the
 * reader after it: on a 2-CPU VM, 20 ms sweeps of a Python job came to
 * 11 us of proftool's CPU per sample, 100 ms to 9.5 (with -g dwarf, a
 * quarter of the buffer fills in about 30 ms there, and wakes it sooner).
 */
#define DRAIN_PERIOD_CAPTURE_MS 100
/*
 * A drain thread of its own CPU, woken by each sample, sweeps on a timer
 * for the other records only (mmaps, forks, exits: a sample follows them
 * soon where the CPU runs the target): while its sweeps find nothing, the
 * timer doubles up to this. The reader sweeps empty buffers itself
 * (perf_take_stage), so that an idle CPU holds up no delivery. On a
 * 64-CPU machine, 63 idle threads woken every 20 ms took more CPU than
 * reading the one Python process's stacks.
 */
#define DRAIN_IDLE_MAX_MS 640
/*
 * How often the reader (the main loop) is woken for what the sweeps
 * staged: it symbolizes in batches, and nothing it does needs records
 * sooner (live views refresh at most ten times a second). More staged than
 * a sixteenth of DRAIN_LIMIT wakes it at once.
 */
#define WAKE_PERIOD_NS 50000000ull
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

/* Whether the thread used more than its share of the CPU in the last window, at NOW. */
static bool boost_spent(uint64_t now, uint64_t *wall, uint64_t *cpu)
{
	struct timespec ts;
	uint64_t used;

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
 * Waits up to MS for one of D's ring buffers; false when the thread must
 * end. A buffer whose tasks are all gone leaves the set: it would
 * otherwise wake the thread forever.
 */
static bool drain_wait(struct drainer *d, struct epoll_event *ev, int ms)
{
	struct perf_sampler *s = d->s;
	int n = epoll_wait(d->epoll_fd, ev, (int)d->nr + 1, ms);

	if (n < 0)
		return errno == EINTR;
	for (int k = 0; k < n; k++) {
		uint32_t i = ev[k].data.u32;

		if (i == UINT32_MAX)
			return false;
		if (ev[k].events & (EPOLLHUP | EPOLLERR)) {
			s->cpus[i].hup = true;
			epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, s->cpus[i].fd, NULL);
		}
	}
	return true;
}

/* Whether the hook has anything to read yet. */
static bool hook_eager(struct perf_sampler *s)
{
	const struct sampler_hook *hk = s->opts.hook;

	return hk && hk->eager && hk->eager(hk->arg);
}

static void *drainer_main(void *arg)
{
	struct drainer *d = arg;
	struct perf_sampler *s = d->s;
	struct epoll_event *ev = xcalloc(d->nr + 1, sizeof(*ev));
	struct pollfd stop = { s->stop_fd, POLLIN, 0 };
	const uint64_t one = 1;
	const int quiet = s->capture ? DRAIN_PERIOD_CAPTURE_MS : DRAIN_PERIOD_MS;
	int period = quiet;
	uint64_t boost_wall = 0, boost_cpu = 0, woke = 0, now;
	size_t records;
	bool eager = false, boosted = false, boost_tried = false;

	if (d->pin >= 0 && d->pin < CPU_SETSIZE) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(d->pin, &set);
		/* where the CPU is not ours to run on (a cpuset), the thread runs anywhere */
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	for (;;) {
		/* a wake-up record's sample may have come just after the sweep that met it */
		if (!drain_wait(d, ev, __atomic_exchange_n(&s->woken, false, __ATOMIC_RELAXED) &&
					       period > DRAIN_PERIOD_HOOK_MS ? DRAIN_PERIOD_HOOK_MS : period))
			break;
		/*
		 * Past the bound the kernel drops samples, and counts them; the
		 * buffers stay readable, so wait for the reader without polling them.
		 */
		if (__atomic_load_n(&s->buffered, __ATOMIC_RELAXED) >= DRAIN_LIMIT) {
			if (poll(&stop, 1, DRAIN_PERIOD_MS) > 0)
				break;
			continue;
		}
		/* threads of their own CPUs sweep side by side, the hook's reads outside the lock */
		now = perf_drain_range(s, d->first, d->nr, s->nr_drainers > 1 ? &d->local : NULL, &records);
		if (s->opts.hook_each_sample && records)
			period = DRAIN_PERIOD_MS;
		else if (s->opts.hook_each_sample)
			period = period * 2 < DRAIN_IDLE_MAX_MS ? period * 2 : DRAIN_IDLE_MAX_MS;
		if (s->capture) {
			/*
			 * With captures the hook reads what the sample copied: a
			 * hurry only while it reads samples it has no whole
			 * capture of (a thread new to it, a deeper stack)
			 */
			bool want = hook_eager(s);

			if (want != eager)
				period = want ? DRAIN_PERIOD_HOOK_MS : quiet;
			/* once, as below: a thread that took too much CPU stays ordinary */
			if (want && !boost_tried)
				boosted = boost(true);
			boost_tried |= want;
			eager = want;
		} else if (!eager && hook_eager(s)) {
			eager = true;
			/* the events wake us for each sample already: no timer needed */
			if (!s->opts.hook_each_sample)
				period = DRAIN_PERIOD_HOOK_MS;
			boosted = boost(true);
		}
		if (boosted && boost_spent(now, &boost_wall, &boost_cpu))
			boosted = boost(false);
		if (now - woke >= WAKE_PERIOD_NS ||
		    __atomic_load_n(&s->buffered, __ATOMIC_RELAXED) >= DRAIN_LIMIT / 16) {
			woke = now;
			if (write(s->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
				break;
		}
	}
	free(ev);
	return NULL;
}

/* Sets up drain thread D for ring buffers [FIRST, FIRST + NR), pinned to CPU PIN (-1: anywhere). */
static int drainer_init(struct perf_sampler *s, struct drainer *d, unsigned first, unsigned nr, int pin)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };

	*d = (struct drainer){ .s = s, .first = first, .nr = nr, .pin = pin };
	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0 || epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, s->stop_fd, &ev) < 0)
		return -errno;
	for (unsigned i = first; i < first + nr; i++) {
		ev.data.u32 = i;
		if (!s->cpus[i].hup && s->cpus[i].fd >= 0 &&
		    epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, s->cpus[i].fd, &ev) < 0)
			return -errno;
	}
	return 0;
}

/*
 * Starts the drain threads with every signal blocked: they are the
 * reader's. One thread sweeps every buffer; but where each sample wakes
 * it to read the process at once (a Python command), one thread per CPU,
 * on that CPU: woken there, it runs while the sampled thread waits (at
 * once where it is real-time, else as the scheduler lets a waking thread
 * in first), so what it reads is what the sample saw. Woken on another
 * CPU, it reads a thread still running: of alt.py's samples in SHA-256
 * code, whose Python caller is `hashing` and never `pyloop` taking turns
 * with it in the same frame every 0.1 ms, 4-8 % were named `pyloop`, and
 * 33 % with two such processes sharing a thread swept on a timer.
 */
int perf_drainer_start(struct perf_sampler *s)
{
	bool per_cpu = s->opts.hook && s->opts.hook_each_sample && s->nr_cpus > 1;
	sigset_t all, old;
	int ret = 0;

	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0 || s->stop_fd < 0)
		return -errno;
	s->nr_drainers = per_cpu ? s->nr_cpus : 1;
	s->drainers = xcalloc(s->nr_drainers, sizeof(*s->drainers));
	for (unsigned k = 0; k < s->nr_drainers; k++)
		s->drainers[k].epoll_fd = -1;
	for (unsigned k = 0; k < s->nr_drainers && !ret; k++)
		ret = per_cpu ? drainer_init(s, &s->drainers[k], k, 1, s->cpus[k].cpu) :
				drainer_init(s, &s->drainers[k], 0, s->nr_cpus, -1);
	if (ret)
		return ret;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned k = 0; k < s->nr_drainers && !ret; k++) {
		ret = -pthread_create(&s->drainers[k].thread, NULL, drainer_main, &s->drainers[k]);
		s->drainers[k].running = !ret;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

void perf_drainer_stop(struct perf_sampler *s)
{
	const uint64_t one = 1;
	bool any = false;

	for (unsigned k = 0; k < s->nr_drainers; k++)
		any |= s->drainers[k].running;
	/* an eventfd takes a write unless its counter is full, which one write never makes it; all threads see it */
	if (any && write(s->stop_fd, &one, sizeof(one)) < 0) {
	}
	for (unsigned k = 0; k < s->nr_drainers; k++) {
		if (s->drainers[k].running)
			pthread_join(s->drainers[k].thread, NULL);
		s->drainers[k].running = false;
	}
}

void perf_drainers_free(struct perf_sampler *s)
{
	perf_drainer_stop(s);
	for (unsigned k = 0; k < s->nr_drainers; k++) {
		if (s->drainers[k].epoll_fd >= 0)
			close(s->drainers[k].epoll_fd);
		free(s->drainers[k].local.buf);
		free(s->drainers[k].local.pend);
	}
	free(s->drainers);
	s->drainers = NULL;
	s->nr_drainers = 0;
}
