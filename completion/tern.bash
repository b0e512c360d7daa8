# bash completion for tern. It owns nothing of tern's own: the commands and
# each command's flags are read from `tern --help` and `tern COMMAND --help`
# when completing, so a new command or flag completes without an edit here,
# and the container ids come from `tern list -q` (with the --root given on
# the line). Installed by `make install` as
# $(datadir)/bash-completion/completions/tern; `source` it to try it.
# It needs nothing of the bash-completion package.

# _tern_bin: the tern being completed (the word typed, as bash would run it).
_tern_bin() {
	local b=${COMP_WORDS[0]}
	if [[ $b == */* ]]; then
		[[ -x $b ]] || b=tern
	else
		type -P "$b" >/dev/null 2>&1 || b=tern
	fi
	printf '%s\n' "$b"
}

# _tern_help_flags TEXT: the long and short flags of a --help text, one a line.
_tern_help_flags() {
	sed -n 's/^ \{1,\}\(-[-a-zA-Z0-9]*\(, -[-a-zA-Z0-9]*\)*\).*/\1/p' <<<"$1" |
		grep -o -- '--\?[a-zA-Z0-9][-a-zA-Z0-9]*'
}

# _tern_help_arg_flags TEXT: the flags of a --help text that take a value
# (`--bundle DIR`, `-b, --bundle DIR`).
_tern_help_arg_flags() {
	sed -n 's/^ \{1,\}\(-[-a-zA-Z0-9]*\(, -[-a-zA-Z0-9]*\)*\) [A-Za-z[].*/\1/p' <<<"$1" |
		grep -o -- '--\?[a-zA-Z0-9][-a-zA-Z0-9]*'
}

_tern() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=''
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	local bin i w cmd='' cmd_i=0 root=()
	bin=$(_tern_bin)
	local ghelp
	ghelp=$(command "$bin" --help 2>/dev/null)
	local garg
	garg=$(_tern_help_arg_flags "$ghelp")

	# The command is the first word that is neither a global flag nor the
	# value of one; --root's value is kept for `list -q`.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		--root=* | -root=*) root=(--root "${w#*=}") ;;
		--root | -root)
			root=(--root "${COMP_WORDS[i + 1]}")
			((i++))
			;;
		-*)
			if grep -qx -- "-${w#-}" <<<"$garg" || grep -qx -- "-$w" <<<"$garg"; then
				((i++))
			fi
			;;
		*)
			cmd=$w
			cmd_i=$i
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		--root | -root | --log | -log | --criu | -criu)
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return
			;;
		--log-format | -log-format)
			mapfile -t COMPREPLY < <(compgen -W "text json" -- "$cur")
			return
			;;
		--rootless | -rootless)
			mapfile -t COMPREPLY < <(compgen -W "true false auto" -- "$cur")
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_tern_help_flags "$ghelp")" -- "$cur")
		else
			local cmds
			cmds=$(sed -n '/^Commands:/,$s/^  \([a-z][-a-z]*\) .*/\1/p' <<<"$ghelp")
			mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
		fi
		return
	fi

	local chelp carg
	chelp=$(command "$bin" "$cmd" --help 2>/dev/null)
	carg=$(_tern_help_arg_flags "$chelp")

	if [[ $prev == -* && $COMP_CWORD -gt $((cmd_i + 1)) ]] && grep -qx -- "$prev" <<<"$carg"; then
		case $prev in
		--format | -f) mapfile -t COMPREPLY < <(compgen -W "table text json" -- "$cur") ;;
		--mode) mapfile -t COMPREPLY < <(compgen -W "auto pre-copy post-copy stop-and-copy" -- "$cur") ;;
		--manage-cgroups-mode) mapfile -t COMPREPLY < <(compgen -W "soft full strict ignore" -- "$cur") ;;
		--empty-ns) mapfile -t COMPREPLY < <(compgen -W "network" -- "$cur") ;;
		*) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
		esac
		return
	fi

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_tern_help_flags "$chelp")" -- "$cur")
		return
	fi

	# Which argument is being typed: count the words after the command that
	# are neither flags nor their values.
	local npos=0 first=
	for ((i = cmd_i + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -* ]]; then
			[[ $w != *=* ]] && grep -qx -- "$w" <<<"$carg" && ((i++))
			continue
		fi
		((npos == 0)) && first=$w
		((npos++))
	done

	case $cmd in
	help)
		((npos == 0)) && mapfile -t COMPREPLY < <(compgen -W \
			"$(sed -n '/^Commands:/,$s/^  \([a-z][-a-z]*\) .*/\1/p' <<<"$ghelp")" -- "$cur")
		return
		;;
	create | run | restore | spec | list | features | migrate-receive)
		return # a new id, or no id at all
		;;
	exec)
		# after the id: the command to run inside, not a host file
		((npos > 0)) && return
		;;
	kill)
		if ((npos == 1)); then
			mapfile -t COMPREPLY < <(compgen -W "TERM KILL HUP INT QUIT USR1 USR2 STOP CONT" -- "$cur")
			return
		fi
		;;
	rollback | clone | snapshot)
		# the snapshot names of the id typed (snapshot: only to --delete one)
		if [[ $cmd == snapshot && " ${COMP_WORDS[*]} " != *" --delete "* ]]; then
			((npos == 0)) || return
		elif ((npos == 1)) && [[ -n $first ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(command "$bin" "${root[@]}" snapshot --list "$first" 2>/dev/null |
				awk 'NR > 1 { print $1 }')" -- "$cur")
			return
		fi
		;;
	esac
	((npos == 0)) || return
	mapfile -t COMPREPLY < <(compgen -W "$(command "$bin" "${root[@]}" list -q 2>/dev/null)" -- "$cur")
}

complete -F _tern tern
