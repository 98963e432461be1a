// SPDX-License-Identifier: MIT
/* Unit tests for --group-by: parsing the keys, grouping, the module filter and the Python split. */
#include <errno.h>
#include <string.h>

#include "profile/profile.h"
#include "report/model.h"
#include "report/report.h"
#include "unit.h"

static void parse_keys(void)
{
	static const struct {
		const char *in;
		int ret;
		size_t nr;
		enum report_group_key first, second;
		const char *bad;        /* where *bad points, for an error */
	} cases[] = {
		{ "module", 0, 1, REPORT_GROUP_MODULE, 0, NULL },
		{ "comm,module", 0, 2, REPORT_GROUP_COMM, REPORT_GROUP_MODULE, NULL },
		{ "state,thread,process,module,comm", 0, 5, REPORT_GROUP_STATE, REPORT_GROUP_THREAD, NULL },
		{ "modules", -EINVAL, 0, 0, 0, "modules" },
		{ "comm,mod", -EINVAL, 0, 0, 0, "mod" },
		{ "comm,comm", -EEXIST, 0, 0, 0, "comm" },
		{ "", -ENODATA, 0, 0, 0, "" },
		{ "comm,", -ENODATA, 0, 0, 0, "" },
		{ ",comm", -ENODATA, 0, 0, 0, "" },
		{ "comm,,module", -ENODATA, 0, 0, 0, "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct report_group_by by = { .nr = 99 };
		const char *bad = NULL;
		size_t len = 0;
		int ret = report_group_by_parse(cases[i].in, &by, &bad, &len);

		CHECK_EQ_U(ret, cases[i].ret);
		if (ret) {
			CHECK_EQ_U(by.nr, 99);  /* untouched on error */
			CHECK_EQ_U(len, strlen(cases[i].bad));
			CHECK(!strncmp(bad, cases[i].bad, len));
			continue;
		}
		CHECK_EQ_U(by.nr, cases[i].nr);
		CHECK_EQ_U(by.keys[0], cases[i].first);
		if (by.nr > 1)
			CHECK_EQ_U(by.keys[1], cases[i].second);
	}
}

/* Adds COUNT samples of THREAD whose stack is FRAMES, "module:name" root first. */
static void add(struct profile *p, uint32_t thread, const char *const *frames, size_t n, int count,
		enum profile_state state)
{
	uint32_t s = PROFILE_NONE;

	for (size_t i = 0; i < n; i++) {
		char mod[64];
		const char *colon = strchr(frames[i], ':');

		snprintf(mod, sizeof(mod), "%.*s", (int)(colon - frames[i]), frames[i]);
		s = profile_add_stack(p, s, profile_add_loc(p, profile_add_func(p, colon + 1, mod, NULL, 0), 0));
	}
	for (int i = 0; i < count; i++)
		profile_add_sample(p, i, thread, s, 1000, state);
}

/*
 * Process "app" (two threads, "app" and "pool"), another process "app" and a
 * process "py" running Python with a native thread:
 *   app/app   main > libm:work              10   (libm innermost)
 *   app/app   main > libc:memcpy             5
 *   app/pool  main > libm:work > libc:memcpy 4   (libm on the stack, libc innermost)
 *   app2/app  main > libm:work               6
 *   py/py     python3.11:main > [python]:f > libx:x      7
 *   py/py     python3.11:main > [python]:f > python3.11:eval  3  (the interpreter: Python code)
 *   py/py     python3.11:main > [python]:f   2
 *   py/omp    libgomp:spin                   8   (outside Python)
 */
static struct profile *make(void)
{
	struct profile *p = profile_new();
	uint32_t app = profile_add_process(p, 1, 0, "app", NULL);
	uint32_t app2 = profile_add_process(p, 2, 1, "app", NULL);
	uint32_t py = profile_add_process(p, 3, 1, "py", NULL);
	uint32_t t_app = profile_add_thread(p, 1, app, "app");
	uint32_t t_pool = profile_add_thread(p, 11, app, "pool");
	uint32_t t_app2 = profile_add_thread(p, 2, app2, "app");
	uint32_t t_py = profile_add_thread(p, 3, py, "py");
	uint32_t t_omp = profile_add_thread(p, 33, py, "omp");
	const char *a[] = { "app:main", "libm:work" }, *b[] = { "app:main", "libc:memcpy" };
	const char *c[] = { "app:main", "libm:work", "libc:memcpy" };
	const char *x[] = { "python3.11:main", "[python]:f", "libx:x" };
	const char *e[] = { "python3.11:main", "[python]:f", "python3.11:eval" };
	const char *f[] = { "python3.11:main", "[python]:f" }, *g[] = { "libgomp:spin" };

	add(p, t_app, a, 2, 10, PROFILE_STATE_ON_CPU);
	add(p, t_app, b, 2, 5, PROFILE_STATE_OFF_CPU);
	add(p, t_pool, c, 3, 4, PROFILE_STATE_ON_CPU);
	add(p, t_app2, a, 2, 6, PROFILE_STATE_ON_CPU);
	add(p, t_py, x, 3, 7, PROFILE_STATE_ON_CPU);
	add(p, t_py, e, 3, 3, PROFILE_STATE_ON_CPU);
	add(p, t_py, f, 2, 2, PROFILE_STATE_ON_CPU);
	add(p, t_omp, g, 1, 8, PROFILE_STATE_ON_CPU);
	profile_add_python(p, "/usr/bin/python3.11", "3.11.2", NULL);
	return p;
}

/* The row whose labels, joined by spaces, are WANT; NULL without one. */
static const struct report_group *row(const struct report_groups *g, const struct profile *p,
				      const char *want)
{
	struct sbuf label = SBUF_INIT;

	for (size_t r = 0; r < g->nr; r++) {
		char joined[256] = "";

		for (size_t k = 0; k < g->by.nr; k++) {
			size_t len = strlen(joined);

			snprintf(joined + len, sizeof(joined) - len, "%s%s", k ? " " : "",
				 report_group_label(g, p, r, k, &label));
		}
		if (!strcmp(joined, want)) {
			sbuf_release(&label);
			return &g->rows[r];
		}
	}
	sbuf_release(&label);
	return NULL;
}

static void group(struct report_groups *g, const struct profile *p, const char *keys, const bool *keep)
{
	struct report_group_by by;

	CHECK_EQ_U(report_group_by_parse(keys, &by, NULL, NULL), 0);
	report_groups_build(g, p, &by, keep);
	report_groups_sort(g, p, REPORT_SORT_TOTTIME);
}

static void groups_by_key(void)
{
	static const struct {
		const char *keys, *row;
		uint64_t self, cum;
	} cases[] = {
		{ "module", "libm", 16, 20 },
		{ "module", "libc", 9, 9 },
		{ "module", "app", 0, 25 },
		{ "module", "[python]", 2, 12 },
		{ "module", "python3.11", 3, 12 },
		{ "module", "libgomp", 8, 8 },
		{ "comm", "app", 25, 25 },        /* both processes named app */
		{ "comm", "py", 20, 20 },
		{ "process", "app (pid 1)", 19, 19 },
		{ "process", "app (pid 2)", 6, 6 },
		{ "thread", "app", 21, 21 },      /* threads named app in both processes */
		{ "thread", "pool", 4, 4 },
		{ "state", "on-cpu", 40, 40 },
		{ "state", "off-cpu", 5, 5 },
		{ "comm,module", "app libm", 16, 20 },
		{ "comm,module", "app libc", 9, 9 },
		{ "module,thread", "libm pool", 0, 4 },
		{ "thread,state", "app off-cpu", 5, 5 },
	};
	struct profile *p = make();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct report_groups g;
		const struct report_group *r;
		uint64_t selfs = 0;

		group(&g, p, cases[i].keys, NULL);
		r = row(&g, p, cases[i].row);
		CHECK(r != NULL);
		if (r) {
			CHECK_EQ_U(r->self, cases[i].self);
			CHECK_EQ_U(r->cum, cases[i].cum);
			CHECK_EQ_U(r->self_ns, cases[i].self * 1000);
		}
		CHECK_EQ_U(g.total, 45);
		for (size_t k = 0; k < g.nr; k++)
			selfs += g.rows[k].self;
		CHECK_EQ_U(selfs, 45);  /* every sample in one group's self count */
		/* sorted by self, largest first */
		for (size_t k = 1; k < g.nr; k++)
			CHECK(g.rows[k - 1].self_ns >= g.rows[k].self_ns);
		report_groups_release(&g);
	}
	profile_free(p);
}

static void python_split(void)
{
	struct profile *p = make();
	struct report_groups g;
	const struct report_group *r;
	struct report_pysplit *ps = report_pysplit_new(p);
	struct report_split_row *rows;
	uint32_t f;

	CHECK(report_pysplit_any(ps));
	group(&g, p, "thread", NULL);
	CHECK_EQ_U(g.split[REPORT_PY_CODE], 5);   /* f itself, and the interpreter under it */
	CHECK_EQ_U(g.split[REPORT_PY_NATIVE], 7); /* libx under f */
	CHECK_EQ_U(g.split[REPORT_PY_OUTSIDE], 8); /* omp, a thread of the Python process */
	CHECK_EQ_U(g.split[REPORT_PY_NONE], 25);
	r = row(&g, p, "omp");
	CHECK(r && r->split[REPORT_PY_OUTSIDE] == 8);
	report_groups_release(&g);

	rows = report_row_splits(p, ps, NULL, false);
	f = profile_add_func(p, "f", "[python]", NULL, 0);
	CHECK_EQ_U(rows[f].n[REPORT_PY_CODE], 5);
	CHECK_EQ_U(rows[f].n[REPORT_PY_NATIVE], 7);
	f = profile_add_func(p, "main", "python3.11", NULL, 0);
	CHECK_EQ_U(rows[f].n[REPORT_PY_CODE] + rows[f].n[REPORT_PY_NATIVE], 12);
	free(rows);
	report_pysplit_free(ps);
	profile_free(p);
}

static void module_filter(void)
{
	struct profile *p = make();
	struct report_filter f = { .module = "libc" };
	uint64_t kept;
	bool any, *keep = report_select_samples(p, &f, PROFILE_NONE, PROFILE_NONE, &kept);
	struct report_groups g;

	CHECK_EQ_U(kept, 9);
	group(&g, p, "thread", keep);
	CHECK_EQ_U(g.total, 9);
	CHECK(row(&g, p, "pool") && row(&g, p, "pool")->self == 4);
	report_groups_release(&g);
	free(keep);
	free(report_funcs_in_module(p, "libnothere", &any));
	CHECK(!any);
	free(report_funcs_in_module(p, "libgomp", &any));
	CHECK(any);
	profile_free(p);
}

int main(void)
{
	RUN(parse_keys);
	RUN(groups_by_key);
	RUN(python_split);
	RUN(module_filter);
	UNIT_DONE();
}
