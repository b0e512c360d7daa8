#!/usr/bin/env bats
# tern migrate / migrate-receive: one side killed or broken at a chosen
# stage, and strangers at the receiver's port (migrate.bats has the wrong
# token, the receiver killed at the last rootfs round and after the
# post-copy images, lazy-pages killed after RUNNING, tern migrate killed
# while frozen, a full disk, two at once).
# After each: exactly one copy runs and counts on, the other node is clean,
# the target's rootfs is as it was unless the container moved there, and
# the surviving side says what failed.
#
# What tern does when the receiver dies after the restore: the source
# deletes its copy only once it has read RUNNING, and RUNNING is the
# target's commit point too. Before it, the receiver's watchdog kills the
# restore and deletes the container, so the source, which thaws, is the
# only copy; after it, the target's copy runs on and the source deletes
# its own.

load helpers
load migrate-helpers

# rootfs_snapshot DIR: every entry of DIR with its type, mode, owner,
# inode, link count, mtime, size, symlink target, xattrs and a checksum of
# its contents (the inode too: what comes back must be the original, not
# a copy).
rootfs_snapshot() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
for d, dirs, files in os.walk(root):
    dirs.sort()
    for name in [''] + sorted(dirs + files) if d == root else sorted(dirs + files):
        p = os.path.join(d, name) if name else d
        st = os.lstat(p)
        line = [os.path.relpath(p, root), oct(st.st_mode), '%d:%d' % (st.st_uid, st.st_gid),
                str(st.st_ino), str(st.st_nlink), str(st.st_mtime_ns)]
        if stat.S_ISREG(st.st_mode):
            line += [str(st.st_size), hashlib.sha256(open(p, 'rb').read()).hexdigest()]
        if stat.S_ISLNK(st.st_mode):
            line.append('-> ' + os.readlink(p))
        for x in sorted(os.listxattr(p, follow_symlinks=False)):
            line.append('%s=%s' % (x, os.getxattr(p, x, follow_symlinks=False).hex()))
        print(' '.join(line))
EOF
}

# prepare_changes: the container changes, creates and deletes files in its
# rootfs, so the rounds replace, create and delete on the target; the
# target's copy has an xattr and a hard link of its own on a file the
# rounds replace. Then the target's rootfs is snapshotted to before.txt.
prepare_changes() {
	local w="echo changed >/image-dir/file; echo fresh >/tmp/fresh; chmod 0751 /tmp/fresh"
	w="$w; rm /etc/group; mkdir -m 0700 /newdir; ln -s fresh /tmp/link; chmod 0700 /home"
	set_cmd "$w; echo ready >/tmp/ready.tmp; mv /tmp/ready.tmp /tmp/ready; ${1:-}$(counter_cmd /tmp/count)"
	start_source
	wait_until 10 test -e "$BUNDLE/rootfs/tmp/ready"
	local r=$BUNDLE_B/rootfs
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.tern-test", b"kept")' "$r/image-dir/file"
	ln "$r/image-dir/file" "$r/image-dir/file-link"
	touch -d '2001-02-03 04:05:06.123456789' "$r/image-dir/file" "$r/image-dir" "$r/etc"
	rootfs_snapshot "$r" >"$BATS_TEST_TMPDIR/before.txt"
}

# rootfs_as_before: the target's rootfs is exactly as prepare_changes
# left it.
rootfs_as_before() {
	rootfs_snapshot "$BUNDLE_B/rootfs" >"$BATS_TEST_TMPDIR/after.txt"
	diff "$BATS_TEST_TMPDIR/before.txt" "$BATS_TEST_TMPDIR/after.txt"
}

# migrate_bg ARG...: tern migrate in the background, JSON progress and
# errors in src.out, exit status in src.rc.
migrate_bg() {
	rm -f "$BATS_TEST_TMPDIR/src.rc"
	(
		rc=0
		on A timeout -s KILL 150 "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
			--format json "$@" "$ID" </dev/null >"$BATS_TEST_TMPDIR/src.out" 2>&1 || rc=$?
		echo "$rc" >"$BATS_TEST_TMPDIR/src.rc"
	) 3>&- &
}

# migrate_status: wait for migrate_bg's tern migrate; its exit status.
migrate_status() {
	wait_until 150 test -s "$BATS_TEST_TMPDIR/src.rc" || return 1
	return "$(cat "$BATS_TEST_TMPDIR/src.rc")"
}

# receiving_file DIR: a regular file is being received in DIR (the
# applier's temporary name).
receiving_file() {
	compgen -G "$1/.tern-sync.*" >/dev/null
}

# big_file: a 200 MiB file only the source has, and node A's link
# limited to 100 Mbit/s, so that the first rootfs round lasts half a
# minute: a kill when the file starts to cross lands in that round, also
# on a machine that stalls.
big_file() {
	head -c $((200 << 20)) /dev/urandom >"$BUNDLE/rootfs/tmp/big"
	tc -n "$NA" qdisc add dev "${VETH}a" root tbf rate 100mbit burst 64kb latency 50ms
}

# the source was never frozen
never_frozen() {
	! grep -q '"phase":"freeze"' "$BATS_TEST_TMPDIR/src.out" || false
}

@test "migrate-failures: the receiver killed right after the handshake: the source says the target went away and runs on" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	# 200 MiB that only the source has, to send in the first round: a
	# receiver stopped at once cannot take it, so the source cannot get
	# to the freeze before the kill, however fast it is
	big_file
	receive --token-file "$TOKEN"
	(
		wait_until 60 grep -q '"event":"connected"' "$BATS_TEST_TMPDIR/recv.out" &&
			pkill -STOP -o -f -- "tern-migrate --root $RB migrate-receive" &&
			kill_receiver
	) 3>&- &
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -ne 0 ]
	[[ "$output" == *"the peer at 10.231.0.2:$PORT closed the connection"* ]] || { echo "$output"; false; }
	! echo "$output" | grep -q '"phase":"freeze"' || false
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean
}

@test "migrate-failures: the receiver killed in the first rootfs round: its watchdog puts the rootfs back; the source never froze" {
	prepare_changes
	big_file
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 receiving_file "$BUNDLE_B/rootfs/tmp"
	kill_receiver
	! migrate_status || false
	grep "round 1: .*\`tmp/big\`: sending ROOTFS_DATA: the peer at 10.231.0.2:$PORT closed the connection" src.out ||
		{ cat src.out; false; }
	never_frozen
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean
	rootfs_as_before
}

@test "migrate-failures: the receiver killed while the images cross (stop-and-copy, source frozen): the source thaws, the target is as before" {
	prepare_changes "/bin/memhash 256 /tmp/hash & "
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	hold_dump post-dump
	receive --token-file "$TOKEN"
	CRIU_CONFIG_FILE=$HOLD.conf migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	ls "$BUNDLE_B"/.tern-migrate-*/images/pages-*.img
	kill_receiver
	touch "$HOLD.go"
	! migrate_status || false
	grep -q '"phase":"freeze"' src.out
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean
	rootfs_as_before
}

@test "migrate-failures: the receiver killed during criu restore: its watchdog kills the restore and deletes the container, the source thaws" {
	prepare_changes
	hold_restore
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	kill_receiver
	touch "$HOLD.go"
	! migrate_status || false
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean
	[ -z "$(ls "$RB")" ]
	rootfs_as_before
}

@test "migrate-failures: criu killed during the restore: the receiver says so and puts the rootfs back byte for byte; the source thaws" {
	prepare_changes
	hold_restore
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	local r c
	r=$(pgrep -o -f -- "tern-migrate --root $RB migrate-receive")
	for c in $(pgrep -P "$r"); do
		pkill -9 -P "$c" -f criu || true
	done
	touch "$HOLD.go"
	! migrate_status || false
	! receive_status || false
	grep -i "restore" recv.err || { cat recv.err; false; }
	# criu's log went with the receiver's work directory: not named as
	# if it were there
	grep -q "criu restore failed: .*(log: not kept: it was in $BUNDLE_B/.tern-migrate-" recv.err || { cat recv.err; false; }
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	target_clean
	rootfs_as_before
}

@test "migrate-failures: criu lazy-pages, which fills the restored memory from the images (stop-and-copy), killed during the restore: the target deletes its copy, the source thaws" {
	prepare_changes
	hold_restore
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	# in the middle of the restore, before criu hands it the memory (the
	# restored processes need it from then on: a stopped daemon would
	# hang the restore, not fail it)
	wait_until 60 test -e "$HOLD.in"
	pkill -9 -f -- "[l]azy-pages -D $BUNDLE_B/"
	touch "$HOLD.go"
	! migrate_status || false
	! receive_status || false
	grep -q "filling the memory from the images: criu lazy-pages failed (signal 9)" recv.err ||
		{ cat recv.err; false; }
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	! grep -q '"phase":"running"' recv.out || false
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean
	rootfs_as_before
}

# source_thawed: the source's freezer cgroup lets it run (v1 THAWED; v2
# cgroup.freeze 0).
source_thawed() {
	local p
	p=$(sed -n 's/^[0-9]*:freezer:\(.*\)/\1/p' "/proc/$SRC_PID/cgroup")
	if [ -n "$p" ]; then
		[ "$(cat "/sys/fs/cgroup/freezer$p/freezer.state")" = THAWED ]
	else
		p=$(sed -n 's/^0::\(.*\)/\1/p' "/proc/$SRC_PID/cgroup")
		[ "$(cat "/sys/fs/cgroup$p/cgroup.freeze")" = 0 ]
	fi
}

# dump_hangs SECONDS [ARG...]: the source's criu dump hangs in an action
# script that never returns (nothing touches $HOLD.go); tern migrate ARG...
# must kill it after SECONDS, say so and keep the container running. A
# tern without the bound would wait forever: 60 s end it here.
dump_hangs() {
	local bound=$1 t0=$SECONDS
	shift
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	hold_dump pre-dump
	receive --token-file "$TOKEN"
	CRIU_CONFIG_FILE=$HOLD.conf run in_file on A timeout -s KILL 60 \
		"$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" --token-file "$TOKEN" \
		--mode stop-and-copy "$@" "$ID"
	echo "$output"
	[ "$status" -eq 1 ]
	[ $((SECONDS - t0)) -lt 50 ]
	test -e "$HOLD.in"
	[[ "$output" == *"criu dump of \`$ID\` did not finish within $bound s: killed it"* ]]
	[[ "$output" == *"\`$ID\` runs on here"* ]]
	# criu and its action script are gone with it
	no_process_like "$HOLD.sh"
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	source_thawed
	still_runs
	! receive_status || false
	wait_until 30 target_clean
	[ -z "$(ls "$RB")" ]
}

@test "migrate-failures: criu dump hangs: tern migrate kills it past TERN_CRIU_TIMEOUT and says so; the source thaws and runs on, the target is clean" {
	TERN_CRIU_TIMEOUT=3 dump_hangs 3
}

@test "migrate-failures: criu dump hangs: --criu-timeout wins over TERN_CRIU_TIMEOUT" {
	TERN_CRIU_TIMEOUT=600 dump_hangs 2 --criu-timeout 2
}

@test "migrate-failures: criu restore hangs: the receiver kills it past TERN_CRIU_TIMEOUT and puts the rootfs back; the source thaws" {
	prepare_changes
	# the hook holds criu's restore until $HOLD.go, which never comes
	hold_restore
	TERN_CRIU_TIMEOUT=3 receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	# 120 s was the bound before: past 40 s the receiver waits too long
	wait_until 40 test -s "$BATS_TEST_TMPDIR/recv.rc"
	! receive_status || false
	grep -q "criu restore of \`$ID\` did not finish within 3 s: killed it" recv.err ||
		{ cat recv.err; false; }
	! migrate_status || false
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	no_process_like "$HOLD.go"
	still_runs
	source_thawed
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean || target_clean
	[ -z "$(ls "$RB")" ]
	rootfs_as_before
}

@test "migrate-failures: criu lazy-pages, which fills the restored memory from the images (stop-and-copy), never exits: the receiver kills it past TERN_CRIU_TIMEOUT and deletes its copy; the source thaws" {
	prepare_changes
	# the target's criu: its lazy-pages fills the memory, then hangs
	local real=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	cat >"$BATS_TEST_TMPDIR/hold-criu" <<EOF
#!/bin/sh
[ "\$1" = lazy-pages ] || exec $real "\$@"
$real "\$@"
touch $BATS_TEST_TMPDIR/hold.in
exec sleep 600
EOF
	chmod 0755 "$BATS_TEST_TMPDIR/hold-criu"
	TERN_CRIU=$BATS_TEST_TMPDIR/hold-criu TERN_CRIU_TIMEOUT=8 receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	# a receiver without the bound waits for it forever
	wait_until 60 test -s "$BATS_TEST_TMPDIR/recv.rc"
	! receive_status || false
	test -e "$BATS_TEST_TMPDIR/hold.in"
	grep -q "filling the memory of \`$ID\` from the images: criu lazy-pages did not finish within 8 s: killed it" recv.err ||
		{ cat recv.err; false; }
	! grep -q '"phase":"running"' recv.out || false
	no_process_like "$BATS_TEST_TMPDIR/hold-criu"
	! migrate_status || false
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	source_thawed
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 30 target_clean || target_clean
	[ -z "$(ls "$RB")" ]
	rootfs_as_before
}

@test "migrate-failures: the receiver killed once the target runs the container: it runs on there, the source deleted its copy" {
	set_cmd "echo changed >/image-dir/file; $(counter_cmd /tmp/count)"
	start_source
	hold_restore
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	# tern migrate stopped while the target restores (held there: see
	# hold_restore), so that it reads RUNNING only after the receiver
	# was killed
	wait_until 60 test -e "$HOLD.in"
	pkill -STOP -o -f -- "tern-migrate --root $ROOT migrate"
	touch "$HOLD.go"
	! grep -q '"phase":"running"' src.out || false
	wait_until 60 grep -q '"phase":"running"' "$BATS_TEST_TMPDIR/recv.out"
	kill_receiver
	pkill -CONT -o -f -- "tern-migrate --root $ROOT migrate"
	migrate_status || { cat src.out; false; }
	! receive_status || false
	grep -q '"event":"done"' src.out
	# exactly one copy: the target's, counting on from the source's count
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	source_gone
	# its watchdog, told RUNNING was sent, left the container alone; the
	# work directory and its undo log went at that commit
	wait_until 10 sh -c "! pgrep -f -- '[t]ern-migrate --root $RB migrate-receive'"
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || false
	# (and the rootfs stays as the rounds made it)
	[ "$(cat "$BUNDLE_B/rootfs/image-dir/file")" = changed ]
}

@test "migrate-failures: tern migrate killed in the first rootfs round: the target cleans up and puts its rootfs back; the source runs untouched" {
	prepare_changes
	big_file
	receive --token-file "$TOKEN"
	migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 receiving_file "$BUNDLE_B/rootfs/tmp"
	kill_source
	! receive_status || false
	grep "the peer at 10.231.0.1:[0-9]* closed the connection" recv.err || { cat recv.err; false; }
	never_frozen
	target_clean
	rootfs_as_before
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	wait_until 10 sh -c "! ls -d '$ROOT/$ID'/migrate-* 2>/dev/null"
}

@test "migrate-failures: tern migrate killed while the images cross: the target cleans up, the source's watchdog thaws" {
	prepare_changes "/bin/memhash 256 /tmp/hash & "
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	hold_dump post-dump
	receive --token-file "$TOKEN"
	CRIU_CONFIG_FILE=$HOLD.conf migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	ls "$BUNDLE_B"/.tern-migrate-*/images/pages-*.img
	kill_source
	touch "$HOLD.go"
	! receive_status || false
	grep "the peer at 10.231.0.1:[0-9]* closed the connection" recv.err || { cat recv.err; false; }
	target_clean
	rootfs_as_before
	wait_status "$ID" running 30
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
}

@test "migrate-failures: receiver and its watchdog both killed after the rootfs rounds: the next receive puts the rootfs back first" {
	prepare_changes
	hold_dump pre-dump
	receive --token-file "$TOKEN"
	CRIU_CONFIG_FILE=$HOLD.conf migrate_bg --token-file "$TOKEN" --mode stop-and-copy
	wait_until 60 test -e "$HOLD.in"
	wait_until 10 grep -q '"round":2' "$BATS_TEST_TMPDIR/recv.out"
	# the receiver waits for the images and has forked nothing but its
	# watchdog (the newest), which goes first, so that nobody rolls back
	pkill -9 -n -f -- "tern-migrate --root $RB migrate-receive"
	kill_receiver
	touch "$HOLD.go"
	! migrate_status || false
	grep -q '"event":"rollback"' src.out || { cat src.out; false; }
	still_runs
	ls -d "$BUNDLE_B"/.tern-migrate-*
	! rootfs_as_before >/dev/null || false
	# a receiver that gives up waiting: it undid the leftover on start,
	# and says so
	local left
	left=$(ls -d "$BUNDLE_B"/.tern-migrate-*)
	run in_file on B "$TERN_BIN" --root "$RB" migrate-receive --listen "10.231.0.2:$PORT" \
		--bundle "$BUNDLE_B" --token-file "$TOKEN" --timeout 1
	[ "$status" -ne 0 ]
	[[ "$output" == *"undid the interrupted receive in \`$left\`: the bundle is put back"* ]] ||
		{ echo "$output"; false; }
	target_clean
	rootfs_as_before
	# and in JSON: a receive killed before its first round left its
	# (empty) work directory
	mkdir -m 0700 "$BUNDLE_B/.tern-migrate-abc123"
	run on B "$TERN_BIN" --root "$RB" migrate-receive --listen "10.231.0.2:$PORT" \
		--bundle "$BUNDLE_B" --token-file "$TOKEN" --timeout 1 --format json 2>/dev/null
	[ "$status" -ne 0 ]
	echo "$output" | grep '"event":"undone"' |
		jq -e --arg d "$BUNDLE_B/.tern-migrate-abc123" '.dir == $d and .rolled_back == true'
	target_clean
}

@test "migrate-failures: post-copy, the receiver killed after RUNNING while pages still come: its watchdog says the source was told, not that it was not" {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	set_cmd "/bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	# 256 MiB at 100 Mbit/s: some 20 s of pages still to come at RUNNING
	tc -n "$NA" qdisc add dev "${VETH}a" root tbf rate 100mbit burst 64kb latency 50ms
	(
		wait_until 60 grep -q '"phase":"running"' "$BATS_TEST_TMPDIR/recv.out" &&
			kill_receiver
	) 3>&- &
	migrate --token-file "$TOKEN" --mode post-copy
	echo "$output"
	grep -q '"phase":"running"' recv.out
	# the watchdog rolls back what the dead receiver had here, and says
	# what happened
	wait_until 30 target_clean
	wait_until 30 grep -q "died after the source was told RUNNING" recv.err ||
		{ cat recv.err; false; }
	grep -q "before all of its memory was here" recv.err
	! grep -q "before the source was told RUNNING" recv.err || false
	# the source's copy is the one left
	run tern state "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "migrate-failures: a port scan, garbage, a wrong token and idle connections before the source: each refused and logged, the migration succeeds" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	receive --token-file "$TOKEN"
	# one that connects and says nothing: refused at the handshake
	# deadline (5 s by default); the receiver listens on meanwhile
	hold_connection
	scan_connection
	scan_connection "$(printf 'GET / HTTP/1.0\r\n\r\n')"
	head -c 32 /dev/urandom | base64 >"$BATS_TEST_TMPDIR/other-token"
	chmod 600 "$BATS_TEST_TMPDIR/other-token"
	run in_file on A timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" migrate \
		--to "10.231.0.2:$PORT" --token-file "$BATS_TEST_TMPDIR/other-token" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"authentication failed"* ]] || { echo "$output"; false; }
	wait_until 20 grep -q "refused the connection from 10.231.0.1:.*no progress within 5000 ms" recv.err ||
		{ cat recv.err; false; }
	# another idle one, held through the whole migration
	hold_connection
	wait_until 10 connected_b
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	source_gone
	kill -0 "$(tail -n1 "$BATS_TEST_TMPDIR/held.pids")"
	# each refused peer is named, with why
	grep "refused the connection from 10.231.0.1:" recv.err >refused.txt
	grep -q "closed the connection during the TLS handshake" refused.txt
	grep -q "did not offer the migration key" refused.txt
	grep -q "authentication failed" refused.txt
	[ "$(wc -l <refused.txt)" -ge 4 ] || { cat recv.err; false; }
	[ "$(grep -c '"event":"refused"' recv.out)" -eq "$(wc -l <refused.txt)" ]
}

@test "migrate-failures: the receiver gives up after --max-failed-peers refused connections" {
	mkdir -p "$BUNDLE_B"
	receive --token-file "$TOKEN" --max-failed-peers 2 --handshake-timeout 1
	scan_connection
	hold_connection
	! receive_status || false
	grep -q "gave up listening on 10.231.0.2:$PORT after 2 refused connections" recv.err ||
		{ cat recv.err; false; }
	grep -q "no progress within 1000 ms" recv.err
	target_clean
}
