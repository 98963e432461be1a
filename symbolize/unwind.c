// SPDX-License-Identifier: MIT
/* Walking a sampled user stack, frame by frame, with the CFI rules of the files it runs in. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* perf's x86-64 register order (mask 0xff0fff packed) for each DWARF register 0..16 */
static const uint8_t dwarf_from_perf[SYM_NREGS] = {
	0,      /* rax <- AX */
	3,      /* rdx <- DX */
	2,      /* rcx <- CX */
	1,      /* rbx <- BX */
	4,      /* rsi <- SI */
	5,      /* rdi <- DI */
	6,      /* rbp <- BP */
	7,      /* rsp <- SP */
	12, 13, 14, 15, 16, 17, 18, 19, /* r8..r15 <- R8..R15 (after the 12 low bits) */
	8,      /* rip <- IP */
};
#define PERF_POS_SP 7
#define PERF_POS_IP 8
#define REG_RBP 6
#define REG_RSP 7

/* What a read of the copy found: a value, nothing just past its end, or nothing. */
enum read_status { READ_OK, READ_PAST, READ_FAILED };

/* A read of the copy during a walk the memo records: the next walk makes it again to compare. */
struct memo_read {
	uint64_t addr, val;
	uint8_t status;         /* enum read_status */
};

/* The copied stack: the only memory an unwind reads. */
struct copy {
	const uint8_t *stack;
	uint64_t sp, size;
	bool read_past_copy;    /* a read just beyond the copy failed */
	bool read_failed;       /* a read elsewhere failed */
	struct sym_memo *log;   /* where the reads go; NULL: nowhere */
};

static enum read_status peek_copy(const struct copy *c, uint64_t addr, uint64_t *val)
{
	if (addr >= c->sp && addr - c->sp <= c->size && c->size - (addr - c->sp) >= 8) {
		memcpy(val, c->stack + (addr - c->sp), 8);
		return READ_OK;
	}
	*val = 0;
	/* reads just past the copy mean a deeper stack than we copied */
	if (addr >= c->sp + c->size && addr < c->sp + c->size + (1u << 20))
		return READ_PAST;
	return READ_FAILED;
}

static void memo_log(struct sym_memo *m, uint64_t addr, uint64_t val, enum read_status st);

static bool read_copy(void *arg, uint64_t addr, uint64_t *val)
{
	struct copy *c = arg;
	enum read_status st = peek_copy(c, addr, val);

	if (st == READ_PAST)
		c->read_past_copy = true;
	else if (st == READ_FAILED)
		c->read_failed = true;
	if (c->log)
		memo_log(c->log, addr, *val, st);
	return st == READ_OK;
}

/*
 * No CFI for the code (JIT code, or a file without unwind tables): follow
 * the frame pointer, as libdwfl's x86-64 backend does, as long as the
 * stack pointer moves up.
 */
static bool frame_pointer_step(struct sym_regs *regs, struct copy *c)
{
	uint64_t fp = regs->r[REG_RBP], sp = regs->valid & 1u << REG_RSP ? regs->r[REG_RSP] : 0;
	uint64_t prev_fp, ret;

	if (!(regs->valid & 1u << REG_RBP) || !fp)
		return false;
	if (!read_copy(c, fp, &prev_fp))
		prev_fp = 0;
	if (!read_copy(c, fp + 8, &ret) || sp >= fp + 16)
		return false;
	regs->valid = 1u << REG_RBP | 1u << REG_RSP | 1u << SYM_REG_RA;
	regs->r[REG_RBP] = prev_fp;
	regs->r[REG_RSP] = fp + 16;
	regs->r[SYM_REG_RA] = ret;
	return true;
}

/*
 * Stack scanning (Breakpad's last resort): where a frame has no usable CFI
 * (JIT code, assembly without unwind tables, a CFA kept below the stack
 * pointer, as OpenSSL's SHA-256 AVX2 code keeps it in the red zone), its
 * return address is looked for in the copy, upwards from its stack
 * pointer. Bounds: the bytes looked at, the candidates whose callers are
 * walked, and the scans in one stack. The candidates are many: below the
 * live return address of SHA-256's AVX2 rounds, in the frame they align
 * to 1 KiB, lie up to 12 stale ones that a walk must turn down first
 * (with 8, a run in three lost the callers of 28 to 63 % of
 * hashing.py's samples).
 */
#define SCAN_BYTES 16384
#define SCAN_TRIES 32
#define SCAN_MAX 4
/*
 * How far from a direct call's target the callee's pc may be: its function,
 * or one it jumps to. A function with CFI of its own may lie before the
 * target too (CPython's PyObject_Vectorcall tail-calls _PyObject_MakeTpCall,
 * 140 KiB below it); code without CFI only after it, else a caller's
 * frame pointer would lead past a frame (main's call of run_leaf, just
 * above nocfi_loop, for nocfi_loop's).
 */
#define CALL_REACH (256u << 10)

struct walk {
	sym_code_fn *code;
	void *code_arg;
	struct copy *c;
	uint64_t *pcs;
	int n;                  /* frames in pcs */
	int scans, tries;       /* left */
	uint32_t scanned;       /* frames found by scanning */
	uint32_t last_module;   /* of the last frame: its ELF file, if any */
	bool failed;            /* the walk ended at a frame it could not unwind */
	bool bad_call;          /* a return address did not follow a call to its callee */
	/* the memo (NULL: none), and what this walk took from it */
	struct sym_memo *memo;
	uint64_t key;
	size_t cursor;          /* the memo's first frame whose stack pointer is not below this walk's */
	long hit;               /* the memo's frame this walk went on from; -1 none */
	int hit_n;              /* this walk's frames before it */
};

/*
 * A thread's last walk, for the next: its frames from the second on, each
 * with the registers it began with, and every read of the copy it made
 * from there on. A frame of a new walk that begins with the same registers
 * as one of them, on a copy where the same reads find the same, unwinds to
 * the same callers (with the same files mapped, which the key says): they
 * are taken from the memo, not walked again. Sample after sample of a
 * program in a loop shares all of its callers but the few innermost.
 */
struct memo_frame {
	struct sym_regs regs;   /* as the frame began */
	uint32_t n;             /* frames before it */
	uint32_t log;           /* reads before it */
	bool past;              /* a read beyond the copy had failed before it */
};

struct sym_memo {
	uint64_t key;
	bool valid;
	struct memo_frame *f, *rec;     /* the last walk's frames; this walk's, as it goes */
	size_t nr, alloc, nr_rec, alloc_rec;
	struct memo_read *log, *rec_log; /* their reads */
	size_t nr_log, alloc_log, nr_rec_log, alloc_rec_log;
	uint64_t *pcs;
	size_t nr_pcs, alloc_pcs;
	/* how the last walk ended */
	bool ended, failed, past, read_failed;
	uint32_t last_module;
	uint32_t took;          /* frames the last walk took from the memo before it */
};

struct sym_memo *sym_memo_new(void)
{
	return xcalloc(1, sizeof(struct sym_memo));
}

void sym_memo_free(struct sym_memo *m)
{
	if (!m)
		return;
	free(m->f);
	free(m->rec);
	free(m->log);
	free(m->rec_log);
	free(m->pcs);
	free(m);
}

size_t sym_memo_took(const struct sym_memo *m)
{
	return m->took;
}

static void memo_log(struct sym_memo *m, uint64_t addr, uint64_t val, enum read_status st)
{
	ALLOC_GROW(m->rec_log, m->nr_rec_log + 1, m->alloc_rec_log);
	m->rec_log[m->nr_rec_log++] = (struct memo_read){ addr, val, (uint8_t)st };
}

static bool same_regs(const struct sym_regs *a, const struct sym_regs *b)
{
	if (a->valid != b->valid)
		return false;
	for (int i = 0; i < SYM_NREGS; i++)
		if ((a->valid >> i & 1) && a->r[i] != b->r[i])
			return false;
	return true;
}

/* Whether the copy holds what the memo's reads from frame F on found. */
static bool same_reads(const struct sym_memo *m, const struct memo_frame *f, const struct copy *c)
{
	for (size_t i = f->log; i < m->nr_log; i++) {
		const struct memo_read *e = &m->log[i];
		uint64_t val;

		if (peek_copy(c, e->addr, &val) != e->status || val != e->val)
			return false;
	}
	return true;
}

/*
 * At the start of a frame (REGS): the rest of the walk from the memo, if
 * it holds it; then *ENDED is what the walk returns.
 */
static bool memo_reuse(struct walk *w, const struct sym_regs *regs, bool *ended)
{
	struct sym_memo *m = w->memo;
	uint64_t sp = regs->r[REG_RSP];

	if (!m->valid || m->key != w->key || !(regs->valid & 1u << REG_RSP))
		return false;
	while (w->cursor < m->nr && m->f[w->cursor].regs.r[REG_RSP] < sp)
		w->cursor++;
	for (size_t j = w->cursor; j < m->nr && m->f[j].regs.r[REG_RSP] == sp; j++) {
		const struct memo_frame *f = &m->f[j];
		size_t more = m->nr_pcs - f->n;

		if (f->past != w->c->read_past_copy || w->n + more >= SYM_MAX_FRAMES ||
		    !same_regs(&f->regs, regs) || !same_reads(m, f, w->c))
			continue;
		memcpy(w->pcs + w->n, m->pcs + f->n, more * sizeof(*w->pcs));
		w->hit = (long)j;
		w->hit_n = w->n;
		w->n += (int)more;
		w->c->read_past_copy = m->past;
		w->c->read_failed = m->read_failed;
		w->failed = m->failed;
		w->last_module = m->last_module;
		*ended = m->ended;
		return true;
	}
	return false;
}

/* A frame begins (REGS): recorded for the next walk. */
static void memo_note(struct walk *w, const struct sym_regs *regs)
{
	struct sym_memo *m = w->memo;

	ALLOC_GROW(m->rec, m->nr_rec + 1, m->alloc_rec);
	m->rec[m->nr_rec++] = (struct memo_frame){ *regs, (uint32_t)w->n, (uint32_t)m->nr_rec_log,
						   w->c->read_past_copy };
}

#define SWAP(a, b) do { __typeof__(a) swap_ = (a); (a) = (b); (b) = swap_; } while (0)

/*
 * The walk is over (ENDED): it becomes the memo, unless it scanned (a
 * scan's outcome depends on what the scans before it used up); the frames
 * it took from the last memo come along.
 */
static void memo_keep(struct walk *w, bool scans_untouched, bool ended)
{
	struct sym_memo *m = w->memo;

	m->took = w->hit >= 0 ? (uint32_t)(w->n - w->hit_n) : 0;
	if (!scans_untouched || w->scanned || w->n >= SYM_MAX_FRAMES) {
		m->nr_rec = m->nr_rec_log = 0;
		return;
	}
	if (w->hit >= 0) {
		const struct memo_frame *h = &m->f[w->hit];

		for (size_t j = (size_t)w->hit; j < m->nr; j++) {
			ALLOC_GROW(m->rec, m->nr_rec + 1, m->alloc_rec);
			m->rec[m->nr_rec] = m->f[j];
			m->rec[m->nr_rec].n = m->f[j].n - h->n + (uint32_t)w->hit_n;
			m->rec[m->nr_rec++].log = m->f[j].log - h->log + (uint32_t)m->nr_rec_log;
		}
		if (m->nr_log > h->log) {
			ALLOC_GROW(m->rec_log, m->nr_rec_log + (m->nr_log - h->log), m->alloc_rec_log);
			memcpy(m->rec_log + m->nr_rec_log, m->log + h->log,
			       (m->nr_log - h->log) * sizeof(*m->log));
			m->nr_rec_log += m->nr_log - h->log;
		}
	}
	SWAP(m->f, m->rec);
	SWAP(m->alloc, m->alloc_rec);
	m->nr = m->nr_rec;
	m->nr_rec = 0;
	SWAP(m->log, m->rec_log);
	SWAP(m->alloc_log, m->alloc_rec_log);
	m->nr_log = m->nr_rec_log;
	m->nr_rec_log = 0;
	ALLOC_GROW(m->pcs, (size_t)w->n, m->alloc_pcs);
	if (w->n)
		memcpy(m->pcs, w->pcs, (size_t)w->n * sizeof(*m->pcs));
	m->nr_pcs = (size_t)w->n;
	m->ended = ended;
	m->failed = w->failed;
	m->past = w->c->read_past_copy;
	m->read_failed = w->c->read_failed;
	m->last_module = w->last_module;
	m->key = w->key;
	m->valid = true;
}

/*
 * Whether the bytes before return address RA (in CD's file) are a call:
 * e8 rel32 (then *DIRECT and *TARGET, a runtime address) or ff /2, an
 * indirect call, in each of its lengths.
 */
static bool call_before(const struct sym_code *cd, uint64_t ra, bool *direct, uint64_t *target)
{
	uint8_t b[8];
	uint64_t at = ra - cd->bias;

	if (!cd->cfi || at < sizeof(b) || !sym_cfi_read_code(cd->cfi, at - sizeof(b), b, sizeof(b)))
		return false;
	*direct = b[3] == 0xe8;
	if (*direct) {
		int32_t rel;

		memcpy(&rel, b + 4, 4);
		*target = ra + (int64_t)rel;
		return true;
	}
	/* ff, then a ModRM byte whose reg field is 2, and the bytes its mod and rm imply */
	for (int len = 2; len <= 7; len++) {
		uint8_t modrm = b[8 - len + 1];
		int mod = modrm >> 6, rm = modrm & 7, want;

		if (b[8 - len] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		want = mod == 3 ? 2 : mod == 1 ? 3 : mod == 2 ? 6 : rm == 5 ? 6 : 2;
		if (mod != 3 && rm == 4)
			want++;         /* a SIB byte */
		if (want == len)
			return true;
	}
	return false;
}

/*
 * Whether a direct call to TARGET can have led to code at CALLEE (a
 * runtime address, CALLEE_CD its file, CALLEE_CFI whether its frame was
 * unwound by its own CFI): the callee's file, near the target, or through
 * a PLT entry of the caller's file (CALLER_CD).
 */
static bool call_reaches(struct walk *w, const struct sym_code *caller_cd, uint64_t target,
			 uint64_t callee, const struct sym_code *callee_cd, bool callee_cfi)
{
	struct sym_code tcd;

	if (caller_cd->cfi && sym_cfi_in_plt(caller_cd->cfi, target - caller_cd->bias))
		return true;
	w->code(w->code_arg, target, &tcd);
	return callee_cd->module != UINT32_MAX && tcd.module == callee_cd->module &&
	       (callee >= target ? callee - target < CALL_REACH : callee_cfi && target - callee < CALL_REACH);
}

static bool scan(struct walk *w, const struct sym_regs *at, uint64_t pc, const struct sym_code *cd,
		 bool inner);

/*
 * Unwinds from REGS, appending frames to W. VERIFY (after a scan): every
 * return address must follow a call that can have led to its callee, or
 * the walk is no continuation of the scan's. Returns whether the walk
 * ended well: at a thread's first frame, the end of the copy or the
 * depth limit, possibly through scans of its own.
 */
static bool walk(struct walk *w, struct sym_regs regs, bool initial, bool after_signal, bool verify)
{
	uint64_t callee = 0;
	struct sym_code callee_cd = { NULL, 0, UINT32_MAX };
	bool callee_cfi = false;

	for (;;) {
		uint64_t pc = regs.r[SYM_REG_RA];
		/* a return address belongs to the call before it; the first and interrupted frames do not */
		uint64_t lookup = initial || after_signal ? pc : pc - 1;
		enum sym_cfi_step step = SYM_CFI_NONE;
		struct sym_regs before = regs;
		struct sym_code cd;
		bool signal = false, direct, own_cfi, inner, past = w->c->read_past_copy;
		uint64_t target;

		if (w->n >= SYM_MAX_FRAMES)
			return true;
		/* not in a scan's walk, whose outcome depends on the scans before it */
		if (w->memo && !verify && !initial && !after_signal) {
			bool ended;

			if (memo_reuse(w, &regs, &ended))
				return ended;
			memo_note(w, &regs);
		}
		w->code(w->code_arg, lookup, &cd);
		if (verify && callee && !after_signal &&
		    (!call_before(&cd, pc, &direct, &target) ||
		     (direct && !call_reaches(w, &cd, target, callee, &callee_cd, callee_cfi)))) {
			w->bad_call = true;
			return false;
		}
		w->last_module = cd.module;
		w->c->read_failed = false;
		if (cd.cfi)
			step = sym_cfi_step(cd.cfi, lookup - cd.bias, &regs, read_copy, w->c, &signal);
		/* a signal trampoline's own address is not a return address either */
		w->pcs[w->n++] = initial || after_signal || signal || !pc ? pc : pc - 1;
		own_cfi = step == SYM_CFI_OK;
		/*
		 * No CFI: the frame pointer first, where it leads to a return
		 * address after a call that can have led here (code that keeps
		 * rbp, as CPython's perf trampolines do; a scan would find stale
		 * return addresses of finished calls below their live one).
		 */
		if (step == SYM_CFI_NONE && (regs = before, frame_pointer_step(&regs, w->c))) {
			struct sym_code rcd;
			uint64_t ra = regs.r[SYM_REG_RA];

			w->code(w->code_arg, ra - 1, &rcd);
			if (call_before(&rcd, ra, &direct, &target) &&
			    (!direct || call_reaches(w, &rcd, target, pc, &cd, false)))
				step = SYM_CFI_OK;
			else
				regs = before;
		}
		/*
		 * No CFI in the innermost frame, or CFI that needs memory outside
		 * the copy (not beyond it: that is a deeper stack than was
		 * copied): look for the return address, then fall back on the
		 * frame pointer. A frame without CFI reached by unwinding is
		 * scanned too where it lies in a file with CFI, for a direct call
		 * of code without CFI only: above CPython 3.12's perf trampolines
		 * (JIT code, whose rbp the unwound registers did not give back) a
		 * scan accepted stale frames of a finished fflush that unwound
		 * consistently through indirect calls. XXX: JIT code reached by
		 * unwinding is not scanned; a check that the scanned callers'
		 * frames are live (a frame-pointer chain) would let it be.
		 */
		inner = (step == SYM_CFI_NONE && (initial || after_signal)) ||
			(step == SYM_CFI_READ && w->c->read_failed && w->c->read_past_copy == past);
		if ((inner || (step == SYM_CFI_NONE && cd.cfi)) && (before.valid & 1u << REG_RSP) &&
		    w->scans > 0 && scan(w, &before, pc, &cd, inner))
			return true;
		if (step == SYM_CFI_NONE) {
			regs = before;
			step = frame_pointer_step(&regs, w->c) ? SYM_CFI_OK : SYM_CFI_READ;
		}
		if (step == SYM_CFI_END)
			return true;
		if (step != SYM_CFI_OK) {
			w->failed = true;
			return w->c->read_past_copy;
		}
		callee = pc;
		callee_cd = cd;
		callee_cfi = own_cfi;
		initial = false;
		after_signal = signal;
	}
}

/*
 * Looks upwards from AT's stack pointer for the return address of the
 * frame at PC (in CD's code): a value just after a call, in a file with
 * CFI, whose callers unwind well from there. The first such wins; the
 * frames it adds are W's. Unless INNER (the frame is the innermost one,
 * or its CFI needs memory outside the copy), only after a direct call of
 * code that no CFI covers: the frame's own code, entered from its start.
 */
static bool scan(struct walk *w, const struct sym_regs *at, uint64_t pc, const struct sym_code *cd,
		 bool inner)
{
	uint64_t sp = at->r[REG_RSP], end = w->c->sp + w->c->size;
	uint64_t slot = sp > w->c->sp ? sp : w->c->sp;

	w->scans--;
	slot = (slot + 7) & ~7ull;
	for (; slot + 8 <= end && slot - sp < SCAN_BYTES && w->tries > 0; slot += 8) {
		struct sym_code rcd;
		struct sym_regs regs = { { 0 }, 0 };
		struct copy saved = *w->c;
		uint64_t ra, target;
		int n = w->n;
		uint32_t scanned = w->scanned;
		bool direct;

		if (!read_copy(w->c, slot, &ra) || ra < 16)
			continue;
		w->code(w->code_arg, ra - 1, &rcd);
		if (!rcd.cfi || !call_before(&rcd, ra, &direct, &target) ||
		    (direct && !call_reaches(w, &rcd, target, pc, cd, false)) ||
		    (!inner && (!direct || sym_cfi_covers(cd->cfi, target - cd->bias))))
			continue;
		w->tries--;
		regs.r[REG_RSP] = slot + 8;
		regs.r[SYM_REG_RA] = ra;
		regs.valid = 1u << REG_RSP | 1u << SYM_REG_RA;
		/* a frame pointer above the slot may be the caller's still (code that keeps rbp) */
		if ((at->valid & 1u << REG_RBP) && at->r[REG_RBP] > slot && at->r[REG_RBP] < end) {
			regs.r[REG_RBP] = at->r[REG_RBP];
			regs.valid |= 1u << REG_RBP;
		}
		w->scanned++;
		w->failed = w->bad_call = false;
		w->c->read_past_copy = w->c->read_failed = false;
		if (walk(w, regs, false, false, true))
			return true;
		/* not this one: what the walk added goes */
		w->n = n;
		w->scanned = scanned;
		*w->c = saved;
	}
	w->failed = w->bad_call = false;
	return false;
}

int sym_unwind(sym_code_fn *code, void *code_arg, const uint64_t *perf_regs, const uint8_t *stack,
	       uint64_t size, bool scan, struct sym_memo *memo, uint64_t key, uint64_t *pcs,
	       enum sym_stop *stop, uint32_t *stop_module, uint32_t *scanned)
{
	struct copy c = { stack, perf_regs[PERF_POS_SP], size, false, false, memo };
	struct walk w = { .code = code, .code_arg = code_arg, .c = &c, .pcs = pcs,
			  .scans = scan ? SCAN_MAX : 0, .tries = SCAN_TRIES, .last_module = UINT32_MAX,
			  .memo = memo, .key = key, .hit = -1 };
	struct sym_regs regs;
	bool ended;

	*stop = SYM_STOP_NONE;
	*stop_module = UINT32_MAX;
	for (int i = 0; i < SYM_NREGS; i++)
		regs.r[i] = perf_regs[dwarf_from_perf[i]];
	regs.valid = (1u << SYM_NREGS) - 1;
	ended = walk(&w, regs, true, false, false);
	if (memo)
		memo_keep(&w, w.scans == (scan ? SCAN_MAX : 0) && w.tries == SCAN_TRIES, ended);
	*scanned = w.scanned;
	if (w.n >= SYM_MAX_FRAMES) {
		*stop = SYM_STOP_DEPTH;
	} else if (c.read_past_copy) {
		/* the walk may end quietly when the caller's frame is beyond the copy */
		*stop = SYM_STOP_STACK_COPY;
	} else if (!ended || w.failed) {
		if (w.last_module == UINT32_MAX)
			*stop = SYM_STOP_NO_MAPPING;
		else if (c.read_failed)
			*stop = SYM_STOP_MEMORY;
		else
			*stop = SYM_STOP_NO_CFI;
		*stop_module = w.last_module;
	}
	return w.n;
}
