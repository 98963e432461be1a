// SPDX-License-Identifier: MIT
/* Strings of any bytes in the file's JSON, and the checked building of that JSON (io.c, regions.c). */
#include "internal.h"

#include <string.h>

#include "base/text.h"

json_t *jb_new(struct jbuild *b, json_t *v)
{
	if (!v)
		b->failed = true;
	return v;
}

json_t *jb_str(struct jbuild *b, const char *s)
{
	char *enc;
	json_t *v;

	if (!s)
		return jb_new(b, json_null());
	enc = text_bytes_encode(s);
	if (!enc)
		return jb_new(b, json_string(s));
	/* JSON strings are UTF-8: other bytes go in an object of their own (docs/profile-format.md) */
	b->bytes = true;
	v = json_object();
	if (json_object_set_new(v, PROFILE_BYTES_KEY, json_string(enc))) {
		json_decref(v);
		v = NULL;
	}
	free(enc);
	return jb_new(b, v);
}

json_t *jb_int(struct jbuild *b, json_int_t v)
{
	return jb_new(b, json_integer(v));
}

void jb_append(struct jbuild *b, json_t *a, json_t *v)
{
	/* jansson takes V (and drops it) even when it cannot add it */
	if (json_array_append_new(a, v))
		b->failed = true;
}

void jb_set(struct jbuild *b, json_t *o, const char *key, json_t *v)
{
	if (json_object_set_new(o, key, v))
		b->failed = true;
}

/* The string a {"$bytes": T} object stands for; NULL when V is not such an object, or is malformed. */
static json_t *bytes_string(json_t *v, bool *bad)
{
	json_t *t = json_object_get(v, PROFILE_BYTES_KEY), *s;
	char *raw;

	if (!t)
		return NULL;
	if (json_object_size(v) != 1 || !json_is_string(t) ||
	    !(raw = text_bytes_decode(json_string_value(t)))) {
		*bad = true;
		return NULL;
	}
	/* held as they are: jansson checks UTF-8 only in what it parses and in json_string() */
	s = json_stringn_nocheck(raw, strlen(raw));
	free(raw);
	if (!s)
		*bad = true;
	return s;
}

static bool decode_below(json_t *v, int depth)
{
	bool bad = false;

	/* jansson's parser nests 2048 deep at most; a file is never deeper than this */
	if (depth > 4096)
		return false;
	if (json_is_array(v)) {
		size_t n = json_array_size(v);

		for (size_t i = 0; i < n && !bad; i++) {
			json_t *e = json_array_get(v, i), *s;

			if (!json_is_object(e) && !json_is_array(e))
				continue;
			if ((s = bytes_string(e, &bad)))
				bad = json_array_set_new(v, i, s) != 0;
			else if (!bad)
				bad = !decode_below(e, depth + 1);
		}
	} else if (json_is_object(v)) {
		for (void *it = json_object_iter(v); it && !bad; it = json_object_iter_next(v, it)) {
			json_t *e = json_object_iter_value(it), *s;

			if (!json_is_object(e) && !json_is_array(e))
				continue;
			if ((s = bytes_string(e, &bad)))
				bad = json_object_iter_set_new(v, it, s) != 0;
			else if (!bad)
				bad = !decode_below(e, depth + 1);
		}
	}
	return !bad;
}

int profile_json_decode_bytes(json_t *root)
{
	return decode_below(root, 0) ? 0 : -1;
}
