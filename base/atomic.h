// SPDX-License-Identifier: MIT
/* Files that appear whole or not at all: temporary file, fsync, rename. */
#ifndef PROFTOOL_ATOMIC_H
#define PROFTOOL_ATOMIC_H

#include <stdio.h>
#include <sys/types.h>

/*
 * The temporary file is created with O_EXCL next to PATH (so rename stays on
 * one filesystem and never follows a link someone planted), written through
 * FP, then either committed (flush, fsync, rename over PATH) or aborted
 * (removed). An existing PATH is untouched until the commit succeeds.
 *
 * A PATH that exists and is not a regular file (/dev/null, a FIFO, a
 * terminal) is written in place instead: renaming over a device would
 * replace it, and a stream has nothing to keep whole. Not when another
 * user put it (or the link to it) in a sticky world-writable directory
 * like /tmp: that is replaced like a regular file, never written through.
 */
struct atomic_file {
	char *path;
	char *tmp;              /* NULL when writing in place (see atomic_open) */
	FILE *fp;
};

/* Returns 0 or a negative errno. MODE is applied with the umask. */
int atomic_open(struct atomic_file *af, const char *path, mode_t mode);
/* Returns 0 or a negative errno (a write error caught at flush counts); the temp file is gone either way. */
int atomic_commit(struct atomic_file *af);
/* Removes the temporary file; accepts an af that was never opened. */
void atomic_abort(struct atomic_file *af);

#endif
