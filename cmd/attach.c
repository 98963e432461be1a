// SPDX-License-Identifier: MIT
/* proftool attach: profile a process that is already running. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const char attach_usage[] =
	"usage: proftool attach [OPTIONS] PID\n"
	"\n"
	"Profiles the running process PID. Not available in this version yet.\n";

int cmd_attach(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(attach_usage, stdout);
		return EXIT_OK;
	}
	/* XXX: attach arrives with its own issue (existing threads, /proc maps, SIGSTOP dance). */
	error("attach is not available in this version yet; use 'proftool record -- COMMAND'");
	return EXIT_FAIL;
}
