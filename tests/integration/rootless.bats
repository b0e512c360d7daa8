#!/usr/bin/env bats
# Rootless containers: an unprivileged user (made for this file, removed at
# the end even when a test fails) runs `spec --rootless` and the lifecycle
# commands with no --root, so the state goes to $XDG_RUNTIME_DIR/tern; its
# own uid is mapped directly, other ranges through newuidmap/newgidmap
# (Debian package uidmap) with /etc/subuid entries the tests add and
# remove. This host is cgroup v1 hybrid: nothing is delegated to the user,
# so rootless containers run without a cgroup and limits are a clear error.

load helpers
load rootless-helpers

setup_file() {
	rl_setup_file
}

teardown_file() {
	rl_teardown_file
}

setup() {
	rl_setup
}

teardown() {
	rl_teardown
}

@test "rootless: the test user really is unprivileged (no capabilities, not root)" {
	run as_user sh -c 'id -u; grep ^CapEff /proc/self/status'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$RL_UID" ]
	[ "${lines[1]}" = "CapEff:	0000000000000000" ]
}

@test "rootless: spec --rootless maps the user's own uid and gid to root, no resources" {
	run jq -c '[.linux.uidMappings, .linux.gidMappings, (.linux.resources // "none"),
		([.linux.namespaces[].type] | index("network")), ([.linux.namespaces[].type] | index("user") != null)]' "$BUNDLE/config.json"
	[ "$status" -eq 0 ]
	[ "$output" = "[[{\"containerID\":0,\"hostID\":$RL_UID,\"size\":1}],[{\"containerID\":0,\"hostID\":$RL_GID,\"size\":1}],\"none\",null,true]" ]
	# runc's rootless spec: /sys bound from the host, no gid= on any mount
	[ "$(jq -r '.mounts[] | select(.destination == "/sys") | .type + " " + (.options | join(","))' "$BUNDLE/config.json")" = "none rbind,nosuid,noexec,nodev,ro" ]
	! jq -r '.mounts[].options[]?' "$BUNDLE/config.json" | grep -q '^gid=' || false
}

@test "rootless: run as the user: uid 0 inside, uid_map and gid_map map the user's ids, setgroups denied" {
	set_cmd 'id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups'
	run rtern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[ "${lines[1]}" = 0 ]
	[ "$(echo "${lines[2]}" | tr -s ' ' | sed 's/^ //')" = "0 $RL_UID 1" ]
	[ "$(echo "${lines[3]}" | tr -s ' ' | sed 's/^ //')" = "0 $RL_GID 1" ]
	# an unprivileged writer of gid_map must deny setgroups first
	[ "${lines[4]}" = deny ]
	check_nothing_left "$ID"
}

@test "rootless: run -d, state, exec, list, kill, delete; state under \$XDG_RUNTIME_DIR/tern, no cgroup" {
	set_args sleep "$MARK"
	run rtern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ -f "$XDG/tern/$ID/state.json" ]
	[ "$(stat -c %U "$XDG/tern/$ID/state.json")" = "$RL_USER" ]
	# 0700 and sticky, as runc makes $XDG_RUNTIME_DIR/runc
	[ "$(stat -c %a "$XDG/tern")" = 1700 ]
	[ ! -e "/run/tern/$ID" ]

	run rtern state "$ID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = running ]
	local pid
	pid=$(jq -r .pid <<<"$output")
	# the container's init runs as the user on the host
	[ "$(awk '/^Uid:/ {print $2}' /proc/"$pid"/status)" = "$RL_UID" ]
	# no cgroup of its own in any hierarchy: nothing is delegated here
	! grep -q "$ID" /proc/"$pid"/cgroup || false

	run rtern exec "$ID" sh -c 'id -u; cat /proc/self/uid_map'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[ "$(echo "${lines[1]}" | tr -s ' ' | sed 's/^ //')" = "0 $RL_UID 1" ]
	# the exec process is in the container's pid namespace (pid 1 is the
	# init), and its exit status comes back
	run rtern exec "$ID" sh -c 'tr "\0" " " </proc/1/cmdline; exit 7'
	[ "$status" -eq 7 ]
	[ "$output" = "sleep $MARK " ]

	run rtern list -q
	[ "$status" -eq 0 ]
	[ "$output" = "$ID" ]

	run rtern kill "$ID" KILL
	[ "$status" -eq 0 ]
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(rtern state "$ID" | jq -r .status)" = stopped ] && break
		sleep 0.05
	done
	[ "$(rtern state "$ID" | jq -r .status)" = stopped ]
	run rtern delete "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$XDG/tern/$ID" ]
	check_nothing_left "$ID"
}

@test "rootless: no runtime fd reaches the container (run and exec)" {
	set_args /bin/listfds
	KEEP_FDS=1 run as_user "$TERN_BIN" run -b "$BUNDLE" "$ID" 3<"$RL_DIR" 4</dev/null 6>"$RL_DIR/x" 9</etc/passwd
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f1 | sort -n | tr '\n' ' ')" = "0 1 2 " ]

	set_args sleep "$MARK"
	run rtern run -d -b "$BUNDLE" "$ID-x"
	[ "$status" -eq 0 ]
	KEEP_FDS=1 run as_user "$TERN_BIN" exec "$ID-x" /bin/listfds 3<"$RL_DIR" 5</etc/passwd
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f1 | sort -n | tr '\n' ' ')" = "0 1 2 " ]
	run rtern delete --force "$ID-x"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID-x"
}

@test "rootless: /dev entries are bind mounts of the host's nodes (mknod is refused in a user namespace)" {
	update_config '.root.readonly = false'
	set_cmd 'stat -c "%t:%T" /dev/null; grep -c " /dev/null " /proc/self/mountinfo; echo x >/dev/null && echo written; mknod /tmp/n c 1 3 2>&1 || echo mknod-refused'
	run rtern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "1:3" ]
	[ "${lines[1]}" = 1 ]
	[ "${lines[2]}" = written ]
	[[ "$output" == *"Operation not permitted"* ]]
	[ "${lines[-1]}" = mknod-refused ]
	check_nothing_left "$ID"
}

@test "rootless: subuid ranges through newuidmap/newgidmap: own uid -> 0, 65536 subordinate ids -> 1..65536" {
	command -v newuidmap >/dev/null # Debian package uidmap (scripts/test.sh installs it)
	add_subids 400000 65536
	update_config ".linux.uidMappings = [{\"containerID\": 0, \"hostID\": $RL_UID, \"size\": 1},
			{\"containerID\": 1, \"hostID\": 400000, \"size\": 65536}]
		| .linux.gidMappings = [{\"containerID\": 0, \"hostID\": $RL_GID, \"size\": 1},
			{\"containerID\": 1, \"hostID\": 400000, \"size\": 65536}]
		| .root.readonly = false
		| .process.user = {\"uid\": 1000, \"gid\": 2000}"
	# a process running as container uid 1000 (a subordinate id) makes a file
	set_cmd 'id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map; touch /tmp/owned && echo made'
	run rtern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(tr -s ' ' <<<"$output" | sed 's/^ //')" = "1000
2000
0 $RL_UID 1
1 400000 65536
0 $RL_GID 1
1 400000 65536
made" ]
	# container uid 1000 is host uid 400000 + 999
	[ "$(stat -c %u:%g "$BUNDLE/rootfs/tmp/owned")" = "400999:401999" ]
	check_nothing_left "$ID"
}

@test "rootless: a mapping of another user's uid without /etc/subuid entries fails, naming the mapping" {
	update_config ".linux.uidMappings = [{\"containerID\": 0, \"hostID\": $RL_UID, \"size\": 1},
			{\"containerID\": 1, \"hostID\": 0, \"size\": 1}]"
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.uidMappings[1]" "hostID 0" newuidmap "/etc/subuid" "not allowed"
	# and the host's root was never mapped: no state left, nothing runs
	[ ! -e "$XDG/tern/$ID" ]
}

@test "rootless: gid ranges without /etc/subgid entries fail, naming linux.gidMappings" {
	update_config ".linux.gidMappings = [{\"containerID\": 0, \"hostID\": $RL_GID, \"size\": 1},
			{\"containerID\": 1, \"hostID\": 400000, \"size\": 100}]"
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.gidMappings[1]" "hostID 400000" newgidmap "/etc/subgid"
}

@test "rootless: a subordinate range without newuidmap in PATH is a clear error" {
	add_subids 400000 65536
	update_config ".linux.uidMappings = [{\"containerID\": 0, \"hostID\": $RL_UID, \"size\": 1},
			{\"containerID\": 1, \"hostID\": 400000, \"size\": 65536}]"
	run as_user env PATH=/nonexistent "$TERN_BIN" run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.uidMappings[1]" "newuidmap" "not in PATH" "No such file or directory"
}

@test "rootless: linux.resources.memory with no writable cgroup fails clearly (v1 hybrid host: nothing delegated)" {
	update_config '.linux.resources = {"memory": {"limit": 104857600}}'
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.resources.memory" "rootless" "Permission denied"
	[ ! -e "$XDG/tern/$ID" ]
}

@test "rootless: linux.resources.pids likewise; device rules alone are ignored, as runc does" {
	update_config '.linux.resources = {"pids": {"limit": 50}}'
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.resources.pids" "rootless"
	update_config '.linux.resources = {"devices": [{"allow": false, "access": "rwm"}]}'
	set_cmd 'echo ok'
	run rtern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	check_nothing_left "$ID"
}

@test "rootless: an explicit linux.cgroupsPath the user cannot create is an error" {
	update_config ".linux.cgroupsPath = \"/$ID\""
	run rtern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.cgroupsPath" "not delegated" "Permission denied"
}

@test "rootless: XDG_RUNTIME_DIR unset: /run/tern as with runc, and the error says to set it" {
	set_args sleep "$MARK"
	run in_file setpriv --reuid "$RL_UID" --regid "$RL_GID" --init-groups \
		env -u XDG_RUNTIME_DIR HOME="$RL_DIR" "$TERN_BIN" run -d -b "$BUNDLE" "$ID"
	check_fails_cleanly "/run/tern" "XDG_RUNTIME_DIR" "Permission denied"
	[ ! -e "/run/tern/$ID" ]
	run in_file setpriv --reuid "$RL_UID" --regid "$RL_GID" --init-groups \
		env -u XDG_RUNTIME_DIR "$TERN_BIN" list
	[ "$status" -ne 0 ]
	[[ "$output" == *"XDG_RUNTIME_DIR"* ]]
}

@test "rootless: pause, ps and update without a cgroup are clear errors, and the container keeps running" {
	set_args sleep "$MARK"
	run rtern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run rtern pause "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cgroup"* ]]
	[ "$(rtern state "$ID" | jq -r .status)" = running ]
	# ps lists a cgroup's processes: likewise a clear error
	run rtern ps "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"has no cgroup"* ]]
	# and update has nowhere to put a limit
	run rtern update --memory 64m "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"linux.resources.memory"*"rootless"* ]]
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless: features prints the same as for root" {
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	local as_root=$output
	run rtern features
	[ "$status" -eq 0 ]
	[ "$output" = "$as_root" ]
}

@test "rootless: delegated cgroups (v1 memory and pids, unified) hold the container and its limits; delete removes them" {
	# devices too: its rules need CAP_SYS_ADMIN, so they are skipped (runc too)
	delegate memory pids unified devices
	update_config '.linux.resources = {"memory": {"limit": 67108864}, "pids": {"limit": 40}}'
	set_args sleep "$MARK"
	run in_delegated "$TERN_BIN" run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	local pid mem pids uni devs
	pid=$(rtern state "$ID" | jq -r .pid)
	read -r mem pids uni devs <<<"$DELEGATED"
	grep -qx "$pid" "$devs/$ID/cgroup.procs"
	# no rule was written: the host's default "a *:* rwm" is still there
	[ "$(cat "$devs/$ID/devices.list")" = "a *:* rwm" ]
	grep -qx "$pid" "$mem/$ID/cgroup.procs"
	grep -qx "$pid" "$pids/$ID/cgroup.procs"
	grep -qx "$pid" "$uni/$ID/cgroup.procs"
	[ "$(cat "$mem/$ID/memory.limit_in_bytes")" = 67108864 ]
	[ "$(cat "$pids/$ID/pids.max")" = 40 ]
	# update changes the delegated cgroup; cpu is not delegated: an error
	run rtern update --memory 32m --pids-limit 30 "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$mem/$ID/memory.limit_in_bytes")" = 33554432 ]
	[ "$(cat "$pids/$ID/pids.max")" = 30 ]
	run rtern update --cpu-share 100 "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"linux.resources.cpu"*"rootless"* ]]
	# ps and kill --all go through the cgroup
	run rtern ps "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"sleep $MARK"* ]]
	run rtern kill --all "$ID" KILL
	[ "$status" -eq 0 ]
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$mem/$ID" ] && [ ! -e "$pids/$ID" ] && [ ! -e "$uni/$ID" ] && [ ! -e "$devs/$ID" ]
	check_nothing_left "$ID"
	undelegate
}

@test "rootless: with a delegated memory cgroup, a cpu limit (cpu not delegated) still fails naming linux.resources.cpu" {
	delegate memory
	update_config '.linux.resources = {"memory": {"limit": 67108864}, "cpu": {"shares": 512}}'
	run in_delegated "$TERN_BIN" run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.resources.cpu" "rootless" "Permission denied"
	# the delegated memory cgroup it made on the way is gone again
	[ ! -e "${DELEGATED# }/$ID" ]
	undelegate
}

@test "rootless: process.terminal with --console-socket: a pty from the container's devpts (no gid=5 needed)" {
	update_config '.process.terminal = true'
	set_cmd 'tty; stty size >/dev/null && echo is-a-tty; echo done'
	start_recvtty "$RL_DIR/tty.sock" "$RL_DIR/tty.out"
	# the user connects to root's socket
	chmod 666 "$RL_DIR/tty.sock"
	run rtern create --console-socket "$RL_DIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run rtern start "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	out=$(tr -d '\r' <"$RL_DIR/tty.out")
	[[ "$out" == */dev/pts/0* ]]
	[[ "$out" == *is-a-tty* ]]
	[[ "$out" == *done* ]]
	run rtern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless: the two-stage path (a time namespace) with subuid ranges, and exec into it" {
	add_subids 400000 65536
	update_config ".linux.uidMappings += [{\"containerID\": 1, \"hostID\": 400000, \"size\": 65536}]
		| .linux.gidMappings += [{\"containerID\": 1, \"hostID\": 400000, \"size\": 65536}]
		| .linux.namespaces += [{\"type\": \"time\"}]
		| .linux.timeOffsets = {\"monotonic\": {\"secs\": 86400, \"nanosecs\": 0}}"
	set_args sleep "$MARK"
	run rtern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	# timens_offsets shows the reader's own time namespace
	run rtern exec "$ID" sh -c 'cat /proc/self/uid_map; cat /proc/self/timens_offsets'
	[ "$status" -eq 0 ]
	[ "$(tr -s ' ' <<<"${lines[0]}" | sed 's/^ //')" = "0 $RL_UID 1" ]
	[ "$(tr -s ' ' <<<"${lines[1]}" | sed 's/^ //')" = "1 400000 65536" ]
	[[ "${lines[2]}" == "monotonic"*"86400"* ]]
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}
