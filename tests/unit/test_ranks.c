// SPDX-License-Identifier: MIT
/* Unit tests for ranks: reading a process's rank, local rank and world size from an environment block. */
#include <string.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "unit.h"

/* ENV: entries separated by '|', as /proc/PID/environ separates them by NULs. */
static void parse(const char *env, struct profile_rank *out)
{
	char buf[512];
	size_t len = strlen(env);

	memcpy(buf, env, len + 1);
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '|')
			buf[i] = '\0';
	sym_rank_of_environ(buf, len, out);
}

static void from_environ(void)
{
	static const struct {
		const char *env;
		int32_t rank, local, size;
	} cases[] = {
		{ "", -1, -1, 0 },
		{ "PATH=/bin|HOME=/root", -1, -1, 0 },
		{ "RANK=3|LOCAL_RANK=1|WORLD_SIZE=8", 3, 1, 8 },
		{ "RANK=0|WORLD_SIZE=1", 0, -1, 1 },
		/* torchrun's first, then the MPIs', then Slurm's */
		{ "SLURM_PROCID=0|OMPI_COMM_WORLD_RANK=5|OMPI_COMM_WORLD_SIZE=6|SLURM_NTASKS=1", 5, -1, 6 },
		{ "PMI_RANK=2|PMI_SIZE=4|MPI_LOCALRANKID=0", 2, 0, 4 },
		{ "PMIX_RANK=9", 9, -1, 0 },
		{ "SLURM_PROCID=7|SLURM_LOCALID=3|SLURM_NTASKS=16", 7, 3, 16 },
		{ "MV2_COMM_WORLD_RANK=4|MV2_COMM_WORLD_LOCAL_RANK=0|MV2_COMM_WORLD_SIZE=5", 4, 0, 5 },
		/* what is not a whole decimal number is passed over, never read as 0 */
		{ "RANK=abc", -1, -1, 0 },
		{ "RANK=abc|SLURM_PROCID=2", 2, -1, 0 },
		{ "RANK=-1|WORLD_SIZE=-4", -1, -1, 0 },
		{ "RANK=+1", -1, -1, 0 },
		{ "RANK= 1|LOCAL_RANK=1 ", -1, -1, 0 },
		{ "RANK=|WORLD_SIZE=0", -1, -1, 0 },
		{ "RANK=1e3", -1, -1, 0 },
		{ "RANK=2147483647|WORLD_SIZE=2147483648", 2147483647, -1, 0 },
		{ "RANK=99999999999999999999", -1, -1, 0 },
		{ "RANK=007", 7, -1, 0 },
		/* the first entry of a name wins, as getenv's; names are whole */
		{ "RANK=1|RANK=2", 1, -1, 0 },
		{ "XRANK=4|RANKS=5|RANK_=6|rank=7", -1, -1, 0 },
		{ "RANK", -1, -1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct profile_rank r = { 99, 99, 99 };

		parse(cases[i].env, &r);
		if (r.rank != cases[i].rank || r.local_rank != cases[i].local ||
		    r.world_size != cases[i].size)
			fprintf(stderr, "# '%s': %d %d %d\n", cases[i].env, (int)r.rank,
				(int)r.local_rank, (int)r.world_size);
		CHECK(r.rank == cases[i].rank);
		CHECK(r.local_rank == cases[i].local);
		CHECK(r.world_size == cases[i].size);
	}
}

static void of_pid(void)
{
	struct profile_rank r = { 99, 99, 99 };

	/* a process that is not there has none */
	CHECK(sym_rank_of_pid(0x7ffffff0, &r) < 0);
	CHECK(r.rank == PROFILE_RANK_NONE && r.local_rank == PROFILE_RANK_NONE && r.world_size == 0);
}

int main(void)
{
	RUN(from_environ);
	RUN(of_pid);
	UNIT_DONE();
}
