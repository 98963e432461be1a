// SPDX-License-Identifier: MIT
/* proftool control: send one command to a recording started with --control fifo:PATH, and wait for its answer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cmd.h"

static const char control_help[] =
	"usage: proftool control FIFO pause|resume|snapshot|stop\n"
	"\n"
	"Sends one command to the recording (record or attach) started with\n"
	"--control fifo:FIFO, and waits until it has been carried out:\n"
	"  pause      stop sampling; the program runs on at full speed\n"
	"  resume     sample again\n"
	"  snapshot   write OUT.N now: a whole profile of what was recorded since\n"
	"             the last snapshot (prints the file's name)\n"
	"  stop       end the recording and write the profile, as Ctrl-C on attach\n"
	"\n"
	"A script can also write the words to the FIFO itself, one per line\n"
	"(echo pause > FIFO); this command adds the wait for the answer.\n"
	"\n"
	"  -h, --help           show this help\n";

/* Whether a recording still reads FIFO. */
static bool reader_there(const char *fifo)
{
	int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int send(const char *fifo, const char *word)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], reply[PATH_MAX + 16], line[PATH_MAX + 64], answer[PATH_MAX + 64];
	struct stat st;
	size_t got = 0;
	int fd, rfd, ret = EXIT_FAIL;

	if (stat(fifo, &st) < 0) {
		print_error("no control FIFO at '%s' (%s); start the recording with --control fifo:%s",
		      fifo, strerror(errno), fifo);
		return EXIT_FAIL;
	}
	if (!S_ISFIFO(st.st_mode)) {
		print_error("'%s' is not a FIFO; name the one given to --control fifo:PATH", fifo);
		return EXIT_FAIL;
	}
	fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENXIO)
			print_error("no recording reads '%s': it has ended (or was not started with --control fifo:%s)",
			      fifo, fifo);
		else
			print_error("cannot open '%s': %s", fifo, strerror(errno));
		return EXIT_FAIL;
	}
	if (!tmp || !*tmp || access(tmp, W_OK))
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/proftool-control.XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		print_error("cannot make a directory for the answer in %s: %s; set TMPDIR to a writable one",
		      tmp, strerror(errno));
		close(fd);
		return EXIT_FAIL;
	}
	snprintf(reply, sizeof(reply), "%s/reply", dir);
	/* read and write: it never reads as ended before the recording has answered */
	if (mkfifo(reply, 0600) < 0 || (rfd = open(reply, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
		print_error("cannot make the answer FIFO %s: %s", reply, strerror(errno));
		unlink(reply);
		rmdir(dir);
		close(fd);
		return EXIT_FAIL;
	}
	/* one write of less than PIPE_BUF bytes: never mixed with another writer's */
	snprintf(line, sizeof(line), "%s %s\n", word, reply);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		print_error("cannot write to '%s': %s", fifo, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		char *nl;
		ssize_t n;

		if (poll(&pfd, 1, 200) > 0) {
			n = read(rfd, answer + got, sizeof(answer) - 1 - got);
			if (n > 0)
				got += (size_t)n;
			answer[got] = '\0';
			nl = strchr(answer, '\n');
			if (nl || got == sizeof(answer) - 1) {
				if (nl)
					*nl = '\0';
				break;
			}
			continue;
		}
		/* no answer yet: is anyone still there to give one? */
		if (!reader_there(fifo)) {
			print_error("the recording ended before it answered '%s'", word);
			goto out;
		}
	}
	if (!strncmp(answer, "ack", 3)) {
		if (answer[3] == ' ')
			printf("%s\n", answer + 4);
		ret = EXIT_OK;
	} else if (!strncmp(answer, "error ", 6)) {
		print_error("the recording says: %s", answer + 6);
	} else {
		print_error("unexpected answer from the recording: '%.80s'", answer);
	}
out:
	if (fd >= 0)
		close(fd);
	close(rfd);
	unlink(reply);
	rmdir(dir);
	return ret;
}

int cmd_control(int argc, char **argv)
{
	static const char *const words[] = { "pause", "resume", "snapshot", "stop" };
	bool known = false;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(control_help, stdout);
		return EXIT_OK;
	}
	if (argc != 3)
		return usage_error("control", "%s", argc < 3 ? "give the FIFO and a command: pause, resume, "
						 "snapshot or stop" : "one FIFO and one command only");
	for (size_t i = 0; i < ARRAY_SIZE(words); i++)
		known = known || !strcmp(argv[2], words[i]);
	if (!known)
		return usage_error("control", "unknown command '%s' (use pause, resume, snapshot or stop)", argv[2]);
	return send(argv[1], argv[2]);
}
