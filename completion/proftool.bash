# SPDX-License-Identifier: MIT
# bash completion for proftool(1): commands, options and their values, files for -i, -o
# and the profiles of report and diff, process ids for attach, dump and top, and the COMMAND
# of record and top.
#
# 'make install' puts it in PREFIX/share/bash-completion/completions/proftool, where the
# bash-completion package loads it the first time proftool is completed; without that
# package, source it from ~/.bashrc. It works either way, using bash-completion's
# _filedir and _command_offset when they are there. The lists below are written out
# rather than read from --help at each TAB; tests/install.bats checks that they are
# exactly the options and values --help and the error messages name.

# _proftool_options COMMAND: sets opts to the options of COMMAND and args to those of
# them that take a value (both empty for a command without options).
_proftool_options()
{
	case $1 in
	record | attach)
		opts='-o -F -c -g --stack-size --unwind-scan --user-only -e --backend --mode --python --python-capture --regions --duration
			--delay --paused --control --snapshot-every --keep -q -h --help'
		args='-o -F -c -g --stack-size --unwind-scan -e --backend --mode --python --python-capture --regions --duration --delay
			--control --snapshot-every --keep'
		;;
	control)
		opts='-h --help'
		args=''
		;;
	report)
		opts='-i --sort --format --min-percent --match --lines --limit --per-thread
			--per-process --time-range --pid --tid --comm --module --state --region
			--by-region --region-frames --group-by --split --frames -o -h
			--help'
		args='-i --sort --format --min-percent --match --limit --time-range --pid --tid
			--comm --module --state --region --group-by --frames -o'
		;;
	diff)
		opts='--format --limit --frames -o -h --help'
		args='--format --limit --frames -o'
		;;
	dump)
		opts='--python --kernel --stack-size -h --help'
		args='--python --stack-size'
		;;
	top)
		opts='--interval --window --cumulative --sort --per-thread --frames --limit --record -F -c
			-g --stack-size --unwind-scan --user-only -e --backend --mode --python --python-capture --regions --delay
			--paused --control --duration -q -h --help'
		args='--interval --window --sort --frames --limit --record -F -c -g --stack-size
			--unwind-scan -e --backend --mode --python --python-capture --regions --delay --control --duration'
		;;
	*)
		opts='' args=''
		;;
	esac
}

# Files and directories starting with $cur.
_proftool_files()
{
	if declare -F _filedir >/dev/null; then
		_filedir
	else
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

# _proftool_values COMMAND OPTION: the values of OPTION that start with $cur. Numbers,
# names and regular expressions get nothing.
_proftool_values()
{
	local values

	case $2 in
	-o | -i | --record)
		_proftool_files
		return
		;;
	-g) values='dwarf fp none' ;;
	-e) values='cpu-clock task-clock page-faults faults minor-faults major-faults context-switches cs cycles instructions' ;;
	--frames) values='mixed python all' ;;
	--backend) values='auto perf ptrace' ;;
	--mode) values='cpu wall' ;;
	--python) values='auto on off' ;;
	--python-capture) values='auto off' ;;
	--unwind-scan) values='on off' ;;
	--regions) values='auto itt all off' ;;
	--sort)
		if [[ " ${COMP_WORDS[*]} " == *" --format regions "* || " ${COMP_WORDS[*]} " == *" --format=regions "* ]]; then
			values='total avg mean min max count self cpu name'
		else
			values='cumtime cumulative tottime time nsamples ncalls calls name filename nfl'
		fi
		;;
	--format)
		if [[ $1 == diff ]]; then
			values='table folded svg html'
		else
			values='table tree callers callees folded regions groups json timers speedscope chrome pprof svg html'
		fi
		;;
	--state) values='on-cpu off-cpu' ;;
	--control) values='fifo:' ;;
	--group-by)
		# keys separated by commas: complete the last one, after those already there
		local done= k
		if [[ $cur == *,* ]]; then
			done=${cur%,*},
		fi
		values=
		for k in module comm process thread state rank host; do
			[[ ,$done == *,$k,* ]] || values+=" $done$k"
		done
		;;
	*) return ;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
}

# Process ids for attach and dump: those that start with $cur or, when $cur is not a number, those
# of the processes whose name (comm) starts with it. Kernel threads and zombies, which
# cannot be profiled, have an empty command line and are left out.
_proftool_pids()
{
	local p pid comm arg

	for p in /proc/[1-9]*; do
		pid=${p#/proc/}
		if [[ $cur == *[!0-9]* ]]; then
			read -r comm 2>/dev/null <"$p/comm" || continue
			[[ $comm == "$cur"* ]] || continue
		else
			[[ $pid == "$cur"* ]] || continue
		fi
		arg=
		IFS= read -r -d '' arg 2>/dev/null <"$p/cmdline"
		[[ -n $arg ]] && COMPREPLY+=("$pid")
	done
}

# _proftool_command I: record's COMMAND and its arguments, COMMAND being word I: the
# command's own completion where bash-completion is there, else commands, then files.
_proftool_command()
{
	if declare -F _command_offset >/dev/null; then
		_command_offset "$1"
	elif ((COMP_CWORD == $1)) && [[ $cur != */* ]]; then
		mapfile -t COMPREPLY < <(compgen -c -- "$cur")
	else
		_proftool_files
	fi
}

_proftool()
{
	local IFS=$' \t\n' cur=${COMP_WORDS[COMP_CWORD]} cmd opts args word i j
	local opt='' value='' dashdash='' nargs=0

	COMPREPLY=()
	# '=' is a word of its own in COMP_WORDS (it is in COMP_WORDBREAKS): the cursor
	# after "--sort=" is on the word "=", and "--sort=t" is "--sort" "=" "t"
	[[ $cur == = ]] && cur=
	if ((COMP_CWORD == 1)); then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W '--help --version' -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W 'record attach report diff control dump top help' -- "$cur")
		fi
		return
	fi
	cmd=${COMP_WORDS[1]}
	if [[ $cmd == help ]]; then
		((COMP_CWORD == 2)) && mapfile -t COMPREPLY < <(compgen -W 'record attach report diff control dump top' -- "$cur")
		return
	fi
	_proftool_options "$cmd"
	[[ -n $opts ]] || return

	# The words before the cursor, read as getopt_long reads them: option values are
	# skipped, '--' ends the options, and so does record's first argument (its COMMAND).
	for ((i = 2; i < COMP_CWORD; i++)); do
		word=${COMP_WORDS[i]}
		if [[ $word == = ]]; then
			value=1
		elif [[ -n $value ]]; then
			value=
		elif [[ -z $dashdash && $word == --?* ]]; then
			[[ $word != *=* && " $args " == *[[:space:]]"$word"[[:space:]]* ]] && opt=$word value=1
		elif [[ -z $dashdash && $word == -?* && $word != -- ]]; then
			# a cluster of short options, the last of which may take a value (-qF99, -qF 99)
			for ((j = 1; j < ${#word}; j++)); do
				if [[ " $args " == *[[:space:]]"-${word:j:1}"[[:space:]]* ]]; then
					((j == ${#word} - 1)) && opt=-${word:j:1} value=1
					break
				fi
			done
		elif [[ $cmd == record ]]; then
			[[ $word == -- ]] && ((i++))
			_proftool_command "$i"
			return
		elif [[ $cmd == top && $word == -- ]]; then
			_proftool_command $((i + 1))
			return
		elif [[ -z $dashdash && $word == -- ]]; then
			dashdash=1
		else
			((nargs++))
		fi
	done

	if [[ -n $value ]]; then
		_proftool_values "$cmd" "$opt"
	elif [[ -z $dashdash && $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	else
		case $cmd in
		record) _proftool_command "$COMP_CWORD" ;;
		attach | dump | top) ((nargs == 0)) && _proftool_pids ;;
		report) _proftool_files ;;
		diff) ((nargs < 2)) && _proftool_files ;;
		control)
			if ((nargs == 0)); then
				_proftool_files
			elif ((nargs == 1)); then
				mapfile -t COMPREPLY < <(compgen -W 'pause resume snapshot stop' -- "$cur")
			fi
			;;
		esac
	fi
} &&
	complete -F _proftool proftool

# ex: filetype=sh
