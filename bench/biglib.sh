#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes the assembly of a shared library with N exported functions (default
# 30000), each with CFI, to stdout: a stand-in for libtorch's symbol count
# that assembles in a second (the same in C takes gcc over a minute).
# Each big_fn_I(x) runs 64 rounds of a multiply and returns x.
set -eu
n=${1:-30000}
awk -v n="$n" 'BEGIN {
	print "\t.text"
	for (i = 0; i < n; i++) {
		printf "\t.globl big_fn_%d\n\t.type big_fn_%d, @function\n\t.p2align 4\nbig_fn_%d:\n", i, i, i
		print "\t.cfi_startproc"
		print "\tpushq %rbx"
		print "\t.cfi_def_cfa_offset 16"
		print "\t.cfi_offset %rbx, -16"
		print "\tmovq %rdi, %rax"
		print "\tmovl $64, %ecx"
		printf "\tmovq $%d, %%rbx\n", 6364136223846793005 % 2147483647 + i
		print "1:\timulq %rbx, %rax"
		print "\taddq %rcx, %rax"
		print "\tdecl %ecx"
		print "\tjnz 1b"
		print "\tpopq %rbx"
		print "\t.cfi_def_cfa_offset 8"
		print "\tret"
		print "\t.cfi_endproc"
		printf "\t.size big_fn_%d, .-big_fn_%d\n", i, i
	}
	print "\t.section .note.GNU-stack,\"\",@progbits"
}'
