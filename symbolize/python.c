// SPDX-License-Identifier: MIT
/* Reading the Python stacks of a live process: thread states, interpreter frames, code objects. */
#include "python.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "base/base.h"

#define MAX_INTERPS 256         /* interpreters walked per lookup */
#define MAX_THREADS 16384       /* thread states walked per lookup, all interpreters */
#define HDR_MAX 1024            /* bytes of a thread state, frame or code object read at once */
#define SEEN_SLOTS 8192         /* > 2 * PY_MAX_DEPTH: the open-addressing set stays half empty */

struct thread_entry {
	int32_t tid;
	uint64_t tstate;                /* 0: forgotten */
};

struct py_proc {
	struct py_target t;
	uint32_t version;
	uint64_t runtime;
	size_t hdr_tstate, hdr_frame;
	struct py_codes *codes;
	struct thread_entry *threads;
	size_t threads_nr, threads_alloc;
	struct idx thread_idx;          /* hash of tid -> threads[] */
	/* frames visited by the current walk: slots whose gen differs are empty */
	uint64_t seen[SEEN_SLOTS];
	uint32_t seen_gen[SEEN_SLOTS];
	uint32_t gen;
	uint64_t counts[PY_STACK_NR];
};

int py_read_process(void *arg, const struct py_read *r, size_t n)
{
	size_t done = 0;

	while (done < n) {
		struct iovec local[64], remote[64];
		size_t chunk = n - done < 64 ? n - done : 64;
		ssize_t got;

		for (size_t i = 0; i < chunk; i++) {
			local[i] = (struct iovec){ r[done + i].buf, r[done + i].len };
			remote[i] = (struct iovec){ (void *)(uintptr_t)r[done + i].addr, r[done + i].len };
		}
		got = process_vm_readv((pid_t)(intptr_t)arg, local, chunk, remote, chunk, 0);
		if (got < 0)
			return done ? (int)done : -errno;
		/* a partial transfer stops in or before the first range that failed */
		for (size_t i = 0; i < chunk; i++) {
			if ((size_t)got < r[done].len)
				return (int)done;
			got -= (ssize_t)r[done].len;
			done++;
		}
	}
	return (int)done;
}

bool py_target_read(const struct py_target *t, uint64_t addr, void *buf, size_t len)
{
	struct py_read r = { addr, buf, len };

	return addr && addr < PY_USER_END && addr + len >= addr && t->read(t->read_arg, &r, 1) == 1;
}

static bool rd(const struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	return py_target_read(&p->t, addr, buf, len);
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* ---- the layout ---- */

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

static int layout_from_debug_offsets(struct py_proc *p, char *err, size_t errlen)
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

	if (!rd(p, p->runtime, d, sizeof(d))) {
		errbuf_set(err, errlen, "cannot read _PyRuntime at 0x%llx", (unsigned long long)p->runtime);
		return -EFAULT;
	}
	if (memcmp(d, "xdebugpy", 8)) {
		errbuf_set(err, errlen, "_PyRuntime does not start with _Py_DebugOffsets");
		return -EPROTO;
	}
	version = u64_at(d, DBG313_VERSION);
	if ((version & 0xffff0000) != (p->version & 0xffff0000)) {
		errbuf_set(err, errlen, "_Py_DebugOffsets says version 0x%llx, the file 0x%x",
			   (unsigned long long)version, p->version);
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
	p->t.l = (struct py_layout){
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
	p->version = (uint32_t)version;
	return 0;
}

static size_t span(size_t cur, uint32_t off, size_t width)
{
	return off == PY_OFF_NONE || off + width <= cur ? cur : off + width;
}

/* Sizes of the headers read, all within HDR_MAX: a hostile layout cannot make reads large. */
static int layout_check(struct py_proc *p)
{
	const struct py_layout *l = &p->t.l;

	p->hdr_tstate = span(span(span(0, l->tstate_next, 8), l->tstate_native_tid, 8),
			     l->tstate_cframe == PY_OFF_NONE ? l->cframe_current_frame : l->tstate_cframe, 8);
	p->hdr_frame = span(span(span(span(span(0, l->frame_code, 8), l->frame_previous, 8),
				       l->frame_instr, 8), l->frame_owner, 1), l->frame_is_entry, 1);
	p->t.hdr_code = span(span(span(span(16, l->code_filename, 8), l->code_qualname, 8),
				l->code_linetable, 8), l->code_firstlineno, 4);
	if (p->hdr_tstate > HDR_MAX || p->hdr_frame > HDR_MAX || p->t.hdr_code > HDR_MAX ||
	    l->cframe_current_frame > HDR_MAX || l->str_compact_size > PY_STR_HDR_MAX ||
	    l->str_ascii_size < l->str_state + 4 || l->str_ascii_size < l->str_length + 8 ||
	    l->str_compact_size < l->str_utf8 + 8 || l->str_compact_size < l->str_utf8_length + 8 ||
	    l->bytes_sval < l->bytes_size + 8 || l->bytes_sval > PY_STR_HDR_MAX)
		return -EPROTO;
	return 0;
}

void py_proc_opts_from_probe(struct py_proc_opts *o, const struct py_probe *pr, uint64_t bias)
{
	o->version = pr->version;
	o->runtime = pr->runtime.addr + bias;
	o->code_type = pr->code_type.addr ? pr->code_type.addr + bias : 0;
	o->unicode_type = pr->unicode_type.addr ? pr->unicode_type.addr + bias : 0;
	o->bytes_type = pr->bytes_type.addr ? pr->bytes_type.addr + bias : 0;
}

struct py_proc *py_proc_new(const struct py_proc_opts *o, char *err, size_t errlen)
{
	unsigned major = o->version >> 24 & 0xff, minor = o->version >> 16 & 0xff;
	struct py_proc *p;
	int ret = -ENOTSUP;

	if (major != 3 || minor < 11) {
		errbuf_set(err, errlen, "Python %u.%u is not supported (3.11 to 3.13 are)", major, minor);
		errno = ENOTSUP;
		return NULL;
	}
	p = xcalloc(1, sizeof(*p));
	p->version = o->version;
	p->runtime = o->runtime;
	p->t.code_type = o->code_type;
	p->t.unicode_type = o->unicode_type;
	p->t.bytes_type = o->bytes_type;
	p->t.read = o->read ? o->read : py_read_process;
	p->t.read_arg = o->read ? o->read_arg : (void *)(intptr_t)o->pid;
	p->codes = py_codes_new();
	if (minor >= 13) {
		ret = layout_from_debug_offsets(p, err, errlen);
	} else {
		for (size_t i = 0; i < py_layouts_nr; i++) {
			if (py_layouts[i].version == (o->version & 0xffff0000)) {
				p->t.l = py_layouts[i];
				ret = 0;
			}
		}
		if (ret)
			errbuf_set(err, errlen, "Python %u.%u has no built-in layout", major, minor);
	}
	if (!ret && (ret = layout_check(p)))
		errbuf_set(err, errlen, "the layout of Python %u.%u is out of bounds", major, minor);
	if (ret) {
		py_proc_free(p);
		errno = -ret;
		return NULL;
	}
	return p;
}

void py_proc_free(struct py_proc *p)
{
	if (!p)
		return;
	py_codes_free(p->codes);
	free(p->threads);
	idx_release(&p->thread_idx);
	free(p);
}

uint32_t py_proc_version(const struct py_proc *p)
{
	return p->version;
}

void py_proc_counts(const struct py_proc *p, uint64_t counts[PY_STACK_NR])
{
	memcpy(counts, p->counts, sizeof(p->counts));
}

const char *py_status_name(enum py_status s)
{
	static const char *const names[PY_STACK_NR] = {
		"complete", "no thread state", "torn", "unreadable", "too deep", "unsupported",
	};

	return (unsigned)s < PY_STACK_NR ? names[s] : "?";
}

/* ---- thread states ---- */

/* Floyd's tortoise without the hare: Brent's cycle detection in O(1) memory. */
struct brent {
	uint64_t tortoise;
	size_t power, lam;
};

static bool brent_loops(struct brent *b, uint64_t x)
{
	if (x == b->tortoise)
		return true;
	if (++b->lam == b->power) {
		b->tortoise = x;
		b->power *= 2;
		b->lam = 0;
	}
	return false;
}

static struct thread_entry *thread_cached(struct py_proc *p, int32_t tid)
{
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&p->thread_idx, hash_u64((uint64_t)tid), &pos)) != IDX_NONE)
		if (p->threads[id].tid == tid)
			return &p->threads[id];
	return NULL;
}

static void thread_remember(struct py_proc *p, int32_t tid, uint64_t tstate)
{
	struct thread_entry *t = thread_cached(p, tid);

	if (!t) {
		ALLOC_GROW(p->threads, p->threads_nr + 1, p->threads_alloc);
		idx_insert(&p->thread_idx, hash_u64((uint64_t)tid), (uint32_t)p->threads_nr);
		t = &p->threads[p->threads_nr++];
		t->tid = tid;
	}
	t->tstate = tstate;
}

static bool tstate_is(struct py_proc *p, uint64_t ts, int32_t tid, uint8_t *hdr)
{
	return rd(p, ts, hdr, p->hdr_tstate) && u64_at(hdr, p->t.l.tstate_native_tid) == (uint64_t)(uint32_t)tid;
}

/* Finds the thread state of TID, its header into HDR; the last one found is tried first. */
static enum py_status find_tstate(struct py_proc *p, int32_t tid, uint8_t *hdr, uint64_t *tstate)
{
	struct thread_entry *t = thread_cached(p, tid);
	struct brent bi = { 0, 1, 0 };
	uint64_t interp;
	size_t walked = 0;
	enum py_status st = PY_STACK_NO_THREAD;

	if (t && t->tstate && tstate_is(p, t->tstate, tid, hdr)) {
		*tstate = t->tstate;
		return PY_STACK_COMPLETE;
	}
	if (!rd(p, p->runtime + p->t.l.runtime_interp_head, &interp, 8))
		return PY_STACK_UNREADABLE;
	for (size_t i = 0; interp; i++) {
		struct brent bt = { 0, 1, 0 };
		uint64_t ts;

		if (i == MAX_INTERPS || !py_ptr_ok(interp) || brent_loops(&bi, interp))
			return PY_STACK_TORN;
		if (!rd(p, interp + p->t.l.interp_threads_head, &ts, 8) ||
		    !rd(p, interp + p->t.l.interp_next, &interp, 8))
			return PY_STACK_UNREADABLE;
		for (; ts; ts = u64_at(hdr, p->t.l.tstate_next)) {
			if (++walked > MAX_THREADS || !py_ptr_ok(ts) || brent_loops(&bt, ts))
				return PY_STACK_TORN;
			if (!rd(p, ts, hdr, p->hdr_tstate)) {
				/* a thread state being freed: keep looking, say so if TID is not found */
				st = PY_STACK_UNREADABLE;
				break;
			}
			if (u64_at(hdr, p->t.l.tstate_native_tid) == (uint64_t)(uint32_t)tid) {
				thread_remember(p, tid, ts);
				*tstate = ts;
				return PY_STACK_COMPLETE;
			}
		}
	}
	if (t)
		t->tstate = 0;
	return st;
}

/* ---- frames ---- */

/* Adds frame address A to the walk's set; false when it was there already (a loop). */
static bool seen_add(struct py_proc *p, uint64_t a)
{
	size_t i = hash_u64(a) & (SEEN_SLOTS - 1);

	while (p->seen_gen[i] == p->gen) {
		if (p->seen[i] == a)
			return false;
		i = (i + 1) & (SEEN_SLOTS - 1);
	}
	p->seen_gen[i] = p->gen;
	p->seen[i] = a;
	return true;
}

static void seen_reset(struct py_proc *p)
{
	if (++p->gen == 0) {
		memset(p->seen_gen, 0, sizeof(p->seen_gen));
		p->gen = 1;
	}
}

/* The thread's innermost frame (3.11/3.12 through its _PyCFrame), 0 when it runs none. */
static enum py_status current_frame(struct py_proc *p, const uint8_t *ts, uint64_t *frame)
{
	const struct py_layout *l = &p->t.l;
	uint64_t cframe;

	if (l->tstate_cframe == PY_OFF_NONE) {
		*frame = u64_at(ts, l->cframe_current_frame);
		return PY_STACK_COMPLETE;
	}
	cframe = u64_at(ts, l->tstate_cframe);
	if (!py_ptr_ok(cframe))
		return PY_STACK_TORN;
	return rd(p, cframe + l->cframe_current_frame, frame, 8) ? PY_STACK_COMPLETE : PY_STACK_UNREADABLE;
}

/*
 * The line of the instruction pointer at byte OFF from the code's first
 * instruction. 3.11 and 3.12 point at the code unit before the next
 * instruction, so a frame not started yet sits at -2 (its first line);
 * anything else before the code or odd is garbage (no line).
 */
static uint32_t line_of(struct py_code *c, uint64_t off)
{
	int64_t o = (int64_t)off;

	if (o < -2 || (o & 1))
		return 0;
	return py_code_line(c, o);
}

/*
 * Walks the chain from FRAME (whose header is in BUF[0]). Each step reads
 * the code object of this frame and the header of the previous frame in
 * one call of the reader: one system call per frame once the code objects
 * are cached.
 */
static size_t walk(struct py_proc *p, uint64_t frame, uint8_t (*buf)[HDR_MAX], struct py_frame *out,
		   size_t max, enum py_status *status)
{
	const struct py_layout *l = &p->t.l;
	uint8_t code_hdr[HDR_MAX];
	uint8_t max_owner = l->owned_by_cstack != PY_OWNER_NONE ? (uint8_t)l->owned_by_cstack : 2;
	size_t n = 0, run = 0, cur = 0;
	bool empty_above = false;

	seen_reset(p);
	for (size_t depth = 0;; depth++) {
		const uint8_t *f = buf[cur];
		uint64_t code = u64_at(f, l->frame_code), prev = u64_at(f, l->frame_previous);
		uint8_t owner = f[l->frame_owner];
		struct py_read r[2] = {
			{ code, code_hdr, p->t.hdr_code },
			{ prev, buf[!cur], p->hdr_frame },
		};
		size_t want = prev ? 2 : 1;
		struct py_code *c;
		int got;

		if (depth == PY_MAX_DEPTH) {
			*status = PY_STACK_TOO_DEEP;
			return n;
		}
		if (!seen_add(p, frame) || owner > max_owner || (prev && !py_ptr_ok(prev))) {
			*status = PY_STACK_TORN;
			return n;
		}
		if (owner == l->owned_by_cstack) {
			/* a shim: the frame above it was the first of its eval loop */
			if (run)
				out[n - 1].flags |= PY_FRAME_ENTRY;
			else if (n == 0 && !empty_above)
				empty_above = true;
			else
				goto torn;      /* two shims in a row never happen */
			run = 0;
			got = prev && p->t.read(p->t.read_arg, &r[1], 1) == 1 ? 2 : 1;
		} else {
			if (!py_ptr_ok(code))
				goto torn;
			got = p->t.read(p->t.read_arg, r, want);
			if (got < 1) {
				*status = PY_STACK_UNREADABLE;
				return n;
			}
			if ((*status = py_code_get(p->codes, &p->t, code, code_hdr, &c)) != PY_STACK_COMPLETE)
				return n;
			if (n == max) {
				*status = PY_STACK_TOO_DEEP;
				return n;
			}
			out[n] = (struct py_frame){
				.qualname = c->qualname,
				.filename = c->filename,
				.firstlineno = (uint32_t)c->firstlineno,
				.line = line_of(c, u64_at(f, l->frame_instr) - (code + l->code_adaptive)),
				.code = code,
			};
			if (n == 0 && empty_above)
				out[n].flags |= PY_FRAME_EMPTY_RUN_ABOVE;
			if (owner == 1)         /* FRAME_OWNED_BY_GENERATOR in 3.11-3.13 */
				out[n].flags |= PY_FRAME_GENERATOR;
			if (l->frame_is_entry != PY_OFF_NONE && f[l->frame_is_entry]) {
				out[n].flags |= PY_FRAME_ENTRY;
				run = 0;
			} else {
				run++;
			}
			n++;
		}
		if (!prev) {
			*status = PY_STACK_COMPLETE;
			return n;
		}
		if (got < 2) {
			*status = PY_STACK_UNREADABLE;
			return n;
		}
		frame = prev;
		cur = !cur;
	}
torn:
	*status = PY_STACK_TORN;
	return n;
}

size_t py_read_stack(struct py_proc *p, int32_t tid, struct py_frame *out, size_t max,
		     enum py_status *status)
{
	uint8_t ts[HDR_MAX], buf[2][HDR_MAX];
	uint64_t tstate, frame = 0;
	size_t n = 0;

	if (!p) {
		*status = PY_STACK_UNSUPPORTED;
		return 0;
	}
	*status = find_tstate(p, tid, ts, &tstate);
	if (*status == PY_STACK_COMPLETE)
		*status = current_frame(p, ts, &frame);
	if (*status == PY_STACK_COMPLETE && frame) {
		if (!py_ptr_ok(frame))
			*status = PY_STACK_TORN;
		else if (!rd(p, frame, buf[0], p->hdr_frame))
			*status = PY_STACK_UNREADABLE;
		else
			n = walk(p, frame, buf, out, max, status);
	}
	p->counts[*status]++;
	return n;
}
