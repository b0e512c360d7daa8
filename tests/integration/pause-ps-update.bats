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
