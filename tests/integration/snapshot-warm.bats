#!/usr/bin/env bats
# tern snapshot / rollback --keep-warm: a spare restored ahead of time and
# held frozen, swapped in by the rollback (snapshot-warm.c).

# The tests tagged vm:v2 also run in scripts/test.sh's qemu guest (pure
# cgroup v2, its freezer holding the spare); the two that get no spare (a
# port, a terminal) behave the same on either kernel and run here only.

load helpers
load snapshot-helpers

# warm_is NAME STATE: `snapshot --list` says the warm spare of NAME is STATE
# (ready, building, failed).
warm_is() {
	[ "$(tern snapshot --list --format json "$ID" |
		jq -r --arg n "$1" '.[] | select(.name == $n) | .warm // "none"')" = "$2" ]
}

# warm_done NAME: the spare of NAME is no longer being made.
warm_done() {
	! warm_is "$1" building
}

# port_listening_in PID PORT: something listens on TCP PORT in PID's netns.
port_listening_in() {
	nsenter --net="/proc/$1/ns/net" ss -Hltn "sport = :$2" | grep -q .
}

# spare_gone: no process, mount or cgroup of a spare is left.
spare_gone() {
	! grep -F "$STORE/.spare" /proc/self/mountinfo >&2 || return 1
	if pgrep -f "$STORE/.spare" >&2; then ps -eo pid,stat,args | grep -F "$STORE/.spare" >&2; return 1; fi
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID.warm" 2>/dev/null || true)" ]
}

# bats test_tags=vm:v2
@test "snapshot-warm: the spare is frozen and never runs; rollback swaps it in with the netns, cgroup, limits and stdio kept" {
	start_marked_counter
	local out=$OUT pid=$PID ino=$NET_INO cg=$MEM_CG
	run tern snapshot --keep-warm "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	wait_until 60 warm_done s1
	warm_is s1 ready || { cat "$STORE/.spare/error" "$STORE/.spare/build.log"; false; }
	# the spare: its own cgroup, frozen; it wrote nothing to its overlay
	# while the container counted on (it never ran)
	local spare_pid spare_cg
	spare_pid=$(jq -r .pid "$STORE/.spare/root/$ID/state.json")
	spare_cg=$(host_cgroup_dir "$spare_pid" freezer)
	[ "$spare_cg" != "$(host_cgroup_dir "$pid" freezer)" ]
	cgroup_is_frozen "$spare_cg"
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 20))
	[ ! -e "$STORE/.spare/bundle/.upper/tmp/log" ]
	[ ! -e "$STORE/.spare/bundle/.upper/tmp/log.n" ]
	echo after >"$BUNDLE/rootfs/after"
	run tern rollback --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm == true and .criu_ms == 0'
	# the spare's init is the container's, in its netns and cgroup
	[ "$(state_field "$ID" pid)" = "$spare_pid" ]
	[ "$(state_field "$ID" status)" = running ]
	[ "$(stat -L -c %i "/proc/$spare_pid/ns/net")" = "$ino" ]
	nsenter --net="/proc/$spare_pid/ns/net" ip addr show dev lo | grep -q 10.99.0.1
	[ "$(host_cgroup_dir "$spare_pid" memory)" = "$cg" ]
	[ "$(cat "$cg/memory.limit_in_bytes" 2>/dev/null || cat "$cg/memory.max")" = 268435456 ]
	# the old processes die in the spare's former cgroup, which goes then
	wait_until 10 test ! -d "$spare_cg"
	! kill -0 "$pid" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$pid/stat")" = Z ]
	# the log goes on from the snapshot's count; the host sees the
	# snapshot's files at the rootfs path
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 2))
	head -n $((s + 2)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((s + 2))) -
	[ ! -e "$BUNDLE/rootfs/after" ]
	# and writes to the stdout it had
	local n
	n=$(grep -c out- "$out")
	wait_until 10 has_lines_matching "$out" out- $((n + 3))
	tern delete --force "$ID"
	check_nothing_left "$ID"
	[ ! -e "$STORE" ]
}

# bats test_tags=vm:v2
@test "snapshot-warm: rollback --keep-warm refills; delete copies the overlay's files into the bundle's rootfs and unmounts; the snapshot below cannot go" {
	start_counter
	run tern snapshot --keep-warm "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	echo gone >"$BUNDLE/rootfs/gone"
	wait_until 60 warm_done s1
	run tern rollback --keep-warm --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm == true'
	[ ! -e "$BUNDLE/rootfs/gone" ]
	run tern exec "$ID" sh -c 'echo kept > /kept'
	[ "$status" -eq 0 ]
	[ "$(cat "$BUNDLE/rootfs/kept")" = kept ]
	# the next spare, made after the rollback, swaps in again
	wait_until 60 warm_done s1
	warm_is s1 ready || { cat "$STORE/.spare/error"; false; }
	run tern rollback --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm == true'
	[ ! -e "$BUNDLE/rootfs/kept" ]
	warm_is s1 none
	# a cold rollback to another snapshot works on the overlay too
	run tern exec "$ID" sh -c 'echo two > /two'
	tern snapshot "$ID" s2
	run tern exec "$ID" rm /two
	run tern rollback --format json "$ID" s2
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm != true'
	[ "$(cat "$BUNDLE/rootfs/two")" = two ]
	# s1's tree is the overlay's lower layer
	run tern snapshot --delete "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"below the rootfs"* ]] || { echo "$output"; false; }
	run tern exec "$ID" sh -c 'echo final > /final'
	[ "$status" -eq 0 ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
	[ ! -e "$STORE" ]
	# the bundle's own rootfs: what the container left, counted on from s1
	[ "$(cat "$BUNDLE/rootfs/final")" = final ]
	[ "$(cat "$BUNDLE/rootfs/two")" = two ]
	[ ! -e "$BUNDLE/rootfs/gone" ]
	[ ! -e "$BUNDLE/rootfs/kept" ]
	head -n $((s + 2)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((s + 2))) -
}

@test "snapshot-warm: a spare that cannot be made (a port the live container listens on) says why; the rollback is a cold one" {
	set_cmd "nc -ll -p 8123 -e true & $(log_cmd /tmp/log)"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
	local pid
	pid=$(state_field "$ID" pid)
	wait_until 10 port_listening_in "$pid" 8123
	run tern snapshot --keep-warm "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 warm_done s1
	warm_is s1 failed
	# criu's bind fails, or it succeeds and tern refuses the spare
	grep -E "Address already in use|TCP port 8123" "$STORE/.spare/error"
	spare_gone
	run tern rollback --keep-warm --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm != true and .criu_ms > 0'
	# the spare made after the cold rollback: criu bound the port a second
	# time (SO_REUSEPORT, as the restored socket has it), tern refused it
	wait_until 60 warm_done s1
	warm_is s1 failed
	grep -E "Address already in use|TCP port 8123" "$STORE/.spare/error"
	spare_gone
	pid=$(state_field "$ID" pid)
	[ "$(nsenter --net="/proc/$pid/ns/net" ss -Hltn 'sport = :8123' | wc -l)" -eq 1 ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "snapshot-warm: a container with a terminal gets no spare, and is told why" {
	update_config '.process.terminal = true | .process.args = ["/bin/sh"]'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out" $'echo "up-$((40+2))"\n'
	tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 grep -q up-42 "$BATS_TEST_TMPDIR/tty.out"
	run tern snapshot --keep-warm "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 warm_done s1
	warm_is s1 failed
	grep -q "has a terminal" "$STORE/.spare/error"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# bats test_tags=vm:v2
@test "snapshot-warm: 10 warm rollbacks in a row, each refilled, leave nothing behind" {
	start_counter
	tern snapshot --keep-warm "$ID" base
	local i
	for i in $(seq 1 10); do
		wait_until 60 warm_done base
		warm_is base ready || { cat "$STORE/.spare/error"; false; }
		run tern rollback --keep-warm --format json "$ID" base
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		echo "$output" | jq -e '.warm == true' >/dev/null
	done
	wait_until 60 warm_done base
	[ "$(state_field "$ID" status)" = running ]
	# the container's processes in its cgroup; one spare's in the spare's
	local pid
	pid=$(state_field "$ID" pid)
	[ "$(wc -l <"$(host_cgroup_dir "$pid" freezer)/cgroup.procs")" -le 2 ]
	# tern's mounts: the live overlay, its bind on the rootfs path, the
	# bundle's own rootfs bound aside, and the spare's overlay
	[ "$(grep -c -F -e "$BUNDLE" -e "$ROOT" /proc/self/mountinfo)" -eq 4 ]
	[ "$(ls -A "$STORE" | sort | tr '\n' ' ')" = ".live .spare .under .under-path .warm.lock base head " ]
	local n
	n=$(wc -l <"$STORE/base/tree/tmp/log")
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((n + 2))
	head -n $((n + 2)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((n + 2))) -
	tern delete --force "$ID"
	check_nothing_left "$ID"
	[ ! -e "$STORE" ]
	! grep -F -e "$BUNDLE" -e "$ROOT" /proc/self/mountinfo || false
}
