// SPDX-License-Identifier: MIT
/*
 * Captures at the sample (struct sampler_captured): a BPF program on the
 * perf events copies a chain of the sampled thread's memory in its own
 * context, as the sample is taken, and writes it into the sample's ring
 * buffer just before the sample itself. The hook then reads at the sample
 * without a system call and without waking the drain thread for it.
 *
 * The program is built here, instruction by instruction (no compiler for
 * BPF, no libbpf: it is 20 instructions and a loop unrolled). Its output
 * goes through a BPF_OUTPUT event per CPU whose records are redirected
 * (PERF_EVENT_IOC_SET_OUTPUT) into that CPU's ring buffer. The kernel runs
 * an event's program before it writes the sample (kernel/events/core.c,
 * __perf_event_overflow), so on a ring a capture comes right before the
 * sample it belongs to. Inherited events (children, new threads) run
 * their parent's program.
 *
 * A sample of a process or thread the hook has not described yet has no
 * capture: the program writes a short record through a second BPF_OUTPUT
 * event per CPU instead, one that wakes the drain thread at once, so the
 * hook reads that sample while it is fresh (a forked worker's first
 * samples) and describes the process. The hook marks what has nothing to
 * copy (a process without Python, a thread without a thread state) with
 * an empty entry: then the program does nothing, and nothing wakes.
 *
 * It needs CAP_BPF and CAP_PERFMON (root): elsewhere loading fails and the
 * hook reads the thread itself, as before.
 */
#include "perf_int.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base.h"

/*
 * A capture's raw data: this header, START_MAX bytes of start, then
 * NODES slots of (u64 address, NODE_MAX bytes, u64 code address, CODE_MAX
 * bytes). The magic is the high half
 * of the record's first word, which in a sample is its instruction
 * pointer: no canonical address has it (perf_drain.c tells them apart so).
 */
#define CAP_MAGIC PERF_CAPTURE_MAGIC
#define WAKE_MAGIC PERF_CAPTURE_WAKE_MAGIC
#define CAP_HDR 32
#define CAP_CODE (8 + SAMPLER_CAPTURE_NODE_MAX)        /* in a slot: the code address, then its bytes */
#define CAP_SLOT (CAP_CODE + 8 + SAMPLER_CAPTURE_CODE_MAX)
#define CAP_SIZE (CAP_HDR + SAMPLER_CAPTURE_START_MAX + SAMPLER_CAPTURE_NODES * CAP_SLOT)
#define CAP_MAX_PROCS 4096
#define CAP_MAX_THREADS 65536

struct sampler_capture {
	int procs_fd, threads_fd, scratch_fd, out_fd, wake_fd, prog_fd;
	int *outs;              /* the BPF_OUTPUT event of each CPU */
	int *wakes;             /* and the one that wakes the drain thread */
	unsigned nr_outs;
};

/* The per-process map's value: struct sampler_capture_layout, as the program reads it (START_LEN 0: nothing). */
struct cap_proc {
	uint32_t start_len, node_len, ind1, ind2, next, code_at, code_len, pad;
};

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(__NR_bpf, cmd, a, sizeof(*a));
}

static int map_create(uint32_t type, uint32_t key, uint32_t value, uint32_t max)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	/* entries as they come (only proftool adds them), not 65536 threads' worth at once */
	if (type == BPF_MAP_TYPE_HASH)
		a.map_flags = BPF_F_NO_PREALLOC;
	a.map_type = type;
	a.key_size = key;
	a.value_size = value;
	a.max_entries = max;
	return (int)sys_bpf(BPF_MAP_CREATE, &a);
}

static int map_set(int fd, const void *key, const void *value)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uintptr_t)key;
	a.value = (uintptr_t)value;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0 ? -errno : 0;
}

static void map_del(int fd, const void *key)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uintptr_t)key;
	sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

/* ---- the program ---- */

struct prog {
	struct bpf_insn *in;
	size_t n, alloc;
};

static int emit(struct prog *p, struct bpf_insn i)
{
	ALLOC_GROW(p->in, p->n + 1, p->alloc);
	p->in[p->n] = i;
	return (int)p->n++;
}

#define INSN(...) emit(p, (struct bpf_insn){ __VA_ARGS__ })
#define R0 BPF_REG_0
#define R1 BPF_REG_1
#define R2 BPF_REG_2
#define R3 BPF_REG_3
#define R4 BPF_REG_4
#define R5 BPF_REG_5
#define R6 BPF_REG_6
#define R7 BPF_REG_7
#define R8 BPF_REG_8
#define R9 BPF_REG_9
#define FP BPF_REG_10

static void mov(struct prog *p, int d, int s) { INSN(.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = d, .src_reg = s); }
static void movi(struct prog *p, int d, int32_t k) { INSN(.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = d, .imm = k); }
static void addi(struct prog *p, int d, int32_t k) { INSN(.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = d, .imm = k); }
static void add(struct prog *p, int d, int s) { INSN(.code = BPF_ALU64 | BPF_ADD | BPF_X, .dst_reg = d, .src_reg = s); }
static void andi(struct prog *p, int d, int32_t k) { INSN(.code = BPF_ALU64 | BPF_AND | BPF_K, .dst_reg = d, .imm = k); }
static void rshi(struct prog *p, int d, int32_t k) { INSN(.code = BPF_ALU64 | BPF_RSH | BPF_K, .dst_reg = d, .imm = k); }
static void call(struct prog *p, int32_t fn) { INSN(.code = BPF_JMP | BPF_CALL, .imm = fn); }
static void ldx(struct prog *p, int size, int d, int s, int16_t off) { INSN(.code = BPF_LDX | BPF_MEM | size, .dst_reg = d, .src_reg = s, .off = off); }
static void stx(struct prog *p, int size, int d, int16_t off, int s) { INSN(.code = BPF_STX | BPF_MEM | size, .dst_reg = d, .src_reg = s, .off = off); }
static void sti(struct prog *p, int size, int d, int16_t off, int32_t k) { INSN(.code = BPF_ST | BPF_MEM | size, .dst_reg = d, .off = off, .imm = k); }
/* A jump to be patched (patch()): OP against K, or against register S when S >= 0. */
static int jmp(struct prog *p, int op, int d, int s, int32_t k)
{
	return s >= 0 ? INSN(.code = BPF_JMP | op | BPF_X, .dst_reg = d, .src_reg = s) :
			INSN(.code = BPF_JMP | op | BPF_K, .dst_reg = d, .imm = k);
}
static void patch(struct prog *p, int at, int to) { p->in[at].off = (int16_t)(to - at - 1); }

static void ld_map(struct prog *p, int d, int fd)
{
	INSN(.code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = d, .src_reg = BPF_PSEUDO_MAP_FD, .imm = fd);
	INSN(.code = 0);
}

/* perf_event_output(the context in R6, this CPU's event in map FD, R4, R5 bytes): the caller sets R4 and R5. */
static void output(struct prog *p, int fd)
{
	mov(p, R1, R6);
	ld_map(p, R2, fd);
	INSN(.code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = R3, .imm = (int32_t)BPF_F_CURRENT_CPU);
	INSN(.code = 0);
	call(p, BPF_FUNC_perf_event_output);
}

/* R0 = the map FD's value for the u32 key at FP + KEY_OFF; jumps to the end (patched) when none. */
static int lookup(struct prog *p, int fd, int16_t key_off)
{
	ld_map(p, R1, fd);
	mov(p, R2, FP);
	addi(p, R2, key_off);
	call(p, BPF_FUNC_map_lookup_elem);
	return jmp(p, BPF_JEQ, R0, -1, 0);
}

/*
 * probe_read_user(DST_REG + DST_OFF, LEN_REG or LEN, SRC in R3): the
 * caller sets R3 first. Returns the jump taken when it fails (patched),
 * with R5 set to SIZE first unless it is negative (a call clobbers R1-R5).
 */
static int read_user(struct prog *p, int dst, int32_t dst_off, int len_reg, int32_t len, int32_t size)
{
	mov(p, R1, dst);
	addi(p, R1, dst_off);
	if (len_reg >= 0)
		mov(p, R2, len_reg);
	else
		movi(p, R2, len);
	call(p, BPF_FUNC_probe_read_user);
	if (size >= 0)
		movi(p, R5, size);
	return jmp(p, BPF_JNE, R0, -1, 0);
}

/*
 * The bytes at the address the node in SLOT holds at CODE_AT, unless the
 * layout has none: the code address stays 0 when they could not be read.
 */
static void code_bytes(struct prog *p, int32_t slot)
{
	int skip[4];

	sti(p, BPF_DW, R9, (int16_t)(slot + CAP_CODE), 0);
	ldx(p, BPF_W, R1, R8, 20);
	skip[0] = jmp(p, BPF_JGT, R1, -1, SAMPLER_CAPTURE_NODE_MAX - 8);
	/* masked: the verifier wants it in bounds (and a multiple of 8, as it is) */
	andi(p, R1, SAMPLER_CAPTURE_NODE_MAX - 8);
	mov(p, R2, R9);
	add(p, R2, R1);
	ldx(p, BPF_DW, R3, R2, (int16_t)(slot + 8));
	stx(p, BPF_DW, FP, -40, R3);
	ldx(p, BPF_W, R4, R8, 24);
	skip[1] = jmp(p, BPF_JGT, R4, -1, SAMPLER_CAPTURE_CODE_MAX);
	skip[2] = jmp(p, BPF_JEQ, R4, -1, 0);
	skip[3] = read_user(p, R9, slot + CAP_CODE + 8, R4, 0, -1);
	ldx(p, BPF_DW, R1, FP, -40);
	stx(p, BPF_DW, R9, (int16_t)(slot + CAP_CODE), R1);
	for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
		patch(p, skip[i], (int)p->n);
}

/*
 * The program. Registers kept across calls: R6 the context, R7 the
 * pid/tgid word, R8 the process's layout, R9 the per-CPU scratch record.
 * Stack: FP-4 the key, FP-16 the start address, FP-24 the next node,
 * FP-32 the wake-up record, FP-40 a node's code address.
 */
static void build(struct prog *p, const struct sampler_capture *c)
{
	int ends[10 + 3 * SAMPLER_CAPTURE_NODES], outs[3 * SAMPLER_CAPTURE_NODES + 1], wakes[2];
	size_t ne = 0, no = 0;
	int direct, second, out, end, wake, done;

	mov(p, R6, R1);
	call(p, BPF_FUNC_get_current_pid_tgid);
	mov(p, R7, R0);
	/* the process's layout: none yet, wake the hook; empty, nothing to do */
	mov(p, R1, R7);
	rshi(p, R1, 32);
	stx(p, BPF_W, FP, -4, R1);
	wakes[0] = lookup(p, c->procs_fd, -4);
	mov(p, R8, R0);
	ldx(p, BPF_W, R1, R8, 0);
	ends[ne++] = jmp(p, BPF_JEQ, R1, -1, 0);
	/* the thread's start: likewise */
	stx(p, BPF_W, FP, -4, R7);
	wakes[1] = lookup(p, c->threads_fd, -4);
	ldx(p, BPF_DW, R1, R0, 0);
	ends[ne++] = jmp(p, BPF_JEQ, R1, -1, 0);
	stx(p, BPF_DW, FP, -16, R1);
	sti(p, BPF_W, FP, -4, 0);
	ends[ne++] = lookup(p, c->scratch_fd, -4);
	mov(p, R9, R0);
	/* the header */
	sti(p, BPF_W, R9, 0, (int32_t)CAP_MAGIC);
	stx(p, BPF_W, R9, 4, R7);
	ldx(p, BPF_DW, R1, FP, -16);
	stx(p, BPF_DW, R9, 8, R1);
	sti(p, BPF_DW, R9, 16, 0);
	sti(p, BPF_W, R9, 24, 0);
	ldx(p, BPF_W, R1, R8, 0);
	stx(p, BPF_W, R9, 28, R1);
	/* START_LEN bytes at the start */
	ldx(p, BPF_W, R4, R8, 0);
	ends[ne++] = jmp(p, BPF_JGT, R4, -1, SAMPLER_CAPTURE_START_MAX);
	ldx(p, BPF_DW, R3, FP, -16);
	ends[ne++] = read_user(p, R9, CAP_HDR, R4, 0, -1);
	/* the first node's address: through IND1 unless none, then at IND2 */
	ldx(p, BPF_W, R1, R8, 8);
	/* a 32-bit move: zero-extended, as the load was (a 64-bit jump's constant is sign-extended) */
	INSN(.code = BPF_ALU | BPF_MOV | BPF_K, .dst_reg = R2, .imm = (int32_t)SAMPLER_CAPTURE_NONE);
	direct = jmp(p, BPF_JEQ, R1, R2, 0);
	ldx(p, BPF_DW, R3, FP, -16);
	add(p, R3, R1);
	ends[ne++] = read_user(p, FP, -24, -1, 8, -1);
	ldx(p, BPF_DW, R3, FP, -24);
	second = jmp(p, BPF_JA, 0, -1, 0);
	patch(p, direct, (int)p->n);
	ldx(p, BPF_DW, R3, FP, -16);
	patch(p, second, (int)p->n);
	ldx(p, BPF_W, R1, R8, 12);
	add(p, R3, R1);
	ends[ne++] = read_user(p, FP, -24, -1, 8, -1);
	ldx(p, BPF_DW, R1, FP, -24);
	stx(p, BPF_DW, R9, 16, R1);
	/* the nodes, unrolled: R5 is the record's size on the way out */
	for (unsigned i = 0; i < SAMPLER_CAPTURE_NODES; i++) {
		int32_t slot = (int32_t)(CAP_HDR + SAMPLER_CAPTURE_START_MAX + i * CAP_SLOT);

		ldx(p, BPF_DW, R3, FP, -24);
		movi(p, R5, slot);
		outs[no++] = jmp(p, BPF_JEQ, R3, -1, 0);
		stx(p, BPF_DW, R9, (int16_t)slot, R3);
		ldx(p, BPF_W, R4, R8, 4);
		outs[no++] = jmp(p, BPF_JGT, R4, -1, SAMPLER_CAPTURE_NODE_MAX);
		outs[no++] = read_user(p, R9, slot + 8, R4, 0, slot);
		sti(p, BPF_W, R9, 24, (int32_t)i + 1);
		/* the next address, at NEXT in the node (masked: the verifier wants it in bounds) */
		ldx(p, BPF_W, R1, R8, 16);
		andi(p, R1, SAMPLER_CAPTURE_NODE_MAX - 8);
		mov(p, R2, R9);
		add(p, R2, R1);
		ldx(p, BPF_DW, R1, R2, (int16_t)(slot + 8));
		stx(p, BPF_DW, FP, -24, R1);
		code_bytes(p, slot);
	}
	movi(p, R5, (int32_t)CAP_SIZE);
	out = (int)p->n;
	for (size_t i = 0; i < no; i++)
		patch(p, outs[i], out);
	/* into this CPU's BPF_OUTPUT event, so into its ring buffer */
	mov(p, R4, R9);
	output(p, c->out_fd);
	done = jmp(p, BPF_JA, 0, -1, 0);
	/* not described yet: the magic and the thread, through the event that wakes */
	wake = (int)p->n;
	for (size_t i = 0; i < ARRAY_SIZE(wakes); i++)
		patch(p, wakes[i], wake);
	sti(p, BPF_W, FP, -32, (int32_t)WAKE_MAGIC);
	stx(p, BPF_W, FP, -28, R7);
	mov(p, R4, FP);
	addi(p, R4, -32);
	movi(p, R5, 8);
	output(p, c->wake_fd);
	end = (int)p->n;
	patch(p, done, end);
	for (size_t i = 0; i < ne; i++)
		patch(p, ends[i], end);
	/* 1: the sample is written as ever */
	movi(p, R0, 1);
	INSN(.code = BPF_JMP | BPF_EXIT);
}

#undef INSN

void perf_capture_free(struct sampler_capture *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->nr_outs; i++) {
		if (c->outs[i] >= 0)
			close(c->outs[i]);
		if (c->wakes[i] >= 0)
			close(c->wakes[i]);
	}
	free(c->outs);
	free(c->wakes);
	{
		const int fds[] = { c->prog_fd, c->out_fd, c->wake_fd, c->scratch_fd, c->threads_fd, c->procs_fd };

		for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	free(c);
}

struct sampler_capture *perf_capture_new(unsigned max_cpu)
{
	struct sampler_capture *c = xcalloc(1, sizeof(*c));
	struct prog p = { 0 };
	union bpf_attr a;
	int e;

	c->procs_fd = c->threads_fd = c->scratch_fd = c->out_fd = c->wake_fd = c->prog_fd = -1;
	c->procs_fd = map_create(BPF_MAP_TYPE_HASH, 4, sizeof(struct cap_proc), CAP_MAX_PROCS);
	c->threads_fd = map_create(BPF_MAP_TYPE_HASH, 4, 8, CAP_MAX_THREADS);
	c->scratch_fd = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, CAP_SIZE, 1);
	c->out_fd = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, max_cpu);
	c->wake_fd = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, max_cpu);
	if (c->procs_fd < 0 || c->threads_fd < 0 || c->scratch_fd < 0 || c->out_fd < 0 || c->wake_fd < 0)
		goto fail;
	build(&p, c);
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uintptr_t)p.in;
	a.insn_cnt = (uint32_t)p.n;
	a.license = (uintptr_t)"GPL";
	c->prog_fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
	e = errno;
	free(p.in);
	errno = e;
	if (c->prog_fd < 0)
		goto fail;
	c->outs = xmalloc(max_cpu * sizeof(*c->outs));
	c->wakes = xmalloc(max_cpu * sizeof(*c->wakes));
	for (unsigned i = 0; i < max_cpu; i++)
		c->outs[i] = c->wakes[i] = -1;
	c->nr_outs = max_cpu;
	return c;
fail:
	e = errno;
	perf_capture_free(c);
	errno = e;
	return NULL;
}

/*
 * A BPF_OUTPUT event on ring B's CPU, written into B's ring, as entry KEY
 * of map MAP; in *FD. It wakes the drain thread by the ring's watermark,
 * or at each record where WAKE.
 */
static int output_open(struct perf_sampler *s, struct cpu_buf *b, int map, uint32_t key, bool wake, int *fd)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_BPF_OUTPUT;
	a.sample_type = PERF_SAMPLE_RAW;
	a.sample_period = 1;
	a.use_clockid = s->attr.use_clockid;
	a.clockid = s->attr.clockid;
	if (wake) {
		a.wakeup_events = 1;
	} else {
		a.watermark = 1;
		a.wakeup_watermark = s->attr.wakeup_watermark ? s->attr.wakeup_watermark : 1;
	}
	*fd = (int)syscall(__NR_perf_event_open, &a, -1, b->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (ioctl(*fd, PERF_EVENT_IOC_SET_OUTPUT, b->fd) < 0 || ioctl(*fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ||
	    map_set(map, &key, fd) < 0)
		return -errno;
	return 0;
}

int perf_capture_attach(struct perf_sampler *s, struct sampler_capture *c)
{
	int ret;

	for (unsigned i = 0; i < s->nr_cpus && i < c->nr_outs; i++) {
		struct cpu_buf *b = &s->cpus[i];
		uint32_t key = (uint32_t)b->cpu;

		if (key >= c->nr_outs)
			return -ERANGE;
		ret = output_open(s, b, c->out_fd, key, false, &c->outs[i]);
		if (!ret)
			ret = output_open(s, b, c->wake_fd, key, true, &c->wakes[i]);
		if (ret < 0)
			return ret;
		if (ioctl(b->fd, PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0)
			return -errno;
		for (size_t j = 0; j < b->nr_more; j++)
			if (ioctl(b->more[j], PERF_EVENT_IOC_SET_BPF, c->prog_fd) < 0)
				return -errno;
	}
	return 0;
}

bool perf_capture_decode(const void *raw, size_t len, struct sampler_captured *out, int32_t *tid)
{
	const uint8_t *r = raw;
	uint32_t magic, t, nr, start_len;

	if (len < CAP_HDR + SAMPLER_CAPTURE_START_MAX)
		return false;
	memcpy(&magic, r, 4);
	memcpy(&t, r + 4, 4);
	memcpy(&out->start, r + 8, 8);
	memcpy(&out->first, r + 16, 8);
	memcpy(&nr, r + 24, 4);
	memcpy(&start_len, r + 28, 4);
	if (magic != CAP_MAGIC || start_len > SAMPLER_CAPTURE_START_MAX || nr > SAMPLER_CAPTURE_NODES ||
	    (len - CAP_HDR - SAMPLER_CAPTURE_START_MAX) / CAP_SLOT < nr)
		return false;
	*tid = (int32_t)t;
	out->start_bytes = r + CAP_HDR;
	out->start_len = start_len;
	out->nr_nodes = nr;
	out->nodes = r + CAP_HDR + SAMPLER_CAPTURE_START_MAX;
	out->node_stride = CAP_SLOT;
	out->code_offset = CAP_CODE;
	return true;
}

int sampler_capture_proc(struct sampler_capture *c, int32_t pid, const struct sampler_capture_layout *l)
{
	struct cap_proc v = { 0 };
	uint32_t key = (uint32_t)pid;

	if (l) {
		if (!l->start_len || l->start_len > SAMPLER_CAPTURE_START_MAX || l->node_len > SAMPLER_CAPTURE_NODE_MAX ||
		    (l->node_len & 7) || (l->next & 7) || l->next + 8 > l->node_len ||
		    (l->code_at != SAMPLER_CAPTURE_NONE &&
		     ((l->code_at & 7) || l->code_at + 8 > l->node_len || l->code_len > SAMPLER_CAPTURE_CODE_MAX)))
			return -EINVAL;
		v = (struct cap_proc){ l->start_len, l->node_len, l->ind1, l->ind2, l->next, l->code_at, l->code_len, 0 };
	}
	return map_set(c->procs_fd, &key, &v);
}

int sampler_capture_thread(struct sampler_capture *c, int32_t tid, uint64_t start)
{
	uint32_t key = (uint32_t)tid;

	return map_set(c->threads_fd, &key, &start);
}

void perf_capture_exit(struct sampler_capture *c, int32_t pid, int32_t tid)
{
	uint32_t key = (uint32_t)tid;

	map_del(c->threads_fd, &key);
	if (pid == tid)
		sampler_capture_forget_proc(c, pid);
}

void sampler_capture_forget_proc(struct sampler_capture *c, int32_t pid)
{
	uint32_t key = (uint32_t)pid;

	map_del(c->procs_fd, &key);
}
