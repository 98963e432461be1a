// SPDX-License-Identifier: MIT
/*
 * Profiler test workload: code without usable unwind information, beside the
 * same loop with it. Each of 100 rounds runs the loop LOOP_ITERS * SCALE
 * times through run_cfi -> cfi_loop (assembly with CFI), then as many times
 * through the MODE's way:
 *   leaf       run_leaf -> nocfi_loop: assembly with no CFI at all
 *   redzone    run_redzone -> redzone_loop: CFI whose frame address is kept
 *              below the stack pointer, in the red zone, as OpenSSL's
 *              SHA-256 AVX2 code keeps it (DW_OP_breg7 -8; deref; plus 8)
 *   mid        run_mid -> mid_nocfi -> mid_leaf: assembly with no CFI in
 *              the middle of the stack, calling a C function that runs
 *              the loop
 *   jit        run_jit -> a copy of the loop in anonymous executable memory,
 *              called through a function pointer (a JIT's kernel)
 *   jitmap     the same, and the program writes /tmp/perf-PID.map itself,
 *              naming the copy jitted_loop (a map of the user's)
 *   jitonednn  the same, and, when ONEDNN_JIT_PROFILE is 2, the program
 *              writes the map as oneDNN does, naming the copy
 *              jit_fixture_kernel
 * The loop (x = x * 0x2545f491 + 1, n times) is the same instructions in all
 * of them, each aligned alike (a loop's alignment alone made one half 52 %
 * of the time here), so each half takes half the time. Prints "nocfi: MODE
 * done".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "work.h"

/* Iterations of the loop in one round at SCALE 1 (about 5 ms a way on a modern core). */
#define LOOP_ITERS	10000000.0
#define ROUNDS		100

typedef uint64_t (*loop_fn)(uint64_t x, uint64_t n);

uint64_t cfi_loop(uint64_t x, uint64_t n);
uint64_t nocfi_loop(uint64_t x, uint64_t n);
uint64_t redzone_loop(uint64_t x, uint64_t n);
uint64_t mid_nocfi(uint64_t x, uint64_t n);
uint64_t mid_leaf(uint64_t x, uint64_t n);
extern const unsigned char loop_code[], loop_code_end[];

/* uint64_t LOOP(uint64_t x, uint64_t n): n rounds of x = x * 0x2545f491 + 1 */
#define LOOP_BODY							\
	"	mov %rdi, %rax\n"					\
	"	test %rsi, %rsi\n"					\
	"	jz 1f\n"						\
	"	.p2align 5, 0x90\n"					\
	"0:	imul $0x2545f491, %rax, %rax\n"				\
	"	add $1, %rax\n"						\
	"	dec %rsi\n"						\
	"	jnz 0b\n"						\
	"1:\n"

__asm__(
	"	.text\n"
	"	.globl cfi_loop\n"
	"	.type cfi_loop, @function\n"
	"	.p2align 6, 0x90\n"
	"cfi_loop:\n"
	"	.cfi_startproc\n"
	LOOP_BODY
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size cfi_loop, .-cfi_loop\n"

	/* no .cfi_startproc: the assembler writes no FDE for it */
	"	.globl nocfi_loop\n"
	"	.type nocfi_loop, @function\n"
	"	.p2align 6, 0x90\n"
	"nocfi_loop:\n"
	LOOP_BODY
	"	ret\n"
	"	.size nocfi_loop, .-nocfi_loop\n"

	/*
	 * The frame is realigned, so the distance to the return address is
	 * unknown to the CFI but through the entry stack pointer, which is kept
	 * at rsp-8 (a signal handler's frame starts below the 128-byte red zone).
	 */
	"	.globl redzone_loop\n"
	"	.type redzone_loop, @function\n"
	"	.p2align 6, 0x90\n"
	"redzone_loop:\n"
	"	.cfi_startproc\n"
	"	mov %rsp, %r11\n"
	"	.cfi_def_cfa_register %r11\n"
	"	sub $64, %rsp\n"
	"	and $-32, %rsp\n"
	"	mov %r11, -8(%rsp)\n"
	/* DW_CFA_def_cfa_expression: DW_OP_breg7 (rsp) -8; DW_OP_deref; DW_OP_plus_uconst 8 */
	"	.cfi_escape 0x0f, 0x05, 0x77, 0x78, 0x06, 0x23, 0x08\n"
	LOOP_BODY
	"	mov -8(%rsp), %rsp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size redzone_loop, .-redzone_loop\n"

	/*
	 * No CFI either, and a frame of its own: a register pushed and 16
	 * bytes left as they were (whatever earlier calls wrote there), then a
	 * call of a C function. The stack stays aligned for the call.
	 */
	"	.globl mid_nocfi\n"
	"	.type mid_nocfi, @function\n"
	"mid_nocfi:\n"
	"	push %rbx\n"
	"	sub $16, %rsp\n"
	"	call mid_leaf\n"
	"	add $16, %rsp\n"
	"	pop %rbx\n"
	"	ret\n"
	"	.size mid_nocfi, .-mid_nocfi\n"

	/* the bytes a JIT copies: position-independent, no CFI anywhere */
	"	.section .rodata\n"
	"	.globl loop_code, loop_code_end\n"
	"	.p2align 6, 0x90\n"
	"loop_code:\n"
	LOOP_BODY
	"	ret\n"
	"loop_code_end:\n"
	"	.text\n");

static volatile uint64_t sink;

static __attribute__((noinline)) uint64_t run_cfi(uint64_t x, uint64_t n)
{
	x = cfi_loop(x, n);
	asm volatile("" ::: "memory");
	return x + 1;
}

static __attribute__((noinline)) uint64_t run_leaf(uint64_t x, uint64_t n)
{
	x = nocfi_loop(x, n);
	asm volatile("" ::: "memory");
	return x + 1;
}

static __attribute__((noinline)) uint64_t run_redzone(uint64_t x, uint64_t n)
{
	x = redzone_loop(x, n);
	asm volatile("" ::: "memory");
	return x + 1;
}

/* The loop in C (with CFI), below mid_nocfi: the same instructions, one a round. */
__attribute__((noinline)) uint64_t mid_leaf(uint64_t x, uint64_t n)
{
	for (; n; n--) {
		x = x * 0x2545f491 + 1;
		asm volatile("" : "+r"(x));
	}
	return x;
}

static __attribute__((noinline)) uint64_t run_mid(uint64_t x, uint64_t n)
{
	x = mid_nocfi(x, n);
	asm volatile("" ::: "memory");
	return x + 1;
}

static __attribute__((noinline)) uint64_t run_jit(loop_fn jitted, uint64_t x, uint64_t n)
{
	x = jitted(x, n);
	asm volatile("" ::: "memory");
	return x + 1;
}

/* The loop copied into anonymous memory, then made executable, as a JIT does. */
static loop_fn make_jit(void)
{
	size_t len = (size_t)(loop_code_end - loop_code);
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED || len > 4096) {
		fprintf(stderr, "nocfi: mmap: %s\n", strerror(errno));
		exit(1);
	}
	memcpy(mem, loop_code, len);
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC)) {
		fprintf(stderr, "nocfi: mprotect: %s\n", strerror(errno));
		exit(1);
	}
	return (loop_fn)mem;
}

/* /tmp/perf-PID.map with one entry, as node and oneDNN write it. */
static void write_map(loop_fn code, const char *name)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f || fprintf(f, "%lx %lx %s\n", (unsigned long)(uintptr_t)code,
			  (unsigned long)(loop_code_end - loop_code), name) < 0 || fclose(f)) {
		fprintf(stderr, "nocfi: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double scale = argc > 2 ? parse_scale(argv[2]) : 1.0;
	uint64_t n = (uint64_t)(LOOP_ITERS * scale);
	loop_fn jitted = NULL;
	const char *env;

	if (argc < 2 || argc > 3 || (strcmp(mode, "leaf") && strcmp(mode, "redzone") &&
				     strcmp(mode, "mid") && strncmp(mode, "jit", 3))) {
		fprintf(stderr, "usage: %s leaf|redzone|mid|jit|jitmap|jitonednn [SCALE]\n", argv[0]);
		return 2;
	}
	if (!strncmp(mode, "jit", 3)) {
		jitted = make_jit();
		if (!strcmp(mode, "jitmap"))
			write_map(jitted, "jitted_loop");
		else if (!strcmp(mode, "jitonednn") && (env = getenv("ONEDNN_JIT_PROFILE")) &&
			 !strcmp(env, "2"))
			write_map(jitted, "jit_fixture_kernel");
		else if (strcmp(mode, "jit") && strcmp(mode, "jitonednn"))
			return 2;
	}
	for (int r = 0; r < ROUNDS; r++) {
		sink = run_cfi(sink, n);
		if (jitted)
			sink = run_jit(jitted, sink, n);
		else if (!strcmp(mode, "leaf"))
			sink = run_leaf(sink, n);
		else if (!strcmp(mode, "mid"))
			sink = run_mid(sink, n);
		else
			sink = run_redzone(sink, n);
	}
	printf("nocfi: %s done\n", mode);
	return 0;
}
