// SPDX-License-Identifier: MIT
/*
 * pystack [-s] [-n COUNT] PID: prints the Python stack of every thread of
 * PID with symbolize/python.c, as the sampler will read them. -s stops the
 * process (PTRACE_SEIZE + PTRACE_INTERRUPT) for a consistent read; -n reads
 * every stack COUNT times and prints the time per read on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/internal.h"
#include "symbolize/python.h"

#define MAX_TASKS 1024

struct found {
	char path[PATH_MAX];
	struct py_probe probe;
	uint64_t bias;
};

/* The first mapped file with a _PyRuntime: the executable or a libpython3.*.so*. */
static int find_interpreter(int pid, struct found *f)
{
	char maps[64], line[PATH_MAX + 256], last[PATH_MAX] = "";
	FILE *fp;
	int ret = -ENOENT;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	fp = fopen(maps, "r");
	if (!fp)
		return -errno;
	while (ret && fgets(line, sizeof(line), fp)) {
		unsigned long long start, end, pgoff;
		char perms[8], root[PATH_MAX + 32];
		int pathoff = 0, fd;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff, &pathoff) < 4 ||
		    !pathoff || line[pathoff] != '/' || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line + pathoff, last))
			continue;
		snprintf(last, sizeof(last), "%s", line + pathoff);
		snprintf(root, sizeof(root), "/proc/%d/root%s", pid, last);
		fd = open(root, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!py_probe_file(fd, last, &f->probe) &&
		    sym_elf_bias(fd, start, pgoff, &f->bias)) {
			snprintf(f->path, sizeof(f->path), "%s", last);
			ret = 0;
		}
		close(fd);
	}
	fclose(fp);
	return ret;
}

static int list_tasks(int pid, int *tids)
{
	char dir[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < MAX_TASKS) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (e->d_name[0] != '.' && !*end && tid > 0)
			tids[n++] = (int)tid;
	}
	closedir(d);
	/* in tid order, so that the output is stable */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
			int t = tids[j];

			tids[j] = tids[j - 1];
			tids[j - 1] = t;
		}
	return n;
}

static void stop_all(const int *tids, int n)
{
	for (int i = 0; i < n; i++) {
		int status;

		if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) || ptrace(PTRACE_INTERRUPT, tids[i], 0, 0))
			continue;
		waitpid(tids[i], &status, __WALL);
	}
}

static void resume_all(const int *tids, int n)
{
	for (int i = 0; i < n; i++)
		ptrace(PTRACE_DETACH, tids[i], 0, 0);
}

static void print_stack(int tid, const struct py_frame *fr, size_t n, enum py_status st)
{
	printf("thread %d: %s, %zu frames\n", tid, py_status_name(st), n);
	for (size_t i = 0; i < n; i++)
		printf("  %s:%" PRIu32 "(%s) line %" PRIu32 "%s%s%s\n", fr[i].filename, fr[i].firstlineno,
		       fr[i].qualname, fr[i].line, fr[i].flags & PY_FRAME_ENTRY ? " [entry]" : "",
		       fr[i].flags & PY_FRAME_GENERATOR ? " [generator]" : "",
		       fr[i].flags & PY_FRAME_EMPTY_RUN_ABOVE ? " [empty run above]" : "");
}

int main(int argc, char **argv)
{
	static struct py_frame frames[PY_MAX_DEPTH];
	static int tids[MAX_TASKS];
	struct py_proc_opts o = { 0 };
	struct found f;
	struct py_proc *p;
	char err[256], *end;
	long count = 1;
	int opt, pid, ntids, ret;
	bool stop = false;

	while ((opt = getopt(argc, argv, "sn:")) != -1) {
		if (opt == 's') {
			stop = true;
		} else if (opt == 'n') {
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				goto usage;
		} else {
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	pid = (int)strtol(argv[optind], &end, 10);
	if (*end || pid <= 0)
		goto usage;
	ret = find_interpreter(pid, &f);
	if (ret) {
		fprintf(stderr, "pystack: no Python interpreter in process %d: %s\n", pid, strerror(-ret));
		return 1;
	}
	printf("python %" PRIx32 "%s in %s\n", f.probe.version, f.probe.version_from_name ? " (from its name)" : "",
	       f.path);
	o.pid = pid;
	py_proc_opts_from_probe(&o, &f.probe, f.bias);
	p = py_proc_new(&o, err, sizeof(err));
	if (!p) {
		printf("unsupported: %s\n", err);
		return 3;
	}
	ntids = list_tasks(pid, tids);
	if (ntids < 0) {
		fprintf(stderr, "pystack: process %d is gone\n", pid);
		py_proc_free(p);
		return 1;
	}
	if (stop)
		stop_all(tids, ntids);
	for (int i = 0; i < ntids; i++) {
		struct timespec t0, t1;
		enum py_status st = PY_STACK_COMPLETE;
		size_t n = 0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long k = 0; k < count; k++)
			n = py_read_stack(p, tids[i], frames, PY_MAX_DEPTH, &st);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		print_stack(tids[i], frames, n, st);
		if (count > 1)
			fprintf(stderr, "thread %d: %ld reads of %zu frames, %.2f us per read\n", tids[i], count, n,
				((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / (double)count);
	}
	if (stop)
		resume_all(tids, ntids);
	py_proc_free(p);
	return 0;
usage:
	fprintf(stderr, "usage: pystack [-s] [-n COUNT] PID\n");
	return 2;
}
