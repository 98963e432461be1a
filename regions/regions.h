// SPDX-License-Identifier: MIT
/*
 * Regions: reading the event files a recorded program wrote (format.h),
 * and joining their regions with the profile's samples. Depends on base/
 * and profile/; the runtime that writes the files (rt.c) on nothing.
 */
#ifndef PROFTOOL_REGIONS_H
#define PROFTOOL_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

#define RGN_NO_NAME UINT32_MAX

struct rgn_event {
	uint64_t time_ns;               /* CLOCK_MONOTONIC */
	uint32_t name;                  /* index into rgn_set.names; RGN_NO_NAME for pause/resume */
	uint16_t kind;                  /* enum rgn_kind */
};

/*
 * One thread's events from one file, in the order it wrote them. A tid the
 * kernel gave again to a later thread of the process is another rgn_thread
 * (after the first one in rgn_set.threads).
 */
struct rgn_thread {
	int32_t pid, tid;
	char comm[16];
	struct rgn_event *ev;
	size_t nr, alloc;
	uint64_t dropped;
};

struct rgn_name_entry {
	char *domain;                   /* "" for the default domain */
	char *name;
};

/* What the files of a recording held. */
struct rgn_set {
	struct rgn_name_entry *names;   /* unique by (domain, name) */
	size_t nr_names, alloc_names;
	struct rgn_thread *threads;
	size_t nr_threads, alloc_threads;
	uint64_t events;                /* read */
	uint64_t dropped;               /* written by nobody: the files had no room */
	uint64_t torn;                  /* records cut short or malformed, left out */
	size_t files, bad_files;        /* read; not region files or unreadable */
	struct idx name_idx;
};

void rgn_set_init(struct rgn_set *s);
void rgn_set_release(struct rgn_set *s);

/*
 * Adds the events of one file's contents to S. Never trusts them: a record
 * that does not fit, a name id the file never gave, a kind it does not
 * know end that segment there (counted torn). Returns 0, or -EINVAL when
 * BUF is not a region file at all (counted in bad_files).
 */
int rgn_parse(struct rgn_set *s, const uint8_t *buf, size_t len);

/* Reads every *.rgn file of DIR into S: 0, or a negative errno when DIR cannot be read. */
int rgn_read_dir(struct rgn_set *s, const char *dir);

/*
 * Joins the events of S with P, recorded from START_NS to END_NS
 * (CLOCK_MONOTONIC; a whole recording, or one snapshot of it: only the
 * events of that span are counted): per thread (by pid and tid; every writer's events
 * merged by time) its regions become instances in P nested by path, its
 * marks marks; an end closes the innermost open region of its name (the
 * regions of its domain opened inside it and not ended close with it,
 * counted unbalanced, those of other domains stay open; an end with
 * nothing to close is counted and left out); a
 * region still open at the end is closed at END_NS and flagged
 * PROFILE_REGION_OPEN_AT_END when ALIVE (may be NULL) says its process
 * still runs, else where its thread's events and samples end, flagged
 * PROFILE_REGION_OPEN_AT_EXIT. PAUSE..RESUME of any
 * process pause the whole recording: those spans go into P's pauses, the
 * samples in them are dropped and the regions and marks begun in them
 * are left out. A region begun before START_NS (attach: the program ran
 * before) counts from START_NS, flagged PROFILE_REGION_OPEN_AT_START; one
 * that ended before it is left out. Every sample gets the innermost
 * region its thread was in.
 * A thread with events and no sample gets an entry of its own. S's
 * counts go into P's meta.
 */
void rgn_join(struct profile *p, struct rgn_set *s, uint64_t start_ns, uint64_t end_ns,
	      bool (*alive)(int32_t pid));

#endif
