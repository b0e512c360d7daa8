#!/usr/bin/env bats
# tern snapshot / rollback: a running container's processes, memory and
# rootfs recorded under a name and put back (snapshot.h). This kernel has
# no soft-dirty tracking: every snapshot here dumps the whole memory; the
# incremental memory path runs in the qemu guest.

load helpers
load snapshot-helpers

@test "snapshot: rollback puts the counter and its log back to the snapshot, and it counts on from there" {
	start_counter
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# what the log held at the snapshot: the store's copy of the rootfs
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	[ "$s" -ge 3 ]
	seq 1 "$s" | diff - "$STORE/s1/tree/tmp/log"
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	local pid_before
	pid_before=$(state_field "$ID" pid)
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	# the log is the snapshot's, then the restored loop appends s+1, s+2...
	# (a restart would append 1; no rollback, s+11 and on)
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 3))
	head -n $((s + 3)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((s + 3))) -
	# the same id, a new init
	[ "$(state_field "$ID" pid)" != "$pid_before" ]
	run tern snapshot --list "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *s1* ]]
}

@test "snapshot: files written after the snapshot are gone after the rollback, files from before are intact" {
	set_cmd "echo kept > /tmp/kept; mkdir /data; echo one > /data/a; sleep $MARK"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 test -e "$BUNDLE/rootfs/data/a"
	local r=$BUNDLE/rootfs
	ln "$r/data/a" "$r/data/a-link"
	chmod 0640 "$r/data/a"
	run tern snapshot "$ID" before
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# afterwards, the container changes its files
	run tern exec "$ID" sh -c 'echo new > /tmp/new; echo two >> /data/a; rm /tmp/kept; mkdir /data/sub; chmod 0600 /data/a; ln -s /etc /data/etc-link; rm /image-dir/file'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern rollback "$ID" before
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ ! -e "$r/tmp/new" ]
	[ ! -e "$r/data/sub" ]
	[ ! -L "$r/data/etc-link" ]
	[ "$(cat "$r/tmp/kept")" = kept ]
	[ "$(cat "$r/data/a")" = one ]
	[ "$(stat -c %a "$r/data/a")" = 640 ]
	[ "$(stat -c %i "$r/data/a")" = "$(stat -c %i "$r/data/a-link")" ]
	[ "$(cat "$r/image-dir/file")" = "from the image" ]
	# and the container sees them so
	run tern exec "$ID" cat /tmp/kept /data/a
	[ "$status" -eq 0 ]
	[ "$output" = "kept
one" ]
}

@test "snapshot: a 256 MiB process's memory comes back byte for byte after a rollback" {
	start_memhash 256
	run tern snapshot "$ID" big
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern rollback "$ID" big
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern exec "$ID" sh -c 'kill -USR1 $(pidof memhash)'
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 grep -q again "$BUNDLE/rootfs/tmp/hash"
	[ "$(cat "$BUNDLE/rootfs/tmp/hash")" = "again $FIRST" ]
}

@test "snapshot: bad input fails clearly and leaves the container and the store as they were" {
	start_counter
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ]
	run tern rollback "$ID" nosuch
	[ "$status" -ne 0 ]
	[[ "$output" == *"container \`$ID\` has no snapshot \`nosuch\`"* ]] || { echo "$output"; false; }
	run tern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"has a snapshot \`s1\` already"* ]] || { echo "$output"; false; }
	run tern snapshot "$ID" ../evil
	[ "$status" -ne 0 ]
	[[ "$output" == *"invalid snapshot name"* ]] || { echo "$output"; false; }
	# a name starts with a letter or a digit (after --, so that -x is a name)
	local bad
	for bad in -x .x _x +x; do
		run tern snapshot "$ID" -- "$bad"
		[ "$status" -ne 0 ]
		[[ "$output" == *"invalid snapshot name \`$bad\`: it must start with a letter or a digit"* ]] ||
			{ echo "$output"; false; }
		run tern clone "$ID" -- "$bad" "$ID-c"
		[ "$status" -ne 0 ]
		[[ "$output" == *"invalid snapshot name \`$bad\`"* ]] || { echo "$output"; false; }
		[ ! -e "$ROOT/$ID-c" ]
	done
	run tern snapshot "$ID" 0x_1.a-b+c
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern snapshot --delete "$ID" 0x_1.a-b+c
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# an option without its value says so
	run tern snapshot --format
	[ "$status" -ne 0 ]
	[[ "$output" == *"option \`--format\` requires an argument"* ]] || { echo "$output"; false; }
	run tern snapshot nosuch-container s2
	[ "$status" -ne 0 ]
	[[ "$output" == *"nosuch-container"* ]]
	[ ! -e "$ROOT/@snapshots/nosuch-container" ]
	tern pause "$ID"
	run tern snapshot "$ID" s2
	[ "$status" -ne 0 ]
	[[ "$output" == *"is paused"* ]] || { echo "$output"; false; }
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"is paused"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = paused ]
	tern resume "$ID"
	# the store holds s1 and nothing else (no half-made snapshot)
	[ "$(ls -A "$STORE" | grep -v '^head$')" = s1 ]
	# the container was never touched: it counts on
	local n
	n=$(cat "$BUNDLE/rootfs/tmp/log.n")
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/log.n" "$n"
	# a stopped container
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	run tern snapshot "$ID" s3
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is stopped, not running"* ]] || { echo "$output"; false; }
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is stopped, not running"* ]] || { echo "$output"; false; }
}

@test "snapshot: a created container cannot be snapshotted" {
	set_cmd "sleep $MARK"
	tern create -b "$BUNDLE" "$ID"
	run tern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"it is created, not running"* ]] || { echo "$output"; false; }
	[ ! -e "$STORE/s1" ]
}

# freeze_watch_start PID: count the writes to the freezer file of PID's
# cgroup (v1 freezer.state, v2 cgroup.freeze) from now on (inotify: every
# freeze and thaw is such a write); freeze_watch_stop prints the count
# (0: never frozen).
freeze_watch_start() {
	local d f
	d=$(host_cgroup_dir "$1" freezer)
	f=$d/freezer.state
	[ -e "$f" ] || f=$d/cgroup.freeze
	WATCH=$BATS_TEST_TMPDIR/freeze-watch
	rm -f "$WATCH" "$WATCH.ready" "$WATCH.stop"
	python3 - "$f" "$WATCH" <<'PY' 3>&- &
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), 2) < 0:  # IN_MODIFY
    sys.exit("inotify on %s: errno %d" % (sys.argv[1], ctypes.get_errno()))
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2] + ".stop"):
    select.select([fd], [], [], 0.05)
n = 0
try:
    while True:
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            n += 1
            i += 16 + struct.unpack_from("iIII", buf, i)[3]
except BlockingIOError:
    pass
open(sys.argv[2] + ".tmp", "w").write("%d\n" % n)
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
PY
	wait_for_file "$WATCH.ready"
}

freeze_watch_stop() {
	touch "$WATCH.stop"
	wait_for_file "$WATCH"
	cat "$WATCH"
}

@test "snapshot: a store without the space refuses before the freeze: needed and free bytes named, the container never paused, no store left" {
	# the state root on a tmpfs too small for the snapshot's copy of a
	# 32 MiB file
	local small=$BATS_TEST_TMPDIR/small
	mkdir -p "$small"
	mount -t tmpfs -o size=8m tmpfs "$small"
	ROOT=$small/state
	STORE=$ROOT/@snapshots/$ID
	head -c $((32 << 20)) /dev/urandom >"$BUNDLE/rootfs/big"
	start_counter
	freeze_watch_start "$(state_field "$ID" pid)"
	run tern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"snapshot \`s1\` of \`$ID\`: not enough free space in the snapshot store \`$STORE\`: it needs about "*" bytes ("*" of memory, "*" of rootfs changes), "*" are free; the container was not frozen"* ]] || { echo "$output"; false; }
	local need free
	need=$(sed -n 's/.*it needs about \([0-9]*\) bytes.*/\1/p' <<<"$output")
	free=$(sed -n 's/.*, \([0-9]*\) are free.*/\1/p' <<<"$output")
	[ "$need" -gt $((32 << 20)) ]
	[ "$free" -le $((8 << 20)) ]
	# no freeze, no thaw: the freezer was never written to
	[ "$(freeze_watch_stop)" = 0 ]
	# a failed first snapshot leaves no store
	[ ! -e "$STORE" ]
	[ "$(state_field "$ID" status)" = running ]
	local n
	n=$(cat "$BUNDLE/rootfs/tmp/log.n")
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/log.n" "$n"
	# the watch sees a freeze when there is one (the check above can
	# fail; inotify merges a write that follows an unread one)
	freeze_watch_start "$(state_field "$ID" pid)"
	tern pause "$ID"
	tern resume "$ID"
	[ "$(freeze_watch_stop)" -ge 1 ]
	tern delete --force "$ID"
	umount "$small"
}

@test "snapshot: a full disk during the dump: the error cites criu's log kept in ROOT/ID/last-failure, which replaced the last failure's; no store left; delete removes it" {
	# the state root on a tmpfs with room for the snapshot; criu, once the
	# snapshot's images directory is there (the check passed, after the
	# freeze), finds the file system filled up to 4 MiB: the container's
	# 64 MiB of memory do not fit. (tern starts the criu of a snapshot
	# before it freezes, and waits a second at most for it to be ready:
	# this one waits for the directory first.)
	local small=$BATS_TEST_TMPDIR/small
	mkdir -p "$small"
	mount -t tmpfs -o size=160m tmpfs "$small"
	ROOT=$small/state
	STORE=$ROOT/@snapshots/$ID
	local real=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	cat >"$BATS_TEST_TMPDIR/fill-criu" <<EOF
#!/bin/sh
# (only the dump's criu, which tern starts with umask 077, waits; the
# criu of a version request or a feature probe passes by)
i=0
while [ "\$(umask)" = 0077 ] && ! [ -d $STORE/.tmp-*/images ] && [ \$i -lt 600 ]; do
	sleep 0.05
	i=\$((i + 1))
done
for d in $STORE/.tmp-*/images; do
	if [ -d "\$d" ] && [ ! -e $small/fill ]; then
		avail=\$(df --output=avail -B1 $small | tail -n 1)
		fallocate -l \$((avail - (4 << 20))) $small/fill
	fi
done
exec $real "\$@"
EOF
	chmod 0755 "$BATS_TEST_TMPDIR/fill-criu"
	start_memhash 64
	# what an earlier failure left: replaced
	mkdir "$ROOT/$ID/last-failure"
	echo old >"$ROOT/$ID/last-failure/restore.log"
	TERN_CRIU=$BATS_TEST_TMPDIR/fill-criu run tern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	[ -e "$small/fill" ]
	[[ "$output" == *"snapshot \`s1\` of \`$ID\`"*"criu dump failed"*"(log: $ROOT/$ID/last-failure/dump.log)"* ]] || { echo "$output"; false; }
	# the log cited is there, and is criu's; the older one is gone
	grep -q 'Version: ' "$ROOT/$ID/last-failure/dump.log"
	[ "$(ls "$ROOT/$ID/last-failure")" = dump.log ]
	# nothing of the snapshot, not even an empty store
	[ ! -e "$STORE" ]
	[ "$(state_field "$ID" status)" = running ]
	rm "$small/fill"
	tern delete --force "$ID"
	[ ! -e "$ROOT/$ID" ]
	umount "$small"
}

@test "snapshot: --list (text and json), --delete, and delete removes the snapshots unless --keep-snapshots" {
	start_counter
	tern snapshot "$ID" a
	tern snapshot "$ID" b
	run tern snapshot --list --format json "$ID"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -r '[.[].name] | join(",")')" = a,b ]
	[ "$(echo "$output" | jq -r '.[1].parent')" = a ]
	[ "$(echo "$output" | jq -r '.[0].size > 0')" = true ]
	run tern snapshot --list "$ID"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == NAME* ]]
	[ "${#lines[@]}" -eq 3 ]
	run tern snapshot --delete "$ID" a
	[ "$status" -eq 0 ]
	[ "$(tern snapshot --list --format json "$ID" | jq -r '[.[].name] | join(",")')" = b ]
	run tern snapshot --delete "$ID" a
	[ "$status" -ne 0 ]
	[[ "$output" == *"has no snapshot \`a\`"* ]]
	tern delete --force --keep-snapshots "$ID"
	[ "$(tern snapshot --list --format json "$ID" | jq -r '[.[].name] | join(",")')" = b ]
	run tern snapshot --delete "$ID" b
	[ "$status" -eq 0 ]
	# a container deleted the plain way takes its snapshots with it
	start_counter
	tern snapshot "$ID" c
	tern delete --force "$ID"
	[ ! -e "$STORE" ]
	run tern snapshot --list "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"does not exist"* ]]
}

@test "snapshot: the second snapshot shares the files that did not change with the first" {
	head -c $((4 << 20)) /dev/urandom >"$BUNDLE/rootfs/big"
	start_counter
	# (the last line: what it took, after the dump's progress events)
	run tern snapshot --format json "$ID" a
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | tail -n 1 | jq -r '.bytes_copied > 4000000')" = true ]
	run tern snapshot --format json "$ID" b
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(echo "$output" | tail -n 1 | jq -r '.files_linked > 0')" = true ]
	# only the log and its counter changed
	[ "$(echo "$output" | tail -n 1 | jq -r '.bytes_copied < 100000')" = true ]
	[ "$(stat -c %i "$STORE/a/tree/big")" = "$(stat -c %i "$STORE/b/tree/big")" ]
}

@test "snapshot: rollback keeps the network namespace, the cgroup and its limits as updated, and the stdio" {
	start_marked_counter
	local out=$OUT pid=$PID ino=$NET_INO cg=$MEM_CG
	tern update --memory 200000000 "$ID"
	local limit
	limit=$(cat "$cg/memory.limit_in_bytes")
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid2
	pid2=$(state_field "$ID" pid)
	[ "$pid2" != "$pid" ]
	[ "$(stat -L -c %i "/proc/$pid2/ns/net")" = "$ino" ]
	nsenter --net="/proc/$pid2/ns/net" ip addr show dev lo | grep -q 10.99.0.1
	[ "$(host_cgroup_dir "$pid2" memory)" = "$cg" ]
	[ "$(cat "$cg/memory.limit_in_bytes")" = "$limit" ]
	# the restored shell writes to the stdout it had: the same file
	local n
	n=$(grep -c out- "$out")
	wait_until 10 has_lines_matching "$out" out- $((n + 3))
	# and no process of it holds an fd of tern's (the state, the store,
	# criu's images or sockets) or anything outside but its stdio
	# The shell's short-lived children (cat of /tmp/log.n) open and close
	# fds while we look: an fd that is gone by the time it is read is no
	# finding, so each link is read on its own and a vanished one skipped.
	local p f target
	for p in $(cat "$cg/cgroup.procs"); do
		for f in /proc/"$p"/fd/*; do
			target=$(readlink "$f") || continue
			case $target in
			/dev/null | "$out" | pipe:* | /tmp/log*) ;;
			*) echo "pid $p has fd $f -> $target"; false ;;
			esac
		done
	done
	tern delete --force "$ID"
	check_nothing_left "$ID"
	[ ! -e "$STORE" ]
}

@test "snapshot: 100 snapshot and rollback cycles leave nothing behind" {
	start_counter
	local pid0 i
	tern snapshot "$ID" base
	for i in $(seq 1 100); do
		"$TERN_BIN" --root "$ROOT" snapshot "$ID" "c$i" </dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/err" ||
			{ echo "snapshot c$i"; cat "$BATS_TEST_TMPDIR/err"; false; }
		"$TERN_BIN" --root "$ROOT" rollback "$ID" "c$i" </dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/err" ||
			{ echo "rollback c$i"; cat "$BATS_TEST_TMPDIR/err"; false; }
		# keep every tenth
		if [ $((i % 10)) -ne 0 ]; then
			"$TERN_BIN" --root "$ROOT" snapshot --delete "$ID" "c$i"
		fi
	done
	[ "$(state_field "$ID" status)" = running ]
	# the store: base and the ten kept, their head, nothing else
	[ "$(ls -A "$STORE" | sort | tr '\n' ' ')" = "base c10 c100 c20 c30 c40 c50 c60 c70 c80 c90 head " ]
	# one container's processes: the shell and its sleep, in the cgroup
	local pid cg
	pid=$(state_field "$ID" pid)
	cg=$(host_cgroup_dir "$pid" freezer)
	[ "$(wc -l <"$cg/cgroup.procs")" -le 2 ]
	# the state directory holds what it did before
	[ "$(ls "$ROOT/$ID" | grep -v -x -e restore.log -e stats-restore -e lazy-pages.log | sort | tr '\n' ' ')" = "config.json state.json " ]
	# no mount of the bundle's or the state's left on the host
	! grep -F -e "$BUNDLE" -e "$ROOT" /proc/self/mountinfo || false
	# the log is whole: the rollbacks put it back each time, and it went on
	local n
	n=$(wc -l <"$STORE/c100/tree/tmp/log")
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((n + 2))
	head -n $((n + 2)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((n + 2))) -
	tern delete --force "$ID"
	check_nothing_left "$ID"
	[ ! -e "$STORE" ]
}

@test "clone: 10 clones from one snapshot run, diverge, and each is snapshotted, rolled back and deleted on its own" {
	start_counter
	tern snapshot "$ID" base
	local s i
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	for i in $(seq 0 9); do
		run tern clone "$ID" base "$ID-c$i"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
	done
	local src_pid src_net
	src_pid=$(state_field "$ID" pid)
	src_net=$(stat -L -c %i "/proc/$src_pid/ns/net")
	declare -A nets cgs
	for i in $(seq 0 9); do
		local c=$ID-c$i pid r
		[ "$(state_field "$c" status)" = running ]
		pid=$(state_field "$c" pid)
		r=$(clone_rootfs "$c")
		# each goes on from the snapshot's count, in its own rootfs
		wait_until 30 lines_at_least "$r/tmp/log" $((s + 2))
		head -n $((s + 2)) "$r/tmp/log" | diff <(seq 1 $((s + 2))) -
		nets[$(stat -L -c %i "/proc/$pid/ns/net")]=1
		cgs[$(host_cgroup_dir "$pid" freezer)]=1
	done
	# eleven network namespaces and cgroups, one each
	[ "${#nets[@]}" -eq 10 ]
	[ -z "${nets[$src_net]:-}" ]
	[ "${#cgs[@]}" -eq 10 ]
	# a file one clone writes is its own
	run tern exec "$ID-c3" sh -c 'echo mine > /only-c3'
	[ "$status" -eq 0 ]
	[ -e "$(clone_rootfs "$ID-c3")/only-c3" ]
	[ ! -e "$(clone_rootfs "$ID-c4")/only-c3" ]
	[ ! -e "$BUNDLE/rootfs/only-c3" ]
	[ ! -e "$STORE/base/tree/only-c3" ]
	# a clone has snapshots and rollbacks of its own
	run tern snapshot "$ID-c3" mine
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern exec "$ID-c3" rm /only-c3
	[ "$status" -eq 0 ]
	run tern rollback "$ID-c3" mine
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(cat "$(clone_rootfs "$ID-c3")/only-c3")" = mine ]
	# the snapshot they stand on cannot go while they are there
	run tern snapshot --delete "$ID" base
	[ "$status" -ne 0 ]
	[[ "$output" == *"is the base of the clone"* ]] || { echo "$output"; false; }
	for i in $(seq 0 9); do
		tern delete --force "$ID-c$i"
		check_nothing_left "$ID-c$i"
		[ ! -e "$ROOT/@clones/$ID-c$i.bundle" ]
		[ ! -e "$ROOT/@clones/$ID-c$i" ]
	done
	! grep -F "$ROOT/@clones" /proc/self/mountinfo || false
	[ "$(state_field "$ID" status)" = running ]
	run tern snapshot --delete "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "clone: onto an existing id, from an unknown snapshot, into an existing bundle: clear errors, nothing made" {
	start_counter
	tern snapshot "$ID" base
	run tern clone "$ID" base "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"container \`$ID\` already exists"* ]] || { echo "$output"; false; }
	run tern clone "$ID" nosuch "$ID-x"
	[ "$status" -ne 0 ]
	[[ "$output" == *"has no snapshot \`nosuch\`"* ]] || { echo "$output"; false; }
	mkdir "$BATS_TEST_TMPDIR/taken"
	run tern clone --bundle "$BATS_TEST_TMPDIR/taken" "$ID" base "$ID-x"
	[ "$status" -ne 0 ]
	[[ "$output" == *"taken"*"must not exist"* ]] || { echo "$output"; false; }
	[ -d "$BATS_TEST_TMPDIR/taken" ]
	run tern state "$ID-x"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/@clones/$ID-x" ]
	[ ! -e "$ROOT/@clones/$ID-x.bundle" ]
	[ -z "$(ls -A "$STORE/base/clones" 2>/dev/null)" ]
	# a clone into a bundle of the caller's choosing, and one of a
	# deleted container's kept snapshot
	tern delete --force --keep-snapshots "$ID"
	run tern clone --bundle "$BATS_TEST_TMPDIR/mine" "$ID" base "$ID-y"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID-y" bundle)" = "$BATS_TEST_TMPDIR/mine" ]
	wait_until 30 lines_at_least "$BATS_TEST_TMPDIR/mine/rootfs/tmp/log" 5
	tern delete --force "$ID-y"
	[ ! -e "$BATS_TEST_TMPDIR/mine" ]
	check_nothing_left "$ID-y"
}

# filling CLONE-ID: a `criu lazy-pages` still fills the clone's memory.
filling() {
	pgrep -f "lazy-pages.*$ROOT/@clones/$1.bundle" >/dev/null
}

# a_filler: a tern-filler of this test's clones runs (an earlier test's
# may still be ending).
a_filler() {
	local p
	for p in $(pgrep -x tern-filler); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "--root $ROOT " && return 0
	done
	return 1
}

@test "clone: a restore that fails (damaged images) leaves no bundle, mount, state or cgroup; the source runs on" {
	start_counter
	tern snapshot "$ID" base
	# (a copy: the images are hard links the store may share)
	cp "$STORE/base/images/core-1.img" "$BATS_TEST_TMPDIR/core"
	rm "$STORE/base/images/core-1.img"
	head -c 4096 /dev/urandom >"$STORE/base/images/core-1.img"
	run tern clone "$ID" base "$ID-x"
	[ "$status" -ne 0 ]
	[[ "$output" == *"clone \`$ID-x\`"*"criu restore failed"* ]] || { echo "$output"; false; }
	# criu's log, which was in the clone's bundle, kept with the source
	[[ "$output" == *"(log: $ROOT/$ID/last-failure/restore.log)"* ]] || { echo "$output"; false; }
	grep -q 'Version: ' "$ROOT/$ID/last-failure/restore.log"
	run tern state "$ID-x"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/$ID-x" ]
	[ ! -e "$ROOT/@clones/$ID-x" ]
	[ ! -e "$ROOT/@clones/$ID-x.bundle" ]
	[ -z "$(ls -A "$STORE/base/clones" 2>/dev/null)" ]
	! grep -F "$ROOT/@clones" /proc/self/mountinfo || false
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "*$ID-x*" 2>/dev/null || true)" ]
	! a_filler || false
	! pgrep -f "lazy-pages.*$ID-x" || false
	[ "$(state_field "$ID" status)" = running ]
	# the snapshot mended, the same clone works
	mv "$BATS_TEST_TMPDIR/core" "$STORE/base/images/core-1.img"
	run tern clone "$ID" base "$ID-x"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	tern delete --force "$ID-x"
	check_nothing_left "$ID-x"
}

@test "rollback: a restore that fails (damaged images) cites criu's log kept in ROOT/ID/last-failure; delete removes it" {
	start_counter
	tern snapshot "$ID" base
	rm "$STORE/base/images/core-1.img"
	head -c 4096 /dev/urandom >"$STORE/base/images/core-1.img"
	run tern rollback "$ID" base
	[ "$status" -ne 0 ]
	[[ "$output" == *"criu restore failed"*"(log: $ROOT/$ID/last-failure/restore.log)"* ]] || { echo "$output"; false; }
	grep -q 'Version: ' "$ROOT/$ID/last-failure/restore.log"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}


@test "clone: returns while its memory is still filled behind it; every byte reads right; the filler goes once done" {
	start_memhash 256
	tern snapshot "$ID" base
	run tern clone --format json "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# (no fill time: it was not waited for)
	[ "$(jq -r '.fill_ms // "none"' <<<"$output")" = none ]
	# the pages it reads first come first; the hash reads them all
	[ "$(signal_memhash "$ID-c" USR1 again)" = "again $FIRST" ]
	wait_until 60 eval '! filling "$ID-c"'
	wait_until 30 eval '! a_filler'
	[ ! -e "$ROOT/@clones/$ID-c.bundle/lazy-pages.socket" ]
	[ "$(state_field "$ID-c" status)" = running ]
	# --wait-fill returns with every page in, its fill time said
	run tern clone --wait-fill --format json "$ID" base "$ID-w"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.fill_ms > 0' <<<"$output"
	! filling "$ID-w"
	# deleted while it fills: neither daemon nor filler stays
	run tern clone "$ID" base "$ID-d"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	tern delete --force "$ID-d"
	wait_until 30 eval '! filling "$ID-d"'
	wait_until 30 eval '! a_filler'
	[ ! -e "$ROOT/@clones/$ID-d.bundle" ]
	delete_clones_then_source "$ID-c" "$ID-w"
}

@test "clone: a fill that fails after the clone runs deletes the clone (its memory would read as zeros)" {
	# 16 MiB: a daemon fills a clone's memory from 8 MiB of pages on
	start_memhash 16
	tern snapshot "$ID" base
	# TERN_FAULT_FAIL=lazy-fill: the filler takes the daemon's end as a
	# failure (src/base/fault.h; only a fault-injection build has it)
	local fault_tern
	fault_tern=${TERN_FAULT_BIN:-$(build_fault_tern)}
	TERN_BIN=$fault_tern TERN_FAULT_FAIL=lazy-fill run tern clone "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 30 eval '! tern state "$ID-c"'
	wait_until 30 eval '! a_filler'
	[ ! -e "$ROOT/$ID-c" ]
	[ ! -e "$ROOT/@clones/$ID-c.bundle" ]
	[ -z "$(ls -A "$STORE/base/clones" 2>/dev/null)" ]
	! grep -F "$ROOT/@clones" /proc/self/mountinfo || false
	[ "$(state_field "$ID" status)" = running ]
}

@test "clone and rollback of a container with under 8 MiB of pages: criu fills the memory itself, no lazy-pages daemon is started" {
	start_counter
	tern snapshot "$ID" base
	run tern --debug clone "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"bytes of pages, criu fills them itself"* ]] || { echo "$output"; false; }
	! a_filler || false
	[ "$(state_field "$ID-c" status)" = running ]
	local r
	r=$(state_field "$ID-c" rootfs)
	wait_until 30 lines_at_least "$r/tmp/log" 3
	run tern --debug rollback "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"bytes of pages, criu fills them itself"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	delete_clones_then_source "$ID-c"
}

# ksm_fast: ksmd on, scanning fast, for a test; teardown puts back what
# the host had (run=0 stops ksmd and leaves merged pages as they are).
KSM=/sys/kernel/mm/ksm
ksm_fast() {
	KSM_SAVED="$(cat $KSM/run) $(cat $KSM/pages_to_scan) $(cat $KSM/sleep_millisecs)"
	echo 4000 >$KSM/pages_to_scan
	echo 10 >$KSM/sleep_millisecs
	echo 1 >$KSM/run
}

teardown() {
	if [ -n "${KSM_SAVED:-}" ]; then
		read -r run pages ms <<<"$KSM_SAVED"
		echo "$pages" >$KSM/pages_to_scan
		echo "$ms" >$KSM/sleep_millisecs
		echo "$run" >$KSM/run
	fi
	teardown_bundle
}

# merged_at_least PID PAGES: ksmd has merged at least PAGES of PID's pages.
merged_at_least() {
	[ "$(awk '$1 == "ksm_merging_pages" {print $2}' "/proc/$1/ksm_stat")" -ge "$2" ]
}

@test "clone --share-memory: ksmd maps the pages the clones have in common once (a warning while it is off); each still diverges on its own; a rollback keeps the mark" {
	# (Linux 6.4 or later: PR_SET_MEMORY_MERGE. Not skipped where it is
	# missing: tern says so, and this test fails.)
	start_memhash 64
	local i
	tern snapshot "$ID" base
	ksm_fast
	# ksmd off: marked all the same, and told
	echo 0 >$KSM/run
	run tern clone --share-memory "$ID" base "$ID-k0"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"ksmd is off"*"nothing merges it until ksmd runs"* ]] || {
		echo "$output"
		false
	}
	echo 1 >$KSM/run
	for i in 1 2; do
		run tern clone --share-memory "$ID" base "$ID-k$i"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		[[ "$output" != *"ksmd is off"* ]] || { echo "$output"; false; }
	done
	run tern clone "$ID" base "$ID-plain"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# marked: the restored processes, and only those of --share-memory
	for i in 0 1 2; do
		grep -qx "ksm_merge_any: yes" "/proc/$(state_field "$ID-k$i" pid)/ksm_stat"
		grep -qx "ksm_merge_any: yes" "/proc/$(memhash_pid "$ID-k$i")/ksm_stat"
	done
	grep -qx "ksm_merge_any: no" "/proc/$(memhash_pid "$ID-plain")/ksm_stat"
	grep -qx "ksm_merge_any: no" "/proc/$(memhash_pid "$ID")/ksm_stat"
	# 64 MiB is 16384 pages; nearly all of them are the same in the three
	for i in 0 1 2; do
		wait_until 120 merged_at_least "$(memhash_pid "$ID-k$i")" 16000
	done
	[ "$(awk '$1 == "ksm_merging_pages" {print $2}' "/proc/$(memhash_pid "$ID-plain")/ksm_stat")" -eq 0 ]
	# the shared pages read as the snapshot's; a write is the writer's own
	[ "$(signal_memhash "$ID-k0" USR1 again)" = "again $FIRST" ]
	run signal_memhash "$ID-k1" USR2 new
	[ "$status" -eq 0 ]
	[ "$output" != "new $FIRST" ]
	[ "$(signal_memhash "$ID-k0" USR1 again)" = "again $FIRST" ]
	[ "$(signal_memhash "$ID-k2" USR1 again)" = "again $FIRST" ]
	[ "$(signal_memhash "$ID-k1" USR1 again)" = "again ${output#new }" ]
	# a rollback of a marked clone restores it marked again
	tern snapshot "$ID-k2" own
	run tern rollback "$ID-k2" own
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -qx "ksm_merge_any: yes" "/proc/$(memhash_pid "$ID-k2")/ksm_stat"
	[ "$(signal_memhash "$ID-k2" USR1 again)" = "again $FIRST" ]
	delete_clones_then_source "$ID-k0" "$ID-k1" "$ID-k2" "$ID-plain"
}

@test "snapshot: a shell on a terminal is rolled back onto a new pty from --console-socket, and refused without one" {
	update_config '.process.terminal = true | .process.args = ["/bin/sh"]'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out" \
		$'KEPT=remembered; echo "set-$((40+2))"\n'
	tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 grep -q set-42 "$BATS_TEST_TMPDIR/tty.out"
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid
	pid=$(state_field "$ID" pid)
	# without a console socket: refused before anything is killed
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"has a terminal"*"--console-socket"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	# with one: the same shell (it still has KEPT) reads what is typed
	start_recvtty "$BATS_TEST_TMPDIR/tty2.sock" "$BATS_TEST_TMPDIR/tty2.out" $'echo "$KEPT-$((6*7))"\n'
	run tern rollback --console-socket "$BATS_TEST_TMPDIR/tty2.sock" --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(echo "$output" | jq -r '.name')" = s1 ]
	[ "$(state_field "$ID" status)" = running ]
	wait_until 10 grep -q remembered-42 "$BATS_TEST_TMPDIR/tty2.out"
}

@test "snapshot: a container in a user namespace is snapshotted with its network namespace, and rolled back into a new user namespace; it is cloned, and spared" {
	# (ids mapped to the host's own here; snapshot-userns.bats maps root
	# elsewhere, with veths to the host)
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]'
	start_counter
	tern snapshot "$ID" base
	# criu makes the user namespace anew, and only it can make a network
	# namespace of that one's: the snapshot holds the network namespace
	grep -qx "netns-fresh 0" "$STORE/base/images/tern-checkpoint.txt"
	grep -qx "netns-external 0" "$STORE/base/images/tern-checkpoint.txt"
	local pid s userns
	pid=$(state_field "$ID" pid)
	userns=$(stat -L -c %i "/proc/$pid/ns/user")
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	run tern rollback "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	pid=$(state_field "$ID" pid)
	[ "$(stat -L -c %i "/proc/$pid/ns/user")" != "$userns" ]
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 3))
	head -n $((s + 3)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $((s + 3))) -
	# (clones of it work too: clone-userns.bats)
	run tern clone "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID-c" status)" = running ]
	run tern clone --spares 1 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" pid)" = "$pid" ]
	delete_clones_then_source "$ID-c"
}
