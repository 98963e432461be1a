// SPDX-License-Identifier: MIT
/*
 * Regions for record and attach: the directory the profiled programs
 * write their region events into (regions/format.h), the environment that
 * tells them, and joining what they wrote with the profile at the end.
 */
#include "regions.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "regions/format.h"
#include "regions/regions.h"

int regions_parse_mode(const char *arg, enum regions_mode *out)
{
	static const struct name_value names[] = {
		{ "off", REGIONS_OFF }, { "auto", REGIONS_AUTO }, { "itt", REGIONS_ITT }, { "all", REGIONS_ALL },
	};
	int v = name_lookup(names, ARRAY_SIZE(names), arg);

	if (v < 0)
		return -EINVAL;
	*out = (enum regions_mode)v;
	return 0;
}

/*
 * The runtime <proftool.h> loads: beside the proftool binary (the build
 * tree) or in ../lib/proftool from it (make install). NULL when neither.
 */
static char *find_runtime(void)
{
	static const char *const rel[] = { "libproftool-rt.so", "../lib/proftool/libproftool-rt.so" };
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		char *real;

		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		if (access(path, R_OK))
			continue;
		real = realpath(path, NULL);
		if (real)
			return real;
	}
	return NULL;
}

/*
 * Maps the directory's pause switch, making it when it is not there
 * (attach: a program that never paused has none yet). Without it the
 * program's pauses still come out of its events, only not live.
 */
static void map_switch(struct regions_run *rr)
{
	char path[PATH_MAX];
	bool made = true;
	void *map;
	int fd;

	if (snprintf(path, sizeof(path), "%s/" RGN_CONTROL_FILE, rr->dir) >= (int)sizeof(path))
		return;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		made = false;
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return;
	if (made && ftruncate(fd, RGN_CONTROL_SIZE) < 0) {
		close(fd);
		unlink(path);
		return;
	}
	map = mmap(NULL, RGN_CONTROL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	rr->sw = map;
	if (made)
		memcpy(rr->sw->magic, RGN_CONTROL_MAGIC, 8);
	else if (memcmp(rr->sw->magic, RGN_CONTROL_MAGIC, 8)) {
		munmap(map, RGN_CONTROL_SIZE);
		rr->sw = NULL;
		return;
	}
	rr->sw_seq = __atomic_load_n(&rr->sw->seq, __ATOMIC_ACQUIRE);
	/* attach: a program paused before we came is paused now */
	if (!made && __atomic_load_n(&rr->sw->paused, __ATOMIC_RELAXED))
		rr->sw_seq--;
}

int regions_switch(struct regions_run *rr)
{
	uint64_t seq;

	if (!rr->sw)
		return -1;
	seq = __atomic_load_n(&rr->sw->seq, __ATOMIC_ACQUIRE);
	if (seq == rr->sw_seq)
		return -1;
	rr->sw_seq = seq;
	return __atomic_load_n(&rr->sw->paused, __ATOMIC_RELAXED) ? 1 : 0;
}

int regions_prepare_record(struct regions_run *rr)
{
	const char *tmp = getenv("TMPDIR");
	char *rt;
	size_t n;

	if (rr->mode == REGIONS_OFF)
		return 0;
	rt = find_runtime();
	if (!rt && rr->mode != REGIONS_AUTO) {
		print_error("--regions itt needs the regions runtime libproftool-rt.so, found neither beside "
		      "proftool nor in ../lib/proftool; reinstall proftool (make install)");
		return -ENOENT;
	}
	if (!tmp || !*tmp || access(tmp, W_OK))
		tmp = "/tmp";
	n = strlen(tmp) + 32;
	rr->dir = xmalloc(n);
	snprintf(rr->dir, n, "%s/proftool-regions.XXXXXX", tmp);
	/* private to us and the programs we run: mkdtemp makes it 0700 */
	if (!mkdtemp(rr->dir)) {
		print_error("cannot make a directory for region events in %s: %s; set TMPDIR to a writable "
		      "directory or record with --regions off", tmp, strerror(errno));
		free(rr->dir);
		rr->dir = NULL;
		free(rt);
		return -errno;
	}
	rr->own = true;
	map_switch(rr);
	setenv("PROFTOOL_REGIONS", rr->dir, 1);
	if (rt) {
		setenv("PROFTOOL_RT", rt, 1);
		/* Intel ITT's static part loads its collector from here: ours is the runtime */
		if (rr->mode == REGIONS_ITT || rr->mode == REGIONS_ALL)
			setenv("INTEL_LIBITTNOTIFY64", rt, 1);
	}
	free(rt);
	return 0;
}

/* The value of NAME in process PID's initial environment, or NULL. */
static char *environ_of(pid_t pid, const char *name)
{
	char path[64], *buf = NULL, *found = NULL;
	size_t len = 0, alloc = 0, nl = strlen(name);
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		ALLOC_GROW(buf, len + 4097, alloc);
		n = read(fd, buf + len, alloc - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	for (size_t off = 0; buf && off < len; off += strlen(buf + off) + 1) {
		buf[len] = '\0';
		if (!strncmp(buf + off, name, nl) && buf[off + nl] == '=') {
			found = xstrdup(buf + off + nl + 1);
			break;
		}
	}
	free(buf);
	return found;
}

/* A program started with regions on names its directory; we only read it. */
int regions_prepare_attach(struct regions_run *rr, pid_t pid)
{
	char *dir, *path;

	if (rr->mode == REGIONS_OFF)
		return 0;
	dir = environ_of(pid, "PROFTOOL_REGIONS");

	rr->own = false;
	if (!dir || !*dir) {
		free(dir);
		return 0;
	}
	if (*dir == '/') {
		rr->dir = dir;
		map_switch(rr);
		return 0;
	}
	/* relative to the program's working directory, which is not ours */
	path = xmalloc(strlen(dir) + 64);
	snprintf(path, strlen(dir) + 64, "/proc/%d/cwd/%s", (int)pid, dir);
	rr->dir = realpath(path, NULL);
	if (!rr->dir)
		rr->dir = xstrdup(path);
	free(path);
	free(dir);
	map_switch(rr);
	return 0;
}

/* Removes our directory and the files the programs left in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Attach: the directory is the program's, and may hold other processes' files. */
static void keep_profiled(struct rgn_set *s, const struct profile *p)
{
	size_t out = 0;

	for (size_t i = 0; i < s->nr_threads; i++) {
		bool ours = false;

		for (size_t k = 0; k < p->nr_procs && !ours; k++)
			ours = p->procs[k].pid == s->threads[i].pid;
		if (ours)
			s->threads[out++] = s->threads[i];
		else
			free(s->threads[i].ev);
	}
	s->nr_threads = out;
}

/* Whether process PID still runs (a zombie does not). */
static bool alive(int32_t pid)
{
	char buf[1024];
	const char *f = proc_stat_fields(pid, 0, buf, sizeof(buf));

	return f && f[0] != 'Z' && f[0] != 'X';
}

void regions_finish(struct regions_run *rr, struct profile *p, uint64_t start_ns, uint64_t end_ns)
{
	struct rgn_set s;
	int ret;

	if (!rr->dir)
		return;
	rgn_set_init(&s);
	ret = rgn_read_dir(&s, rr->dir);
	if (ret < 0 && ret != -ENOENT)
		print_error("warning: cannot read the region events in %s: %s; the profile has no regions",
		      rr->dir, strerror(-ret));
	if (!rr->own)
		keep_profiled(&s, p);
	if (s.bad_files)
		print_error("warning: %zu file%s in %s %s not region event files and %s left out", s.bad_files,
		      s.bad_files == 1 ? "" : "s", rr->dir, s.bad_files == 1 ? "is" : "are",
		      s.bad_files == 1 ? "was" : "were");
	if (!ret)
		rgn_join(p, &s, start_ns, end_ns, alive);
	rgn_set_release(&s);
}

void regions_release(struct regions_run *rr)
{
	if (rr->sw)
		munmap(rr->sw, RGN_CONTROL_SIZE);
	rr->sw = NULL;
	if (rr->dir && rr->own)
		remove_dir(rr->dir);
	free(rr->dir);
	rr->dir = NULL;
}
