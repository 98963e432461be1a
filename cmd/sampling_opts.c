// SPDX-License-Identifier: MIT
/* The options record, attach and top share: parsing, checks, the help lines. */
#include "sampling.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/base.h"
#include "cmd.h"

/*
 * Bytes of user stack copied per sample with -g dwarf. Measured on python3
 * running recursive code: 8 KiB completed 66 % of stacks, 16 KiB 82 %,
 * 32 KiB 91 %, and 64 KiB began to lose samples to full ring buffers.
 */
#define DEFAULT_STACK_SIZE 32768

const char sampling_usage[] =
	"  -o FILE              write the profile to FILE (default proftool.data); in FILE,\n"
	"                       %h is the host name, %p the pid of the command (or of the\n"
	"                       attached process), %r its rank (RANK, OMPI_COMM_WORLD_RANK,\n"
	"                       PMI_RANK, SLURM_PROCID...; 0 when none), %% a %\n"
	"  -F HZ                samples per second of CPU time per thread, 1..10000 (default 999)\n"
	"  -g dwarf|fp|none     unwind stacks with DWARF CFI from a copy of the user stack\n"
	"                       (default), follow frame pointers, or keep the sampled\n"
	"                       function only\n"
	"  --stack-size BYTES   user stack copied per sample with -g dwarf, a multiple of 8\n"
	"                       from 1024 to 65528 (default 32768)\n"
	"  --unwind-scan on|off\n"
	"                       with -g dwarf, find the callers of code without usable\n"
	"                       CFI (JIT code, assembly) by scanning the copied stack\n"
	"                       for return addresses (default on); off: frame pointers\n"
	"                       only\n"
	"  --user-only          leave out kernel frames (time in the kernel still counts,\n"
	"                       under the user function that entered it)\n"
	"  -e EVENT             cpu-clock (default), task-clock; the counting events\n"
	"                       page-faults (faults), minor-faults, major-faults,\n"
	"                       context-switches (cs), whose reports count events, not\n"
	"                       seconds (perf backend); cycles, instructions where the\n"
	"                       machine has them\n"
	"  -c N                 counting events: a sample every N events (default 100,\n"
	"                       major-faults 1); with -F instead, about HZ samples a\n"
	"                       second, each weighing the events since the last\n"
	"  --backend auto|perf|ptrace\n"
	"                       perf_event_open, or ptrace (stops threads to sample them;\n"
	"                       needs no perf_event permission); auto (default) uses perf\n"
	"                       and falls back to ptrace where perf_event_open is denied\n"
	"  --mode cpu|wall      on-CPU samples (default), or wall-clock samples of every\n"
	"                       thread, running or blocked (uses the ptrace backend)\n"
	"  --python auto|on|off find CPython (3.11 to 3.13) in every profiled process and\n"
	"                       show its Python functions in the stacks (default auto);\n"
	"                       on: read each sample's Python stack at once, on its CPU,\n"
	"                       as auto does when the command is Python (an interpreter,\n"
	"                       a python #! script, a shell script that names python,\n"
	"                       torchrun...): for a launcher that hides it (every sample\n"
	"                       wakes proftool, unless --python-capture auto)\n"
	"  --python-capture auto|off\n"
	"                       auto (default): where BPF is allowed (root, or CAP_BPF\n"
	"                       and CAP_PERFMON, in the first PID namespace; perf\n"
	"                       backend), a BPF program copies\n"
	"                       each sample's thread state and Python frames as it is\n"
	"                       taken, so that only samples of a process or thread it\n"
	"                       has not described yet wake proftool; off: proftool\n"
	"                       reads them itself from the process at each sample\n"
	"  --regions auto|itt|all|off\n"
	"                       collect the named regions the program marks (<proftool.h>,\n"
	"                       the proftool Python module); itt or all: also Intel ITT\n"
	"                       tasks, frames and markers (oneDNN's) (default auto)\n"
	"  --delay SEC          sample only from SEC seconds in (--duration counts from then)\n"
	"  --paused             start paused: nothing is sampled until 'resume' (--control)\n"
	"                       or SIGUSR2\n"
	"  --control fifo:PATH[,ACK]\n"
	"                       read 'pause', 'resume', 'snapshot' and 'stop' lines from the\n"
	"                       FIFO PATH (made if missing; 'proftool control PATH CMD' sends\n"
	"                       one and waits for its answer); with ACK, answer there too\n"
	"  --snapshot-every SEC|SIZE\n"
	"                       every SEC seconds, or every SIZE (e.g. 100M) of sample data,\n"
	"                       write OUT.1, OUT.2, ...: each a whole profile of its part;\n"
	"                       OUT has the rest ('proftool report OUT OUT.*' merges them)\n"
	"  --keep N             keep the N newest snapshots, removing older ones\n"
	"  signals to proftool: SIGUSR1 writes a snapshot, SIGUSR2 pauses or resumes\n";

void sampling_opts_init(struct sampling_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "proftool.data";
	o->stack_size = DEFAULT_STACK_SIZE;
	o->freq = 999;
	o->callgraph = SAMPLER_CG_DWARF;
	o->event = SAMPLER_EVENT_CPU_CLOCK;
	o->python = true;
	o->python_capture = true;
	o->unwind_scan = true;
	o->regions = REGIONS_AUTO;
}

void sampling_opts_release(struct sampling_opts *o)
{
	free(o->live.fifo);
	free(o->live.ack);
	free(o->output_named);
	o->live.fifo = o->live.ack = o->output_named = NULL;
}

void sampling_name_output(struct sampling_opts *o, pid_t pid, int32_t rank)
{
	/* once: a name made of patterns may hold a '%' of its own (from the host name) */
	if (!o->output || o->output_named || !strchr(o->output, '%'))
		return;
	o->output_named = output_pattern_expand(o->output, pid, rank);
	o->output = o->output_named;
}

/* An option of two words: YES sets *V, NO clears it; false for anything else. */
static bool parse_either(const char *arg, const char *yes, const char *no, bool *v)
{
	if (strcmp(arg, yes) && strcmp(arg, no))
		return false;
	*v = !strcmp(arg, yes);
	return true;
}

int sampling_parse_opt(int c, const char *arg, struct sampling_opts *o, const char *command)
{
	unsigned long v;

	switch (c) {
	case 'o':
		if (!*arg)
			return usage_error(command, "-o needs a file name");
		if (output_pattern_bad(arg))
			return usage_error(command, "-o takes the patterns %%h (host name), %%p (process id), "
					   "%%r (rank) and %%%% (a %%), not '%.2s' in '%s'",
					   output_pattern_bad(arg), arg);
		o->output = arg;
		return 0;
	case 'F':
		if (!parse_ulong(arg, 1, 10000, &o->freq))
			return usage_error(command, "-F must be a whole number from 1 to 10000, not '%s'", arg);
		o->freq_given = true;
		return 0;
	case 'c':
		if (!parse_ulong(arg, 1, UINT32_MAX, &o->period))
			return usage_error(command, "-c must be a whole number of events from 1 to %u, not '%s'",
					   UINT32_MAX, arg);
		return 0;
	case 'g':
		if (!strcmp(arg, "fp"))
			o->callgraph = SAMPLER_CG_FP;
		else if (!strcmp(arg, "none"))
			o->callgraph = SAMPLER_CG_NONE;
		else if (!strcmp(arg, "dwarf"))
			o->callgraph = SAMPLER_CG_DWARF;
		else
			return usage_error(command, "-g takes dwarf, fp or none, not '%s'", arg);
		return 0;
	case 'e':
		if (sampler_event_parse(arg, &o->event) < 0)
			return usage_error(command, "unknown event '%s' (use cpu-clock, task-clock, page-faults, minor-faults, "
					   "major-faults, context-switches, cycles or instructions)", arg);
		return 0;
	case OPT_BACKEND:
		if (!strcmp(arg, "auto"))
			o->backend = BACKEND_AUTO;
		else if (!strcmp(arg, "perf"))
			o->backend = BACKEND_PERF;
		else if (!strcmp(arg, "ptrace"))
			o->backend = BACKEND_PTRACE;
		else
			return usage_error(command, "--backend takes auto, perf or ptrace, not '%s'", arg);
		return 0;
	case OPT_MODE:
		if (!parse_either(arg, "wall", "cpu", &o->wall))
			return usage_error(command, "--mode takes cpu or wall, not '%s'", arg);
		return 0;
	case OPT_DURATION:
		if (!parse_seconds(arg, &o->duration))
			return usage_error(command, "--duration must be a positive number of seconds, not '%s'", arg);
		return 0;
	case OPT_STACK_SIZE:
		if (!parse_ulong(arg, 1024, 65528, &v) || v % 8)
			return usage_error(command, "--stack-size must be a multiple of 8 from 1024 to 65528, not '%s'", arg);
		o->stack_size = v;
		return 0;
	case OPT_USER_ONLY:
		o->user_only = true;
		return 0;
	case OPT_PYTHON:
		o->python_on = !strcmp(arg, "on");
		if (!o->python_on && !parse_either(arg, "auto", "off", &o->python))
			return usage_error(command, "--python takes auto, on or off, not '%s'", arg);
		o->python |= o->python_on;
		return 0;
	case OPT_PYTHON_CAPTURE:
		if (!parse_either(arg, "auto", "off", &o->python_capture))
			return usage_error(command, "--python-capture takes auto or off, not '%s'", arg);
		return 0;
	case OPT_UNWIND_SCAN:
		if (!parse_either(arg, "on", "off", &o->unwind_scan))
			return usage_error(command, "--unwind-scan takes on or off, not '%s'", arg);
		return 0;
	case OPT_REGIONS:
		if (regions_parse_mode(arg, &o->regions) < 0)
			return usage_error(command, "--regions takes auto, itt, all or off, not '%s'", arg);
		return 0;
	case OPT_DELAY:
		if (!parse_seconds(arg, &o->live.delay))
			return usage_error(command, "--delay must be a positive number of seconds, not '%s'", arg);
		return 0;
	case OPT_PAUSED:
		o->live.paused = true;
		return 0;
	case OPT_CONTROL:
		if (live_parse_control(arg, &o->live) < 0)
			return usage_error(command, "--control takes fifo:PATH or fifo:PATH,ACK, not '%s'", arg);
		return 0;
	case OPT_SNAPSHOT_EVERY:
		if (live_parse_every(arg, &o->live) < 0)
			return usage_error(command, "--snapshot-every takes seconds (60) or a size (100M, 1G), not '%s'", arg);
		return 0;
	case OPT_KEEP:
		if (!parse_ulong(arg, 1, 1000000, &o->live.keep))
			return usage_error(command, "--keep must be a whole number of snapshots from 1, not '%s'", arg);
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	default:
		return 1;
	}
}

int sampling_validate(const struct sampling_opts *o, const char *command)
{
	if (o->period && !sampler_event_counts(o->event))
		return usage_error(command, "-c N goes with the counting events (page-faults, minor-faults, major-faults, "
				   "context-switches); -e %s samples by -F", sampler_event_name(o->event));
	if (o->period && o->freq_given)
		return usage_error(command, "-c and -F do not go together: -e %s samples every N events or N times a second",
				   sampler_event_name(o->event));
	if (sampler_event_counts(o->event) && (o->wall || o->backend == BACKEND_PTRACE))
		return usage_error(command, "the ptrace backend samples time only and cannot count events; "
				   "-e %s needs the perf backend", sampler_event_name(o->event));
	if (o->wall && o->backend == BACKEND_PERF)
		return usage_error(command, "--mode wall samples with ptrace; use --backend ptrace or auto");
	if (o->live.paused && o->live.delay > 0)
		return usage_error(command, "--delay and --paused do not go together: --paused waits for 'resume'");
	if (o->output && !strcmp(o->output, "-") && (o->live.every_secs || o->live.every_bytes))
		return usage_error(command, "--snapshot-every writes files beside -o FILE; name a file");
	return 0;
}

int sampling_check_output(const struct sampling_opts *o)
{
	struct atomic_file af;
	struct stat st;
	int ret;

	if (!o->output)         /* top without --record */
		return 0;
	/*
	 * Opening a FIFO to try it would wait for a reader, then close on it:
	 * the reader takes that for the end and is gone when the profile comes.
	 */
	if (stat(o->output, &st) == 0 && S_ISFIFO(st.st_mode)) {
		if (access(o->output, W_OK) == 0)
			return 0;
		print_error("cannot create '%s': %s", o->output, strerror(errno));
		return EXIT_FAIL;
	}
	ret = atomic_open(&af, o->output, 0644);
	if (ret < 0) {
		print_error("cannot create '%s': %s", o->output, strerror(-ret));
		return EXIT_FAIL;
	}
	atomic_abort(&af);
	return 0;
}
