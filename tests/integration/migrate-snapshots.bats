#!/usr/bin/env bats
# tern migrate of a container that has snapshots (migrate-snapshots.c):
# refused without a choice; --drop-snapshots deletes them and says so;
# --with-snapshots sends them, and the target keeps them under the same
# names, sharing files as on the source, usable by rollback; a failed
# migration leaves the target nothing and the source its snapshots.

load helpers
load migrate-helpers

teardown() {
	migrate_teardown
	# (the small state root of the no-space test)
	if mountpoint -q "${RB:-/nonexistent}"; then
		umount "$RB"
	fi
}

# snap NAME: a snapshot of $ID on node A.
snap() {
	on A "$TERN_BIN" --root "$ROOT" snapshot "$ID" "$1" </dev/null >/dev/null
}

# two snapshots of a counting container, s1 then s2 (s2 shares s1's
# unchanged files)
start_with_snapshots() {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	snap s1
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$(cat "$ROOT/@snapshots/$ID/s1/tree/tmp/count")"
	snap s2
}

# snapshot_names ROOT: the names `tern snapshot --list` shows for $ID.
snapshot_names() {
	"$TERN_BIN" --root "$1" snapshot --list --format json "$ID" | jq -r '.[].name' | sort | tr '\n' ' '
}

@test "migrate-snapshots: a container with snapshots is refused without a flag, before anything changes; the message names both flags" {
	start_with_snapshots
	receive --token-file "$TOKEN" --timeout 30
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -ne 0 ]
	[[ "$output" == *"container \`$ID\` has 2 snapshots (s1, s2)"*"--with-snapshots"*"--drop-snapshots"* ]] ||
		{ echo "$output"; false; }
	# refused before connecting: never frozen, the receiver saw nobody
	! echo "$output" | grep -q '"event":"connected"' || false
	! echo "$output" | grep -q '"phase":"freeze"' || false
	! grep -q '"event":"connected"' recv.out || false
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	# (not even the migration lock was taken)
	[ ! -e "$ROOT/$ID/migrate.lock" ]
	! ls -d "$ROOT/$ID"/migrate-* 2>/dev/null || false
	# both flags at once: refused too
	migrate --token-file "$TOKEN" --with-snapshots --drop-snapshots
	[ "$status" -ne 0 ]
	[[ "$output" == *"exclude each other"* ]] || { echo "$output"; false; }
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	# the receiver times out with nothing made
	! receive_status || false
	target_clean
	[ ! -e "$RB/@snapshots/$ID" ]
}

@test "migrate-snapshots: --drop-snapshots migrates and says, in text and JSON, which snapshots it deleted" {
	start_with_snapshots
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --drop-snapshots --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	# said before the migration started (before the connection), and at the end
	echo "$output" | head -1 | jq -e '.event == "snapshots" and .action == "drop" and .count == 2 and .names == ["s1","s2"]'
	echo "$output" | jq -se 'map(select(.event == "snapshots" and .action == "dropped"))[0].names == ["s1","s2"]'
	[ ! -e "$ROOT/@snapshots/$ID" ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	[ ! -e "$RB/@snapshots/$ID" ]
	source_gone
	# the text says it too
	tern_b delete --force "$ID"
	rm -rf "$BUNDLE_B"
	rm -rf "$ROOT/@snapshots/$ID"
	start_with_snapshots
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --drop-snapshots
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[[ "$output" == *"--drop-snapshots: deleting 2 snapshots of \`$ID\` once the target runs it: s1, s2"* ]] ||
		{ echo "$output"; false; }
	[[ "$output" == *"--drop-snapshots: deleted 2 snapshots of \`$ID\`: s1, s2"* ]] || { echo "$output"; false; }
	[ ! -e "$ROOT/@snapshots/$ID" ]
}

@test "migrate-snapshots: --with-snapshots: the target lists the same snapshots, shares files between them as the source did, and rolls back to one" {
	start_with_snapshots
	# on the source, s2 shares s1's unchanged files (hard links)
	[ "$(stat -c %i "$ROOT/@snapshots/$ID/s1/tree/etc/passwd")" = "$(stat -c %i "$ROOT/@snapshots/$ID/s2/tree/etc/passwd")" ]
	s1count=$(cat "$ROOT/@snapshots/$ID/s1/tree/tmp/count")
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --with-snapshots --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" | jq -se 'map(select(.event == "snapshots" and .action == "sent"))[0].names == ["s1","s2"]'
	grep '"event":"snapshots"' recv.out | jq -e '.action == "received" and .names == ["s1","s2"]'
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	source_gone
	[ ! -e "$ROOT/@snapshots/$ID" ]
	# the target keeps them under the same names, as they were
	[ "$(snapshot_names "$RB")" = "s1 s2 " ]
	[ "$(cat "$RB/@snapshots/$ID/s1/tree/tmp/count")" = "$s1count" ]
	[ "$(stat -c %i "$RB/@snapshots/$ID/s1/tree/etc/passwd")" = "$(stat -c %i "$RB/@snapshots/$ID/s2/tree/etc/passwd")" ]
	[ "$(stat -c %a "$RB/@snapshots/$ID")" = 700 ]
	# nothing of the source's own bookkeeping
	[ ! -e "$RB/@snapshots/$ID/head" ]
	# a rollback there to s1: the counter goes back to s1's count, and on
	wait_count_above "$BUNDLE_B/rootfs/tmp/count" $((s1count + 50)) 60
	before=$(cat "$BUNDLE_B/rootfs/tmp/count")
	tern_b rollback "$ID" s1
	after=$(cat "$BUNDLE_B/rootfs/tmp/count")
	echo "s1 $s1count, before the rollback $before, after $after"
	[ "$after" -lt "$before" ]
	[ "$after" -ge "$s1count" ]
	went_on "$BUNDLE_B/rootfs/tmp/count" "$after"
	# and a new snapshot there, then delete
	tern_b snapshot "$ID" s3
	[ "$(snapshot_names "$RB")" = "s1 s2 s3 " ]
	tern_b delete --force "$ID"
}

@test "migrate-snapshots: --with-snapshots that fails on the target (its restore) leaves the target nothing; the source runs on with its snapshots" {
	start_with_snapshots
	# the target's own config.json: a prestart hook that fails the restore
	update_config '.hooks.prestart = [{"path": "/bin/false"}]' "$BUNDLE_B"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --with-snapshots --format json
	[ "$status" -ne 0 ]
	echo "$output" | grep -q '"action":"sent"' || { echo "$output"; false; }
	! receive_status || false
	grep -q '"action":"received"' recv.out
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	target_clean
	[ ! -e "$RB/@snapshots/$ID" ]
}

@test "migrate-snapshots: --with-snapshots, the receiver killed during the restore: its watchdog removes the snapshots it received; the source keeps its own" {
	start_with_snapshots
	hold_restore
	receive --token-file "$TOKEN"
	kill_receiver_when_held &
	migrate --token-file "$TOKEN" --mode stop-and-copy --with-snapshots
	[ "$status" -ne 0 ]
	[ -e "$HOLD.in" ]
	# (the target had them when it was killed)
	grep -q '"action":"received"' recv.out
	still_runs
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	wait_until 60 no_process_like "migrate-receive --listen 10.231.0.2:$PORT "
	wait_until 60 test ! -e "$RB/@snapshots/$ID"
	target_clean
}

@test "migrate-snapshots: a second migration of a container with snapshots is refused at once, not kept waiting on their store" {
	start_with_snapshots
	# a peer that accepts and never answers keeps the first one waiting
	# in its handshake, holding the container (as migrate.bats does)
	(on B timeout 60 socat TCP-LISTEN:"$PORT",bind=10.231.0.2,reuseaddr SYSTEM:"sleep 50") 3>&- &
	wait_until 10 listening_b
	(
		on A timeout 60 "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
			--token-file "$TOKEN" --with-snapshots --format json "$ID" >"$BATS_TEST_TMPDIR/first.out" 2>&1
	) 3>&- &
	wait_until 10 test -e "$ROOT/$ID/migrate.lock"
	wait_until 10 connected_b
	# (bounded well below the first's 60 s: a wait on the store would
	# show as a timeout, not as the refusal)
	run in_file on A timeout -s KILL 30 "$TERN_BIN" --root "$ROOT" migrate \
		--to "10.231.0.2:$PORT" --token-file "$TOKEN" --drop-snapshots "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"container \`$ID\` is already being migrated"* ]] || { echo "$output"; false; }
	still_runs
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
}

@test "migrate-snapshots: --with-snapshots to a state root without room for them fails before the freeze and says why; the target keeps nothing" {
	# node B's state root on a 4 MiB file system: its bundle has room for
	# the images, its root not for the snapshots' copy of the rootfs
	mkdir -p "$RB"
	mount -t tmpfs -o size=4m tmpfs "$RB"
	start_with_snapshots
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --with-snapshots --format json
	[ "$status" -ne 0 ]
	[[ "$output" == *"sending the snapshots"* ]] || { echo "$output"; false; }
	! echo "$output" | grep -q '"phase":"freeze"' || false
	! receive_status || false
	# (the source may see only the connection closed: relaying the
	# target's reason is the channel's)
	grep -q "receiving the snapshots into \`$RB/@snapshots/$ID\`.*No space left on device" recv.err
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	target_clean
	[ ! -e "$RB/@snapshots/$ID" ]
}

@test "migrate-snapshots: the receiver and its watchdog killed after the snapshots arrived: the next receiver removes them, and its migration brings them again" {
	start_with_snapshots
	# as in migrate.bats: the source's dump holds at its start, and there
	# the receiver dies with its watchdog (the newest) first
	hold_dump pre-dump
	receive --token-file "$TOKEN"
	(
		wait_until 60 test -e "$HOLD.in" &&
			pkill -9 -n -f -- "tern-migrate --root $RB migrate-receive" &&
			pkill -9 -f -- "--listen 10.231.0.2:$PORT --bundle $BUNDLE_B" &&
			wait_until 60 no_process_like "migrate-receive --listen 10.231.0.2:$PORT "
		touch "$HOLD.go"
	) 3>&- &
	CRIU_CONFIG_FILE=$HOLD.conf migrate --token-file "$TOKEN" --with-snapshots --format json
	[ -e "$HOLD.in" ]
	[ "$status" -ne 0 ]
	still_runs
	[ "$(snapshot_names "$ROOT")" = "s1 s2 " ]
	# what the killed receiver received is still there, its work
	# directory saying so
	[ -d "$RB/@snapshots/$ID/s1" ]
	grep -qx "$RB/@snapshots/$ID" "$BUNDLE_B"/.tern-migrate-*/snapshots
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --with-snapshots
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	# (a store left there would have been refused: the sweep removed it)
	[ "$(snapshot_names "$RB")" = "s1 s2 " ]
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || false
	source_gone
}
