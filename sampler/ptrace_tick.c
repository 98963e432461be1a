// SPDX-License-Identifier: MIT
/* The ptrace backend: sampling, on a tick, by interrupting threads and copying their registers and stack. */
#include "ptrace_int.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/* Descriptors kept open for schedstat: the rest of a big process's threads open and close. */
#define SCHEDSTAT_FDS 256

/*
 * Nanoseconds T has run on a CPU (/proc/.../schedstat), or 0 when unknown.
 * Read on every tick of every task, so the file stays open for the first
 * SCHEDSTAT_FDS tasks (a pread costs a tenth of an fopen).
 */
static uint64_t task_cpu_ns(struct ptrace_sampler *s, struct task *t)
{
	char buf[96];
	int fd = t->schedstat_fd;
	ssize_t n;

	if (fd < 0) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/schedstat", (int)t->pid, (int)t->tid);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (t->schedstat_fd < 0 && s->nr_schedstat_fds < SCHEDSTAT_FDS) {
		t->schedstat_fd = fd;
		s->nr_schedstat_fds++;
	} else if (t->schedstat_fd < 0) {
		close(fd);
	}
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* ---- sampling ---- */

void sampler_perf_regs(const struct user_regs_struct *u, uint64_t *r)
{
	r[0] = u->rax; r[1] = u->rbx; r[2] = u->rcx; r[3] = u->rdx;
	r[4] = u->rsi; r[5] = u->rdi; r[6] = u->rbp; r[7] = u->rsp;
	r[8] = u->rip; r[9] = u->eflags; r[10] = u->cs; r[11] = u->ss;
	r[12] = u->r8; r[13] = u->r9; r[14] = u->r10; r[15] = u->r11;
	r[16] = u->r12; r[17] = u->r13; r[18] = u->r14; r[19] = u->r15;
}

uint64_t sampler_read_stack(pid_t pid, uint64_t sp, uint8_t *buf, uint64_t size)
{
	struct iovec local = { buf, size }, remote[20];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), at = sp, end = sp + size;
	int n = 0;
	ssize_t got;

	/* one iovec per page: process_vm_readv never splits an iovec, so it stops at a hole */
	while (at < end && n < 20) {
		uint64_t next = (at & ~(page - 1)) + page;

		if (next > end)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)at;
		remote[n].iov_len = next - at;
		n++;
		at = next;
	}
	got = process_vm_readv(pid, &local, 1, remote, n, 0);
	return got > 0 ? (uint64_t)got : 0;
}

long sampler_cut_syscall(const struct user_regs_struct *regs)
{
	long long nr = (long long)regs->orig_rax, ret = (long long)regs->rax;

	/* ERESTARTSYS 512, ERESTARTNOINTR 513, ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516 */
	if (nr >= 0 && (ret == -EINTR || (ret <= -512 && ret >= -516)))
		return (long)nr;
	return -1;
}

/* System calls whose only work is to wait, on x86-64. */
static bool waiting_syscall(long long nr)
{
	switch (nr) {
	case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_futex: case SYS_poll:
	case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_epoll_wait:
	case SYS_epoll_pwait: case SYS_wait4: case SYS_waitid: case SYS_pause:
	case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait: case SYS_semtimedop:
		return true;
	default:
		return false;
	}
}

/*
 * Whether a thread stopped with REGS was waiting rather than running: its
 * stop cut a system call short (a sleep, a poll, a futex, a read of a pipe),
 * which will be restarted or fail with EINTR; or it came as a wait-only
 * system call returned, the thread woken but not yet back in its own code
 * (the tracer's tick and the thread's timer often expire together). A
 * system call at work in the kernel finishes before the stop is taken,
 * with its own result, and counts as running.
 */
static bool stopped_waiting(const struct user_regs_struct *regs)
{
	long long nr = (long long)regs->orig_rax;

	return sampler_cut_syscall(regs) >= 0 || (nr >= 0 && waiting_syscall(nr));
}

/*
 * Reads the sample of TID, which is in its interrupt stop, and lets it go.
 * STATE is what the thread was doing just before it was interrupted.
 */
void pt_take_sample(struct ptrace_sampler *s, pid_t tid, enum sampler_state state,
			uint32_t repeat)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	uint64_t perf_regs[20], ip;
	struct sampler_rec r;
	struct task *t = pt_find_task(s, tid);

	if (t)
		t->asked = false;
	if (!t || ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0) {
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	if (!s->opts.wall && stopped_waiting(&regs)) {
		/* on-CPU mode: it was waiting, not running; its time is sampled when it runs */
		t->credit_ns += (int64_t)(s->period_ns * repeat);
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	sampler_perf_regs(&regs, perf_regs);
	ip = regs.rip;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_SAMPLE;
	r.pid = t->pid;
	r.tid = tid;
	r.sample.ip = ip;
	r.sample.user = true;
	r.sample.chain = &ip;
	r.sample.nr_chain = 1;
	r.sample.period = s->period_ns;
	r.sample.state = state;
	if (s->opts.callgraph != SAMPLER_CG_NONE) {
		/* frame pointers or not, the unwinder does better from registers and stack */
		r.sample.regs = perf_regs;
		r.sample.regs_mask = SAMPLER_PERF_REGS_MASK;
		r.sample.stack = s->stack;
		r.sample.stack_size = sampler_read_stack(t->pid, regs.rsp, s->stack, s->opts.stack_size);
	}
	if (s->opts.hook && s->opts.hook->sample) {
		/* the hook reads what it needs while the thread cannot change it */
		r.sample.extra = s->extra;
		r.sample.extra_size = s->opts.hook->sample(s->opts.hook->arg, t->pid, tid, NULL, NULL, s->extra,
							   s->opts.hook->cap);
	}
	/* registers and stack are copied: let the thread go before the slow part */
	ptrace(PTRACE_CONT, tid, 0, 0);
	for (uint32_t i = 0; i < repeat; i++)
		pt_emit(s, &r);
}

bool pt_is_interrupt_stop(int status)
{
	return WIFSTOPPED(status) && (status >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(status) == SIGTRAP;
}

/*
 * Interrupts every thread in TIDS at once and samples each as its stop
 * arrives: a runnable thread stops only when it next gets a CPU, so doing
 * them one by one would add up those waits. A thread that has not stopped
 * after WAIT_LIMIT_NS is left "late" and sampled when its stop comes.
 */
#define WAIT_LIMIT_NS 20000000ull
/* Ticks a late sample may stand for (wall mode); past them they count as lost. */
#define LATE_TICKS_MAX 1000
/* How long a late thread's stop is waited for before the thread is sampled afresh. */
#define LATE_EXPIRE_NS 200000000ull

static void sample_tasks(struct ptrace_sampler *s, pid_t *tids, size_t n)
{
	/*
	 * Wall mode samples every thread on every tick, runnable ones too, which
	 * on a busy machine may take long to stop: waiting for them would miss
	 * the next ticks, and miss them most while threads compute. So it waits
	 * a period at most, and a late thread is sampled when its stop comes,
	 * for the ticks it missed as well (struct task). On-CPU mode samples
	 * running threads, which stop at once, and waits the full limit.
	 */
	uint64_t limit = s->opts.wall && s->period_ns < WAIT_LIMIT_NS ? s->period_ns : WAIT_LIMIT_NS;
	uint64_t deadline = time_mono_ns() + limit;
	struct timespec nap = { 0, 0 };
	enum sampler_state *states = xmalloc(st_mult(n + 1, sizeof(*states)));
	size_t left = 0;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);

	/*
	 * Wall mode: whether each thread runs or waits, read from /proc just
	 * before it is interrupted (the stop itself makes it look stopped).
	 */
	for (size_t i = 0; i < n; i++) {
		struct task *t = s->opts.wall ? pt_find_task(s, tids[i]) : NULL;
		char st = t ? proc_task_state(t->pid, t->tid, NULL) : 0;

		if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) == 0) {
			if (t || (t = pt_find_task(s, tids[i])))
				t->asked = true;
			states[left] = !st ? SAMPLER_STATE_UNKNOWN : st == 'R' ? SAMPLER_STATE_RUNNING :
				       SAMPLER_STATE_WAITING;
			tids[left++] = tids[i];
		}
	}
	while (left) {
		struct rusage ru;
		int status;
		pid_t w = wait4(-1, &status, WNOHANG | __WALL, &ru);
		struct task *t;
		bool gone;
		size_t k;

		if (w <= 0) {
			uint64_t now = time_mono_ns();

			if ((w < 0 && errno != EINTR) || now > deadline)
				break;
			/*
			 * Each stop arrives as SIGCHLD, which the caller keeps blocked:
			 * wait for it rather than poll, since the thread stays stopped
			 * for as long as we dawdle here.
			 */
			nap.tv_nsec = deadline - now < 1000000 ? (long)(deadline - now) : 1000000;
			sigtimedwait(&chld, NULL, &nap);
			continue;
		}
		for (k = 0; k < left && tids[k] != w; k++)
			;
		if (k < left && pt_is_interrupt_stop(status)) {
			enum sampler_state st = states[k];

			tids[k] = tids[--left];
			states[k] = states[left];
			pt_take_sample(s, w, st, 1);
			continue;
		}
		if (!pt_find_task(s, w) && w != s->root && (status >> 16) == PTRACE_EVENT_STOP)
			pt_add_early_task(s, w);
		gone = pt_handle_status(s, w, status, &ru);
		if (k < left && (gone || !(t = pt_find_task(s, w)) || !t->asked)) {
			/* gone, or an interrupt that cannot be asked again */
			tids[k] = tids[--left];
			states[k] = states[left];
		}
	}
	/* threads that did not stop in time (a busy machine): sampled when they do */
	for (size_t k = 0; k < left; k++) {
		struct task *t = pt_find_task(s, tids[k]);

		if (t) {
			t->late = true;
			t->late_state = states[k];
			t->late_ticks = 0;
			t->late_since_ns = time_mono_ns();
		}
	}
	free(states);
}

/* A pseudo-random number in (0, 1). */
static double next_unit(struct ptrace_sampler *s)
{
	s->rng = s->rng * 1664525u + 1013904223u;
	return ((s->rng >> 8) + 0.5) / 16777216.0;
}

/*
 * Ticks are stratified: wall time is cut into stretches of equal length, a
 * period in wall mode and half a period in on-CPU mode, and each holds one
 * tick at a moment drawn uniformly from it. So no periodic work can alias
 * with the samples (a tick is as likely anywhere in its stretch), and a
 * function's share of the samples varies from run to run as little as
 * it can with a tick a stretch. Exponential intervals, used before, make
 * a Poisson stream of samples, which spreads more than twice as wide:
 * tests/workloads/py/split.py's 50 % share (about 2,700 samples) had a
 * standard deviation of 1.45 points over 25 runs with them, 0.57 over 12
 * with these.
 */
uint64_t pt_plan_tick(struct ptrace_sampler *s, uint64_t now)
{
	uint64_t len = s->opts.wall ? s->period_ns : s->period_ns / 2, behind = 0;

	if (!s->stratum_ns) {
		s->stratum_ns = now;
	} else {
		s->stratum_ns += len;
		/* a tracer short of CPU: start afresh rather than tick in a burst */
		if (s->stratum_ns + len + 4 * s->period_ns < now) {
			behind = (now - s->stratum_ns) / s->period_ns;
			s->stratum_ns = now;
		}
	}
	s->next_tick_ns = s->stratum_ns + (uint64_t)(next_unit(s) * (double)len);
	return behind;
}

/* On-CPU mode: periods of running time a thread may be ahead of its samples. */
#define CARRY_MAX 8
/*
 * On-CPU mode: periods a thread's running time may lead its samples before
 * the tick of a pair it did not pick samples it too, and lag them before the
 * tick it picked does not. Between its stops schedstat steps at the
 * scheduler's tick (4 ms at HZ=250), so a thread sampled on every pick is
 * seen from a period behind to one ahead.
 */
#define CREDIT_EXTRA 2
#define CREDIT_SKIP 4

void pt_tick(struct ptrace_sampler *s)
{
	uint64_t now = time_mono_ns(), missed = 0;
	size_t n = s->nr_tasks, nr_due = 0;
	pid_t *tids, *due;

	/* copies: sampling may add and remove tasks */
	tids = xmalloc(st_mult(n + 1, sizeof(*tids)));
	due = xmalloc(st_mult(n + 1, sizeof(*due)));
	for (size_t i = 0; i < n; i++)
		tids[i] = s->tasks[i].tid;
	for (size_t i = 0; i < n; i++) {
		struct task *t = pt_find_task(s, tids[i]);
		struct proc_maps *pm;
		char st;

		if (!t)
			continue;
		if (t->late && now - t->late_since_ns > LATE_EXPIRE_NS) {
			/*
			 * The stop never came (a stop that took the interrupt's place
			 * is answered by asking again, see struct task): a safety net,
			 * so that a thread is never left unsampled for good.
			 */
			t->late = t->asked = false;
			missed += 1 + t->late_ticks;
		}
		if (t->late) {
			/* its last interrupt is still pending: this tick is in the sample it will give */
			if (s->opts.wall && t->late_ticks < LATE_TICKS_MAX)
				t->late_ticks++;
			else if (s->opts.wall)
				missed++;
			continue;
		}
		if (t->group_stopped) {
			/* SIGCONT ends a group-stop without always telling the tracer */
			st = proc_task_state(t->pid, t->tid, NULL);
			if (st == 'T' || st == 't')
				continue;
			t->group_stopped = false;
		}
		/*
		 * There are no comm events either: a new thread usually names
		 * itself right away and may be gone within 100 ms, so young
		 * tasks are checked on every tick.
		 */
		if (now - t->comm_checked_ns > MAPS_REFRESH_NS || now - t->born_ns < STARTUP_NS)
			pt_check_comm(s, t, false);
		/*
		 * There are no mmap events to follow: re-read the maps on every
		 * tick while the dynamic loader is at work, then every 100 ms.
		 */
		pm = pt_maps_of(s, t->pid);
		if (now - pm->read_ns > MAPS_REFRESH_NS || now - pm->exec_ns < STARTUP_NS)
			pt_refresh_maps(s, t->pid, false);
		/*
		 * On-CPU mode: ticks come in pairs, one in each half of a period
		 * (pt_plan_tick()), and a thread picks one tick of each pair at
		 * random: when that tick finds it running it is sampled, so a
		 * thread gets a sample per period it runs, taken at a moment that
		 * depends neither on what it did before nor on the scheduler's
		 * tick: a loop of short bursts and naps gets its bursts' split. A
		 * thread that sleeps is not stopped: it would be sampled where it
		 * sleeps. What it ran (schedstat) less what it was sampled for
		 * corrects the count, so the samples keep up with its CPU time
		 * exactly, like perf's cpu-clock: a thread far ahead is sampled
		 * on the other tick too, and one far behind (a runnable thread
		 * waiting for a CPU counts as running here) skips its pick.
		 * Running time no tick could sample (a tracer short of CPU,
		 * bursts too short to be seen) goes over the cap and is counted
		 * lost rather than paid later with one stack.
		 *
		 * The odds are not steered by what schedstat says: it steps at
		 * the scheduler's tick, and samples drawn more readily just after
		 * each step (as they were) sample a loop whose rounds last as long
		 * as a tick at the same few places.
		 */
		if (!s->opts.wall) {
			uint64_t cpu = task_cpu_ns(s, t);
			int64_t period = (int64_t)s->period_ns;
			bool picked;

			t->credit_ns += cpu > t->cpu_ns && t->cpu_ns ? (int64_t)(cpu - t->cpu_ns) : 0;
			t->cpu_ns = cpu;
			if (t->credit_ns >= CARRY_MAX * period) {
				uint64_t over = (uint64_t)(t->credit_ns / period - (CARRY_MAX - 1));

				missed += over;
				t->credit_ns -= (int64_t)over * period;
			}
			/* (a thread not looked at on a pair's first tick keeps its last pick) */
			if (!(s->nr_ticks & 1))
				t->pick_second = next_unit(s) < 0.5;
			picked = t->pick_second == (s->nr_ticks & 1);
			if (picked ? t->credit_ns <= -CREDIT_SKIP * period : t->credit_ns < CREDIT_EXTRA * period)
				continue;
			if (proc_task_state(t->pid, t->tid, NULL) != 'R')
				continue;
			t->credit_ns -= period;
		}
		due[nr_due++] = tids[i];
	}
	pt_emit_lost(s, missed + s->late_lost);
	s->late_lost = 0;
	s->nr_ticks++;
	if (nr_due)
		sample_tasks(s, due, nr_due);
	free(tids);
	free(due);
}
