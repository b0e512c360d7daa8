#!/usr/bin/env bats
# tern clone --spares on pure cgroup v2: the spare is frozen by cgroup.freeze
# while criu holds it, and the claim moves its frozen processes into the
# clone's own v2 cgroup before the thaw (snapshot-spares.c). The development
# machine is cgroup v1 hybrid (tests/integration/snapshot-spares.bats covers
# it there): scripts/test.sh runs this file inside the qemu guest booted
# from Debian's kernel with pure cgroup v2. Anywhere else it skips, loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers
load ../integration/snapshot-helpers

setup() {
	if [ ! -e /sys/fs/cgroup/cgroup.controllers ] || [ -e /sys/fs/cgroup/freezer ]; then
		skip "needs a pure cgroup v2 host: runs in the qemu guest (scripts/test.sh)"
	fi
	setup_bundle
	STORE=$ROOT/@snapshots/$ID
}

# spares_ready NAME N: N spares of NAME are ready (or the builder failed:
# then its error is shown and this fails).
spares_ready() {
	local j
	j=$(tern snapshot --list --format json "$ID" | jq -c --arg n "$1" '.[] | select(.name == $n) | .spares // {}')
	if jq -e '.failed' <<<"$j" >/dev/null; then
		cat "$STORE/.clone-spares/$1/error" >&2
		return 2
	fi
	[ "$(jq -r .ready <<<"$j")" = "$2" ]
}

@test "clone --spares on cgroup v2: the spare is frozen in its own cgroup; the claim moves it into the clone's and thaws it" {
	start_counter
	tern snapshot "$ID" base
	local s
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	run tern clone --spares 1 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 600 spares_ready base 1
	local spare_pid spare_cg
	spare_pid=$(jq -r .pid "$STORE"/.clone-spares/base/s-*/root/spare/state.json)
	spare_cg=$(host_cgroup_dir "$spare_pid" freezer)
	[[ "$spare_cg" == */tern-spare-$ID-base-* ]]
	cgroup_is_frozen "$spare_cg"
	run tern clone --format json "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	local pid cg
	pid=$(state_field "$ID-c" pid)
	[ "$pid" = "$spare_pid" ]
	cg=$(host_cgroup_dir "$pid" freezer)
	[[ "$cg" == */"$ID-c" ]]
	! cgroup_is_frozen "$cg"
	[ ! -e "$spare_cg" ]
	wait_until 120 lines_at_least "$(clone_rootfs "$ID-c")/tmp/log" $((s + 2))
	head -n $((s + 2)) "$(clone_rootfs "$ID-c")/tmp/log" | diff <(seq 1 $((s + 2))) -
	# the source's delete stops the builder (it may be making the next)
	# and takes its spares; the clone goes on its own
	delete_clones_then_source "$ID-c"
	[ ! -e "$STORE/.clone-spares" ]
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "tern-spare-$ID-*" 2>/dev/null || true)" ]
}
