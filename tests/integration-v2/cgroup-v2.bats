#!/usr/bin/env bats
# linux.resources on a pure cgroup v2 host: limits that really bite (memory,
# pids, cpu, cpuset), the eBPF device program, the freezer, unified keys and
# the conversions from v1 units that runc and crun apply.
#
# This host is cgroup v1 hybrid, so the suite runs this file inside a qemu
# guest booted on a pure v2 hierarchy (tests/vm/run-in-guest.sh). Run
# anywhere else, every test skips, loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers

setup() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
		skip "!!! NOT A PURE CGROUP V2 HOST: /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup); run this file inside tests/vm/run-in-guest.sh !!!"
	fi
	setup_bundle
}

teardown() {
	teardown_bundle
}

# cg_dir: the container's cgroup directory, from its /proc/PID/cgroup.
cg_dir() {
	local pid
	pid=$(state_field "$ID" pid)
	echo "/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)"
}

# keyed FILE KEY: the value of KEY in a flat-keyed cgroup file.
keyed() {
	awk -v k="$2" '$1 == k { print $2 }' "$1"
}

# run_detached: start the bundle in the background, wait until it runs.
run_detached() {
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "run -d failed: $output" >&2
		return 1
	}
	wait_status "$ID" running
}

@test "cgroup v2: memory.limit kills an allocator over the limit (OOM counted in memory.events)" {
	update_config '.linux.resources.memory = {"limit": 33554432, "swap": 33554432}'
	# awk doubles a string until the kernel says no: a pure allocator.
	set_cmd "echo ready > /tmp/ready; sleep 1; awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo awk-status \$?; sleep $MARK"
	run_detached
	dir=$(cg_dir)
	[ "$(cat "$dir/memory.max")" = 33554432 ]
	# memory+swap == memory: no swap at all
	if [ -e "$dir/memory.swap.max" ]; then
		[ "$(cat "$dir/memory.swap.max")" = 0 ]
	fi
	for i in $(seq 100); do
		n=$(keyed "$dir/memory.events" oom_kill)
		[ "${n:-0}" -gt 0 ] && break
		sleep 0.2
	done
	[ "$(keyed "$dir/memory.events" oom_kill)" -gt 0 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup v2: pids.limit stops a fork bomb" {
	update_config '.linux.resources.pids = {"limit": 20}'
	# The shell gives up at the first fork the kernel refuses; the
	# container's main process then execs, which needs no new pid.
	set_cmd "(i=0; while [ \$i -lt 60 ]; do sleep $MARK & i=\$((i + 1)); done) 2>/dev/null; exec sleep $MARK"
	run_detached
	dir=$(cg_dir)
	[ "$(cat "$dir/pids.max")" = 20 ]
	for i in $(seq 50); do
		[ "$(keyed "$dir/pids.events" max)" -gt 0 ] && break
		sleep 0.2
	done
	[ "$(keyed "$dir/pids.events" max)" -gt 0 ]
	[ "$(cat "$dir/pids.current")" -le 20 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup v2: cpu quota throttles a busy loop; shares become cpu.weight" {
	update_config '.linux.resources.cpu = {"quota": 10000, "period": 100000, "shares": 1024}'
	set_cmd "while :; do :; done"
	run_detached
	dir=$(cg_dir)
	[ "$(cat "$dir/cpu.max")" = "10000 100000" ]
	# runc's and crun's map: 1 + ((1024 - 2) * 9999) / 262142 = 39
	[ "$(cat "$dir/cpu.weight")" = 39 ]
	for i in $(seq 50); do
		[ "$(keyed "$dir/cpu.stat" nr_throttled)" -gt 2 ] && break
		sleep 0.2
	done
	[ "$(keyed "$dir/cpu.stat" nr_throttled)" -gt 2 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup v2: cpuset pins the container to cpu 0" {
	update_config '.linux.resources.cpu = {"cpus": "0", "mems": "0"}'
	set_cmd 'grep Cpus_allowed_list /proc/self/status'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"Cpus_allowed_list:"*"0" ]]
}

@test "cgroup v2: the device program denies a block device while the defaults work" {
	# CAP_MKNOD so that the container can make nodes (mknod of any device
	# is allowed by the defaults; opening it is what the rules decide).
	update_config '.process.capabilities.bounding += ["CAP_MKNOD"]
		| .process.capabilities.effective += ["CAP_MKNOD"]
		| .process.capabilities.permitted += ["CAP_MKNOD"]
		| .linux.resources.devices = [{"allow": false, "access": "rwm"}]'
	# (set_cmd takes one line: set_args splits on newlines)
	set_cmd 'echo x > /dev/null && head -c 4 /dev/urandom | wc -c && head -c 4 /dev/zero | wc -c && mknod /tmp/blk b 7 0 && head -c 1 /tmp/blk; echo "blk=$?"; mknod /tmp/kmsg c 1 11 && head -c 1 /tmp/kmsg; echo "kmsg=$?"'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"blk=1"* ]]
	[[ "$output" == *"kmsg=1"* ]]
	[[ "$output" == *"Operation not permitted"* ]]
	[ "$(echo "$output" | grep -c '^4$')" -eq 2 ]
}

@test "cgroup v2: an allow rule for one block device lets it through, last rule wins" {
	update_config '.process.capabilities.bounding += ["CAP_MKNOD"]
		| .process.capabilities.effective += ["CAP_MKNOD"]
		| .process.capabilities.permitted += ["CAP_MKNOD"]
		| .linux.resources.devices = [{"allow": false, "access": "rwm"},
			{"allow": true, "type": "b", "major": 7, "minor": 0, "access": "rw"},
			{"allow": false, "type": "b", "major": 7, "minor": 0, "access": "w"}]'
	# An unbound loop device opens fine (and reads as empty) when the
	# program allows it; the write is refused by the last rule.
	set_cmd 'mknod /tmp/blk b 7 0; head -c 1 /tmp/blk; echo "read=$?"; echo x > /tmp/blk; echo "write=$?"'
	run_container
	[ "$status" -eq 0 ]
	echo "$output" | grep "can't create /tmp/blk: Operation not permitted"
	[[ "$output" == *"read=0"* && "$output" == *"write=1"* ]]
}

@test "cgroup v2: pause freezes the container, resume thaws it" {
	# the count is renamed into place: never read half written
	set_cmd "$(counter_cmd /tmp/count)"
	run_detached
	dir=$(cg_dir)
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	run tern pause "$ID"
	[ "$status" -eq 0 ]
	[ "$(keyed "$dir/cgroup.events" frozen)" = 1 ]
	[ "$(state_field "$ID" status)" = paused ]
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	# frozen (cgroup.events says so): the count cannot move however long
	# we look; the delay only gives a broken freeze time to show
	sleep 1
	[ "$(cat "$BUNDLE/rootfs/tmp/count")" = "$a" ]
	run tern resume "$ID"
	[ "$status" -eq 0 ]
	[ "$(keyed "$dir/cgroup.events" frozen)" = 0 ]
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$a"
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup v2: conversions: swap, reservation, blkio weight, pids -1, unified keys win" {
	update_config '.linux.resources.memory = {"limit": 67108864, "swap": 100663296, "reservation": 16777216}
		| .linux.resources.pids = {"limit": -1}
		| .linux.resources.blockIO = {"weight": 500}
		| .linux.resources.unified = {"memory.high": "50331648", "pids.max": "77"}'
	set_args /bin/sleep "$MARK"
	run_detached
	dir=$(cg_dir)
	[ "$(cat "$dir/memory.max")" = 67108864 ]
	[ "$(cat "$dir/memory.low")" = 16777216 ]
	[ "$(cat "$dir/memory.high")" = 50331648 ]
	if [ -e "$dir/memory.swap.max" ]; then
		[ "$(cat "$dir/memory.swap.max")" = 33554432 ] # 96M - 64M
	fi
	[ "$(cat "$dir/pids.max")" = 77 ] # unified is applied last
	if [ -e "$dir/io.bfq.weight" ]; then
		grep -q "default 500" "$dir/io.bfq.weight"
	else
		grep -q "default 4950" "$dir/io.weight"
	fi
	# update changes one limit and leaves the rest
	run tern update --pids-limit 50 "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$dir/pids.max")" = 50 ]
	[ "$(cat "$dir/memory.max")" = 67108864 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup v2: kernel memory gives a warning and the container still runs" {
	update_config '.linux.resources.memory = {"limit": 67108864, "kernel": 33554432}'
	set_cmd 'echo ran'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *ran* ]]
}

@test "cgroup v2: bad input is refused before anything is created" {
	update_config '.linux.resources.unified = {"../memory.max": "1"}'
	run_container
	check_fails_cleanly "unified"

	update_config 'del(.linux.resources.unified) | .linux.resources.cpu = {"cpus": "abc"}'
	run_container
	check_fails_cleanly "cpus"

	update_config '.linux.resources.cpu = {"shares": 1}'
	run_container
	check_fails_cleanly "shares"

	update_config 'del(.linux.resources.cpu) | .linux.resources.memory = {"limit": 67108864, "swap": 1048576}'
	run_container
	check_fails_cleanly "swap"
}

@test "cgroup v2: realtime cpu settings are an error on v2" {
	update_config '.linux.resources.cpu = {"realtimeRuntime": 1000, "realtimePeriod": 100000}'
	run_container
	[ "$status" -ne 0 ]
	[[ "$output" == *"realtime"* ]]
	check_nothing_left "$ID"
}

@test "cgroup v2: a unified key of a controller that is not enabled is refused" {
	# misc/rdma may be absent; a made-up controller certainly is.
	update_config '.linux.resources.unified = {"nosuchctrl.max": "1"}'
	run_container
	[ "$status" -ne 0 ]
	[[ "$output" == *"nosuchctrl"* ]]
	check_nothing_left "$ID"
}

@test "cgroup v2: controllers are delegated down a nested cgroupsPath" {
	# Every level named after $ID, so that teardown finds and removes them.
	local top=/sys/fs/cgroup/$ID-v2
	update_config ".linux.cgroupsPath = \"/$ID-v2/$ID-a/$ID\"
		| .linux.resources.memory = {\"limit\": 67108864}
		| .linux.resources.pids = {\"limit\": 30}"
	set_args /bin/sleep "$MARK"
	run_detached
	[ "$(cat "$top/$ID-a/$ID/memory.max")" = 67108864 ]
	[ "$(cat "$top/$ID-a/$ID/pids.max")" = 30 ]
	grep -qw memory "$top/cgroup.subtree_control"
	grep -qw pids "$top/$ID-a/cgroup.subtree_control"
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$top/$ID-a/$ID" ]
	rmdir "$top/$ID-a" "$top"
}

@test "cgroup v2: delegation into a cgroup that has processes names the directory" {
	local top=/sys/fs/cgroup/$ID-busy
	mkdir "$top"
	# A process of our own in the would-be parent: v2 then refuses to
	# hand controllers down from it ("no internal processes").
	sleep "$MARK" &
	EXTRA_PIDS=$!
	echo "$EXTRA_PIDS" >"$top/cgroup.procs"
	update_config ".linux.cgroupsPath = \"/$ID-busy/$ID\"
		| .linux.resources.pids = {\"limit\": 30}"
	run_container
	[ "$status" -ne 0 ]
	if is_tern; then
		[[ "$output" == *"$ID-busy"* ]]
	fi
	kill -9 "$EXTRA_PIDS"
	wait "$EXTRA_PIDS" 2>/dev/null || true
	rmdir "$top/$ID" 2>/dev/null || true
	rmdir "$top"
}

@test "cgroup v2: a cgroupsPath below a threaded cgroup is made threaded, and the threaded controllers apply" {
	base=/sys/fs/cgroup/tt-threaded-$ID
	mkdir -p "$base/t"
	# t threaded makes base the root of a threaded subtree ("domain threaded")
	echo threaded >"$base/t/cgroup.type"
	update_config ".linux.cgroupsPath = \"/tt-threaded-$ID/t/$ID\"
		| .linux.resources = {cpu: {quota: 20000, period: 100000}, pids: {limit: 10}}"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	pid=$(state_field "$ID" pid)
	[ "$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)" = "/tt-threaded-$ID/t/$ID" ]
	dir=$base/t/$ID
	[ "$(cat "$dir/cgroup.type")" = threaded ]
	[ "$(cat "$dir/cpu.max")" = "20000 100000" ]
	[ "$(cat "$dir/pids.max")" = 10 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$dir" ]
	rmdir "$base/t" "$base"
}
