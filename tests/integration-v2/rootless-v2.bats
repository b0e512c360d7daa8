#!/usr/bin/env bats
# Rootless containers on a pure cgroup v2 host: with no cgroup delegated to
# the user, the container runs without one and limits are a clear error;
# with one delegated the way systemd delegates (the directory and its
# cgroup.procs, cgroup.subtree_control and cgroup.threads owned by the user,
# the user's own processes in a leaf below it), the container's cgroup goes
# there with its limits, and pause/resume work through it.
#
# This host is cgroup v1 hybrid, so the suite runs this file inside a qemu
# guest booted on a pure v2 hierarchy (tests/vm/run-in-guest.sh). Run
# anywhere else, every test skips, loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers
load ../integration/rootless-helpers

setup_file() {
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || return 0
	rl_setup_file
}

teardown_file() {
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || return 0
	rl_teardown_file
}

setup() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
		skip "!!! NOT A PURE CGROUP V2 HOST: /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup); run this file inside tests/vm/run-in-guest.sh !!!"
	fi
	rl_setup
}

teardown() {
	rl_teardown
}

# delegate_v2: /sys/fs/cgroup/DELEG owned by the user as systemd delegates
# it, with a leaf DELEG/user for the user's processes. Sets DELEGATED and
# DELEG (the path relative to the hierarchy).
delegate_v2() {
	DELEG=/rldeleg-$$-${BATS_SUITE_TEST_NUMBER:-0}
	local d=/sys/fs/cgroup$DELEG
	mkdir "$d"
	chown "$RL_USER:" "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads"
	mkdir "$d/user"
	chown -R "$RL_USER:" "$d/user"
	DELEGATED=$d
	export DELEGATED DELEG
}

# as_user_in_leaf CMD...: CMD as the user from the delegated leaf cgroup.
as_user_in_leaf() {
	in_file sh -c 'echo $$ >"$DELEGATED/user/cgroup.procs" || exit 1; exec "$@"' sh \
		setpriv --reuid "$RL_UID" --regid "$RL_GID" --init-groups \
		env HOME="$RL_DIR" USER="$RL_USER" XDG_RUNTIME_DIR="$XDG" "$@"
}

@test "rootless v2: no delegated cgroup: the container runs without one" {
	set_args sleep "$MARK"
	run rtern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	local pid
	pid=$(rtern state "$ID" | jq -r .pid)
	# still in the caller's cgroup (the guest runs the tests in the root)
	[ "$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)" = "$(sed -n 's/^0:://p' /proc/self/cgroup)" ]
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless v2: no delegated cgroup: linux.resources.memory fails naming the field" {
	update_config '.linux.resources = {"memory": {"limit": 67108864}}'
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.resources.memory" "rootless" "Permission denied"
}

@test "rootless v2: a delegated cgroup holds the container with memory.max and pids.max; pause, resume, delete work" {
	delegate_v2
	update_config ".linux.cgroupsPath = \"$DELEG/$ID\"
		| .linux.resources = {\"memory\": {\"limit\": 67108864}, \"pids\": {\"limit\": 40},
			\"devices\": [{\"allow\": false, \"access\": \"rwm\"}]}"
	set_args sleep "$MARK"
	run as_user_in_leaf "$TERN_BIN" run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	local pid dir=$DELEGATED/$ID
	pid=$(rtern state "$ID" | jq -r .pid)
	[ "$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)" = "$DELEG/$ID" ]
	[ "$(cat "$dir/memory.max")" = 67108864 ]
	[ "$(cat "$dir/pids.max")" = 40 ]
	# the delegated cgroup handed its controllers down
	[[ " $(cat "$DELEGATED/cgroup.subtree_control") " == *" memory "* ]]

	run rtern pause "$ID"
	[ "$status" -eq 0 ]
	[ "$(rtern state "$ID" | jq -r .status)" = paused ]
	[ "$(cat "$dir/cgroup.freeze")" = 1 ]
	run rtern resume "$ID"
	[ "$status" -eq 0 ]
	[ "$(rtern state "$ID" | jq -r .status)" = running ]

	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$dir" ]
	check_nothing_left "$ID"
}

@test "rootless v2: a cgroupsPath outside the delegated cgroup fails naming linux.cgroupsPath" {
	delegate_v2
	update_config ".linux.cgroupsPath = \"/$ID\""
	run as_user_in_leaf "$TERN_BIN" run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.cgroupsPath" "not delegated" "Permission denied"
}
