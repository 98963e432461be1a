// SPDX-License-Identifier: MIT
/* The sample path: unwinding a sample's stack and interning it as (module, offset) frames. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "internal.h"
#include "pysample.h"

uint32_t ss_intern_frame(struct sym_session *ss, uint32_t module, uint64_t off)
{
	uint64_t h = hash_combine(hash_u64(module), off);
	uint32_t *hot = &ss->hot_frame[h & (SS_HOT - 1)], id = *hot - 1;
	size_t pos = 0;

	if (*hot && ss->frames[id].module == module && ss->frames[id].off == off)
		return id;
	while ((id = idx_next(&ss->frame_idx, h, &pos)) != IDX_NONE)
		if (ss->frames[id].module == module && ss->frames[id].off == off)
			goto found;
	ALLOC_GROW(ss->frames, ss->nr_frames + 1, ss->alloc_frames);
	id = ss->nr_frames++;
	ss->frames[id].module = module;
	ss->frames[id].off = off;
	ss->frames[id].map_start = ss->frames[id].map_end = 0;
	idx_insert(&ss->frame_idx, h, id);
found:
	*hot = id + 1;
	return id;
}

/*
 * A node's key, (PARENT, FRAME) hashed: hash_u64 is a bijection, so a slot
 * holding this hash is the node's, with no need to look at the node itself
 * (another cache miss, on a long run's table).
 */
static uint64_t node_key(uint32_t parent, uint32_t frame)
{
	return hash_u64((uint64_t)parent << 32 | frame);
}

static uint32_t intern_node(struct sym_session *ss, uint32_t parent, uint32_t frame)
{
	uint64_t h = node_key(parent, frame);
	struct idx_slot *hot = &ss->hot_node[h & (SS_HOT - 1)];
	size_t pos = 0;
	uint32_t id;

	if (hot->id && hot->hash == h)
		return hot->id - 1;
	id = idx_next(&ss->node_idx, h, &pos);
	if (id == IDX_NONE) {
		ALLOC_GROW(ss->nodes, ss->nr_nodes + 1, ss->alloc_nodes);
		id = ss->nr_nodes++;
		ss->nodes[id].parent = parent;
		ss->nodes[id].frame = frame;
		idx_insert(&ss->node_idx, h, id);
	}
	*hot = (struct idx_slot){ h, id + 1 };
	return id;
}

static uint32_t user_frame(struct sym_session *ss, const struct aspace *as, uint64_t addr)
{
	const struct map *m = as ? ss_aspace_find(as, addr) : NULL;

	if (!m)
		return ss_intern_frame(ss, MOD_UNKNOWN, 0);
	if (!ss->mods[m->module].is_file) {
		/* JIT code: named by its address, or else by its mapping, at finish */
		uint32_t id = ss_intern_frame(ss, m->module, addr);

		if (!ss->frames[id].map_end) {
			ss->frames[id].map_start = m->start;
			ss->frames[id].map_end = m->end;
		}
		return id;
	}
	return ss_intern_frame(ss, m->module, addr - m->start + m->pgoff);
}

/*
 * The unwinder's view of an address in PR: the file's CFI, read at its
 * first use and kept for every process that maps the file, and the
 * mapping's load bias, computed once per mapping.
 */
struct code_arg {
	struct sym_session *ss;
	struct proc *pr;
};

static void code_at(void *arg, uint64_t pc, struct sym_code *out)
{
	struct code_arg *a = arg;
	struct map *m = ss_aspace_find(&a->pr->as, pc);
	struct module *mod = m ? &a->ss->mods[m->module] : NULL;

	out->cfi = NULL;
	out->bias = 0;
	out->module = UINT32_MAX;
	if (!mod || !mod->is_file)
		return;
	if (!mod->cfi_tried) {
		int fd = mod->fd >= 0 ? mod->fd : open(mod->path, O_RDONLY | O_CLOEXEC);

		mod->cfi_tried = true;
		mod->cfi = fd >= 0 ? sym_cfi_open(fd) : NULL;
		if (fd >= 0 && fd != mod->fd)
			close(fd);
	}
	if (!mod->cfi)
		return;
	if (m->bias_state == BIAS_UNKNOWN)
		m->bias_state = sym_cfi_bias(mod->cfi, m->start, m->pgoff, &m->bias) ? BIAS_OK : BIAS_NONE;
	if (m->bias_state != BIAS_OK)
		return;
	out->cfi = mod->cfi;
	out->bias = m->bias;
	out->module = m->module;
}

/*
 * The frames of user addresses PCS (NR, innermost first) into OUT: those
 * of the outer ones the thread's last stack shares, from it (the same
 * addresses in the same maps, which KEY says), the rest looked up. LAST
 * then holds these.
 */
static void user_frames(struct sym_session *ss, struct ss_last *last, uint64_t key,
			const struct proc *pr, const uint64_t *pcs, uint32_t nr, uint32_t *out)
{
	uint32_t same = 0;
	size_t alloc = last->alloc_pcs;

	if (last->key == key)
		while (same < nr && same < last->nr_pcs &&
		       pcs[nr - 1 - same] == last->pcs[last->nr_pcs - 1 - same])
			same++;
	for (uint32_t i = nr - same; i < nr; i++)
		out[i] = last->frames[last->nr_pcs - (nr - i)];
	for (uint32_t i = 0; i < nr - same; i++)
		out[i] = user_frame(ss, pr ? &pr->as : NULL, pcs[i]);
	ALLOC_GROW(last->pcs, nr, last->alloc_pcs);
	if (last->alloc_pcs != alloc)
		last->frames = xrealloc(last->frames, st_mult(last->alloc_pcs, sizeof(*last->frames)));
	if (nr) {
		memcpy(last->pcs, pcs, nr * sizeof(*pcs));
		memcpy(last->frames, out, nr * sizeof(*out));
	}
	last->nr_pcs = nr;
	last->key = key;
}

/* The node of PATH (NR frames, root first): the part the last path shares, from it. */
static uint32_t path_node(struct sym_session *ss, struct ss_last *last, const uint32_t *path, size_t nr)
{
	size_t k = 0;
	uint32_t node = PROFILE_NONE;

	while (k < nr && k < last->nr_path && path[k] == last->path[k])
		k++;
	if (k)
		node = last->nodes[k - 1];
	if (nr > last->alloc_path) {
		last->alloc_path = nr + nr / 2;
		last->path = xrealloc(last->path, st_mult(last->alloc_path, sizeof(*last->path)));
		last->nodes = xrealloc(last->nodes, st_mult(last->alloc_path, sizeof(*last->nodes)));
	}
	for (; k < nr; k++) {
		node = intern_node(ss, node, path[k]);
		last->path[k] = path[k];
		last->nodes[k] = node;
	}
	last->nr_path = nr;
	return node;
}

/* Finds the module of ADDR in PR's address space (for naming a stop reason). */
static uint32_t module_at(const struct proc *pr, uint64_t addr)
{
	const struct map *m = pr ? ss_aspace_find(&pr->as, addr) : NULL;

	return m ? m->module : UINT32_MAX;
}

/* PROFTOOL_DEBUG_UNWIND: the walk that took TOOK frames from its memo, against one without. */
static void check_memo(struct sym_session *ss, struct code_arg *ca, const struct sampler_rec *r,
		       size_t took, uint32_t nr, enum sym_stop stop, uint32_t stop_module, uint32_t scanned)
{
	enum sym_stop stop2;
	uint32_t stop_module2, scanned2, nr2;

	if (!ss->pcs_check)
		ss->pcs_check = xmalloc(SYM_MAX_FRAMES * sizeof(*ss->pcs_check));
	nr2 = (uint32_t)sym_unwind(code_at, ca, r->sample.regs, r->sample.stack, r->sample.stack_size,
				   !ss->opts.no_unwind_scan, NULL, 0, ss->pcs_check, &stop2, &stop_module2,
				   &scanned2);
	ss->memo_walks++;
	ss->memo_took += took > 0;
	ss->memo_frames += took;
	if (nr != nr2 || stop != stop2 || stop_module != stop_module2 || scanned != scanned2 ||
	    memcmp(ss->pcs, ss->pcs_check, nr * sizeof(*ss->pcs)))
		ss->memo_differ++;
}

void ss_on_sample(struct sym_session *ss, const struct sampler_rec *r)
{
	const uint64_t *chain = r->sample.chain;
	uint32_t nk = r->sample.nr_kernel;
	uint32_t t = ss_get_thread(ss, r->pid, r->tid, NULL);
	struct proc *pr = ss_proc_of_thread(ss, t);
	uint32_t node = PROFILE_NONE, nr_user = 0;
	enum sym_stop stop = SYM_STOP_NONE;
	uint32_t stop_module = UINT32_MAX, scanned = 0;
	const uint64_t *user;
	const uint32_t *frames;
	size_t nr_frames, np = 0;
	/* the thread's unwind memo and last stack: one slot, for the thread in its maps */
	uint64_t key = hash_combine(hash_u64((uint64_t)(uint32_t)r->pid << 32 | (uint32_t)r->tid),
				    pr ? pr->as.gen : 0);
	struct ss_last **last = &ss->last[key % SS_MEMOS];

	if (!ss->pcs)
		ss->pcs = xmalloc(SYM_MAX_FRAMES * sizeof(*ss->pcs));
	if (r->sample.regs && r->sample.stack && pr) {
		/* DWARF: unwind the copied stack now; the copy dies with this record */
		struct code_arg ca = { ss, pr };
		struct sym_memo **memo = &ss->memos[key % SS_MEMOS];

		if (!*memo)
			*memo = sym_memo_new();
		nr_user = sym_unwind(code_at, &ca, r->sample.regs, r->sample.stack,
				     r->sample.stack_size, !ss->opts.no_unwind_scan, *memo, key, ss->pcs,
				     &stop, &stop_module, &scanned);
		if (ss->memo_check)
			check_memo(ss, &ca, r, sym_memo_took(*memo), nr_user, stop, stop_module, scanned);
		user = ss->pcs;
	} else {
		/* frame pointers: callers are return addresses, so look up the call (addr - 1) */
		nr_user = r->sample.nr_chain - nk;
		if (nr_user > SYM_MAX_FRAMES)
			nr_user = SYM_MAX_FRAMES;
		for (uint32_t i = 0; i < nr_user; i++)
			ss->pcs[i] = i ? chain[nk + i] - 1 : chain[nk + i];
		user = ss->pcs;
		if (r->sample.chain_full)
			stop = SYM_STOP_DEPTH;
		/*
		 * Past a function built without frame pointers (ld.so's, most
		 * libraries') the kernel's walk reads whatever the register held:
		 * a caller in no mapping is such garbage, and the stack ends there
		 * instead of growing [unknown] roots.
		 */
		for (uint32_t i = 1; pr && i < nr_user; i++) {
			if (module_at(pr, ss->pcs[i]) == UINT32_MAX) {
				nr_user = i;
				stop = SYM_STOP_NO_MAPPING;
				break;
			}
		}
	}
	if (!nr_user && !nk && !r->sample.extra_size)
		return;
	if (!ss->stack_frames) {
		ss->stack_frames = xmalloc(SYM_MAX_FRAMES * sizeof(*ss->stack_frames));
		ss->merged = xmalloc((SYM_MAX_FRAMES + PY_MAX_DEPTH) * sizeof(*ss->merged));
	}
	if (!*last)
		*last = xcalloc(1, sizeof(**last));
	user_frames(ss, *last, key, pr, user, nr_user, ss->stack_frames);
	if (ss->memo_check)
		for (uint32_t i = 0; i < nr_user; i++)
			ss->memo_differ += ss->stack_frames[i] != user_frame(ss, pr ? &pr->as : NULL, user[i]);
	frames = ss->stack_frames;
	nr_frames = nr_user;
	if (r->sample.extra_size) {
		/*
		 * A stack continued by scanning may end short of its thread's
		 * entry without a stop reason: the Python runs its eval loops do
		 * not account for go on outwards, as for a cut one
		 */
		nr_frames = ss_py_merge(ss, r->sample.extra, r->sample.extra_size, user, frames,
					nr_user, stop != SYM_STOP_NONE || scanned, ss->merged);
		frames = ss->merged;
	}
	if (!nr_frames && !nk)
		return;
	/*
	 * Why the walk stopped rides along as a pseudo root frame; finishing
	 * decides, once names are known, whether the stack was complete anyway
	 * (ld.so's _start has no CFI and is still the root).
	 */
	ALLOC_GROW(ss->path, nr_frames + nk + 1, ss->alloc_path);
	if (stop != SYM_STOP_NONE)
		ss->path[np++] = ss_intern_frame(ss, MOD_STOP, (uint64_t)stop << 32 | stop_module);
	for (size_t i = nr_frames; i-- > 0;)
		ss->path[np++] = frames[i];
	/* kernel frames, outermost first; callers are return addresses too */
	for (uint32_t i = nk; i-- > 0;)
		ss->path[np++] = ss_intern_frame(ss, MOD_KERNEL, i ? chain[i] - 1 : chain[i]);
	node = path_node(ss, *last, ss->path, np);
	if (ss->memo_check) {
		uint32_t whole = PROFILE_NONE;

		for (size_t i = 0; i < np; i++)
			whole = intern_node(ss, whole, ss->path[i]);
		ss->memo_differ += whole != node;
	}
	ss->scanned += scanned > 0;
	/* the process's resident memory when its first sample was taken (perf backend) */
	if (r->sample.rss && pr)
		profile_add_rss(ss->prof, pr->out, r->time > ss->opts.start_ns ? r->time - ss->opts.start_ns : 0,
				r->sample.rss, r->sample.rss_anon);
	profile_add_sample(ss->prof, r->time > ss->opts.start_ns ? r->time - ss->opts.start_ns : 0,
			   t, node, !ss->opts.weight_is_period ? ss->opts.weight_ns :
			   r->sample.period > UINT32_MAX ? UINT32_MAX : (uint32_t)r->sample.period,
			   r->sample.state == SAMPLER_STATE_RUNNING ? PROFILE_STATE_ON_CPU :
			   r->sample.state == SAMPLER_STATE_WAITING ? PROFILE_STATE_OFF_CPU :
			   PROFILE_STATE_UNKNOWN);
}
