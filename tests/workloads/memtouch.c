// SPDX-License-Identifier: MIT
/*
 * Resident memory for the RSS tests: touch_a first-touches A MiB and
 * touch_b B MiB (default 60 and 20) of fresh anonymous memory, a page at a
 * time, then hold_memory keeps it all resident while it computes for
 * 0.5 s (SCALE), so that readings a few times a second see the peak. With
 * "fork", a child named memchild then touches B MiB of its own the same
 * way. Prints "maxrss KIB" and "minflt N" (getrusage's ru_maxrss and
 * ru_minflt of this process: its peak resident memory and its page faults).
 * Usage: memtouch [A B [SCALE [fork]]]
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

#define MIB (1024ul * 1024ul)
/* Iterations of crunch() that take roughly one second on a modern x86-64 core (as split.c's). */
#define UNITS_PER_SEC 520000000ull

static volatile uint64_t sink;

/* Fresh memory, each page written once: its first touch faults it in (in its caller's frame). */
static inline __attribute__((always_inline)) char *first_touch(size_t mib, char salt)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, mib * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		exit(1);
	for (size_t off = 0; off < mib * MIB; off += (size_t)page)
		m[off] = (char)(off + (size_t)salt);
	return m;
}

/* each its own code (a salt of its own), so that the linker's identical-code folding keeps both */
static __attribute__((noinline)) char *touch_a(size_t mib)
{
	return first_touch(mib, 'a');
}

static __attribute__((noinline)) char *touch_b(size_t mib)
{
	return first_touch(mib, 'b');
}

static __attribute__((noinline)) void hold_memory(double scale)
{
	sink += crunch(7, (uint64_t)(UNITS_PER_SEC / 2 * scale));
}

int main(int argc, char **argv)
{
	size_t a = argc > 1 ? (size_t)parse_count("A", argv[1], 4096) : 60;
	size_t b = argc > 2 ? (size_t)parse_count("B", argv[2], 4096) : 20;
	double scale = argc > 3 ? parse_scale(argv[3]) : 1.0;
	bool fork_child = argc > 4 && !strcmp(argv[4], "fork");
	struct rusage ru;
	char *ma, *mb;
	int status = 0;

	ma = touch_a(a);
	mb = touch_b(b);
	hold_memory(scale);
	if (fork_child) {
		pid_t c = fork();

		if (c == 0) {
			prctl(PR_SET_NAME, "memchild");
			touch_b(b);
			hold_memory(scale);
			_exit(0);
		}
		if (c < 0 || waitpid(c, &status, 0) != c)
			return 1;
	}
	sink += (uint64_t)ma[0] + (uint64_t)mb[0];
	getrusage(RUSAGE_SELF, &ru);
	printf("maxrss %ld\nminflt %ld\n", ru.ru_maxrss, ru.ru_minflt);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
