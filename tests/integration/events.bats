#!/usr/bin/env bats
# tern events: runc's JSON event stream (stats and OOM notifications).

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load helpers

@test "events --stats: one stats object with cpu, memory, pids, blkio" {
	update_config '.linux.resources.memory = {"limit": 67108864} | .linux.resources.pids = {"limit": 50}'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern events --stats "$ID"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	echo "$output" | jq -e --arg id "$ID" '.type == "stats" and .id == $id'
	echo "$output" | jq -e '.data.cpu.usage.total > 0'
	echo "$output" | jq -e '.data.memory.usage.limit == 67108864 and .data.memory.usage.usage > 0'
	echo "$output" | jq -e '.data.pids.current == 1 and .data.pids.limit == 50'
	echo "$output" | jq -e '.data | has("blkio") and has("hugetlb")'
}

@test "events: streams stats every --interval and reports an OOM kill" {
	update_config '.linux.resources.memory = {"limit": 33554432, "swap": 33554432}'
	# the OOM comes once events watches for it: after its second stats
	# object (tern starts watching after the first, runc before any)
	set_cmd 'while [ ! -e /tmp/go ]; do sleep 0.05; done; exec /bin/alloc 256'
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	"$TERN_BIN" --root "$ROOT" events --interval 300ms "$ID" >"$BATS_TEST_TMPDIR/events" 2>&1 3>&- &
	local ev=$!
	wait_until 20 has_lines_matching "$BATS_TEST_TMPDIR/events" '"type":"stats"' 2
	touch "$BUNDLE/rootfs/tmp/go"
	# events ends by itself once the container has stopped
	wait_until 10 pid_gone "$ev"
	cat "$BATS_TEST_TMPDIR/events"
	[ "$(grep -c '"type":"stats"' "$BATS_TEST_TMPDIR/events")" -ge 2 ]
	grep -q "{\"type\":\"oom\",\"id\":\"$ID\"}" "$BATS_TEST_TMPDIR/events"
}

@test "events of a stopped or unknown container fail" {
	run tern events --stats no-such-container
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *no-such-container* ]]
	run tern events --interval nonsense "$ID"
	[ "$status" -ne 0 ]
}
