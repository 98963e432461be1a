/* SPDX-License-Identifier: MIT */
/*
 * The protobuf wire format for report/pprof.c (protobuf.c): fields are
 * appended to a message in memory, and the top-level message is written
 * one field at a time into a gzip stream, so that only the largest single
 * field is ever held in memory.
 */
#ifndef PROFTOOL_REPORT_PROTOBUF_H
#define PROFTOOL_REPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zlib.h>

/* One message being encoded; reused (len = 0) from message to message. */
struct pb {
	uint8_t *b;
	size_t len, alloc;
};

/* Fields appended to M. An integer field at zero is left out, as proto3 does. */
void pb_int(struct pb *m, uint32_t field, uint64_t v);
void pb_bytes(struct pb *m, uint32_t field, const void *data, size_t n);
void pb_msg(struct pb *m, uint32_t field, const struct pb *sub);
/* A packed repeated integer field: one key and length, then the varints back to back. */
void pb_packed(struct pb *m, uint32_t field, const uint64_t *v, size_t n);

/* The gzip stream the top-level message is deflated into, field by field (64 KiB: not on the stack). */
struct pb_gz {
	z_stream zs;
	gz_header head;         /* must outlive the first deflate() call */
	FILE *out;
	int err;                /* the first error, a negative errno; 0 so far */
	uint8_t buf[1 << 16];
};

/* Starts a gzip stream to OUT; 0 or a negative errno. */
int pb_gz_open(struct pb_gz *z, FILE *out);
/* Raw bytes into the stream. */
void pb_gz_put(struct pb_gz *z, const void *data, size_t n);
/* Writes MSG as top-level field FIELD, and empties it for the next one. */
void pb_gz_field(struct pb_gz *z, uint32_t field, struct pb *msg);
/* Writes top-level integer field FIELD (left out when zero, as in pb_int). */
void pb_gz_int(struct pb_gz *z, uint32_t field, uint64_t v);
/* Ends the stream; returns the first error (a negative errno) or 0. */
int pb_gz_close(struct pb_gz *z);

#endif
