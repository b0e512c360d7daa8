#!/usr/bin/env bats
# LSM labels: process.selinuxLabel, linux.mountLabel, process.apparmorProfile
# and `exec --process-label / --apparmor`. SELinux and AppArmor are both off
# on the test machine: what is tested is that a label is never dropped
# silently (a clear error, nothing left behind), and that configs without a
# label (or with an empty one) are not affected.

load helpers

SELINUX_LABEL=system_u:system_r:container_t:s0:c1,c2
MOUNT_LABEL=system_u:object_r:container_file_t:s0:c1,c2

# The host facts these tests rely on, checked rather than assumed: with
# either LSM on, the label would be applied and these tests would not
# describe this host.
selinux_off() {
	if [ -e /sys/fs/selinux/enforce ] || grep -qw selinuxfs /proc/self/mountinfo; then
		skip "SELinux is enabled on this host"
	fi
}

apparmor_off() {
	if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
		skip "AppArmor is enabled on this host"
	fi
}

# no_exec_left: the container holds its init and nothing else (a refused
# exec must not leave a process behind in it).
no_exec_left() {
	run tern ps --format json "$ID"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq length)" -eq 1 ] || {
		echo "processes in the container: $output"
		return 1
	}
}

@test "lsm: process.selinuxLabel fails clearly when SELinux is off (host has SELinux off)" {
	selinux_off
	update_config ".process.selinuxLabel = \"$SELINUX_LABEL\""
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly
	is_runc || check_fails_cleanly "process.selinuxLabel" "$SELINUX_LABEL" \
		"SELinux is not enabled on this host"
}

@test "lsm: create with process.selinuxLabel fails before anything exists (SELinux off)" {
	selinux_off
	update_config ".process.selinuxLabel = \"$SELINUX_LABEL\""
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || check_fails_cleanly "process.selinuxLabel" "SELinux is not enabled"
	run tern list -q
	[ -z "$output" ]
}

@test "lsm: linux.mountLabel fails clearly when SELinux is off (host has SELinux off)" {
	selinux_off
	update_config ".linux.mountLabel = \"$MOUNT_LABEL\""
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || check_fails_cleanly "linux.mountLabel" "$MOUNT_LABEL" \
		"SELinux is not enabled on this host"
}

@test "lsm: process.apparmorProfile fails clearly when AppArmor is off (host has AppArmor off)" {
	apparmor_off
	update_config '.process.apparmorProfile = "tern-test-profile"'
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly
	is_runc || check_fails_cleanly "process.apparmorProfile" "tern-test-profile" \
		"AppArmor is not enabled on this host"
}

@test "lsm: empty or absent labels change nothing (SELinux and AppArmor off)" {
	update_config '.process.selinuxLabel = "" | .process.apparmorProfile = ""
		| .linux.mountLabel = ""'
	set_cmd 'cat /proc/self/attr/current 2>&1; echo ran'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *ran ]]
	update_config 'del(.process.selinuxLabel, .process.apparmorProfile, .linux.mountLabel)'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *ran ]]
}

@test "lsm: exec --process-label fails like the config field (SELinux off)" {
	selinux_off
	start_sleeper
	run tern exec --process-label "$SELINUX_LABEL" "$ID" /bin/echo should-not-run
	[ "$status" -ne 0 ]
	[[ "$output" != *should-not-run* ]]
	is_runc || {
		[[ "$output" == *"--process-label \`$SELINUX_LABEL\`: SELinux is not enabled on this host"* ]]
		# the old refusal is gone
		[[ "$output" != *"not supported by tern"* ]]
	}
	no_exec_left
	[ "$(state_field "$ID" status)" = running ]
}

@test "lsm: exec --apparmor fails like the config field (AppArmor off)" {
	apparmor_off
	start_sleeper
	run tern exec --apparmor tern-test-profile "$ID" /bin/echo should-not-run
	[ "$status" -ne 0 ]
	[[ "$output" != *should-not-run* ]]
	is_runc || {
		[[ "$output" == *"--apparmor \`tern-test-profile\`: AppArmor is not enabled on this host"* ]]
		[[ "$output" != *"not supported by tern"* ]]
	}
	no_exec_left
	[ "$(state_field "$ID" status)" = running ]
}

@test "lsm: exec --process with selinuxLabel or apparmorProfile fails naming the field (both off)" {
	selinux_off
	apparmor_off
	start_sleeper
	jq -n "{args: [\"/bin/echo\", \"should-not-run\"], cwd: \"/\", user: {uid: 0, gid: 0},
		selinuxLabel: \"$SELINUX_LABEL\"}" >"$BATS_TEST_TMPDIR/p1.json"
	run tern exec --process "$BATS_TEST_TMPDIR/p1.json" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" != *should-not-run* ]]
	is_runc || [[ "$output" == *"process.selinuxLabel"*"SELinux is not enabled"* ]]
	jq -n '{args: ["/bin/echo", "should-not-run"], cwd: "/", user: {uid: 0, gid: 0},
		apparmorProfile: "tern-test-profile"}' >"$BATS_TEST_TMPDIR/p2.json"
	run tern exec --process "$BATS_TEST_TMPDIR/p2.json" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" != *should-not-run* ]]
	is_runc || [[ "$output" == *"process.apparmorProfile"*"AppArmor is not enabled"* ]]
	no_exec_left
	# without the labels the same exec runs
	run tern exec "$ID" /bin/echo did-run
	[ "$status" -eq 0 ]
	[ "$output" = did-run ]
}
