// SPDX-License-Identifier: MIT
/* Regions for record and attach: where the programs write their events, and joining them at the end. */
#ifndef PROFTOOL_CMD_REGIONS_H
#define PROFTOOL_CMD_REGIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rgn_control;

/* --regions */
enum regions_mode { REGIONS_OFF, REGIONS_AUTO, REGIONS_ITT, REGIONS_ALL };

struct regions_run {
	enum regions_mode mode;
	char *dir;              /* where the programs write; NULL: no regions */
	bool own;               /* made by record, removed at the end */
	struct rgn_control *sw; /* the directory's pause switch, mapped */
	uint64_t sw_seq;        /* its seq when last looked at */
};

/* "off", "auto", "itt", "all": 0, or -EINVAL. */
int regions_parse_mode(const char *arg, enum regions_mode *out);

/*
 * record: makes a private directory under TMPDIR and names it (and the
 * runtime, and for itt/all the ITT collector) in our environment, which
 * the command inherits. Prints the error and returns a negative errno
 * when it cannot.
 */
int regions_prepare_record(struct regions_run *rr);
/* attach: the directory PID was started with (PROFTOOL_REGIONS), if any. Never fails. */
int regions_prepare_attach(struct regions_run *rr, pid_t pid);

/*
 * Whether the programs paused themselves (proftool_pause): 1 paused, 0
 * resumed, -1 no change since the last call (or no switch).
 */
int regions_switch(struct regions_run *rr);

struct profile;
/* Reads what the programs wrote and joins it with P (rgn_join); warnings on stderr. */
void regions_finish(struct regions_run *rr, struct profile *p, uint64_t start_ns, uint64_t end_ns);
/* Removes a directory record made, with its files; frees RR's. */
void regions_release(struct regions_run *rr);

#endif
