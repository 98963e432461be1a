// SPDX-License-Identifier: MIT
/* Finishing a session: resolving each distinct frame once into functions, files and lines. */
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

static const char *const stop_reasons[SYM_STOP_NR] = {
	[SYM_STOP_STACK_COPY] = "stack copy too small",
	[SYM_STOP_MEMORY] = "unreadable memory",
	[SYM_STOP_NO_CFI] = "no CFI",
	[SYM_STOP_NO_MAPPING] = "unknown mapping",
	[SYM_STOP_DEPTH] = "too many frames",
};

struct finish_arg {
	const uint32_t *final, *stop_of;
	uint64_t *stop_count;
};

/* A sample's raw node becomes its symbolized stack; stacks that stopped early are counted. */
static void finish_sample(struct profile_sample *s, void *arg)
{
	struct finish_arg *a = arg;
	uint32_t raw = s->stack;

	if (a->stop_of[raw] != PROFILE_NONE)
		a->stop_count[a->stop_of[raw]]++;
	s->stack = a->final[raw];
}

static int frame_by_module(const void *a, const void *b, void *arg)
{
	const struct rawframe *f = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (f[x].module != f[y].module)
		return f[x].module < f[y].module ? -1 : 1;
	return f[x].off < f[y].off ? -1 : f[x].off > f[y].off;
}

/* Interns the locations for one raw frame; returns how many (outermost first in LOCS). */
static size_t resolve_frame(struct profile *p, const struct module *m, struct sym_elf *elf,
			    const struct sym_kallsyms *ksyms, const struct sym_perfmap *jit,
			    const struct sym_python *py, const struct rawframe *rf, uint32_t *locs)
{
	struct sym_frame fr[SYM_MAX_INLINE];
	char buf[512];
	uint64_t vaddr = rf->off;
	int n = 0;

	if (rf->module == MOD_PYTHON && py) {
		const char *qualname, *filename;
		uint32_t first;

		sym_python_func(py, (uint32_t)(rf->off >> 32), &qualname, &filename, &first);
		locs[0] = profile_add_loc(p, profile_add_func(p, qualname, "[python]", filename, first),
					  (uint32_t)rf->off);
		return 1;
	}

	if (elf && sym_elf_offset_to_vaddr(elf, rf->off, &vaddr))
		n = sym_elf_resolve(elf, vaddr, fr);
	if (n > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t f = profile_add_func(p, fr[i].func, m->name, fr[i].file, fr[i].decl_line);

			locs[i] = profile_add_loc(p, f, fr[i].line);
		}
		return n;
	}
	if (rf->module == MOD_STOP)
		return 0;  /* decided per stack in sym_session_finish */
	if (rf->module == MOD_KERNEL && ksyms && sym_kallsyms_find(ksyms, rf->off)) {
		snprintf(buf, sizeof(buf), "[kernel] %s", sym_kallsyms_find(ksyms, rf->off));
		locs[0] = profile_add_loc(p, profile_add_func(p, buf, "[kernel]", NULL, 0), 0);
		return 1;
	}
	if (jit && !m->is_file) {
		uint64_t start;
		const char *name = sym_perfmap_find(jit, rf->off, &start);

		if (name) {
			locs[0] = profile_add_loc(p, profile_add_func(p, name, PROFILE_JIT_MODULE, NULL, 0), 0);
			return 1;
		}
	}
	/*
	 * JIT code nobody named: one row per mapping, not per address (a
	 * kernel's samples would spread over hundreds of rows otherwise).
	 */
	if (rf->module >= MOD_FIRST_REAL && !m->is_file && rf->map_end &&
	    (!strcmp(m->name, "[anon]") || !strncmp(m->name, "memfd:", 6))) {
		snprintf(buf, sizeof(buf), PROFILE_JIT_UNNAMED "%s 0x%" PRIx64 "-0x%" PRIx64,
			 !strcmp(m->name, "[anon]") ? "anon" : m->name, rf->map_start, rf->map_end);
		locs[0] = profile_add_loc(p, profile_add_func(p, buf, PROFILE_JIT_MODULE, NULL, 0), 0);
		return 1;
	}
	if (rf->module < MOD_FIRST_REAL) {
		locs[0] = profile_add_loc(p, profile_add_func(p, m->name, m->name, NULL, 0), 0);
		return 1;
	}
	/*
	 * No symbol: name the enclosing function by its start, from the CFI.
	 * The one at the file's entry point is where the program (or, in
	 * ld.so, the dynamic loader) starts: _start, whatever was stripped,
	 * so that the stacks of stripped programs (every distribution binary)
	 * count as whole.
	 */
	if (elf && sym_elf_func_start(elf, vaddr, &vaddr) && vaddr == sym_elf_entry(elf) && vaddr) {
		locs[0] = profile_add_loc(p, profile_add_func(p, "_start", m->name, NULL, 0), 0);
		return 1;
	}
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, m->name, vaddr);
	locs[0] = profile_add_loc(p, profile_add_func(p, buf, m->name, NULL, 0), 0);
	return 1;
}

/* Each interpreter's samples with and without Python frames, into the profile's meta. */
static void add_python_stats(struct sym_session *ss, struct profile *p)
{
	size_t nr = sym_python_nr_interps(ss->opts.python);

	for (size_t i = 0; i < nr; i++) {
		const struct sym_python_interp *in = sym_python_interp(ss->opts.python, (uint32_t)i);
		const struct ss_py_stat *st = i < ss->nr_py_stats ? &ss->py_stats[i] : NULL;
		char version[32];
		uint32_t e;

		/* an interpreter found in a process that was never sampled after is no news */
		if (!st || !st->samples)
			continue;
		if (in->version)
			snprintf(version, sizeof(version), "%u.%u.%u", in->version >> 24,
				 (in->version >> 16) & 0xff, (in->version >> 8) & 0xff);
		e = profile_add_python(p, in->path, in->version ? version : NULL, in->unsupported);
		p->meta.pythons[e].samples += st->samples;
		p->meta.pythons[e].with_frames += st->with_frames;
		p->meta.python_captured += st->captured;
		for (int m = 0; m < PY_MISS_NR; m++)
			if (st->miss[m] && !(in->unsupported && m == PY_MISS_UNSUPPORTED))
				profile_add_python_miss(p, e, ss_py_miss_name(m), st->miss[m]);
	}
	if (ss->memo_check)
		fprintf(stderr, "proftool: debug: %" PRIu64 " unwinds, %" PRIu64 " took %" PRIu64
			" frames from the thread's last; %" PRIu64 " differed from a whole walk\n",
			ss->memo_walks, ss->memo_took, ss->memo_frames, ss->memo_differ);
	/* for the bench: what reading cost, and how often the two sides disagreed */
	if (getenv("PROFTOOL_DEBUG_PYTHON")) {
		uint64_t reads, ns, moved, captured;

		sym_python_read_cost(ss->opts.python, &reads, &ns, &moved, &captured);
		fprintf(stderr, "proftool: debug: %" PRIu64 " Python stacks read, %.1f us each; "
			"%" PRIu64 " started from the sample's frame; %" PRIu64 " paired by position; "
			"%" PRIu64 " from what was captured at the sample\n", reads,
			reads ? ns / 1e3 / reads : 0.0, moved, ss->py_mismatched, captured);
	}
}

enum { RES_NONE = 0xff, RES_PENDING = 0xfe };

static void mark_used(struct profile_sample *s, void *arg)
{
	((uint8_t *)arg)[s->stack] = 1;
}

/*
 * Which raw nodes the samples of this take stand on (USED[i]), and which of
 * their frames are not resolved yet (returned, NR_TODO of them). Nodes come
 * parent first, so one pass backwards marks every ancestor.
 */
static uint32_t *used_nodes(struct sym_session *ss, uint8_t *used, size_t *nr_todo)
{
	uint32_t *todo = NULL;
	size_t nr = 0, alloc = 0, old = ss->alloc_res;

	profile_map_samples(ss->prof, mark_used, used);
	ALLOC_GROW(ss->res_count, ss->nr_frames + 1, ss->alloc_res);
	ss->res_start = xrealloc(ss->res_start, st_mult(ss->alloc_res, sizeof(*ss->res_start)));
	memset(ss->res_count + old, RES_NONE, ss->alloc_res - old);
	for (size_t i = ss->nr_nodes; i-- > 0;) {
		uint32_t f = ss->nodes[i].frame;

		if (!used[i])
			continue;
		if (ss->nodes[i].parent != PROFILE_NONE)
			used[ss->nodes[i].parent] = 1;
		if (ss->res_count[f] == RES_NONE) {
			ss->res_count[f] = RES_PENDING;
			ALLOC_GROW(todo, nr + 1, alloc);
			todo[nr++] = f;
		}
	}
	*nr_todo = nr;
	return todo;
}

/*
 * Resolves frames TODO[0..NR) into ss->names, a module's at a time. Files
 * stay open for the next take unless LAST: then one at a time is enough.
 */
static void resolve_frames(struct sym_session *ss, uint32_t *todo, size_t nr, bool last,
			   void (*progress)(size_t done, size_t total, void *arg), void *arg)
{
	struct sym_perfmap *jit = NULL;
	int32_t jit_pid = 0;
	uint32_t elf_mod = UINT32_MAX;

	QSORT_R(todo, nr, frame_by_module, ss->frames);
	for (size_t k = 0; k < nr; k++) {
		const struct rawframe *rf = &ss->frames[todo[k]];
		struct module *m = &ss->mods[rf->module];

		if (rf->module == MOD_KERNEL && !ss->ksyms_tried && rf->off) {
			ss->ksyms = sym_kallsyms_load("/proc/kallsyms");
			ss->ksyms_tried = true;
		}
		if (rf->module != elf_mod) {
			if (last && elf_mod != UINT32_MAX) {
				sym_elf_close(ss->mods[elf_mod].elf);
				ss->mods[elf_mod].elf = NULL;
			}
			elf_mod = rf->module;
			if (m->is_file && !m->elf_tried) {
				/* unwinding may still read the file through m->fd: libdwfl gets its own */
				m->elf = sym_elf_open(m->path, last || m->fd < 0 ? m->fd :
						      fcntl(m->fd, F_DUPFD_CLOEXEC, 0));
				m->elf_tried = true;
				if (last)
					m->fd = -1; /* owned by elf now */
			} else if (!m->is_file && m->pid && m->pid != jit_pid) {
				/* a JIT's map grows as it compiles: read again at each take */
				sym_perfmap_free(jit);
				jit = sym_perfmap_load(m->pid);
				jit_pid = m->pid;
			}
		}
		ALLOC_GROW(ss->res_locs, ss->nr_res_locs + SYM_MAX_INLINE, ss->alloc_res_locs);
		ss->res_start[todo[k]] = ss->nr_res_locs;
		ss->res_count[todo[k]] = resolve_frame(ss->names, m, m->elf, ss->ksyms,
						       m->pid == jit_pid ? jit : NULL, ss->opts.python,
						       rf, ss->res_locs + ss->nr_res_locs);
		ss->nr_res_locs += ss->res_count[todo[k]];
		if (progress && (k % 4096 == 0 || k + 1 == nr))
			progress(k + 1, nr, arg);
	}
	if (last && elf_mod != UINT32_MAX) {
		sym_elf_close(ss->mods[elf_mod].elf);
		ss->mods[elf_mod].elf = NULL;
	}
	sym_perfmap_free(jit);
}

/* Location L of ss->names as one of P's, interned on first use (LMAP caches it). */
static uint32_t out_loc(struct profile *p, const struct profile *names, uint32_t *lmap, uint32_t l)
{
	if (lmap[l] == PROFILE_NONE) {
		const struct profile_func *f = &names->funcs[names->locs[l].func];

		lmap[l] = profile_add_loc(p, profile_add_func(p, f->name, f->module, f->file, f->line),
					  names->locs[l].line);
	}
	return lmap[l];
}

/* The session goes on with the same processes and threads (their indices unchanged) and no samples. */
static struct profile *next_profile(const struct sym_session *ss, const struct profile *old)
{
	struct profile *p = profile_new();

	for (size_t i = 0; i < old->nr_procs; i++)
		profile_copy_process(p, &old->procs[i]);
	for (size_t i = 0; i < old->nr_threads; i++)
		profile_add_thread(p, old->threads[i].tid, old->threads[i].process, old->threads[i].comm);
	if (ss->opts.spill_dir && ss->opts.spill_chunk)
		(void)profile_spill_start(p, ss->opts.spill_dir, ss->opts.spill_chunk);
	return p;
}

static struct profile *take(struct sym_session *ss, bool last,
			    void (*progress)(size_t done, size_t total, void *arg), void *arg)
{
	struct profile *p = ss->prof;
	uint8_t *used = xcalloc(ss->nr_nodes + 1, 1);
	uint32_t *final = NULL, *stop_of = NULL, *lmap;
	uint64_t *stop_count = NULL;
	size_t nr_todo;
	uint32_t *todo;

	/* unwinding is over: the files' CFI can go before libdwfl opens them */
	for (size_t i = 0; last && i < ss->nr_mods; i++) {
		sym_cfi_free(ss->mods[i].cfi);
		ss->mods[i].cfi = NULL;
	}
	if (!ss->names)
		ss->names = profile_new();
	todo = used_nodes(ss, used, &nr_todo);
	resolve_frames(ss, todo, nr_todo, last, progress, arg);
	free(todo);
	lmap = xmalloc(st_mult(ss->names->nr_locs + 1, sizeof(*lmap)));
	memset(lmap, 0xff, st_mult(ss->names->nr_locs + 1, sizeof(*lmap)));

	/*
	 * Raw nodes come parent first, so one pass rebuilds the tree with real
	 * locations. A stop pseudo-frame is dropped when the frame under it is
	 * a thread's entry after all; otherwise it is counted, and a stack
	 * cut by the copy size or the depth limit starts with [truncated].
	 */
	final = xmalloc(st_mult(ss->nr_nodes + 1, sizeof(*final)));
	stop_of = xmalloc(st_mult(ss->nr_nodes + 1, sizeof(*stop_of)));
	for (size_t i = 0; i < ss->nr_nodes; i++) {
		const struct rawnode *n = &ss->nodes[i];
		uint32_t s = n->parent == PROFILE_NONE ? PROFILE_NONE : final[n->parent];
		uint32_t first = ss->res_start[n->frame], count = ss->res_count[n->frame];

		if (!used[i])
			continue;
		stop_of[i] = n->parent == PROFILE_NONE ? PROFILE_NONE : stop_of[n->parent];
		if (n->parent != PROFILE_NONE && ss->frames[ss->nodes[n->parent].frame].module == MOD_STOP) {
			uint64_t off = ss->frames[ss->nodes[n->parent].frame].off;
			enum sym_stop why = off >> 32;
			/* interned before p->locs is read: interning may move it */
			uint32_t outer = count ? out_loc(p, ss->names, lmap, ss->res_locs[first]) : PROFILE_NONE;
			bool root = count && profile_func_is_root(p->funcs[p->locs[outer].func].name);

			stop_of[i] = root ? PROFILE_NONE : ss->nodes[n->parent].frame;
			if (!root && (why == SYM_STOP_STACK_COPY || why == SYM_STOP_DEPTH))
				s = profile_add_stack(p, PROFILE_NONE, profile_add_loc(p,
					profile_add_func(p, "[truncated]", "[truncated]", NULL, 0), 0));
		}
		for (uint32_t j = 0; j < count; j++)
			s = profile_add_stack(p, s, out_loc(p, ss->names, lmap, ss->res_locs[first + j]));
		final[i] = s;
	}
	stop_count = xcalloc(ss->nr_frames + 1, sizeof(*stop_count));
	profile_map_samples(p, finish_sample, &(struct finish_arg){ final, stop_of, stop_count });
	for (size_t f = 0; f < ss->nr_frames; f++) {
		uint32_t mod = (uint32_t)ss->frames[f].off;

		if (!stop_count[f])
			continue;
		profile_add_unwind_stop(p, stop_reasons[ss->frames[f].off >> 32],
					mod < ss->nr_mods ? ss->mods[mod].name : NULL, stop_count[f]);
	}
	p->meta.scanned += ss->scanned;
	ss->scanned = 0;
	add_python_stats(ss, p);
	profile_sort_samples(p);

	free(used);
	free(lmap);
	free(final);
	free(stop_of);
	free(stop_count);
	if (ss->py_stats)
		memset(ss->py_stats, 0, ss->nr_py_stats * sizeof(*ss->py_stats));
	ss->prof = last ? profile_new() : next_profile(ss, p);
	return p;
}

struct profile *sym_session_take(struct sym_session *ss,
				 void (*progress)(size_t done, size_t total, void *arg), void *arg)
{
	return take(ss, false, progress, arg);
}

struct profile *sym_session_finish(struct sym_session *ss,
				   void (*progress)(size_t done, size_t total, void *arg),
				   void *arg)
{
	return take(ss, true, progress, arg);
}
