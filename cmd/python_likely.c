// SPDX-License-Identifier: MIT
/*
 * Whether a command or a running process is Python, as far as its files
 * tell. Where it is, and the stacks are not copied at the sample (BPF not
 * allowed, --python-capture off), the sampler wakes for each sample and
 * reads the Python stack at once, from the first sample on; elsewhere it
 * sweeps its ring buffers as they fill, and every millisecond once an
 * interpreter turns up among the processes (sampler/perf_drainer.c).
 */
#include "sampling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

/* Whether the #! line LINE names a shell (sh, bash, dash, zsh, ksh; directly or through env). */
static bool shell_line(const char *line)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh" };
	const char *p = line + 2, *word;
	size_t len;

	/* the interpreter's base name, or the first word after env */
	for (int i = 0; i < 2; i++) {
		p += strspn(p, " \t");
		word = p;
		len = strcspn(p, " \t\r\n");
		for (const char *s = word; s < word + len; s++)
			if (*s == '/')
				word = s + 1;
		len -= (size_t)(word - p);
		if (len == 3 && !strncmp(word, "env", 3)) {
			p = word + len;
			continue;
		}
		for (size_t k = 0; k < ARRAY_SIZE(shells); k++)
			if (len == strlen(shells[k]) && !strncmp(word, shells[k], len))
				return true;
		return false;
	}
	return false;
}

/*
 * Whether the shell script F (its first line read) starts Python, as far
 * as its text tells: it names python, or a launcher that runs it.
 */
static bool shell_runs_python(FILE *f)
{
	static const char *const names[] = { "python", "torchrun", "deepspeed", "accelerate launch" };
	char buf[4096];
	size_t keep = 0, n;

	/* 64 KiB at most; each read overlaps the last by a name's length */
	for (int i = 0; i < 16 && (n = fread(buf + keep, 1, sizeof(buf) - 1 - keep, f)) > 0; i++) {
		n += keep;
		buf[n] = '\0';
		for (size_t k = 0; k < ARRAY_SIZE(names); k++)
			if (memmem(buf, n, names[k], strlen(names[k])))
				return true;
		keep = n < 32 ? n : 32;
		memmove(buf, buf + n - keep, keep);
	}
	return false;
}

/*
 * Whether the file at PATH is a Python interpreter, a script run by one
 * (its #! line), or a shell script that starts one.
 */
static bool python_file(const char *path)
{
	const char *base = strrchr(path, '/');
	char line[256] = "";
	bool python = false;
	FILE *f;

	base = base ? base + 1 : path;
	if (!strncmp(base, "python", 6))
		return true;
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	if (line[0] == '#' && line[1] == '!')
		python = strstr(line, "python") || (shell_line(line) && shell_runs_python(f));
	fclose(f);
	return python;
}

bool sampling_python_command(char *const argv[])
{
	char path[4096];

	/* the command, or what a wrapper (env, time -o F, nice, torchrun...) runs */
	for (int i = 0; argv[i] && i < 16; i++) {
		const char *name = argv[i], *dirs = getenv("PATH");

		if (name[0] == '-')
			continue;
		if (!strchr(name, '/') && dirs) {
			/* the first match on PATH, as execvp finds it */
			for (const char *d = dirs; d; d = strchr(d, ':') ? strchr(d, ':') + 1 : NULL) {
				size_t len = strcspn(d, ":");

				snprintf(path, sizeof(path), "%.*s/%s", (int)len, len ? d : ".", name);
				if (access(path, X_OK) == 0) {
					name = path;
					break;
				}
			}
		}
		if (python_file(name))
			return true;
	}
	return false;
}

bool sampling_python_process(pid_t pid)
{
	char path[64], exe[4096], line[4352];
	ssize_t n;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (n > 0 && python_file(exe))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libpython3") != NULL;
	if (f)
		fclose(f);
	return found;
}
