// SPDX-License-Identifier: MIT
/* Call frame information of one ELF file, compiled into cached unwind rules per address. */
#include "internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/*
 * How the caller's value of a register is found. libdw hands every rule
 * out as a DWARF expression (dwarf_frame_register); the common ones are
 * recognised once and kept in this form, the rest are evaluated each time.
 */
enum how {
	HOW_UNDEF,              /* not recoverable (caller-saved) */
	HOW_SAME,               /* unchanged by the callee */
	HOW_AT,                 /* saved in memory at CFA + off */
	HOW_VAL,                /* equal to CFA + off */
};

enum rule_kind {
	RULE_FAST,              /* CFA = register + offset; registers as in enum how */
	RULE_SLOW,              /* expressions: evaluated from FRAME every time */
	RULE_NONE,              /* no CFI covers the address */
};

/* The unwind rule at one lookup address of the file (a link-time address). */
struct rule {
	uint64_t addr;
	int64_t cfa_off;
	int32_t off[SYM_NREGS];
	uint8_t how[SYM_NREGS];
	uint8_t cfa_reg;
	uint8_t kind;           /* enum rule_kind */
	bool signal;            /* a signal trampoline: its caller was interrupted, not calling */
	Dwarf_Frame *frame;     /* RULE_SLOW: libdw's row, owned */
};

/*
 * Rules are cached without bound in principle; a program touches a few
 * thousand distinct addresses of a library, and past this many the slow
 * path simply runs uncached.
 */
#define MAX_RULES (1u << 20)
/*
 * The rules looked up last, by address, in front of the table: a thread's
 * callers return to the same few addresses sample after sample (a Python
 * process's 15 native frames under its eval loop), and the table's probes
 * miss the cache.
 */
#define RULE_HOT 256

struct sym_cfi {
	Elf *elf;               /* ELF_C_READ_MMAP: needs its fd no more once begun */
	Dwarf_CFI *eh;          /* .eh_frame, through .eh_frame_hdr's table */
	Dwarf *dw;              /* for .debug_frame, when the file has one */
	Dwarf_CFI *debug;
	GElf_Phdr *loads;       /* PT_LOAD headers, for load biases */
	size_t nr_loads;
	struct rule *rules;
	size_t nr_rules, alloc_rules;
	struct idx rule_idx;    /* addr -> rules index */
	uint64_t hot_key[RULE_HOT];     /* addr + 1 (0: empty), direct-mapped */
	uint32_t hot_id[RULE_HOT];
	const uint8_t *image;   /* the file's bytes (elf_rawfile), for reading code */
	size_t image_size;
	uint64_t plt[4][2];     /* link-time [start, end) of .plt, .plt.sec, .plt.got */
	size_t nr_plt;
};

/* The ranges of the PLT sections: a call there goes on to another function. */
static void find_plts(struct sym_cfi *c)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(c->elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(c->elf, scn)) && c->nr_plt < ARRAY_SIZE(c->plt)) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(c->elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(n, ".plt") || !strcmp(n, ".plt.sec") || !strcmp(n, ".plt.got"))) {
			c->plt[c->nr_plt][0] = sh.sh_addr;
			c->plt[c->nr_plt][1] = sh.sh_addr + sh.sh_size;
			c->nr_plt++;
		}
	}
}

static bool has_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name))
			return sh.sh_type != SHT_NOBITS;
	}
	return false;
}

struct sym_cfi *sym_cfi_open(int fd)
{
	struct sym_cfi *c;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	if (!sym_elf_loads(elf, &c->loads, &c->nr_loads)) {
		free(c);
		elf_end(elf);
		return NULL;
	}
	c->elf = elf;
	c->image = (const uint8_t *)elf_rawfile(elf, &c->image_size);
	find_plts(c);
	c->eh = dwarf_getcfi_elf(elf);
	/*
	 * .debug_frame of the file itself, where there is one, as libdwfl
	 * tries it after .eh_frame; never a separate debug file (libc6-dbg's
	 * would be decompressed whole for it).
	 */
	if (has_section(elf, ".debug_frame")) {
		c->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		c->debug = c->dw ? dwarf_getcfi(c->dw) : NULL;
	}
	return c;
}

void sym_cfi_free(struct sym_cfi *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_rules; i++)
		free(c->rules[i].frame);
	free(c->rules);
	idx_release(&c->rule_idx);
	if (c->eh)
		dwarf_cfi_end(c->eh);
	dwarf_end(c->dw);       /* owns c->debug */
	free(c->loads);
	elf_end(c->elf);
	free(c);
}

bool sym_cfi_bias(const struct sym_cfi *c, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	return sym_load_bias(c->loads, c->nr_loads, start, pgoff, bias);
}

bool sym_cfi_read_code(const struct sym_cfi *c, uint64_t vaddr, uint8_t *buf, size_t n)
{
	for (size_t i = 0; c->image && i < c->nr_loads; i++) {
		const GElf_Phdr *ph = &c->loads[i];

		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr <= ph->p_filesz &&
		    ph->p_filesz - (vaddr - ph->p_vaddr) >= n &&
		    ph->p_offset + (vaddr - ph->p_vaddr) + n <= c->image_size) {
			memcpy(buf, c->image + ph->p_offset + (vaddr - ph->p_vaddr), n);
			return true;
		}
	}
	return false;
}

bool sym_cfi_in_plt(const struct sym_cfi *c, uint64_t vaddr)
{
	for (size_t i = 0; i < c->nr_plt; i++)
		if (vaddr >= c->plt[i][0] && vaddr < c->plt[i][1])
			return true;
	return false;
}

/* ---- compiling rules ---- */

/* Recognises the register rules libdw builds for offset(N), val_offset(N), undefined and same. */
static bool simple_register(Dwarf_Frame *frame, int reg, uint8_t *how, int32_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t n = 0;
	bool val = false;

	if (dwarf_frame_register(frame, reg, mem, &ops, &nops) != 0)
		return false;
	if (nops == 0) {
		/* libdw: ops pointing at our buffer means undefined, NULL means same value */
		*how = ops == mem ? HOW_UNDEF : HOW_SAME;
		*off = 0;
		return ops == mem || ops == NULL;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	for (size_t i = 1; i < nops; i++) {
		if (ops[i].atom == DW_OP_plus_uconst && i == 1)
			n = (int64_t)ops[i].number;
		else if (ops[i].atom == DW_OP_stack_value && i == nops - 1)
			val = true;
		else
			return false;
	}
	if (n < INT32_MIN || n > INT32_MAX)
		return false;
	*how = val ? HOW_VAL : HOW_AT;
	*off = (int32_t)n;
	return true;
}

static void compile(struct rule *r, Dwarf_Frame *frame)
{
	Dwarf_Op *ops;
	size_t nops;
	bool signal = false;
	Dwarf_Addr lo, hi;

	if (dwarf_frame_info(frame, &lo, &hi, &signal) >= 0)
		r->signal = signal;
	r->kind = RULE_SLOW;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    ops[0].number >= SYM_NREGS)
		goto slow;
	r->cfa_reg = ops[0].number;
	r->cfa_off = (int64_t)ops[0].number2;
	for (int reg = 0; reg < SYM_NREGS; reg++)
		if (!simple_register(frame, reg, &r->how[reg], &r->off[reg]))
			goto slow;
	r->kind = RULE_FAST;
	free(frame);
	return;
slow:
	r->frame = frame;
}

/* The rule at link-time address ADDR; a copy when the cache is full (*SCRATCH). */
static const struct rule *rule_at(struct sym_cfi *c, uint64_t addr, struct rule *scratch)
{
	size_t hot = (addr ^ addr >> 8 ^ addr >> 16) & (RULE_HOT - 1);
	uint64_t h;
	size_t pos = 0;
	uint32_t id;
	struct rule *r;
	Dwarf_Frame *frame = NULL;

	if (c->hot_key[hot] == addr + 1)
		return &c->rules[c->hot_id[hot]];
	h = hash_u64(addr);
	while ((id = idx_next(&c->rule_idx, h, &pos)) != IDX_NONE) {
		if (c->rules[id].addr == addr) {
			c->hot_key[hot] = addr + 1;
			c->hot_id[hot] = id;
			return &c->rules[id];
		}
	}
	if (c->nr_rules < MAX_RULES) {
		ALLOC_GROW(c->rules, c->nr_rules + 1, c->alloc_rules);
		r = &c->rules[c->nr_rules];
	} else {
		free(scratch->frame);
		r = scratch;
	}
	memset(r, 0, sizeof(*r));
	r->addr = addr;
	r->kind = RULE_NONE;
	if ((c->eh && dwarf_cfi_addrframe(c->eh, addr, &frame) == 0) ||
	    (c->debug && dwarf_cfi_addrframe(c->debug, addr, &frame) == 0))
		compile(r, frame);
	if (r != scratch) {
		c->hot_key[hot] = addr + 1;
		c->hot_id[hot] = (uint32_t)c->nr_rules;
		idx_insert(&c->rule_idx, h, c->nr_rules++);
	}
	return r;
}

/* ---- applying them ---- */

struct eval {
	const struct sym_regs *in;
	sym_read_fn *read;
	void *arg;
	Dwarf_Frame *frame;
};

#define EXPR_STACK 64

/*
 * Evaluates a DWARF expression as libdwfl's unwinder does: a rule that
 * starts from the CFA (DW_OP_call_frame_cfa) gives an address to read,
 * unless it ends with DW_OP_stack_value. CFA_OK says whether the CFA may
 * be used (not while computing the CFA itself).
 */
static bool eval_expr(const struct eval *ev, const Dwarf_Op *ops, size_t nops, bool cfa_ok,
		      uint64_t *result)
{
	uint64_t st[EXPR_STACK], a, b;
	size_t sp = 0, steps = 0;
	bool location = false;

#define PUSH(v) do { if (sp >= EXPR_STACK) return false; st[sp++] = (v); } while (0)
#define POP(v) do { if (!sp) return false; (v) = st[--sp]; } while (0)
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];
		unsigned reg;

		if (++steps > 1000)
			return false;
		switch (op->atom) {
		case DW_OP_lit0 ... DW_OP_lit31:
			PUSH(op->atom - DW_OP_lit0);
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts:
			PUSH(op->number);
			break;
		case DW_OP_breg0 ... DW_OP_breg31:
		case DW_OP_bregx:
			reg = op->atom == DW_OP_bregx ? op->number : (unsigned)(op->atom - DW_OP_breg0);
			if (reg >= SYM_NREGS || !(ev->in->valid & 1u << reg))
				return false;
			PUSH(ev->in->r[reg] + (op->atom == DW_OP_bregx ? op->number2 : op->number));
			break;
		case DW_OP_reg0 ... DW_OP_reg31:
			reg = op->atom - DW_OP_reg0;
			if (reg >= SYM_NREGS || !(ev->in->valid & 1u << reg))
				return false;
			PUSH(ev->in->r[reg]);
			break;
		case DW_OP_dup: POP(a); PUSH(a); PUSH(a); break;
		case DW_OP_drop: POP(a); break;
		case DW_OP_over: POP(a); POP(b); PUSH(b); PUSH(a); PUSH(b); break;
		case DW_OP_swap: POP(a); POP(b); PUSH(a); PUSH(b); break;
		case DW_OP_pick:
			if (sp <= op->number)
				return false;
			a = st[sp - 1 - op->number];
			PUSH(a);
			break;
		case DW_OP_deref:
			POP(a);
			if (!ev->read(ev->arg, a, &a))
				return false;
			PUSH(a);
			break;
		case DW_OP_plus_uconst: POP(a); PUSH(a + op->number); break;
		case DW_OP_neg: POP(a); PUSH(-a); break;
		case DW_OP_not: POP(a); PUSH(~a); break;
#define BINOP(atom, expr) case atom: POP(b); POP(a); PUSH(expr); break;
		BINOP(DW_OP_and, a & b)
		BINOP(DW_OP_or, a | b)
		BINOP(DW_OP_xor, a ^ b)
		BINOP(DW_OP_plus, a + b)
		BINOP(DW_OP_minus, a - b)
		BINOP(DW_OP_mul, a * b)
		BINOP(DW_OP_shl, b < 64 ? a << b : 0)
		BINOP(DW_OP_shr, b < 64 ? a >> b : 0)
		BINOP(DW_OP_le, (int64_t)a <= (int64_t)b)
		BINOP(DW_OP_ge, (int64_t)a >= (int64_t)b)
		BINOP(DW_OP_eq, a == b)
		BINOP(DW_OP_lt, (int64_t)a < (int64_t)b)
		BINOP(DW_OP_gt, (int64_t)a > (int64_t)b)
		BINOP(DW_OP_ne, a != b)
#undef BINOP
		case DW_OP_nop:
			break;
		case DW_OP_call_frame_cfa: {
			Dwarf_Op *cops;
			size_t cn;

			if (!cfa_ok || dwarf_frame_cfa(ev->frame, &cops, &cn) != 0 ||
			    !eval_expr(ev, cops, cn, false, &a))
				return false;
			PUSH(a);
			location = true;
			break;
		}
		case DW_OP_stack_value:
			location = false;
			break;
		default:
			/* branches, divisions and the rest: never seen in x86-64 CFI */
			return false;
		}
	}
#undef PUSH
#undef POP
	if (!sp)
		return false;
	*result = st[sp - 1];
	return !location || ev->read(ev->arg, *result, result);
}

/*
 * rax, rdx, rcx, rsi, rdi and r8-r11: registers a call does not keep (the
 * x86-64 psABI), so a caller's are not its callee's. libdw, without the
 * ABI's initial rules (elfutils' backend has them for libdwfl's unwinder),
 * says "same value" for every register without a rule; taken so, the
 * innermost frame's values would ride along the whole walk.
 */
#define CALL_CLOBBERED (1u << 0 | 1u << 1 | 1u << 2 | 1u << 4 | 1u << 5 | 0xfu << 8)

/* A register rule from libdw's row, evaluated; false when the caller's value is unknown. */
static bool slow_register(const struct eval *ev, int reg, bool signal, uint64_t *val)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(ev->frame, reg, mem, &ops, &nops) != 0)
		return false;
	if (nops == 0) {
		if (ops != NULL || !(ev->in->valid & 1u << reg) || (!signal && (CALL_CLOBBERED >> reg & 1)))
			return false;
		*val = ev->in->r[reg];
		return true;
	}
	return eval_expr(ev, ops, nops, true, val);
}

bool sym_cfi_covers(struct sym_cfi *c, uint64_t vaddr)
{
	struct rule scratch = { 0 };
	bool covered = rule_at(c, vaddr, &scratch)->kind != RULE_NONE;

	free(scratch.frame);
	return covered;
}

enum sym_cfi_step sym_cfi_step(struct sym_cfi *c, uint64_t addr, struct sym_regs *regs,
			       sym_read_fn *read, void *arg, bool *signal)
{
	struct rule scratch = { 0 };
	const struct rule *r = rule_at(c, addr, &scratch);
	struct sym_regs out = { { 0 }, 0 };
	enum sym_cfi_step ret = SYM_CFI_OK;
	uint64_t cfa;

	*signal = r->signal;
	if (r->kind == RULE_NONE)
		return SYM_CFI_NONE;
	if (r->kind == RULE_SLOW) {
		struct eval ev = { regs, read, arg, r->frame };

		for (int reg = 0; reg < SYM_NREGS; reg++) {
			Dwarf_Op mem[3], *ops;
			size_t nops;

			/* an undefined return address ends the stack: the thread's first frame */
			if (reg == SYM_REG_RA && dwarf_frame_register(r->frame, reg, mem, &ops, &nops) == 0 &&
			    nops == 0 && ops == mem) {
				ret = SYM_CFI_END;
				break;
			}
			if (slow_register(&ev, reg, r->signal, &out.r[reg]))
				out.valid |= 1u << reg;
		}
		goto out;
	}
	if (!(regs->valid & 1u << r->cfa_reg)) {
		ret = SYM_CFI_READ;
		goto out;
	}
	cfa = regs->r[r->cfa_reg] + r->cfa_off;
	for (int reg = 0; reg < SYM_NREGS; reg++) {
		switch (r->how[reg]) {
		case HOW_UNDEF:
			if (reg == SYM_REG_RA)
				ret = SYM_CFI_END;
			break;
		case HOW_SAME:
			if (!r->signal && (CALL_CLOBBERED >> reg & 1))
				break;
			out.r[reg] = regs->r[reg];
			out.valid |= regs->valid & 1u << reg;
			break;
		case HOW_AT:
			if (read(arg, cfa + r->off[reg], &out.r[reg]))
				out.valid |= 1u << reg;
			break;
		case HOW_VAL:
			out.r[reg] = cfa + r->off[reg];
			out.valid |= 1u << reg;
			break;
		}
	}
out:
	free(scratch.frame);
	if (ret == SYM_CFI_OK && !(out.valid & 1u << SYM_REG_RA))
		ret = SYM_CFI_READ;
	/* a zero return address is how some start routines end their stack */
	if (ret == SYM_CFI_OK && !out.r[SYM_REG_RA])
		ret = SYM_CFI_END;
	*regs = out;
	return ret;
}
