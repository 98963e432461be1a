// SPDX-License-Identifier: MIT
/*
 * The perf_event backend: copying records out of the ring buffers into the
 * stage (the drain threads' sweeps, perf_drainer.c), the sampled stacks
 * trimmed to what they use, each sample shown to the hook.
 */
#include "perf_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/base.h"

/* Bytes a hook may attach to one sample. */
#define HOOK_MAX (1u << 20)
/* The stack pointer's index in perf's x86-64 user registers (asm/perf_regs.h) */
#define PERF_REG_SP 7
/*
 * Bytes of a main thread's stack copy kept above where its stack began
 * (argc and the first argument pointers): no frame lies there.
 */
#define STACK_TOP_KEEP 64

/* The time of a record: in the sample body, or in the sample_id trailer of the others. */
static uint64_t record_time(const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)h;
	uint64_t t;

	if (h->type == PERF_RECORD_SAMPLE) {
		/* ip, pid/tid, time */
		if (h->size < sizeof(*h) + 24)
			return 0;
		memcpy(&t, p + sizeof(*h) + 16, 8);
		return t;
	}
	/* trailer: pid/tid, time, cpu/res */
	if (h->size < sizeof(*h) + 24)
		return 0;
	memcpy(&t, p + h->size - 16, 8);
	return t;
}

/* Copies LEN bytes at ring position POS, wrapping at the end of the ring, to DST. */
static void ring_copy(void *dst, const unsigned char *data, size_t data_size, uint64_t pos, size_t len)
{
	size_t off = pos & (data_size - 1), first = data_size - off < len ? data_size - off : len;

	memcpy(dst, data + off, first);
	memcpy((unsigned char *)dst + first, data, len - first);
}

static uint64_t ring_u64(const unsigned char *data, size_t data_size, uint64_t pos)
{
	uint64_t v;

	ring_copy(&v, data, data_size, pos, 8);
	return v;
}

/*
 * Whether the copy at ring position POS, from stack pointer SP, KEEP bytes,
 * holds the start of a main thread's stack at TOP: the argument count
 * there, then the first argument's pointer into the strings above (or
 * none). A process that exec'd since TOP was read has it elsewhere.
 */
static bool stack_top_in(const unsigned char *data, size_t data_size, uint64_t pos, uint64_t sp, uint64_t keep,
			 uint64_t top)
{
	uint64_t argc, argv0;

	if (!top || top < sp || top - sp + 16 > keep)
		return false;
	argc = ring_u64(data, data_size, pos + (top - sp));
	argv0 = ring_u64(data, data_size, pos + (top - sp) + 8);
	return argc < (1u << 20) && (argc ? argv0 > top && argv0 - top < (8u << 20) : !argv0);
}

/*
 * A sample's user stack copy is always the requested size; only its first
 * dyn_size bytes hold the stack, and of a main thread's only those below
 * where its stack began (TOP, 0 when not known; the rest is its arguments,
 * environment and random padding, 9 KiB of a Python script's 10). For the
 * sample record of LEN bytes at ring position POS, finds the unused rest
 * of the copy, [*CUT, *RESUME) from the record's start, so that the drain
 * leaves it in the ring: copying it out would be most of a sample's cost
 * (32 KiB by default, a few KiB used). *SIZE_AT is where the copy's size
 * word is, to be set to what was kept. False when there is nothing to
 * leave out (or the record is not as the attributes say).
 */
static bool stack_unused(const struct perf_sampler *s, const unsigned char *data, size_t data_size, uint64_t pos,
			 size_t len, uint64_t top, size_t *cut, size_t *resume, size_t *size_at)
{
	const uint64_t type = s->attr.sample_type, mask = s->attr.sample_regs_user;
	/* ip, tid, time, cpu, and the period unless it is fixed (perf_setup_attr) */
	size_t off = sizeof(struct perf_event_header) + (type & PERF_SAMPLE_PERIOD ? 5 : 4) * 8;
	uint64_t v, size, dyn, keep, sp = 0;

	if (!(type & PERF_SAMPLE_STACK_USER))
		return false;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return false;
		v = ring_u64(data, data_size, pos + off);
		if (v > (len - off - 8) / 8)
			return false;
		off += 8 + v * 8;
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		if (off + 8 > len)
			return false;
		v = ring_u64(data, data_size, pos + off);
		if (v && (mask >> PERF_REG_SP & 1) && off + 16 + 8ull * __builtin_popcountll(mask) <= len)
			sp = ring_u64(data, data_size,
				      pos + off + 8 + 8ull * __builtin_popcountll(mask & ((1ull << PERF_REG_SP) - 1)));
		off += 8 + (v ? 8ull * __builtin_popcountll(mask) : 0);
	}
	if (off + 8 > len)
		return false;
	size = ring_u64(data, data_size, pos + off);
	if (!size || len - off < 16 || size > len - off - 16)
		return false;
	dyn = ring_u64(data, data_size, pos + off + 8 + size);
	/* whole words, as the kernel writes them: rounded up, never cutting into the stack */
	keep = dyn < size ? (dyn + 7) & ~7ull : size;
	if (sp && stack_top_in(data, data_size, pos + off + 8, sp, keep, top) &&
	    top - sp + STACK_TOP_KEEP < keep)
		keep = (top - sp + STACK_TOP_KEEP + 7) & ~7ull;
	if (keep >= size)
		return false;
	*size_at = off;
	*cut = off + 8 + keep;
	/* the dyn_size word and whatever follows it stay */
	*resume = off + 8 + size;
	return true;
}

/*
 * Copies the record of LEN bytes at ring position POS to DST, less the
 * unused part of its stack copy; returns the bytes copied.
 */
static size_t copy_record(const struct perf_sampler *s, unsigned char *dst, const unsigned char *data,
			  size_t data_size, uint64_t pos, size_t len, bool sample, uint64_t top)
{
	size_t cut, resume, size_at;
	struct perf_event_header h;
	uint64_t keep;

	if (!sample || !stack_unused(s, data, data_size, pos, len, top, &cut, &resume, &size_at)) {
		ring_copy(dst, data, data_size, pos, len);
		return len;
	}
	ring_copy(dst, data, data_size, pos, cut);
	ring_copy(dst + cut, data, data_size, pos + resume, len - resume);
	keep = cut - size_at - 8;
	memcpy(dst + size_at, &keep, 8);
	len -= resume - cut;
	memcpy(&h, dst, sizeof(h));
	h.size = (uint16_t)len;
	memcpy(dst, &h, sizeof(h));
	return len;
}

/*
 * The stack copy of the sample record at P (LEN bytes, trimmed) and the
 * stack pointer it starts at; false when the record has none.
 */
static bool sample_ustack(const struct perf_sampler *s, const unsigned char *p, size_t len,
			  struct sampler_ustack *us)
{
	const uint64_t type = s->attr.sample_type, mask = s->attr.sample_regs_user;
	size_t off = sizeof(struct perf_event_header) + (type & PERF_SAMPLE_PERIOD ? 5 : 4) * 8;
	uint64_t v, size, dyn;

	if (!(type & PERF_SAMPLE_STACK_USER) || !(type & PERF_SAMPLE_REGS_USER) || !(mask >> PERF_REG_SP & 1))
		return false;
	if (type & PERF_SAMPLE_CALLCHAIN) {
		if (off + 8 > len)
			return false;
		memcpy(&v, p + off, 8);
		if (v > (len - off - 8) / 8)
			return false;
		off += 8 + v * 8;
	}
	if (off + 8 > len)
		return false;
	memcpy(&v, p + off, 8);
	if (!v || off + 8 + 8ull * __builtin_popcountll(mask) + 8 > len)
		return false;
	memcpy(&us->sp, p + off + 8 + 8ull * __builtin_popcountll(mask & ((1ull << PERF_REG_SP) - 1)), 8);
	off += 8 + 8ull * __builtin_popcountll(mask);
	memcpy(&size, p + off, 8);
	if (!size || len - off < 16 || size > len - off - 16)
		return false;
	memcpy(&dyn, p + off + 8 + size, 8);
	us->data = p + off + 8;
	us->size = dyn < size ? dyn : size;
	return us->size > 0;
}

/*
 * Shows the hook a record just copied to the stage at OFF: a sample gets
 * what the hook writes after it; returns those bytes, 8-byte aligned.
 */
static uint32_t hook_record(struct perf_sampler *s, struct cpu_buf *b, struct stage *st, size_t off, size_t len)
{
	const struct sampler_hook *hk = s->opts.hook;
	struct perf_event_header h;
	uint32_t u32[4];
	size_t cap = hk->cap < HOOK_MAX ? hk->cap : HOOK_MAX, n;
	struct sampler_ustack us;
	struct sampler_captured cd;
	int32_t cap_tid = 0;
	bool has_us, has_cap;

	memcpy(&h, st->buf + off, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		/* ip, then pid and tid */
		if (!hk->sample || len < sizeof(h) + 16)
			return 0;
		memcpy(u32, st->buf + off + sizeof(h) + 8, 8);
		ALLOC_GROW(st->buf, off + len + cap, st->alloc);
		has_us = sample_ustack(s, st->buf + off, len, &us);
		/* the capture just before it on the ring, when of its thread */
		has_cap = b->cap_tid && perf_capture_decode(b->cap, b->cap_len, &cd, &cap_tid) &&
			  cap_tid == (int32_t)u32[1];
		/* the program met the thread undescribed: an empty capture says so */
		if (!has_cap && b->woke_tid && b->woke_tid == (int32_t)u32[1]) {
			memset(&cd, 0, sizeof(cd));
			has_cap = true;
		}
		n = hk->sample(hk->arg, (int32_t)u32[0], (int32_t)u32[1], has_us ? &us : NULL, has_cap ? &cd : NULL,
			       st->buf + off + len, cap);
		return (uint32_t)((n < cap ? n : cap) + 7) & ~7u;
	case PERF_RECORD_COMM:
		if (hk->task && (h.misc & PERF_RECORD_MISC_COMM_EXEC) && len >= sizeof(h) + 8) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			hk->task(hk->arg, SAMPLER_TASK_EXEC, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_EXIT:
		/*
		 * pid, ppid, tid: the leader's exit stands for the process's (when
		 * it leaves before its threads, the next sample looks again)
		 */
		if (len >= sizeof(h) + 16) {
			memcpy(u32, st->buf + off + sizeof(h), 16);
			/* the program's entries go with it: a tid or pid used again is new to it */
			if (s->capture)
				perf_capture_exit(s->capture, (int32_t)u32[0], (int32_t)u32[2]);
			if (hk->task && u32[0] == u32[2])
				hk->task(hk->arg, SAMPLER_TASK_EXIT, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_MMAP2:
		/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot */
		if (hk->task && len >= sizeof(h) + 64) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			memcpy(&u32[1], st->buf + off + sizeof(h) + 56, 4);
			if (u32[1] & PROT_EXEC)
				hk->task(hk->arg, SAMPLER_TASK_MMAP, (int32_t)u32[0]);
		}
		return 0;
	case PERF_RECORD_MMAP:
		if (hk->task && len >= sizeof(h) + 8) {
			memcpy(u32, st->buf + off + sizeof(h), 4);
			hk->task(hk->arg, SAMPLER_TASK_MMAP, (int32_t)u32[0]);
		}
		return 0;
	default:
		return 0;
	}
}

static struct drain_proc *drain_proc_find(struct perf_sampler *s, int32_t pid)
{
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&s->proc_idx, hash_u64((uint64_t)pid), &pos)) != IDX_NONE)
		if (s->procs[id].pid == pid)
			return &s->procs[id];
	return NULL;
}

/*
 * The process of the sample at ring position POS (under procs_lock): where
 * its stack began, read on its first sample and after an exec; and on its
 * first sample, its resident memory into *RSS and *RSS_ANON.
 */
static uint64_t drain_proc_of(struct perf_sampler *s, const unsigned char *data, size_t data_size, uint64_t pos,
			      uint64_t *rss, uint64_t *rss_anon)
{
	/* header, ip, then pid and tid */
	int32_t pid = (int32_t)ring_u64(data, data_size, pos + sizeof(struct perf_event_header) + 8);
	struct drain_proc *dp = drain_proc_find(s, pid);

	if (!dp) {
		ALLOC_GROW(s->procs, s->nr_procs + 1, s->alloc_procs);
		idx_insert(&s->proc_idx, hash_u64((uint64_t)pid), (uint32_t)s->nr_procs);
		dp = &s->procs[s->nr_procs++];
		*dp = (struct drain_proc){ .pid = pid, .top_stale = true };
		/*
		 * A process's first sample reads its resident memory while it
		 * still runs: the recorder's own readings, a few times a second,
		 * miss a process that lives a few ms. (An exec'd process keeps
		 * its pid and is read by them.)
		 */
		if (!proc_statm_read(pid, rss, rss_anon))
			*rss = *rss_anon = 0;
	}
	if (dp->top_stale) {
		dp->stack_top = proc_start_stack(pid);
		dp->top_stale = false;
	}
	return dp->stack_top;
}

/* An exec record (PERF_RECORD_COMM) of the record at POS: its process's stack begins elsewhere now. */
static void drain_proc_exec(struct perf_sampler *s, const unsigned char *data, size_t data_size, uint64_t pos)
{
	struct drain_proc *dp;

	pthread_mutex_lock(&s->procs_lock);
	dp = drain_proc_find(s, (int32_t)ring_u64(data, data_size, pos + sizeof(struct perf_event_header)));
	if (dp)
		dp->top_stale = true;
	pthread_mutex_unlock(&s->procs_lock);
}

/*
 * Copies the records of one ring buffer into ST, showing each to the
 * hook, up to b->taken; returns how many. The ring's space stays taken
 * until the caller has moved them to the stage. Not under the lock: only
 * B's own drain thread sweeps it while drain threads run.
 */
static size_t drain_one(struct perf_sampler *s, struct cpu_buf *b, struct stage *st)
{
	struct perf_event_mmap_page *mp = b->base;
	unsigned char *data = (unsigned char *)b->base + s->page_size;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	size_t mask = b->data_size - 1, records = 0;

	while (tail < head) {
		struct perf_event_header h;
		size_t len;
		uint32_t extra;
		struct pending *pe;
		uint64_t top = 0, rss = 0, rss_anon = 0;

		/* the header itself is 8-byte aligned and never wraps */
		memcpy(&h, data + (tail & mask), sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (s->capture && h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16 &&
		    (ring_u64(data, b->data_size, tail + sizeof(h)) >> 32) == PERF_CAPTURE_WAKE_MAGIC) {
			/*
			 * it woke this sweep, for the sample after it (a thread the
			 * program has no entry for: the hook is told so); that sample
			 * may not be written yet (a page fault's wakes at once), so the
			 * drain thread sweeps again soon
			 */
			b->cap_tid = 0;
			b->woke_tid = (int32_t)(uint32_t)ring_u64(data, b->data_size, tail + sizeof(h) + 8);
			__atomic_store_n(&s->woken, true, __ATOMIC_RELAXED);
			tail += h.size;
			continue;
		}
		if (s->capture && h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16 &&
		    (ring_u64(data, b->data_size, tail + sizeof(h)) >> 32) == PERF_CAPTURE_MAGIC) {
			/* a capture: kept for the sample after it (its raw data, 8-byte aligned) */
			size_t raw = h.size - sizeof(h) - 4;

			ALLOC_GROW(b->cap, raw, b->cap_alloc);
			ring_copy(b->cap, data, b->data_size, tail + sizeof(h) + 4, raw);
			b->cap_len = raw;
			b->cap_tid = -1;
			tail += h.size;
			continue;
		}
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16) {
			pthread_mutex_lock(&s->procs_lock);
			top = drain_proc_of(s, data, b->data_size, tail, &rss, &rss_anon);
			pthread_mutex_unlock(&s->procs_lock);
		} else if (h.type == PERF_RECORD_COMM && (h.misc & PERF_RECORD_MISC_COMM_EXEC) &&
			   h.size >= sizeof(h) + 8) {
			drain_proc_exec(s, data, b->data_size, tail);
		}
		ALLOC_GROW(st->buf, st->len + h.size, st->alloc);
		len = copy_record(s, st->buf + st->len, data, b->data_size, tail, h.size,
				  h.type == PERF_RECORD_SAMPLE, top);
		extra = s->opts.hook ? hook_record(s, b, st, st->len, len) : 0;
		/* a capture belongs to the record right after it: one whose sample was lost belongs to none */
		b->cap_tid = b->woke_tid = 0;
		ALLOC_GROW(st->pend, st->nr + 1, st->alloc_pend);
		pe = &st->pend[st->nr++];
		pe->off = st->len;
		pe->len = len + extra;
		pe->extra = extra;
		pe->time = record_time((struct perf_event_header *)(st->buf + st->len));
		pe->rss = rss;
		pe->rss_anon = rss_anon;
		st->len += len + extra;
		__atomic_add_fetch(&s->buffered, len + extra, __ATOMIC_RELAXED);
		tail += h.size;
		records++;
	}
	b->taken = tail;
	return records;
}

/* Moves LOCAL's records to the stage (under the lock), in their order. */
static void stage_append(struct perf_sampler *s, struct stage *local)
{
	struct stage *st = &s->stage;

	if (!local->nr)
		return;
	if (!st->nr && local->alloc >= st->alloc && local->alloc_pend >= st->alloc_pend) {
		/*
		 * nothing staged, and the stage's buffers (the recycled spare)
		 * no larger: they change hands, else the stage would grow again
		 */
		struct stage t = *st;

		*st = *local;
		*local = t;
		local->len = local->nr = 0;
		for (size_t i = 0; i < st->nr; i++)
			st->pend[i].seq = s->seq++;
		return;
	}
	ALLOC_GROW(st->buf, st->len + local->len, st->alloc);
	ALLOC_GROW(st->pend, st->nr + local->nr, st->alloc_pend);
	memcpy(st->buf + st->len, local->buf, local->len);
	for (size_t i = 0; i < local->nr; i++) {
		struct pending *pe = &st->pend[st->nr++];

		*pe = local->pend[i];
		pe->off += st->len;
		pe->seq = s->seq++;
	}
	st->len += local->len;
	local->len = local->nr = 0;
}

/*
 * B's records up to b->taken are in the stage (under the lock): the kernel
 * may write over them, and the sweep that began at START is over.
 */
static void ring_release(struct cpu_buf *b, uint64_t start)
{
	__atomic_store_n(&((struct perf_event_mmap_page *)b->base)->data_tail, b->taken, __ATOMIC_RELEASE);
	cpu_swept(b, start);
}

uint64_t perf_drain_range(struct perf_sampler *s, unsigned first, unsigned nr, struct stage *local,
			  size_t *records)
{
	uint64_t start = time_mono_ns();
	size_t n = 0;

	/*
	 * One thread for every buffer: straight into the stage, under the
	 * lock, each buffer's space freed as soon as it is read (at -F 10000
	 * with stack copies, copying twice and freeing the first CPU's space
	 * only after the last CPU's records lost samples).
	 */
	if (!local) {
		pthread_mutex_lock(&s->lock);
		for (unsigned i = first; i < first + nr && i < s->nr_cpus; i++) {
			struct cpu_buf *b = &s->cpus[i];
			size_t got = drain_one(s, b, &s->stage);

			for (size_t k = s->stage.nr - got; k < s->stage.nr; k++)
				s->stage.pend[k].seq = s->seq++;
			n += got;
			ring_release(b, start);
		}
		pthread_mutex_unlock(&s->lock);
		if (records)
			*records = n;
		return start;
	}
	for (unsigned i = first; i < first + nr && i < s->nr_cpus; i++)
		n += drain_one(s, &s->cpus[i], local);
	pthread_mutex_lock(&s->lock);
	stage_append(s, local);
	for (unsigned i = first; i < first + nr && i < s->nr_cpus; i++) {
		ring_release(&s->cpus[i], start);
	}
	pthread_mutex_unlock(&s->lock);
	if (records)
		*records = n;
	return start;
}

void perf_drain_all(struct perf_sampler *s)
{
	perf_drain_range(s, 0, s->nr_cpus, NULL, NULL);
}
