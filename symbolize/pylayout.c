// SPDX-License-Identifier: MIT
/* The layout of a CPython version: a built-in table (3.11, 3.12) or the runtime's _Py_DebugOffsets (3.13). */
#include "python.h"

#include <errno.h>
#include <string.h>

#include "base/base.h"

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/*
 * Where 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h of
 * 3.13.0) keeps the offsets we use, in bytes from its start; each is a
 * uint64_t. The struct changes between minor versions (3.14 inserts
 * fields), so a new version needs its own list; the values it holds come
 * from the running interpreter.
 */
enum {
	DBG313_VERSION = 8, DBG313_FREE_THREADED = 16,
	DBG313_RUNTIME_INTERP_HEAD = 40,
	DBG313_INTERP_NEXT = 64, DBG313_INTERP_THREADS_HEAD = 72,
	DBG313_TSTATE_NEXT = 168, DBG313_TSTATE_CURRENT_FRAME = 184, DBG313_TSTATE_NATIVE_TID = 200,
	DBG313_FRAME_PREVIOUS = 232, DBG313_FRAME_EXECUTABLE = 240, DBG313_FRAME_INSTR = 248,
	DBG313_FRAME_LOCALSPLUS = 256, DBG313_FRAME_OWNER = 264,
	DBG313_CODE_FILENAME = 280, DBG313_CODE_QUALNAME = 296, DBG313_CODE_LINETABLE = 304,
	DBG313_CODE_FIRSTLINENO = 312, DBG313_CODE_ADAPTIVE = 344,
	DBG313_OB_TYPE = 360,
	DBG313_BYTES_SIZE = 520, DBG313_BYTES_SVAL = 528,
	DBG313_STR_STATE = 544, DBG313_STR_LENGTH = 552, DBG313_STR_ASCII_SIZE = 560,
	DBG313_SIZE = 584,
};

static int from_debug_offsets(struct py_target *t, uint64_t runtime, uint32_t *version_out, char *err,
			      size_t errlen)
{
	uint8_t d[DBG313_SIZE];
	uint64_t version, vals[24];
	static const uint16_t pos[24] = {
		DBG313_RUNTIME_INTERP_HEAD, DBG313_INTERP_NEXT, DBG313_INTERP_THREADS_HEAD,
		DBG313_TSTATE_NEXT, DBG313_TSTATE_CURRENT_FRAME, DBG313_TSTATE_NATIVE_TID,
		DBG313_FRAME_PREVIOUS, DBG313_FRAME_EXECUTABLE, DBG313_FRAME_INSTR,
		DBG313_FRAME_LOCALSPLUS, DBG313_FRAME_OWNER, DBG313_CODE_FILENAME,
		DBG313_CODE_QUALNAME, DBG313_CODE_LINETABLE, DBG313_CODE_FIRSTLINENO,
		DBG313_CODE_ADAPTIVE, DBG313_OB_TYPE, DBG313_BYTES_SIZE, DBG313_BYTES_SVAL,
		DBG313_STR_STATE, DBG313_STR_LENGTH, DBG313_STR_ASCII_SIZE,
		DBG313_STR_ASCII_SIZE, DBG313_STR_ASCII_SIZE,
	};

	if (!py_target_read(t, runtime, d, sizeof(d))) {
		errbuf_set(err, errlen, "cannot read _PyRuntime at 0x%llx", (unsigned long long)runtime);
		return -EFAULT;
	}
	if (memcmp(d, "xdebugpy", 8)) {
		errbuf_set(err, errlen, "_PyRuntime does not start with _Py_DebugOffsets");
		return -EPROTO;
	}
	version = u64_at(d, DBG313_VERSION);
	if ((version & 0xffff0000) != (*version_out & 0xffff0000)) {
		errbuf_set(err, errlen, "_Py_DebugOffsets says version 0x%llx, the file 0x%x",
			   (unsigned long long)version, *version_out);
		return -EPROTO;
	}
	if ((version & 0xffff0000) != 0x030d0000) {
		errbuf_set(err, errlen, "Python %u.%u is not supported (the layout of its _Py_DebugOffsets is not known)",
			   (unsigned)(version >> 24 & 0xff), (unsigned)(version >> 16 & 0xff));
		return -ENOTSUP;
	}
	if (u64_at(d, DBG313_FREE_THREADED)) {
		errbuf_set(err, errlen, "free-threaded Python builds are not supported");
		return -ENOTSUP;
	}
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		vals[i] = u64_at(d, pos[i]);
		if (vals[i] > 0xffff) {
			errbuf_set(err, errlen, "_Py_DebugOffsets holds an implausible offset");
			return -EPROTO;
		}
	}
	if (vals[16] != 8) {
		errbuf_set(err, errlen, "_Py_DebugOffsets puts ob_type at %llu", (unsigned long long)vals[16]);
		return -EPROTO;
	}
	t->l = (struct py_layout){
		.version = (uint32_t)version & 0xffff0000,
		.runtime_interp_head = (uint32_t)vals[0], .interp_next = (uint32_t)vals[1],
		.interp_threads_head = (uint32_t)vals[2], .tstate_next = (uint32_t)vals[3],
		.tstate_cframe = PY_OFF_NONE, .cframe_current_frame = (uint32_t)vals[4],
		.tstate_native_tid = (uint32_t)vals[5], .frame_previous = (uint32_t)vals[6],
		.frame_code = (uint32_t)vals[7], .frame_instr = (uint32_t)vals[8],
		.frame_size = (uint32_t)vals[9], .frame_owner = (uint32_t)vals[10],
		.frame_is_entry = PY_OFF_NONE, .owned_by_cstack = 3, /* FRAME_OWNED_BY_CSTACK in 3.13 */
		.code_filename = (uint32_t)vals[11], .code_qualname = (uint32_t)vals[12],
		.code_linetable = (uint32_t)vals[13], .code_firstlineno = (uint32_t)vals[14],
		.code_adaptive = (uint32_t)vals[15], .bytes_size = (uint32_t)vals[17],
		.bytes_sval = (uint32_t)vals[18], .str_state = (uint32_t)vals[19],
		.str_length = (uint32_t)vals[20], .str_ascii_size = (uint32_t)vals[21],
		/* PyCompactUnicodeObject is PyASCIIObject + utf8_length + utf8 since 3.12 */
		.str_utf8_length = (uint32_t)vals[21], .str_utf8 = (uint32_t)vals[21] + 8,
		.str_compact_size = (uint32_t)vals[21] + 16,
	};
	*version_out = (uint32_t)version;
	return 0;
}

static size_t span(size_t cur, uint32_t off, size_t width)
{
	return off == PY_OFF_NONE || off + width <= cur ? cur : off + width;
}

/*
 * Sizes of the headers read, all within PY_HDR_MAX: a hostile layout cannot
 * make reads large. A str's and a bytes object's header must hold ob_type
 * (at 8), which is compared with the type objects: a shorter one (a 3.13
 * runtime's _Py_DebugOffsets can say so) would compare bytes never read.
 */
static int check(struct py_target *t)
{
	const struct py_layout *l = &t->l;

	t->hdr_tstate = span(span(span(0, l->tstate_next, 8), l->tstate_native_tid, 8),
			     l->tstate_cframe == PY_OFF_NONE ? l->cframe_current_frame : l->tstate_cframe, 8);
	t->hdr_frame = span(span(span(span(span(0, l->frame_code, 8), l->frame_previous, 8),
				       l->frame_instr, 8), l->frame_owner, 1), l->frame_is_entry, 1);
	t->hdr_code = span(span(span(span(16, l->code_filename, 8), l->code_qualname, 8),
				l->code_linetable, 8), l->code_firstlineno, 4);
	if (t->hdr_tstate > PY_HDR_MAX || t->hdr_frame > PY_HDR_MAX || t->hdr_code > PY_HDR_MAX ||
	    l->cframe_current_frame > PY_HDR_MAX || l->str_compact_size > PY_STR_HDR_MAX ||
	    l->str_ascii_size < l->str_state + 4 || l->str_ascii_size < l->str_length + 8 ||
	    l->str_compact_size < l->str_utf8 + 8 || l->str_compact_size < l->str_utf8_length + 8 ||
	    l->bytes_sval < l->bytes_size + 8 || l->bytes_sval > PY_STR_HDR_MAX ||
	    l->str_ascii_size < 16 || l->bytes_sval < 16)
		return -EPROTO;
	return 0;
}

int py_layout_init(struct py_target *t, uint64_t runtime, uint32_t *version, char *err, size_t errlen)
{
	unsigned major = *version >> 24 & 0xff, minor = *version >> 16 & 0xff;
	int ret = -ENOTSUP;

	if (major != 3 || minor < 11) {
		errbuf_set(err, errlen, "Python %u.%u is not supported (3.11 to 3.13 are)", major, minor);
		return -ENOTSUP;
	}
	if (minor >= 13) {
		ret = from_debug_offsets(t, runtime, version, err, errlen);
	} else {
		for (size_t i = 0; i < py_layouts_nr; i++) {
			if (py_layouts[i].version == (*version & 0xffff0000)) {
				t->l = py_layouts[i];
				ret = 0;
			}
		}
		if (ret)
			errbuf_set(err, errlen, "Python %u.%u has no built-in layout", major, minor);
	}
	if (!ret && (ret = check(t)))
		errbuf_set(err, errlen, "the layout of Python %u.%u is out of bounds", major, minor);
	return ret;
}
