#!/usr/bin/env bats
# tern migrate's rootfs rounds for files the target already holds an
# earlier version of: only the blocks that differ cross (an append only
# its tail), in every round, and the file on the target is byte for byte
# the source's; a target that runs out of space says why, and the source
# prints it.

load helpers
load migrate-helpers

# rootfs_bytes ROUND: data bytes of that rootfs round, from migrate's JSON.
rootfs_bytes() {
	echo "$output" | jq -r --argjson r "$1" \
		'select(.event=="phase" and .phase=="rootfs" and .round==$r) | .data_bytes' 2>/dev/null |
		grep -E '^[0-9]+$'
}

# larger_than FILE N: FILE has more than N bytes (for wait_until).
larger_than() {
	[ "$(stat -c %s "$1")" -gt "$2" ]
}

@test "migrate-rootfs: a big file the container appends to crosses with only its tail, in both rounds; changed, truncated and grown files are the source's byte for byte" {
	local r=$BUNDLE/rootfs
	mkdir -p "$r/data"
	head -c 32M /dev/urandom >"$r/data/big"
	head -c 3M /dev/urandom >"$r/data/mid"
	head -c 3M /dev/urandom >"$r/data/cut"
	head -c 1M /dev/urandom >"$r/data/grow"
	# the container appends a line to data/big every 10 ms
	set_cmd "while :; do echo \"line \$((i=i+1))\" >>/data/big; sleep 0.01; done & $(counter_cmd /tmp/count)"
	start_source
	local size0
	size0=$(stat -c %s "$r/data/big")
	wait_until 30 larger_than "$r/data/big" "$((size0 + 200))"
	# on the source only: 10 bytes in the middle, a cut, an extension
	printf XXXXXXXXXX | dd of="$r/data/mid" bs=1 seek=1500000 conv=notrunc status=none
	truncate -s 2500000 "$r/data/cut"
	head -c 100000 /dev/urandom >>"$r/data/grow"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	local b1 b2
	b1=$(rootfs_bytes 1)
	b2=$(rootfs_bytes 2)
	echo "rootfs data bytes: round 1 $b1, round 2 $b2"
	# round 1: the tail of big, one block of mid (64 KiB), part of a block
	# of cut, 100000 bytes of grow, the counter: far below one copy of big
	# (32 MiB); round 2 (frozen): what big and the counter got since
	[ "$b1" -gt 100000 ] && [ "$b1" -lt $((1024 * 1024)) ]
	[ "$b2" -lt $((256 * 1024)) ]
	local t=$BUNDLE_B/rootfs
	for f in mid cut grow; do
		[ "$(sha256sum <"$r/data/$f")" = "$(sha256sum <"$t/data/$f")" ]
	done
	[ "$(stat -c %s "$t/data/cut")" = 2500000 ]
	# big as it was at the freeze (the source's copy stopped there), then
	# what the container appended on the target since
	local n
	n=$(stat -c %s "$r/data/big")
	[ "$n" -gt "$((size0 + 200))" ]
	cmp -n "$n" "$r/data/big" "$t/data/big"
	last=$(tail -n 1 "$r/data/big" | cut -d' ' -f2)
	wait_until 30 larger_than "$t/data/big" "$n"
	# the line after the last one on the source is the next number
	[ "$(tail -c +$((n + 1)) "$t/data/big" | head -n 1)" = "line $((last + 1))" ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
}

@test "migrate-rootfs: a target that runs out of space in a rootfs round says why, and the source prints it; the source runs on, the target's rootfs is as before" {
	# node B's bundle on a 100 MiB file system: the rootfs (about 17 MiB)
	# and the space the target asks for the images (64 MiB and the
	# memory) fit; a 90 MiB file written on the source does not
	mount -t tmpfs -o size=100m tmpfs "$BATS_TEST_TMPDIR/nodeB"
	mkdir -p "$RB"
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	head -c 90M /dev/urandom >"$BUNDLE/rootfs/big-new"
	local before
	before=$(cd "$BUNDLE_B/rootfs" && find . -printf '%p %s %T@\n' | sort | sha256sum)
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -ne 0 ]
	echo "$output"
	[[ "$output" == *"the other side: "*"big-new"*"No space left on device"* ]]
	[[ "$output" != *"closed the connection"* ]]
	! receive_status || false
	grep -q "No space left on device" recv.err
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	target_clean
	[ "$(cd "$BUNDLE_B/rootfs" && find . -printf '%p %s %T@\n' | sort | sha256sum)" = "$before" ]
}

# data_snapshot: inode, size, mtime and checksum of each file in the
# target's rootfs/data.
data_snapshot() {
	local f
	for f in "$BUNDLE_B"/rootfs/data/*; do
		echo "$(basename "$f") $(stat -c '%i %s %Y %a' "$f") $(sha256sum <"$f")"
	done
}

@test "migrate-rootfs: files patched in place on the target are put back byte for byte when the receiver is killed during the restore" {
	local r=$BUNDLE/rootfs
	mkdir -p "$r/data"
	head -c 8M /dev/urandom >"$r/data/big"
	head -c 3M /dev/urandom >"$r/data/mid"
	head -c 3M /dev/urandom >"$r/data/cut"
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	head -c 100000 /dev/urandom >>"$r/data/big"
	printf XXXXXXXXXX | dd of="$r/data/mid" bs=1 seek=1500000 conv=notrunc status=none
	truncate -s 2500000 "$r/data/cut"
	data_snapshot >before.txt
	hold_restore
	receive --token-file "$TOKEN"
	(
		rc=0
		on A timeout -s KILL 150 "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
			--token-file "$TOKEN" --mode stop-and-copy --format json "$ID" \
			</dev/null >"$BATS_TEST_TMPDIR/src.out" 2>&1 || rc=$?
		echo "$rc" >"$BATS_TEST_TMPDIR/src.rc"
	) 3>&- &
	wait_until 60 test -e "$HOLD.in"
	# the files were patched, not sent whole
	output=$(cat src.out)
	[ "$(rootfs_bytes 1)" -lt $((1024 * 1024)) ]
	[ "$(cmp "$r/data/mid" "$BUNDLE_B/rootfs/data/mid" && echo same)" = same ]
	kill_receiver
	touch "$HOLD.go"
	wait_until 150 test -s src.rc
	[ "$(cat src.rc)" -ne 0 ]
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	wait_until 30 target_clean
	data_snapshot >after.txt
	diff before.txt after.txt
}
