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

int sym_unwind(sym_code_fn *code, void *code_arg, const uint64_t *perf_regs, const uint8_t *stack,
	       uint64_t size, uint64_t *pcs, enum sym_stop *stop, uint32_t *stop_module)
{
	struct copy c = { stack, perf_regs[PERF_POS_SP], size, false, false };
	struct sym_regs regs;
	bool initial = true, after_signal = false, failed = false;
	uint32_t last_module = UINT32_MAX; /* of the last frame: its ELF file, if any */
	int n = 0;

	*stop = SYM_STOP_NONE;
	*stop_module = UINT32_MAX;
	for (int i = 0; i < SYM_NREGS; i++)
		regs.r[i] = perf_regs[dwarf_from_perf[i]];
	regs.valid = (1u << SYM_NREGS) - 1;
	for (;;) {
		uint64_t pc = regs.r[SYM_REG_RA];
		/* a return address belongs to the call before it; the first and interrupted frames do not */
		uint64_t lookup = initial || after_signal ? pc : pc - 1;
		enum sym_cfi_step step = SYM_CFI_NONE;
		struct sym_code cd;
		bool signal = false;

		if (n >= SYM_MAX_FRAMES) {
			*stop = SYM_STOP_DEPTH;
			return n;
		}
		code(code_arg, lookup, &cd);
		last_module = cd.module;
		if (cd.cfi)
			step = sym_cfi_step(cd.cfi, lookup - cd.bias, &regs, read_copy, &c, &signal);
		/* a signal trampoline's own address is not a return address either */
		pcs[n++] = initial || after_signal || signal || !pc ? pc : pc - 1;
		if (step == SYM_CFI_NONE)
			step = frame_pointer_step(&regs, &c) ? SYM_CFI_OK : SYM_CFI_READ;
		if (step == SYM_CFI_END)
			break;
		if (step != SYM_CFI_OK) {
			failed = true;
			break;
		}
		initial = false;
		after_signal = signal;
	}
	if (c.read_past_copy) {
		/* the walk may end quietly when the caller's frame is beyond the copy */
		*stop = SYM_STOP_STACK_COPY;
	} else if (failed) {
		if (last_module == UINT32_MAX)
			*stop = SYM_STOP_NO_MAPPING;
		else if (c.read_failed)
			*stop = SYM_STOP_MEMORY;
		else
			*stop = SYM_STOP_NO_CFI;
		*stop_module = last_module;
	}
	return n;
}
