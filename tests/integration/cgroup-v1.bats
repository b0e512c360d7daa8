#!/usr/bin/env bats
# linux.resources on cgroup v1 (this machine's hierarchies): each limit is
# checked by its effect on a real process where one can be seen (OOM kill,
# fork failure, throttling, cpu affinity, device access), and in the
# controller file otherwise. Bad input must fail before anything exists.

load helpers

setup() {
	setup_bundle
	# these tests are about the v1 controllers: on a pure v2 host the v2
	# suite covers the same ground
	if [ ! -d /sys/fs/cgroup/memory ] || [ ! -d /sys/fs/cgroup/pids ]; then
		skip "not a cgroup v1 host"
	fi
}

# A test that freezes a cgroup of its own ($ID-...) thaws it here, or
# teardown could neither kill what is inside nor remove it.
teardown() {
	local f
	for f in /sys/fs/cgroup/freezer/"${ID:-none}"*/freezer.state /sys/fs/cgroup/freezer/"${ID:-none}"*/*/freezer.state; do
		[ -e "$f" ] && echo THAWED >"$f"
	done
	teardown_bundle
}

# frozen_cgroup NAME: a freezer cgroup /NAME of the user's, frozen.
frozen_cgroup() {
	mkdir /sys/fs/cgroup/freezer/"$1"
	echo FROZEN >/sys/fs/cgroup/freezer/"$1"/freezer.state
	[ "$(cat /sys/fs/cgroup/freezer/"$1"/freezer.state)" = FROZEN ]
}

# drop_user_cgroup NAME: the frozen cgroup is still there, still frozen
# (the runtime left the user's cgroup alone), and then goes.
drop_user_cgroup() {
	local d=/sys/fs/cgroup/freezer/$1
	[ "$(cat "$d/freezer.state")" = FROZEN ] || return 1
	echo THAWED >"$d/freezer.state"
	rmdir "$d"
}

# cg_dir CONTROLLER PID: the host directory of PID's cgroup in CONTROLLER's
# hierarchy.
cg_dir() {
	local rel
	rel=$(awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/"$2"/cgroup)
	echo "/sys/fs/cgroup/$1$rel"
}

# add_mknod: CAP_MKNOD (not in the default spec), so that device access is
# decided by the devices cgroup, not by the capability.
add_mknod() {
	update_config '.process.capabilities |= with_entries(.value += ["CAP_MKNOD"])'
}

# run_detached: start the bundle in the background; sets PID.
run_detached() {
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "run -d failed: $output" >&2
		return 1
	}
	PID=$(state_field "$ID" pid)
}

@test "cgroup-v1: memory.limit kills an allocator that exceeds it" {
	update_config '.linux.resources.memory = {"limit": 33554432, "swap": 33554432}'
	set_args /bin/alloc 128
	run_container
	# killed by the OOM killer: SIGKILL, 128 + 9
	[ "$status" -eq 137 ]
	[[ "$output" != *"allocated 128 MiB"* ]]
	check_nothing_left "$ID"
}

@test "cgroup-v1: an allocator below memory.limit runs to the end" {
	update_config '.linux.resources.memory = {"limit": 67108864, "swap": 67108864}'
	set_args /bin/alloc 16
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"allocated 16 MiB"* ]]
}

@test "cgroup-v1: memory limit, reservation, swap, swappiness and disableOOMKiller reach the memory controller" {
	update_config '.linux.resources.memory = {"limit": 104857600, "reservation": 52428800,
		"swap": 209715200, "swappiness": 10, "disableOOMKiller": true}'
	set_args /bin/sleep "$MARK"
	run_detached
	d=$(cg_dir memory "$PID")
	[ "$(cat "$d/memory.limit_in_bytes")" = 104857600 ]
	[ "$(cat "$d/memory.soft_limit_in_bytes")" = 52428800 ]
	[ "$(cat "$d/memory.memsw.limit_in_bytes")" = 209715200 ]
	[ "$(cat "$d/memory.swappiness")" = 10 ]
	grep -qx 'oom_kill_disable 1' "$d/memory.oom_control"
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup-v1: kernel memory settings do not stop a container (warning at most)" {
	update_config '.linux.resources.memory = {"limit": 104857600, "kernel": 52428800, "kernelTCP": 10485760}'
	set_cmd 'echo ran'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
}

@test "cgroup-v1: update raises and lowers memory and memory+swap in a working order" {
	update_config '.linux.resources.memory = {"limit": 104857600, "swap": 209715200}'
	set_args /bin/sleep "$MARK"
	run_detached
	d=$(cg_dir memory "$PID")
	# raising both needs memsw first, lowering both needs the limit first
	run tern update --memory 314572800 --memory-swap 419430400 "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$d/memory.limit_in_bytes")" = 314572800 ]
	[ "$(cat "$d/memory.memsw.limit_in_bytes")" = 419430400 ]
	run tern update --memory 52428800 --memory-swap 62914560 "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$d/memory.limit_in_bytes")" = 52428800 ]
	[ "$(cat "$d/memory.memsw.limit_in_bytes")" = 62914560 ]
	run tern update --pids-limit 7 "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$(cg_dir pids "$PID")/pids.max")" = 7 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
}

@test "cgroup-v1: memory.checkBeforeUpdate refuses a limit below the current usage" {
	is_tern || skip "runc 1.1 has no checkBeforeUpdate on v1"
	update_config '.linux.resources.memory = {"limit": 209715200, "checkBeforeUpdate": true}'
	set_args /bin/alloc 32 hold
	run_detached
	d=$(cg_dir memory "$PID")
	for _ in $(seq 50); do
		[ "$(cat "$d/memory.usage_in_bytes")" -gt 33554432 ] && break
		sleep 0.1
	done
	printf '{"memory": {"limit": 8388608, "checkBeforeUpdate": true}}' >"$BATS_TEST_TMPDIR/r.json"
	run tern update --resources "$BATS_TEST_TMPDIR/r.json" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"memory.limit"* ]]
	[[ "$output" == *"usage"* ]]
	[ "$(cat "$d/memory.limit_in_bytes")" = 209715200 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
}

@test "cgroup-v1: pids.limit stops a fork bomb" {
	update_config '.linux.resources.pids = {"limit": 20}'
	set_args /bin/forkbomb 1000
	run_container
	[ "$status" -eq 0 ]
	n=$(sed -n 's/^forked \([0-9]*\):.*/\1/p' <<<"$output")
	[ -n "$n" ]
	# the bomb itself is one of the 20 tasks
	[ "$n" -le 19 ]
	[ "$n" -ge 10 ]
	[[ "$output" == *"Resource temporarily unavailable"* ]]
}

@test "cgroup-v1: pids.limit -1 and 0 mean no limit" {
	for l in -1 0; do
		update_config ".linux.resources.pids = {\"limit\": $l}"
		set_args /bin/sleep "$MARK"
		run_detached
		[ "$(cat "$(cg_dir pids "$PID")/pids.max")" = max ]
		run tern delete --force "$ID"
		[ "$status" -eq 0 ]
	done
}

@test "cgroup-v1: cpu quota throttles a busy loop (throttled count rises in cpu.stat)" {
	update_config '.linux.resources.cpu = {"quota": 10000, "period": 100000, "shares": 512}'
	set_cmd "while :; do :; done; sleep $MARK"
	run_detached
	d=$(cg_dir cpu "$PID")
	[ "$(cat "$d/cpu.cfs_quota_us")" = 10000 ]
	[ "$(cat "$d/cpu.cfs_period_us")" = 100000 ]
	[ "$(cat "$d/cpu.shares")" = 512 ]
	# a loaded machine may not run the loop at once: wait (up to 20 s)
	# for it to use up its quota a few times
	for _ in $(seq 100); do
		after=$(awk '$1 == "nr_throttled" { print $2 }' "$d/cpu.stat")
		[ "$after" -ge 5 ] && break
		sleep 0.2
	done
	echo "nr_throttled $after" >&2
	[ "$after" -ge 5 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup-v1: cpuset pins the container to the given cpu" {
	update_config '.linux.resources.cpu = {"cpus": "0", "mems": "0"}'
	set_cmd 'grep Cpus_allowed_list /proc/self/status'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"Cpus_allowed_list:"*"0" ]]
	[[ "$output" != *"0-"* ]]
}

@test "cgroup-v1: devices: the defaults work, other devices are denied even after mknod" {
	# runc's default spec: deny everything, allow the standard devices
	add_mknod
	set_cmd 'echo x >/dev/null && head -c 4 /dev/zero | wc -c && mknod /tmp/kmsg c 1 11 && mknod /tmp/sda b 8 0 && { echo x >/tmp/kmsg || true; } && { head -c 1 /tmp/sda || true; }'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == 4 ]]
	[[ "$output" == *"/tmp/kmsg: Operation not permitted"* ]]
	[[ "$output" == *"/tmp/sda"*"Operation not permitted"* ]]
}

@test "cgroup-v1: devices: without linux.resources the default device rules still apply" {
	update_config 'del(.linux.resources)'
	add_mknod
	set_cmd 'echo x >/dev/null && mknod /tmp/kmsg c 1 11 && { echo x >/tmp/kmsg || true; }'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"/tmp/kmsg: Operation not permitted"* ]]
}

@test "cgroup-v1: devices: an allow rule opens one device, a later deny closes it again" {
	update_config '.linux.resources.devices += [{"allow": true, "type": "b", "major": 8, "minor": 0, "access": "r"},
		{"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rw"},
		{"allow": false, "type": "c", "major": 1, "minor": 11, "access": "w"}]'
	add_mknod
	set_args /bin/sleep "$MARK"
	run_detached
	d=$(cg_dir devices "$PID")
	cat "$d/devices.list" >&2
	grep -qx 'b 8:0 r' "$d/devices.list"
	grep -qx 'c 1:11 r' "$d/devices.list"
	grep -qx 'c 1:3 rwm' "$d/devices.list"
	grep -c '^a ' "$d/devices.list" | grep -qx 0
	# reading the (absent) disk now fails past the cgroup check
	run tern exec "$ID" sh -c 'mknod /tmp/sda b 8 0; head -c 1 /tmp/sda'
	[ "$status" -ne 0 ]
	[[ "$output" != *"Operation not permitted"* ]]
	run tern exec "$ID" sh -c 'mknod /tmp/kmsg c 1 11; echo x >/tmp/kmsg'
	[ "$status" -ne 0 ]
	[[ "$output" == *"Operation not permitted"* ]]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
}

@test "cgroup-v1: linux.resources.unified is rejected before anything is created" {
	update_config '.linux.resources.unified = {"memory.max": "100000000"}'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	if is_tern; then
		check_fails_cleanly "linux.resources.unified" "cgroup v2"
	else
		check_fails_cleanly
	fi
}

@test "cgroup-v1: cpus \"abc\" is rejected before anything is created" {
	update_config '.linux.resources.cpu = {"cpus": "abc"}'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	if is_tern; then
		check_fails_cleanly "linux.resources.cpu.cpus" "abc"
	else
		check_fails_cleanly
	fi
}

@test "cgroup-v1: memory.swap below memory.limit is rejected before anything is created" {
	is_tern || skip "runc reports this only when writing"
	update_config '.linux.resources.memory = {"limit": 104857600, "swap": 52428800}'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.resources.memory.swap"
}

@test "cgroup-v1: a cpu the host lacks fails naming the field, and leaves nothing" {
	update_config '.linux.resources.cpu = {"cpus": "4000"}'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	if is_tern; then
		check_fails_cleanly "linux.resources.cpu.cpus" "cpuset.cpus"
	else
		check_fails_cleanly
	fi
}

@test "cgroup-v1: every cgroup of a limited container is gone after delete" {
	update_config '.linux.resources.memory = {"limit": 104857600}
		| .linux.resources.pids = {"limit": 50}
		| .linux.resources.cpu = {"shares": 512}'
	set_args /bin/sleep "$MARK"
	run_detached
	dirs=$(for c in memory pids cpu cpuset devices freezer blkio; do cg_dir "$c" "$PID"; done)
	for d in $dirs; do [ -d "$d" ]; done
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	for d in $dirs; do [ ! -e "$d" ]; done
	check_nothing_left "$ID"
}

@test "cgroup-v1: update --memory-reservation/--memory-swap/--cpu-share/--cpuset-* reach their files; RDT flags and a bad blkio weight are refused" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	run tern update --memory 64m --memory-reservation 32m --cpu-share 512 --cpuset-cpus 0 --cpuset-mems 0 "$ID"
	[ "$status" -eq 0 ]
	mem=$(host_cgroup_dir "$pid" memory)
	[ "$(cat "$mem/memory.soft_limit_in_bytes")" = $((32 << 20)) ]
	[ "$(cat "$(host_cgroup_dir "$pid" cpu)/cpu.shares")" = 512 ]
	[ "$(cat "$(host_cgroup_dir "$pid" cpuset)/cpuset.cpus")" = 0 ]
	if [ -e "$mem/memory.memsw.limit_in_bytes" ]; then
		run tern update --memory-swap 128m "$ID"
		[ "$status" -eq 0 ]
		[ "$(cat "$mem/memory.memsw.limit_in_bytes")" = $((128 << 20)) ]
	fi
	run tern update --l3-cache-schema "L3:0=f" "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *l3-cache-schema* ]]
	run tern update --blkio-weight 5 "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *blkio-weight* ]]
}

@test "cgroup-v1: create into a frozen cgroup is refused at once, naming it, and leaves it as it was" {
	frozen_cgroup "$ID-frozen"
	update_config ".linux.cgroupsPath = \"/$ID-frozen\""
	set_args /bin/sleep "$MARK"
	# bounded: a runtime whose init stops in the freezer hangs here
	run in_file timeout -s KILL 20 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ] && [ "$status" -ne 137 ]
	[[ "$output" == *frozen* ]]
	is_runc || [[ "$output" == *"/sys/fs/cgroup/freezer/$ID-frozen"* ]]
	[ -z "$(cat /sys/fs/cgroup/freezer/"$ID-frozen"/cgroup.procs)" ]
	drop_user_cgroup "$ID-frozen"
	check_nothing_left "$ID"
}

@test "cgroup-v1: create below a frozen ancestor cgroup is refused at once and makes nothing" {
	is_tern || skip "runc 1.1.5 checks only the cgroup itself, and hangs here"
	frozen_cgroup "$ID-frozen"
	update_config ".linux.cgroupsPath = \"/$ID-frozen/c\""
	set_args /bin/sleep "$MARK"
	run in_file timeout -s KILL 20 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ] && [ "$status" -ne 137 ]
	[[ "$output" == *"/sys/fs/cgroup/freezer/$ID-frozen"*frozen* ]]
	[ ! -e /sys/fs/cgroup/freezer/"$ID-frozen"/c ]
	[ ! -e /sys/fs/cgroup/memory/"$ID-frozen" ]
	drop_user_cgroup "$ID-frozen"
	check_nothing_left "$ID"
}

@test "cgroup-v1: an init frozen after the checks (a createContainer hook freezes its cgroup) fails create within its bound" {
	is_tern || skip "runc 1.1.5 waits on its init without a bound"
	# the hook runs in the container's cgroup: freezing it stops the hook
	# and the init; create must give up (60 s + the hook's 1 s) and kill
	update_config ".linux.cgroupsPath = \"/$ID\"
		| .hooks.createContainer = [{\"path\": \"/bin/sh\", \"timeout\": 1,
		   \"args\": [\"sh\", \"-c\", \"echo FROZEN > /sys/fs/cgroup/freezer/$ID/freezer.state\"]}]"
	set_args /bin/sleep "$MARK"
	run in_file timeout -s KILL 90 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ] && [ "$status" -ne 137 ]
	[[ "$output" == *"did not answer within 61 s"* ]]
	check_nothing_left "$ID"
}

@test "cgroup-v1: a second container in a cgroup that holds another's processes gets runc's warning" {
	update_config ".linux.cgroupsPath = \"/$ID-shared\""
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" != *"not empty"* ]]
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cgroup"*"is not empty: 1 process(es) found"* ]]
	run tern delete --force "$ID-2"
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
}
