// SPDX-License-Identifier: MIT
/*
 * Runs a command with perf_event_open denied by a seccomp filter, as container runtimes do:
 *
 *     noperf [--errno EPERM|EACCES|ENOSYS] COMMAND [ARGS...]
 *
 * The call fails with the errno given (EPERM by default): Docker's default profile returns
 * EPERM, some runtimes EACCES, and ENOSYS is what a kernel without perf events gives.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
	const char *name;
	int value;
} errnos[] = {
	{ "EPERM", EPERM },
	{ "EACCES", EACCES },
	{ "ENOSYS", ENOSYS },
};

static int usage(void)
{
	fprintf(stderr, "usage: noperf [--errno EPERM|EACCES|ENOSYS] COMMAND [ARGS...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	int err = EPERM;
	int arg = 1;

	if (argc > 1 && strcmp(argv[1], "--errno") == 0) {
		size_t i;

		if (argc < 3)
			return usage();
		for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
			if (strcmp(argv[2], errnos[i].name) == 0)
				break;
		if (i == sizeof(errnos) / sizeof(errnos[0])) {
			fprintf(stderr, "noperf: unknown errno '%s'\n", argv[2]);
			return usage();
		}
		err = errnos[i].value;
		arg = 3;
	}
	if (arg >= argc)
		return usage();

	struct sock_filter filter[] = {
		/* anything but x86-64 syscalls passes untouched */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "noperf: cannot install the seccomp filter: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[arg], argv + arg);
	fprintf(stderr, "noperf: cannot run '%s': %s\n", argv[arg], strerror(errno));
	return 127;
}
