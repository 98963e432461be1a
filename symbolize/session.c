// SPDX-License-Identifier: MIT
/* A symbolizer session: its lifetime and the records it follows, in time order. */
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"
#include "session.h"

struct sym_session *sym_session_new(const struct sym_opts *opts)
{
	struct sym_session *ss = xcalloc(1, sizeof(*ss));
	static const char *const special[] = { "[unknown]", "[kernel]", "[stop]", "[python]" };

	ss->opts = *opts;
	ss->spill_dir = xstrdup_or_null(opts->spill_dir);
	ss->opts.spill_dir = ss->spill_dir;
	ss->prof = profile_new();
	ss->memo_check = getenv("PROFTOOL_DEBUG_UNWIND") != NULL;
	/* without a spill file samples stay in memory: slower to grow, nothing lost */
	if (opts->spill_dir && opts->spill_chunk)
		(void)profile_spill_start(ss->prof, opts->spill_dir, opts->spill_chunk);
	for (size_t i = 0; i < ARRAY_SIZE(special); i++) {
		ALLOC_GROW(ss->mods, ss->nr_mods + 1, ss->alloc_mods);
		memset(&ss->mods[ss->nr_mods], 0, sizeof(*ss->mods));
		ss->mods[ss->nr_mods].path = xstrdup(special[i]);
		ss->mods[ss->nr_mods].name = xstrdup(special[i]);
		ss->mods[ss->nr_mods].fd = -1;
		ss->nr_mods++;
	}
	return ss;
}

void sym_session_free(struct sym_session *ss)
{
	if (!ss)
		return;
	ss_close_statm(ss);
	for (size_t i = 0; i < ss->nr_mods; i++) {
		free(ss->mods[i].path);
		free(ss->mods[i].name);
		if (ss->mods[i].fd >= 0)
			close(ss->mods[i].fd);
		sym_cfi_free(ss->mods[i].cfi);
		sym_elf_close(ss->mods[i].elf);
	}
	profile_free(ss->names);
	free(ss->spill_dir);
	free(ss->res_start);
	free(ss->res_count);
	free(ss->res_locs);
	sym_kallsyms_free(ss->ksyms);
	for (size_t i = 0; i < ss->nr_procs; i++)
		free(ss->procs[i].as.maps);
	free(ss->pcs);
	free(ss->pcs_check);
	for (size_t i = 0; i < SS_MEMOS; i++) {
		sym_memo_free(ss->memos[i]);
		if (ss->last[i]) {
			free(ss->last[i]->pcs);
			free(ss->last[i]->frames);
			free(ss->last[i]->path);
			free(ss->last[i]->nodes);
			free(ss->last[i]);
		}
	}
	free(ss->path);
	free(ss->stack_frames);
	free(ss->merged);
	free(ss->py_stats);
	free(ss->py_runs);
	free(ss->py_evals);
	free(ss->mods);
	free(ss->procs);
	free(ss->frames);
	free(ss->nodes);
	idx_release(&ss->mod_idx);
	idx_release(&ss->pid_idx);
	idx_release(&ss->tid_idx);
	idx_release(&ss->frame_idx);
	idx_release(&ss->node_idx);
	profile_free(ss->prof);
	free(ss);
}

int sym_session_add(struct sym_session *ss, const struct sampler_rec *r)
{
	switch (r->type) {
	case SAMPLER_REC_SAMPLE:
		ss_on_sample(ss, r);
		break;
	case SAMPLER_REC_MMAP:
		ss_on_mmap(ss, r);
		break;
	case SAMPLER_REC_COMM:
		ss_on_comm(ss, r);
		break;
	case SAMPLER_REC_FORK:
		ss_on_fork(ss, r);
		break;
	case SAMPLER_REC_LOST:
		ss->prof->meta.lost += r->lost.count;
		break;
	case SAMPLER_REC_EXIT:
		/* nothing per process outlives its address space, which the next exec or fork replaces */
		break;
	}
	return 0;
}

void sym_session_counts(const struct sym_session *ss, struct sym_counts *c)
{
	c->samples = profile_nr_samples(ss->prof);
	c->processes = ss->prof->nr_procs;
	c->threads = ss->prof->nr_threads;
}
