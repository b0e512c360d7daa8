#!/usr/bin/env bats
# tern migrate --mode pre-copy (the `auto` choice where the kernel tracks
# dirty pages): memory rounds while the container runs, then the frozen
# dump with only what changed since. Needs soft-dirty (CONFIG_MEM_SOFT_DIRTY),
# which the development machine's kernel lacks: scripts/test.sh runs this
# file inside a qemu guest booted from Debian's own kernel
# (tests/vm/run-in-guest.sh). Run anywhere else, every test skips, loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers
load ../integration/migrate-helpers

setup() {
	local criu=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	[ -x "$criu" ] || criu=criu
	if ! "$criu" check --feature mem_dirty_track >/dev/null 2>&1; then
		skip "!!! THIS KERNEL HAS NO SOFT-DIRTY TRACKING: run this file inside tests/vm/run-in-guest.sh !!!"
	fi
	# an emulated CPU at load 30 took 248 s for this migration: no
	# wall-clock bound, the receiver and the source are stopped only once
	# nothing has moved for 120 s (migrate-helpers.bash's bounded)
	MIGRATE_STALL=120
	migrate_setup
}

teardown() {
	migrate_teardown
}

@test "migrate: pre-copy sends the memory while it runs, then only what changed; checksums match, the counter goes on" {
	set_cmd "trap '' USR1; /bin/memhash 96 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r _ before <"$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	# auto: pre-copy, since this kernel tracks dirty pages
	migrate --token-file "$TOKEN" --max-rounds 3 --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep -v '^{' || true
	echo "$output" | grep '^{' | grep -E '"phase":"(memory|freeze|images|running)"|"event":"done"'
	echo "$output" | grep '"event":"done"' | jq -e '.mode == "pre-copy"'
	# shown in the TAP output: the rounds and the times
	echo "$output" | grep -E '"event":"(phase|done)"' | sed 's/^/# /' >&3
	# the first round copied the 96 MiB while the container ran
	echo "$output" | grep '"phase":"memory"' | head -1 | jq -e '.pages_bytes >= 96 * 1048576'
	# the frozen dump sent far less than that
	echo "$output" | grep '"phase":"images"' | jq -e '.bytes < 32 * 1048576'
	# pages and bytes everywhere; the dirty rate of each round after the
	# first and of the frozen dump (dirtied since the round before), none
	# for the first round, which holds everything
	echo "$output" | grep '"phase":"memory"' | jq -s -e 'length >= 2 and
		all(.[]; .pages * 4096 == .pages_bytes and .bytes >= .pages_bytes) and
		.[0].dirty_rate == null and
		all(.[1:][]; (.dirty_rate | type) == "number" and .dirty_rate >= 0)'
	echo "$output" | grep '"phase":"images"' | jq -e '.pages * 4096 == .pages_bytes and
		(.dirty_rate | type) == "number" and .dirty_rate >= 0'
	receive_status
	# this kernel has userfaultfd too: the target filled the memory from
	# the rounds' images and the last one through criu lazy-pages, then
	# said RUNNING (the rounds' page images too: the fill reads through
	# the parent images)
	grep -E '"phase":"(restored|memory filled|running)"' recv.out | sed 's/^/# /' >&3
	grep '"phase":"memory filled"' recv.out | jq -e '.pages_bytes >= 96 * 1048576'
	[ "$(grep -c '"phase":"restored"' recv.out)" -eq 1 ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	rm "$BUNDLE_B/rootfs/tmp/hash"
	tern_b kill --all "$ID" USR1
	wait_until 60 test -e "$BUNDLE_B/rootfs/tmp/hash"
	read -r what after <"$BUNDLE_B/rootfs/tmp/hash"
	echo "before $before after $after"
	[ "$what" = again ]
	[ "$after" = "$before" ]
	source_gone
}
