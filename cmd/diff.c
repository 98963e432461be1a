// SPDX-License-Identifier: MIT
/* proftool diff: what changed between two profiles. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "report/report.h"

static const char diff_usage[] =
	"usage: proftool diff [OPTIONS] BASE NEW\n"
	"\n"
	"Compares two profiles: which functions take a bigger or smaller share of\n"
	"the samples in NEW than in BASE.\n"
	"\n"
	"  --format FMT         table (default: self and total shares in both, and\n"
	"                       the change in points, largest change first); folded\n"
	"                       (each stack with its BASE and NEW counts, the input of\n"
	"                       flamegraph.pl); svg or html (a differential flame graph:\n"
	"                       NEW's stacks, red where a frame grew, blue where it shrank)\n"
	"  --limit N            rows in the table; 0 shows all (default 30)\n"
	"  --frames VIEW        how processes with Python frames are shown: mixed\n"
	"                       (default), python or all, as for proftool report\n"
	"  -o OUT               write to OUT instead of standard output\n"
	"  -h, --help           show this help\n";

enum {
	OPT_FORMAT = 256,
	OPT_LIMIT,
	OPT_FRAMES,
};

static const struct option diff_options[] = {
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "frames", required_argument, NULL, OPT_FRAMES },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct diff_cmd_opts {
	struct report_diff_opts ro;
	const char *output;
};

static int parse_options(int argc, char **argv, struct diff_cmd_opts *o)
{
	unsigned long v;
	int c;

	o->ro.limit = 30;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", diff_options, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (report_format_parse(optarg, &o->ro.format) < 0 ||
			    (o->ro.format != REPORT_TABLE && o->ro.format != REPORT_FOLDED &&
			     o->ro.format != REPORT_SVG && o->ro.format != REPORT_HTML))
				return usage_error("diff", "unknown diff format '%s' (use table, folded, svg or html)", optarg);
			break;
		case OPT_LIMIT:
			if (!parse_ulong(optarg, 0, SIZE_MAX, &v))
				return usage_error("diff", "--limit must be a whole number, not '%s'", optarg);
			o->ro.limit = v;
			break;
		case OPT_FRAMES:
			if (report_frames_parse(optarg, &o->ro.frames) < 0)
				return usage_error("diff", "--frames takes mixed, python or all, not '%s'", optarg);
			break;
		case 'o':
			if (!*optarg)
				return usage_error("diff", "-o needs a file name");
			o->output = optarg;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return -1;
		case ':':
			return usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("diff", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return usage_error("diff", "give two profiles, BASE and NEW (got %d)", argc - optind);
	o->ro.base_name = argv[optind];
	o->ro.new_name = argv[optind + 1];
	return 0;
}

static int do_diff(struct diff_cmd_opts *o)
{
	struct profile *base = read_profile(o->ro.base_name), *new = NULL;
	struct output out;
	int ret = EXIT_FAIL;

	if (!base || !(new = read_profile(o->ro.new_name)))
		goto done;
	if (!base->nr_samples || !new->nr_samples) {
		print_error("no samples in '%s'; record a longer run or raise -F",
		      base->nr_samples ? o->ro.new_name : o->ro.base_name);
		goto done;
	}
	if (output_open(&out, o->output) == 0)
		ret = output_finish(&out, report_write_diff(out.fp, base, new, &o->ro));
done:
	profile_free(base);
	profile_free(new);
	return ret;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_cmd_opts o = { 0 };
	int ret = parse_options(argc, argv, &o);

	if (!ret)
		ret = do_diff(&o);
	else if (ret < 0)
		ret = EXIT_OK;
	return ret;
}
