// SPDX-License-Identifier: MIT
/*
 * The protobuf wire format, encoded by hand for pprof's profile.proto:
 * messages built in memory, and the top-level message written field by
 * field into a gzip stream.
 */
#include "protobuf.h"

#include <errno.h>
#include <string.h>

#include "base/base.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* ---- messages ---- */

/* Encodes V as a varint into BUF (10 bytes at most); returns its length. */
static size_t varint(uint8_t *buf, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (uint8_t)v;
	return n;
}

static void pb_raw(struct pb *m, const void *data, size_t n)
{
	if (!n)
		return;
	ALLOC_GROW(m->b, m->len + n, m->alloc);
	memcpy(m->b + m->len, data, n);
	m->len += n;
}

static void pb_varint(struct pb *m, uint64_t v)
{
	uint8_t buf[10];

	pb_raw(m, buf, varint(buf, v));
}

static void pb_key(struct pb *m, uint32_t field, unsigned wire)
{
	pb_varint(m, (uint64_t)field << 3 | wire);
}

/*
 * An integer field (int64, uint64 or bool; ours are never negative). proto3
 * leaves out fields at their default, zero, and readers take absence as zero.
 */
void pb_int(struct pb *m, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_key(m, field, WIRE_VARINT);
	pb_varint(m, v);
}

void pb_bytes(struct pb *m, uint32_t field, const void *data, size_t n)
{
	pb_key(m, field, WIRE_LEN);
	pb_varint(m, n);
	pb_raw(m, data, n);
}

void pb_msg(struct pb *m, uint32_t field, const struct pb *sub)
{
	pb_bytes(m, field, sub->b, sub->len);
}

/* A packed repeated integer field: one key and length, then the varints back to back. */
void pb_packed(struct pb *m, uint32_t field, const uint64_t *v, size_t n)
{
	uint8_t buf[10];
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += varint(buf, v[i]);
	pb_key(m, field, WIRE_LEN);
	pb_varint(m, len);
	for (size_t i = 0; i < n; i++)
		pb_varint(m, v[i]);
}

/* ---- the gzip stream ---- */

int pb_gz_open(struct pb_gz *z, FILE *out)
{
	int ret;

	memset(z, 0, sizeof(*z));
	z->out = out;
	/* windowBits 15 + 16 asks for a gzip wrapper */
	ret = deflateInit2(&z->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (ret != Z_OK)
		return ret == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	/* mtime 0 and no file name: the same profile gives the same bytes */
	z->head.time = 0;
	z->head.os = 3;	/* Unix, as gzip(1) writes */
	if (deflateSetHeader(&z->zs, &z->head) != Z_OK) {
		deflateEnd(&z->zs);
		return -EINVAL;
	}
	return 0;
}

/* Runs deflate over the pending input with FLUSH, writing whatever it produces. */
static void pb_gz_deflate(struct pb_gz *z, int flush)
{
	int ret;

	do {
		size_t n;

		z->zs.next_out = z->buf;
		z->zs.avail_out = sizeof(z->buf);
		ret = deflate(&z->zs, flush);
		if (ret == Z_STREAM_ERROR) {
			z->err = -EINVAL;
			return;
		}
		n = sizeof(z->buf) - z->zs.avail_out;
		if (n && fwrite(z->buf, 1, n, z->out) != n) {
			z->err = -EIO;
			return;
		}
	} while (z->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
}

void pb_gz_put(struct pb_gz *z, const void *data, size_t n)
{
	const uint8_t *p = data;

	/* avail_in is an unsigned int: feed huge messages in pieces */
	while (n && !z->err) {
		size_t chunk = n < (1u << 30) ? n : (1u << 30);

		z->zs.next_in = (Bytef *)p;
		z->zs.avail_in = (uInt)chunk;
		pb_gz_deflate(z, Z_NO_FLUSH);
		p += chunk;
		n -= chunk;
	}
}

/* Writes MSG as top-level field FIELD of the Profile, and empties it for the next one. */
void pb_gz_field(struct pb_gz *z, uint32_t field, struct pb *msg)
{
	uint8_t head[20];
	size_t n = varint(head, (uint64_t)field << 3 | WIRE_LEN);

	n += varint(head + n, msg->len);
	pb_gz_put(z, head, n);
	pb_gz_put(z, msg->b, msg->len);
	msg->len = 0;
}

/* Writes integer field FIELD of the Profile (left out when zero, as in pb_int). */
void pb_gz_int(struct pb_gz *z, uint32_t field, uint64_t v)
{
	uint8_t buf[20];
	size_t n;

	if (!v)
		return;
	n = varint(buf, (uint64_t)field << 3 | WIRE_VARINT);
	n += varint(buf + n, v);
	pb_gz_put(z, buf, n);
}

/* Ends the stream; returns the first error or 0. */
int pb_gz_close(struct pb_gz *z)
{
	if (!z->err)
		pb_gz_deflate(z, Z_FINISH);
	deflateEnd(&z->zs);
	return z->err;
}
