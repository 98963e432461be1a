// SPDX-License-Identifier: MIT
/* Starting the profiled command so that sampling begins exactly at its exec. */
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int sampler_spawn(struct sampler_child *c, char *const argv[])
{
	int go[2], err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		return e;
	}
	pid = fork();
	if (pid < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return e;
	}
	if (pid == 0) {
		sigset_t none;
		char b;
		int e;

		/* the parent blocks the signals it waits for; the command gets a clean slate */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		close(go[1]);
		close(err[0]);
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		execvp(argv[0], argv);
		e = errno;
		while (write(err[1], &e, sizeof(e)) < 0 && errno == EINTR)
			;
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	c->pid = pid;
	c->go_fd = go[1];
	c->err_fd = err[0];
	return 0;
}

int sampler_spawn_start(struct sampler_child *c)
{
	char b = 1;
	int e = 0;
	ssize_t n;

	while (write(c->go_fd, &b, 1) < 0 && errno == EINTR)
		;
	close(c->go_fd);
	c->go_fd = -1;
	/* EOF: the close-on-exec pipe closed in a successful exec */
	do
		n = read(c->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	return n == sizeof(e) ? -e : 0;
}

void sampler_spawn_abort(struct sampler_child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->pid = -1;
	c->go_fd = c->err_fd = -1;
}
