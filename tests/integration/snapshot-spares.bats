#!/usr/bin/env bats
# tern clone --spares: clones of a snapshot restored ahead of time and held
# frozen, claimed by `tern clone` in place of a restore (snapshot-spares.c).

load helpers
load snapshot-helpers

SPARES=.clone-spares

# spares_are NAME WANTED READY: `snapshot --list` says so (and no failure).
spares_are() {
	[ "$(tern snapshot --list --format json "$ID" |
		jq -c --arg n "$1" '.[] | select(.name == $n) | .spares // {}')" = \
		"{\"wanted\":$2,\"ready\":$3,\"failed\":false}" ]
}

# spares_failed NAME: the builder of NAME's spares gave up.
spares_failed() {
	tern snapshot --list --format json "$ID" |
		jq -e --arg n "$1" '.[] | select(.name == $n) | .spares.failed' >/dev/null
}

# spare_pids NAME: the init of each spare of NAME.
spare_pids() {
	local f
	for f in "$STORE/$SPARES/$1"/s-*/root/spare/state.json; do
		[ -e "$f" ] && jq -r .pid "$f"
	done
	return 0
}

# no_spares_left: no process, mount, cgroup or directory of a spare, and
# no builder at work.
no_spares_left() {
	! grep -F "$STORE/$SPARES" /proc/self/mountinfo >&2 || return 1
	if pgrep -f "$STORE/$SPARES" >&2; then return 1; fi
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "tern-spare-$ID-*" 2>/dev/null || true)" ] || return 1
	[ ! -e "$STORE/$SPARES" ]
}

@test "clone --spares: spares are frozen and never run; a clone takes one, runs on from the snapshot in its own cgroup and netns, and the next spare is made" {
	start_marked_counter
	local src_cg=$MEM_CG src_net=$NET_INO
	tern snapshot "$ID" base
	local s
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	run tern clone --spares 2 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 eval 'spares_are base 2 2 || spares_failed base'
	spares_are base 2 2 || { cat "$STORE/$SPARES/base/error" "$STORE/$SPARES/base/build.log"; false; }
	# each spare: a cgroup of its own, frozen; it writes nothing while the
	# container counts on (it never ran)
	local p
	for p in $(spare_pids base); do
		[[ "$(host_cgroup_dir "$p" freezer)" == */tern-spare-$ID-base-* ]]
		cgroup_is_frozen "$(host_cgroup_dir "$p" freezer)"
	done
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 20))
	[ -z "$(find "$STORE/$SPARES/base" -path '*/.upper/tmp/log*')" ]

	run tern clone --format json "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	local pid r
	pid=$(state_field "$ID-c" pid)
	[ "$(state_field "$ID-c" status)" = running ]
	[ "$(state_field "$ID-c" bundle)" = "$ROOT/@clones/$ID-c.bundle" ]
	r=$(clone_rootfs "$ID-c")
	# it goes on from the snapshot's count, in its own rootfs
	wait_until 30 lines_at_least "$r/tmp/log" $((s + 2))
	head -n $((s + 2)) "$r/tmp/log" | diff <(seq 1 $((s + 2))) -
	# its cgroup is named after it, with the config's memory limit, and
	# holds all of its processes; the spare's is gone
	local cg
	cg=$(host_cgroup_dir "$pid" memory)
	[[ "$cg" == */"$ID-c" ]]
	[ "$cg" != "$src_cg" ]
	if [ -e "$cg/memory.limit_in_bytes" ]; then
		[ "$(cat "$cg/memory.limit_in_bytes")" = 268435456 ]
	else
		[ "$(cat "$cg/memory.max")" = 268435456 ]
	fi
	local q want
	want=$(host_cgroup_dir "$pid" freezer)
	# (the counter's sleep and mv come and go)
	for q in $(tern ps --format json "$ID-c" | jq -r '.[]'); do
		[ "$(host_cgroup_dir "$q" freezer 2>/dev/null)" = "$want" ] || [ ! -e "/proc/$q" ]
	done
	! cgroup_is_frozen "$(host_cgroup_dir "$pid" freezer)"
	# its own network namespace (not the source's, which had 10.99.0.1)
	[ "$(stat -L -c %i "/proc/$pid/ns/net")" != "$src_net" ]
	! nsenter --net="/proc/$pid/ns/net" ip addr show dev lo | grep -q 10.99.0.1
	# what went to the source's stdout file goes to the bundle's stdio.log
	[ "$(readlink "/proc/$pid/fd/0")" = /dev/null ]
	[ "$(readlink "/proc/$pid/fd/1")" = "$ROOT/@clones/$ID-c.bundle/stdio.log" ]
	wait_until 10 has_lines_matching "$ROOT/@clones/$ID-c.bundle/stdio.log" out- 3
	# the next spare is made behind it
	wait_until 60 eval 'spares_are base 2 2 || spares_failed base'
	spares_are base 2 2
	# a clone from a spare is snapshotted and rolled back on its own
	run tern snapshot "$ID-c" mine
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern exec "$ID-c" sh -c 'echo later > /later'
	[ "$status" -eq 0 ]
	run tern rollback "$ID-c" mine
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ ! -e "$r/later" ]
	tern delete --force "$ID-c"
	check_nothing_left "$ID-c"
	[ ! -e "$ROOT/@clones/$ID-c.bundle" ]
	# --spares 0 removes them all
	run tern clone --spares 0 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	no_spares_left
	delete_clones_then_source
}

@test "clone --spares: 10 clones from 10 spares diverge; one with --bundle is restored instead; deleting the container takes the spares with it" {
	start_memhash 16
	tern snapshot "$ID" base
	run tern clone --spares 10 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 120 eval 'spares_are base 10 10 || spares_failed base'
	spares_are base 10 10 || { cat "$STORE/$SPARES/base/error" "$STORE/$SPARES/base/build.log"; false; }
	local i
	for i in $(seq 0 9); do
		run tern clone --format json "$ID" base "$ID-c$i"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		jq -e '.spare == true' <<<"$output"
	done
	# each has the snapshot's memory; one refilled (SIGUSR2) differs
	# from the others, which keep it
	[ "$(signal_memhash "$ID-c0" USR1 again)" = "again $FIRST" ]
	[ "$(signal_memhash "$ID-c5" USR1 again)" = "again $FIRST" ]
	local new
	new=$(signal_memhash "$ID-c3" USR2 new)
	[ "$new" != "new $FIRST" ]
	[ "$(signal_memhash "$ID-c4" USR1 again)" = "again $FIRST" ]
	declare -A inits
	for i in $(seq 0 9); do inits[$(state_field "$ID-c$i" pid)]=1; done
	[ "${#inits[@]}" -eq 10 ]
	# what a spare cannot have is restored instead
	run tern clone --bundle "$BATS_TEST_TMPDIR/mine" --format json "$ID" base "$ID-b"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == null' <<<"$output"
	wait_until 120 eval 'spares_are base 10 10 || spares_failed base'
	# the container's delete takes the spares with it
	delete_clones_then_source "$ID-b" $(for i in $(seq 0 9); do echo "$ID-c$i"; done)
	wait_until 60 no_spares_left
}

@test "clone --spares: a bad count, an unknown snapshot: clear errors, nothing made; deleting the snapshot mid-build removes the spares" {
	start_counter
	tern snapshot "$ID" base
	run tern clone --spares many "$ID" base
	[ "$status" -ne 0 ]
	[[ "$output" == *"--spares \`many\`"* ]] || { echo "$output"; false; }
	run tern clone --spares -1 "$ID" base
	[ "$status" -ne 0 ]
	# no value at all: the option needs one (not "unknown option")
	for args in "--spares" "$ID base --spares"; do
		run tern clone $args
		[ "$status" -ne 0 ]
		[[ "$output" == *"option \`--spares\` requires an argument"* ]] || { echo "$output"; false; }
	done
	[ ! -e "$STORE/$SPARES" ]
	run tern clone --spares 2 "$ID" nosuch
	[ "$status" -ne 0 ]
	[[ "$output" == *"has no snapshot \`nosuch\`"* ]] || { echo "$output"; false; }
	run tern clone --spares 2 "$ID"
	[ "$status" -ne 0 ]
	[ ! -e "$STORE/$SPARES" ]
	# deleted while the builder makes them: it stops, nothing stays
	run tern clone --spares 5 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern snapshot --delete "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	no_spares_left
	[ ! -e "$STORE/base" ]
	[ "$(state_field "$ID" status)" = running ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "clone --spares: a container with hooks gets none, and says why" {
	update_config '.hooks = {"poststop": [{"path": "/bin/true"}]}'
	start_counter
	tern snapshot "$ID" base
	run tern clone --spares 2 "$ID" base
	[ "$status" -ne 0 ]
	[[ "$output" == *"has hooks"* ]] || { echo "$output"; false; }
	[ ! -e "$STORE/$SPARES" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
