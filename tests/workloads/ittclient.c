// SPDX-License-Identifier: MIT
/*
 * A program instrumented with Intel's ITT API, without any ITT code: it plays
 * the part of ittnotify's "static part" the way ITT-instrumented libraries
 * carry it (oneDNN 2.6's copy, itself ittapi 3.22), from our reading of the
 * ABI: a global with an api list of {name, pointer, init stub, null_func,
 * group}, stubs that load the library INTEL_LIBITTNOTIFY64 names at the first
 * call and hand the global to its __itt_api_init, and macros that test the
 * domain's flags and the pointer before each call. Deliberately written apart
 * from regions/itt.c (no shared header): a layout mistake there shows here.
 *
 *   ittclient run     the collector must be recording (PROFTOOL_REGIONS set):
 *                     checks what it filled in, then makes the calls below on the
 *                     main thread and on a thread "itt-worker", and in a forked
 *                     child; prints "main TID", "worker TID", "child PID"
 *   ittclient off     INTEL_LIBITTNOTIFY64 set, PROFTOOL_REGIONS unset: the
 *                     collector must leave every pointer at its null_func
 *   ittclient bench N N task begin/end pairs "pair" in one domain through the
 *                     macros, then N more "push", each after asking for its
 *                     string handle by text (as PyTorch does); prints "ns_per_pair X"
 *                     and "ns_per_push X" (with or without a collector)
 *
 * What "run" writes, per thread (main and itt-worker), ROUNDS = 100:
 *   ittclient::main/outer   100 begin, 100 end
 *   ittclient::main/inner   410 (3 per round nested in outer, 1 per round
 *                           interleaved with ittclient::other/step, 10 in frames)
 *   ittclient::other/step   100 (ended by task_end(other) while main/inner is innermost)
 *   ittclient::main/tick    100 marks
 *   ittclient::main/frame   10 (frames without an id); ittclient::other/frame 1
 *                           (begun twice and ended twice with one id: ITT ignores the second)
 *   ittclient::main/ov_a, ov_b  1 each (overlapped, ended out of order)
 *   ittclient::main/reg     1 (region_begin/region_end)
 *   ittclient::main/qsort   1 (task_begin_fn with libc's qsort: its symbol)
 *   ittclient::main/ittclient+0x...  1 (task_begin_fn with a static function)
 * main thread only:
 *   ittclient::early/early  1 (domain made before the collector was loaded,
 *                           disabled as 2011-era static parts made them)
 *   ittclient::main/deep    128 of 200 nested tasks (the collector's depth); the
 *                           other 72 begins and their 72 ends counted dropped (144)
 *   ittclient::main/forked  1 (begun before the fork, ended after it)
 *   pause 2, resume 2       (__itt_pause/__itt_resume, and the _scoped pair for the
 *                           host; the pair scoped to offload only is ignored)
 *   a task_end with no task open, ignored
 * the forked child (a file of its own): ittclient::main/child 1, and the END of
 * "forked" (begun in the parent) not written.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 100
#define FRAMES 10
#define DEEP 200

/* ---- the ABI as the static part (oneDNN 2.6, ittapi 3.22) declares it ---- */

struct itt_id {
	unsigned long long d1, d2, d3;
};

struct itt_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
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
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
};

struct itt_global {
	unsigned char magic[8];
	unsigned long version_major;
	unsigned long version_minor;
	unsigned long version_build;
	volatile long api_initialized;
	volatile long mutex_initialized;
	volatile long atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct itt_api_info *api_list_ptr;
	struct itt_global *next;
	void *thread_list;
	struct itt_domain *domain_list;
	struct itt_string_handle *string_list;
	int state;
	void *counter_list;
	unsigned int ipt_collect_events;
	void *histogram_list;
};

enum {
	GROUP_LEGACY = 1 << 0, GROUP_CONTROL = 1 << 1, GROUP_THREAD = 1 << 2, GROUP_SYNC = 1 << 4,
	GROUP_COUNTER = 1 << 8, GROUP_STRUCTURE = 1 << 12, GROUP_ALL = -1,
};

enum { SCOPE_HOST = 1, SCOPE_OFFLOAD = 2 };

static const struct itt_id null_id;

/* ---- the pointers, their stubs, the api list ---- */

typedef struct itt_domain *domain_create_t(const char *name);
typedef struct itt_string_handle *string_handle_create_t(const char *name);
typedef void void_t(void);
typedef void scoped_t(int scope);
typedef void thread_set_name_t(const char *name);
typedef void task_begin_t(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
			  struct itt_string_handle *name);
typedef void task_begin_fn_t(const struct itt_domain *d, struct itt_id id, struct itt_id parent, void *fn);
typedef void task_end_t(const struct itt_domain *d);
typedef void task_end_id_t(const struct itt_domain *d, struct itt_id id);
typedef void frame_t(const struct itt_domain *d, struct itt_id *id);
typedef void marker_t(const struct itt_domain *d, struct itt_id id, struct itt_string_handle *name, int scope);
typedef void counter_inc_t(const struct itt_domain *d, struct itt_string_handle *name);
typedef void sync_create_t(void *addr, const char *type, const char *name, int attr);
typedef unsigned long long get_timestamp_t(void);

static struct itt_global g;
static struct itt_domain dummy_domain;  /* flags 0: what a collector without domain_create leaves */

static void init_ittlib(void);

/* a stub: loads the collector at the first call, then calls what it left in the pointer */
#define STUB(name, type, params, args)                                   \
	static type s_##name;                                           \
	static type *p_##name = s_##name;                               \
	static void s_##name params                                     \
	{                                                               \
		if (!g.api_initialized && !g.thread_list)              \
			init_ittlib();                                  \
		if (p_##name && p_##name != s_##name)                  \
			p_##name args;                                  \
	}

STUB(pause, void_t, (void), ())
STUB(resume, void_t, (void), ())
STUB(pause_scoped, scoped_t, (int s), (s))
STUB(resume_scoped, scoped_t, (int s), (s))
STUB(thread_set_name, thread_set_name_t, (const char *n), (n))
STUB(task_begin, task_begin_t, (const struct itt_domain *d, struct itt_id i, struct itt_id p,
				struct itt_string_handle *n), (d, i, p, n))
STUB(task_begin_fn, task_begin_fn_t, (const struct itt_domain *d, struct itt_id i, struct itt_id p, void *f),
     (d, i, p, f))
STUB(task_end, task_end_t, (const struct itt_domain *d), (d))
STUB(task_begin_overlapped, task_begin_t, (const struct itt_domain *d, struct itt_id i, struct itt_id p,
					   struct itt_string_handle *n), (d, i, p, n))
STUB(task_end_overlapped, task_end_id_t, (const struct itt_domain *d, struct itt_id i), (d, i))
STUB(region_begin, task_begin_t, (const struct itt_domain *d, struct itt_id i, struct itt_id p,
				  struct itt_string_handle *n), (d, i, p, n))
STUB(region_end, task_end_id_t, (const struct itt_domain *d, struct itt_id i), (d, i))
STUB(frame_begin_v3, frame_t, (const struct itt_domain *d, struct itt_id *i), (d, i))
STUB(frame_end_v3, frame_t, (const struct itt_domain *d, struct itt_id *i), (d, i))
STUB(marker, marker_t, (const struct itt_domain *d, struct itt_id i, struct itt_string_handle *n, int s),
     (d, i, n, s))
STUB(counter_inc_v3, counter_inc_t, (const struct itt_domain *d, struct itt_string_handle *n), (d, n))
STUB(sync_create, sync_create_t, (void *a, const char *t, const char *n, int at), (a, t, n, at))

/* with a static implementation: before the collector is loaded, the static part keeps lists itself */
static domain_create_t s_domain_create;
static domain_create_t *p_domain_create = s_domain_create;
static string_handle_create_t s_string_handle_create;
static string_handle_create_t *p_string_handle_create = s_string_handle_create;

static unsigned long long s_get_timestamp(void)
{
	return 0;
}

static get_timestamp_t *p_get_timestamp = s_get_timestamp;

#define ENTRY(name, null, group) { "__itt_" #name, (void **)&p_##name, (void *)s_##name, null, group }

static struct itt_api_info api_list[] = {
	/* functions with a static implementation: null_func is that implementation */
	ENTRY(domain_create, (void *)s_domain_create, GROUP_STRUCTURE),
	ENTRY(string_handle_create, (void *)s_string_handle_create, GROUP_STRUCTURE),
	ENTRY(pause, (void *)s_pause, GROUP_CONTROL | GROUP_LEGACY),
	ENTRY(resume, (void *)s_resume, GROUP_CONTROL | GROUP_LEGACY),
	ENTRY(pause_scoped, (void *)s_pause_scoped, GROUP_CONTROL),
	ENTRY(resume_scoped, (void *)s_resume_scoped, GROUP_CONTROL),
	ENTRY(thread_set_name, (void *)s_thread_set_name, GROUP_THREAD),
	/* the others: null_func NULL, so the macros skip them */
	ENTRY(sync_create, NULL, GROUP_SYNC),
	ENTRY(get_timestamp, NULL, GROUP_STRUCTURE),
	ENTRY(region_begin, NULL, GROUP_STRUCTURE),
	ENTRY(region_end, NULL, GROUP_STRUCTURE),
	ENTRY(frame_begin_v3, NULL, GROUP_STRUCTURE),
	ENTRY(frame_end_v3, NULL, GROUP_STRUCTURE),
	ENTRY(task_begin, NULL, GROUP_STRUCTURE),
	ENTRY(task_begin_fn, NULL, GROUP_STRUCTURE),
	ENTRY(task_end, NULL, GROUP_STRUCTURE),
	ENTRY(counter_inc_v3, NULL, GROUP_STRUCTURE),
	ENTRY(marker, NULL, GROUP_STRUCTURE),
	ENTRY(task_begin_overlapped, NULL, GROUP_STRUCTURE),
	ENTRY(task_end_overlapped, NULL, GROUP_STRUCTURE),
	{ NULL, NULL, NULL, NULL, 0 },
};

/* the functions a recording collector must fill in; every other one ends at its null_func */
static const char *const collected[] = {
	"__itt_domain_create", "__itt_string_handle_create", "__itt_pause", "__itt_resume",
	"__itt_pause_scoped", "__itt_resume_scoped", "__itt_region_begin", "__itt_region_end",
	"__itt_frame_begin_v3", "__itt_frame_end_v3", "__itt_task_begin", "__itt_task_begin_fn",
	"__itt_task_end", "__itt_marker", "__itt_task_begin_overlapped", "__itt_task_end_overlapped",
};

static void init_global(void)
{
	static const unsigned char magic[8] = { 0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30 };
	pthread_mutexattr_t attr;

	memcpy(g.magic, magic, sizeof(magic));
	g.version_major = 3;
	g.version_minor = 0;
	g.version_build = 20180723;
	g.api_list_ptr = api_list;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&g.mutex, &attr);
	pthread_mutexattr_destroy(&attr);
	g.mutex_initialized = 1;
}

static void nullify(void)
{
	for (struct itt_api_info *a = g.api_list_ptr; a->name; a++)
		*a->func_ptr = a->null_func;
}

/* __itt_init_ittlib: the collector's __itt_api_init fills the pointers, under the global's mutex */
static void init_ittlib(void)
{
	pthread_mutex_lock(&g.mutex);
	if (!g.api_initialized) {
		const char *path = getenv("INTEL_LIBITTNOTIFY64");
		void (*api_init)(struct itt_global *, int) = NULL;

		g.lib = path ? dlopen(path, RTLD_LAZY) : NULL;
		if (path && !g.lib)
			fprintf(stderr, "ittclient: %s\n", dlerror());
		if (g.lib)
			*(void **)&api_init = dlsym(g.lib, "__itt_api_init");
		if (api_init)
			api_init(&g, GROUP_ALL);
		else
			nullify();
		g.api_initialized = 1;
	}
	pthread_mutex_unlock(&g.mutex);
}

static struct itt_domain *s_domain_create(const char *name)
{
	struct itt_domain *d, **tail;

	pthread_mutex_lock(&g.mutex);
	if (g.api_initialized) {
		pthread_mutex_unlock(&g.mutex);
		if (p_domain_create && p_domain_create != s_domain_create)
			return p_domain_create(name);
		return &dummy_domain;
	}
	for (tail = &g.domain_list; (d = *tail); tail = &d->next)
		if (!strcmp(d->nameA, name))
			break;
	if (!d && getenv("INTEL_LIBITTNOTIFY64") && (d = calloc(1, sizeof(*d)))) {
		d->flags = 0;   /* "disabled by default", as 2011-era static parts made them */
		d->nameA = strdup(name);
		*tail = d;
	}
	pthread_mutex_unlock(&g.mutex);
	return d;
}

static struct itt_string_handle *s_string_handle_create(const char *name)
{
	struct itt_string_handle *h, **tail;

	pthread_mutex_lock(&g.mutex);
	if (g.api_initialized) {
		pthread_mutex_unlock(&g.mutex);
		if (p_string_handle_create && p_string_handle_create != s_string_handle_create)
			return p_string_handle_create(name);
		return NULL;
	}
	for (tail = &g.string_list; (h = *tail); tail = &h->next)
		if (!strcmp(h->strA, name))
			break;
	if (!h && getenv("INTEL_LIBITTNOTIFY64") && (h = calloc(1, sizeof(*h)))) {
		h->strA = strdup(name);
		*tail = h;
	}
	pthread_mutex_unlock(&g.mutex);
	return h;
}

/* ---- the macros of ittnotify.h: a disabled domain or a NULL pointer calls nothing ---- */

#define ON(d, name) ((d) && (d)->flags && p_##name)
#define DOMAIN_CREATE(n) (p_domain_create ? p_domain_create(n) : NULL)
#define STRING_HANDLE_CREATE(n) (p_string_handle_create ? p_string_handle_create(n) : NULL)
#define TASK_BEGIN(d, n) (ON(d, task_begin) ? p_task_begin(d, null_id, null_id, n) : (void)0)
#define TASK_BEGIN_FN(d, f) (ON(d, task_begin_fn) ? p_task_begin_fn(d, null_id, null_id, f) : (void)0)
#define TASK_END(d) (ON(d, task_end) ? p_task_end(d) : (void)0)
#define TASK_BEGIN_OV(d, i, n) (ON(d, task_begin_overlapped) ? p_task_begin_overlapped(d, i, null_id, n) : (void)0)
#define TASK_END_OV(d, i) (ON(d, task_end_overlapped) ? p_task_end_overlapped(d, i) : (void)0)
#define REGION_BEGIN(d, i, n) (ON(d, region_begin) ? p_region_begin(d, i, null_id, n) : (void)0)
#define REGION_END(d, i) (ON(d, region_end) ? p_region_end(d, i) : (void)0)
#define FRAME_BEGIN(d, i) (ON(d, frame_begin_v3) ? p_frame_begin_v3(d, i) : (void)0)
#define FRAME_END(d, i) (ON(d, frame_end_v3) ? p_frame_end_v3(d, i) : (void)0)
#define MARKER(d, n) (ON(d, marker) ? p_marker(d, null_id, n, 2) : (void)0)
#define PAUSE() (p_pause ? p_pause() : (void)0)
#define RESUME() (p_resume ? p_resume() : (void)0)
#define PAUSE_SCOPED(s) (p_pause_scoped ? p_pause_scoped(s) : (void)0)
#define RESUME_SCOPED(s) (p_resume_scoped ? p_resume_scoped(s) : (void)0)
#define THREAD_SET_NAME(n) (p_thread_set_name ? p_thread_set_name(n) : (void)0)

/* ---- run ---- */

static struct itt_domain *d_main, *d_other;
static struct itt_string_handle *h_outer, *h_inner, *h_step, *h_tick, *h_ov_a, *h_ov_b, *h_reg, *h_deep,
	*h_forked, *h_child;
static int failed;

#define EXPECT(cond)                                                                        \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "ittclient: line %d: %s does not hold\n", __LINE__, #cond); \
			failed = 1;                                                         \
		}                                                                           \
	} while (0)

static __attribute__((noinline)) void static_task_fn(void)
{
	asm volatile("");
}

static void work(void)
{
	struct itt_id a = { 1, 0, 0 }, b = { 2, 0, 0 }, r = { 3, 0, 0 }, f = { 4, 0, 0 };

	for (int i = 0; i < ROUNDS; i++) {
		TASK_BEGIN(d_main, h_outer);
		for (int j = 0; j < 3; j++) {
			TASK_BEGIN(d_main, h_inner);
			TASK_END(d_main);
		}
		TASK_BEGIN(d_other, h_step);
		TASK_BEGIN(d_main, h_inner);
		TASK_END(d_other);      /* the step, though main/inner is innermost */
		TASK_END(d_main);       /* the inner */
		MARKER(d_main, h_tick);
		TASK_END(d_main);
	}
	for (int i = 0; i < FRAMES; i++) {
		FRAME_BEGIN(d_main, NULL);
		TASK_BEGIN(d_main, h_inner);
		TASK_END(d_main);
		FRAME_END(d_main, NULL);
	}
	FRAME_BEGIN(d_other, &f);
	FRAME_BEGIN(d_other, &f);       /* ignored: that frame is open */
	FRAME_END(d_other, &f);
	FRAME_END(d_other, &f);         /* ignored: no such frame open */
	TASK_BEGIN_OV(d_main, a, h_ov_a);
	TASK_BEGIN_OV(d_main, b, h_ov_b);
	TASK_END_OV(d_main, a);
	TASK_END_OV(d_main, b);
	REGION_BEGIN(d_main, r, h_reg);
	REGION_END(d_main, r);
	TASK_BEGIN_FN(d_main, (void *)qsort);
	TASK_END(d_main);
	TASK_BEGIN_FN(d_main, (void *)static_task_fn);
	TASK_END(d_main);
}

static void *worker(void *arg)
{
	(void)arg;
	THREAD_SET_NAME("itt-worker");
	printf("worker %d\n", (int)gettid());
	work();
	return NULL;
}

static const char *state_of(const struct itt_api_info *a)
{
	void *p = *a->func_ptr;

	if (p == a->init_func)
		return p == a->null_func ? "static" : "stub";
	if (p == a->null_func)
		return "null";
	return "collector";
}

/* Each pointer's state: "collector" for the functions a recording collector implements, else null. */
static void check_api(bool recording)
{
	for (struct itt_api_info *a = g.api_list_ptr; a->name; a++) {
		bool ours = false;
		const char *want, *got = state_of(a);

		for (size_t i = 0; i < sizeof(collected) / sizeof(collected[0]); i++)
			ours |= !strcmp(collected[i], a->name);
		want = recording && ours ? "collector" : a->null_func ? "static" : "null";
		printf("api %s %s\n", a->name, got);
		if (strcmp(want, got)) {
			fprintf(stderr, "ittclient: %s is %s, expected %s\n", a->name, got, want);
			failed = 1;
		}
	}
}

static int run(void)
{
	struct itt_domain *early;
	struct itt_string_handle *h_early;
	pthread_t th;
	pid_t child;
	int status;

	if (!getenv("INTEL_LIBITTNOTIFY64") || !getenv("PROFTOOL_REGIONS")) {
		fprintf(stderr, "ittclient: run needs INTEL_LIBITTNOTIFY64 and PROFTOOL_REGIONS\n");
		return 2;
	}
	/* before the collector is loaded: the static part's own domain (disabled) and handle */
	early = DOMAIN_CREATE("ittclient::early");
	h_early = STRING_HANDLE_CREATE("early");
	EXPECT(early && early->flags == 0 && h_early);
	EXPECT(!g.api_initialized);
	/* the disabled domain calls nothing: this loads no collector */
	TASK_BEGIN(early, h_early);
	EXPECT(!g.api_initialized);
	/* a call without a domain does */
	THREAD_SET_NAME("itt-main");
	EXPECT(g.api_initialized);
	check_api(true);
	EXPECT(early->flags == 1);
	TASK_BEGIN(early, h_early);
	TASK_END(early);

	d_main = DOMAIN_CREATE("ittclient::main");
	d_other = DOMAIN_CREATE("ittclient::other");
	EXPECT(d_main && d_main->flags == 1 && !strcmp(d_main->nameA, "ittclient::main"));
	EXPECT(d_other && d_other != d_main && DOMAIN_CREATE("ittclient::main") == d_main);
	h_outer = STRING_HANDLE_CREATE("outer");
	h_inner = STRING_HANDLE_CREATE("inner");
	h_step = STRING_HANDLE_CREATE("step");
	h_tick = STRING_HANDLE_CREATE("tick");
	h_ov_a = STRING_HANDLE_CREATE("ov_a");
	h_ov_b = STRING_HANDLE_CREATE("ov_b");
	h_reg = STRING_HANDLE_CREATE("reg");
	h_deep = STRING_HANDLE_CREATE("deep");
	h_forked = STRING_HANDLE_CREATE("forked");
	h_child = STRING_HANDLE_CREATE("child");
	EXPECT(h_outer && !strcmp(h_outer->strA, "outer") && h_inner != h_outer);
	{
		/* the same text from another buffer: the same handle */
		char buf[16];

		snprintf(buf, sizeof(buf), "%s", "outer");
		EXPECT(STRING_HANDLE_CREATE(buf) == h_outer);
	}

	printf("main %d\n", (int)gettid());
	fflush(stdout);
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	work();
	pthread_join(th, NULL);

	PAUSE();
	RESUME();
	PAUSE_SCOPED(SCOPE_OFFLOAD);
	RESUME_SCOPED(SCOPE_OFFLOAD);
	PAUSE_SCOPED(SCOPE_HOST);
	RESUME_SCOPED(SCOPE_HOST);
	for (int i = 0; i < DEEP; i++)
		TASK_BEGIN(d_main, h_deep);
	for (int i = 0; i < DEEP; i++)
		TASK_END(d_main);
	TASK_END(d_main);               /* nothing open: ignored */

	TASK_BEGIN(d_main, h_forked);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		TASK_BEGIN(d_main, h_child);
		TASK_END(d_main);
		TASK_END(d_main);       /* "forked", begun in the parent's file: not written here */
		_exit(0);
	}
	printf("child %d\n", (int)child);
	waitpid(child, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	TASK_END(d_main);
	return failed;
}

/* ---- off: loaded while not recording ---- */

static int off(void)
{
	struct itt_domain *d;

	if (!getenv("INTEL_LIBITTNOTIFY64") || getenv("PROFTOOL_REGIONS")) {
		fprintf(stderr, "ittclient: off needs INTEL_LIBITTNOTIFY64 and no PROFTOOL_REGIONS\n");
		return 2;
	}
	THREAD_SET_NAME("itt-main");
	EXPECT(g.api_initialized && g.lib);
	check_api(false);
	/* the static part's own domain_create, now initialised, hands out its disabled dummy */
	d = DOMAIN_CREATE("ittclient::main");
	EXPECT(d == &dummy_domain && d->flags == 0);
	TASK_BEGIN(d, STRING_HANDLE_CREATE("x"));
	TASK_END(d);
	return failed;
}

/* ---- bench ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench(long n)
{
	struct itt_domain *d;
	struct itt_string_handle *h;
	double t0, t1;

	THREAD_SET_NAME("itt-bench");
	d = DOMAIN_CREATE("ittclient::bench");
	h = STRING_HANDLE_CREATE("pair");
	/* warm: the first pair makes the file, the thread's segment and the name */
	TASK_BEGIN(d, h);
	TASK_END(d);
	t0 = now();
	for (long i = 0; i < n; i++) {
		TASK_BEGIN(d, h);
		TASK_END(d);
	}
	t1 = now();
	printf("ns_per_pair %.1f\n", (t1 - t0) * 1e9 / (double)n);
	t0 = now();
	for (long i = 0; i < n; i++) {
		TASK_BEGIN(d, STRING_HANDLE_CREATE("push"));
		TASK_END(d);
	}
	t1 = now();
	printf("ns_per_push %.1f\n", (t1 - t0) * 1e9 / (double)n);
	return 0;
}

int main(int argc, char **argv)
{
	init_global();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "run"))
		return run();
	if (argc == 2 && !strcmp(argv[1], "off"))
		return off();
	if (argc == 3 && !strcmp(argv[1], "bench"))
		return bench(strtol(argv[2], NULL, 10));
	fprintf(stderr, "usage: ittclient run | off | bench N\n");
	return 2;
}
