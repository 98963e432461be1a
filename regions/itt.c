// SPDX-License-Identifier: MIT
/*
 * The ITT collector: libproftool-rt.so as the library INTEL_LIBITTNOTIFY64
 * names, so that code instrumented with Intel's ITT API (oneDNN's
 * primitives, PyTorch's emit_itt, MXNet) writes its tasks, frames and
 * markers as regions (through rt.c) without a change to the program.
 *
 * How the ABI works (written from intel/ittapi's ittnotify_static.c and
 * oneDNN 2.6's copy of it; no ITT code is used here): every library built
 * with ITT carries a "static part", a table of function pointers (struct
 * itt_api_info) that at first point to stubs. The first call of that
 * library's other than making a domain or a string handle reads
 * INTEL_LIBITTNOTIFY64, dlopens it and, as the library exports
 * __itt_api_init ("version 2"), calls it with the static part's struct
 * itt_global, under that global's mutex, and then sets its
 * api_initialized. __itt_api_init fills the pointers itself: each entry
 * names a function ("__itt_task_begin"); we point the ones we implement at
 * ours and every other one at its null_func, as the static part itself
 * does when no collector is found (NULL, which the ITT macros skip, or for
 * the few functions with a static implementation, that implementation). Each
 * library with a static part calls it once with its own global. When the
 * program is not recorded (PROFTOOL_REGIONS unset) every pointer gets its
 * null_func: ITT stays as cheap as without a collector.
 *
 * Domains and string handles a library made before that first call (oneDNN
 * makes its domain and all its task names first) are the static part's own
 * structs, with the same layout as ours: we read their names from them.
 * Old static parts made domains disabled (flags 0), so their list is
 * enabled here (the ITT macros skip a disabled domain's calls: a library
 * whose only calls go to one never loads us at all). Afterwards the library
 * asks our domain_create and string_handle_create: the static part's own
 * ones hand out a disabled dummy domain and NULL handles once a collector is
 * loaded. PyTorch asks for a string handle at every push, so handles are
 * found by a hash lookup that takes no lock.
 *
 * ITT's task_end names no task: each thread keeps the stack of what it
 * opened (task, overlapped task, region, frame) with names, so that the END
 * carries the right one. The stack is bounded (ITT_DEPTH); what does not fit
 * is counted dropped in the file's header, never blocks and is never
 * allocated per event. A stack is allocated at the thread's first begin and
 * freed when the thread exits.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regions/format.h"
#include "regions/rt.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the ABI, as the static part lays it out (#pragma pack(8): natural alignment on 64-bit) ---- */

static const unsigned char itt_magic[8] = { 0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30 };

struct itt_id {
	unsigned long long d1, d2, d3;
};

struct itt_domain {
	volatile int flags;             /* 0: disabled, the ITT macros call nothing */
	const char *nameA;
	void *nameW;                    /* Windows only */
	int extra1;
	void *extra2;
	struct itt_domain *next;
};

struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
};

struct itt_api_info {
	const char *name;               /* "__itt_task_begin" */
	void **func_ptr;                /* the static part's pointer that its macros call */
	void *init_func;                /* the stub it starts as */
	void *null_func;                /* what to leave there without a collector (may be NULL) */
	int group;                      /* __itt_group_id */
};

/* The global's beginning: every version since 2010 starts so; later fields differ. */
struct itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct itt_api_info *api_list_ptr;
	struct itt_global *next;
	void *thread_list;
	struct itt_domain *domain_list;
	struct itt_string_handle *string_list;
};

/* __itt_collection_scope: pause_scoped/resume_scoped of this scope stop the CPU side */
#define ITT_SCOPE_HOST 1

/* ---- our state ---- */

static pthread_mutex_t itt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t itt_once = PTHREAD_ONCE_INIT;
static pthread_key_t itt_key;
static bool itt_key_ok;
static uint64_t itt_gen = 1;            /* bumped in a fork's child */

static const struct itt_id no_id;

/* ---- domains: few, made once each; a list under the lock ---- */

static struct itt_domain *domains;

static struct itt_domain *domain_create(const char *name)
{
	struct itt_domain *d;

	if (!name)
		return NULL;
	pthread_mutex_lock(&itt_lock);
	for (d = domains; d; d = d->next)
		if (!strcmp(d->nameA, name))
			break;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		d->nameA = strdup(name);
		if (!d->nameA) {
			free(d);
			d = NULL;
		} else {
			d->flags = 1;
			d->next = domains;
			domains = d;
		}
	}
	pthread_mutex_unlock(&itt_lock);
	return d;
}

static const char *domain_name(const struct itt_domain *d)
{
	return d && d->nameA ? d->nameA : "";
}

static bool same_domain(const struct itt_domain *a, const struct itt_domain *b)
{
	return a == b || !strcmp(domain_name(a), domain_name(b));
}

/* ---- string handles: read without the lock, added under it, never freed ---- */

struct handle {
	struct itt_string_handle h;     /* first: what callers get */
	uint64_t hash;
};

#define HANDLE_SLOTS 16384              /* past 3/4 of it, new handles go on a list */

static struct handle *handles[HANDLE_SLOTS];
static unsigned nr_handles;
static struct handle *more_handles;     /* the list, under the lock; linked through h.next */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* The handle of NAME in the table, or NULL; and in *SLOT the empty slot that ended the search. */
static struct handle *find_handle(const char *name, uint64_t hash, unsigned *slot)
{
	for (unsigned i = (unsigned)hash & (HANDLE_SLOTS - 1);; i = (i + 1) & (HANDLE_SLOTS - 1)) {
		struct handle *e = __atomic_load_n(&handles[i], __ATOMIC_ACQUIRE);

		if (!e) {
			*slot = i;
			return NULL;
		}
		if (e->hash == hash && !strcmp(e->h.strA, name))
			return e;
	}
}

static struct itt_string_handle *string_handle_create(const char *name)
{
	uint64_t hash;
	unsigned slot;
	struct handle *e;

	if (!name)
		return NULL;
	hash = hash_str(name);
	/* the table is never full (3/4 at most), so the search ends */
	e = find_handle(name, hash, &slot);
	if (e)
		return &e->h;
	pthread_mutex_lock(&itt_lock);
	e = find_handle(name, hash, &slot);
	for (struct handle *x = more_handles; !e && x; x = (struct handle *)x->h.next)
		if (x->hash == hash && !strcmp(x->h.strA, name))
			e = x;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		e->h.strA = strdup(name);
		e->hash = hash;
		if (!e->h.strA) {
			free(e);
			e = NULL;
		} else if (nr_handles < HANDLE_SLOTS / 4 * 3) {
			nr_handles++;
			__atomic_store_n(&handles[slot], e, __ATOMIC_RELEASE);
		} else {
			e->h.next = &more_handles->h;
			more_handles = e;
		}
	}
	pthread_mutex_unlock(&itt_lock);
	return e ? &e->h : NULL;
}

static const char *handle_text(const struct itt_string_handle *h)
{
	return h && h->strA ? h->strA : "unnamed";
}

/* ---- names for task_begin_fn: the function's symbol, else module+offset ---- */

struct fn_name {
	const void *fn;
	char name[];
};

#define FN_SLOTS 4096                   /* past 3/4 of it, all further functions share one name */

static struct fn_name *fn_names[FN_SLOTS];
static unsigned nr_fn_names;

static struct fn_name *new_fn_name(const void *fn)
{
	char buf[512];
	Dl_info info;
	struct fn_name *e;
	size_t len;

	if (!dladdr(fn, &info))
		memset(&info, 0, sizeof(info));
	if (info.dli_sname && info.dli_saddr == fn) {
		snprintf(buf, sizeof(buf), "%s", info.dli_sname);
	} else if (info.dli_fname && info.dli_fbase) {
		/* not a dynamic symbol (a static function): where it is, as perf names unknown code */
		const char *base = strrchr(info.dli_fname, '/');

		snprintf(buf, sizeof(buf), "%s+0x%lx", base ? base + 1 : info.dli_fname,
			 (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_fbase));
	} else {
		snprintf(buf, sizeof(buf), "0x%lx", (unsigned long)(uintptr_t)fn);
	}
	len = strlen(buf);
	e = malloc(sizeof(*e) + len + 1);
	if (e) {
		e->fn = fn;
		memcpy(e->name, buf, len + 1);
	}
	return e;
}

static const char *fn_text(const void *fn)
{
	unsigned slot = (unsigned)(((uintptr_t)fn * 0x9e3779b97f4a7c15ull) >> 52) & (FN_SLOTS - 1);
	struct fn_name *e;
	const char *name = "task_fn";

	for (unsigned i = slot;; i = (i + 1) & (FN_SLOTS - 1)) {
		e = __atomic_load_n(&fn_names[i], __ATOMIC_ACQUIRE);
		if (!e)
			break;
		if (e->fn == fn)
			return e->name;
	}
	pthread_mutex_lock(&itt_lock);
	for (unsigned i = slot;; i = (i + 1) & (FN_SLOTS - 1)) {
		e = fn_names[i];
		if (e && e->fn == fn) {
			name = e->name;
			break;
		}
		if (!e) {
			if (nr_fn_names < FN_SLOTS / 4 * 3 && (e = new_fn_name(fn))) {
				nr_fn_names++;
				__atomic_store_n(&fn_names[i], e, __ATOMIC_RELEASE);
				name = e->name;
			}
			break;
		}
	}
	pthread_mutex_unlock(&itt_lock);
	return name;
}

/* ---- what each thread has open ---- */

enum open_kind { OPEN_TASK, OPEN_OVERLAPPED, OPEN_REGION, OPEN_FRAME };

struct open_region {
	const struct itt_domain *domain;
	const char *name;               /* as given to rt_event: handles and names are never freed */
	struct itt_id id;               /* overlapped tasks, regions, frames: the id it was begun with */
	uint8_t kind;                   /* enum open_kind */
	bool inherited;                 /* begun before a fork, in the parent's file: ends silently */
};

#define ITT_DEPTH 128

struct itt_thread {
	uint64_t gen;                   /* itt_gen when last seen: older, the entries are the parent's */
	unsigned depth;                 /* entries in open[], innermost last */
	unsigned overflow;              /* tasks begun past ITT_DEPTH, not written, not yet ended */
	unsigned inherited_overflow;    /* how many of those were begun before a fork */
	struct open_region open[ITT_DEPTH];
};

/* Initial-exec (no lookup per access): one pointer, the static TLS a dlopened library may use is small. */
static __thread struct itt_thread *itt_self __attribute__((tls_model("initial-exec")));

static void free_thread(void *p)
{
	free(p);
	itt_self = NULL;
}

/* The thread's stack; with ALLOC, made when it has none (NULL if that fails). */
static struct itt_thread *self(bool alloc)
{
	struct itt_thread *t = itt_self;

	if (!t && alloc) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->gen = itt_gen;
		if (itt_key_ok)
			pthread_setspecific(itt_key, t);
		itt_self = t;
	}
	if (t && t->gen != itt_gen) {
		/* in the child of a fork: what is open was begun in the parent's file */
		for (unsigned i = 0; i < t->depth; i++)
			t->open[i].inherited = true;
		t->inherited_overflow = t->overflow;
		t->gen = itt_gen;
	}
	return t;
}

static void begin(const struct itt_domain *d, const char *name, enum open_kind kind, const struct itt_id *id)
{
	struct itt_thread *t = self(true);
	struct open_region *e;

	/* a task begun over overflowed ones must overflow too: task_end ends the innermost first */
	if (!t || t->depth == ITT_DEPTH || (kind == OPEN_TASK && t->overflow)) {
		if (t && kind == OPEN_TASK)
			t->overflow++;
		rt_event(domain_name(d), NULL, RGN_BEGIN);     /* counted dropped */
		return;
	}
	e = &t->open[t->depth++];
	e->domain = d;
	e->name = name;
	e->id = *id;
	e->kind = (uint8_t)kind;
	e->inherited = false;
	rt_event(domain_name(d), name, RGN_BEGIN);
}

static void end_at(struct itt_thread *t, unsigned i)
{
	struct open_region e = t->open[i];

	memmove(&t->open[i], &t->open[i + 1], (t->depth - i - 1) * sizeof(t->open[0]));
	t->depth--;
	if (!e.inherited)
		rt_event(domain_name(e.domain), e.name, RGN_END);
}

static bool same_id(const struct itt_id *a, const struct itt_id *b)
{
	return a->d1 == b->d1 && a->d2 == b->d2 && a->d3 == b->d3;
}

/* The innermost open entry of KIND in D (with ID, unless ID is NULL), or -1. */
static int find_open(const struct itt_thread *t, const struct itt_domain *d, enum open_kind kind,
		     const struct itt_id *id)
{
	for (unsigned i = t->depth; i-- > 0;) {
		const struct open_region *e = &t->open[i];

		if (e->kind == kind && same_domain(e->domain, d) && (!id || same_id(&e->id, id)))
			return (int)i;
	}
	return -1;
}

/* Ends the innermost open entry of KIND in D (with ID unless NULL); one not open is ignored. */
static void end(const struct itt_domain *d, enum open_kind kind, const struct itt_id *id)
{
	struct itt_thread *t = self(false);
	int i;

	if (!t)
		return;
	if (kind == OPEN_TASK && t->overflow) {
		/* overflowed tasks are the innermost; those begun before a fork were counted in the parent */
		if (t->overflow-- > t->inherited_overflow)
			rt_event(domain_name(d), NULL, RGN_END);
		else
			t->inherited_overflow--;
		return;
	}
	i = find_open(t, d, kind, id);
	if (i >= 0)
		end_at(t, (unsigned)i);
}

/* ---- the functions handed to the static parts ---- */

static void task_begin(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
		       const struct itt_string_handle *name)
{
	(void)id;
	(void)parent;
	begin(d, handle_text(name), OPEN_TASK, &no_id);
}

static void task_begin_fn(const struct itt_domain *d, struct itt_id id, struct itt_id parent, void *fn)
{
	(void)id;
	(void)parent;
	begin(d, fn_text(fn), OPEN_TASK, &no_id);
}

static void task_end(const struct itt_domain *d)
{
	end(d, OPEN_TASK, NULL);
}

static void task_begin_overlapped(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
				  const struct itt_string_handle *name)
{
	(void)parent;
	begin(d, handle_text(name), OPEN_OVERLAPPED, &id);
}

static void task_end_overlapped(const struct itt_domain *d, struct itt_id id)
{
	end(d, OPEN_OVERLAPPED, &id);
}

static void region_begin(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
			 const struct itt_string_handle *name)
{
	(void)parent;
	begin(d, handle_text(name), OPEN_REGION, &id);
}

static void region_end(const struct itt_domain *d, struct itt_id id)
{
	end(d, OPEN_REGION, &id);
}

/* A frame is a region "frame" in its domain; ITT ignores a second begin of an open frame's id. */
static void frame_begin_v3(const struct itt_domain *d, const struct itt_id *id)
{
	struct itt_thread *t = self(false);
	const struct itt_id *key = id ? id : &no_id;

	if (t && find_open(t, d, OPEN_FRAME, key) >= 0)
		return;
	begin(d, "frame", OPEN_FRAME, key);
}

/* ID NULL: the current (innermost) frame of the domain. */
static void frame_end_v3(const struct itt_domain *d, const struct itt_id *id)
{
	end(d, OPEN_FRAME, id);
}

static void marker(const struct itt_domain *d, struct itt_id id, const struct itt_string_handle *name, int scope)
{
	(void)id;
	(void)scope;
	rt_event(domain_name(d), handle_text(name), RGN_MARK);
}

static void itt_pause(void)
{
	rt_event("", "", RGN_PAUSE);
}

static void itt_resume(void)
{
	rt_event("", "", RGN_RESUME);
}

static void pause_scoped(int scope)
{
	if (scope & ITT_SCOPE_HOST)
		itt_pause();
}

static void resume_scoped(int scope)
{
	if (scope & ITT_SCOPE_HOST)
		itt_resume();
}

/*
 * Everything else (thread names: rt.c takes the kernel's; counters,
 * metadata, ids, sync objects, heap, *_ex with foreign clocks, frame_submit
 * with past timestamps) gets its null_func.
 */
static const struct {
	const char *name;
	void *fn;
} ours[] = {
	{ "__itt_domain_create", (void *)domain_create },
	{ "__itt_string_handle_create", (void *)string_handle_create },
	{ "__itt_task_begin", (void *)task_begin },
	{ "__itt_task_begin_fn", (void *)task_begin_fn },
	{ "__itt_task_end", (void *)task_end },
	{ "__itt_task_begin_overlapped", (void *)task_begin_overlapped },
	{ "__itt_task_end_overlapped", (void *)task_end_overlapped },
	{ "__itt_region_begin", (void *)region_begin },
	{ "__itt_region_end", (void *)region_end },
	{ "__itt_frame_begin_v3", (void *)frame_begin_v3 },
	{ "__itt_frame_end_v3", (void *)frame_end_v3 },
	{ "__itt_marker", (void *)marker },
	{ "__itt_pause", (void *)itt_pause },
	{ "__itt_resume", (void *)itt_resume },
	{ "__itt_pause_scoped", (void *)pause_scoped },
	{ "__itt_resume_scoped", (void *)resume_scoped },
};

static void *our_function(const char *name)
{
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (!strcmp(ours[i].name, name))
			return ours[i].fn;
	return NULL;
}

/* In the child of a fork: the lock may have been held by a thread that is gone. */
static void after_fork_child(void)
{
	pthread_mutex_init(&itt_lock, NULL);
	itt_gen++;
}

static void init_once(void)
{
	itt_key_ok = pthread_key_create(&itt_key, free_thread) == 0;
	pthread_atfork(NULL, NULL, after_fork_child);
}

EXPORT void __itt_api_init(struct itt_global *g, int init_groups);

/*
 * INIT_GROUPS is ignored, as by ittapi's reference collector: the stubs
 * always pass all groups, and the pointers not filled would stay disabled
 * for good. Called under G's mutex (a recursive one), so G's lists hold
 * still.
 */
void __itt_api_init(struct itt_global *g, int init_groups)
{
	const char *dir = getenv("PROFTOOL_REGIONS");
	bool on = dir && *dir;

	(void)init_groups;
	if (!g || memcmp(g->magic, itt_magic, sizeof(itt_magic)) || !g->api_list_ptr)
		return;
	pthread_once(&itt_once, init_once);
	for (struct itt_api_info *a = g->api_list_ptr; a->name; a++) {
		void *fn = on ? our_function(a->name) : NULL;

		/* not recorded: ITT as without a collector, each call a test of a pointer */
		__atomic_store_n(a->func_ptr, fn ? fn : a->null_func, __ATOMIC_RELAXED);
	}
	if (on)
		for (struct itt_domain *d = g->domain_list; d; d = d->next)
			d->flags = 1;
}
