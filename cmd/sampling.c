// SPDX-License-Identifier: MIT
/* The sampling loop, the status line and the profiles of a recording (whole, or in parts), shared by record and attach. */
#include "sampling.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"

/*
 * Samples held in memory before they move to a temporary file beside the
 * output (32 bytes each: 2 MiB, half a minute of two busy CPUs), so a
 * recording of hours takes no more memory than one of a minute.
 * PROFTOOL_SPILL_SAMPLES overrides it, for the tests.
 */
#define SPILL_CHUNK 65536

/*
 * Signals only set a flag; the loop acts on it (perf record's way).
 * SIGCHLD needs no flag: it only has to end the wait, and the loop asks
 * the sampler about the command on every pass.
 */
static volatile sig_atomic_t got_signal, got_signal_from_tty;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGCHLD)
		return;
	if (sig == SIGUSR1 || sig == SIGUSR2) {
		live_signal(sig);
		return;
	}
	/* the terminal's Ctrl-C, Ctrl-\\ and hang-up come from the kernel */
	got_signal_from_tty = si && si->si_code == SI_KERNEL;
	got_signal = sig;
}

void sampling_signals(sigset_t *waitmask)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2 };
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&block, sigs[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	/* blocked except while waiting in ppoll, so no signal is missed between checks */
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigdelset(waitmask, sigs[i]);
}

/* Lets file descriptors for every mapped library stay open until symbolization. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * A counting event's sample period: -c N, else every 100th event (a
 * fault-heavy job, a few hundred thousand faults a second, gets a thousand
 * or so samples a second; a light one still some), every major fault
 * (rare, and each costs a disk read). 0 for clock events, and for a
 * counting event sampled by frequency (-F: the kernel adapts the period,
 * each sample weighing its own).
 */
static uint64_t sample_period(const struct sampling_opts *o)
{
	if (!sampler_event_counts(o->event) || (o->freq_given && !o->period))
		return 0;
	if (o->period)
		return o->period;
	return o->event == SAMPLER_EVENT_MAJOR_FAULTS ? 1 : 100;
}

struct sampler *sampling_open(struct sampling_opts *o, struct sampler_opts *so)
{
	struct sampler *s;
	char err[512];

	raise_fd_limit();
	so->freq = o->freq;
	so->period = sample_period(o);
	so->event = o->event;
	so->callgraph = o->callgraph;
	so->stack_size = o->stack_size;
	so->user_only = o->user_only;
	so->wall = o->wall;
	if (o->python && !o->py)
		o->py = sym_python_new();
	so->hook = o->py ? sym_python_hook(o->py) : NULL;
	so->hook_each_sample = o->py && o->python_likely;
	so->no_capture = !o->python_capture;
	/* wall-clock samples of blocked threads are what ptrace sampling gives */
	so->backend = o->backend == BACKEND_PTRACE || o->wall ? SAMPLER_BACKEND_PTRACE :
		      SAMPLER_BACKEND_PERF;
	s = sampler_open(so, err, sizeof(err));
	if (!s && o->backend == BACKEND_AUTO && so->backend == SAMPLER_BACKEND_PERF &&
	    (errno == EACCES || errno == EPERM || errno == ENOSYS)) {
		/* said even with -q, which silences only the status line: the profile differs */
		print_error("notice: perf_event_open is not permitted here (%s); sampling with ptrace instead",
			      errno == ENOSYS ? "blocked by a seccomp filter or missing" : strerror(errno));
		so->backend = SAMPLER_BACKEND_PTRACE;
		s = sampler_open(so, err, sizeof(err));
	}
	if (!s) {
		print_error("%s", err);
		sym_python_free(o->py);
		o->py = NULL;
	}
	o->used = so->backend;
	return s;
}

void sampling_begin(struct sampling_run *r)
{
	const char *env = getenv("PROFTOOL_SPILL_SAMPLES"), *out = r->o->output ? r->o->output : "";
	const char *slash = strrchr(out, '/');
	char *dir = slash ? xstrdup(out) : xstrdup(".");
	size_t chunk = env && *env ? strtoul(env, NULL, 10) : SPILL_CHUNK;

	if (slash)
		dir[slash - out + (slash == out)] = '\0';
	r->tty = !r->o->quiet && isatty(STDERR_FILENO);
	r->status = -1;
	r->start_ns = time_mono_ns();
	r->start_real_ns = time_real_ns();
	r->syms = sym_session_new(&(struct sym_opts){ .start_ns = r->start_ns,
						     .weight_ns = (uint32_t)(1000000000ull / r->o->freq),
						     .spill_dir = dir, .spill_chunk = chunk,
						     .python = r->o->py, .rss = true,
						     .no_unwind_scan = !r->o->unwind_scan,
						     .weight_is_period = sampler_event_counts(r->o->event) });
	free(dir);
}

static int feed(const struct sampler_rec *rec, void *arg)
{
	struct sampling_run *r = arg;

	/* sample data as perf.data would hold it: the record, its stack copy and chain */
	if (rec->type == SAMPLER_REC_SAMPLE)
		live_count(&r->live, 64 + rec->sample.stack_size + 8ull * rec->sample.nr_chain +
			   rec->sample.extra_size);
	return sym_session_add(r->syms, rec);
}

static void status_line(struct sampling_run *r)
{
	uint64_t now = time_mono_ns();
	struct sampler_stats st;
	struct sym_counts c;

	if (!r->tty || now - r->last_status_ns < 250000000ull)
		return;
	r->last_status_ns = now;
	sampler_get_stats(r->sampler, &st);
	sym_session_counts(r->syms, &c);
	fprintf(stderr, "\rproftool: %s %.1f s, %" PRIu64 " samples, %" PRIu64
		" lost, %zu process%s, %zu thread%s\033[K", r->live.off ? "paused at" : "recording",
		(now - r->start_ns) / 1e9, st.samples, st.lost, c.processes,
		c.processes == 1 ? "" : "es", c.threads, c.threads == 1 ? "" : "s");
}

/* Whether the attached process has gone (or is a zombie waiting for its parent). */
static bool target_gone(pid_t pid)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, 0, buf, sizeof(buf));

	return !f || f[0] == 'Z' || f[0] == 'X';
}

/* How often the processes' resident memory is read: 4 Hz, about 10 us a process each time. */
#define RSS_PERIOD_NS 250000000ull

void sampling_loop(struct sampling_run *r, const sigset_t *waitmask)
{
	uint64_t duration = r->o->duration > 0 ? (uint64_t)(r->o->duration * 1e9) : 0;
	int interrupts = 0;

	if (!r->deadline_from)
		r->deadline_from = r->start_ns;
	while (r->status < 0) {
		int sig, ret = sampler_read(r->sampler, 100, waitmask, feed, r);

		if (ret < 0)
			break;
		if (r->child > 0) {
			int st;

			/*
			 * Asked every time, not only after SIGCHLD: ptrace reports every
			 * stop as SIGCHLD and the sampler may have taken the signal; it
			 * knows which status is the exit.
			 */
			if (sampler_reap(r->sampler, r->child, &st))
				r->status = st;
		}
		sig = got_signal;
		if (sig) {
			got_signal = 0;
			if (r->child <= 0) {
				r->interrupted = true;
				break;
			}
			/*
			 * The command decides what an interrupt means; we keep
			 * recording. A terminal signals its whole foreground group:
			 * a command in our group got this one already, and a second
			 * would make many programs (Python, shells) quit at once.
			 */
			if (!got_signal_from_tty || getpgid(r->child) != getpgrp())
				kill(r->child, sig);
			if (++interrupts >= 3)
				break;
		}
		if (r->target > 0 && target_gone(r->target))
			break;
		/* resident memory, a few times a second (not while paused: nothing is kept then) */
		if (time_mono_ns() >= r->next_rss_ns) {
			if (!r->live.user && !r->live.program)
				sym_session_read_rss(r->syms);
			r->next_rss_ns = time_mono_ns() + RSS_PERIOD_NS;
		}
		if (!live_poll(r))
			break;
		if (r->view && r->view->tick && !r->view->tick(r, r->view->arg))
			break;
		/* not while --delay holds the start back */
		if (duration && !r->live.delay_until && time_mono_ns() >= r->deadline_from + duration)
			break;
		status_line(r);
	}
	r->end_ns = time_mono_ns();
}

static void finish_progress(size_t done, size_t total, void *arg)
{
	struct sampling_run *r = arg;

	if (r->tty)
		fprintf(stderr, "\rproftool: symbolizing %zu/%zu addresses\033[K", done, total);
}

static char *uname_field(bool host)
{
	struct utsname u;

	if (uname(&u) < 0)
		return NULL;
	return xstrdup(host ? u.nodename : u.release);
}

/* The meta of the part of the recording from FROM to TO, in which the event counted COUNT. */
static void fill_meta(struct profile *p, const struct sampling_run *r, uint64_t from, uint64_t to,
		      uint64_t count, bool last)
{
	struct profile_meta *m = &p->meta;
	const struct sampling_opts *o = r->o;
	char *host;

	m->tool_version = xstrdup(PROFTOOL_VERSION);
	m->command = xstrdup(r->command);
	m->event = xstrdup(sampler_event_name(o->event));
	m->callgraph = xstrdup(o->callgraph == SAMPLER_CG_FP ? "fp" :
			       o->callgraph == SAMPLER_CG_DWARF ? "dwarf" : "none");
	m->mode = xstrdup(o->wall ? "wall" : "cpu");
	m->backend = xstrdup(o->used == SAMPLER_BACKEND_PTRACE ? "ptrace" : "perf");
	host = uname_field(true);
	profile_set_host(p, host);
	free(host);
	m->kernel = uname_field(false);
	/* a counting event: its period in events (0 by frequency), and no rate in Hz when fixed */
	m->freq = sample_period(o) ? 0 : o->freq;
	m->period_ns = sampler_event_counts(o->event) ? sample_period(o) : 1000000000ull / o->freq;
	m->start_real_ns = r->start_real_ns + (from - r->start_ns);
	m->duration_ns = to - from;
	/* clock events count nanoseconds of CPU time: the base of the achieved rate */
	m->cpu_time_ns = o->event <= SAMPLER_EVENT_TASK_CLOCK ? count : 0;
	if (last && r->status >= 0)
		m->exit_status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) :
				 WIFSIGNALED(r->status) ? 128 + WTERMSIG(r->status) : -1;
	/* one of a series: a snapshot, or the last file of a recording that wrote some */
	if (!last || r->live.index) {
		m->series = xstrdup(r->live.series);
		m->snapshot = last ? 0 : r->live.index + 1;
		m->series_offset_ns = from - r->start_ns;
	}
}

static void rebase_sample(struct profile_sample *s, void *arg)
{
	uint64_t by = *(const uint64_t *)arg;

	/* a sample delivered after the snapshot before it was cut belongs to its start */
	s->time_ns = s->time_ns > by ? s->time_ns - by : 0;
}

/*
 * The profile of the part of the recording since the last snapshot, up to
 * TO, in its own time (since the part began); LAST ends the session.
 */
static struct profile *build(struct sampling_run *r, uint64_t to, bool last,
			      const struct sampler_stats *st)
{
	uint64_t from = r->live.from, by = from - r->start_ns;
	struct profile *p;

	p = last ? sym_session_finish(r->syms, finish_progress, r) : sym_session_take(r->syms, NULL, NULL);
	if (by) {
		profile_map_samples(p, rebase_sample, &by);
		for (size_t i = 0; i < p->nr_procs; i++)
			for (size_t k = 0; k < p->procs[i].nr_rss; k++)
				p->procs[i].rss[k].time_ns = p->procs[i].rss[k].time_ns > by ?
							     p->procs[i].rss[k].time_ns - by : 0;
	}
	live_add_pauses(r, p, from, to);
	regions_finish(&r->regions, p, from, to);
	/* the user's spans (regions_finish drops those of the program's pauses too) */
	profile_drop_paused(p);
	/* a count read as less than before (an event gone with its task) gives no rate */
	fill_meta(p, r, from, to, st->count > r->live.count_from ? st->count - r->live.count_from : 0, last);
	r->live.from = to;
	r->live.count_from = st->count;
	r->live.bytes = 0;
	return p;
}

/* OUT.N, into PATH. */
static void snapshot_name(const struct sampling_run *r, unsigned n, char *path, size_t len)
{
	snprintf(path, len, "%s.%u", r->o->output, n);
}

struct profile *sampling_take(struct sampling_run *r)
{
	struct sampler_stats st;

	sampler_get_stats(r->sampler, &st);
	return build(r, time_mono_ns(), false, &st);
}

int sampling_snapshot(struct sampling_run *r, char *path, size_t n)
{
	uint64_t t0 = time_mono_ns();
	struct profile *p;
	char err[512];
	int ret = 0;

	/* a snapshot would take its part away from top's view */
	if (r->view) {
		print_error("top takes no snapshots; --record FILE writes the whole profile when it ends");
		return EXIT_FAIL;
	}
	p = sampling_take(r);
	snapshot_name(r, r->live.index + 1, path, n);
	if (profile_write(p, path, err, sizeof(err)) < 0) {
		print_error("%s; the snapshot was not saved (the recording goes on)", err);
		ret = EXIT_FAIL;
	} else {
		r->live.index++;
		if (r->o->live.keep && r->live.index > r->o->live.keep) {
			char old[4096];

			snapshot_name(r, r->live.index - (unsigned)r->o->live.keep, old, sizeof(old));
			unlink(old);
		}
		if (!r->o->quiet) {
			if (r->tty)
				fputs("\r\033[K", stderr);
			print_error("wrote %s: %zu samples, %.2f s (in %.0f ms)", path, profile_nr_samples(p),
			      p->meta.duration_ns / 1e9, (time_mono_ns() - t0) / 1e6);
		}
	}
	profile_free(p);
	return ret;
}

/*
 * Whether the perf map at PATH is one oneDNN wrote: every entry names one
 * of its generators, whose names all begin jit_ or _jit_ (libdnnl 2.6 has
 * 225 of them, and no other). A map with anything else in it (node's
 * LazyCompile:, CPython's py::) was asked for by the user and stays.
 */
static bool onednn_map(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	bool ours = f != NULL, any = false;

	while (ours && getline(&line, &cap, f) > 0) {
		unsigned long long start, size;
		int at = 0;

		any = true;
		if (sscanf(line, "%llx %llx %n", &start, &size, &at) != 2 || !at ||
		    (strncmp(line + at, "jit_", 4) && strncmp(line + at, "_jit_", 5)))
			ours = false;
	}
	free(line);
	if (f)
		fclose(f);
	return ours && any;
}

/*
 * Removes the perf maps that record's ONEDNN_JIT_PROFILE=2 made, once the
 * profile has read them: /tmp/perf-PID.map of a process of the recording,
 * ours, written since the recording began (a second's slack for the file
 * system's coarse clock), and oneDNN's alone. Anything else stays.
 */
static void remove_jit_maps(const struct profile *p, uint64_t since_ns)
{
	for (size_t i = 0; i < p->nr_procs; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)p->procs[i].pid);
		if (lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec + 1000000000ull <
		    since_ns || !onednn_map(path))
			continue;
		unlink(path);
	}
}

int sampling_finish(struct sampling_run *r)
{
	const struct sampling_opts *o = r->o;
	struct sampler_stats st;
	struct profile *p;
	char err[512];
	int ret = 0;

	sampler_disable(r->sampler);
	sampler_flush(r->sampler, feed, r);
	sampler_get_stats(r->sampler, &st);
	/* the events go before the slow part: an attached target runs free again */
	sampler_close(r->sampler);
	r->sampler = NULL;
	if (r->tty)
		fputs("\r\033[K", stderr);
	p = build(r, r->end_ns, true, &st);
	if (r->jit_maps)
		remove_jit_maps(p, r->start_real_ns);
	if (r->tty)
		fputs("\r\033[K", stderr);
	if (r->view && r->view->end) {
		ret = r->view->end(r, p, r->view->arg);
		p = NULL;
	} else if (profile_write(p, o->output, err, sizeof(err)) < 0) {
		print_error("%s; the profile was not saved (check the path and free space)", err);
		ret = EXIT_FAIL;
	} else if (!o->quiet) {
		double cpu = p->meta.cpu_time_ns / 1e9;
		size_t nr_procs, nr_threads, n = profile_nr_samples(p);
		uint64_t paused = 0;

		profile_count_sampled(p, &nr_procs, &nr_threads);
		if (!n && !r->live.index)
			print_error("warning: no samples were recorded (the target used %.3f s of CPU); "
			      "raise -F or profile a longer run", cpu);
		fprintf(stderr, "proftool: wrote %s: %zu sample%s, %" PRIu64 " lost, %zu process%s, %zu thread%s, %.2f s",
			o->output, n, n == 1 ? "" : "s", p->meta.lost, nr_procs,
			nr_procs == 1 ? "" : "es", nr_threads, nr_threads == 1 ? "" : "s",
			p->meta.duration_ns / 1e9);
		if (cpu > 0)
			fprintf(stderr, "; %.0f Hz achieved of %lu Hz requested", n / cpu, o->freq);
		if (p->nr_regions || p->nr_marks)
			fprintf(stderr, "; %zu region%s, %zu mark%s", p->nr_regions,
				p->nr_regions == 1 ? "" : "s", p->nr_marks, p->nr_marks == 1 ? "" : "s");
		for (size_t i = 0; i < p->nr_pauses; i++)
			paused += p->pauses[i].end_ns - p->pauses[i].start_ns;
		if (p->nr_pauses)
			fprintf(stderr, "; paused %zu time%s, %.1f s", p->nr_pauses,
				p->nr_pauses == 1 ? "" : "s", paused / 1e9);
		if (r->live.index)
			fprintf(stderr, "; after %u snapshot%s (%s.1 ...)", r->live.index,
				r->live.index == 1 ? "" : "s", o->output);
		fputc('\n', stderr);
	}
	profile_free(p);
	live_end(r);
	regions_release(&r->regions);
	sym_session_free(r->syms);
	r->syms = NULL;
	sym_python_free(o->py);
	return ret;
}
