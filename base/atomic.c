// SPDX-License-Identifier: MIT
/* Atomic replacement of a file through a temporary sibling and rename(2). */
#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

/*
 * Whether the entry PATH (lstat'ed into LST) was put in a sticky,
 * world-writable directory such as /tmp by another user: a link or a FIFO
 * there must not be written through, or whoever made it chooses where the
 * profile goes (a device, a pipe they read). These are the kernel's
 * fs.protected_symlinks and fs.protected_fifos rules, applied whatever
 * those sysctls say (they are off on some systems).
 */
static bool planted(const char *path, size_t dirlen, const struct stat *lst)
{
	char *dir = xmalloc(dirlen + 2);
	struct stat dst;
	bool ret = false;

	/* "dir/" with its slash, or "." */
	memcpy(dir, dirlen ? path : ".", dirlen ? dirlen : 1);
	dir[dirlen ? dirlen : 1] = '\0';
	if (stat(dir, &dst) == 0 && (dst.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH))
		ret = lst->st_uid != geteuid() && lst->st_uid != dst.st_uid;
	free(dir);
	return ret;
}

int atomic_open(struct atomic_file *af, const char *path, mode_t mode)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	size_t n = strlen(path) + 16;
	mode_t mask;
	struct stat st, lst;
	int fd;

	memset(af, 0, sizeof(*af));
	/* anything else planted there is replaced by the rename, as a regular file would be */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
	    !(lstat(path, &lst) == 0 && planted(path, dirlen, &lst))) {
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return -errno;
		if (!(af->fp = fdopen(fd, "w"))) {
			int err = -errno;

			close(fd);
			return err;
		}
		af->path = xstrdup(path);
		return 0;
	}
	af->tmp = xmalloc(n);
	snprintf(af->tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
	fd = mkostemp(af->tmp, O_CLOEXEC);	/* O_CREAT|O_EXCL: never follows a link */
	if (fd < 0) {
		int err = -errno;

		free(af->tmp);
		af->tmp = NULL;
		return err;
	}
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, mode & ~mask) < 0 || !(af->fp = fdopen(fd, "w"))) {
		int err = -errno;

		close(fd);
		unlink(af->tmp);
		free(af->tmp);
		af->tmp = NULL;
		return err;
	}
	af->path = xstrdup(path);
	return 0;
}

int atomic_commit(struct atomic_file *af)
{
	int err = 0;

	errno = 0;
	if (fflush(af->fp) || ferror(af->fp))
		err = errno ? -errno : -EIO;
	if (!af->tmp) {
		/* written in place: a device or a pipe, nothing to rename */
		if (fclose(af->fp) && !err)
			err = -errno;
		af->fp = NULL;
		free(af->path);
		af->path = NULL;
		return err;
	}
	if (!err && fsync(fileno(af->fp)) < 0 && errno != EINVAL)
		err = -errno;
	if (fclose(af->fp) && !err)
		err = -errno;
	af->fp = NULL;
	if (!err && rename(af->tmp, af->path) < 0)
		err = -errno;
	if (err)
		unlink(af->tmp);
	free(af->tmp);
	free(af->path);
	af->tmp = af->path = NULL;
	return err;
}

void atomic_abort(struct atomic_file *af)
{
	int errsv = errno;

	if (af->fp)
		fclose(af->fp);
	if (af->tmp)
		unlink(af->tmp);
	free(af->tmp);
	free(af->path);
	memset(af, 0, sizeof(*af));
	errno = errsv;
}
