#!/usr/bin/env bats
# pause / resume (the freezer), ps, update: the commands that act on a
# running container's cgroup. Runs on cgroup v1 here and on v2 in the guest.

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load helpers

@test "pause freezes the container and resume thaws it; state says paused" {
	# the count is renamed into place: never read half written
	set_cmd "$(counter_cmd /tmp/count 0.05)"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	run tern pause "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = paused ]
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	# pause returns once the cgroup is frozen, so a correct freeze keeps
	# the count still whatever the delay: the delay only gives a broken
	# one time to show (cannot fail spuriously)
	sleep 0.4
	b=$(cat "$BUNDLE/rootfs/tmp/count")
	[ "$a" = "$b" ]
	run tern list
	[[ "$output" == *paused* ]]
	run tern resume "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = running ]
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$b"
}

@test "pause of a paused, resume of a running container fail; delete --force of a paused one works" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern resume "$ID"
	[ "$status" -ne 0 ]
	run tern pause "$ID"
	[ "$status" -eq 0 ]
	run tern pause "$ID"
	[ "$status" -ne 0 ]
	run tern delete "$ID"
	[ "$status" -ne 0 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "exec into a paused container is refused unless --ignore-paused" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern pause "$ID"
	[ "$status" -eq 0 ]
	run tern exec "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *paused* ]]
	# with --ignore-paused the process joins the frozen cgroup: it runs
	# once the container is resumed
	"$TERN_BIN" --root "$ROOT" exec --ignore-paused "$ID" sh -c "echo ran > /tmp/ignored-pause" \
		</dev/null >/dev/null 2>&1 3>&- &
	local exec_pid=$!
	# once it is in the frozen cgroup it cannot run: the file cannot
	# appear however long we look (the delay cannot fail spuriously)
	wait_until 10 cgroup_has_procs "$(host_cgroup_dir "$(state_field "$ID" pid)" freezer)" 2
	sleep 0.3
	[ ! -e "$BUNDLE/rootfs/tmp/ignored-pause" ]
	run tern resume "$ID"
	[ "$status" -eq 0 ]
	wait "$exec_pid"
	[ "$(cat "$BUNDLE/rootfs/tmp/ignored-pause")" = ran ]
}

@test "ps lists the container's processes (json and table)" {
	set_cmd "sleep $MARK & sleep $MARK & wait"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_until 60 mark_procs_at_least 2
	run tern ps --format json "$ID"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e 'length == 3'
	init=$(state_field "$ID" pid)
	echo "$output" | jq -e --argjson p "$init" 'index($p) != null'
	for p in $(pgrep -f "sleep $MARK"); do
		echo "$output" | jq -e --argjson p "$p" 'index($p) != null'
	done
	run tern ps "$ID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *PID* ]]
	# the shell (its command line names the marker too) and the two sleeps
	[ "$(echo "$output" | grep -c "sleep $MARK")" -eq 3 ]
	run tern ps "$ID" -- -o pid,comm
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *PID*COMMAND* ]]
	[ "${#lines[@]}" -eq 4 ]
}

@test "update --memory / --pids-limit / --cpu-quota change the limits of a running container" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	run tern update --memory 64m --pids-limit 42 --cpu-quota 50000 --cpu-period 100000 "$ID"
	[ "$status" -eq 0 ]
	mem=$(host_cgroup_dir "$pid" memory)
	pids=$(host_cgroup_dir "$pid" pids)
	cpu=$(host_cgroup_dir "$pid" cpu)
	if [ -e "$mem/memory.limit_in_bytes" ]; then
		[ "$(cat "$mem/memory.limit_in_bytes")" = $((64 << 20)) ]
		[ "$(cat "$cpu/cpu.cfs_quota_us")" = 50000 ]
	else
		[ "$(cat "$mem/memory.max")" = $((64 << 20)) ]
		[ "$(cat "$cpu/cpu.max")" = "50000 100000" ]
	fi
	[ "$(cat "$pids/pids.max")" = 42 ]
}

@test "update --resources - reads linux.resources JSON from stdin" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	echo '{"pids": {"limit": 77}}' >"$BATS_TEST_TMPDIR/res.json"
	"$TERN_BIN" --root "$ROOT" update --resources - "$ID" <"$BATS_TEST_TMPDIR/res.json" 3>&-
	[ "$(cat "$(host_cgroup_dir "$pid" pids)/pids.max")" = 77 ]
}

@test "update: nonsense is rejected and changes nothing" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern update --memory lots "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *--memory* ]]
	run tern update --cpuset-cpus abc "$ID"
	[ "$status" -ne 0 ]
	run tern update --pids-limit 10 no-such-container
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *no-such-container* ]]
}

# freeze_from_outside DIR: freeze the cgroup DIR as another tool would (v1
# freezer.state, v2 cgroup.freeze), behind tern's back, and wait until the
# kernel says it is frozen.
freeze_from_outside() {
	if [ -e "$1/freezer.state" ]; then
		echo FROZEN >"$1/freezer.state"
		wait_until 10 grep -qx FROZEN "$1/freezer.state"
	else
		echo 1 >"$1/cgroup.freeze"
		wait_until 10 grep -qx "frozen 1" "$1/cgroup.events"
	fi
}

# the cgroup above the container that a test freezes: thawed before the
# usual teardown, or nothing in it could die
teardown() {
	local d
	if [ -n "${ID:-}" ]; then
		for d in $(find /sys/fs/cgroup/ -maxdepth 3 -type d -name "$ID-up" 2>/dev/null); do
			if [ -e "$d/freezer.state" ]; then
				echo THAWED >"$d/freezer.state"
			elif [ -e "$d/cgroup.freeze" ]; then
				echo 0 >"$d/cgroup.freeze"
			fi
		done
	fi
	teardown_bundle
}

# delete_force_frozen WHICH: a sleeper whose cgroup (WHICH=own) or the
# cgroup above it (WHICH=up) someone else froze: delete --force thaws or
# frees it, kills and removes it, quickly, and leaves nothing.
delete_force_frozen() {
	update_config ".linux.cgroupsPath = \"/$ID-up/$ID\""
	start_sleeper
	local pid dir t0
	pid=$(state_field "$ID" pid)
	dir=$(host_cgroup_dir "$pid" freezer)
	[ "$1" = own ] || dir=$(dirname "$dir")
	freeze_from_outside "$dir"
	t0=$SECONDS
	run tern delete --force "$ID"
	echo "$output"
	[ "$status" -eq 0 ]
	# crun needs well under a second; the bound is for a slow guest
	[ $((SECONDS - t0)) -lt 10 ]
	run tern state "$ID"
	[ "$status" -ne 0 ]
	wait_until 10 pid_gone "$pid"
	# the parent is not the container's: gone with the usual teardown
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID" 2>/dev/null)" ]
	[ ! -e "$ROOT/$ID" ]
	no_mark_procs
}

@test "delete --force of a container whose cgroup someone else froze: thawed, killed, removed" {
	delete_force_frozen own
}

@test "delete --force of a container whose parent cgroup someone else froze: killed, removed" {
	delete_force_frozen up
}
