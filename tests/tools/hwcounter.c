// SPDX-License-Identifier: MIT
/*
 * Asks the kernel, without proftool, whether this machine counts a hardware event:
 *
 *     hwcounter cycles|instructions
 *
 * Opens the event for itself (user space only, as an unprivileged perf_event_open may) and
 * exits 0 when the kernel opens it, 1 when the machine has no such counter (ENOENT,
 * EOPNOTSUPP or ENODEV: no PMU, as in most virtual machines), 2 on any other error, which
 * it prints. tests/record.bats decides from it what proftool must do with -e cycles.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct perf_event_attr a;
	long fd;

	if (argc != 2 || (strcmp(argv[1], "cycles") && strcmp(argv[1], "instructions"))) {
		fprintf(stderr, "usage: hwcounter cycles|instructions\n");
		return 2;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = strcmp(argv[1], "cycles") ? PERF_COUNT_HW_INSTRUCTIONS : PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	if (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV)
		return 1;
	fprintf(stderr, "hwcounter: perf_event_open(%s): %s\n", argv[1], strerror(errno));
	return 2;
}
