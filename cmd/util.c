// SPDX-License-Identifier: MIT
/* Messages and argument parsing shared by the subcommands. */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic.h"
#include "profile/profile.h"

void error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("proftool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;

	fputs("proftool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (command)
		fprintf(stderr, "; see 'proftool %s --help'\n", command);
	else
		fputs("; see 'proftool --help'\n", stderr);
	return EXIT_USAGE;
}

bool parse_ulong(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 1e9)
		return false;
	*out = v;
	return true;
}

void ensure_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd ? O_WRONLY : O_RDONLY);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	}
}

static const char *read_hint(int e)
{
	switch (e) {
	case ENOENT:
		return "; record one with 'proftool record -- COMMAND'";
	case EPROTO:
		return "; give a file written by 'proftool record'";
	case EBADMSG:
		return "; the file is damaged: record the profile again";
	case ENOTSUP:
		return "; upgrade proftool to read it";
	default:
		return "";
	}
}

struct profile *read_profile(const char *path)
{
	char err[512];
	struct profile *p = profile_read(path, err, sizeof(err));

	if (!p)
		error("cannot read '%s': %s%s", path, err, read_hint(errno));
	return p;
}

int output_open(struct output *o, const char *path)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->fp = stdout;
	if (!path)
		return 0;
	ret = atomic_open(&o->af, path, 0644);
	if (ret < 0) {
		error("cannot create '%s': %s", path, strerror(-ret));
		return -1;
	}
	o->fp = o->af.fp;
	return 0;
}

void output_abort(struct output *o)
{
	atomic_abort(&o->af);
}

int output_finish(struct output *o, int ret)
{
	if (ret >= 0 && o->path)
		ret = atomic_commit(&o->af);
	else if (o->path)
		atomic_abort(&o->af);
	if (ret < 0) {
		if (o->path)
			error("cannot write '%s': %s", o->path, strerror(-ret));
		else
			error("cannot write the output: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
