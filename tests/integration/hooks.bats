#!/usr/bin/env bats
# OCI hooks: order, stdin state, args/env, timeout, failures.

load helpers

# hook NAME: a hook entry that appends "NAME <state json>" to /hooks.log of
# the rootfs. Host-side hooks write $BUNDLE/rootfs/hooks.log, which is the
# same file as /hooks.log seen by startContainer inside the container (and by
# createContainer, in the container's mount namespace before pivot_root).
hook() {
	local log=$BUNDLE/rootfs/hooks.log
	[ "$1" = startContainer ] && log=/hooks.log
	jq -n -c --arg n "$1" --arg log "$log" \
		'{path: "/bin/sh", args: ["sh", "-c", "printf \"%s %s %s\\n\" \"$0\" \"$HOOKVAR\" \"$(cat | tr -d \"\\n\")\" >>\($log)", $n], env: ["HOOKVAR=var-\($n)"]}'
}

add_hook() {
	update_config ".hooks.$1 += [$2]"
}

all_hooks() {
	add_hook prestart "$(hook prestart)"
	add_hook prestart "$(hook prestart-2)"
	add_hook createRuntime "$(hook createRuntime)"
	add_hook createContainer "$(hook createContainer)"
	add_hook startContainer "$(hook startContainer)"
	add_hook poststart "$(hook poststart)"
	add_hook poststop "$(hook poststop)"
}

@test "hooks: every kind runs at the right time (create/start/delete), in order, with the state on stdin" {
	# runc 1.1.5 lacks this: it runs poststart hooks during create, before startContainer
	set_args /bin/sleep "$MARK"
	add_hook prestart "$(hook prestart)"
	add_hook prestart "$(hook prestart-2)"
	add_hook createRuntime "$(hook createRuntime)"
	add_hook createContainer "$(hook createContainer)"
	add_hook startContainer "$(hook startContainer)"
	add_hook poststart "$(hook poststart)"
	add_hook poststop "$(hook poststop)"
	log=$BUNDLE/rootfs/hooks.log
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(cut -d' ' -f1 "$log" | tr '\n' ' ')" = "prestart prestart-2 createRuntime createContainer " ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" running
	wait_until 10 grep -q ^poststart "$log"
	[ "$(cut -d' ' -f1 "$log" | tr '\n' ' ')" = "prestart prestart-2 createRuntime createContainer startContainer poststart " ]
	run tern kill "$ID" KILL
	wait_status "$ID" stopped
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	[ "$(cut -d' ' -f1 "$log" | tr '\n' ' ')" = "prestart prestart-2 createRuntime createContainer startContainer poststart poststop " ]
	# env honoured, state JSON with id/pid/status/bundle on every line (the
	# spec makes pid optional once stopped)
	while read -r name var json; do
		[ "$var" = "var-$name" ]
		echo "$json" | jq -e --arg id "$ID" --arg b "$BUNDLE" \
			'.id == $id and .bundle == $b and (.status | type == "string") and .ociVersion
			 and ((.pid | type == "number") or .status == "stopped")' >/dev/null ||
			{
				echo "bad state for $name: $json"
				false
			}
	done <"$log"
	grep ^poststart "$log" | cut -d' ' -f3- | jq -e '.status == "running" and .pid > 0'
	grep ^poststop "$log" | cut -d' ' -f3- | jq -e '.status == "stopped"'
}

@test "hooks: all kinds run during run, with env and the state on stdin" {
	set_cmd 'sleep 0.1'
	all_hooks
	log=$BUNDLE/rootfs/hooks.log
	run_container
	[ "$status" -eq 0 ]
	order=$(cut -d' ' -f1 "$log" | tr '\n' ' ')
	[[ "$order" == "prestart prestart-2 createRuntime createContainer "* ]]
	[[ "$order" == *" poststop " ]]
	[[ "$order" == *" startContainer "* && "$order" == *" poststart "* ]]
	while read -r name var json; do
		[ "$var" = "var-$name" ]
		# runc leaves out pid once stopped
		echo "$json" | jq -e --arg id "$ID" --arg b "$BUNDLE" \
			'.id == $id and .bundle == $b and (.status | type == "string") and ((.pid | type == "number") or .status == "stopped")' >/dev/null
	done <"$log"
}

@test "hooks: args are passed as given" {
	add_hook prestart "{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"echo \\\"\$1|\$2\\\" >$BATS_TEST_TMPDIR/args\", \"zero\", \"one two\", \"three\"]}"
	run_container
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/args")" = "one two|three" ]
}

@test "hooks: a timeout kills a sleeping hook and fails the operation" {
	set_args /bin/true
	add_hook createRuntime "{\"path\": \"/bin/sleep\", \"args\": [\"sleep\", \"$MARK\"], \"timeout\": 1}"
	SECONDS=0
	run tern create -b "$BUNDLE" "$ID"
	[ "$SECONDS" -lt 10 ]
	check_fails_cleanly
	is_runc || [[ "$output" == *timeout* || "$output" == *"timed out"* ]]
}

@test "hooks: a failing createRuntime hook fails create and leaves nothing behind" {
	set_args /bin/sleep "$MARK"
	add_hook createRuntime '{"path": "/bin/sh", "args": ["sh", "-c", "exit 7"]}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *createRuntime* ]]
}

@test "hooks: a failing prestart hook fails create" {
	set_args /bin/sleep "$MARK"
	add_hook prestart '{"path": "/bin/false"}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
}

@test "hooks: a hook that does not exist fails create and names it" {
	set_args /bin/sleep "$MARK"
	add_hook createRuntime '{"path": "/no/such/hook"}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == */no/such/hook* ]]
}

@test "hooks: a failing poststop hook does not fail the command" {
	set_cmd 'exit 0'
	add_hook poststop '{"path": "/bin/false"}'
	run_container
	[ "$status" -eq 0 ]
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	run tern delete -f "$ID-2"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID-2"
}

@test "hooks: a failing poststart hook fails start: the container is stopped and deleted, poststop runs (runtime-spec 1.3)" {
	set_args /bin/sleep "$MARK"
	add_hook poststart '{"path": "/bin/false"}'
	add_hook poststop "$(hook poststop)"
	tern create -b "$BUNDLE" "$ID"
	run tern start "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"container \`$ID\` stopped and deleted"*poststart* ]]
	grep -q "^poststop " "$BUNDLE/rootfs/hooks.log"
	check_nothing_left "$ID"
	# run: the same
	rm "$BUNDLE/rootfs/hooks.log"
	run tern run -d -b "$BUNDLE" "$ID-r"
	[ "$status" -ne 0 ]
	grep -q "^poststop " "$BUNDLE/rootfs/hooks.log"
	check_nothing_left "$ID-r"
}

# env_hook FILE [ENV-JSON]: a hook that writes its environment to FILE;
# with ENV-JSON (e.g. []) that is its env field, without it the field is
# left out.
env_hook() {
	if [ $# -gt 1 ]; then
		echo "{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"/usr/bin/env >$1\"], \"env\": $2}"
	else
		echo "{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"/usr/bin/env >$1\"]}"
	fi
}

@test "hooks: a hook without env gets the runtime's environment, one with an empty env none (as runc and crun)" {
	export TERN_HOOK_PROBE=from-the-caller
	add_hook prestart "$(env_hook "$BATS_TEST_TMPDIR/prestart.env")"
	add_hook createRuntime "$(env_hook "$BATS_TEST_TMPDIR/empty.env" '[]')"
	add_hook poststop "$(env_hook "$BATS_TEST_TMPDIR/poststop.env")"
	run_container
	[ "$status" -eq 0 ]
	grep -qx TERN_HOOK_PROBE=from-the-caller "$BATS_TEST_TMPDIR/prestart.env"
	grep -qx TERN_HOOK_PROBE=from-the-caller "$BATS_TEST_TMPDIR/poststop.env"
	# PATH too, so that a hook can find its tools
	grep -q "^PATH=" "$BATS_TEST_TMPDIR/prestart.env"
	! grep -q TERN_HOOK_PROBE "$BATS_TEST_TMPDIR/empty.env" || false
	! grep -q "^PATH=" "$BATS_TEST_TMPDIR/empty.env" || false
}

# marker_hook NAME [STATUS]: a hook that appends NAME to $BATS_TEST_TMPDIR/ran
# and exits with STATUS (0 by default).
marker_hook() {
	echo "{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"echo $1 >>$BATS_TEST_TMPDIR/ran; exit ${2:-0}\"]}"
}

@test "hooks: a failing poststart hook stops its stage and fails run; every poststop hook runs, failing or not" {
	set_cmd 'sleep 0.1'
	add_hook poststart "$(marker_hook poststart-1 3)"
	add_hook poststart "$(marker_hook poststart-2)"
	add_hook poststop "$(marker_hook poststop-1 4)"
	add_hook poststop "$(marker_hook poststop-2 5)"
	add_hook poststop "$(marker_hook poststop-3)"
	run_container
	[ "$status" -ne 0 ]
	[ "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/ran")" = "poststart-1 poststop-1 poststop-2 poststop-3 " ]
	# the poststart failure is the error; each poststop failure a warning
	[[ "$output" == *"poststart hook \`/bin/sh\` exited with status 3"* ]]
	[[ "$output" == *"poststop hook \`/bin/sh\` exited with status 4"* ]]
	[[ "$output" == *"poststop hook \`/bin/sh\` exited with status 5"* ]]
	check_nothing_left "$ID"
}

@test "hooks: a failing poststart hook fails start, the hooks after it do not run, the poststop hooks do" {
	set_args /bin/sleep "$MARK"
	add_hook poststart "$(marker_hook poststart-1 3)"
	add_hook poststart "$(marker_hook poststart-2)"
	add_hook poststop "$(marker_hook poststop-1 4)"
	add_hook poststop "$(marker_hook poststop-2)"
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern start "$ID"
	[ "$status" -ne 0 ]
	[ "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/ran")" = "poststart-1 poststop-1 poststop-2 " ]
	check_nothing_left "$ID"
}

# status_in LOG NAME: the status field of the state NAME's hook read.
status_in() {
	grep "^$2 " "$1" | cut -d' ' -f3- | jq -r .status
}

@test "hooks: prestart, createRuntime and createContainer read status created; startContainer and poststart running" {
	# The create operation's environment exists when they run: crun passes
	# "created", and conformance suites expect it. (runc 1.1.5 passes
	# "creating" to those, "created" to startContainer and poststart, and
	# pid 1 to the hooks that run in the container.)
	set_args /bin/sleep "$MARK"
	add_hook prestart "$(hook prestart)"
	add_hook createRuntime "$(hook createRuntime)"
	add_hook createContainer "$(hook createContainer)"
	add_hook startContainer "$(hook startContainer)"
	add_hook poststart "$(hook poststart)"
	log=$BUNDLE/rootfs/hooks.log
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_until 10 grep -q ^poststart "$log"
	cat "$log"
	local name early=created late=running
	if [ "$(basename "$TERN_BIN")" = runc ]; then
		early=creating
		late=created
	fi
	for name in prestart createRuntime createContainer; do
		[ "$(status_in "$log" $name)" = "$early" ]
	done
	[ "$(status_in "$log" startContainer)" = "$late" ]
	[ "$(status_in "$log" poststart)" = "$late" ]
	# each with the init's pid, as the host sees it
	pid=$(state_field "$ID" pid)
	is_runc || [ "$(grep -c "\"pid\":$pid[,}]" "$log")" -eq 5 ]
}

# cwd_hook NAME: a hook that writes its working directory to
# $BUNDLE/NAME.cwd (an absolute path: the hook's cwd is what is tested).
cwd_hook() {
	jq -n -c --arg out "$BUNDLE/$1.cwd" '{path: "/bin/sh", args: ["sh", "-c", "pwd -P >\($out)"]}'
}

@test "hooks: createContainer hooks run in the container's root, prestart and createRuntime in the bundle, as in runc" {
	add_hook prestart "$(cwd_hook prestart)"
	add_hook createRuntime "$(cwd_hook createRuntime)"
	add_hook createContainer "$(cwd_hook createContainer)"
	# a hook written for runc may use a path relative to the root
	add_hook createContainer '{"path": "/bin/sh", "args": ["sh", "-c", "test -f image-dir/file"]}'
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	bundle=$(cd "$BUNDLE" && pwd -P)
	[ "$(cat "$BUNDLE/createContainer.cwd")" = "$bundle/rootfs" ]
	[ "$(cat "$BUNDLE/prestart.cwd")" = "$bundle" ]
	[ "$(cat "$BUNDLE/createRuntime.cwd")" = "$bundle" ]
}

@test "hooks: poststart and poststop hooks run in the bundle, whatever tern's working directory" {
	add_hook poststart "$(cwd_hook poststart)"
	add_hook poststop "$(cwd_hook poststop)"
	set_args sleep "$MARK"
	cd /
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	bundle=$(cd "$BUNDLE" && pwd -P)
	wait_for_file "$BUNDLE/poststart.cwd"
	[ "$(cat "$BUNDLE/poststart.cwd")" = "$bundle" ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	# runc runs poststop where `delete` was called from (containerd's shim
	# calls it from the bundle); tern runs every stage in the bundle
	is_runc || [ "$(cat "$BUNDLE/poststop.cwd")" = "$bundle" ]
}
