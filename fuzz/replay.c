// SPDX-License-Identifier: MIT
/* A main() for a fuzz target without libFuzzer: runs it once on each file named, for tests/fuzz.bats. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, alloc = 0, n;

	if (!f) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == alloc) {
			alloc = alloc ? 2 * alloc : 65536;
			buf = realloc(buf, alloc);
			if (!buf)
				abort();
		}
		n = fread(buf + len, 1, alloc - len, f);
		len += n;
	} while (n);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (run_file(argv[i]) < 0)
			ret = 1;
	return ret;
}
