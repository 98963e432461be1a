// SPDX-License-Identifier: MIT
/* Walking a sampled user stack, frame by frame, with the CFI rules of the files it runs in. */
#include "internal.h"

#include <string.h>

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

/* The copied stack: the only memory an unwind reads. */
struct copy {
	const uint8_t *stack;
	uint64_t sp, size;
	bool read_past_copy;    /* a read just beyond the copy failed */
	bool read_failed;       /* a read elsewhere failed */
};

static bool read_copy(void *arg, uint64_t addr, uint64_t *val)
{
	struct copy *c = arg;

	if (addr >= c->sp && addr - c->sp <= c->size && c->size - (addr - c->sp) >= 8) {
		memcpy(val, c->stack + (addr - c->sp), 8);
		return true;
	}
	/* reads just past the copy mean a deeper stack than we copied */
	if (addr >= c->sp + c->size && addr < c->sp + c->size + (1u << 20))
		c->read_past_copy = true;
	else
		c->read_failed = true;
	return false;
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
};

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
	       uint64_t size, bool scan, uint64_t *pcs, enum sym_stop *stop, uint32_t *stop_module,
	       uint32_t *scanned)
{
	struct copy c = { stack, perf_regs[PERF_POS_SP], size, false, false };
	struct walk w = { code, code_arg, &c, pcs, 0, scan ? SCAN_MAX : 0, SCAN_TRIES, 0, UINT32_MAX, false, false };
	struct sym_regs regs;
	bool ended;

	*stop = SYM_STOP_NONE;
	*stop_module = UINT32_MAX;
	for (int i = 0; i < SYM_NREGS; i++)
		regs.r[i] = perf_regs[dwarf_from_perf[i]];
	regs.valid = (1u << SYM_NREGS) - 1;
	ended = walk(&w, regs, true, false, false);
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
