// SPDX-License-Identifier: MIT
/* proftool record: run a command under the sampler and write its profile. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "sampler/sampler.h"
#include "sampling.h"
#include "symbolize/symbolize.h"

static const char record_head[] =
	"usage: proftool record [OPTIONS] -- COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND and samples it, every thread it starts and every child process\n"
	"it forks or execs, until COMMAND exits. Exits with COMMAND's status\n"
	"(128+N when it died of signal N).\n"
	"\n";
static const char record_tail[] =
	"  --duration SEC       stop profiling after SEC seconds; COMMAND keeps running\n"

	"  -q                   no status line and no summary on stderr\n"
	"  -h, --help           show this help\n";

static const struct option record_options[] = {
	SAMPLING_LONGOPTS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_options(int argc, char **argv, struct sampling_opts *o, char ***command)
{
	int c, ret;

	sampling_opts_init(o);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:" SAMPLING_SHORTOPTS "h", record_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("%s%s%s", record_head, sampling_usage, record_tail);
			return -1;
		case ':':
			return usage_error("record", "option '%s' needs a value", argv[optind - 1]);
		case '?':
			return usage_error("record", "unknown option '%s'", argv[optind - 1]);
		default:
			ret = sampling_parse_opt(c, optarg, o, "record");
			if (ret)
				return ret == 1 ? usage_error("record", "unknown option '%s'", argv[optind - 1]) : ret;
		}
	}
	if (optind >= argc)
		return usage_error("record", "no command given after '--'");
	if ((ret = sampling_validate(o, "record")))
		return ret;
	*command = argv + optind;
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

int record_command(struct sampling_opts *o, char **command, const struct sampling_view *view)
{
	struct sampler_opts so = { .enable_on_exec = true };
	struct sampling_run r = { .o = o, .view = view };
	struct sampler_child child = { -1, -1, -1 };
	char *cmdline = join_argv(command);
	/* -o's %p is the command's pid: such a name is made and checked once it is forked */
	bool named_late = o->output && output_pattern_has(o->output, 'p');
	struct profile_rank rank;
	sigset_t waitmask;
	int ret, exit_code;

	/* %r: the command starts with our environment, the launcher's variables in it */
	sym_rank_of_self(&rank);
	if (!named_late)
		sampling_name_output(o, 0, rank.rank);
	/* find out now, not after a long run, that the profile cannot be written */
	if ((!named_late && sampling_check_output(o)) || live_open(&r)) {
		free(cmdline);
		return EXIT_FAIL;
	}
	/* before the fork: the command inherits the environment that names the directory */
	r.regions.mode = o->regions;
	if (regions_prepare_record(&r.regions) < 0) {
		live_end(&r);
		free(cmdline);
		return EXIT_FAIL;
	}
	/*
	 * oneDNN names its JIT kernels in a perf map when asked (it reads the
	 * variable once, at its first kernel; DNNL_JIT_PROFILE is its old
	 * name); a value the user chose stays, and so do its maps.
	 */
	if (!getenv("ONEDNN_JIT_PROFILE") && !getenv("DNNL_JIT_PROFILE")) {
		setenv("ONEDNN_JIT_PROFILE", "2", 1);
		r.jit_maps = true;
	}
	sampling_signals(&waitmask);
	ret = sampler_spawn(&child, command);
	if (ret < 0) {
		print_error("cannot start '%s': %s", command[0], strerror(-ret));
		regions_release(&r.regions);
		live_end(&r);
		free(cmdline);
		return EXIT_FAIL;
	}
	if (named_late) {
		sampling_name_output(o, child.pid, rank.rank);
		if (sampling_check_output(o)) {
			sampler_spawn_abort(&child);
			regions_release(&r.regions);
			live_end(&r);
			free(cmdline);
			return EXIT_FAIL;
		}
	}
	so.pid = child.pid;
	o->python_likely = o->python && (o->python_on || sampling_python_command(command));
	r.sampler = sampling_open(o, &so);
	if (!r.sampler) {
		sampler_spawn_abort(&child);
		regions_release(&r.regions);
		live_end(&r);
		free(cmdline);
		return EXIT_FAIL;
	}
	r.command = cmdline;
	r.child = child.pid;
	sampling_begin(&r);
	ret = sampler_spawn_start(&child);
	if (ret < 0) {
		int st;

		/* the child exits 127 at once; the sampler (a tracer, maybe) collects it */
		while (!sampler_reap(r.sampler, child.pid, &st))
			usleep(1000);
		print_error("cannot run '%s': %s", command[0], strerror(-ret));
		sampler_close(r.sampler);
		regions_release(&r.regions);
		live_end(&r);
		sym_session_free(r.syms);
		sym_python_free(o->py);
		free(cmdline);
		return EXIT_NOT_RUN;
	}
	live_begin(&r);
	sampling_loop(&r, &waitmask);
	exit_code = exit_status_of(r.status);
	if (sampling_finish(&r) && !exit_code)
		exit_code = EXIT_FAIL;
	free(cmdline);
	return exit_code;
}

int cmd_record(int argc, char **argv)
{
	struct sampling_opts o;
	char **command = NULL;
	int ret = parse_options(argc, argv, &o, &command);

	if (!ret)
		ret = record_command(&o, command, NULL);
	else if (ret < 0)
		ret = EXIT_OK;
	sampling_opts_release(&o);
	return ret;
}
