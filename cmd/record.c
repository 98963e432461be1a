// SPDX-License-Identifier: MIT
/* proftool record: run a command under the sampler and write its profile. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "sampler/sampler.h"
#include "symbolize/symbolize.h"

static const char record_usage[] =
	"usage: proftool record [OPTIONS] -- COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND and samples it, every thread it starts and every child process\n"
	"it forks or execs, until COMMAND exits. Exits with COMMAND's status\n"
	"(128+N when it died of signal N).\n"
	"\n"
	"  -o FILE              write the profile to FILE (default proftool.data)\n"
	"  -F HZ                samples per second of CPU time per thread, 1..10000 (default 999)\n"
	"  -g dwarf|fp|none     unwind stacks with DWARF CFI from a copy of the user stack\n"
	"                       (default), follow frame pointers, or keep the sampled\n"
	"                       function only\n"
	"  --stack-size BYTES   user stack copied per sample with -g dwarf, a multiple of 8\n"
	"                       from 1024 to 65528 (default 32768)\n"
	"  --user-only          leave out kernel frames (time in the kernel still counts,\n"
	"                       under the user function that entered it)\n"
	"  -e EVENT             cpu-clock, task-clock, cycles, instructions (default cpu-clock)\n"
	"  --backend auto|perf|ptrace\n"
	"                       sampling mechanism (default auto = perf; ptrace is not available yet)\n"
	"  --mode cpu|wall      on-CPU samples (default); wall is not available yet\n"
	"  --duration SEC       stop profiling after SEC seconds; COMMAND keeps running\n"
	"  -q                   no status line and no summary on stderr\n"
	"  -h, --help           show this help\n";

enum {
	OPT_BACKEND = 256,
	OPT_MODE,
	OPT_DURATION,
	OPT_STACK_SIZE,
	OPT_USER_ONLY,
};

/*
 * Bytes of user stack copied per sample with -g dwarf. Measured on python3
 * running recursive code: 8 KiB completed 66 % of stacks, 16 KiB 82 %,
 * 32 KiB 91 %, and 64 KiB began to lose samples to full ring buffers.
 */
#define DEFAULT_STACK_SIZE 32768

static const struct option record_options[] = {
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
	{ "user-only", no_argument, NULL, OPT_USER_ONLY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct record_opts {
	const char *output;
	unsigned long freq;
	enum sampler_callgraph callgraph;
	enum sampler_event event;
	unsigned long stack_size; /* bytes of stack per sample with -g dwarf */
	double duration;        /* seconds, 0 = until the command exits */
	bool quiet;
	bool user_only;
	char **argv;            /* the command */
};

/* Signals only set flags; the loop acts on them (perf record's way). */
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t got_child;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		got_child = 1;
	else
		got_signal = sig;
}

static int parse_options(int argc, char **argv, struct record_opts *o)
{
	unsigned long v;
	int c;

	o->output = "proftool.data";
	o->stack_size = DEFAULT_STACK_SIZE;
	o->freq = 999;
	o->callgraph = SAMPLER_CG_DWARF;
	o->event = SAMPLER_EVENT_CPU_CLOCK;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:o:F:g:e:qh", record_options, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage_error("record", "-o needs a file name");
			o->output = optarg;
			break;
		case 'F':
			if (!parse_ulong(optarg, 1, 10000, &o->freq))
				return usage_error("record", "-F must be a whole number from 1 to 10000, not '%s'", optarg);
			break;
		case 'g':
			if (!strcmp(optarg, "fp")) {
				o->callgraph = SAMPLER_CG_FP;
			} else if (!strcmp(optarg, "none")) {
				o->callgraph = SAMPLER_CG_NONE;
			} else if (!strcmp(optarg, "dwarf")) {
				o->callgraph = SAMPLER_CG_DWARF;
			} else {
				return usage_error("record", "-g takes dwarf, fp or none, not '%s'", optarg);
			}
			break;
		case 'e':
			if (sampler_event_parse(optarg, &o->event) < 0)
				return usage_error("record", "unknown event '%s' (use cpu-clock, task-clock, cycles or instructions)", optarg);
			break;
		case OPT_BACKEND:
			if (!strcmp(optarg, "ptrace")) {
				error("--backend ptrace is not available in this version yet; use --backend perf");
				return EXIT_USAGE;
			}
			if (strcmp(optarg, "auto") && strcmp(optarg, "perf"))
				return usage_error("record", "--backend takes auto, perf or ptrace, not '%s'", optarg);
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "wall")) {
				error("--mode wall is not available in this version yet; use --mode cpu");
				return EXIT_USAGE;
			}
			if (strcmp(optarg, "cpu"))
				return usage_error("record", "--mode takes cpu or wall, not '%s'", optarg);
			break;
		case OPT_STACK_SIZE:
			if (!parse_ulong(optarg, 1024, 65528, &v) || v % 8)
				return usage_error("record", "--stack-size must be a multiple of 8 from 1024 to 65528, not '%s'", optarg);
			o->stack_size = v;
			break;
		case OPT_USER_ONLY:
			o->user_only = true;
			break;
		case OPT_DURATION:
			if (!parse_seconds(optarg, &o->duration))
				return usage_error("record", "--duration must be a positive number of seconds, not '%s'", optarg);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			fputs(record_usage, stdout);
			return -1;
		case ':':
			return usage_error("record", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("record", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("record", "no command given after '--'");
	o->argv = argv + optind;
	return 0;
}

/* The command as the user would type it, for the report header. */
static char *join_argv(char **argv)
{
	size_t len = 1;
	char *s, *p;

	for (char **a = argv; *a; a++)
		len += strlen(*a) * 4 + 3;
	s = p = xmalloc(len);
	*p = '\0';
	for (char **a = argv; *a; a++) {
		bool quote = !**a || strpbrk(*a, " \t\n'\"\\$`") != NULL;

		if (a != argv)
			*p++ = ' ';
		if (!quote) {
			p = stpcpy(p, *a);
			continue;
		}
		*p++ = '\'';
		for (const char *c = *a; *c; c++) {
			if (*c == '\'')
				p = stpcpy(p, "'\\''");
			else
				*p++ = *c;
		}
		*p++ = '\'';
		*p = '\0';
	}
	return s;
}

struct recording {
	const struct record_opts *o;
	struct sampler *sampler;
	struct sym_session *syms;
	struct sampler_child child;
	uint64_t start_ns, start_real_ns, end_ns;
	int status;             /* wait status of the command, -1 while it runs */
	bool tty;
	uint64_t last_status_ns;
};

static int feed(const struct sampler_rec *rec, void *arg)
{
	return sym_session_add(arg, rec);
}

static void status_line(struct recording *r, bool force)
{
	uint64_t now = time_mono_ns();
	struct sampler_stats st;
	struct sym_counts c;

	if (!r->tty || (!force && now - r->last_status_ns < 250000000ull))
		return;
	r->last_status_ns = now;
	sampler_get_stats(r->sampler, &st);
	sym_session_counts(r->syms, &c);
	fprintf(stderr, "\rproftool: recording %.1f s, %" PRIu64 " samples, %" PRIu64
		" lost, %zu process%s, %zu thread%s\033[K", (now - r->start_ns) / 1e9, st.samples,
		st.lost, c.processes, c.processes == 1 ? "" : "es", c.threads, c.threads == 1 ? "" : "s");
}

static void finish_progress(size_t done, size_t total, void *arg)
{
	struct recording *r = arg;

	if (r->tty)
		fprintf(stderr, "\rproftool: symbolizing %zu/%zu addresses\033[K", done, total);
}

/* Runs the sampling loop until the command exits, --duration passes, or a third interrupt. */
static void record_loop(struct recording *r, const sigset_t *waitmask)
{
	uint64_t deadline = r->o->duration > 0 ? r->start_ns + (uint64_t)(r->o->duration * 1e9) : 0;
	int interrupts = 0;

	while (r->status < 0) {
		int sig, ret = sampler_read(r->sampler, 100, waitmask, feed, r->syms);

		if (ret < 0)
			break;
		if (got_child) {
			pid_t w;
			int st;

			got_child = 0;
			while ((w = waitpid(r->child.pid, &st, WNOHANG)) < 0 && errno == EINTR)
				;
			if (w == r->child.pid)
				r->status = st;
		}
		sig = got_signal;
		if (sig) {
			got_signal = 0;
			/* the command decides what an interrupt means; we keep recording */
			kill(r->child.pid, sig);
			if (++interrupts >= 3)
				break;
		}
		if (deadline && time_mono_ns() >= deadline)
			break;
		status_line(r, false);
	}
	r->end_ns = time_mono_ns();
}

static char *uname_field(bool host)
{
	struct utsname u;

	if (uname(&u) < 0)
		return NULL;
	return xstrdup(host ? u.nodename : u.release);
}

static void fill_meta(struct profile *p, const struct recording *r, uint64_t count)
{
	struct profile_meta *m = &p->meta;

	m->tool_version = xstrdup(PROFTOOL_VERSION);
	m->command = join_argv(r->o->argv);
	m->event = xstrdup(sampler_event_name(r->o->event));
	m->callgraph = xstrdup(r->o->callgraph == SAMPLER_CG_FP ? "fp" :
			       r->o->callgraph == SAMPLER_CG_DWARF ? "dwarf" : "none");
	m->mode = xstrdup("cpu");
	m->backend = xstrdup("perf");
	m->host = uname_field(true);
	m->kernel = uname_field(false);
	m->freq = r->o->freq;
	m->period_ns = 1000000000ull / r->o->freq;
	m->start_real_ns = r->start_real_ns;
	m->duration_ns = r->end_ns - r->start_ns;
	/* clock events count nanoseconds of CPU time: the base of the achieved rate */
	m->cpu_time_ns = r->o->event <= SAMPLER_EVENT_TASK_CLOCK ? count : 0;
	if (r->status >= 0)
		m->exit_status = WIFEXITED(r->status) ? WEXITSTATUS(r->status) :
				 WIFSIGNALED(r->status) ? 128 + WTERMSIG(r->status) : -1;
}

static int exit_status_of(int status)
{
	if (status < 0)
		return EXIT_OK;         /* --duration: the command is still running */
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_FAIL;
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

static int do_record(const struct record_opts *o)
{
	struct sampler_opts so = {
		.freq = o->freq,
		.event = o->event,
		.callgraph = o->callgraph,
		.stack_size = o->stack_size,
		.user_only = o->user_only,
		.enable_on_exec = true,
	};
	struct recording r = { .o = o, .status = -1, .child = { -1, -1, -1 } };
	struct atomic_file af;
	struct sigaction sa;
	sigset_t block, waitmask;
	struct sampler_stats st;
	struct profile *p = NULL;
	char err[512];
	int ret, exit_code = EXIT_FAIL;

	r.tty = !o->quiet && isatty(STDERR_FILENO);
	raise_fd_limit();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* blocked except while waiting in ppoll, so no signal is missed between checks */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGHUP);
	sigdelset(&waitmask, SIGCHLD);

	/* find out now, not after a long run, that the profile cannot be written */
	ret = atomic_open(&af, o->output, 0644);
	if (ret < 0) {
		error("cannot create '%s': %s", o->output, strerror(-ret));
		return EXIT_FAIL;
	}
	atomic_abort(&af);

	ret = sampler_spawn(&r.child, o->argv);
	if (ret < 0) {
		error("cannot start '%s': %s", o->argv[0], strerror(-ret));
		return EXIT_FAIL;
	}
	so.pid = r.child.pid;
	r.sampler = sampler_open(&so, err, sizeof(err));
	if (!r.sampler) {
		sampler_spawn_abort(&r.child);
		error("%s", err);
		return EXIT_FAIL;
	}
	r.start_ns = time_mono_ns();
	r.start_real_ns = time_real_ns();
	r.syms = sym_session_new(&(struct sym_opts){ .start_ns = r.start_ns,
						    .weight_ns = 1000000000ull / o->freq });
	ret = sampler_spawn_start(&r.child);
	if (ret < 0) {
		while (waitpid(r.child.pid, NULL, 0) < 0 && errno == EINTR)
			;
		error("cannot run '%s': %s", o->argv[0], strerror(-ret));
		exit_code = EXIT_NOT_RUN;
		goto out;
	}

	record_loop(&r, &waitmask);
	sampler_disable(r.sampler);
	sampler_flush(r.sampler, feed, r.syms);
	sampler_get_stats(r.sampler, &st);
	if (r.tty)
		fputs("\r\033[K", stderr);

	p = sym_session_finish(r.syms, finish_progress, &r);
	if (r.tty)
		fputs("\r\033[K", stderr);
	fill_meta(p, &r, st.count);
	exit_code = exit_status_of(r.status);
	ret = profile_write(p, o->output, err, sizeof(err));
	if (ret < 0) {
		error("%s; the profile was not saved (check the path and free space)", err);
		if (!exit_code)
			exit_code = EXIT_FAIL;
		goto out;
	}
	if (!o->quiet) {
		double cpu = p->meta.cpu_time_ns / 1e9;
		size_t nr_procs, nr_threads;

		profile_count_sampled(p, &nr_procs, &nr_threads);
		if (!p->nr_samples)
			error("warning: no samples were recorded (the command used %.3f s of CPU); "
			      "raise -F or profile a longer run", cpu);
		fprintf(stderr, "proftool: wrote %s: %zu sample%s, %" PRIu64 " lost, %zu process%s, %zu thread%s, %.2f s",
			o->output, p->nr_samples, p->nr_samples == 1 ? "" : "s", p->meta.lost, nr_procs,
			nr_procs == 1 ? "" : "es", nr_threads, nr_threads == 1 ? "" : "s",
			p->meta.duration_ns / 1e9);
		if (cpu > 0)
			fprintf(stderr, "; %.0f Hz achieved of %lu Hz requested", p->nr_samples / cpu, o->freq);
		fputc('\n', stderr);
	}
out:
	profile_free(p);
	sym_session_free(r.syms);
	sampler_close(r.sampler);
	return exit_code;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	int ret = parse_options(argc, argv, &o);

	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	return do_record(&o);
}
