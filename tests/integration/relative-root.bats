#!/usr/bin/env bats
# --root given as a relative path: tern makes it absolute once, before any
# command runs, so that the helpers it starts in other directories (the
# lazy-pages daemon and filler of a clone, the spares' builder,
# tern-migrate, criu) find the same root. Each command runs here from a
# directory of its own with `--root rootS`, a root that does not exist yet,
# and must behave as with the absolute path: it succeeds and leaves no
# mount, state or process behind.

load helpers
load snapshot-helpers
load migrate-helpers

setup() {
	if is_runc; then
		skip "snapshot, clone and migrate are tern's own"
	fi
	if [[ $BATS_TEST_DESCRIPTION == *migrate* ]]; then
		migrate_setup
	else
		setup_bundle
	fi
	HERE=$BATS_TEST_TMPDIR/here
	mkdir -p "$HERE"
	cd "$HERE"
	# what the relative root means from here (for the helpers' checks and
	# teardown, which use $ROOT); it is not created: tern creates it
	ROOT=$HERE/rootS
	STORE=$ROOT/@snapshots/$ID
}

teardown() {
	cd "$BATS_TEST_TMPDIR"
	if [ -n "${NA:-}" ]; then
		migrate_teardown
	else
		teardown_bundle
	fi
}

# rel ARG...: tern with the relative root, from $HERE.
rel() {
	(cd "$HERE" && in_file "$TERN_BIN" --root rootS "$@")
}

# nothing_here: no mount under this test's directories, no container left
# in the root, no clone bundle, no process started with the relative root.
nothing_here() {
	! grep -F "$BATS_TEST_TMPDIR/" /proc/self/mountinfo >&2 || return 1
	[ -z "$(rel list -q)" ] || { echo "containers left: $(rel list -q)" >&2; return 1; }
	! ls -d "$ROOT"/@clones/*.bundle 2>/dev/null || { echo "clone bundles left" >&2; return 1; }
	! ls -d "$ROOT"/@snapshots/*/.clone-spares 2>/dev/null || { echo "spares left" >&2; return 1; }
	if pgrep -f -- "--root rootS" >&2; then return 1; fi
	if pgrep -f -- "$HERE/" >&2; then return 1; fi
	return 0
}

@test "relative --root: create, start, state, list, kill, delete; the root is made where it says" {
	[ ! -e rootS ]
	set_args sleep "$MARK"
	run rel create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -d "$ROOT/$ID" ]
	run rel start "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run rel state "$ID"
	[ "$status" -eq 0 ]
	[ "$(jq -r .status <<<"$output")" = running ]
	# the same container, seen through the absolute path and from elsewhere
	[ "$(state_field "$ID" status)" = running ]
	[ "$(cd / && "$TERN_BIN" --root "$ROOT" list -q)" = "$ID" ]
	run rel kill "$ID" KILL
	[ "$status" -eq 0 ]
	wait_until 10 eval '[ "$(state_field "$ID" status)" = stopped ]'
	run rel delete "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	check_nothing_left "$ID"
	nothing_here
}

@test "relative --root: snapshot, rollback, a cold clone (lazy pages, filler) and delete leave nothing behind" {
	set_cmd "$(log_cmd /tmp/log)"
	run rel run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_status "$ID" running
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
	run rel snapshot "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -d "$STORE/base" ]
	local s
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	run rel rollback "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	# a cold clone: restored with criu lazy-pages, its memory filled
	# behind it by the filler, both started with the root
	run rel clone --wait-fill "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID-c" status)" = running ]
	[ "$(state_field "$ID-c" bundle)" = "$ROOT/@clones/$ID-c.bundle" ]
	wait_until 30 lines_at_least "$(clone_rootfs "$ID-c")/tmp/log" $((s + 2))
	# and one not waited for: deleted while its memory may still fill
	run rel clone "$ID" base "$ID-d"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	for c in "$ID-c" "$ID-d"; do
		run rel delete --force "$c"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		[ ! -e "$ROOT/$c" ]
		[ ! -e "$ROOT/@clones/$c.bundle" ]
	done
	run rel delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	check_nothing_left "$ID"
	wait_until 30 nothing_here
	nothing_here
}

@test "relative --root: clone --spares, a clone from a spare and its delete leave nothing behind" {
	set_cmd "$(log_cmd /tmp/log)"
	run rel run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_status "$ID" running
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
	run rel snapshot "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run rel clone --spares 1 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# (the builder runs on in the background, with the root it was given)
	spare_ready() {
		rel snapshot --list --format json "$ID" |
			jq -e '.[] | select(.name == "base") | .spares | .ready == 1 or .failed' >/dev/null
	}
	wait_until 120 spare_ready
	run rel snapshot --list --format json "$ID"
	jq -e '.[] | select(.name == "base") | .spares == {"wanted":1,"ready":1,"failed":false}' <<<"$output"
	run rel clone --format json "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	[ "$(state_field "$ID-c" status)" = running ]
	run rel delete --force "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ ! -e "$ROOT/$ID-c" ]
	[ ! -e "$ROOT/@clones/$ID-c.bundle" ]
	# the clone's overlay went with it
	! grep -F "$ROOT/@clones/$ID-c" /proc/self/mountinfo || false
	# deleting the source takes the spares (made again behind the clone)
	run rel delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	check_nothing_left "$ID"
	wait_until 60 nothing_here
	nothing_here
}

@test "relative --root: checkpoint and restore with a relative --image-path" {
	set_cmd "$(counter_cmd /tmp/count)"
	run rel run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_status "$ID" running
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	run rel checkpoint --image-path img "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -f "$HERE/img/inventory.img" ]
	check_nothing_left "$ID"
	local before
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	run rel restore -d --image-path img -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
	run rel delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	check_nothing_left "$ID"
	nothing_here
}

@test "relative --root: migrate between two relative roots on this host; the counter goes on, nothing left on either" {
	# the two nodes' roots, relative to here (setup ran migrate_setup)
	RB=$HERE/rootB
	set_cmd "$(counter_cmd /tmp/count)"
	mkdir -p "$BUNDLE_B"
	cp -a "$BUNDLE/rootfs" "$BUNDLE/config.json" "$BUNDLE_B/"
	update_config ".linux.cgroupsPath = \"/$ID-b\"" "$BUNDLE_B"
	# (stdio on /dev/null: a file of this node cannot go with it)
	on A "$TERN_BIN" --root rootS run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
	SRC_PID=$(state_field "$ID" pid)
	SRC_START=$(cut -d' ' -f22 "/proc/$SRC_PID/stat")
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	(
		rc=0
		on B timeout -s KILL 150 "$TERN_BIN" --root rootB migrate-receive \
			--listen "10.231.0.2:$PORT" --bundle "$BUNDLE_B" --format json \
			--token-file "$TOKEN" </dev/null >"$BATS_TEST_TMPDIR/recv.out" \
			2>"$BATS_TEST_TMPDIR/recv.err" || rc=$?
		echo "$rc" >"$BATS_TEST_TMPDIR/recv.rc"
	) 3>&- &
	wait_until 10 grep -q '"event":"listening"' "$BATS_TEST_TMPDIR/recv.out"
	run in_file on A timeout -s KILL 150 "$TERN_BIN" --root rootS migrate \
		--to "10.231.0.2:$PORT" --token-file "$TOKEN" --mode stop-and-copy "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; cat "$BATS_TEST_TMPDIR/recv.err"; false; }
	receive_status
	[ -d "$RB/$ID" ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	local last
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	source_gone
	run in_file "$TERN_BIN" --root rootB delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	target_clean
	nothing_here
	[ -z "$("$TERN_BIN" --root rootB list -q)" ]
}
