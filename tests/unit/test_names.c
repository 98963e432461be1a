// SPDX-License-Identifier: MIT
/*
 * Unit tests for hostile names: bytes that are not UTF-8 kept exactly by
 * the profile file and printed as \xNN by every report format; names of
 * any length, and siblings sharing a long prefix, in every format.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/base.h"
#include "base/text.h"
#include "profile/profile.h"
#include "report/report.h"
#include "symbolize/internal.h"
#include "unit.h"

static char dir[] = "/tmp/proftool-unit-XXXXXX";

static void utf8_checks(void)
{
	static const struct { const char *s; bool valid; } cases[] = {
		{ "", true }, { "plain ascii", true }, { "caf\xc3\xa9", true },
		{ "\xe4\xb8\xad\xe6\x96\x87", true }, { "\xf0\x9f\x98\x80", true },
		{ "\xef\xbf\xbd", true }, { "\xf4\x8f\xbf\xbf", true },
		{ "caf\xe9", false }, { "\xff", false }, { "\xc3", false }, { "\xc0\xaf", false },
		{ "\xe0\x80\xaf", false }, { "\xed\xa0\x80", false }, { "\xed\xb3\xbf", false },
		{ "\xf4\x90\x80\x80", false }, { "\xf5\x80\x80\x80", false }, { "\x80", false },
		{ "\xe4\xb8", false }, { "ok\xf0\x9f\x98", false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (text_is_utf8(cases[i].s) != cases[i].valid)
			fprintf(stderr, "# case %zu\n", i);
		CHECK(text_is_utf8(cases[i].s) == cases[i].valid);
	}
}

static void printable(void)
{
	static const struct { const char *s, *want; } cases[] = {
		{ "caf\xe9", "caf\\xe9" },
		{ "sp\xfflit.py", "sp\\xfflit.py" },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },
		{ "mixed caf\xc3\xa9 \xe9", "mixed caf\xc3\xa9 \\xe9" },
	};
	char *e;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		e = text_printable(cases[i].s);
		CHECK(e && !strcmp(e, cases[i].want));
		free(e);
	}
	/* printable as it is: nothing to free, nothing changed */
	CHECK(text_printable("caf\xc3\xa9 back\\slash") == NULL);
	/* control characters are UTF-8: each format deals with them itself */
	CHECK(text_printable("tab\there\nline\x7f") == NULL);
}

static void bytes_round_trip(void)
{
	char all[256], *enc, *dec;

	/* every byte but NUL, in every position */
	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	enc = text_bytes_encode(all);
	CHECK(enc && text_is_utf8(enc));
	dec = enc ? text_bytes_decode(enc) : NULL;
	CHECK(dec && !strcmp(dec, all));
	free(enc);
	free(dec);
	/* a backslash survives next to escapes */
	enc = text_bytes_encode("a\\xe9\xe9\\");
	CHECK(enc && !strcmp(enc, "a\\\\xe9\\xe9\\\\"));
	dec = enc ? text_bytes_decode(enc) : NULL;
	CHECK(dec && !strcmp(dec, "a\\xe9\xe9\\"));
	free(enc);
	free(dec);
	/* UTF-8 is stored as it is */
	CHECK(text_bytes_encode("caf\xc3\xa9 \\x41") == NULL);
	/* what no encoder makes */
	CHECK(text_bytes_decode("\\") == NULL);
	CHECK(text_bytes_decode("\\q") == NULL);
	CHECK(text_bytes_decode("\\x4") == NULL);
	CHECK(text_bytes_decode("\\xzz") == NULL);
	CHECK(text_bytes_decode("\\x00") == NULL);
}

/* Names of every kind holding bytes that are not UTF-8, control characters and backslashes. */
static const char *const hostile[] = {
	"caf\xe9", "sp\xfflit", "\\x41 is not A", "new\nline", "\xed\xa0\x80 surrogate",
	"{\"$bytes\":\"not an object\"}", "ok caf\xc3\xa9",
};

static struct profile *hostile_profile(void)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_add_process(p, 10, 1, hostile[0], "/bin/echo caf\xe9");
	uint32_t th = profile_add_thread(p, 10, proc, hostile[1]);
	uint32_t parent = PROFILE_NONE;

	for (size_t i = 0; i < ARRAY_SIZE(hostile); i++) {
		uint32_t f = profile_add_func(p, hostile[i], hostile[(i + 1) % ARRAY_SIZE(hostile)],
					      hostile[(i + 2) % ARRAY_SIZE(hostile)], (uint32_t)i);

		parent = profile_add_stack(p, parent, profile_add_loc(p, f, (uint32_t)i));
		profile_add_sample(p, 1000 * (i + 1), th, parent, 1000000, PROFILE_STATE_UNKNOWN);
	}
	profile_add_region(p, th, profile_add_region_node(p, PROFILE_NONE,
				profile_add_region_name(p, hostile[3], hostile[0])), 500, 9000, 0);
	profile_add_mark(p, th, profile_add_region_name(p, "", hostile[1]), 2000);
	profile_add_unwind_stop(p, "no CFI", hostile[1], 2);
	profile_add_python_miss(p, profile_add_python(p, "/usr/bin/python\xff", hostile[0], NULL),
				hostile[4], 1);
	p->meta.command = xstrdup("/bin/echo caf\xe9");
	p->meta.host = xstrdup(hostile[2]);
	p->meta.event = xstrdup("cpu-clock");
	p->meta.period_ns = 1000000;
	p->meta.duration_ns = 10000000;
	return p;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The file's "version", read from its gzip'd text. */
static int file_version(const char *path)
{
	char text[256] = "", *v;
	gzFile z = gzopen(path, "rb");

	if (!z)
		return -1;
	gzread(z, text, sizeof(text) - 1);
	gzclose(z);
	v = strstr(text, "\"version\":");
	return v ? (int)strtol(v + strlen("\"version\":"), NULL, 10) : -1;
}

static void profile_keeps_bytes(void)
{
	struct profile *p = hostile_profile(), *q;
	char path[256], err[256];

	snprintf(path, sizeof(path), "%s/hostile.data", dir);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	q = profile_read(path, err, sizeof(err));
	CHECK(q != NULL);
	if (!q) {
		fprintf(stderr, "# %s\n", err);
		profile_free(p);
		return;
	}
	/* bytes that are not UTF-8 make the file version 2, which version 1 readers refuse as newer */
	CHECK_EQ_U(file_version(path), 2);
	CHECK_EQ_U(q->nr_funcs, p->nr_funcs);
	for (size_t i = 0; i < p->nr_funcs && i < q->nr_funcs; i++) {
		CHECK(same(q->funcs[i].name, p->funcs[i].name));
		CHECK(same(q->funcs[i].module, p->funcs[i].module));
		CHECK(same(q->funcs[i].file, p->funcs[i].file));
	}
	CHECK(q->nr_procs == 1 && same(q->procs[0].comm, hostile[0]) &&
	      same(q->procs[0].cmdline, "/bin/echo caf\xe9"));
	CHECK(q->nr_threads == 1 && same(q->threads[0].comm, hostile[1]));
	CHECK(q->nr_region_names == 2 && same(q->region_names[0].domain, hostile[3]) &&
	      same(q->region_names[0].name, hostile[0]) && same(q->region_names[1].name, hostile[1]));
	CHECK(q->meta.nr_stops == 1 && same(q->meta.stops[0].module, hostile[1]));
	CHECK(q->meta.nr_pythons == 1 && same(q->meta.pythons[0].interpreter, "/usr/bin/python\xff") &&
	      same(q->meta.pythons[0].version, hostile[0]) && q->meta.pythons[0].nr_misses == 1 &&
	      same(q->meta.pythons[0].misses[0].reason, hostile[4]));
	CHECK(same(q->meta.command, p->meta.command) && same(q->meta.host, p->meta.host));
	CHECK_EQ_U(q->nr_samples, p->nr_samples);
	profile_free(q);
	profile_free(p);

	/* a profile of UTF-8 names stays version 1, readable by the proftool before byte strings */
	p = profile_new();
	profile_add_func(p, "caf\xc3\xa9", "app", NULL, 0);
	CHECK(profile_write(p, path, err, sizeof(err)) == 0);
	CHECK_EQ_U(file_version(path), 1);
	profile_free(p);
	unlink(path);
}

static void malformed_bytes_rejected(void)
{
	static const char *const bad[] = {
		"{\"$bytes\":\"\\\\q\"}", "{\"$bytes\":\"\\\\x00\"}", "{\"$bytes\":1}",
		"{\"$bytes\":\"a\",\"b\":\"c\"}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char text[512], err[256];
		struct profile *p;

		snprintf(text, sizeof(text),
			 "{\"format\":\"proftool-profile\",\"version\":2,\"meta\":{\"command\":%s},"
			 "\"functions\":{\"name\":[],\"module\":[],\"file\":[],\"line\":[]}}", bad[i]);
		errno = 0;
		p = profile_read_mem(text, strlen(text), err, sizeof(err));
		CHECK(p == NULL && errno == EBADMSG && strstr(err, "byte string"));
		profile_free(p);
	}
}

/* Writes the report of P in FMT to memory; the caller frees. */
static char *report_text(const struct profile *p, enum report_format fmt, int *ret, size_t *len)
{
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);
	struct report_opts o = { .format = fmt, .sort = REPORT_SORT_CUMTIME };

	*ret = report_write(m, p, &o);
	fclose(m);
	return buf;
}

static const enum report_format all_formats[] = {
	REPORT_TABLE, REPORT_FOLDED, REPORT_TREE, REPORT_CALLERS, REPORT_CALLEES, REPORT_GROUPS,
	REPORT_JSON, REPORT_TIMERS, REPORT_SPEEDSCOPE, REPORT_CHROME, REPORT_PPROF, REPORT_SVG,
	REPORT_HTML, REPORT_REGIONS,
};

static void reports_escape(void)
{
	struct profile *p = hostile_profile();

	for (size_t i = 0; i < ARRAY_SIZE(all_formats); i++) {
		int ret;
		size_t len;
		char *text = report_text(p, all_formats[i], &ret, &len);

		if (ret)
			fprintf(stderr, "# format %d: %d\n", (int)all_formats[i], ret);
		CHECK(ret == 0 && len > 0);
		if (all_formats[i] != REPORT_PPROF) {
			/* every byte printed is UTF-8, and a name shows its bad byte as \xNN */
			CHECK(memchr(text, '\0', len) == NULL && text_is_utf8(text));
			CHECK(strstr(text, "caf\\xe9") || strstr(text, "caf\\\\xe9"));
		}
		free(text);
	}
	profile_free(p);
}

/*
 * Two siblings sharing a 1500-byte prefix, a 6000-byte name, and the same
 * long name in two modules and twice in one module (two files), which the
 * timers' keys must tell apart: "name (module)", "name (module) #2".
 */
static struct profile *long_profile(char **names, size_t nr)
{
	struct profile *p = profile_new();
	uint32_t th = profile_add_thread(p, 1, profile_add_process(p, 1, 0, "long", NULL), "long");
	uint32_t root = profile_add_stack(p, PROFILE_NONE,
					  profile_add_loc(p, profile_add_func(p, "main", "app", NULL, 0), 0));
	static const char *const mods[] = { "app", "app", "app", "libx.so", "app", "app" };
	static const char *const files[] = { NULL, NULL, NULL, NULL, "a.c", "b.c" };

	for (size_t i = 0; i < nr; i++) {
		uint32_t f = profile_add_func(p, names[i], mods[i], files[i], files[i] ? 1 : 0);
		uint32_t s = profile_add_stack(p, root, profile_add_loc(p, f, 0));

		for (size_t k = 0; k <= i; k++)
			profile_add_sample(p, 1000 * (i * 10 + k + 1), th, s, 1000000, PROFILE_STATE_UNKNOWN);
	}
	p->meta.period_ns = 1000000;
	p->meta.duration_ns = 100000000;
	return p;
}

static void long_names_everywhere(void)
{
	char prefix[1501], *names[6];
	struct profile *p;

	memset(prefix, 'q', 1500);
	prefix[1500] = '\0';
	names[0] = xstrfmt("%s_left", prefix);
	names[1] = xstrfmt("%s_right", prefix);
	names[2] = xmalloc(6001);
	memset(names[2], 'L', 6000);
	names[2][6000] = '\0';
	names[3] = xstrdup(names[0]);   /* the same name in another module */
	names[4] = xstrdup(names[1]);   /* ... and twice in one module */
	names[5] = xstrdup(names[1]);
	p = long_profile(names, ARRAY_SIZE(names));
	for (size_t i = 0; i < ARRAY_SIZE(all_formats); i++) {
		int ret;
		size_t len;
		char *text;

		if (all_formats[i] == REPORT_REGIONS)
			continue;       /* no regions here */
		text = report_text(p, all_formats[i], &ret, &len);
		CHECK(ret == 0 && len > 0);
		/* the whole 6000-byte name, and both siblings' whole names, where names are text */
		if (all_formats[i] != REPORT_PPROF && all_formats[i] != REPORT_GROUPS) {
			CHECK(strstr(text, names[2]) != NULL);
			CHECK(strstr(text, names[0]) != NULL);
			CHECK(strstr(text, names[1]) != NULL);
		}
		if (all_formats[i] == REPORT_TIMERS) {
			/* by total, largest first: names[3] keeps its name, names[0] gets its module */
			char *k1 = xstrfmt("\"%s (app)\"", names[0]);
			char *k2 = xstrfmt("\"%s (app) #2\"", names[1]);

			CHECK(strstr(text, k1) != NULL);
			CHECK(strstr(text, k2) != NULL);
			free(k1);
			free(k2);
		}
		free(text);
	}
	profile_free(p);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		free(names[i]);
}

/* Many siblings of one name: keys for each, in time linear in their number. */
static void many_clashing_siblings(void)
{
	enum { N = 3000 };
	struct profile *p = profile_new();
	uint32_t th = profile_add_thread(p, 1, profile_add_process(p, 1, 0, "w", NULL), "w");
	uint32_t root = profile_add_stack(p, PROFILE_NONE,
					  profile_add_loc(p, profile_add_func(p, "main", "app", NULL, 0), 0));
	char *text, *key;
	size_t len;
	int ret;

	for (uint32_t i = 0; i < N; i++) {
		char file[32];
		uint32_t f, s;

		snprintf(file, sizeof(file), "f%u.c", i);
		f = profile_add_func(p, "same", "app", file, 1);
		s = profile_add_stack(p, root, profile_add_loc(p, f, 0));
		profile_add_sample(p, 1000 * (i + 1), th, s, 1000000, PROFILE_STATE_UNKNOWN);
	}
	p->meta.period_ns = 1000000;
	text = report_text(p, REPORT_TIMERS, &ret, &len);
	CHECK(ret == 0);
	/* "same", "same (app)", then "same (app) #2" up to #N-1 */
	key = xstrfmt("\"same (app) #%d\"", N - 1);
	CHECK(text && strstr(text, key));
	free(key);
	free(text);
	profile_free(p);
}

/* A perf map's name of any length is whole, and a long line never turns into two symbols. */
static void long_perf_map_names(void)
{
	char path[64], *name = xmalloc(6001);
	struct sym_perfmap *m;
	uint64_t start = 0;
	const char *found;
	FILE *f;

	memset(name, 'J', 6000);
	/*
	 * where a reader of 4095-byte pieces would cut the line below (its 17
	 * bytes before the name, then 4078 of the name), what it would take for
	 * a line of its own: a symbol at 0x1000
	 */
	memcpy(name + 4078, "1000 10 y", 9);
	name[6000] = '\0';
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f) {
		free(name);
		return;
	}
	fprintf(f, "7f0000001000 100 %s\n7f0000002000 80 short one\n", name);
	fclose(f);
	m = sym_perfmap_load(getpid());
	CHECK(m != NULL);
	found = m ? sym_perfmap_find(m, 0x7f0000001010, &start) : NULL;
	CHECK(found && !strcmp(found, name) && start == 0x7f0000001000);
	found = m ? sym_perfmap_find(m, 0x1008, &start) : NULL;
	CHECK(found == NULL);
	found = m ? sym_perfmap_find(m, 0x7f0000002010, &start) : NULL;
	CHECK(found && !strcmp(found, "short one"));
	sym_perfmap_free(m);
	unlink(path);
	free(name);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(utf8_checks);
	RUN(printable);
	RUN(bytes_round_trip);
	RUN(profile_keeps_bytes);
	RUN(malformed_bytes_rejected);
	RUN(reports_escape);
	RUN(long_names_everywhere);
	RUN(many_clashing_siblings);
	RUN(long_perf_map_names);
	rmdir(dir);
	UNIT_DONE();
}
