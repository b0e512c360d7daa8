#!/usr/bin/env bats
# tern snapshot's incremental memory: with the kernel's soft-dirty tracking
# each snapshot's dump has the previous one as its parent and writes only
# the pages changed since; the parent's images are hard-linked into it, so
# deleting the parent snapshot loses nothing. The development machine's
# kernel has no soft-dirty tracking: scripts/test.sh runs this file inside
# a qemu guest booted from Debian's own kernel (tests/vm/run-in-guest.sh).
# Run anywhere else, every test skips, loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers

setup() {
	require_soft_dirty
	setup_bundle
	STORE=$ROOT/@snapshots/$ID
}

teardown() {
	teardown_bundle
}

# pages_kib DIR: KiB of memory pages in a CRIU image directory (its own,
# not its parent's).
pages_kib() {
	du -ck "$1"/pages-*.img | tail -1 | cut -f1
}

@test "snapshot-incremental: the second snapshot dumps only the changed pages; rolled back after its parent is deleted, every byte is there" {
	set_cmd "/bin/memhash 64 /tmp/hash & $(counter_cmd /tmp/count)"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 120 test -e "$BUNDLE/rootfs/tmp/hash"
	local first
	first=$(cut -d' ' -f2 "$BUNDLE/rootfs/tmp/hash")
	run tern snapshot --format json "$ID" a
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "# a: $output" >&3
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$(cat "$BUNDLE/rootfs/tmp/count")" 60
	run tern snapshot --format json "$ID" b
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "# b: $output" >&3
	local ka kb
	ka=$(pages_kib "$STORE/a/images")
	kb=$(pages_kib "$STORE/b/images")
	echo "# pages: a $ka KiB, b $kb KiB" >&3
	[ "$ka" -ge $((64 * 1024)) ]
	# the counter's shell dirtied a few pages, memhash none
	[ "$kb" -lt 8192 ]
	[ -d "$STORE/b/images/parent" ] && [ ! -L "$STORE/b/images/parent" ]
	[ "$(tern snapshot --list --format json "$ID" | jq -r '.[1].name')" = b ]
	# the parent goes; b keeps its pages through its own links
	run tern snapshot --delete "$ID" a
	[ "$status" -eq 0 ]
	run tern rollback "$ID" b
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern exec "$ID" sh -c 'kill -USR1 $(pidof memhash)'
	[ "$status" -eq 0 ]
	wait_until 120 grep -q again "$BUNDLE/rootfs/tmp/hash"
	[ "$(cat "$BUNDLE/rootfs/tmp/hash")" = "again $first" ]
	# after a rollback every page is new to the kernel: the next snapshot
	# is correct whatever it writes, and a rollback to it works too
	run tern snapshot "$ID" c
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern rollback "$ID" c
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	rm -f "$BUNDLE/rootfs/tmp/hash"
	run tern exec "$ID" sh -c 'kill -USR1 $(pidof memhash)'
	[ "$status" -eq 0 ]
	wait_until 120 grep -q again "$BUNDLE/rootfs/tmp/hash"
	[ "$(cat "$BUNDLE/rootfs/tmp/hash")" = "again $first" ]
}

@test "clone --share-memory on a kernel without PR_SET_MEMORY_MERGE (Debian's 6.1 here): a clear error, nothing made, the source runs on" {
	# (the host's 6.18 has it: snapshot.bats tests the merging there)
	local major minor
	IFS=. read -r major minor _ <<<"$(uname -r)"
	if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 4 ]; }; then
		echo "this test wants a kernel older than 6.4 (the guest's 6.1); this is $(uname -r)" >&2
		false
	fi
	set_cmd "sleep $MARK"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	tern snapshot "$ID" base
	run tern clone --share-memory "$ID" base "$ID-k"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--share-memory: this kernel cannot mark"*"Linux 6.4 or later"* ]] || {
		echo "$output"
		false
	}
	run tern state "$ID-k"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/$ID-k" ]
	[ ! -e "$ROOT/@clones/$ID-k" ]
	[ ! -e "$ROOT/@clones/$ID-k.bundle" ]
	[ -z "$(ls -A "$STORE/base/clones" 2>/dev/null)" ]
	[ "$(state_field "$ID" status)" = running ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
