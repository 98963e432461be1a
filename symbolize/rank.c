// SPDX-License-Identifier: MIT
/* A process's rank in a distributed job, from the variables its launcher (torchrun, mpirun, srun) put in its environment. */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/*
 * Each launcher's names, the first one set to a number winning. The
 * generic names come first (torchrun, and what most wrappers export), then
 * the MPIs' own, then Slurm's, since a job step's SLURM_PROCID is also
 * inherited by an mpirun started inside it, where it says 0 for every rank.
 */
static const char *const rank_vars[] = {
	"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK",
	"SLURM_PROCID",
};
static const char *const local_vars[] = {
	"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
	"SLURM_LOCALID",
};
static const char *const size_vars[] = {
	"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS",
};

/* Environments larger than this are not read past it (Linux allows a few MiB of arguments and environment). */
#define ENVIRON_MAX (8u << 20)

/* S as a whole decimal number in LO..INT32_MAX, or -1: no sign, no space, nothing after it. */
static int32_t number(const char *s, int32_t lo)
{
	int64_t v = 0;

	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > INT32_MAX)
			return -1;
	}
	return v >= lo ? (int32_t)v : -1;
}

/* The first of NAMES whose value (LOOKUP's) is a number from LO, else -1. */
static int32_t first_number(const char *const *names, size_t n, int32_t lo,
			    const char *(*lookup)(const char *name, void *arg), void *arg)
{
	for (size_t i = 0; i < n; i++) {
		int32_t v = number(lookup(names[i], arg), lo);

		if (v >= 0)
			return v;
	}
	return -1;
}

void sym_rank_parse(const char *(*lookup)(const char *name, void *arg), void *arg,
		    struct profile_rank *out)
{
	int32_t size = first_number(size_vars, ARRAY_SIZE(size_vars), 1, lookup, arg);

	out->rank = first_number(rank_vars, ARRAY_SIZE(rank_vars), 0, lookup, arg);
	out->local_rank = first_number(local_vars, ARRAY_SIZE(local_vars), 0, lookup, arg);
	out->world_size = size > 0 ? size : 0;
	if (out->rank < 0)
		out->rank = PROFILE_RANK_NONE;
	if (out->local_rank < 0)
		out->local_rank = PROFILE_RANK_NONE;
}

static const char *own_lookup(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

void sym_rank_of_self(struct profile_rank *out)
{
	sym_rank_parse(own_lookup, NULL, out);
}

struct environ_block {
	const char *buf;        /* NAME=VALUE entries, each ended by a NUL */
	size_t len;
};

/* The value of NAME in the block, the first entry that sets it (as getenv finds it). */
static const char *block_lookup(const char *name, void *arg)
{
	const struct environ_block *b = arg;
	size_t len = strlen(name);

	for (size_t at = 0; at < b->len; at += strlen(b->buf + at) + 1)
		if (!strncmp(b->buf + at, name, len) && b->buf[at + len] == '=')
			return b->buf + at + len + 1;
	return NULL;
}

void sym_rank_of_environ(const char *buf, size_t len, struct profile_rank *out)
{
	struct environ_block b = { buf, len };

	sym_rank_parse(block_lookup, &b, out);
}

int sym_rank_of_pid(int32_t pid, struct profile_rank *out)
{
	char path[64], *buf = NULL;
	size_t len = 0, alloc = 0;
	int fd, ret = 0;

	*out = (struct profile_rank)PROFILE_RANK_INIT;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < ENVIRON_MAX) {
		ssize_t n;

		ALLOC_GROW(buf, len + 65536 + 1, alloc);
		n = read(fd, buf + len, alloc - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	if (!ret) {
		buf[len] = '\0';       /* an entry cut short at ENVIRON_MAX still ends */
		sym_rank_of_environ(buf, len, out);
	}
	free(buf);
	return ret;
}
