// SPDX-License-Identifier: MIT
/* Self-contained interactive flame graphs, SVG or HTML, from folded stacks. */
#include "internal.h"
#include "model.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/*
 * The graph is laid out here, once, and written as plain SVG: one <g> per
 * frame holding a <title> (the tooltip), a <rect> and a <text>, so it
 * reads without scripts (an image viewer, an XML parser, a test). The
 * embedded script only moves and hides what is already there: zooming,
 * searching and the details line. Each <g> carries its frame's start and
 * width in samples (data-x, data-n) so that zooming is exact however far
 * it goes.
 *
 * Frames are merged by name along the path from the root, siblings ordered
 * by name (byte order), like flamegraph.pl: the same input always gives
 * the same picture, and a function keeps its place from one profile to the
 * next. Widths are in samples; a node's self samples are the gap at the
 * right of its children.
 */

#define NONE		UINT32_MAX
#define WIDTH		1200	/* of the picture, in SVG user units (px) */
#define PAD		10	/* left and right margin */
#define PLOT		(WIDTH - 2 * PAD)
#define FRAME_H		16	/* one row of frames; the rect is a pixel shorter */
/*
 * Advance of one character of the monospace font at the 12px of frame_css
 * (DejaVu Sans Mono and Menlo: 0.602 em), a little generous so labels never
 * overflow. The script uses the same value when it refits labels after a zoom.
 */
#define CHAR_W		7.3
/* Frames under 1/MIN_SHARE of all samples are left out of the drawing. */
#define MIN_SHARE	1000

struct fnode {
	const char *name;	/* into the caller's folded text, not terminated */
	uint32_t len;
	uint32_t parent;	/* NONE for the root */
	uint32_t child;		/* first child by name, NONE for a leaf */
	uint32_t next;		/* next sibling by name, NONE for the last */
	uint32_t depth;		/* 0 for the root "all" */
	uint64_t total;		/* samples with this path (inclusive) */
	uint64_t self;		/* samples ending here */
	uint64_t base;		/* diff: inclusive samples in the base profile */
	uint64_t x;		/* samples left of this frame: where it starts */
};

struct flame {
	struct fnode *nodes;	/* nodes[0] is "all"; a parent's index is below its children's */
	size_t nr, alloc;
	struct idx index;	/* (parent, name) -> node */
	uint64_t min_count;	/* frames with fewer samples are not drawn */
	uint32_t max_depth;	/* deepest drawn frame */
	double scale;		/* px per sample */
	double share_total;	/* denominators of the shares shown, never 0 */
	double share_base;
	double diff_scale;	/* the |change of share| drawn fully saturated */
	int top;		/* y of the top of the deepest row */
};

/* ---- building the tree ---- */

static uint64_t name_hash(uint32_t parent, const char *name, size_t len)
{
	return hash_combine(hash_bytes(name, len, 0), parent);
}

/* The child of PARENT called NAME, added when it is new; NONE when there are too many nodes. */
static uint32_t child_of(struct flame *fl, uint32_t parent, const char *name, size_t len)
{
	uint64_t h = name_hash(parent, name, len);
	size_t pos = 0;
	uint32_t id;

	while ((id = idx_next(&fl->index, h, &pos)) != IDX_NONE) {
		const struct fnode *nd = &fl->nodes[id];

		if (nd->parent == parent && nd->len == len && !memcmp(nd->name, name, len))
			return id;
	}
	/* NONE and IDX_NONE stay free; lengths must fit the node's field */
	if (fl->nr >= UINT32_MAX - 1 || len > UINT32_MAX)
		return NONE;
	ALLOC_GROW(fl->nodes, fl->nr + 1, fl->alloc);
	id = fl->nr++;
	fl->nodes[id] = (struct fnode){
		.name = name, .len = len, .parent = parent, .child = NONE, .next = NONE,
		.depth = fl->nodes[parent].depth + 1,
	};
	idx_insert(&fl->index, h, id);
	return id;
}

/*
 * Adds every stack to the tree, frame by frame from the root. Hashing each
 * (parent, name) pair keeps this linear in the size of the input however
 * deep or numerous the stacks are.
 */
static int add_stacks(struct flame *fl, const struct flame_input *in)
{
	fl->nodes[0] = (struct fnode){
		.name = "all", .len = 3, .parent = NONE, .child = NONE, .next = NONE,
	};
	fl->nr = 1;
	for (size_t i = 0; i < in->nr_stacks; i++) {
		const struct flame_stack *s = &in->stacks[i];
		const char *f = s->folded ? s->folded : "";
		uint32_t cur = 0;

		fl->nodes[0].total += s->count;
		fl->nodes[0].base += s->base_count;
		while (*f) {
			const char *end = strchrnul(f, ';');

			cur = child_of(fl, cur, f, end - f);
			if (cur == NONE)
				return -EOVERFLOW;
			fl->nodes[cur].total += s->count;
			fl->nodes[cur].base += s->base_count;
			f = *end ? end + 1 : end;
		}
		fl->nodes[cur].self += s->count;
	}
	return 0;
}

static int by_name(const void *a, const void *b, void *arg)
{
	const struct fnode *nodes = arg;
	const struct fnode *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);

	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	/* equal names belong to different parents: any fixed order will do */
	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

/*
 * Links each node's children in name order, then gives every node its
 * start: a parent's index is below its children's, so one pass in index
 * order places parents before their children.
 */
static void lay_out(struct flame *fl)
{
	uint32_t *order = xmalloc(st_mult(fl->nr, sizeof(*order)));
	size_t n = 0;

	for (size_t i = 1; i < fl->nr; i++)
		order[n++] = i;
	QSORT_R(order, n, by_name, fl->nodes);
	/* prepending from the last name to the first leaves each list in name order */
	while (n--) {
		struct fnode *nd = &fl->nodes[order[n]];

		nd->next = fl->nodes[nd->parent].child;
		fl->nodes[nd->parent].child = order[n];
	}
	free(order);
	for (size_t i = 0; i < fl->nr; i++) {
		uint64_t x = fl->nodes[i].x;

		for (uint32_t c = fl->nodes[i].child; c != NONE; c = fl->nodes[c].next) {
			fl->nodes[c].x = x;
			x += fl->nodes[c].total;
		}
	}
}

/* ---- which frames are drawn ---- */

/*
 * A child never has more samples than its parent, so "has at least
 * min_count samples" alone decides: every ancestor of a drawn frame is
 * drawn too. The root always is, even with no samples.
 */
static bool drawn(const struct flame *fl, uint32_t id)
{
	return !id || fl->nodes[id].total >= fl->min_count;
}

/* ID or the first sibling after it that is drawn; NONE when none is. */
static uint32_t drawn_from(const struct flame *fl, uint32_t id)
{
	while (id != NONE && !drawn(fl, id))
		id = fl->nodes[id].next;
	return id;
}

/*
 * The drawn frame after ID in depth-first order, NONE after the last. A
 * walk over the child and sibling links instead of recursion: stacks can
 * be thousands of frames deep, and each link is followed at most once.
 */
static uint32_t next_drawn(const struct flame *fl, uint32_t id)
{
	uint32_t c = drawn_from(fl, fl->nodes[id].child);

	for (; c == NONE && id; id = fl->nodes[id].parent)
		c = drawn_from(fl, fl->nodes[id].next);
	return c;
}

static double change(const struct flame *fl, const struct fnode *nd)
{
	return nd->total / fl->share_total - nd->base / fl->share_base;
}

/* Sizes the picture: the samples per frame drawn, the depth, the diff colour scale. */
static void measure(struct flame *fl, const struct flame_input *in)
{
	uint64_t all = fl->nodes[0].total, base_all = fl->nodes[0].base;

	fl->min_count = all / MIN_SHARE + (all % MIN_SHARE != 0);
	if (!fl->min_count)
		fl->min_count = 1;
	fl->scale = all ? (double)PLOT / all : 0;
	/* the caller's totals when given, so that shares match its other output */
	fl->share_total = in->total ? in->total : all ? all : 1;
	fl->share_base = in->base_total ? in->base_total : base_all ? base_all : 1;
	/*
	 * The largest change drawn is fully saturated, but never less than a
	 * tenth of a percentage point, or noise in two near-identical
	 * profiles would be painted deep red and blue.
	 */
	fl->diff_scale = 0.001;
	for (size_t i = 1; i < fl->nr; i++) {
		double d;

		if (!drawn(fl, i))
			continue;
		if (fl->nodes[i].depth > fl->max_depth)
			fl->max_depth = fl->nodes[i].depth;
		d = change(fl, &fl->nodes[i]);
		if (d < 0)
			d = -d;
		if (in->diff && d > fl->diff_scale)
			fl->diff_scale = d;
	}
}

/* ---- text ---- */

static void put_str(FILE *out, const char *s)
{
	report_xml_text(out, s, strlen(s), SIZE_MAX);
}

/* ---- colours ---- */

static bool starts_with(const struct fnode *nd, const char *prefix)
{
	size_t n = strlen(prefix);

	return nd->len >= n && !memcmp(nd->name, prefix, n);
}

/* "[unknown]", or "module+0xOFFSET" for code without a symbol. */
static bool is_unknown(const struct fnode *nd)
{
	size_t i = nd->len;

	if (starts_with(nd, "[unknown]"))
		return true;
	while (i && isxdigit((unsigned char)nd->name[i - 1]))
		i--;
	return i < nd->len && i >= 3 && !memcmp(nd->name + i - 3, "+0x", 3);
}

struct rgb {
	int r, g, b;
};

/* A channel from LO to LO + SPAN as V goes from 0 to 1. */
static int channel(int lo, int span, double v)
{
	return lo + (int)(span * v + 0.5);
}

/*
 * Warm colours for code, chosen by a hash of the name so that a function
 * has the same colour everywhere and in every graph; kernel frames are
 * blue-green, unknown ones grey and regions (--region-frames) violet so
 * they stand apart.
 */
static struct rgb frame_colour(const struct fnode *nd, uint32_t id)
{
	uint64_t h = hash_bytes(nd->name, nd->len, 0x666c616d65ull);
	double v1 = (h & 0xffff) / 65535.0, v2 = (h >> 16 & 0xffff) / 65535.0;
	double v3 = (h >> 32 & 0xffff) / 65535.0;

	if (!id)
		return (struct rgb){ 236, 226, 210 };
	if (starts_with(nd, REPORT_REGION_FRAME))
		return (struct rgb){ channel(150, 40, v1), channel(120, 40, v2), channel(215, 40, v3) };
	if (starts_with(nd, "[kernel]"))
		return (struct rgb){ channel(70, 50, v1), channel(175, 50, v2), channel(175, 50, v2) };
	if (is_unknown(nd))
		return (struct rgb){ channel(175, 30, v1), channel(175, 30, v1), channel(175, 30, v1) };
	return (struct rgb){ channel(210, 45, v3), channel(70, 150, v1), channel(20, 45, v2) };
}

/* Diff: red where the share grew, blue where it shrank, white where it held. */
static struct rgb diff_colour(const struct flame *fl, const struct fnode *nd)
{
	double d = change(fl, nd) / fl->diff_scale;
	int fade;

	if (d > 1)
		d = 1;
	if (d < -1)
		d = -1;
	fade = channel(0, 170, d < 0 ? -d : d);
	if (d >= 0)
		return (struct rgb){ 255, 255 - fade, 255 - fade };
	return (struct rgb){ 255 - fade, 255 - fade, 255 };
}

/* ---- writing ---- */

static void put_seconds(FILE *out, const char *what, uint64_t samples, const struct flame_input *in)
{
	if (in->event)
		fprintf(out, "%s %" PRIu64 " %s", what, samples * in->period_ns, in->event);
	else
		fprintf(out, "%s %.3f s", what, samples * (double)in->period_ns / 1e9);
}

/*
 * The tooltip: the name on the first line (the script reads it back from
 * there, for searching), then the numbers.
 */
static void put_tooltip(FILE *out, const struct flame *fl, const struct flame_input *in,
			const struct fnode *nd)
{
	report_xml_text(out, nd->name, nd->len, SIZE_MAX);
	fprintf(out, "\n%" PRIu64 " sample%s, %.2f%% of all", nd->total, nd->total == 1 ? "" : "s",
		100.0 * nd->total / fl->share_total);
	if (in->diff)
		fprintf(out, "\nbase: %" PRIu64 " sample%s, %.2f%%; change %+.2f points", nd->base,
			nd->base == 1 ? "" : "s", 100.0 * nd->base / fl->share_base,
			100.0 * change(fl, nd));
	fputc('\n', out);
	if (in->period_ns) {
		put_seconds(out, "total", nd->total, in);
		put_seconds(out, ", self", nd->self, in);
		fprintf(out, " (%" PRIu64 " sample%s)", nd->self, nd->self == 1 ? "" : "s");
	} else {
		fprintf(out, "self %" PRIu64 " sample%s", nd->self, nd->self == 1 ? "" : "s");
	}
}

static void put_frame(FILE *out, const struct flame *fl, const struct flame_input *in, uint32_t id)
{
	const struct fnode *nd = &fl->nodes[id];
	double x = PAD + nd->x * fl->scale, w = id ? nd->total * fl->scale : PLOT;
	int y = fl->top + (int)(fl->max_depth - nd->depth) * FRAME_H;
	struct rgb c = in->diff ? diff_colour(fl, nd) : frame_colour(nd, id);
	double room = (w - 6) / CHAR_W;

	fprintf(out, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-n=\"%" PRIu64 "\"><title>",
		nd->x, nd->total);
	put_tooltip(out, fl, in, nd);
	fprintf(out, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, c.r, c.g, c.b, x + 3, y + 11.5);
	report_xml_text(out, nd->name, nd->len, room > 0 ? (size_t)room : 0);
	fputs("</text></g>\n", out);
}

static void put_frames(FILE *out, const struct flame *fl, const struct flame_input *in)
{
	for (uint32_t id = 0; id != NONE; id = next_drawn(fl, id))
		put_frame(out, fl, in, id);
}

/*
 * The style sheets and the script are the files in report/assets/ as they
 * are, built in by the assembler (the Makefile makes flame.o again when
 * one changes), each followed by a NUL; none may hold "]]>", which would
 * end the SVG's CDATA. Their labels are not .globl: like static arrays,
 * they are this file's alone.
 */
#define ASSET(name, file)                                               \
	".pushsection .rodata, \"a\"\n"                                 \
	".type " name ", STT_OBJECT\n"                                  \
	name ":\n"                                                      \
	".incbin \"report/assets/" file "\"\n"                          \
	".byte 0\n"                                                     \
	".size " name ", . - " name "\n"                                \
	".popsection\n"
__asm__(ASSET("frame_css", "flame.css")
	ASSET("svg_css", "flame-svg.css")
	ASSET("html_css", "flame-html.css")
	ASSET("script", "flame.js"));

#define ASSET_DECL extern const char __attribute__((visibility("hidden")))

/* Frame styles, the same in both documents. .m: matches the search; .a: above the zoom; .h: hidden */
ASSET_DECL frame_css[];
/* The SVG's own styles, and the page's */
ASSET_DECL svg_css[];
ASSET_DECL html_css[];

/*
 * The script, shared by both documents: it finds #fg and the controls by
 * id, and the search control is a prompt in the SVG and a text field in
 * the page. Frames are told apart by their place in samples (data-x,
 * data-n) and their row (y): the zoomed frame's ancestors are the lower
 * frames that span it, its descendants the higher ones inside it.
 */
ASSET_DECL script[];

/* The opening <svg> tag; the script reads the geometry from its data- attributes. */
static void put_svg_open(FILE *out, const struct flame_input *in, int height)
{
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" id=\"fg\"%s "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"data-pad=\"%d\" data-plot=\"%d\" data-cw=\"%.2f\">\n",
		in->diff ? " class=\"diff\"" : "", WIDTH, height, WIDTH, height, PAD, PLOT, CHAR_W);
}

/* The diff legend: what the colours mean and how strong the strongest is. */
static void put_legend(FILE *out, const struct flame *fl)
{
	fprintf(out, "red: share of samples grew, blue: shrank, by up to %.2f points; "
		"widths are the new profile", 100.0 * fl->diff_scale);
}

static void write_svg(FILE *out, struct flame *fl, const struct flame_input *in)
{
	int rows = fl->max_depth + 1, height;

	fl->top = in->diff ? 70 : 54;
	height = fl->top + rows * FRAME_H + 30;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", out);
	put_svg_open(out, in, height);
	fputs("<title>", out);
	put_str(out, in->title);
	fprintf(out, "</title>\n<style><![CDATA[\n%s%s]]></style>\n", frame_css, svg_css);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"#fbfbf8\"/>\n", out);
	fprintf(out, "<text class=\"title\" x=\"%d\" y=\"24\">", WIDTH / 2);
	put_str(out, in->title);
	fputs("</text>\n", out);
	if (in->subtitle) {
		/* a command line can be long, and SVG text does not wrap */
		fprintf(out, "<text class=\"sub\" x=\"%d\" y=\"42\">", WIDTH / 2);
		report_xml_text(out, in->subtitle, strlen(in->subtitle), (size_t)(PLOT / CHAR_W));
		fputs("</text>\n", out);
	}
	if (in->diff) {
		fprintf(out, "<text class=\"sub\" x=\"%d\" y=\"58\">", WIDTH / 2);
		put_legend(out, fl);
		fputs("</text>\n", out);
	}
	fprintf(out, "<text id=\"fg-reset\" class=\"ctl off\" x=\"%d\" y=\"24\">Reset zoom</text>\n"
		"<text id=\"fg-search\" class=\"ctl end\" x=\"%d\" y=\"24\">Search</text>\n",
		PAD, WIDTH - PAD);
	put_frames(out, fl, in);
	fprintf(out, "<text id=\"fg-details\" x=\"%d\" y=\"%d\"></text>\n"
		"<text id=\"fg-matched\" class=\"end\" x=\"%d\" y=\"%d\"></text>\n",
		PAD, height - 10, WIDTH - PAD, height - 10);
	fprintf(out, "<script><![CDATA[\n%s]]></script>\n</svg>\n", script);
}

static void write_html(FILE *out, struct flame *fl, const struct flame_input *in)
{
	int height;

	fl->top = 2;
	height = fl->top + (fl->max_depth + 1) * FRAME_H + 2;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", out);
	put_str(out, in->title);
	fprintf(out, "</title>\n<style>\n%s%s</style>\n</head>\n<body>\n<header>\n<h1>",
		html_css, frame_css);
	put_str(out, in->title);
	fputs("</h1>\n", out);
	if (in->subtitle) {
		fputs("<p class=\"sub\">", out);
		put_str(out, in->subtitle);
		fputs("</p>\n", out);
	}
	if (in->diff) {
		fputs("<p class=\"sub\">", out);
		put_legend(out, fl);
		fputs("</p>\n", out);
	}
	fputs("<div class=\"bar\">"
	      "<input id=\"fg-search\" type=\"search\" placeholder=\"Search: regular expression (Ctrl-F)\" "
	      "aria-label=\"Search frames\" spellcheck=\"false\">"
	      "<button id=\"fg-reset\" class=\"off\" type=\"button\">Reset zoom</button>"
	      "<span id=\"fg-matched\"></span></div>\n"
	      "<div id=\"fg-details\"></div>\n</header>\n<main>\n", out);
	put_svg_open(out, in, height);
	put_frames(out, fl, in);
	fprintf(out, "</svg>\n</main>\n<script>\n%s</script>\n</body>\n</html>\n", script);
}

int report_write_flame(FILE *out, const struct flame_input *in, bool html)
{
	struct flame fl = { .index = IDX_INIT };
	int ret;

	if (!out || !in || !in->title || (in->nr_stacks && !in->stacks))
		return -EINVAL;
	ALLOC_GROW(fl.nodes, 1, fl.alloc);
	ret = add_stacks(&fl, in);
	if (ret < 0)
		goto out;
	lay_out(&fl);
	measure(&fl, in);
	if (html)
		write_html(out, &fl, in);
	else
		write_svg(out, &fl, in);
	ret = ferror(out) ? -EIO : 0;
out:
	idx_release(&fl.index);
	free(fl.nodes);
	return ret;
}

int report_write_flame_profile(FILE *out, const struct profile *p, const bool *keep, bool html,
			       bool region_frames)
{
	size_t nr;
	struct report_folded *lines = report_folded_lines(p, keep, NULL, region_frames, &nr);
	struct flame_stack *stacks = xcalloc(nr + 1, sizeof(*stacks));
	struct flame_input in = {
		.title = "Flame graph",
		.period_ns = p->meta.period_ns,
		.event = report_counts_events(p) ? p->meta.event : NULL,
		.stacks = stacks,
		.nr_stacks = nr,
	};
	const char *cmd = p->meta.command && *p->meta.command ? p->meta.command : NULL;
	char *sub;
	size_t len;
	int ret;

	for (size_t i = 0; i < nr; i++) {
		stacks[i].folded = lines[i].text;
		stacks[i].count = lines[i].count;
		in.total += lines[i].count;
	}
	len = snprintf(NULL, 0, "%s%s%" PRIu64 " samples", cmd ? cmd : "", cmd ? ", " : "", in.total);
	sub = xmalloc(len + 1);
	snprintf(sub, len + 1, "%s%s%" PRIu64 " samples", cmd ? cmd : "", cmd ? ", " : "", in.total);
	in.subtitle = sub;
	ret = report_write_flame(out, &in, html);
	free(sub);
	free(stacks);
	report_folded_free(lines, nr);
	return ret;
}
