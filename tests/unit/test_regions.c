// SPDX-License-Identifier: MIT
/*
 * Named regions end to end below the command line: a program calls the
 * <proftool.h> API, which loads the runtime (build/libproftool-rt.so) and
 * writes event files; regions/read.c reads them back. Threads, a forked
 * child, names built in a reused buffer, thousands of events over several
 * segments, a file that fills up, a disk that does, errno kept, a million
 * tiny regions from C and from Python, files cut short or scrambled, and a
 * file made by hand where a tid was given to two threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "include/proftool.h"
#include "regions/format.h"
#include "regions/regions.h"
#include "unit.h"

static char dir[PATH_MAX];

/* Begins and ends of NAME (in DOMAIN) over every thread of S; *PID_OUT: a pid that has them. */
static size_t count(const struct rgn_set *s, const char *domain, const char *name, int kind,
		    int32_t *pid_out)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr_threads; i++) {
		const struct rgn_thread *t = &s->threads[i];

		for (size_t j = 0; j < t->nr; j++) {
			const struct rgn_event *e = &t->ev[j];

			if (e->kind != kind || e->name == RGN_NO_NAME)
				continue;
			if (strcmp(s->names[e->name].name, name) || strcmp(s->names[e->name].domain, domain))
				continue;
			n++;
			if (pid_out)
				*pid_out = t->pid;
		}
	}
	return n;
}

static void *thread_main(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "t%d", (int)(intptr_t)arg);
	for (int i = 0; i < 1000; i++) {
		proftool_region_begin(name);
		proftool_region_end(name);
	}
	return NULL;
}

static int scoped_then_break(void)
{
	int n = 0;

	for (int i = 0; i < 3; i++) {
		PROFTOOL_REGION("scoped") {
			n++;
			if (i == 1)
				break;  /* leaves the macro's own loop (the region ends), not this one */
		}
	}
	return n;
}

static void test_api_and_reader(void)
{
	struct rgn_set s;
	pthread_t th[4];
	char buf[32];
	int32_t pid = 0;
	pid_t child;
	int status;

	for (int i = 0; i < 10; i++) {
		proftool_region_begin("outer");
		for (int j = 0; j < 5; j++) {
			proftool_region_begin("inner");
			proftool_region_end("inner");
		}
		proftool_region_end("outer");
	}
	proftool_mark("epoch");
	proftool_region_begin_in("io", "read");
	proftool_region_end_in("io", "read");
	proftool_pause();
	proftool_resume();
	CHECK_EQ_U(scoped_then_break(), 3);
	/* one buffer, ten names */
	for (int i = 0; i < 10; i++) {
		snprintf(buf, sizeof(buf), "dyn%d", i);
		proftool_region_begin(buf);
		proftool_region_end(buf);
	}
	/* 400000 events: several segments */
	for (int i = 0; i < 200000; i++) {
		proftool_region_begin("tiny");
		proftool_region_end("tiny");
	}
	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	child = fork();
	if (child == 0) {
		for (int i = 0; i < 3; i++) {
			proftool_region_begin("child");
			proftool_region_end("child");
		}
		_exit(0);
	}
	waitpid(child, &status, 0);

	rgn_set_init(&s);
	CHECK_EQ_U(rgn_read_dir(&s, dir), 0);
	CHECK_EQ_U(s.files, 2);
	CHECK_EQ_U(s.bad_files, 0);
	CHECK_EQ_U(s.torn, 0);
	CHECK_EQ_U(s.dropped, 0);
	CHECK_EQ_U(count(&s, "", "outer", RGN_BEGIN, NULL), 10);
	CHECK_EQ_U(count(&s, "", "outer", RGN_END, NULL), 10);
	CHECK_EQ_U(count(&s, "", "inner", RGN_BEGIN, NULL), 50);
	CHECK_EQ_U(count(&s, "", "epoch", RGN_MARK, NULL), 1);
	CHECK_EQ_U(count(&s, "io", "read", RGN_BEGIN, NULL), 1);
	CHECK_EQ_U(count(&s, "", "read", RGN_BEGIN, NULL), 0);
	CHECK_EQ_U(count(&s, "", "scoped", RGN_BEGIN, NULL), 3);
	CHECK_EQ_U(count(&s, "", "scoped", RGN_END, NULL), 3);
	CHECK_EQ_U(count(&s, "", "dyn7", RGN_END, NULL), 1);
	CHECK_EQ_U(count(&s, "", "tiny", RGN_BEGIN, NULL), 200000);
	CHECK_EQ_U(count(&s, "", "tiny", RGN_END, NULL), 200000);
	for (int i = 0; i < 4; i++) {
		snprintf(buf, sizeof(buf), "t%d", i);
		CHECK_EQ_U(count(&s, "", buf, RGN_BEGIN, NULL), 1000);
	}
	CHECK_EQ_U(count(&s, "", "child", RGN_BEGIN, &pid), 3);
	CHECK_EQ_U(pid, child);
	/* the main thread's events, over its segments in order, never go back in time */
	for (size_t i = 0; i < s.nr_threads; i++) {
		const struct rgn_thread *t = &s.threads[i];

		CHECK_EQ_U(t->dropped, 0);
		if (t->tid == getpid()) {
			CHECK(t->nr > 400000);
			for (size_t j = 1; j < t->nr; j++)
				if (t->ev[j].time_ns < t->ev[j - 1].time_ns) {
					CHECK(!"time went back");
					break;
				}
		}
	}
	rgn_set_release(&s);
}

/* A file too small for more than one segment: what does not fit is counted dropped. */
static void test_full_file(void)
{
	char sub[PATH_MAX + 8];
	struct rgn_set s;
	pid_t child;
	int status;

	snprintf(sub, sizeof(sub), "%s/full", dir);
	CHECK(mkdir(sub, 0700) == 0);
	child = fork();
	if (child == 0) {
		/* a fork's child makes its file afresh, from the environment as it is then */
		setenv("PROFTOOL_REGIONS", sub, 1);
		setenv("PROFTOOL_REGIONS_MB", "3", 1);
		for (int i = 0; i < 50000; i++) {
			proftool_region_begin("x");
			proftool_region_end("x");
		}
		_exit(0);
	}
	waitpid(child, &status, 0);
	rgn_set_init(&s);
	CHECK_EQ_U(rgn_read_dir(&s, sub), 0);
	CHECK_EQ_U(s.nr_threads, 1);
	if (s.nr_threads == 1) {
		/* one segment of 1 MiB fits beside the header and the names: 65532 events */
		CHECK_EQ_U(s.threads[0].nr, (RGN_SEG_SIZE - sizeof(struct rgn_segment)) / sizeof(struct rgn_record));
		CHECK_EQ_U(s.threads[0].nr + s.threads[0].dropped, 100000);
	}
	rgn_set_release(&s);
}

/*
 * A tmpfs that fills up (the runtime's own mount namespace, as root): what
 * does not fit is dropped and counted, and the program runs on. Pages are
 * given memory before they are written; a store into a hole that a full
 * tmpfs cannot fill is SIGBUS.
 */
static void test_full_disk(void)
{
	char sub[PATH_MAX + 8];
	uint64_t got[4] = { 0, 0, 0, 0 };
	int fds[2], status;
	pid_t child;

	if (geteuid() != 0) {
		printf("# test_full_disk: skipped, mounting a tmpfs needs root\n");
		return;
	}
	snprintf(sub, sizeof(sub), "%s/disk", dir);
	CHECK(mkdir(sub, 0700) == 0);
	CHECK(pipe(fds) == 0);
	child = fork();
	if (child == 0) {
		struct rgn_set s;

		/* the mount goes with the child, so it reads its file itself */
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tmpfs", sub, "tmpfs", 0, "size=256k"))
			_exit(77);
		setenv("PROFTOOL_REGIONS", sub, 1);
		setenv("PROFTOOL_REGIONS_MB", "3", 1);
		for (int i = 0; i < 50000; i++) {
			proftool_region_begin("x");
			proftool_region_end("x");
		}
		rgn_set_init(&s);
		if (rgn_read_dir(&s, sub) == 0 && s.nr_threads == 1) {
			got[0] = s.threads[0].nr;
			got[1] = s.dropped + s.threads[0].dropped;
			got[2] = s.torn;
			got[3] = s.files;
		}
		rgn_set_release(&s);
		_exit(write(fds[1], got, sizeof(got)) == (ssize_t)sizeof(got) ? 0 : 1);
	}
	close(fds[1]);
	waitpid(child, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("# test_full_disk: skipped, no tmpfs could be mounted here\n");
		close(fds[0]);
		return;
	}
	/* killed by SIGBUS before pages were made ready */
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(read(fds[0], got, sizeof(got)) == (ssize_t)sizeof(got));
	close(fds[0]);
	CHECK_EQ_U(got[3], 1);
	CHECK(got[0] > 0);
	CHECK(got[1] > 0);
	CHECK_EQ_U(got[0] + got[1], 100000);
	CHECK_EQ_U(got[2], 0);
}

static char self_path[PATH_MAX];

/* In a process of its own (main's --errno): the first call, which loads the runtime, leaves errno alone. */
static int errno_child(void)
{
	errno = ERANGE;
	proftool_region_begin("e");
	if (errno != ERANGE) {
		fprintf(stderr, "# errno %d after the first call\n", errno);
		return 1;
	}
	proftool_region_end("e");
	return errno == ERANGE ? 0 : 1;
}

/* Runs errno_child in this program exec'd with PROFTOOL_RT=RT, PROFTOOL_REGIONS=DIR, after making FILE there. */
static int errno_run(const char *rt, const char *regions, bool take_name)
{
	pid_t child = fork();
	int status;

	if (child == 0) {
		char name[PATH_MAX + 32];

		if (take_name) {
			/* the runtime's first name for this process is taken: it tries the next (EEXIST) */
			snprintf(name, sizeof(name), "%s/%d-c-0.rgn", regions, (int)getpid());
			close(open(name, O_WRONLY | O_CREAT, 0600));
		}
		setenv("PROFTOOL_RT", rt, 1);
		setenv("PROFTOOL_REGIONS", regions, 1);
		execl(self_path, self_path, "--errno", (char *)NULL);
		_exit(127);
	}
	waitpid(child, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_errno(void)
{
	char sub[PATH_MAX + 8];
	const char *rt = getenv("PROFTOOL_RT");

	snprintf(sub, sizeof(sub), "%s/errno", dir);
	CHECK(mkdir(sub, 0700) == 0);
	CHECK_EQ_U(errno_run("/nonexistent/libproftool-rt.so", sub, false), 0);     /* dlopen fails */
	CHECK_EQ_U(errno_run(rt, "/nonexistent/dir", false), 0);                     /* open fails */
	CHECK_EQ_U(errno_run(rt, sub, true), 0);                                     /* EEXIST, then made */
}

/* The events of the files in DIR: "tiny" begin/end pairs (an end right after a begin), and the rest. */
struct tally {
	uint64_t pairs, begins, ends, other, dropped, torn;
	size_t files, bad_files;
};

static struct tally tally_dir(const char *sub)
{
	struct tally n = { 0 };
	struct rgn_set s;

	rgn_set_init(&s);
	CHECK_EQ_U(rgn_read_dir(&s, sub), 0);
	n.dropped = s.dropped;
	n.torn = s.torn;
	n.files = s.files;
	n.bad_files = s.bad_files;
	for (size_t i = 0; i < s.nr_threads; i++) {
		const struct rgn_thread *t = &s.threads[i];

		n.dropped += t->dropped;
		for (size_t j = 0; j < t->nr; j++) {
			const struct rgn_event *e = &t->ev[j];
			bool tiny = e->name != RGN_NO_NAME && !strcmp(s.names[e->name].name, "tiny") &&
				    !*s.names[e->name].domain;

			if (tiny && e->kind == RGN_BEGIN)
				n.begins++;
			else if (tiny && e->kind == RGN_END)
				n.ends++;
			else
				n.other++;
			if (tiny && e->kind == RGN_END && j && t->ev[j - 1].kind == RGN_BEGIN &&
			    t->ev[j - 1].name == e->name)
				n.pairs++;
		}
	}
	rgn_set_release(&s);
	return n;
}

static void check_million(const char *who, const char *sub)
{
	struct tally n = tally_dir(sub);

	if (n.pairs != 1000000 || n.begins != 1000000 || n.ends != 1000000 || n.other || n.dropped || n.torn ||
	    n.files != 1 || n.bad_files)
		fprintf(stderr, "# %s: %llu pairs, %llu begins, %llu ends, %llu other, %llu dropped, %llu torn, "
			"%zu files, %zu bad\n", who, (unsigned long long)n.pairs, (unsigned long long)n.begins,
			(unsigned long long)n.ends, (unsigned long long)n.other, (unsigned long long)n.dropped,
			(unsigned long long)n.torn, n.files, n.bad_files);
	CHECK_EQ_U(n.pairs, 1000000);
	CHECK_EQ_U(n.begins, 1000000);
	CHECK_EQ_U(n.ends, 1000000);
	CHECK_EQ_U(n.other, 0);
	CHECK_EQ_U(n.dropped, 0);
	CHECK_EQ_U(n.torn, 0);
	CHECK_EQ_U(n.files, 1);
}

/*
 * A million tiny regions at the default sizes (a 256 MiB file, 1 MiB
 * segments), read back by proftool's reader: every one of them, nothing
 * dropped. From C, and from Python (the module in the tree's python/, run
 * by Debian's python3).
 */
static void test_million(void)
{
	char sub[PATH_MAX + 16], tree[PATH_MAX], py[PATH_MAX + 32], *slash;
	pid_t child;
	int status;

	snprintf(sub, sizeof(sub), "%s/million-c", dir);
	CHECK(mkdir(sub, 0700) == 0);
	child = fork();
	if (child == 0) {
		setenv("PROFTOOL_REGIONS", sub, 1);
		unsetenv("PROFTOOL_REGIONS_MB");
		for (int i = 0; i < 1000000; i++) {
			proftool_region_begin("tiny");
			proftool_region_end("tiny");
		}
		_exit(0);
	}
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_million("C", sub);

	/* BUILD/tests/unit/test_regions -> the tree's python/ */
	snprintf(tree, sizeof(tree), "%s", self_path);
	for (int up = 0; up < 4 && (slash = strrchr(tree, '/')); up++)
		*slash = '\0';
	snprintf(py, sizeof(py), "%s/python/proftool/__init__.py", tree);
	if (access("/usr/bin/python3", X_OK) || access(py, R_OK)) {
		printf("# test_million: Python skipped, no /usr/bin/python3 or no %s\n", py);
		return;
	}
	snprintf(py, sizeof(py), "%s/python", tree);
	snprintf(sub, sizeof(sub), "%s/million-py", dir);
	CHECK(mkdir(sub, 0700) == 0);
	child = fork();
	if (child == 0) {
		setenv("PROFTOOL_REGIONS", sub, 1);
		unsetenv("PROFTOOL_REGIONS_MB");
		setenv("PYTHONPATH", py, 1);
		execl("/usr/bin/python3", "python3", "-c",
		      "import proftool\n"
		      "assert proftool.enabled()\n"
		      "for _ in range(1000000):\n"
		      "    with proftool.region('tiny'):\n"
		      "        pass\n", (char *)NULL);
		_exit(127);
	}
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check_million("Python", sub);
}

/* Cut and scrambled copies of a real file: read without a crash, never more events than it has. */
static void test_hostile(void)
{
	char path[PATH_MAX + 32];
	FILE *f;
	uint8_t *buf, *copy;
	long len;
	struct rgn_set whole;

	snprintf(path, sizeof(path), "%s/%d-c-0.rgn", dir, (int)getpid());
	f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	/* the part that holds something: header, names and the first segments */
	if (len > 8 << 20)
		len = 8 << 20;
	buf = malloc((size_t)len);
	copy = malloc((size_t)len);
	CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	rgn_set_init(&whole);
	rgn_parse(&whole, buf, (size_t)len);
	for (long cut = 0; cut < len; cut += cut < 8192 ? 61 : 65521) {
		struct rgn_set s;

		rgn_set_init(&s);
		rgn_parse(&s, buf, (size_t)cut);
		CHECK(s.events <= whole.events);
		rgn_set_release(&s);
	}
	srand(7);
	for (int round = 0; round < 200; round++) {
		struct rgn_set s;

		memcpy(copy, buf, (size_t)len);
		for (int k = 0; k < 16; k++) {
			/* mostly in the header, the names and the first segment headers */
			long at = rand() % (round % 2 ? len : (RGN_HEADER_SIZE + RGN_NAMES_SIZE + 4096));

			copy[at] = (uint8_t)rand();
		}
		rgn_set_init(&s);
		rgn_parse(&s, copy, (size_t)len);
		rgn_set_release(&s);
	}
	rgn_set_release(&whole);
	free(buf);
	free(copy);
}

/* ---- files made by hand: one name ("x", id 1), small segments ---- */

#define HAND_NAMES 256                  /* bytes of the names area */
#define HAND_SEG 256                    /* bytes per segment: 12 records */

/* A file of pid 42 with room for NR_SEGS segments, all handed out (none begun yet); *LEN its size. */
static uint8_t *hand_file(size_t nr_segs, size_t *len)
{
	size_t l = RGN_HEADER_SIZE + HAND_NAMES + nr_segs * HAND_SEG;
	uint8_t *b = calloc(1, l);
	struct rgn_header h = { .version = RGN_VERSION, .header_size = RGN_HEADER_SIZE, .pid = 42,
				.writer = RGN_WRITER_C, .size = l, .names_size = HAND_NAMES,
				.names_used = RGN_NAME_SIZE(0, 1), .next = l, .next_id = 1,
				.seg_size = HAND_SEG, .start_ns = 1 };
	struct rgn_name n = { .id = 1, .domain_len = 0, .name_len = 1 };

	if (!b)
		abort();
	memcpy(h.magic, RGN_MAGIC, 8);
	memcpy(b, &h, sizeof(h));
	memcpy(b + RGN_HEADER_SIZE, &n, sizeof(n));
	b[RGN_HEADER_SIZE + sizeof(n)] = 'x';
	*len = l;
	return b;
}

/* Fills segment I of file B: thread TID's SEQth, NR records (begin, end, ...) at T, T + 1, ... */
static void hand_segment(uint8_t *b, size_t i, uint32_t tid, uint32_t seq, unsigned nr, uint64_t t,
			 uint64_t dropped)
{
	uint8_t *seg = b + RGN_HEADER_SIZE + HAND_NAMES + i * HAND_SEG;
	struct rgn_segment h = { .magic = RGN_SEG_MAGIC, .tid = tid, .seq = seq,
				 .used = nr * sizeof(struct rgn_record), .dropped = dropped };

	snprintf(h.comm, sizeof(h.comm), "t%u.%u", (unsigned)tid, (unsigned)seq);
	memcpy(seg, &h, sizeof(h));
	for (unsigned k = 0; k < nr; k++) {
		struct rgn_record r = { .time_ns = t + k, .id = 1, .kind = k % 2 ? RGN_END : RGN_BEGIN };

		memcpy(seg + sizeof(h) + k * sizeof(r), &r, sizeof(r));
	}
}

/*
 * A tid given again: thread 100 ends and a later thread of the process is
 * 100 too. Its segments start again at seq 0; read as (tid, seq) the two
 * chains were interleaved and the later one's records taken for torn.
 */
static void test_reused_tid(void)
{
	size_t len;
	uint8_t *b = hand_file(9, &len);
	struct rgn_set s;
	static const struct {
		int32_t tid;
		size_t nr;
		uint64_t first, last, dropped;
		const char *comm;
	} want[] = {
		{ 7, 4, 6000, 6003, 0, "t7.0" },        /* seq 0 ... */
		{ 7, 4, 7000, 7003, 0, "t7.2" },        /* ... and 2: not one thread's */
		{ 9, 2, 8000, 8001, 0, "t9.4294967295" },
		{ 9, 2, 9000, 9001, 0, "t9.0" },        /* seq 0 begins a thread, even after 2^32 - 1 */
		{ 50, 4, 1500, 1503, 0, "t50.0" },
		{ 100, 16, 1000, 2003, 0, "t100.0" },   /* the first thread 100: two full segments */
		{ 100, 16, 3000, 4003, 5, "t100.0" },   /* the second, whose last one dropped 5 */
	};

	hand_segment(b, 0, 100, 0, 12, 1000, 0);
	hand_segment(b, 1, 50, 0, 4, 1500, 0);
	hand_segment(b, 2, 100, 1, 4, 2000, 0);
	hand_segment(b, 3, 100, 0, 12, 3000, 0);
	hand_segment(b, 4, 100, 1, 4, 4000, 5);
	hand_segment(b, 5, 7, 0, 4, 6000, 0);
	hand_segment(b, 6, 7, 2, 4, 7000, 0);
	hand_segment(b, 7, 9, UINT32_MAX, 2, 8000, 0);
	hand_segment(b, 8, 9, 0, 2, 9000, 0);
	rgn_set_init(&s);
	CHECK_EQ_U(rgn_parse(&s, b, len), 0);
	CHECK_EQ_U(s.torn, 0);
	CHECK_EQ_U(s.events, 12 + 4 + 4 + 12 + 4 + 4 + 4 + 2 + 2);
	CHECK_EQ_U(s.nr_threads, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < s.nr_threads && i < sizeof(want) / sizeof(want[0]); i++) {
		const struct rgn_thread *t = &s.threads[i];

		CHECK_EQ_U(t->pid, 42);
		CHECK_EQ_U(t->tid, want[i].tid);
		CHECK_EQ_U(t->nr, want[i].nr);
		CHECK_EQ_U(t->dropped, want[i].dropped);
		CHECK(!strcmp(t->comm, want[i].comm));
		if (t->nr) {
			CHECK_EQ_U(t->ev[0].time_ns, want[i].first);
			CHECK_EQ_U(t->ev[t->nr - 1].time_ns, want[i].last);
		}
		for (size_t j = 1; j < t->nr; j++)
			CHECK(t->ev[j].time_ns > t->ev[j - 1].time_ns);
	}
	rgn_set_release(&s);
	free(b);
}

int main(int argc, char **argv)
{
	char rt[PATH_MAX], self[PATH_MAX];

	if (argc == 2 && !strcmp(argv[1], "--errno"))
		return errno_child();
	if (!realpath(argv[0], self_path))
		return 1;
	/* build/tests/unit/test_regions -> build/libproftool-rt.so */
	snprintf(self, sizeof(self), "%s", argv[0]);
	snprintf(rt, sizeof(rt), "%s/../../libproftool-rt.so", dirname(self));
	if (access(rt, R_OK)) {
		fprintf(stderr, "# no runtime at %s (make builds it)\n", rt);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/proftool-regions-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	setenv("PROFTOOL_REGIONS", dir, 1);
	setenv("PROFTOOL_RT", rt, 1);
	RUN(test_api_and_reader);
	RUN(test_full_file);
	RUN(test_full_disk);
	RUN(test_errno);
	RUN(test_million);
	RUN(test_hostile);
	RUN(test_reused_tid);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (!getenv("KEEP") && system(cmd) != 0)
			fprintf(stderr, "# could not remove %s\n", dir);
	}
	UNIT_DONE();
}
