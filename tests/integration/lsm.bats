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

# apparmor_said_on CMD...: CMD in a private mount namespace where
# /sys/module/apparmor/parameters/enabled says Y (a tmpfs over /sys/module
# there, nothing changed on the host). The host's AppArmor stays off, so a
# profile gets past tern's checks to the write of "exec PROFILE", which the
# real procfs then refuses (no LSM takes it) and any other file takes.
apparmor_said_on() {
	unshare -m --propagation private sh -c '
		mount -t tmpfs tern-test /sys/module &&
		mkdir -p /sys/module/apparmor/parameters &&
		echo Y >/sys/module/apparmor/parameters/enabled &&
		exec "$@"' sh "$@"
}

# hostile_proc: the container gets no procfs: its /proc is the image's own
# directory, holding regular files where the attributes would be. (Then
# the init itself cannot start: it needs a procfs, as runc's does.)
hostile_proc() {
	update_config '.mounts |= map(select(.destination != "/proc"))'
	mkdir -p "$BUNDLE/rootfs/proc/self/attr/apparmor"
	: >"$BUNDLE/rootfs/proc/self/attr/apparmor/exec"
	: >"$BUNDLE/rootfs/proc/self/attr/exec"
}

# labels_stayed_out: nothing was written to the image's fake attributes.
labels_stayed_out() {
	[ ! -s "$BUNDLE/rootfs/proc/self/attr/apparmor/exec" ] && [ ! -s "$BUNDLE/rootfs/proc/self/attr/exec" ] || {
		echo "the label went to the container's /proc:" \
			"$(cat "$BUNDLE/rootfs/proc/self/attr/apparmor/exec" "$BUNDLE/rootfs/proc/self/attr/exec")"
		return 1
	}
}

@test "lsm: exec --apparmor writes the profile through a private procfs, never the container's /proc" {
	apparmor_off
	is_tern || skip "the AppArmor check is faked for tern's way of reading it"
	hostile_proc
	# The init needs a procfs until it runs (it reopens exec.fifo through
	# /proc/self/fd, holding no directory of the host): the container's
	# own process takes its procfs away once it runs, leaving the image's
	# files there, and only then comes the exec.
	update_config '.mounts += [{"destination": "/proc", "type": "proc", "source": "proc"}]
		| .process.capabilities.bounding += ["CAP_SYS_ADMIN"]
		| .process.capabilities.effective += ["CAP_SYS_ADMIN"]
		| .process.capabilities.permitted += ["CAP_SYS_ADMIN"]'
	set_cmd "umount -l /proc && touch /tmp/no-procfs && exec sleep $MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/no-procfs"
	run in_file apparmor_said_on "$TERN_BIN" --root "$ROOT" exec --apparmor tern-test-profile "$ID" \
		/bin/cat /proc/self/attr/apparmor/exec
	echo "$output"
	# the kernel's own attr/exec refused it: no process ran unconfined
	[ "$status" -ne 0 ]
	[[ "$output" != *"exec tern-test-profile"* ]]
	[[ "$output" == *"process.apparmorProfile \`tern-test-profile\`"*"/proc/thread-self/attr/exec: Invalid argument"* ]]
	labels_stayed_out
	no_exec_left
}

@test "lsm: process.apparmorProfile is written through a verified procfs, never the container's /proc" {
	apparmor_off
	is_tern || skip "the AppArmor check is faked for tern's way of reading it"
	hostile_proc
	update_config '.process.apparmorProfile = "tern-test-profile"'
	set_cmd 'cat /proc/self/attr/apparmor/exec; echo ran'
	run in_file apparmor_said_on "$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" != *ran* ]]
	# refused by the kernel's attr/exec, or (past the credential change,
	# with no private procfs to be had) the image's /proc refused as no
	# procfs: either way it reached no file of the image's
	[[ "$output" == *"process.apparmorProfile \`tern-test-profile\`"* ]]
	labels_stayed_out
}
