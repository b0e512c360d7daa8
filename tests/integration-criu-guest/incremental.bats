#!/usr/bin/env bats
# Incremental checkpoints: `checkpoint --pre-dump` copies the memory while
# the container runs, then `checkpoint --parent-path` writes only the pages
# dirtied since. CRIU needs the kernel's soft-dirty page tracking for that
# (CONFIG_MEM_SOFT_DIRTY), which the development machine's kernel lacks, so
# scripts/test.sh runs this file inside a qemu guest booted from Debian's own
# kernel (tests/vm/run-in-guest.sh). Run anywhere else, every test skips,
# loudly.

# scripts/test.sh runs the tests tagged vm:v2 in its qemu guests: all of
# this file's.
# bats file_tags=vm:v2

load ../integration/helpers

setup() {
	require_soft_dirty
	setup_bundle
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	teardown_bundle
}

# pages_mib DIR: MiB of memory pages in a CRIU image directory.
pages_mib() {
	du -cm "$1"/pages-*.img | tail -1 | cut -f1
}

@test "incremental: pre-dump, then a dump with --parent-path writes only what changed" {
	set_args /bin/memhash 96 /tmp/hash
	tern run -d -b "$BUNDLE" "$ID" >/dev/null
	wait_for_file "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	mkdir -p images
	start=$(date +%s%N)
	run tern checkpoint --pre-dump --image-path images/pre "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	t_pre=$((($(date +%s%N) - start) / 1000000))
	# a pre-dump leaves the container running
	[ "$(state_field "$ID" status)" = running ]
	start=$(date +%s%N)
	run tern checkpoint --parent-path ../pre --image-path images/final "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	t_final=$((($(date +%s%N) - start) / 1000000))
	# the dump deleted the container, as runc's does
	run tern state "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"does not exist"* ]]
	pre=$(pages_mib images/pre)
	final=$(pages_mib images/final)
	echo "# pre-dump: $pre MiB of pages in $t_pre ms; dump with parent: $final MiB in $t_final ms" >&3
	[ "$pre" -ge 96 ]
	# only the pages dirtied since the pre-dump (a few MiB at most)
	[ "$final" -lt $((pre / 8)) ]
	[ -L images/final/parent ]
	rm "$BUNDLE/rootfs/tmp/hash"
	# restore reads the pages through the parent link
	run tern restore -d --image-path images/final -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	tern kill "$ID" USR1
	wait_for_file "$BUNDLE/rootfs/tmp/hash"
	read -r what after <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = again ]
	[ "$after" = "$before" ]
}

@test "incremental: pages written after the pre-dump are in the final dump" {
	set_cmd "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/.c; mv /tmp/.c /tmp/count; sleep 0.1; done"
	tern run -d -b "$BUNDLE" "$ID" >/dev/null
	wait_for_file "$BUNDLE/rootfs/tmp/count"
	mkdir -p images
	tern checkpoint --pre-dump --image-path images/pre "$ID"
	# pages written after the pre-dump: the count moved on
	pre=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" $((pre + 5)) 30
	tern checkpoint --parent-path ../pre --image-path images/final "$ID"
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	tern restore -d --image-path images/final -b "$BUNDLE" "$ID"
	# the same process went on from there: its count did not start over
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
}
