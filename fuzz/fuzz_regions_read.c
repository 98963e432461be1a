// SPDX-License-Identifier: MIT
/* libFuzzer target: the region event file reader (regions/read.c) on arbitrary bytes, its result checked. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regions/format.h"
#include "regions/regions.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void fail(const char *what, unsigned long long a, unsigned long long b)
{
	fprintf(stderr, "fuzz_regions_read: %s (%llu, %llu)\n", what, a, b);
	abort();
}

/* The counts of a set, to compare two parses. */
struct tally {
	size_t names, threads, files, bad_files;
	uint64_t events, dropped, torn, thread_dropped;
};

static struct tally tally_of(const struct rgn_set *s)
{
	struct tally t = { s->nr_names, s->nr_threads, s->files, s->bad_files, s->events, s->dropped, s->torn, 0 };

	for (size_t i = 0; i < s->nr_threads; i++)
		t.thread_dropped += s->threads[i].dropped;
	return t;
}

/*
 * What rgn_parse made of DATA, against what the bytes can hold: events
 * only from whole records past the header and the names area, every
 * event of a kind the format has, naming a name the set holds (pause and
 * resume none), each thread's in time order.
 */
static void check(const struct rgn_set *s, const uint8_t *data, size_t size, int ret)
{
	struct rgn_header h;
	uint64_t room, events = 0;

	if (ret == -EINVAL) {
		if (s->files || s->bad_files != 1 || s->events || s->nr_threads || s->nr_names)
			fail("a file refused left something behind", s->events, s->nr_threads);
		return;
	}
	if (ret != 0)
		fail("rgn_parse returned neither 0 nor -EINVAL", (unsigned long long)-ret, 0);
	if (s->files != 1 || s->bad_files)
		fail("a file taken is not counted as one", s->files, s->bad_files);
	memcpy(&h, data, sizeof(h));
	/* the segments start past the names area (header_size <= size, or the file was refused) */
	room = h.names_size < size && h.header_size + h.names_size < size ? size - h.header_size - h.names_size : 0;
	if (s->dropped != h.dropped)
		fail("dropped is not the header's", s->dropped, h.dropped);
	for (size_t i = 0; i < s->nr_names; i++)
		if (!s->names[i].domain || !s->names[i].name)
			fail("a name without text", i, 0);
	for (size_t i = 0; i < s->nr_threads; i++) {
		const struct rgn_thread *t = &s->threads[i];

		if ((uint32_t)t->pid != h.pid)
			fail("a thread of another pid", (uint32_t)t->pid, h.pid);
		if (!memchr(t->comm, '\0', sizeof(t->comm)))
			fail("a thread name without its NUL", i, 0);
		for (size_t j = 0; j < t->nr; j++) {
			const struct rgn_event *e = &t->ev[j];

			if (e->kind < RGN_BEGIN || e->kind > RGN_RESUME)
				fail("an event of no kind", j, e->kind);
			if (e->kind <= RGN_MARK ? e->name >= s->nr_names : e->name != RGN_NO_NAME)
				fail("an event's name", e->kind, e->name);
			if (j && e->time_ns < t->ev[j - 1].time_ns)
				fail("a thread's time goes back", e->time_ns, t->ev[j - 1].time_ns);
		}
		events += t->nr;
	}
	if (events != s->events)
		fail("the threads' events are not the set's", events, s->events);
	/* every thread took a segment header at least, every event a record */
	if (s->nr_threads * sizeof(struct rgn_segment) + events * sizeof(struct rgn_record) > room)
		fail("more read than lies past the names", s->nr_threads, events);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rgn_set s;
	struct tally one, two;
	int ret;

	rgn_set_init(&s);
	ret = rgn_parse(&s, data, size);
	check(&s, data, size, ret);
	/* the same file again into the same set, as rgn_read_dir adds file after file: names are shared */
	one = tally_of(&s);
	if (rgn_parse(&s, data, size) != ret)
		fail("a second parse returned something else", (unsigned long long)-ret, 0);
	two = tally_of(&s);
	if (two.names != one.names || two.threads != 2 * one.threads || two.files != 2 * one.files ||
	    two.bad_files != 2 * one.bad_files || two.events != 2 * one.events || two.dropped != 2 * one.dropped ||
	    two.torn != 2 * one.torn || two.thread_dropped != 2 * one.thread_dropped)
		fail("a second parse of the same bytes read something else", one.events, two.events);
	rgn_set_release(&s);
	return 0;
}
