#!/usr/bin/env bats
# completion/tern.bash, sourced as bash-completion would: commands, each
# command's flags (read from its --help) and the ids of the containers under
# the --root given on the line.

# shellcheck disable=SC2153 # BUNDLE, ROOT and ID are set by setup_bundle (helpers.bash)
load helpers

setup() {
	is_tern || skip "tern's own completion"
	setup_bundle
	# `tern` on the line is the binary under test, found in PATH as a user's
	# would be (the completion runs the word typed, never the helpers' tern
	# function)
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -sf "$TERN_BIN" "$BATS_TEST_TMPDIR/bin/tern"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH
	# shellcheck disable=SC1091 # the file under test, sourced as bash-completion does
	source "$REPO/completion/tern.bash"
}

# complete_line WORD...: what <TAB> offers after WORD... (the last word is
# the one being completed), one a line.
complete_line() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_tern
	printf '%s\n' "${COMPREPLY[@]}"
}

@test "completion: registered for tern" {
	run complete -p tern
	[ "$status" -eq 0 ]
	[[ $output == *"-F _tern"* ]]
}

@test "completion: tern ch<TAB> offers checkpoint" {
	run complete_line tern ch
	[ "$status" -eq 0 ]
	[ "$output" = checkpoint ]
}

@test "completion: tern <TAB> offers every command, migrate ones included" {
	run complete_line tern ''
	local c
	for c in create start run exec kill delete state list ps pause resume events update \
		checkpoint restore features spec snapshot rollback clone migrate migrate-receive help; do
		grep -qx "$c" <<<"$output" || {
			echo "no $c in: $output"
			return 1
		}
	done
}

@test "completion: tern kill --<TAB> offers its flags" {
	run complete_line tern kill --
	[ "$status" -eq 0 ]
	grep -qx -- --all <<<"$output"
	grep -qx -- --help <<<"$output"
}

@test "completion: the flags offered are the ones each command's --help prints" {
	local c f
	for c in exec update checkpoint restore clone migrate migrate-receive; do
		run complete_line tern "$c" --
		for f in $("$TERN_BIN" "$c" --help | sed -n 's/^ \{1,\}\(-[-a-zA-Z0-9]*\(, -[-a-zA-Z0-9]*\)*\).*/\1/p' |
			grep -o -- '--[a-zA-Z0-9][-a-zA-Z0-9]*'); do
			grep -qx -- "$f" <<<"$output" || {
				echo "tern $c --<TAB> lacks $f: $output"
				return 1
			}
		done
	done
	run complete_line tern --root "$ROOT" --
	grep -qx -- --systemd-cgroup <<<"$output"
}

@test "completion: a created container's id is offered, from the --root on the line" {
	tern create -b "$BUNDLE" "$ID"
	run complete_line tern --root "$ROOT" kill ''
	grep -qx -- "$ID" <<<"$output"
	run complete_line tern --root="$ROOT" delete "${ID:0:3}"
	grep -qx -- "$ID" <<<"$output"
	# after a flag and its value too
	run complete_line tern --root "$ROOT" exec --cwd / ''
	grep -qx -- "$ID" <<<"$output"
	# not the ids of another root
	run complete_line tern --root "$BATS_TEST_TMPDIR/other" kill ''
	if grep -qx -- "$ID" <<<"$output"; then
		echo "the id of another root offered: $output"
		return 1
	fi
	# run and create take a new id: none is offered
	run complete_line tern --root "$ROOT" run ''
	[ -z "$output" ]
}

@test "completion: a flag's value is not taken for the container id" {
	tern create -b "$BUNDLE" "$ID"
	run complete_line tern --root "$ROOT" kill "$ID" ''
	grep -qx KILL <<<"$output"
	if grep -qx -- "$ID" <<<"$output"; then
		echo "the id offered again as the signal: $output"
		return 1
	fi
	run complete_line tern --log-format ''
	[ "$output" = "$(printf 'text\njson')" ]
}
