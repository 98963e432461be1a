// SPDX-License-Identifier: MIT
/*
 * Test tool: whether this machine lets proftool capture at the sample
 * (sampler/perf_bpf.c: BPF maps and a perf_event program using
 * bpf_probe_read_user). Exits 0 when it does; else prints why and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sampler/perf_int.h"

int main(void)
{
	struct sampler_capture *c = perf_capture_new(1);

	if (!c) {
		printf("BPF captures are not allowed here: %s\n", strerror(errno));
		return 1;
	}
	perf_capture_free(c);
	return 0;
}
