// SPDX-License-Identifier: MIT
/*
 * Folded stacks, the text every stack-made format starts from (folded,
 * svg, html, diff): a line per distinct stack of the kept samples, frames
 * named by report_func_name(), region paths as frames when asked.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "report.h"

/* Writes a frame name with the separators of the folded format made harmless. */
static void put_frame(FILE *out, const char *name)
{
	for (const char *c = name; *c; c++)
		fputc(*c == ';' ? ':' : (*c == '\n' || *c == '\r') ? ' ' : *c, out);
}

static void put_stack(FILE *out, const struct profile *p, const char *const *names, uint32_t s,
		      uint32_t *scratch)
{
	size_t n = 0;

	for (uint32_t a = s; a != PROFILE_NONE; a = p->stacks[a].parent)
		scratch[n++] = a;
	while (n--) {
		put_frame(out, names[p->locs[p->stacks[scratch[n]].loc].func]);
		if (n)
			fputc(';', out);
	}
}

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct report_folded *)a)->text, ((const struct report_folded *)b)->text);
}

/* The kept samples of one stack node, in one region when the region's frames are drawn. */
struct stack_group {
	uint32_t region, stack;
	uint64_t n, ns;
};

static int group_cmp(const void *a, const void *b)
{
	const struct stack_group *x = a, *y = b;

	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The groups of the kept samples: by stack node, and BY_REGION also by region. */
static struct stack_group *stack_groups(const struct profile *p, const bool *keep, bool by_region,
					size_t *nr_out)
{
	struct stack_group *g;
	size_t nr = 0, out = 0;

	if (!by_region) {
		uint64_t *count, *weight;

		report_stack_counts(p, keep, &count, &weight, NULL);
		g = xmalloc(st_mult(p->nr_stacks + 1, sizeof(*g)));
		for (size_t s = 0; s < p->nr_stacks; s++)
			if (count[s])
				g[nr++] = (struct stack_group){ PROFILE_NONE, s, count[s], weight[s] };
		free(count);
		free(weight);
		*nr_out = nr;
		return g;
	}
	g = xmalloc(st_mult(p->nr_samples + 1, sizeof(*g)));
	for (size_t i = 0; i < p->nr_samples; i++)
		if (!keep || keep[i])
			g[nr++] = (struct stack_group){ p->samples[i].region, p->samples[i].stack, 1,
							p->samples[i].weight_ns };
	QSORT(g, nr, group_cmp);
	for (size_t i = 0; i < nr; i++) {
		if (out && !group_cmp(&g[out - 1], &g[i])) {
			g[out - 1].n += g[i].n;
			g[out - 1].ns += g[i].ns;
		} else {
			g[out++] = g[i];
		}
	}
	*nr_out = out;
	return g;
}

/* Stacks that differ only in line numbers have the same frame names and become one line. */
struct report_folded *report_folded_lines(const struct profile *p, const bool *keep,
					  const char *prefix, bool region_frames, size_t *nr_out)
{
	const char **names = report_func_names(p);
	struct report_folded *lines;
	size_t nr, out = 0;
	struct stack_group *g = stack_groups(p, keep, region_frames, &nr);
	char **frames = region_frames ? xcalloc(p->nr_region_nodes + 1, sizeof(*frames)) : NULL;
	uint32_t *scratch;
	uint32_t maxdepth = 1;

	for (size_t s = 0; s < p->nr_stacks; s++)
		if (p->stacks[s].depth > maxdepth)
			maxdepth = p->stacks[s].depth;
	scratch = xmalloc(st_mult(maxdepth + 1, sizeof(*scratch)));
	lines = xcalloc(nr + 1, sizeof(*lines));
	for (size_t i = 0; i < nr; i++) {
		uint32_t r = g[i].region;
		size_t len;
		FILE *m = open_memstream(&lines[i].text, &len);

		if (!m)
			xmalloc(SIZE_MAX); /* reports out of memory */
		if (prefix) {
			put_frame(m, prefix);
			fputc(';', m);
		}
		if (r != PROFILE_NONE) {
			if (!frames[r])
				frames[r] = report_region_frames(p, r);
			fputs(frames[r], m);
			fputc(';', m);
		}
		put_stack(m, p, names, g[i].stack, scratch);
		fclose(m);
		lines[i].count = g[i].n;
		lines[i].weight_ns = g[i].ns;
	}
	QSORT(lines, nr, folded_cmp);
	for (size_t i = 0; i < nr; i++) {
		struct report_folded l = lines[i];

		while (i + 1 < nr && !strcmp(l.text, lines[i + 1].text)) {
			free(lines[++i].text);
			l.count += lines[i].count;
			l.weight_ns += lines[i].weight_ns;
		}
		lines[out++] = l;
	}
	if (frames)
		for (size_t r = 0; r < p->nr_region_nodes; r++)
			free(frames[r]);
	free(frames);
	free(scratch);
	free(g);
	report_func_names_free(p, names);
	*nr_out = out;
	return lines;
}

void report_folded_free(struct report_folded *lines, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
}
