#!/usr/bin/env bats
# A source that handed its container over (the target said RUNNING) is
# "migrated": `tern list` and `tern state` say so and where it went,
# resume, start, pause and exec refuse it (resume --force does not), and
# delete, with or without --force, removes all of it (see
# migrate-helpers.bash for the two nodes).

load helpers
load migrate-helpers

# migrate_killed_at_running: a post-copy migration of 256 MiB (node A's
# link limited to 100 Mbit/s: the pages take some 20 s to cross) whose
# tern migrate gets SIGKILL as soon as it has said the target runs, with
# its criu's lazy dump still serving pages.
migrate_killed_at_running() {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	set_cmd "trap '' USR1; /bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	tc -n "$NA" qdisc add dev "${VETH}a" root tbf rate 100mbit burst 64kb latency 50ms
	(
		on A timeout -s KILL 150 "$TERN_BIN" --root "$ROOT" migrate \
			--to "10.231.0.2:$PORT" --token-file "$TOKEN" --mode post-copy \
			--format json "$ID" </dev/null >"$BATS_TEST_TMPDIR/src.out" 2>&1
	) 3>&- &
	wait_until 120 grep -q '"phase":"running"' "$BATS_TEST_TMPDIR/src.out" ||
		{ cat "$BATS_TEST_TMPDIR/src.out"; return 1; }
	# the oldest: tern-migrate itself, not a child it forked
	local src
	src=$(pgrep -o -f -- "tern-migrate --root $ROOT migrate")
	kill -9 "$src"
	wait_until 60 process_gone "$src"
	# killed before it could clean up (else this test proves nothing)
	! grep -q '"event":"done"' "$BATS_TEST_TMPDIR/src.out" || false
	ls -d "$ROOT/$ID"/migrate-*/images "$ROOT/$ID"/migrate-*/tls "$ROOT/$ID"/migrate-*/work
}

# check_migrated: list and state say migrated and where; resume, start,
# pause and exec refuse it, naming where it went.
check_migrated() {
	[ "$(state_field "$ID" status)" = migrated ]
	tern state "$ID" | jq -e --arg to "10.231.0.2:$PORT" --arg id "$ID" \
		'.migratedTo == $to and .migratedAs == $id'
	tern list | grep -E "^$ID +[0-9]+ +migrated "
	tern list --format json | jq -e --arg id "$ID" --arg to "10.231.0.2:$PORT" \
		'.[] | select(.id == $id) | .status == "migrated" and .migratedTo == $to'
	run tern resume "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot resume container \`$ID\`: it is migrated"*"10.231.0.2:$PORT"*"tern resume --force $ID"* ]] || { echo "$output"; false; }
	run tern start "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot start container \`$ID\`: it is migrated"*"10.231.0.2:$PORT"* ]] || { echo "$output"; false; }
	run tern pause "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is migrated"* ]] || { echo "$output"; false; }
	run tern exec "$ID" true
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is migrated"* ]] || { echo "$output"; false; }
	# still migrated: none of them touched it
	[ "$(state_field "$ID" status)" = migrated ]
}

@test "migrate-migrated: tern migrate killed right after RUNNING: the source is migrated, names where, refuses resume and start; delete removes all of it" {
	migrate_killed_at_running
	check_migrated
	# without --force: it is no live copy of anything
	tern delete "$ID"
	source_gone
	[ ! -e "$ROOT/$ID" ]
	! pgrep -f "criu.*$ROOT/$ID" || false
}

@test "migrate-migrated: delete --force of a migrated source removes it in one go, its migration's work directory too" {
	migrate_killed_at_running
	check_migrated
	tern delete --force "$ID"
	source_gone
	! pgrep -f "criu.*$ROOT/$ID" || false
	# and nothing of it is left for a second delete
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$ID" ]
	[ -z "$(find "$ROOT" -name 'migrate-*')" ] || { ls -laR "$ROOT"; false; }
}

@test "migrate-migrated: a migration that ends well leaves nothing on the source, nothing marked" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	# the target's state is a normal one
	! tern_b state "$ID" | jq -e 'has("migratedTo")' || false
	source_gone
	[ -z "$(find "$ROOT" -name 'migrate-*' -o -name migrated)" ] || { ls -laR "$ROOT"; false; }
}
