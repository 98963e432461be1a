// SPDX-License-Identifier: MIT
/* What the parts of profile/ share and nothing else sees: the file's writer and reader helpers. */
#ifndef PROFTOOL_PROFILE_INTERNAL_H
#define PROFTOOL_PROFILE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "profile.h"

/* ---- io.c: the file is compressed as it is produced ---- */
struct zout;
void zput(struct zout *z, const void *buf, size_t len);
void zputs(struct zout *z, const char *s);
/* ",N" (or "N" for the first), the columns' one operation, without printf. */
void zput_int(struct zout *z, int64_t v, bool first);
/* A count of the meta as the file holds it: a JSON integer, so at most INT64_MAX. */
json_int_t profile_count_int(uint64_t v);

/* ---- strings.c: building the file's JSON, strings of any bytes ---- */

/*
 * A string whose bytes are not all UTF-8 is stored as {"$bytes": T}, T its
 * text_bytes_encode() form (base/text.h); a file that has one is of
 * PROFILE_VERSION (2), one without PROFILE_VERSION_PLAIN, so that a reader
 * of version 1 says such a file is newer rather than corrupt. The reader
 * turns them back before anything else reads.
 */
#define PROFILE_BYTES_KEY "$bytes"
#define PROFILE_VERSION_PLAIN 1

/*
 * Building the file's JSON with every jansson call checked: the jb_
 * calls note the first failure (out of memory) in FAILED instead of
 * leaving a value out, so that a file is written whole or not at all.
 */
struct jbuild {
	bool failed;            /* some value could not be made or added */
	bool bytes;             /* some string was stored as {"$bytes": ...} */
};
/* Checks a value made by jansson (json_array(), json_pack(), ...): returns V. */
json_t *jb_new(struct jbuild *b, json_t *v);
/* S as a JSON string, {"$bytes": ...} when S is not UTF-8, null when S is NULL. */
json_t *jb_str(struct jbuild *b, const char *s);
json_t *jb_int(struct jbuild *b, json_int_t v);
/* Adds V (taken, even on failure; NULL is a failure) to array A, or as KEY of object O. */
void jb_append(struct jbuild *b, json_t *a, json_t *v);
void jb_set(struct jbuild *b, json_t *o, const char *key, json_t *v);

/* Turns every {"$bytes": T} below ROOT into the string it stands for; -1 when one is malformed. */
int profile_json_decode_bytes(json_t *root);

/* ---- read.c: checking a file's tables ---- */
struct reader {
	char *err;
	size_t errlen;
	int bad; /* set on the first schema violation */
};

/* Records the first violation (its text in r->err); later ones only count. */
__attribute__((format(printf, 2, 3)))
void reader_bad(struct reader *r, const char *fmt, ...);
/* OBJ[KEY], an array; of N entries when CHECK_N. NULL (and bad) otherwise. */
json_t *reader_array(struct reader *r, json_t *obj, const char *key, size_t n, bool check_n);
/* A[I], an integer in LO..HI; LO (and bad) otherwise. */
json_int_t reader_int_at(struct reader *r, json_t *a, size_t i, json_int_t lo, json_int_t hi,
			 const char *what);
/* A[I], a string (or null when NULLABLE); "" (and bad) otherwise. */
const char *reader_str_at(struct reader *r, json_t *a, size_t i, bool nullable, const char *what);

/* ---- regions.c: the region tables in the file ---- */
/* meta.regions, the regions' tables (names, nodes, pauses) as JSON; NULL when there are none. */
json_t *profile_regions_meta_to_json(struct jbuild *b, const struct profile_meta *m);
json_t *profile_regions_tables_to_json(struct jbuild *b, const struct profile *p);
/* The instance and mark columns, streamed after the tables: ",\"region_instances\":{...}..." */
void profile_regions_write_columns(struct zout *z, const struct profile *p);
void profile_regions_read_meta(struct profile *p, json_t *meta);
/* Reads what regions_*_to_json and the columns wrote; after threads, before samples. */
void profile_regions_read_tables(struct reader *r, struct profile *p, json_t *root);
void profile_regions_release(struct profile *p);
/* profile_merge's part: TMAP maps SRC's threads to DST's. Returns SRC's nodes' map to DST's (to free). */
uint32_t *profile_regions_merge(struct profile *dst, const struct profile *src, const uint32_t *tmap);

#endif
