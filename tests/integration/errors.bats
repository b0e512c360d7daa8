#!/usr/bin/env bats
# Bad input: a clear error naming the field/file/id, and nothing left behind.

load helpers

@test "errors: missing config.json" {
	rm "$BUNDLE/config.json"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly config.json
}

@test "errors: malformed config.json" {
	echo '{"ociVersion": "1.0.2", "process": {' >"$BUNDLE/config.json"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *config.json* ]]
}

@test "errors: wrong type (process.args a string)" {
	update_config '.process.args = "/bin/true"'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly process.args
}

@test "errors: wrong type (root.readonly a string)" {
	update_config '.root.readonly = "yes"'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *root.readonly* ]]
}

@test "errors: missing rootfs" {
	rm -rf "$BUNDLE/rootfs"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly rootfs
}

@test "errors: empty process.args" {
	update_config '.process.args = []'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly args
	is_runc || [[ "$output" == *process.args* ]]
}

@test "errors: the program does not exist" {
	set_args /no/such/program "$MARK"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly /no/such/program
	is_runc || [[ "$output" == *"No such file or directory"* ]]
}

@test "errors: a cwd that cannot be created (a file on its path) fails cleanly" {
	# A missing cwd is created, as runc and crun do (process.bats); one
	# under a regular file cannot be.
	update_config '.process.cwd = "/etc/passwd/sub"'
	set_args /bin/sleep "$MARK"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly
	[[ "${output,,}" == *"not a directory"* ]]
	is_runc || [[ "$output" == *process.cwd*/etc/passwd* ]]
}

@test "errors: cwd is not a directory" {
	update_config '.process.cwd = "/etc/passwd"'
	set_args /bin/sleep "$MARK"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly /etc/passwd
}

@test "errors: relative cwd" {
	update_config '.process.cwd = "relative/dir"'
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *process.cwd* ]]
}

@test "errors: impossible rlimit (above the hard limit)" {
	hard=$(ulimit -Hn)
	update_config ".process.rlimits = [{\"type\": \"RLIMIT_NOFILE\", \"soft\": $((hard * 2)), \"hard\": $((hard * 2))}]"
	set_args /bin/sleep "$MARK"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *RLIMIT_NOFILE* ]]
}

@test "errors: unknown rlimit type" {
	update_config '.process.rlimits = [{"type": "RLIMIT_BOGUS", "soft": 1, "hard": 1}]'
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly RLIMIT_BOGUS
}

@test "errors: bad mount source" {
	update_config ".mounts += [{\"destination\": \"/m\", \"type\": \"bind\", \"source\": \"/no/such/src-$ID\", \"options\": [\"rbind\"]}]"
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "/no/such/src-$ID"
}

@test "errors: unknown namespace type" {
	update_config '.linux.namespaces += [{"type": "bogusns"}]'
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly bogusns
}

@test "unknown capability: a warning naming it, not a failure" {
	# runtime-spec 1.1 (config.md, process.capabilities): values that cannot
	# be mapped or granted MUST be logged as a warning, and runtimes SHOULD
	# NOT fail; runc 1.1.5 does the same.
	update_config '.process.capabilities.bounding += ["CAP_BOGUS"]'
	set_args /bin/echo started
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *CAP_BOGUS* ]]
	[[ "$output" == *started* ]]
}

@test "errors: invalid container id" {
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "../escape"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/../escape" ]
	run tern create -b "$BUNDLE" ""
	[ "$status" -ne 0 ]
}

@test "errors: create without an id" {
	run tern create -b "$BUNDLE"
	[ "$status" -ne 0 ]
	[ -z "$(ls -A "$ROOT")" ]
}

@test "errors: kill with a bad signal, start of a stopped one, delete of a running one" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	run tern kill "$ID" SIGBOGUS
	[ "$status" -ne 0 ]
	[[ "$output" == *BOGUS* ]]
	run tern kill "$ID" 99999
	[ "$status" -ne 0 ]
	run tern delete "$ID"
	[ "$status" -ne 0 ]
	[ "$(state_field "$ID" status)" = running ]
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	run tern start "$ID"
	[ "$status" -ne 0 ]
	run tern kill "$ID" KILL
	[ "$status" -ne 0 ]
	[[ "$output" == *"not running"* || "$output" == *stopped* ]]
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "errors: create killed mid-way (SIGKILL during a createRuntime hook) leaves nothing once the id is reused or deleted" {
	update_config ".hooks.createRuntime += [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"touch $BATS_TEST_TMPDIR/hook-ran; exec sleep $MARK\"]}]"
	set_args /bin/true
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&- &
	local pid=$!
	wait_until 60 test -e "$BATS_TEST_TMPDIR/hook-ran"
	kill -9 "$pid"
	wait "$pid" || true
	# the container process and the hook die with tern
	wait_until 60 no_mark_procs
	# the half-made container is not listed as alive and delete removes it all
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "errors: a create killed mid-way does not block its id" {
	update_config ".hooks.createRuntime += [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"touch $BATS_TEST_TMPDIR/hook-ran; exec sleep $MARK\"]}]"
	set_args /bin/true
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&- &
	local pid=$!
	wait_until 60 test -e "$BATS_TEST_TMPDIR/hook-ran"
	kill -9 "$pid"
	wait "$pid" || true
	update_config 'del(.hooks)'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

# unrunnable_files: in the rootfs, what execve refuses with EACCES: a
# directory, a script without the execute bit, a script with it on a noexec
# mount (/mnt/noexec), and one only its owner (root) may run.
unrunnable_files() {
	local r=$BUNDLE/rootfs
	mkdir -p "$r/adir" "$r/mnt/noexec" "$BATS_TEST_TMPDIR/noexec"
	printf '#!/bin/sh\necho ran\n' >"$r/noexec.sh"
	chmod 644 "$r/noexec.sh"
	printf '#!/bin/sh\necho ran\n' >"$BATS_TEST_TMPDIR/noexec/run.sh"
	chmod 755 "$BATS_TEST_TMPDIR/noexec/run.sh"
	printf '#!/bin/sh\necho ran\n' >"$r/rootonly.sh"
	chmod 700 "$r/rootonly.sh"
	update_config ".mounts += [{\"destination\": \"/mnt/noexec\", \"type\": \"bind\",
		\"source\": \"$BATS_TEST_TMPDIR/noexec\", \"options\": [\"bind\", \"noexec\"]}]"
}

@test "errors: args[0] that execve refuses (a directory, no execute bit, a noexec mount, root's only for another user) fails create with Permission denied" {
	unrunnable_files
	local a
	for a in /adir /noexec.sh /mnt/noexec/run.sh; do
		set_args "$a" "$MARK"
		run tern create -b "$BUNDLE" "$ID"
		check_fails_cleanly "$a"
		# runc says it in lower case
		[[ "${output,,}" == *"permission denied"* ]]
		is_runc || [[ "$output" == *"Permission denied"* ]]
	done
	# checked as process.user, not as the runtime's root
	update_config '.process.user = {"uid": 1000, "gid": 1000}'
	set_args /rootonly.sh "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly /rootonly.sh
	[[ "${output,,}" == *"permission denied"* ]]
	update_config '.process.user = {"uid": 0, "gid": 0}'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
	# runc 1.1.5 lacks this: its PATH search skips what it may not run
	# and says "not found"; execvp (and a shell) say Permission denied
	is_runc && return
	update_config '.process.env = ["PATH=/adir:/:/bin"]'
	set_args noexec.sh
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly noexec.sh "Permission denied"
	# nothing runnable and nothing there at all: No such file or directory
	set_args no-such-program
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly no-such-program "No such file or directory"
}

# in_netns_exec ARG...: the runtime under test, with this test's state root,
# run through `ip netns exec $NETNS`, which mounts a fresh sysfs over /sys in
# a mount namespace of its own: no cgroup hierarchy is visible there.
in_netns_exec() {
	in_file ip netns exec "$NETNS" "$TERN_BIN" --root "$ROOT" "$@"
}

@test "errors: no cgroup hierarchy visible (ip netns exec): create with limits, or without, fails and leaves nothing" {
	NETNS=tern-nocg-$$-$RANDOM
	ip netns add "$NETNS"
	# (what the test relies on: the hierarchies are hidden in there)
	run ip netns exec "$NETNS" grep -c ' - cgroup' /proc/self/mountinfo
	[ "$output" = 0 ]
	set_args /bin/sleep "$MARK"
	update_config '.linux.resources.memory = {"limit": 67108864} | .linux.resources.pids = {"limit": 64}'
	run in_netns_exec run -d -b "$BUNDLE" "$ID"
	check_fails_cleanly cgroup
	is_runc || output_mentions "no cgroup hierarchy is mounted" "nsenter --net="
	# a root container always has a cgroup (runc refuses too): no limits,
	# no cgroupsPath, still refused
	update_config 'del(.linux.resources.memory) | del(.linux.resources.pids)'
	run in_netns_exec create -b "$BUNDLE" "$ID"
	check_fails_cleanly cgroup
}

@test "errors: no cgroup hierarchy visible (ip netns exec): pause, update, ps, delete of a running container fail and change nothing" {
	NETNS=tern-nocg-$$-$RANDOM
	ip netns add "$NETNS"
	start_sleeper
	pid=$(state_field "$ID" pid)
	pids=$(host_cgroup_dir "$pid" pids)
	old_max=$(cat "$pids/pids.max")
	for cmd in pause "update --pids-limit 42" ps; do
		# shellcheck disable=SC2086 # the words of the command
		run in_netns_exec $cmd "$ID"
		[ "$status" -ne 0 ]
		is_runc || output_mentions "no cgroup hierarchy is mounted"
	done
	if is_tern; then
		# runc 1.1.5 prints empty stats here, and delete --force removes
		# its state but leaves the cgroup behind
		for cmd in "events --stats" "delete --force"; do
			# shellcheck disable=SC2086 # the words of the command
			run in_netns_exec $cmd "$ID"
			[ "$status" -ne 0 ]
			output_mentions "no cgroup hierarchy is mounted"
		done
	fi
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	[ "$(cat "$pids/pids.max")" = "$old_max" ]
	# where the hierarchies are visible, all is as before
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

# runc 1.1.5 exits 255 only for exec's failures (exec.go); run's go through
# its plain fatal(), status 1, as create's do. The process's own status,
# 255 included, is run's exit status.
@test "errors: run exits 1 when the runtime fails, with the process's status when it ran" {
	set_args /no-such-program
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 1 ]
	[[ "${output,,}" == *"no such file or directory"* ]]
	tern delete --force "$ID" 2>/dev/null || true
	set_args /bin/sh -c 'exit 255'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 255 ]
	check_nothing_left "$ID"
}
