#!/usr/bin/env bats
# tern migrate / tern migrate-receive between two "nodes" on this machine
# (see migrate-helpers.bash). Pre-copy needs soft-dirty, which this kernel
# lacks: it is tested in the qemu guest (tests/integration-criu-guest).

load helpers
load migrate-helpers

@test "migrate: stop-and-copy moves a counter, which goes on from where it was; nothing left on the source" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	[[ "$output" == *"downtime"*"total"* ]]
	receive_status
	grep -q '"event":"done"' recv.out
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	# the last count the source wrote before it froze; the target's copy
	# of the rootfs had it too, and the same process counts on from there
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	source_gone
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || false
}

@test "migrate: post-copy of 256 MiB that are fetched on demand; checksums match, memory and a counter keep changing" {
	# criu's lazy page server needs 4 MiB pipes (no CAP_SYS_RESOURCE here)
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	# memhash holds 256 MiB and hashes them again on SIGUSR1 (ignored by
	# the shell, which counts)
	set_cmd "trap '' USR1; /bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = first ]
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode post-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"event":"done"' | jq -e '.mode == "post-copy" and .downtime_ms > 0'
	# the images held no memory: far less than 256 MiB crossed the channel
	echo "$output" | grep '"event":"done"' | jq -e '.image_bytes < 64 * 1048576'
	receive_status
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

@test "migrate: stop-and-copy of 256 MiB, its page images sent while criu writes them, the memory filled from them through userfaultfd; checksums match, both sides count the same bytes" {
	set_cmd "trap '' USR1; /bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = first ]
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	sent=$(echo "$output" | grep '"phase":"images"')
	echo "$sent"
	echo "$sent" | jq -e '.pages_bytes >= 256 * 1048576 and .bytes > .pages_bytes and
		.sent_during_dump <= .bytes'
	receive_status
	# what arrived is what was sent, parts and all (recv.out is whole: the
	# receiver has exited)
	got=$(grep '"phase":"images"' recv.out)
	[ "$(echo "$got" | jq .bytes)" = "$(echo "$sent" | jq .bytes)" ]
	[ "$(echo "$got" | jq .pages_bytes)" = "$(echo "$sent" | jq .pages_bytes)" ]
	# criu lazy-pages filled the memory from those images, then RUNNING;
	# the downtime the source reports ends when the container ran there
	grep '"phase":"memory filled"' recv.out |
		jq -e --argjson p "$(echo "$got" | jq .pages_bytes)" '.pages_bytes == $p'
	echo "$output" | grep '"phase":"running"' | jq -e '.downtime_ms <= .frozen_ms'
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

@test "migrate: the rootfs travels: files written, changed and deleted, modes, a symlink" {
	local w="echo changed >/image-dir/file; echo fresh >/tmp/fresh; chmod 0751 /tmp/fresh"
	w="$w; rm /etc/group; mkdir -m 0700 /newdir; ln -s fresh /tmp/link"
	set_cmd "$w; echo ready >/tmp/ready.tmp; mv /tmp/ready.tmp /tmp/ready; $(counter_cmd /tmp/count)"
	start_source
	wait_until 10 test -e "$BUNDLE/rootfs/tmp/ready"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	local r=$BUNDLE_B/rootfs
	[ "$(cat "$r/image-dir/file")" = changed ]
	[ "$(cat "$r/tmp/fresh")" = fresh ]
	[ "$(stat -c %a "$r/tmp/fresh")" = 751 ]
	[ "$(stat -c %a "$r/newdir")" = 700 ]
	[ "$(readlink "$r/tmp/link")" = fresh ]
	[ ! -e "$r/etc/group" ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$r/tmp/count" "$last"
}

@test "migrate: a clone moves like any container; on the source its overlay, its record and its mark on the snapshot go" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	on A "$TERN_BIN" --root "$ROOT" snapshot "$ID" base </dev/null
	local c=$ID-c cr=$ROOT/@clones/$ID-c.bundle/rootfs
	on A "$TERN_BIN" --root "$ROOT" clone "$ID" base "$c" </dev/null
	wait_count_above "$cr/tmp/count" "$(cat "$ROOT/@snapshots/$ID/base/tree/tmp/count")"
	tern exec "$c" sh -c 'echo mine >/only-clone'
	receive --token-file "$TOKEN"
	run in_file on A timeout -s KILL 150 "$TERN_BIN" --root "$ROOT" migrate \
		--to "10.231.0.2:$PORT" --token-file "$TOKEN" --mode stop-and-copy "$c"
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	# the target runs the clone under its id, with the clone's files and count
	[ "$(tern_b state "$c" | jq -r .status)" = running ]
	[ "$(cat "$BUNDLE_B/rootfs/only-clone")" = mine ]
	went_on "$BUNDLE_B/rootfs/tmp/count" "$(cat "$BUNDLE_B/rootfs/tmp/count")"
	# the source: no clone, no overlay, nothing under @clones, the
	# snapshot free to go; the container it was cloned from runs on
	run tern state "$c"
	[ "$status" -ne 0 ]
	! grep -F "$ROOT/@clones" /proc/self/mountinfo || false
	[ -z "$(ls -A "$ROOT/@clones")" ]
	[ -z "$(ls -A "$ROOT/@snapshots/$ID/base/clones")" ]
	[ ! -e "$BUNDLE/rootfs/only-clone" ]
	tern snapshot --delete "$ID" base
	[ "$(state_field "$ID" status)" = running ]
	still_runs
	tern_b delete --force "$c"
}

@test "migrate: a wrong token is refused on both sides; the source runs on untouched, the target leaves nothing" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	head -c 32 /dev/urandom | base64 >"$BATS_TEST_TMPDIR/other-token"
	chmod 600 "$BATS_TEST_TMPDIR/other-token"
	# (the receiver refuses it and would wait on for the right source:
	# this one gives up at the first refusal)
	receive --token-file "$BATS_TEST_TMPDIR/other-token" --max-failed-peers 1
	migrate --token-file "$TOKEN"
	[ "$status" -ne 0 ]
	[[ "$output" == *"authentication failed"* ]] || { echo "$output"; false; }
	! receive_status || false
	grep -q "authentication failed" recv.err
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	target_clean
}

@test "migrate: the receiver killed while the source is frozen: the source thaws and runs on; the next receive cleans up" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# criu's dump on node A holds at its start: the source is frozen, the
	# last rootfs round applied, no image sent, so the receiver cannot
	# have begun a restore. There the receiver dies with kill -9, its
	# watchdog (the newest) first, so that the leftover is the next
	# receiver's to undo.
	hold_dump pre-dump
	receive --token-file "$TOKEN"
	(
		wait_until 60 test -e "$HOLD.in" &&
			pkill -9 -n -f -- "tern-migrate --root $RB migrate-receive" &&
			pkill -9 -f -- "--listen 10.231.0.2:$PORT --bundle $BUNDLE_B" &&
			wait_until 60 no_process_like "migrate-receive --listen 10.231.0.2:$PORT "
		touch "$HOLD.go"
	) 3>&- &
	CRIU_CONFIG_FILE=$HOLD.conf migrate --token-file "$TOKEN" --format json
	[ -e "$HOLD.in" ]
	[ "$status" -ne 0 ]
	echo "$output" | grep -q '"event":"rollback"' || { echo "$output"; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	[ ! -e "$RB/$ID" ]
	# a killed receiver cannot remove its image directory: the next one
	# into the same bundle does, and the migration then goes through
	ls -d "$BUNDLE_B"/.tern-migrate-*
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || false
	source_gone
}

@test "migrate: post-copy, the receiver killed once it has the images: criu's lazy dump gives up, the source thaws" {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# the receiver dies with kill -9 in the middle of its restore (see
	# hold_restore), never after it said RUNNING; its watchdog lives
	hold_restore
	receive --token-file "$TOKEN"
	kill_receiver_when_held &
	migrate --token-file "$TOKEN" --mode post-copy --format json
	[ -e "$HOLD.in" ]
	[ "$status" -ne 0 ]
	echo "$output" | grep -q '"event":"rollback"' || { echo "$output"; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	# criu's page server and the target's lazy-pages daemon are gone too
	wait_until 10 sh -c "! pgrep -f '[l]azy-pages.*$BUNDLE_B'"
	! pgrep -f "criu.*$ROOT/$ID" || false
	# the receiver's watchdog kills the restore and deletes what it made
	wait_until 30 target_clean || target_clean
}

# postcopy_break_at_running SIGNAL: a source of 256 MiB (memhash; its hash
# in $HASH_BEFORE, again on SIGUSR1) and a receiver, ready for `migrate
# --mode post-copy`; at RUNNING the target's lazy-pages daemon gets
# SIGNAL. The memory is split between the nodes from RUNNING until the
# last page: that breaks the page transfer right then. Node A's link
# limited to 100 Mbit/s makes the 256 MiB take some 20 s to cross, so the
# signal lands while pages are missing, also on a machine that stalls.
postcopy_break_at_running() {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	set_cmd "trap '' USR1; /bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r _ HASH_BEFORE <"$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	tc -n "$NA" qdisc add dev "${VETH}a" root tbf rate 100mbit burst 64kb latency 50ms
	(
		wait_until 60 grep -q '"phase":"running"' "$BATS_TEST_TMPDIR/recv.out" &&
			pkill "-$1" -f "[l]azy-pages --page-server.*$BUNDLE_B"
	) 3>&- &
}

@test "migrate: post-copy broken after RUNNING (lazy-pages killed): the target kills its copy, the source stays frozen, migrated, and says so" {
	postcopy_break_at_running KILL
	migrate --token-file "$TOKEN" --mode post-copy
	[ "$status" -ne 0 ]
	[[ "$output" == *"left frozen (migrated)"*"tern resume --force $ID"* ]] || { echo "$output"; false; }
	# the log it cites is kept (the migration's work directory may go)
	[[ "$output" == *"(log: $ROOT/$ID/last-failure/dump.log)"* ]] || { echo "$output"; false; }
	grep -q 'Version: ' "$ROOT/$ID/last-failure/dump.log"
	! receive_status || false
	grep -q "the container was killed here" recv.err
	target_clean
	# the source kept the whole container, as it was at the freeze; it was
	# handed over, so only a forced resume takes it back
	[ "$(state_field "$ID" status)" = migrated ]
	run tern resume "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is migrated"*"10.231.0.2:$PORT"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = migrated ]
	tern resume --force "$ID"
	still_runs
	tern state "$ID" | jq -e 'has("migratedTo") | not'
	rm "$BUNDLE/rootfs/tmp/hash"
	tern kill --all "$ID" USR1
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	read -r what after <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = again ]
	[ "$after" = "$HASH_BEFORE" ]
	# and it deletes cleanly: nothing of the migration is left in its state
	tern delete --force "$ID"
	[ ! -e "$ROOT/$ID" ]
}

@test "migrate: post-copy whose target stops fetching but keeps the connection: the source gives up after --criu-timeout of silence, stays frozen and says so" {
	# stopped, not killed: its connection stays up and nothing more
	# crosses it
	postcopy_break_at_running STOP
	local t0=$SECONDS
	migrate --token-file "$TOKEN" --mode post-copy --criu-timeout 5
	# a source without the bound waits for as long as the target holds on
	# (its own --criu-timeout, 300 s): the helper's 150 s would end it
	[ $((SECONDS - t0)) -lt 100 ]
	[ "$status" -ne 0 ]
	[[ "$output" == *"the target fetched no page for 5 s (--criu-timeout)"* ]] || { echo "$output"; false; }
	[[ "$output" == *"left frozen (migrated)"*"tern resume --force $ID"* ]] || { echo "$output"; false; }
	pkill -9 -f "[l]azy-pages --page-server.*$BUNDLE_B" || true
	! receive_status || false
	target_clean
	[ "$(state_field "$ID" status)" = migrated ]
	# deleted as it is, frozen: in one go, the migration's directory too
	tern delete --force "$ID"
	source_gone
}

@test "migrate: tern migrate killed while the container is frozen: its watchdog thaws it, the target leaves nothing" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# killed while its criu holds at the start of the dump (frozen, the
	# images not yet sent), which then goes on without it
	hold_dump pre-dump
	receive --token-file "$TOKEN"
	(
		CRIU_CONFIG_FILE=$HOLD.conf on A timeout -s KILL 150 "$TERN_BIN" --root "$ROOT" \
			migrate --to "10.231.0.2:$PORT" --token-file "$TOKEN" --mode stop-and-copy \
			--format json "$ID" </dev/null >"$BATS_TEST_TMPDIR/src.out" 2>&1
	) 3>&- &
	wait_until 60 test -e "$HOLD.in"
	grep -q '"phase":"freeze"' "$BATS_TEST_TMPDIR/src.out"
	# the oldest: tern-migrate itself, not a child it forked
	local src
	src=$(pgrep -o -f -- "tern-migrate --root $ROOT migrate")
	kill -9 "$src"
	wait_until 60 process_gone "$src"
	touch "$HOLD.go"
	! receive_status || false
	target_clean
	wait_status "$ID" running 30
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 10 sh -c "! ls -d '$ROOT/$ID'/migrate-* 2>/dev/null"
	tern delete --force "$ID"
	[ ! -e "$ROOT/$ID" ]
}

@test "migrate: a target without the space for the images refuses before anything moves; the source runs on" {
	# node B's bundle on a 40 MiB file system: the rootfs (about 17 MiB)
	# fits, 64 MiB of memory images do not
	mount -t tmpfs -o size=40m tmpfs "$BATS_TEST_TMPDIR/nodeB"
	mkdir -p "$RB"
	set_cmd "/bin/memhash 64 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 30 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -ne 0 ]
	[[ "$output" == *"no space on $BUNDLE_B: need "*" MiB, have "*" MiB"* ]] || { echo "$output"; false; }
	# refused before the freeze: never frozen, nothing to thaw
	! echo "$output" | grep -q '"phase":"freeze"' || false
	! receive_status || false
	grep -q "no space on" recv.err
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	target_clean
}

@test "migrate: a target bundle without config.json refuses the source's hooks (they would run on the target)" {
	set_cmd "$(counter_cmd /tmp/count)"
	# a hook would run on the target, as root
	update_config '.hooks.poststart = [{"path": "/bin/true"}]'
	start_source
	rm "$BUNDLE_B/config.json"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -ne 0 ]
	[[ "$output" == *"hooks"*"put a config.json in the bundle"* ]] || { echo "$output"; false; }
	! receive_status || false
	grep -q "hooks" recv.err
	[ ! -e "$BUNDLE_B/config.json" ]
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	target_clean
}

@test "migrate: a target bundle without config.json refuses the source's bind of a host path" {
	set_cmd "$(counter_cmd /tmp/count)"
	mkdir -p "$BUNDLE/rootfs/hostetc"
	update_config '.mounts += [{"destination": "/hostetc", "type": "bind", "source": "/etc", "options": ["rbind", "ro"]}]'
	start_source
	rm "$BUNDLE_B/config.json"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -ne 0 ]
	[[ "$output" == *"bind of the host's \`/etc\`"* ]] || { echo "$output"; false; }
	! receive_status || false
	[ ! -e "$BUNDLE_B/config.json" ]
	still_runs
	target_clean
}

@test "migrate: an established TCP connection without --tcp-established is refused before the freeze, naming the flag" {
	set_cmd "/bin/tcpecho 5555 & $(counter_cmd /tmp/count)"
	start_source
	# a client in the container's network namespace, connected and idle
	nsenter --net="/proc/$SRC_PID/ns/net" bash -c '
		for i in $(seq 600); do exec 5<>/dev/tcp/127.0.0.1/5555 2>/dev/null && break; sleep 0.1; done
		echo one >&5; read -r -u 5 l; echo "$l" >"$1/r1.tmp"; mv "$1/r1.tmp" "$1/r1"
		exec sleep "$2"' _ "$BATS_TEST_TMPDIR" "$MARK" 3>&- &
	EXTRA_PIDS=$!
	wait_for_file "$BATS_TEST_TMPDIR/r1"
	[ "$(cat "$BATS_TEST_TMPDIR/r1")" = "1 one" ]
	migrate --token-file "$TOKEN" --format json
	[ "$status" -ne 0 ]
	[[ "$output" == *"has established TCP connections"*"--tcp-established"* ]] || { echo "$output"; false; }
	! echo "$output" | grep -q '"phase":"freeze"' || false
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
}

@test "migrate: two migrations of one container at once: the second is refused" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# a peer that accepts and never answers keeps the first one waiting
	# in its handshake, holding the container
	(on B timeout 60 socat TCP-LISTEN:"$PORT",bind=10.231.0.2,reuseaddr SYSTEM:"sleep 50") 3>&- &
	wait_until 10 listening_b
	(
		on A timeout 60 "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
			--token-file "$TOKEN" --format json "$ID" >"$BATS_TEST_TMPDIR/first.out" 2>&1
	) 3>&- &
	wait_until 10 test -e "$ROOT/$ID/migrate.lock"
	wait_until 10 connected_b
	migrate --token-file "$TOKEN"
	[ "$status" -ne 0 ]
	[[ "$output" == *"container \`$ID\` is already being migrated"* ]] || { echo "$output"; false; }
	still_runs
}

@test "migrate: bad input is refused clearly and leaves nothing (token file, unknown id, --listen)" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# the source
	migrate --token-file "$BATS_TEST_TMPDIR/missing"
	[ "$status" -ne 0 ]
	[[ "$output" == *"token file \`$BATS_TEST_TMPDIR/missing\`"*"No such file"* ]] || { echo "$output"; false; }
	cp "$TOKEN" "$BATS_TEST_TMPDIR/open-token"
	chmod 644 "$BATS_TEST_TMPDIR/open-token"
	migrate --token-file "$BATS_TEST_TMPDIR/open-token"
	[ "$status" -ne 0 ]
	[[ "$output" == *"token file \`$BATS_TEST_TMPDIR/open-token\` is accessible by group or others"* ]] || { echo "$output"; false; }
	run in_file on A "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
		--token-file "$TOKEN" nosuch
	[ "$status" -ne 0 ]
	[[ "$output" == *"does not exist"*"nosuch"* ]] || { echo "$output"; false; }
	run in_file on A "$TERN_BIN" --root "$ROOT" migrate --token-file "$TOKEN" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--to IP:PORT is required"* ]]
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	# the receiver
	mkdir -p "$BUNDLE_B"
	run in_file on B "$TERN_BIN" --root "$RB" migrate-receive --listen "10.231.0.2:$PORT" \
		--bundle "$BUNDLE_B" --token-file "$BATS_TEST_TMPDIR/missing"
	[ "$status" -ne 0 ]
	[[ "$output" == *"token file \`$BATS_TEST_TMPDIR/missing\`"* ]]
	run in_file on B "$TERN_BIN" --root "$RB" migrate-receive --listen "10.231.0.2:$PORT" \
		--bundle "$BUNDLE_B" --token-file "$BATS_TEST_TMPDIR/open-token"
	[ "$status" -ne 0 ]
	[[ "$output" == *"accessible by group or others"* ]]
	for bad in "10.231.0.2" "nohost:1" "10.231.0.2:99999" "10.9.9.9:$PORT"; do
		run in_file on B "$TERN_BIN" --root "$RB" migrate-receive --listen "$bad" \
			--bundle "$BUNDLE_B" --token-file "$TOKEN"
		[ "$status" -ne 0 ]
		[[ "$output" == *"--listen"*"$bad"* ]] || { echo "$output"; false; }
	done
	run in_file on B "$TERN_BIN" --root "$RB" migrate-receive --listen "10.231.0.2:$PORT" \
		--bundle "$BUNDLE_B" --token-file "$TOKEN" --id "../x"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--id"* ]] || { echo "$output"; false; }
	target_clean
	[ -z "$(ls "$RB")" ]
}

@test "migrate: --mode pre-copy says which kernel feature is missing; tern --help lists the commands; tern has no OpenSSL" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	receive --token-file "$TOKEN" --timeout 20
	migrate --token-file "$TOKEN" --mode pre-copy
	[ "$status" -ne 0 ]
	# this kernel has no soft-dirty (see the machine notes)
	[[ "$output" == *"CONFIG_MEM_SOFT_DIRTY"* ]] || { echo "$output"; false; }
	still_runs
	pkill -9 -f -- "--listen 10.231.0.2:$PORT --bundle $BUNDLE_B"
	run "$TERN_BIN" --help
	[[ "$output" == *"migrate "*"migrate-receive "* ]]
	! ldd "$TERN_BIN" | grep -E 'libssl|libcrypto' || false
}
