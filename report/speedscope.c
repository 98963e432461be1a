// SPDX-License-Identifier: MIT
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one sampled profile per thread, and next to it an evented profile of the
 * thread's regions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "internal.h"
#include "model.h"


/* Appends V in decimal to BUF (room for 20 digits is the caller's business). */
static char *fmt_u64(char *buf, uint64_t v)
{
	char tmp[24], *q = tmp + sizeof(tmp);

	do {
		*--q = '0' + v % 10;
		v /= 10;
	} while (v);
	memcpy(buf, q, tmp + sizeof(tmp) - q);
	return buf + (tmp + sizeof(tmp) - q);
}


/*
 * One frame per function, not per (function, line): speedscope keys frames
 * by index, so per-line frames would split every function into as many
 * boxes in the flame chart and rows in the sandwich view as it has sampled
 * lines. Only the functions of kept samples get a frame; FRAME maps a
 * function index to its frame (PROFILE_NONE: none). The regions' names
 * (of the spans, NR_SPANS at SPANS) come after the functions, a frame per
 * name: *RFRAME maps a region name to its frame.
 */
static uint32_t *write_frames(FILE *out, const struct profile *p, const bool *keep,
			      const struct report_span *spans, size_t nr_spans, uint32_t **rframe)
{
	bool *used = xcalloc(p->nr_stacks + 1, sizeof(*used));
	uint32_t *frame = xmalloc(st_mult(p->nr_funcs + 1, sizeof(*frame)));
	uint32_t nr = 0;
	struct sbuf label = SBUF_INIT;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (keep[i])
			used[p->samples[i].stack] = true;
	/* parents come before their children, so one backward pass marks whole stacks */
	for (size_t s = p->nr_stacks; s-- > 0;)
		if (used[s] && p->stacks[s].parent != PROFILE_NONE)
			used[p->stacks[s].parent] = true;
	for (size_t f = 0; f < p->nr_funcs; f++)
		frame[f] = PROFILE_NONE;
	for (size_t s = 0; s < p->nr_stacks; s++)
		if (used[s])
			frame[p->locs[p->stacks[s].loc].func] = 0;
	fputs("\"shared\":{\"frames\":[", out);
	for (size_t f = 0; f < p->nr_funcs; f++) {
		const struct profile_func *fn = &p->funcs[f];

		if (frame[f] == PROFILE_NONE)
			continue;
		frame[f] = nr;
		fputs(nr++ ? ",\n{\"name\":" : "\n{\"name\":", out);
		report_json_string(out, report_func_name_sb(&label, fn));
		/* without debug info the module is the best "where" there is */
		fputs(",\"file\":", out);
		report_json_string(out, fn->file ? fn->file : fn->module);
		if (fn->file && fn->line)
			fprintf(out, ",\"line\":%" PRIu32, fn->line);
		fputc('}', out);
	}
	*rframe = xmalloc(st_mult(p->nr_region_names + 1, sizeof(**rframe)));
	for (size_t n = 0; n < p->nr_region_names; n++)
		(*rframe)[n] = PROFILE_NONE;
	for (size_t i = 0; i < nr_spans; i++) {
		uint32_t name = p->region_nodes[p->regions[spans[i].region].node].name;

		if ((*rframe)[name] != PROFILE_NONE)
			continue;
		(*rframe)[name] = nr;
		fputs(nr++ ? ",\n{\"name\":" : "\n{\"name\":", out);
		report_json_string(out, report_region_label_sb(&label, p, name));
		fputc('}', out);
	}
	fputs("]},\n", out);
	sbuf_release(&label);
	free(used);
	return frame;
}

/* One event of an evented profile: opening (O) or closing (C) FRAME at AT ns. */
static void put_event(FILE *out, char type, uint32_t frame, uint64_t at, bool first)
{
	fprintf(out, "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}", first ? "" : ",\n",
		type, frame, at);
}

/*
 * The evented profile of one thread's regions: SPANS[FROM..TO), nested as
 * report_region_spans() leaves them, so that every close matches the
 * innermost open region and the times never go back, as speedscope wants.
 */
static void write_regions(FILE *out, const struct profile *p, uint32_t t, const struct report_span *spans,
			  size_t from, size_t to, const uint32_t *rframe)
{
	const struct profile_thread *th = &p->threads[t];
	size_t *stack = xmalloc(st_mult(to - from + 1, sizeof(*stack))), depth = 0;
	uint64_t end = spans[from].end_ns;
	bool first = true;

#define FRAME_OF(i) rframe[p->region_nodes[p->regions[spans[i].region].node].name]
	for (size_t i = from; i < to; i++)
		if (spans[i].end_ns > end)
			end = spans[i].end_ns;
	fputs("{\"type\":\"evented\",\"name\":\"", out);
	report_json_chars(out, th->comm);
	fprintf(out, " (pid %" PRId32 ", tid %" PRId32 ") regions\",\"unit\":\"nanoseconds\",\"startValue\":%"
		PRIu64 ",\"endValue\":%" PRIu64 ",\n\"events\":[", p->procs[th->process].pid, th->tid,
		spans[from].start_ns, end);
	for (size_t i = from; i < to; i++) {
		while (depth && stack[depth - 1] != spans[i].parent) {
			depth--;
			put_event(out, 'C', FRAME_OF(stack[depth]), spans[stack[depth]].end_ns, false);
		}
		put_event(out, 'O', FRAME_OF(i), spans[i].start_ns, first);
		first = false;
		stack[depth++] = i;
	}
	while (depth--)
		put_event(out, 'C', FRAME_OF(stack[depth]), spans[stack[depth]].end_ns, false);
#undef FRAME_OF
	fputs("]}", out);
	free(stack);
}

/* The sampled profile of one thread: its samples N, listed in ORDER. */
static void write_thread(FILE *out, const struct profile *p, uint32_t t, const size_t *order,
			 size_t n, const uint32_t *frame, uint32_t *scratch, char *line)
{
	const struct profile_thread *th = &p->threads[t];
	uint64_t start = p->samples[order[0]].time_ns, weight = 0;

	for (size_t k = 0; k < n; k++)
		weight += p->samples[order[k]].weight_ns;
	fputs("{\"type\":\"sampled\",\"name\":\"", out);
	report_json_chars(out, th->comm);
	fprintf(out, " (pid %" PRId32 ", tid %" PRId32 ")\"", p->procs[th->process].pid, th->tid);
	/*
	 * speedscope lays a sampled profile's samples end to end by weight and
	 * takes the longer of that and endValue - startValue as the width of
	 * the time-ordered view. Ending at the last sample's time would leave an
	 * empty tail that never happened for a thread that was ever off the
	 * CPU, so the end is the start plus the weight of the samples.
	 */
	/* a counting event's weights are events: no time line to lay them on */
	if (report_counts_events(p))
		fprintf(out, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
			weight);
	else
		fprintf(out, ",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
			",\n\"samples\":[", start, start + weight);
	for (size_t k = 0; k < n; k++) {
		char *q = line;
		size_t depth = 0;

		for (uint32_t a = p->samples[order[k]].stack; a != PROFILE_NONE; a = p->stacks[a].parent)
			scratch[depth++] = frame[p->locs[p->stacks[a].loc].func];
		if (k)
			*q++ = ',';
		*q++ = '[';
		while (depth--) {
			q = fmt_u64(q, scratch[depth]);
			if (depth)
				*q++ = ',';
		}
		*q++ = ']';
		*q++ = '\n';
		fwrite(line, 1, q - line, out);
	}
	fputs("],\n\"weights\":[", out);
	for (size_t k = 0; k < n; k++) {
		char *q = line;

		if (k)
			*q++ = ',';
		q = fmt_u64(q, p->samples[order[k]].weight_ns);
		fwrite(line, 1, q - line, out);
	}
	fputs("]}", out);
}

int report_write_speedscope(FILE *out, const struct profile *p, const struct report_filter *f,
			    const bool *keep)
{
	size_t *start, *order = report_samples_by_thread(p, keep, &start);
	bool *shown = report_regions_shown(p, f, NULL);
	size_t nr_spans, sp = 0;
	struct report_span *spans = report_region_spans(p, shown, &nr_spans);
	uint32_t *frame, *rframe, *scratch;
	uint32_t maxdepth = 1;
	size_t active = 0, best = 0, nr = 0;
	char *line;

	/* the busiest thread is the one speedscope opens with; a thread's regions come after it */
	for (size_t t = 0; t < p->nr_threads; t++) {
		size_t n = start[t + 1] - start[t], from = sp;

		while (sp < nr_spans && spans[sp].thread == t)
			sp++;
		if (n > best) {
			best = n;
			active = nr;
		}
		nr += !!n + (sp > from);
	}
	for (size_t s = 0; s < p->nr_stacks; s++)
		if (p->stacks[s].depth > maxdepth)
			maxdepth = p->stacks[s].depth;
	scratch = xmalloc(st_mult(maxdepth, sizeof(*scratch)));
	/* a sample's line: a comma, brackets, a newline and per frame 10 digits and a comma */
	line = xmalloc(st_mult(maxdepth + 1, 11) + 8);

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"name\":", out);
	report_json_string(out, p->meta.command ? p->meta.command : "proftool profile");
	fprintf(out, ",\n\"exporter\":\"proftool %s\",\n\"activeProfileIndex\":%zu,\n",
		PROFTOOL_VERSION, active);
	frame = write_frames(out, p, keep, spans, nr_spans, &rframe);
	fputs("\"profiles\":[", out);
	nr = sp = 0;
	for (size_t t = 0; t < p->nr_threads; t++) {
		size_t n = start[t + 1] - start[t], from = sp;

		if (n) {
			fputs(nr++ ? ",\n" : "\n", out);
			write_thread(out, p, t, order + start[t], n, frame, scratch, line);
		}
		while (sp < nr_spans && spans[sp].thread == t)
			sp++;
		if (sp > from) {
			fputs(nr++ ? ",\n" : "\n", out);
			write_regions(out, p, t, spans, from, sp, rframe);
		}
	}
	fputs("]}\n", out);

	free(line);
	free(scratch);
	free(frame);
	free(rframe);
	free(order);
	free(start);
	free(shown);
	free(spans);
	return ferror(out) ? -EIO : 0;
}
