// SPDX-License-Identifier: MIT
/* proftool dump: every thread's current stack, once, and the process left as it was. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "report/report.h"
#include "sampler/sampler.h"
#include "symbolize/symbolize.h"

/* Bytes of stack copied per thread: as much as record takes at most, since there is only one sample. */
#define DEFAULT_STACK_SIZE 65528

static const char dump_usage[] =
	"usage: proftool dump [OPTIONS] PID\n"
	"\n"
	"Prints the current stack of every thread of the running process PID, once,\n"
	"innermost frame first, under a line with the thread's id, name and state\n"
	"(and the system call it waits in), and leaves the process running as it\n"
	"was, or stopped if it was. Each thread is stopped only while its registers\n"
	"and stack are copied; unwinding and symbolizing come afterwards.\n"
	"\n"
	"  --python auto|on|off show the Python functions of a CPython (3.11 to 3.13)\n"
	"                       process in its stacks (default auto; on is the same)\n"
	"  --kernel             also print each thread's kernel frames, from\n"
	"                       /proc/PID/task/TID/stack (readable by root only)\n"
	"  --stack-size BYTES   user stack copied per thread, a multiple of 8 from 1024\n"
	"                       to 65528 (default 65528)\n"
	"  -h, --help           show this help\n";

enum {
	OPT_PYTHON = 256,
	OPT_KERNEL,
	OPT_STACK_SIZE,
};

static const struct option dump_options[] = {
	{ "python", required_argument, NULL, OPT_PYTHON },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "stack-size", required_argument, NULL, OPT_STACK_SIZE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct dump_opts {
	pid_t pid;
	bool python;
	bool kernel;
	unsigned stack_size;
};

/* Returns 0, -1 after --help, or EXIT_USAGE after printing the error. */
static int parse_options(int argc, char **argv, struct dump_opts *o)
{
	unsigned long v;
	int c;

	o->python = true;
	o->stack_size = DEFAULT_STACK_SIZE;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", dump_options, NULL)) != -1) {
		switch (c) {
		case OPT_PYTHON:
			/* on is auto here: one read of a stopped process */
			if (strcmp(optarg, "auto") && strcmp(optarg, "on") && strcmp(optarg, "off"))
				return usage_error("dump", "--python takes auto, on or off, not '%s'", optarg);
			o->python = strcmp(optarg, "off") != 0;
			break;
		case OPT_KERNEL:
			o->kernel = true;
			break;
		case OPT_STACK_SIZE:
			if (!parse_ulong(optarg, 1024, 65528, &v) || v % 8)
				return usage_error("dump", "--stack-size must be a multiple of 8 from 1024 to 65528, not '%s'", optarg);
			o->stack_size = (unsigned)v;
			break;
		case 'h':
			fputs(dump_usage, stdout);
			return -1;
		case ':':
			return usage_error("dump", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("dump", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("dump", "no process id given");
	if (optind + 1 < argc)
		return usage_error("dump", "one process id only, not '%s'", argv[optind + 1]);
	if (!parse_ulong(argv[optind], 1, INT32_MAX, &v))
		return usage_error("dump", "'%s' is not a process id", argv[optind]);
	o->pid = (pid_t)v;
	return 0;
}

/* What /proc's state letters mean, as ps(1) explains them. */
static const char *state_name(char c)
{
	switch (c) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk wait";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	case 'W': return "waking";
	default: return "in an unknown state";
	}
}

/* The x86-64 system calls a thread is most often found waiting in (others go by number). */
#define SC(name) { SYS_##name, #name }
static const struct {
	long nr;
	const char *name;
} syscalls[] = {
	SC(read), SC(write), SC(open), SC(close), SC(poll), SC(ioctl), SC(pread64), SC(pwrite64),
	SC(readv), SC(writev), SC(select), SC(sched_yield), SC(msync), SC(pause), SC(nanosleep),
	SC(sendfile), SC(connect), SC(accept), SC(sendto), SC(recvfrom), SC(sendmsg), SC(recvmsg),
	SC(clone), SC(fork), SC(vfork), SC(execve), SC(wait4), SC(semop), SC(msgsnd), SC(msgrcv),
	SC(fcntl), SC(flock), SC(fsync), SC(fdatasync), SC(ftruncate), SC(rt_sigsuspend),
	SC(rt_sigtimedwait), SC(futex), SC(epoll_wait), SC(epoll_pwait), SC(epoll_pwait2),
	SC(pselect6), SC(ppoll), SC(waitid), SC(openat), SC(accept4), SC(clock_nanosleep),
	SC(io_getevents), SC(io_uring_enter), SC(semtimedop), SC(mq_timedsend),
	SC(mq_timedreceive), SC(splice), SC(sync), SC(syncfs), SC(sync_file_range),
	SC(copy_file_range), SC(preadv), SC(pwritev), SC(preadv2), SC(pwritev2), SC(recvmmsg),
	SC(sendmmsg), SC(getdents64), SC(mmap), SC(munmap), SC(mprotect), SC(madvise),
	SC(exit), SC(exit_group), SC(clone3), SC(futex_waitv),
};
#undef SC

static void print_syscall(FILE *out, long nr)
{
	for (size_t i = 0; i < ARRAY_SIZE(syscalls); i++) {
		if (syscalls[i].nr == nr) {
			fprintf(out, " in %s()", syscalls[i].name);
			return;
		}
	}
	fprintf(out, " in system call %ld", nr);
}

static void print_heading(FILE *out, struct report_display *d, const struct sampler_thread *t)
{
	fprintf(out, "Thread %" PRId32 " (%s) %s", t->tid, report_display_str(d, t->comm),
		state_name(t->state));
	if (t->syscall >= 0)
		print_syscall(out, t->syscall);
	/* the kernel frames, when printed, say where it waits */
	if (t->wchan[0] && !t->kernel_stack)
		fprintf(out, ", waiting in %s", t->wchan);
	if (t->outcome == SAMPLER_THREAD_NOT_STOPPED)
		fputs("; it did not stop within a second, so its user stack is unknown", out);
	fputc('\n', out);
}

/* One frame as gdb and py-spy print them: "function (file:line)", else "function (module)" or "module+0xOFF". */
static void print_frame(FILE *out, const struct profile *p, uint32_t node)
{
	const struct profile_loc *l = &p->locs[p->stacks[node].loc];
	const struct profile_func *f = &p->funcs[l->func];

	if (f->file && l->line)
		fprintf(out, "    %s (%s:%" PRIu32 ")\n", f->name, f->file, l->line);
	else if (f->file)
		fprintf(out, "    %s (%s)\n", f->name, f->file);
	else if (f->name[0] == '[' || !strncmp(f->name, f->module, strlen(f->module)))
		fprintf(out, "    %s\n", f->name);
	else
		fprintf(out, "    %s (%s)\n", f->name, f->module);
}

static void print_thread(FILE *out, struct report_display *d, const struct profile *p,
			 const struct sampler_thread *t)
{
	uint32_t leaf = PROFILE_NONE;

	print_heading(out, d, t);
	for (const char *k = t->kernel_stack; k && *k; k += strcspn(k, "\n") + 1)
		fprintf(out, "    [kernel] %.*s\n", (int)strcspn(k, "\n"), k);
	if (t->outcome != SAMPLER_THREAD_SAMPLED)
		return;
	for (size_t i = 0; i < p->nr_samples && leaf == PROFILE_NONE; i++)
		if (p->threads[p->samples[i].thread].tid == t->tid)
			leaf = p->samples[i].stack;
	if (leaf == PROFILE_NONE)
		fputs("    (no user frames: its stack could not be read)\n", out);
	for (uint32_t a = leaf; a != PROFILE_NONE; a = p->stacks[a].parent)
		print_frame(out, p, a);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* "N threads in X ms; each stopped for M ms (median), L ms at most": what the dump cost the process. */
static void print_cost(FILE *out, const struct sampler_snapshot *snap)
{
	size_t nr = sampler_snapshot_nr_threads(snap), shown = 0, nr_held = 0;
	uint64_t *held = xmalloc(st_mult(nr + 1, sizeof(*held)));

	for (size_t i = 0; i < nr; i++) {
		const struct sampler_thread *t = sampler_snapshot_thread(snap, i);

		if (t->outcome == SAMPLER_THREAD_SAMPLED)
			held[nr_held++] = t->stopped_ns;
		shown += t->outcome != SAMPLER_THREAD_GONE || t->state == 'Z';
	}
	fprintf(out, "%zu thread%s in %.2f ms", shown, shown == 1 ? "" : "s",
		sampler_snapshot_duration(snap) / 1e6);
	if (nr_held) {
		qsort(held, nr_held, sizeof(*held), u64_cmp);
		fprintf(out, "; each stopped for %.3f ms (median), %.3f ms at most",
			held[nr_held / 2] / 1e6, held[nr_held - 1] / 1e6);
	}
	fputc('\n', out);
	free(held);
}

/* Names print as reports print them: bytes that are not UTF-8 as \xNN (report_display_init). */
static void print_dump(FILE *out, const struct dump_opts *o, const struct profile *raw,
		       const struct sampler_snapshot *snap)
{
	char *cmdline = target_cmdline(o->pid);
	struct report_display d;
	const struct profile *p = report_display_init(&d, raw);

	fprintf(out, "Process %d: %s\n", (int)o->pid, report_display_str(&d, cmdline));
	free(cmdline);
	for (size_t i = 0; i < p->meta.nr_pythons; i++) {
		const struct profile_python *py = &p->meta.pythons[i];

		fprintf(out, "Python %s (%s)", py->version ? py->version : "of unknown version",
			py->interpreter);
		if (py->unsupported)
			fprintf(out, ": not read: %s; its stacks are native", py->unsupported);
		fputc('\n', out);
	}
	print_cost(out, snap);
	for (size_t i = 0; i < sampler_snapshot_nr_threads(snap); i++) {
		const struct sampler_thread *t = sampler_snapshot_thread(snap, i);

		/* a thread that exited meanwhile is no news; a zombie is */
		if (t->outcome == SAMPLER_THREAD_GONE && t->state != 'Z')
			continue;
		fputc('\n', out);
		print_thread(out, &d, p, t);
	}
	report_display_release(&d);
}

static int feed(const struct sampler_rec *rec, void *arg)
{
	return sym_session_add(arg, rec);
}

static int do_dump(const struct dump_opts *o)
{
	struct sym_python *py = NULL;
	struct sampler_snapshot *snap = NULL;
	struct sym_session *ss;
	struct profile *p;
	uint64_t start = time_mono_ns();
	char err[512];
	int ret;

	if ((ret = check_target(o->pid, TARGET_READ)))
		goto out;
	py = o->python ? sym_python_new() : NULL;
	snap = sampler_snapshot_take(&(struct sampler_snapshot_opts){
		.pid = o->pid,
		.stack_size = o->stack_size,
		.kernel_stack = o->kernel,
		.hook = py ? sym_python_hook(py) : NULL,
	}, err, sizeof(err));
	if (!snap) {
		print_error("%s", err);
		ret = EXIT_FAIL;
		goto out;
	}
	/* every thread runs again: the slow part can begin */
	ss = sym_session_new(&(struct sym_opts){ .start_ns = start, .weight_ns = 1000000, .python = py });
	sym_session_add_existing(ss, o->pid, o->pid);
	for (size_t i = 0; i < sampler_snapshot_nr_threads(snap); i++) {
		const struct sampler_thread *t = sampler_snapshot_thread(snap, i);

		if (t->tid != o->pid && t->outcome == SAMPLER_THREAD_SAMPLED)
			sym_session_add_existing(ss, o->pid, t->tid);
	}
	sampler_snapshot_read(snap, feed, ss);
	p = sym_session_finish(ss, NULL, NULL);
	print_dump(stdout, o, p, snap);
	profile_free(p);
	sym_session_free(ss);
	ret = EXIT_OK;
out:
	sampler_snapshot_free(snap);
	sym_python_free(py);
	return ret;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o = { 0 };
	int ret = parse_options(argc, argv, &o);

	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	return do_dump(&o);
}
