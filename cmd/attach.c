// SPDX-License-Identifier: MIT
/* proftool attach: profile a process that is already running, and leave it as it was. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "sampler/sampler.h"
#include "sampling.h"
#include "symbolize/symbolize.h"

static const char attach_head[] =
	"usage: proftool attach [OPTIONS] PID\n"
	"\n"
	"Profiles the running process PID: all its threads, and the threads and child\n"
	"processes it creates afterwards, until it exits, --duration passes or Ctrl-C.\n"
	"The process is left running exactly as it was.\n"
	"\n";
static const char attach_tail[] =
	"  --duration SEC       stop after SEC seconds\n"
	"  -q                   no status line and no summary on stderr\n"
	"  -h, --help           show this help\n";

static const struct option attach_options[] = {
	SAMPLING_LONGOPTS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_options(int argc, char **argv, struct sampling_opts *o, pid_t *pid)
{
	unsigned long v;
	int c, ret;

	sampling_opts_init(o);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":" SAMPLING_SHORTOPTS "h", attach_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("%s%s%s", attach_head, sampling_usage, attach_tail);
			return -1;
		case ':':
			return usage_error("attach", "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage_error("attach", "unknown option '%s'", argv[optind - 1]);
		default:
			ret = sampling_parse_opt(c, optarg, o, "attach");
			if (ret)
				return ret == 1 ? usage_error("attach", "unknown option '%s'", argv[optind - 1]) : ret;
		}
	}
	if ((ret = sampling_validate(o, "attach")))
		return ret;
	if (optind >= argc)
		return usage_error("attach", "no process id given");
	if (optind + 1 < argc)
		return usage_error("attach", "one process id only, not '%s'", argv[optind + 1]);
	if (!parse_ulong(argv[optind], 1, INT32_MAX, &v))
		return usage_error("attach", "'%s' is not a process id", argv[optind]);
	*pid = v;
	return 0;
}

static size_t list_tasks(pid_t pid, pid_t **out)
{
	char path[64];
	struct dirent *de;
	pid_t *tids = NULL;
	size_t nr = 0, alloc = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		unsigned long v;

		if (!parse_ulong(de->d_name, 1, INT32_MAX, &v))
			continue;
		ALLOC_GROW(tids, nr + 1, alloc);
		tids[nr++] = v;
	}
	closedir(d);
	/* the thread-group leader first: its events own the ring buffers */
	for (size_t i = 0; i < nr; i++) {
		if (tids[i] == pid) {
			tids[i] = tids[0];
			tids[0] = pid;
		}
	}
	*out = tids;
	return nr;
}

/* Waits (up to about 2 s) until every listed thread has stopped. */
static bool wait_stopped(pid_t pid, const pid_t *tids, size_t nr)
{
	for (int round = 0; round < 400; round++) {
		size_t stopped = 0;

		for (size_t i = 0; i < nr; i++) {
			char st = proc_task_state(pid, tids[i], NULL);

			stopped += st == 'T' || st == 't' || st == 0 || st == 'Z' || st == 'X';
		}
		if (stopped == nr)
			return true;
		usleep(5000);
	}
	return false;
}

int attach_process(struct sampling_opts *o, pid_t pid, const struct sampling_view *view)
{
	struct sampler_opts so = { 0 };
	struct sampling_run r = { .o = o, .target = pid, .view = view };
	struct profile_rank rank;
	pid_t *tids = NULL;
	size_t nr;
	bool was_stopped;
	sigset_t waitmask;
	char *cmdline;
	int ret;

	if ((ret = check_target(pid, TARGET_PROFILE)))
		return ret;
	/* -o's %r: the rank in the environment the process was started with (none: 0) */
	sym_rank_of_pid(pid, &rank);
	sampling_name_output(o, pid, rank.rank);
	if ((ret = sampling_check_output(o)) || (ret = live_open(&r)))
		return ret;
	sampling_signals(&waitmask);
	/*
	 * inherit covers only tasks created after an event is opened, so every
	 * existing thread gets its own events; stopping the process first
	 * means none is created between listing and opening.
	 */
	was_stopped = proc_task_state(pid, pid, NULL) == 'T';
	if (!was_stopped && kill(pid, SIGSTOP) < 0) {
		print_error("cannot stop process %d to attach: %s", (int)pid, strerror(errno));
		live_end(&r);
		return EXIT_FAIL;
	}
	nr = list_tasks(pid, &tids);
	wait_stopped(pid, tids, nr);
	so.pid = pid;
	so.tids = tids;
	so.nr_tids = nr;
	o->python_likely = o->python && (o->python_on || sampling_python_process(pid));
	r.sampler = nr ? sampling_open(o, &so) : NULL;
	if (!r.sampler) {
		if (!nr)
			print_error("no such process %d", (int)pid);
		if (!was_stopped)
			kill(pid, SIGCONT);
		free(tids);
		live_end(&r);
		return EXIT_FAIL;
	}
	cmdline = target_cmdline(pid);
	r.command = cmdline;
	r.regions.mode = o->regions;
	regions_prepare_attach(&r.regions, pid);
	sampling_begin(&r);
	for (size_t i = 0; i < nr; i++)
		sym_session_add_existing(r.syms, pid, tids[i]);
	sampler_enable(r.sampler);
	live_begin(&r);
	if (!was_stopped)
		kill(pid, SIGCONT);
	free(tids);

	sampling_loop(&r, &waitmask);
	ret = sampling_finish(&r);
	free(cmdline);
	return ret;
}

int cmd_attach(int argc, char **argv)
{
	struct sampling_opts o;
	pid_t pid = 0;
	int ret = parse_options(argc, argv, &o, &pid);

	if (!ret)
		ret = attach_process(&o, pid, NULL);
	else if (ret < 0)
		ret = EXIT_OK;
	sampling_opts_release(&o);
	return ret;
}
