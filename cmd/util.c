// SPDX-License-Identifier: MIT
/* Messages and argument parsing shared by the subcommands. */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/base.h"
#include "profile/profile.h"

void print_error(const char *fmt, ...)
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
		print_error("cannot read '%s': %s%s", path, err, read_hint(errno));
	return p;
}

/* Writes N in decimal at BUF (12 bytes at most, the NUL included); returns the digits written. */
static int put_int(char *buf, int32_t n)
{
	return snprintf(buf, 12, "%d", (int)n);
}

const char *output_pattern_bad(const char *pattern)
{
	for (const char *c = pattern; (c = strchr(c, '%')); c += 2)
		if (!c[1] || !strchr("hpr%", c[1]))
			return c;
	return NULL;
}

bool output_pattern_has(const char *pattern, char what)
{
	for (const char *c = pattern; (c = strchr(c, '%')) && c[1]; c += 2)
		if (c[1] == what)
			return true;
	return false;
}

char *output_pattern_expand(const char *pattern, pid_t pid, int32_t rank)
{
	struct utsname u;
	const char *host = uname(&u) == 0 && *u.nodename ? u.nodename : "unknown";
	/* each two-byte pattern becomes at most a host name (64 bytes) or a number */
	size_t len = strlen(pattern);
	char *out = xmalloc(len + len / 2 * sizeof(u.nodename) + 1), *o = out;

	for (const char *c = pattern; *c; c++) {
		if (*c != '%' || !c[1]) {
			*o++ = *c;
			continue;
		}
		switch (*++c) {
		case 'h':
			/* a name, not a path: a '/' in it would name a directory */
			for (const char *h = host; *h; h++)
				*o++ = *h == '/' ? '_' : *h;
			break;
		case 'p':
			o += put_int(o, pid);
			break;
		case 'r':
			/* the contract's: a process without a rank writes 0 */
			o += put_int(o, rank >= 0 ? rank : 0);
			break;
		default:
			*o++ = *c;
			break;
		}
	}
	*o = '\0';
	return out;
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
		print_error("cannot create '%s': %s", path, strerror(-ret));
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
			print_error("cannot write '%s': %s", o->path, strerror(-ret));
		else
			print_error("cannot write the output: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38          /* Linux 5.8 */
#endif

/* Whether capability CAP is in our effective set. */
static bool have_cap(int cap)
{
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	if (f)
		fclose(f);
	return found && cap < 64 && (eff >> cap & 1);
}

/* How the refusals of check_target() read for each use. */
static const struct {
	const char *kthread;    /* "process N is a kernel thread; ..." */
	const char *verb;       /* "not allowed to VERB process N" */
	const char *cap;        /* the capability that would do */
	const char *sysctls;    /* what else to check */
} target_uses[] = {
	[TARGET_PROFILE] = { "attach profiles", "profile", "CAP_PERFMON",
			     "kernel.perf_event_paranoid and kernel.yama.ptrace_scope" },
	[TARGET_READ] = { "dump reads", "read", "CAP_SYS_PTRACE", "kernel.yama.ptrace_scope" },
};

int check_target(pid_t pid, enum target_use use)
{
	unsigned long flags = 0;
	char state = proc_task_state(pid, pid, &flags), path[64];
	bool privileged = have_cap(CAP_SYS_PTRACE) || (use == TARGET_PROFILE && have_cap(CAP_PERFMON));
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (!state || state == 'Z' || state == 'X') {
		print_error("no such process %d; 'ps' lists the running ones", (int)pid);
		return EXIT_FAIL;
	}
	if (flags & 0x00200000) {	/* PF_KTHREAD */
		print_error("process %d is a kernel thread; %s user-space processes", (int)pid,
		      target_uses[use].kthread);
		return EXIT_FAIL;
	}
	if (pid == getpid()) {
		print_error("process %d is proftool itself", (int)pid);
		return EXIT_FAIL;
	}
	if (kill(pid, 0) < 0 && errno == EPERM) {
		print_error("not allowed to %s process %d of another user; run as its owner or as root "
		      "(%s), and check %s", target_uses[use].verb, (int)pid, target_uses[use].cap,
		      target_uses[use].sysctls);
		return EXIT_FAIL;
	}
	/*
	 * Without CAP_PERFMON (for perf events) or CAP_SYS_PTRACE, the kernel
	 * lets a user profile or trace only processes that run with exactly
	 * their credentials and are dumpable (ptrace_may_access); /proc shows
	 * those as theirs, and a setuid or non-dumpable one as root's. Said
	 * here, not as a perf_event_paranoid hint followed by a ptrace
	 * fallback that fails too.
	 */
	if (!privileged && stat(path, &st) == 0 && st.st_uid != getuid()) {
		print_error("not allowed to %s process %d: it runs with privileges you do not have "
		      "(a setuid program, or one that made itself non-dumpable); run as root (%s)",
		      target_uses[use].verb, (int)pid, target_uses[use].cap);
		return EXIT_FAIL;
	}
	return 0;
}

char *target_cmdline(pid_t pid)
{
	char path[64], buf[4096];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "re");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	while (n && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	if (!n)
		snprintf(buf, sizeof(buf), "pid %d", (int)pid);
	return xstrdup(buf);
}
