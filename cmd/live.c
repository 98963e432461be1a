// SPDX-License-Identifier: MIT
/* Pause, resume, delayed start and snapshots of a recording while it runs. */
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"
#include "profile/profile.h"
#include "sampling.h"

static volatile sig_atomic_t want_snapshot, want_toggle;

void live_signal(int sig)
{
	if (sig == SIGUSR1)
		want_snapshot = 1;
	else if (sig == SIGUSR2)
		want_toggle = 1;
}

int live_parse_control(const char *arg, struct live_opts *o)
{
	const char *comma;

	/* perf's form: fifo:CTL[,ACK] */
	if (strncmp(arg, "fifo:", 5) || !arg[5] || arg[5] == ',')
		return -EINVAL;
	arg += 5;
	comma = strchr(arg, ',');
	free(o->fifo);
	free(o->ack);
	o->fifo = xstrdup(arg);
	if (comma)
		o->fifo[comma - arg] = '\0';
	o->ack = comma && comma[1] ? xstrdup(comma + 1) : NULL;
	return 0;
}

int live_parse_every(const char *arg, struct live_opts *o)
{
	static const struct { char suffix; uint64_t mult; } units[] = {
		{ 'K', 1ull << 10 }, { 'M', 1ull << 20 }, { 'G', 1ull << 30 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || !(v > 0) || v > 1e12)
		return -EINVAL;
	o->every_secs = 0;
	o->every_bytes = 0;
	if (!*end || !strcmp(end, "s")) {
		o->every_secs = v;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if ((end[0] == units[i].suffix || end[0] == units[i].suffix + 32) &&
		    (!end[1] || !strcmp(end + 1, "B") || !strcmp(end + 1, "iB"))) {
			o->every_bytes = (uint64_t)(v * units[i].mult);
			return o->every_bytes ? 0 : -EINVAL;
		}
	}
	return -EINVAL;
}

/* The sampler follows the two switches: off while either is on. */
static void apply(struct sampling_run *r)
{
	struct live *l = &r->live;
	bool off = l->user || l->program;

	if (off == l->off)
		return;
	if (off)
		sampler_disable(r->sampler);
	else
		sampler_enable(r->sampler);
	l->off = off;
}

void live_pause(struct sampling_run *r, bool on)
{
	struct live *l = &r->live;
	uint64_t now = time_mono_ns();

	if (on == l->user)
		return;
	if (on) {
		l->user_since = now;
	} else {
		ALLOC_GROW(l->spans, l->nr_spans + 1, l->alloc_spans);
		l->spans[l->nr_spans++] = (struct live_span){ l->user_since, now };
		l->delay_until = 0;
	}
	l->user = on;
	apply(r);
	if (!r->o->quiet && !r->tty)
		print_error("%s at %.1f s", on ? "paused" : "resumed", (now - r->start_ns) / 1e9);
}

int live_open(struct sampling_run *r)
{
	const struct live_opts *o = &r->o->live;
	struct live *l = &r->live;
	struct stat st;

	l->fifo_fd = -1;
	l->open = true;
	if (o->fifo) {
		int found = stat(o->fifo, &st);

		if (found < 0 && errno == ENOENT) {
			if (mkfifo(o->fifo, 0600) < 0) {
				print_error("cannot make the control FIFO '%s': %s", o->fifo, strerror(errno));
				return EXIT_FAIL;
			}
			l->fifo_made = true;
		} else if (found < 0) {
			print_error("cannot use the control FIFO '%s': %s", o->fifo, strerror(errno));
			return EXIT_FAIL;
		} else if (!S_ISFIFO(st.st_mode)) {
			print_error("'%s' is not a FIFO; name a new path for --control fifo:PATH (proftool makes it) "
			      "or one made with mkfifo", o->fifo);
			return EXIT_FAIL;
		}
		/* read and write: the FIFO never reads as ended between two writers */
		l->fifo_fd = open(o->fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (l->fifo_fd < 0) {
			print_error("cannot open the control FIFO '%s': %s", o->fifo, strerror(errno));
			live_end(r);
			return EXIT_FAIL;
		}
	}
	return 0;
}

void live_begin(struct sampling_run *r)
{
	const struct live_opts *o = &r->o->live;
	struct live *l = &r->live;

	l->from = r->start_ns;
	if (o->every_secs)
		l->due = r->start_ns + (uint64_t)(o->every_secs * 1e9);
	/* SIGUSR1 may ask for a snapshot at any time: the series is named from the start */
	snprintf(l->series, sizeof(l->series), "%d-%" PRIu64, (int)getpid(), r->start_real_ns);
	if (o->paused || o->delay > 0) {
		live_pause(r, true);
		/* what was sampled before this (record's exec, attach's enable) is in the pause */
		l->user_since = r->start_ns;
		if (!o->paused)
			l->delay_until = r->start_ns + (uint64_t)(o->delay * 1e9);
	}
}

void live_end(struct sampling_run *r)
{
	struct live *l = &r->live;

	if (!l->open)
		return;
	if (l->fifo_fd >= 0)
		close(l->fifo_fd);
	if (l->fifo_made)
		unlink(r->o->live.fifo);
	l->fifo_fd = -1;
	l->fifo_made = false;
	l->open = false;
	free(l->spans);
	l->spans = NULL;
	l->nr_spans = l->alloc_spans = 0;
}

void live_count(struct live *l, size_t bytes)
{
	l->bytes += bytes;
}

void live_add_pauses(const struct sampling_run *r, struct profile *p, uint64_t from, uint64_t to)
{
	const struct live *l = &r->live;

	for (size_t i = 0; i <= l->nr_spans; i++) {
		struct live_span s;

		if (i < l->nr_spans)
			s = l->spans[i];
		else if (l->user)
			s = (struct live_span){ l->user_since, to };
		else
			break;
		if (s.end < from || s.start > to)
			continue;
		if (s.start < from)
			s.start = from;
		if (s.end > to)
			s.end = to;
		profile_add_pause(p, s.start - from, s.end - from);
	}
}

/* Writes one line to a FIFO that may have no reader; a regular file is left alone. */
static void reply(const char *path, const char *text)
{
	struct stat st;
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && write(fd, text, strlen(text)) < 0) {
		/* the asker has gone: nothing to tell */
	}
	close(fd);
}

/* Takes a snapshot now; TEXT gets the reply. */
static void snapshot(struct sampling_run *r, char *text, size_t n)
{
	char path[4096];

	if (sampling_snapshot(r, path, sizeof(path)) == 0)
		snprintf(text, n, "ack %s\n", path);
	else
		snprintf(text, n, "error the snapshot could not be written (see the recording's messages)\n");
}

/* One command line from the FIFO: "COMMAND [REPLY-FIFO]". */
static void command(struct sampling_run *r, char *line)
{
	char *word = line, *reply_to, text[4200] = "ack\n";

	word += strspn(word, " \t");
	reply_to = word + strcspn(word, " \t");
	if (*reply_to) {
		*reply_to++ = '\0';
		reply_to += strspn(reply_to, " \t");
		reply_to[strcspn(reply_to, " \t")] = '\0';
	}
	if (!*word)
		return;
	/* perf's words too: enable and disable */
	if (!strcmp(word, "pause") || !strcmp(word, "disable"))
		live_pause(r, true);
	else if (!strcmp(word, "resume") || !strcmp(word, "enable"))
		live_pause(r, false);
	else if (!strcmp(word, "snapshot"))
		snapshot(r, text, sizeof(text));
	else if (!strcmp(word, "stop"))
		r->live.stop = true;
	else {
		print_error("warning: unknown command '%.64s' on %s (use pause, resume, snapshot or stop)",
		      word, r->o->live.fifo);
		snprintf(text, sizeof(text), "error unknown command '%.64s' (use pause, resume, snapshot or stop)\n",
			 word);
	}
	reply(reply_to, text);
	if (r->o->live.ack)
		reply(r->o->live.ack, text);
}

static void read_fifo(struct sampling_run *r)
{
	struct live *l = &r->live;
	char buf[1024];
	ssize_t n;

	while (l->fifo_fd >= 0 && (n = read(l->fifo_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				l->line[l->len < sizeof(l->line) ? l->len : sizeof(l->line) - 1] = '\0';
				if (l->len < sizeof(l->line))
					command(r, l->line);
				else
					print_error("warning: a command line over %zu bytes on %s was left out",
					      sizeof(l->line) - 1, r->o->live.fifo);
				l->len = 0;
			} else if (l->len < sizeof(l->line)) {
				l->line[l->len++] = buf[i];
			} else {
				l->len = sizeof(l->line);
			}
		}
	}
}

bool live_poll(struct sampling_run *r)
{
	struct live *l = &r->live;
	uint64_t now = time_mono_ns();
	int program;

	if (want_toggle) {
		want_toggle = 0;
		live_pause(r, !l->user);
	}
	if (l->delay_until && now >= l->delay_until) {
		live_pause(r, false);
		/* --duration counts from the end of the delay */
		r->deadline_from = now;
	}
	read_fifo(r);
	program = regions_switch(&r->regions);
	if (program >= 0 && (bool)program != l->program) {
		l->program = program;
		apply(r);
		if (!r->o->quiet && !r->tty)
			print_error("the program %s the recording at %.1f s", program ? "paused" : "resumed",
			      (now - r->start_ns) / 1e9);
	}
	if (want_snapshot || (l->due && now >= l->due) ||
	    (r->o->live.every_bytes && l->bytes >= r->o->live.every_bytes)) {
		char text[64];

		want_snapshot = 0;
		snapshot(r, text, sizeof(text));
		if (r->o->live.every_secs)
			while (l->due <= time_mono_ns())
				l->due += (uint64_t)(r->o->live.every_secs * 1e9);
	}
	return !l->stop;
}
