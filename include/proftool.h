/* SPDX-License-Identifier: MIT */
/*
 * <proftool.h>: named regions for proftool, the sampling profiler.
 *
 *     #include <proftool.h>
 *
 *     proftool_region_begin("forward");  ...  proftool_region_end("forward");
 *     PROFTOOL_REGION("step") { ... }           a scope: ended however it is left
 *     proftool_region_begin_in("io", "read");  a region in a domain (a group)
 *     proftool_mark("epoch");                  an instant event
 *     proftool_pause(); ... proftool_resume(); nothing of the process is recorded between
 *
 * In C++ also proftool::Region r("step"); which ends the region with the scope.
 *
 * `proftool record` counts every region exactly, times it, and joins it with
 * the samples taken inside it (`proftool report --format regions`, `--region
 * NAME`). Nothing to link: under `proftool record` the first call loads
 * proftool's runtime (the library PROFTOOL_RT names, with dlopen, which is in
 * glibc's libc since 2.34); otherwise every call is a test of a variable and
 * a return. Regions nest per thread; end them in the reverse order of their
 * begins. Names are copied: a name may be built in a buffer that changes.
 * Safe from any thread, after fork and exec; errno is left as it was.
 */
#ifndef PROFTOOL_H
#define PROFTOOL_H

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the runtime library hands the header: version 1. */
struct proftool_rt_v1 {
	uint32_t size;  /* of this struct: fields are only ever added */
	void (*event)(const char *domain, const char *name, int kind);
};

enum { PROFTOOL__BEGIN = 1, PROFTOOL__END = 2, PROFTOOL__MARK = 3, PROFTOOL__PAUSE = 4,
       PROFTOOL__RESUME = 5 };

/* Each file that includes this has its own copy of these; all lead to the same runtime. */
static const struct proftool_rt_v1 *proftool__rt __attribute__((unused));
static int proftool__state __attribute__((unused)); /* 0 not yet looked, 1 off, 2 on */

/* The first call: loads the runtime when the program is recorded. Leaves errno as it was. */
static inline const struct proftool_rt_v1 *proftool__load(void)
{
	int errsv = errno;
	const char *path = getenv("PROFTOOL_RT");
	const struct proftool_rt_v1 *rt = 0;
	void *lib = path && *path && getenv("PROFTOOL_REGIONS") ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : 0;

	if (lib) {
		const struct proftool_rt_v1 *(*get)(void);

		*(void **)&get = dlsym(lib, "proftool_rt_v1");
		rt = get ? get() : 0;
		if (rt && rt->size < sizeof(*rt))
			rt = 0;
	}
	__atomic_store_n(&proftool__rt, rt, __ATOMIC_RELEASE);
	__atomic_store_n(&proftool__state, rt ? 2 : 1, __ATOMIC_RELEASE);
	errno = errsv;
	return rt;
}

static inline const struct proftool_rt_v1 *proftool__get(void)
{
	int st = __atomic_load_n(&proftool__state, __ATOMIC_ACQUIRE);

	if (__builtin_expect(st == 1, 1))
		return 0;
	return st == 2 ? proftool__rt : proftool__load();
}

static inline void proftool__event(const char *domain, const char *name, int kind)
{
	const struct proftool_rt_v1 *rt = proftool__get();

	if (rt)
		rt->event(domain, name, kind);
}

static inline void proftool_region_begin(const char *name)
{
	proftool__event("", name, PROFTOOL__BEGIN);
}

static inline void proftool_region_end(const char *name)
{
	proftool__event("", name, PROFTOOL__END);
}

static inline void proftool_region_begin_in(const char *domain, const char *name)
{
	proftool__event(domain, name, PROFTOOL__BEGIN);
}

static inline void proftool_region_end_in(const char *domain, const char *name)
{
	proftool__event(domain, name, PROFTOOL__END);
}

static inline void proftool_mark(const char *name)
{
	proftool__event("", name, PROFTOOL__MARK);
}

static inline void proftool_mark_in(const char *domain, const char *name)
{
	proftool__event(domain, name, PROFTOOL__MARK);
}

static inline void proftool_pause(void)
{
	proftool__event("", "", PROFTOOL__PAUSE);
}

static inline void proftool_resume(void)
{
	proftool__event("", "", PROFTOOL__RESUME);
}

#ifdef __cplusplus
}

namespace proftool {
/* A region for the life of the object. */
class Region {
public:
	explicit Region(const char *name, const char *domain = "") : name_(name), domain_(domain), once_(true)
	{
		proftool_region_begin_in(domain_, name_);
	}
	~Region() { proftool_region_end_in(domain_, name_); }
	bool once__() { bool o = once_; once_ = false; return o; }
private:
	Region(const Region &);
	Region &operator=(const Region &);
	const char *name_, *domain_;
	bool once_;
};
}

#define PROFTOOL__CAT2(a, b) a##b
#define PROFTOOL__CAT(a, b) PROFTOOL__CAT2(a, b)
#define PROFTOOL_REGION(name) \
	for (proftool::Region PROFTOOL__CAT(proftool__r, __LINE__)(name); \
	     PROFTOOL__CAT(proftool__r, __LINE__).once__();)

#else /* C: the cleanup attribute of gcc and clang ends the region however the block is left */

struct proftool__scope {
	const char *name;
	int once;
};

static inline void proftool__scope_end(struct proftool__scope *s)
{
	proftool_region_end(s->name);
}

static inline struct proftool__scope proftool__scope_begin(const char *name)
{
	struct proftool__scope s = { name, 1 };

	proftool_region_begin(name);
	return s;
}

#define PROFTOOL__CAT2(a, b) a##b
#define PROFTOOL__CAT(a, b) PROFTOOL__CAT2(a, b)
#define PROFTOOL_REGION(name) \
	for (struct proftool__scope PROFTOOL__CAT(proftool__s, __LINE__) \
		     __attribute__((cleanup(proftool__scope_end))) = proftool__scope_begin(name); \
	     PROFTOOL__CAT(proftool__s, __LINE__).once; PROFTOOL__CAT(proftool__s, __LINE__).once = 0)

#endif

#endif
