// SPDX-License-Identifier: MIT
/* What the subcommands share: exit codes, messages, number parsing. */
#ifndef PROFTOOL_CMD_H
#define PROFTOOL_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/atomic.h"

/* Exit codes; `record` passes its command's status through instead. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,          /* the work could not be done */
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_NOT_RUN = 127,     /* the command to profile could not be started */
};

#ifndef PROFTOOL_VERSION
#define PROFTOOL_VERSION "0.0.0"
#endif

/* Prints "proftool: MSG" as one line on stderr. */
__attribute__((format(printf, 1, 2)))
void print_error(const char *fmt, ...);
/* Prints the error and a pointer to COMMAND's help; returns EXIT_USAGE. */
__attribute__((format(printf, 2, 3)))
int usage_error(const char *command, const char *fmt, ...);

/*
 * Parses a whole decimal number in [LO, HI]; false for empty input,
 * trailing garbage or overflow (where atoi would quietly say 0).
 */
bool parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out);
bool parse_seconds(const char *s, double *out);

/* Makes sure fds 0-2 are open, so that no file we open lands on them. */
void ensure_std_fds(void);

/*
 * Where a report goes: standard output, or a file that appears whole or
 * not at all (base/atomic.h). output_open prints its error and returns -1;
 * output_finish takes the writer's result (0 or a negative errno), commits
 * or drops the file, prints any error and returns the exit code.
 */
struct output {
	const char *path;       /* NULL: standard output */
	FILE *fp;
	struct atomic_file af;
};
int output_open(struct output *o, const char *path);
void output_abort(struct output *o);
int output_finish(struct output *o, int ret);

/*
 * The patterns of a profile's name (record and attach -o, top --record):
 * %h the host name (uname's, a '/' in it written '_'), %p the process id,
 * %r the rank (0 for PROFILE_RANK_NONE), %% a '%'. output_pattern_bad
 * returns NULL when every '%' in PATTERN starts one of them, else the first
 * that does not; output_pattern_has says whether PATTERN uses %WHAT.
 * output_pattern_expand returns the name, for the caller to free.
 */
const char *output_pattern_bad(const char *pattern);
bool output_pattern_has(const char *pattern, char what);
char *output_pattern_expand(const char *pattern, pid_t pid, int32_t rank);

/* What a command does with the process it is given, for check_target()'s messages. */
enum target_use {
	TARGET_PROFILE,         /* attach: perf events, or ptrace */
	TARGET_READ,            /* dump: ptrace, to read its threads once */
};
/*
 * Checks PID before it is touched, so that each refusal has its own
 * message (no such process, a kernel thread, proftool itself, another
 * user's or a privileged process); the kernel still has the last word.
 * Prints the error and returns EXIT_FAIL, or returns 0.
 */
int check_target(pid_t pid, enum target_use use);
/* PID's command line, its arguments joined by spaces ("pid N" when unreadable); the caller frees it. */
char *target_cmdline(pid_t pid);

struct profile;
/* Reads a profile, or prints why not (with what to do) and returns NULL. */
struct profile *read_profile(const char *path);

int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
