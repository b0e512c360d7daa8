#!/usr/bin/env bats
# tern migrate of a container with a user namespace of its own whose root
# is an unprivileged host id (100000): the network namespace travels in the
# images (only criu can make one of its new user namespace), the images
# are opened to that root on the target, and post-copy's userfaultfd comes
# from /dev/userfaultfd (tern-uffd-preload.so in criu).

load helpers
load migrate-helpers

# userns_rootfs (helpers.bash), and the target's bundle reachable by the
# container's root too.
userns_rootfs_both() {
	userns_rootfs
	make_traversable "$BATS_TEST_TMPDIR/nodeB"
}

# maps_are ID: the target's copy of ID runs in a user namespace mapped as
# the config says, its network namespace is not the host's.
maps_are() {
	local pid
	pid=$(tern_b state "$ID" | jq -r .pid)
	[ "$(tr -s ' ' <"/proc/$pid/uid_map" | sed 's/^ //')" = "0 100000 65536" ]
	[ "$(stat -c %u "/proc/$pid")" = 100000 ]
	[ "$(stat -L -c %i "/proc/$pid/ns/net")" != "$(stat -L -c %i /proc/self/ns/net)" ]
}

@test "migrate-userns: stop-and-copy of a container whose root is host 100000: the counter goes on on the target, nothing left on the source" {
	userns_rootfs_both
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	maps_are
	source_gone
}

@test "migrate-userns: post-copy of 64 MiB (lazy pages through /dev/userfaultfd): checksums match, the counter goes on" {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	userns_rootfs_both
	set_cmd "trap '' USR1; /bin/memhash 64 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = first ]
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode post-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"event":"done"' | jq -e '.mode == "post-copy"'
	# the images held no memory: the pages came on demand
	echo "$output" | grep '"event":"done"' | jq -e '.image_bytes < 32 * 1048576'
	receive_status
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	maps_are
	rm "$BUNDLE_B/rootfs/tmp/hash"
	tern_b kill --all "$ID" USR1
	wait_until 60 test -e "$BUNDLE_B/rootfs/tmp/hash"
	read -r what after <"$BUNDLE_B/rootfs/tmp/hash"
	[ "$what" = again ]
	[ "$after" = "$before" ]
	source_gone
}
