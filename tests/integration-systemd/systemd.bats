#!/usr/bin/env bats
# The systemd cgroup driver (--systemd-cgroup): the container's cgroup is a
# transient scope that systemd creates over D-Bus, with the limits both in
# the cgroup files and in the unit's properties.
#
# It needs systemd as PID 1, which this machine does not have: the suite
# runs this file inside a qemu guest booted with systemd, once on a pure
# cgroup v2 hierarchy and once in systemd's hybrid layout
# (tests/vm/run-in-guest.sh --systemd [--hybrid]). Run anywhere else, every
# test skips, loudly.

load ../integration/helpers

setup() {
	if [ ! -d /run/systemd/system ]; then
		skip "!!! NO SYSTEMD AS PID 1 HERE: run this file inside tests/vm/run-in-guest.sh --systemd !!!"
	fi
	setup_bundle
	SLICE=tern-test.slice
	UNIT=tern-$ID.scope
}

teardown() {
	teardown_bundle
	[ -n "${UNIT:-}" ] && systemctl stop "$UNIT" 2>/dev/null
	return 0
}

v2() { [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; }

# tern_sd ARG...: tern with the systemd driver.
tern_sd() {
	tern --systemd-cgroup "$@"
}

run_detached() {
	run tern_sd run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "run -d failed: $output" >&2
		return 1
	}
	wait_status "$ID" running
}

# cg_of PID CONTROLLER: PID's cgroup path in CONTROLLER's hierarchy (v2: the
# unified one; CONTROLLER is ignored).
cg_of() {
	if v2; then
		sed -n 's/^0:://p' /proc/"$1"/cgroup
	else
		sed -n "s/^[0-9]*:\([^:]*,\)\{0,1\}$2\(,[^:]*\)\{0,1\}://p" /proc/"$1"/cgroup
	fi
}

# limit_file CONTROLLER V2FILE V1FILE: the container's file for a limit.
limit_file() {
	local pid dir
	pid=$(state_field "$ID" pid)
	if v2; then
		echo "/sys/fs/cgroup$(cg_of "$pid" x)/$2"
	else
		dir=$(host_cgroup_dir "$pid" "$1")
		echo "$dir/$3"
	fi
}

@test "systemd: the container runs in slice:prefix:name's scope, which systemd knows" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\""
	set_cmd "sleep $MARK"
	run_detached
	pid=$(state_field "$ID" pid)
	# tern-test.slice is a child of tern.slice
	[ "$(cg_of "$pid" memory)" = "/tern.slice/tern-test.slice/$UNIT" ]
	[ "$(cg_of "$pid" pids)" = "/tern.slice/tern-test.slice/$UNIT" ]
	run systemctl is-active "$UNIT"
	[ "$output" = active ]
	[ "$(systemctl show -p Delegate --value "$UNIT")" = yes ]
	# systemd lists the container process as the scope's
	systemctl show -p MainPID -p ControlGroup "$UNIT"
	grep -qx "$pid" "/sys/fs/cgroup$(v2 && echo || echo /pids)/tern.slice/tern-test.slice/$UNIT/cgroup.procs"
	# the state records the driver's form of the path
	run jq -r .cgroup_path "$ROOT/$ID/state.json"
	[[ "$output" == "$SLICE:$UNIT" ]]
}

@test "systemd: an empty cgroupsPath means system.slice:tern:ID" {
	update_config 'del(.linux.cgroupsPath)'
	set_cmd "sleep $MARK"
	run_detached
	pid=$(state_field "$ID" pid)
	[ "$(cg_of "$pid" memory)" = "/system.slice/$UNIT" ]
	systemctl is-active "$UNIT"
}

@test "systemd: limits are in the cgroup files and in the unit, and survive daemon-reload" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\"
		| .linux.resources = {memory: {limit: 67108864}, pids: {limit: 42},
		   cpu: {shares: 512, quota: 25000, period: 100000}}"
	set_cmd "sleep $MARK"
	run_detached
	mem=$(limit_file memory memory.max memory.limit_in_bytes)
	pids=$(limit_file pids pids.max pids.max)
	[ "$(cat "$mem")" = 67108864 ]
	[ "$(cat "$pids")" = 42 ]
	if v2; then
		[ "$(systemctl show -p MemoryMax --value "$UNIT")" = 67108864 ]
		[ "$(cat "$(limit_file cpu cpu.max x)")" = "25000 100000" ]
		# shares 512 -> weight 1 + (510 * 9999) / 262142 = 20
		[ "$(cat "$(limit_file cpu cpu.weight x)")" = 20 ]
	else
		[ "$(systemctl show -p MemoryLimit --value "$UNIT")" = 67108864 ]
		[ "$(cat "$(limit_file cpu x cpu.cfs_quota_us)")" = 25000 ]
		[ "$(cat "$(limit_file cpu x cpu.shares)")" = 512 ]
	fi
	[ "$(systemctl show -p TasksMax --value "$UNIT")" = 42 ]
	# systemd rewrites the attributes it manages on a reload: from the unit
	systemctl daemon-reload
	[ "$(cat "$mem")" = 67108864 ]
	[ "$(cat "$pids")" = 42 ]
	if v2; then
		[ "$(cat "$(limit_file cpu cpu.max x)")" = "25000 100000" ]
	else
		[ "$(cat "$(limit_file cpu x cpu.cfs_quota_us)")" = 25000 ]
	fi
}

@test "systemd: update changes the cgroup file and the unit property" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\"
		| .linux.resources = {memory: {limit: 67108864}, pids: {limit: 42}}"
	set_cmd "sleep $MARK"
	run_detached
	run tern_sd update --memory 100663296 --pids-limit 50 "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	mem=$(limit_file memory memory.max memory.limit_in_bytes)
	[ "$(cat "$mem")" = 100663296 ]
	[ "$(cat "$(limit_file pids pids.max pids.max)")" = 50 ]
	[ "$(systemctl show -p TasksMax --value "$UNIT")" = 50 ]
	systemctl daemon-reload
	[ "$(cat "$mem")" = 100663296 ]
}

@test "systemd: a memory limit kills an allocator over it; events report the OOM" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\"
		| .linux.resources.memory = {limit: 33554432, swap: 33554432}"
	# the allocator waits for /tmp/go: on v1 an OOM is reported to those
	# who listen when it happens, so events must be listening first
	set_cmd "while [ ! -e /tmp/go ]; do sleep 0.1; done; awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo awk-status \$? > /tmp/st; sleep $MARK"
	run_detached
	timeout 120 "$TERN_BIN" --root "$ROOT" events --interval 300ms "$ID" >"$BATS_TEST_TMPDIR/events" &
	EXTRA_PIDS=$!
	# events watches for OOMs by its second stats object (tern starts
	# watching after the first, runc before any)
	wait_until 60 has_lines_matching "$BATS_TEST_TMPDIR/events" '"type":"stats"' 2
	tern exec "$ID" touch /tmp/go
	for _ in $(seq 300); do
		grep -q '"type":"oom"' "$BATS_TEST_TMPDIR/events" && break
		sleep 0.2
	done
	grep '"type":"oom"' "$BATS_TEST_TMPDIR/events"
	# the allocator was killed, the container lives on
	for _ in $(seq 50); do
		run tern exec "$ID" cat /tmp/st
		[ "$status" -eq 0 ] && break
		sleep 0.2
	done
	[ "$output" = "awk-status 137" ]
}

@test "systemd: exec joins the scope; pause and resume work" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\""
	set_cmd "sleep $MARK"
	run_detached
	run tern_sd exec "$ID" cat /proc/self/cgroup
	[ "$status" -eq 0 ]
	[[ "$output" == *"$UNIT"* ]] || [[ "$output" == *"0::/"* ]]
	pid=$(state_field "$ID" pid)
	run tern_sd exec "$ID" sh -c 'sleep 30 & echo $!'
	run tern_sd ps "$ID"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c sleep)" -ge 1 ]
	run tern_sd pause "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = paused ]
	run tern_sd resume "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = running ]
}

@test "systemd: delete removes the scope and its cgroups, also after SIGKILL" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\"
		| .linux.resources.cpu = {cpus: \"0\"}"
	set_cmd "sleep $MARK"
	run_detached
	pid=$(state_field "$ID" pid)
	kill -9 "$pid"
	wait_status "$ID" stopped
	run tern_sd delete "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run systemctl is-active "$UNIT"
	[ "$output" != active ]
	check_nothing_left "$ID"
	# and with processes left over: delete --force of a running one
	run_detached
	run tern_sd delete --force "$ID"
	[ "$status" -eq 0 ]
	run systemctl is-active "$UNIT"
	[ "$output" != active ]
	check_nothing_left "$ID"
}

@test "systemd: bad cgroupsPath forms are refused before anything is created" {
	update_config '.linux.cgroupsPath = "/plain/path"'
	run tern_sd run -b "$BUNDLE" "$ID"
	check_fails_cleanly linux.cgroupsPath slice:prefix:name
	update_config '.linux.cgroupsPath = "bad--slice.slice:tern:x"'
	run tern_sd run -b "$BUNDLE" "$ID"
	check_fails_cleanly linux.cgroupsPath bad--slice.slice
	update_config '.linux.cgroupsPath = "system.slice:tern:"'
	run tern_sd run -b "$BUNDLE" "$ID"
	check_fails_cleanly linux.cgroupsPath
}

@test "systemd: a create that fails after the scope started leaves no scope" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\""
	set_args /does/not/exist
	run tern_sd run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	run systemctl is-active "$UNIT"
	[ "$output" != active ]
	check_nothing_left "$ID"
}

@test "systemd: the id of a running scope cannot be taken by a second container" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\""
	set_cmd "sleep $MARK"
	run_detached
	run tern_sd --root "$ROOT-2" run -d -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$UNIT"*"already exists"* ]]
	# the first one is untouched
	[ "$(state_field "$ID" status)" = running ]
	systemctl is-active "$UNIT"
}

@test "systemd: checkpoint and restore: the restored container gets its scope, limits and all" {
	update_config ".linux.cgroupsPath = \"$SLICE:tern:$ID\"
		| .linux.resources = {memory: {limit: 67108864}, pids: {limit: 42}}
		| .root.readonly = false"
	set_cmd "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/.c; mv /tmp/.c /tmp/count; sleep 0.1; done; sleep $MARK"
	run_detached
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	# checkpoint deletes the container, as runc does: the scope stopped
	tern_sd checkpoint --image-path "$BATS_TEST_TMPDIR/img" "$ID"
	run systemctl is-active "$UNIT"
	[ "$output" != active ]
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	run tern_sd restore -d --image-path "$BATS_TEST_TMPDIR/img" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# the counter goes on from where it was (a fresh start would be near 0)
	first=$(cat "$BUNDLE/rootfs/tmp/count")
	[ "$first" -ge "$before" ]
	pid=$(state_field "$ID" pid)
	[ "$(state_field "$ID" status)" = running ]
	# the restored tree is in a new scope of the configured name, with the
	# limits; tern itself left it
	[ "$(systemctl is-active "$UNIT")" = active ]
	[ "$(cg_of "$pid" memory)" = "/tern.slice/tern-test.slice/$UNIT" ]
	[ "$(cg_of "$pid" pids)" = "/tern.slice/tern-test.slice/$UNIT" ]
	[ "$(cat "$(limit_file memory memory.max memory.limit_in_bytes)")" = 67108864 ]
	[ "$(systemctl show -p TasksMax --value "$UNIT")" = 42 ]
	[ "$(cg_of $$ memory)" != "/tern.slice/tern-test.slice/$UNIT" ]
	procs="/sys/fs/cgroup$(v2 && echo || echo /pids)/tern.slice/tern-test.slice/$UNIT/cgroup.procs"
	! grep -qx "$$" "$procs" || false
	echo "before $before first $first"
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$first"
	tern_sd delete --force "$ID"
	run systemctl is-active "$UNIT"
	[ "$output" != active ]
	check_nothing_left "$ID"
}
