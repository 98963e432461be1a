// SPDX-License-Identifier: MIT
/*
 * The input of fuzz_python_read: a header, then the memory of a forged
 * CPython process, shared by the target and the seeds that python_seeds.c
 * writes.
 *
 * The input is mapped whole at PYFZ_BASE (its header included, so an offset
 * into the input is an address minus PYFZ_BASE), up to the next page, the
 * rest of which reads as zeros; everything else is unmapped but for one
 * tiled region at PYFZ_TILE: TILE_LEN bytes of the input at TILE_OFF,
 * repeated TILE_COUNT times, where every 8-byte word of copy k that points
 * into the first two copies is moved by k copies (so the frame of copy k
 * whose previous frame is that of copy 1 in the pattern points into copy
 * k + 1): long frame chains, long thread lists and huge strings from a few
 * hundred bytes. All values are little-endian.
 */
#ifndef PROFTOOL_FUZZ_PYFUZZ_H
#define PROFTOOL_FUZZ_PYFUZZ_H

#include <stdint.h>

#define PYFZ_BASE 0x10000000ull
#define PYFZ_TILE 0x40000000ull
#define PYFZ_TILE_MAX (1ull << 30)      /* bytes of the tiled region, at most */
#define PYFZ_PAGE 4096ull

/* Interpreter versions, by pyfz_hdr.version modulo their number: the three supported, twice, then two refused. */
#define PYFZ_VERSIONS { 0x030b02f0u, 0x030c01f0u, 0x030d00f0u, 0x030b07f0u, 0x030c08f0u, 0x030d05f0u, \
			0x030a0df0u, 0x030e00a1u }
#define PYFZ_NR_VERSIONS 8

#define PYFZ_TIDS 4

struct pyfz_hdr {
	uint8_t version;        /* index into PYFZ_VERSIONS, modulo PYFZ_NR_VERSIONS */
	uint8_t nr_tids;        /* threads read per round: 1 + nr_tids % PYFZ_TIDS */
	uint8_t fail_every;     /* 0, or every N-th call of the reader reads its last range short */
	uint8_t pad;
	uint32_t runtime;       /* offset of _PyRuntime in the input */
	/* offsets of PyCode_Type, PyUnicode_Type, PyBytes_Type in the input; 0: that type not checked */
	uint32_t code_type, unicode_type, bytes_type;
	int32_t tid[PYFZ_TIDS]; /* threads whose stacks are read, twice each (the second time from the caches) */
	uint16_t room;          /* frames the caller has room for, modulo PY_MAX_DEPTH + 9; 0: PY_MAX_DEPTH */
	uint16_t gone_after;    /* 0, or calls of the reader after which the process is gone (-ESRCH) */
	uint32_t tile_off, tile_len, tile_count;        /* tile_len is rounded down to 8 bytes */
	/*
	 * The process runs on under the reader: once PATCH_AFTER calls of the
	 * reader are done, or between the two rounds of reads if that comes
	 * first (0: never), PATCH_LEN bytes of the input at PATCH_OFF are
	 * copied to offset PATCH_AT of its memory.
	 */
	uint32_t patch_off, patch_len, patch_at, patch_after;
};

#endif
