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

#endif
