// SPDX-License-Identifier: MIT
/* proftool's entry point: the subcommand table and the way every command ends. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cmd.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cmd commands[] = {
	{ "record", cmd_record, "run a command and profile it, its threads and child processes" },
	{ "attach", cmd_attach, "profile a running process" },
	{ "top", cmd_top, "live table of the hottest functions of a process or command" },
	{ "report", cmd_report, "print a profile (several files are merged)" },
	{ "diff", cmd_diff, "compare two profiles: which functions grew or shrank" },
	{ "dump", cmd_dump, "print every thread's current stack once, leave the process running" },
	{ "control", cmd_control, "pause, resume, snapshot or stop a recording (--control)" },
};

static void print_help(FILE *out)
{
	fprintf(out, "usage: proftool COMMAND [OPTIONS] [ARGS]\n\n"
		"A sampling profiler for Linux: whole process trees, complete stacks,\n"
		"cProfile-style reports.\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n  proftool --version          print the version\n"
		"  proftool help COMMAND       options of one command\n\n"
		"example:\n  proftool record -- ./train && proftool report --sort tottime\n");
}

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void oom(size_t bytes)
{
	print_error("out of memory (allocating %zu bytes)", bytes);
	exit(EXIT_FAIL);
}

/* Every command ends here: stdout is flushed and a failed write becomes a failure. */
static int finish(int status)
{
	if (fflush(stdout) || ferror(stdout)) {
		if (errno != EPIPE)
			print_error("cannot write the output: %s", strerror(errno ? errno : EIO));
		return status ? status : EXIT_FAIL;
	}
	if (fclose(stdout) && errno != EBADF) {
		print_error("cannot write the output: %s", strerror(errno));
		return status ? status : EXIT_FAIL;
	}
	return status;
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	ensure_std_fds();
	base_set_oom_handler(oom);
	/*
	 * jansson's values come from xmalloc too: running out of memory ends
	 * the command with its one line, instead of a value quietly missing
	 * from a JSON report (the profile writer checks every call as well).
	 */
	json_set_alloc_funcs(xmalloc, free);
	if (argc < 2)
		return usage_error(NULL, "no command given");
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("proftool %s\n", PROFTOOL_VERSION);
		return finish(EXIT_OK);
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_help(stdout);
		return finish(EXIT_OK);
	}
	if (!strcmp(argv[1], "help")) {
		char *help_argv[] = { NULL, "--help", NULL };

		if (argc < 3) {
			print_help(stdout);
			return finish(EXIT_OK);
		}
		c = find_cmd(argv[2]);
		if (!c)
			return usage_error(NULL, "unknown command '%s'", argv[2]);
		help_argv[0] = argv[2];
		return finish(c->fn(2, help_argv));
	}
	c = find_cmd(argv[1]);
	if (!c)
		return usage_error(NULL, "unknown command '%s'", argv[1]);
	return finish(c->fn(argc - 1, argv + 1));
}
