#!/usr/bin/env bats
# checkpoint and restore with CRIU (criu 4.2.1 from scripts/install-criu.sh,
# driven through libcriu). Incremental dumps need soft-dirty tracking, which
# this kernel lacks: those run in the qemu guest (tests/integration-criu-guest).

load helpers

setup() {
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	# runc takes the same images; checkpoints must not depend on the cwd
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	teardown_bundle
}

# start_detached ID [BUNDLE]: run -d in the bundle and wait until running.
start_detached() {
	tern run -d -b "${2:-$BUNDLE}" "$1" >/dev/null
	wait_status "$1" running
}

# in_ct ID CMD: run a shell command inside the container.
in_ct() {
	local id=$1
	shift
	tern exec "$id" /bin/sh -c "$*"
}

@test "checkpoint: a counter goes on from where it was after restore" {
	set_cmd "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/count; sleep 0.1; done; sleep $MARK"
	start_detached "$ID"
	sleep 1
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = stopped ]
	[ -f "$IMG/inventory.img" ]
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	tern delete "$ID"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	sleep 1
	after=$(cat "$BUNDLE/rootfs/tmp/count")
	echo "before=$before after=$after"
	[ "$after" -gt "$before" ]
	# the same process went on: its count did not start over from 1
	[ "$after" -lt $((before + 40)) ]
}
