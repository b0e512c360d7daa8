#!/usr/bin/env bats
# Where the container lives: its cgroup (the resource limits are another
# file's business). Placement is checked in every hierarchy this host has.

load helpers

# expected_cgroups ID: our own /proc/self/cgroup with "/ID" appended to
# each path: where runc, and tern, put a container without cgroupsPath (below
# the runtime's own cgroup, so a limit on the caller also holds the container).
expected_cgroups() {
	awk -F: -v id="$1" 'BEGIN { OFS = ":" } { $3 = ($3 == "/" ? "" : $3) "/" id; print }' /proc/$$/cgroup
}

@test "cgroup: without cgroupsPath the container nests below the caller's cgroup in every hierarchy, and exec joins it" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	diff <(expected_cgroups "$ID") /proc/"$pid"/cgroup
	run tern exec "$ID" cat /proc/self/cgroup
	[ "$status" -eq 0 ]
	diff <(expected_cgroups "$ID") <(printf '%s\n' "${lines[@]}")
	mem=$(host_cgroup_dir "$pid" memory)
	[[ "$mem" == */"$ID" ]]
	[ -d "$mem" ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$mem" ]
}

@test "cgroup: linux.cgroupsPath (absolute) is honoured and removed on delete" {
	update_config ".linux.cgroupsPath = \"/tern-test/$ID\""
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	mem=$(host_cgroup_dir "$pid" memory)
	[[ "$mem" == /sys/fs/cgroup*/tern-test/"$ID" ]]
	[[ "$(host_cgroup_dir "$pid" pids)" == /sys/fs/cgroup*/tern-test/"$ID" ]]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$mem" ]
	rmdir /sys/fs/cgroup/*/tern-test /sys/fs/cgroup/tern-test 2>/dev/null || true
}

@test "cgroup: a cgroup namespace has the container's cgroup as its root" {
	update_config '.linux.namespaces += [{"type": "cgroup"}]'
	set_cmd 'cat /proc/self/cgroup'
	run_container
	[ "$status" -eq 0 ]
	for line in "${lines[@]}"; do
		[[ "$line" == *":/" ]] || {
			echo "not the namespace root: $line" >&2
			false
		}
	done
}

@test "cgroup: the cgroup is removed after the process was SIGKILLed from the host" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	kill -9 "$(state_field "$ID" pid)"
	wait_status "$ID" stopped
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup: --systemd-cgroup without systemd as PID 1 fails clearly and leaves nothing" {
	[ ! -d /run/systemd/system ] || skip "LOUD: systemd runs on this host; this test covers hosts without it"
	update_config ".linux.cgroupsPath = \"system.slice:tern:$ID\""
	run in_file "$TERN_BIN" --root "$ROOT" --systemd-cgroup run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *--systemd-cgroup*systemd* ]]
	check_nothing_left "$ID"
}

@test "cgroup: hooks see the container process already in its cgroup" {
	hook=$BATS_TEST_TMPDIR/hook.sh
	# the hook reads the state on stdin and records the process's cgroups
	# (renamed into place: the test never reads it half written)
	cat >"$hook" <<HOOK
#!/bin/sh
pid=\$(jq -r .pid)
cat /proc/\$pid/cgroup > "$BATS_TEST_TMPDIR/\$1.cgroup.tmp"
mv "$BATS_TEST_TMPDIR/\$1.cgroup.tmp" "$BATS_TEST_TMPDIR/\$1.cgroup"
HOOK
	chmod +x "$hook"
	update_config ".hooks = {
		createRuntime: [{path: \"$hook\", args: [\"hook\", \"createRuntime\"]}],
		poststart: [{path: \"$hook\", args: [\"hook\", \"poststart\"]}]}"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	for h in createRuntime poststart; do
		wait_for_file "$BATS_TEST_TMPDIR/$h.cgroup"
		# every hierarchy (v1) or the unified one (v2) names the container
		diff /proc/"$pid"/cgroup "$BATS_TEST_TMPDIR/$h.cgroup"
		grep -q "/$ID\$" "$BATS_TEST_TMPDIR/$h.cgroup"
	done
}
