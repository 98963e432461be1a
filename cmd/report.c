// SPDX-License-Identifier: MIT
/* proftool report: read one or more profiles, merge them and print a report. */
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "report/report.h"

static const char report_usage[] =
	"usage: proftool report [OPTIONS] [FILE...]\n"
	"\n"
	"Prints the profile in FILE (default proftool.data); several files are merged.\n"
	"\n"
	"  -i FILE              profile to read (may repeat)\n"
	"  --sort KEY           cumtime (cumulative), tottime (time), nsamples (ncalls,\n"
	"                       calls), name, filename, nfl (default cumtime); with\n"
	"                       --format regions: total, avg, min, max, count, self,\n"
	"                       cpu, name (default total)\n"
	"  --format FMT         table (cProfile-style, default); tree (the call tree,\n"
	"                       callees indented under callers); callers or callees\n"
	"                       (pstats print_callers/print_callees); folded (one line\n"
	"                       per stack: frames root first, ';'-separated, then the count);\n"
	"                       json (the aggregated profile); timers (hierarchical\n"
	"                       timer JSON); speedscope; chrome (trace events); pprof\n"
	"                       (gzip'd protobuf); svg or html (interactive flame graph);\n"
	"                       regions (the named regions the program marked: count,\n"
	"                       total, self, mean, min, max, %wall, cpu per region path);\n"
	"                       groups (the --group-by table alone; comm,module unless\n"
	"                       --group-by says)\n"
	"  --group-by KEYS      table: first a table of the samples per group, KEYS being\n"
	"                       one or more of module (the innermost frame's library),\n"
	"                       comm (the process's name), process, thread (the thread's\n"
	"                       name), state, rank (the process's rank in a distributed\n"
	"                       job, from its environment) and host (the host it ran on),\n"
	"                       separated by commas (comm,module; host,rank); groups,\n"
	"                       json: the groups; regions: a region table per group of\n"
	"                       comm, process, thread, rank or host\n"
	"  --split              table, groups: add the Python split, py% (Python code),\n"
	"                       native% (native code called from Python) and, per group,\n"
	"                       outside% (native code outside Python)\n"
	"  --frames VIEW        how a process with Python frames is shown: mixed (Python\n"
	"                       functions and the native code they call outside the\n"
	"                       interpreter, whose own frames count as the Python\n"
	"                       function they run; the default), python (Python\n"
	"                       functions only, as cProfile counts) or all (every\n"
	"                       frame as recorded)\n"
	"  --min-percent P      tree: fold nodes under P% of the samples into one line\n"
	"                       (default 0.5)\n"
	"  --match REGEX        callers/callees: only functions whose name matches REGEX\n"
	"                       (a Python function's qualified name or FILE:LINE(NAME))\n"
	"  --lines              table, tree, callers, callees: a row per source line\n"
	"                       (the line a Python function was running, a native\n"
	"                       function's source line) instead of per function\n"
	"  --limit N            rows in tables; 0 shows all (default 30)\n"
	"  --per-thread         one report per thread, titled by its name and ids\n"
	"  --per-process        one report per process, titled by its name and pid\n"
	"  --time-range START-END\n"
	"                       keep only samples taken from START to END seconds after\n"
	"                       the recording began (either side may be left out)\n"
	"  --region NAME        keep only samples taken inside region NAME, or a path\n"
	"                       a/b of nested regions (/a/b: from a thread's top)\n"
	"  --by-region          table: one function table per region path\n"
	"  --region-frames      folded, svg, html: put the path of the region each sample\n"
	"                       was taken in under the root of its stack, a frame per\n"
	"                       region (\"[region] outer;[region] inner;main;...\")\n"
	"  --pid P, --tid T     keep only samples of process P or thread T\n"
	"  --comm NAME          keep only samples of threads or processes named NAME\n"
	"  --module NAME        keep only samples whose innermost frame is in module NAME\n"
	"                       (libc.so.6, [kernel], [python]: as --group-by module says)\n"
	"  --state on-cpu|off-cpu\n"
	"                       wall-mode profiles: keep only samples of threads running\n"
	"                       (or runnable), or only of threads sleeping or blocked\n"
	"  -o OUT               write the report to OUT instead of standard output\n"
	"  -h, --help           show this help\n";

enum {
	OPT_SORT = 256,
	OPT_FORMAT,
	OPT_LIMIT,
	OPT_PER_THREAD,
	OPT_PID,
	OPT_TID,
	OPT_COMM,
	OPT_MIN_PERCENT,
	OPT_PER_PROCESS,
	OPT_TIME_RANGE,
	OPT_MATCH,
	OPT_STATE,
	OPT_LINES,
	OPT_REGION,
	OPT_BY_REGION,
	OPT_REGION_FRAMES,
	OPT_GROUP_BY,
	OPT_MODULE,
	OPT_SPLIT,
	OPT_FRAMES,
};

static const struct option report_options[] = {
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "min-percent", required_argument, NULL, OPT_MIN_PERCENT },
	{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
	{ "time-range", required_argument, NULL, OPT_TIME_RANGE },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "state", required_argument, NULL, OPT_STATE },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "region", required_argument, NULL, OPT_REGION },
	{ "by-region", no_argument, NULL, OPT_BY_REGION },
	{ "region-frames", no_argument, NULL, OPT_REGION_FRAMES },
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	{ "module", required_argument, NULL, OPT_MODULE },
	{ "split", no_argument, NULL, OPT_SPLIT },
	{ "frames", required_argument, NULL, OPT_FRAMES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct report_cmd_opts {
	struct report_opts ro;
	const char **inputs;
	size_t nr_inputs, alloc_inputs;
	const char *output;
	const char *sort;       /* checked once the format is known */
};

/* "START-END", "START-" or "-END", in seconds; START < END when both are given. */
static bool parse_time_range(const char *s, struct report_filter *f)
{
	const char *dash = strchr(s, '-');
	double from = 0, to = 0;
	char *end;

	/* a dash is needed, and at least one side of it */
	if (!dash || (dash == s && !dash[1]))
		return false;
	if (dash != s) {
		errno = 0;
		from = strtod(s, &end);
		if (errno || end != dash || !(from >= 0) || from > 1e9)
			return false;
	}
	if (dash[1]) {
		errno = 0;
		to = strtod(dash + 1, &end);
		if (errno || *end || !(to > from) || to > 1e9)
			return false;
	}
	f->from_ns = (uint64_t)(from * 1e9);
	f->to_ns = dash[1] ? (uint64_t)(to * 1e9) : 0;
	return true;
}

static int parse_options(int argc, char **argv, struct report_cmd_opts *o)
{
	unsigned long v;
	int c;

	o->ro.limit = 30;
	o->ro.min_percent = 0.5;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":i:o:h", report_options, NULL)) != -1) {
		switch (c) {
		case 'i':
			ALLOC_GROW(o->inputs, o->nr_inputs + 1, o->alloc_inputs);
			o->inputs[o->nr_inputs++] = optarg;
			break;
		case OPT_SORT:
			o->sort = optarg;
			break;
		case OPT_REGION:
			if (!*optarg)
				return usage_error("report", "--region needs a region name or a/b path");
			o->ro.filter.region = optarg;
			break;
		case OPT_BY_REGION:
			o->ro.by_region = true;
			break;
		case OPT_REGION_FRAMES:
			o->ro.region_frames = true;
			break;
		case OPT_FORMAT:
			if (report_format_parse(optarg, &o->ro.format) < 0)
				return usage_error("report", "unknown format '%s' (use table, tree, callers, callees, folded, regions, groups, json, timers, speedscope, chrome, pprof, svg or html)", optarg);
			break;
		case OPT_LIMIT:
			if (!parse_ulong(optarg, 0, SIZE_MAX, &v))
				return usage_error("report", "--limit must be a whole number, not '%s'", optarg);
			o->ro.limit = v;
			break;
		case OPT_PER_THREAD:
			o->ro.per_thread = true;
			break;
		case OPT_PID:
		case OPT_TID:
			if (!parse_ulong(optarg, 1, INT32_MAX, &v))
				return usage_error("report", "--%s must be a process or thread id, not '%s'",
						   c == OPT_PID ? "pid" : "tid", optarg);
			if (c == OPT_PID)
				o->ro.filter.pid = v;
			else
				o->ro.filter.tid = v;
			break;
		case OPT_COMM:
			o->ro.filter.comm = optarg;
			break;
		case OPT_GROUP_BY: {
			const char *bad;
			size_t len;
			int err = report_group_by_parse(optarg, &o->ro.group_by, &bad, &len);

			if (err == -EEXIST)
				return usage_error("report", "--group-by names '%.*s' twice", (int)len, bad);
			if (err == -ENODATA)
				return usage_error("report", "--group-by takes keys separated by commas, as in comm,module, not '%s'", optarg);
			if (err < 0)
				return usage_error("report", "unknown --group-by key '%.*s' (use module, comm, process, thread, state, rank or host)", (int)len, bad);
			break;
		}
		case OPT_MODULE:
			if (!*optarg)
				return usage_error("report", "--module needs a module name, as --group-by module shows it");
			o->ro.filter.module = optarg;
			break;
		case OPT_SPLIT:
			o->ro.split = true;
			break;
		case OPT_FRAMES:
			if (report_frames_parse(optarg, &o->ro.frames) < 0)
				return usage_error("report", "--frames takes mixed, python or all, not '%s'", optarg);
			break;
		case OPT_STATE:
			if (!strcmp(optarg, "on-cpu"))
				o->ro.filter.state = PROFILE_STATE_ON_CPU;
			else if (!strcmp(optarg, "off-cpu"))
				o->ro.filter.state = PROFILE_STATE_OFF_CPU;
			else
				return usage_error("report", "--state takes on-cpu or off-cpu, not '%s'", optarg);
			break;
		case OPT_PER_PROCESS:
			o->ro.per_process = true;
			break;
		case OPT_LINES:
			o->ro.lines = true;
			break;
		case OPT_TIME_RANGE:
			if (!parse_time_range(optarg, &o->ro.filter))
				return usage_error("report", "--time-range takes START-END in seconds (e.g. 2-5, 2-, -5), not '%s'", optarg);
			break;
		case OPT_MIN_PERCENT: {
			char *end;

			errno = 0;
			o->ro.min_percent = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->ro.min_percent >= 0) ||
			    o->ro.min_percent > 100)
				return usage_error("report", "--min-percent must be a number from 0 to 100, not '%s'", optarg);
			break;
		}
		case OPT_MATCH: {
			regex_t re;

			if (regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB))
				return usage_error("report", "--match '%s' is not a valid regular expression", optarg);
			regfree(&re);
			o->ro.match = optarg;
			break;
		}
		case 'o':
			if (!*optarg)
				return usage_error("report", "-o needs a file name");
			o->output = optarg;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return -1;
		case ':':
			return usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("report", "unknown option '%s'", argv[optind - 1]);
		}
	}
	for (int i = optind; i < argc; i++) {
		ALLOC_GROW(o->inputs, o->nr_inputs + 1, o->alloc_inputs);
		o->inputs[o->nr_inputs++] = argv[i];
	}
	if (o->sort && o->ro.format == REPORT_REGIONS &&
	    report_region_sort_parse(o->sort, &o->ro.region_sort) < 0)
		return usage_error("report", "unknown sort key '%s' for --format regions (use total, avg, min, max, count, self, cpu or name)", o->sort);
	if (o->sort && o->ro.format != REPORT_REGIONS && report_sort_parse(o->sort, &o->ro.sort) < 0)
		return usage_error("report", "unknown sort key '%s' (use cumtime, tottime, nsamples, name, filename or nfl); --format regions sorts by total, avg, min, max, count, self, cpu or name", o->sort);
	/* groups are a partition of the samples: by self time unless told otherwise, as perf sorts them */
	o->ro.group_sort = o->sort ? o->ro.sort : REPORT_SORT_TOTTIME;
	if (o->ro.by_region && o->ro.format != REPORT_TABLE)
		return usage_error("report", "--by-region goes with --format table");
	if (o->ro.region_frames && o->ro.format != REPORT_FOLDED && o->ro.format != REPORT_SVG &&
	    o->ro.format != REPORT_HTML)
		return usage_error("report", "--region-frames goes with --format folded, svg and html (the formats made of stacks)");
	if (o->ro.by_region && (o->ro.per_thread || o->ro.per_process))
		return usage_error("report", "--by-region and --per-thread/--per-process cannot be combined");
	if ((o->ro.per_thread || o->ro.per_process) && report_format_is_export(o->ro.format))
		return usage_error("report", "--per-thread and --per-process go with table, groups, tree, callers, callees and folded; "
				   "the other formats keep threads apart themselves or not at all (filter with --tid or --pid)");
	if (o->ro.group_by.nr && o->ro.format != REPORT_TABLE && o->ro.format != REPORT_GROUPS &&
	    o->ro.format != REPORT_JSON && o->ro.format != REPORT_REGIONS)
		return usage_error("report", "--group-by goes with table, groups, json and regions (pprof labels every sample with its comm, module, rank and host)");
	if (o->ro.group_by.nr && o->ro.format == REPORT_REGIONS) {
		enum report_group_key bad;

		if (!report_group_by_threads(&o->ro.group_by, &bad))
			return usage_error("report", "--format regions groups by comm, process, thread, rank or host, not by %s (a region spans many samples)",
					   bad == REPORT_GROUP_MODULE ? "module" : "state");
		if (o->ro.per_thread || o->ro.per_process)
			return usage_error("report", "--format regions takes --group-by or --per-thread/--per-process, not both");
	}
	if (o->ro.split && o->ro.format != REPORT_TABLE && o->ro.format != REPORT_GROUPS)
		return usage_error("report", "--split goes with table and groups (json's groups have the split's counts)");
	if (o->ro.lines && o->ro.format != REPORT_TABLE && o->ro.format != REPORT_TREE &&
	    o->ro.format != REPORT_CALLERS && o->ro.format != REPORT_CALLEES)
		return usage_error("report", "--lines goes with table, tree, callers and callees (the other formats name functions)");
	if (o->ro.format == REPORT_PPROF && !o->output && isatty(STDOUT_FILENO))
		return usage_error("report", "pprof output is binary: write it to a file with -o FILE");
	if (!o->nr_inputs) {
		ALLOC_GROW(o->inputs, 1, o->alloc_inputs);
		o->inputs[o->nr_inputs++] = "proftool.data";
	}
	return 0;
}

static int by_series_offset(const void *a, const void *b)
{
	const struct profile *x = *(struct profile *const *)a, *y = *(struct profile *const *)b;

	return x->meta.series_offset_ns < y->meta.series_offset_ns ? -1 :
	       x->meta.series_offset_ns > y->meta.series_offset_ns;
}

/*
 * The files, merged. The snapshots of one recording (OUT.1, OUT.2, ...,
 * OUT) are put back on its time line, in order, whatever order the shell
 * listed them in.
 */
static struct profile *load(const struct report_cmd_opts *o)
{
	struct profile **ps = xcalloc(o->nr_inputs + 1, sizeof(*ps)), *all;
	bool series = true;

	for (size_t i = 0; i < o->nr_inputs; i++) {
		ps[i] = read_profile(o->inputs[i]);
		if (!ps[i]) {
			for (size_t k = 0; k < i; k++)
				profile_free(ps[k]);
			free(ps);
			return NULL;
		}
		series = series && ps[i]->meta.series && !strcmp(ps[i]->meta.series, ps[0]->meta.series);
	}
	if (series && o->nr_inputs > 1) {
		qsort(ps, o->nr_inputs, sizeof(*ps), by_series_offset);
		for (size_t i = 1; i < o->nr_inputs; i++)
			profile_shift_times(ps[i], ps[i]->meta.series_offset_ns - ps[0]->meta.series_offset_ns);
	}
	all = ps[0];
	for (size_t i = 1; i < o->nr_inputs; i++) {
		profile_merge(all, ps[i]);
		profile_free(ps[i]);
	}
	free(ps);
	return all;
}

static int do_report(struct report_cmd_opts *o)
{
	struct profile *p = load(o);
	struct output out;
	bool wall, folded;
	int ret;

	if (!p)
		return EXIT_FAIL;
	if (!p->nr_samples && (o->ro.format != REPORT_REGIONS || !p->nr_regions)) {
		print_error("no samples in %s%s%s; the profiled command may have been too short: record a longer run or raise -F",
		      o->nr_inputs == 1 ? "'" : "the given files", o->nr_inputs == 1 ? o->inputs[0] : "",
		      o->nr_inputs == 1 ? "'" : "");
		profile_free(p);
		return EXIT_FAIL;
	}
	if (output_open(&out, o->output) < 0) {
		profile_free(p);
		return EXIT_FAIL;
	}
	o->ro.inputs = o->inputs;
	o->ro.nr_inputs = o->nr_inputs;
	ret = report_write(out.fp, p, &o->ro);
	wall = p->meta.mode && !strcmp(p->meta.mode, "wall");
	folded = o->ro.frames != REPORT_FRAMES_ALL && report_has_python_frames(p);
	profile_free(p);
	if (ret == -ESRCH) {
		output_abort(&out);
		print_error("no region is named '%s'; 'proftool report --format regions' lists them", o->ro.filter.region);
		return EXIT_FAIL;
	}
	if (ret == -ENOMSG) {
		output_abort(&out);
		print_error("the profile has no regions: mark them in the program (<proftool.h>, the proftool "
		      "Python module) and record with --regions auto (the default)");
		return EXIT_FAIL;
	}
	if (ret == -ENXIO) {
		output_abort(&out);
		print_error("no sample's innermost frame is in module '%s'; 'proftool report --format groups --group-by module%s' lists them",
			    o->ro.filter.module, folded ? " --frames all" : "");
		return EXIT_FAIL;
	}
	if (ret == -ENOEXEC) {
		output_abort(&out);
		print_error("--split needs Python frames and the profile has none: record a Python program with --python auto (the default)");
		return EXIT_FAIL;
	}
	if (ret == -ENODATA && o->ro.by_region) {
		output_abort(&out);
		print_error("no sample was taken inside a region; 'proftool report --format regions' lists them");
		return EXIT_FAIL;
	}
	if (ret == -ENOENT) {
		output_abort(&out);
		print_error("no function matches --match '%s'; '--format table --limit 0' lists them", o->ro.match ? o->ro.match : "");
		return EXIT_FAIL;
	}
	if (ret == -ENODATA && o->ro.filter.state && !wall) {
		output_abort(&out);
		print_error("--state needs a wall-mode profile, which knows what each thread was doing; record with --mode wall");
		return EXIT_FAIL;
	}
	if (ret == -ENODATA) {
		output_abort(&out);
		print_error("no samples match the --pid/--tid/--comm/--module/--time-range/--state/--region filters; 'proftool report --per-thread' lists the threads");
		return EXIT_FAIL;
	}
	return output_finish(&out, ret);
}

int cmd_report(int argc, char **argv)
{
	struct report_cmd_opts o = { 0 };
	int ret = parse_options(argc, argv, &o);

	if (!ret)
		ret = do_report(&o);
	else if (ret < 0)
		ret = EXIT_OK;
	free(o.inputs);
	return ret;
}
