#!/usr/bin/env bats
# checkpoint and restore with CRIU (criu 4.2.1 from scripts/install-criu.sh,
# driven through libcriu). Incremental dumps need soft-dirty tracking, which
# this kernel lacks: those run in the qemu guest (tests/integration-criu-guest).

# The tests tagged vm:v2 also run in scripts/test.sh's qemu guest (pure
# cgroup v2 on Debian's kernel, its rootfs a tmpfs): the ones that touch
# cgroups or the freezer, the kernel probes, or mounts that differ there.
# The rest behave the same on either kernel and run here only, to keep
# the slow emulated guest short.

load helpers

setup() {
	if is_runc; then
		# runc has no tern-checkpoint.txt; bench/checkpoint-bench.sh
		# compares the two
		skip "checkpoint.bats checks tern's own checkpoint state and files"
	fi
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	# runc takes the same images; checkpoints must not depend on the cwd
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	# a failed lazy migration leaves its checkpoint (criu waiting for the
	# page fetcher, the container frozen) and the daemon behind
	if [ -n "${LAZY_CKPT_PID:-}" ]; then
		pkill -9 -P "$LAZY_CKPT_PID" 2>/dev/null
		kill -9 "$LAZY_CKPT_PID" 2>/dev/null
	fi
	[ -n "${LAZY_DAEMON_PID:-}" ] && kill -9 "$LAZY_DAEMON_PID" 2>/dev/null
	# a criu held by hung_dump
	[ -n "${HOLD:-}" ] && touch "$HOLD.go"
	teardown_bundle
	# the lazy-pages tests change a host sysctl: put it back
	if [ -n "${PIPE_MAX_WAS:-}" ]; then
		echo "$PIPE_MAX_WAS" >/proc/sys/fs/pipe-max-size
	fi
}

CRIU_BIN=${TERN_CRIU:-/opt/tern-criu/bin/criu}

# set_pipe_max BYTES: set fs.pipe-max-size for this test (teardown restores it).
set_pipe_max() {
	PIPE_MAX_WAS=${PIPE_MAX_WAS:-$(cat /proc/sys/fs/pipe-max-size)}
	echo "$1" >/proc/sys/fs/pipe-max-size
}

# has_cap_sys_resource: whether a root process here has CAP_SYS_RESOURCE
# (bit 24 of CapEff).
has_cap_sys_resource() {
	local eff
	eff=$(awk '/^CapEff/ {print $2}' /proc/self/status)
	(((0x$eff >> 24) & 1))
}

# start_detached ID [BUNDLE]: run -d in the bundle and wait until running.
start_detached() {
	tern run -d -b "${2:-$BUNDLE}" "$1" >/dev/null
	wait_status "$1" running
}

# counter NAME: a shell loop that counts in /tmp/NAME every 0.1 s (written
# to a temporary file and renamed, so a reader never sees it half written).
counter() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/.c; mv /tmp/.c /tmp/$1; sleep 0.1; done; sleep $MARK"
}

# counter_in_place NAME: the counter of counter(), writing straight into
# /tmp/NAME. For a checkpoint whose container runs on: a file the dump
# caught open must still be there at restore, and counter()'s /tmp/.c is
# renamed away a moment later. A reader may see it half written (empty):
# read it with read_count.
counter_in_place() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/$1; sleep 0.1; done; sleep $MARK"
}

# read_count FILE: the whole number in FILE, once it holds one.
read_count() {
	local v i
	for ((i = 0; i < 200; i++)); do
		v=$(cat "$1" 2>/dev/null) && [[ "$v" =~ ^[0-9]+$ ]] && { echo "$v"; return 0; }
		sleep 0.05
	done
	echo "no whole number in $1" >&2
	return 1
}

# in_ct ID CMD: run a shell command inside the container.
in_ct() {
	local id=$1
	shift
	tern exec "$id" /bin/sh -c "$*"
}

# bats test_tags=vm:v2
@test "checkpoint: a counter goes on from where it was after restore" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# deleted after the dump, as runc does: restore takes the same id
	check_nothing_left "$ID"
	[ -f "$IMG/inventory.img" ]
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	# the same process went on: its count did not start over from 1
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
}

# bats test_tags=vm:v2
@test "checkpoint: a plain checkpoint deletes the container as runc does (state, cgroup, poststop hooks), --leave-running keeps it" {
	hook=$BATS_TEST_TMPDIR/poststop.sh
	printf '#!/bin/sh\necho poststop >> "%s/poststop.out"\n' "$BATS_TEST_TMPDIR" >"$hook"
	chmod +x "$hook"
	update_config '.hooks = {"poststop": [{"path": "'"$hook"'"}]}'
	set_cmd "echo started > /tmp/mark; sleep $MARK"
	start_detached "$ID"
	wait_until 10 grep -qx started "$BUNDLE/rootfs/tmp/mark"
	# --leave-running: it runs on, listed, its hooks not run
	tern checkpoint --leave-running --image-path "$IMG.1" "$ID"
	[ "$(state_field "$ID" status)" = running ]
	[ ! -e "$BATS_TEST_TMPDIR/poststop.out" ]
	tern checkpoint --image-path "$IMG" "$ID"
	# gone: not listed, no state, no cgroup, no process
	run tern list -q
	[ "$status" -eq 0 ]
	[[ "$output" != *"$ID"* ]]
	run tern state "$ID"
	[ "$status" -ne 0 ]
	check_nothing_left "$ID"
	# the poststop hooks ran once, as delete runs them
	[ "$(cat "$BATS_TEST_TMPDIR/poststop.out")" = poststop ]
	# podman and containerd delete --force after a checkpoint: fine
	tern delete --force "$ID"
	# the same id restores without a delete first
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	run tern exec "$ID" cat /tmp/mark
	[ "$output" = started ]
}

# bats test_tags=vm:v2
@test "checkpoint: the restored container works with exec, pause, resume, kill and delete" {
	set_cmd "echo started > /tmp/mark; sleep $MARK"
	start_detached "$ID"
	# written before the checkpoint, so that exec finds it after restore
	wait_until 10 grep -qx started "$BUNDLE/rootfs/tmp/mark"
	tern checkpoint --image-path "$IMG" "$ID"
	tern restore -d --pid-file "$BATS_TEST_TMPDIR/pid" --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$(state_field "$ID" status)" = running ]
	pid=$(state_field "$ID" pid)
	[ "$pid" -gt 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$pid" ]
	# the state's pid is the restored sleep itself
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "sleep $MARK"
	run tern exec "$ID" cat /tmp/mark
	[ "$status" -eq 0 ]
	[ "$output" = started ]
	tern pause "$ID"
	[ "$(state_field "$ID" status)" = paused ]
	tern resume "$ID"
	[ "$(state_field "$ID" status)" = running ]
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	tern delete "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: restore without --detach waits, exits with the status and deletes" {
	set_cmd "while [ ! -e /tmp/go ]; do sleep 0.1; done; exit 7"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	# the restored loop sees it and exits
	touch "$BUNDLE/rootfs/tmp/go"
	run tern restore --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 7 ]
	[ ! -e "$ROOT/$ID" ]
	check_nothing_left "$ID"
}

@test "checkpoint: a foreground restore forwards signals to the container, as run does" {
	# the shell is PID 1 of its namespace: only a signal it traps reaches it
	set_cmd "trap 'exit 9' USR1; trap 'exit 15' TERM; echo up > /tmp/up; while :; do sleep 0.1; done"
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/up"
	tern checkpoint --image-path "$IMG" "$ID"
	# stdout: an empty 0600 file, like the one the container had at the
	# dump (criu checks the size and mode of a regular file it hands over)
	out=$(mktemp "$BATS_TEST_TMPDIR/restore.XXXXXX")
	"$TERN_BIN" --root "$ROOT" restore --image-path "$IMG" -b "$BUNDLE" "$ID" </dev/null \
		>"$out" 2>&1 &
	pid=$!
	wait_status "$ID" running 60 || { cat "$out"; false; }
	kill -USR1 "$pid"
	rc=0
	timeout 20 tail --pid="$pid" -f /dev/null
	wait "$pid" || rc=$?
	[ "$rc" -eq 9 ] || { cat "$out"; false; }
	[ ! -e "$ROOT/$ID" ]
	check_nothing_left "$ID"
}

@test "checkpoint: 256 MiB of memory come back byte for byte" {
	set_args /bin/memhash 256 /tmp/hash
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	[ "$what" = first ]
	tern checkpoint --image-path "$IMG" "$ID"
	# the pages are in the image: at least 256 MiB of it
	size=$(du -sm "$IMG" | cut -f1)
	echo "image: $size MiB"
	[ "$size" -ge 256 ]
	rm "$BUNDLE/rootfs/tmp/hash"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	tern kill "$ID" USR1
	wait_for_file "$BUNDLE/rootfs/tmp/hash"
	read -r what after <"$BUNDLE/rootfs/tmp/hash"
	echo "before $before after $after"
	[ "$what" = again ]
	[ "$after" = "$before" ]
}

@test "checkpoint: a shell on a pty from --console-socket is typed into after restore" {
	update_config '.process.terminal = true | .process.args = ["/bin/sh"]'
	# the shell has run the line once "set-42" is on the terminal (the
	# terminal's echo of the typed line shows "set-$((40+2))")
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out" \
		$'KEPT=remembered; echo "set-$((40+2))"\n'
	tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 grep -q set-42 "$BATS_TEST_TMPDIR/tty.out"
	tern checkpoint --image-path "$IMG" "$ID"
	wait "$RECVTTY_PID" || true
	# a new console socket gets a new pty master, and the same shell
	# (it still has KEPT) reads what is typed into it
	start_recvtty "$BATS_TEST_TMPDIR/tty2.sock" "$BATS_TEST_TMPDIR/tty2.out" $'echo "$KEPT-$((6*7))"\n'
	tern restore -d --console-socket "$BATS_TEST_TMPDIR/tty2.sock" --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$(state_field "$ID" status)" = running ]
	for _ in $(seq 50); do
		grep -q remembered-42 "$BATS_TEST_TMPDIR/tty2.out" && break
		sleep 0.1
	done
	cat "$BATS_TEST_TMPDIR/tty2.out"
	grep -q remembered-42 "$BATS_TEST_TMPDIR/tty2.out"
}

@test "checkpoint: a terminal checkpoint cannot be restored without --console-socket" {
	update_config '.process.terminal = true | .process.args = ["/bin/sh"]'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	tern checkpoint --image-path "$IMG" "$ID"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "has a terminal" "--console-socket"
}

@test "checkpoint: an established TCP connection survives with --tcp-established" {
	NETNS=tern-ckpt-$$-$RANDOM
	ip netns add "$NETNS"
	ip -n "$NETNS" link set lo up
	add_namespace network "/var/run/netns/$NETNS"
	set_args /bin/tcpecho 5555
	start_detached "$ID"
	# the client lives outside the container, in the same netns
	mkfifo "$BATS_TEST_TMPDIR/go"
	ip netns exec "$NETNS" bash -c '
		for i in $(seq 600); do exec 5<>/dev/tcp/127.0.0.1/5555 2>/dev/null && break; sleep 0.1; done
		echo one >&5; read -r -u 5 l; echo "$l" >"$1/r1.tmp"; mv "$1/r1.tmp" "$1/r1"
		read -r _ <"$1/go"
		echo two >&5; read -r -t 10 -u 5 l; echo "$l" >"$1/r2"' _ "$BATS_TEST_TMPDIR" 3>&- &
	EXTRA_PIDS=$!
	wait_for_file "$BATS_TEST_TMPDIR/r1"
	[ "$(cat "$BATS_TEST_TMPDIR/r1")" = "1 one" ]
	run tern checkpoint --tcp-established --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run tern restore -d --tcp-established --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo go >"$BATS_TEST_TMPDIR/go"
	wait "$EXTRA_PIDS"
	# the restored server answers on the same connection, still counting
	[ "$(cat "$BATS_TEST_TMPDIR/r2")" = "2 two" ]
}

@test "checkpoint: without --tcp-established an established connection is refused clearly" {
	NETNS=tern-ckpt-$$-$RANDOM
	ip netns add "$NETNS"
	ip -n "$NETNS" link set lo up
	add_namespace network "/var/run/netns/$NETNS"
	set_args /bin/tcpecho 5555
	start_detached "$ID"
	ip netns exec "$NETNS" bash -c '
		for i in $(seq 600); do exec 5<>/dev/tcp/127.0.0.1/5555 2>/dev/null && break; sleep 0.1; done
		echo one >&5; read -r -u 5 l; echo "$l" >"$1/r1.tmp"; mv "$1/r1.tmp" "$1/r1"; exec sleep "$2"' _ "$BATS_TEST_TMPDIR" "$MARK" 3>&- &
	EXTRA_PIDS=$!
	wait_for_file "$BATS_TEST_TMPDIR/r1"
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"criu dump failed"* ]]
	# the container goes on and the image directory tern made is gone;
	# criu's log is kept in the container's state directory
	[[ "$output" == *"(log: $ROOT/$ID/last-failure/dump.log)"* ]]
	grep -q 'Version: ' "$ROOT/$ID/last-failure/dump.log"
	[ "$(state_field "$ID" status)" = running ]
	[ ! -e "$IMG" ]
}

@test "checkpoint: a bind mount from the bundle and a tmpfs with contents" {
	mkdir -p "$BATS_TEST_TMPDIR/shared"
	echo from-host >"$BATS_TEST_TMPDIR/shared/in"
	update_config '.mounts += [{"destination": "/shared", "type": "bind", "source": "'"$BATS_TEST_TMPDIR"'/shared", "options": ["rbind", "rw"]},
		{"destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["size=8m"]}]'
	set_cmd "echo in-tmpfs-$MARK > /scratch/data; sleep $MARK"
	start_detached "$ID"
	wait_until 10 in_ct "$ID" "grep -qx in-tmpfs-$MARK /scratch/data"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -q "mount /shared" "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run tern exec "$ID" cat /scratch/data
	[ "$output" = "in-tmpfs-$MARK" ]
	run tern exec "$ID" cat /shared/in
	[ "$output" = from-host ]
	# the bind is live again: a write inside shows on the host
	tern exec "$ID" sh -c 'echo from-restored > /shared/out'
	[ "$(cat "$BATS_TEST_TMPDIR/shared/out")" = from-restored ]
	# the tmpfs is the container's own, not on the host's disk
	[ ! -e "$BUNDLE/rootfs/scratch/data" ]
}

@test "checkpoint: --leave-running keeps it running; restore under a new id runs a copy" {
	set_cmd "$(counter_in_place "count-\$(hostname)")"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count-tern" 0
	tern checkpoint --leave-running --image-path "$IMG" "$ID"
	[ "$(state_field "$ID" status)" = running ]
	a=$(read_count "$BUNDLE/rootfs/tmp/count-tern")
	wait_count_above "$BUNDLE/rootfs/tmp/count-tern" "$a"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID-copy"
	[ "$(state_field "$ID-copy" status)" = running ]
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID-copy" pid)" != "$(state_field "$ID" pid)" ]
	tern delete --force "$ID-copy"
	[ ! -e "$ROOT/$ID-copy" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: restored under a new id once the first is gone, nothing of the old id's cgroups comes back (criu's unified one on a hybrid host)" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	tern checkpoint --image-path "$IMG" "$ID"
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID" 2>/dev/null || true)" ]
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID-new"
	[ "$(state_field "$ID-new" status)" = running ]
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$a"
	local left
	left=$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID" 2>/dev/null || true)
	[ -z "$left" ] || { echo "left: $left"; false; }
	tern delete --force "$ID-new"
	check_nothing_left "$ID"
}

@test "checkpoint: restore on another --root from another bundle path" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	tern checkpoint --image-path "$IMG" "$ID"
	# move the whole bundle and the images
	mv "$BUNDLE" "$BATS_TEST_TMPDIR/moved"
	mv "$IMG" "$BATS_TEST_TMPDIR/img-moved"
	NEWROOT=$BATS_TEST_TMPDIR/other-root
	# (criu checks that an inherited stdout file has the mode it had:
	# mktemp makes it 0600 like the first one)
	out=$(mktemp "$BATS_TEST_TMPDIR/out.XXXXXX")
	"$TERN_BIN" --root "$NEWROOT" restore -d --image-path "$BATS_TEST_TMPDIR/img-moved" \
		-b "$BATS_TEST_TMPDIR/moved" "$ID" >"$out" 2>&1 </dev/null ||
		{ cat "$out"; false; }
	st=$("$TERN_BIN" --root "$NEWROOT" state "$ID")
	echo "$st"
	[ "$(jq -r .status <<<"$st")" = running ]
	[ "$(jq -r .bundle <<<"$st")" = "$BATS_TEST_TMPDIR/moved" ]
	a=$(cat "$BATS_TEST_TMPDIR/moved/rootfs/tmp/count")
	wait_count_above "$BATS_TEST_TMPDIR/moved/rootfs/tmp/count" "$a"
	"$TERN_BIN" --root "$NEWROOT" delete --force "$ID"
	[ ! -e "$NEWROOT/$ID" ]
	BUNDLE=$BATS_TEST_TMPDIR/moved check_nothing_left "$ID"
}

# bats test_tags=vm:v2
@test "checkpoint: restore goes into the cgroup of the new config, with its limits" {
	update_config ".linux.cgroupsPath = \"/$ID-old\""
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	update_config ".linux.cgroupsPath = \"/$ID-new\" | .linux.resources.memory.limit = 104857600 | .linux.resources.pids.limit = 77"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		# pure cgroup v2 (the qemu guest)
		grep -qx "0::/$ID-new" "/proc/$pid/cgroup"
		[ "$(cat "/sys/fs/cgroup/$ID-new/memory.max")" = 104857600 ]
		[ "$(cat "/sys/fs/cgroup/$ID-new/pids.max")" = 77 ]
		[ ! -e "/sys/fs/cgroup/$ID-old" ]
		run tern exec "$ID" cat /sys/fs/cgroup/pids.max
	else
		for c in memory pids cpu freezer; do
			grep -qx "$pid" "/sys/fs/cgroup/$c/$ID-new/cgroup.procs"
		done
		[ "$(cat "/sys/fs/cgroup/memory/$ID-new/memory.limit_in_bytes")" = 104857600 ]
		[ "$(cat "/sys/fs/cgroup/pids/$ID-new/pids.max")" = 77 ]
		[ ! -e "/sys/fs/cgroup/memory/$ID-old" ]
		# and the container's own /sys/fs/cgroup is the new cgroup
		run tern exec "$ID" cat /sys/fs/cgroup/pids/pids.max
	fi
	[ "$output" = 77 ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: a bind mount whose destination is a symlink in the image is dumped and restored at its target" {
	# the image has /conf -> /real/conf: create mounts the bind on the
	# target, inside the rootfs, so the kernel's mount table says /real/conf
	mkdir -p "$BUNDLE/rootfs/real/conf"
	ln -s /real/conf "$BUNDLE/rootfs/conf"
	mkdir "$BATS_TEST_TMPDIR/conf"
	echo "before-$MARK" >"$BATS_TEST_TMPDIR/conf/app.conf"
	update_config '.mounts += [{"destination": "/conf", "type": "bind", "source": "'"$BATS_TEST_TMPDIR"'/conf", "options": ["rbind", "ro"]}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	run in_ct "$ID" 'cat /conf/app.conf'
	[ "$output" = "before-$MARK" ]
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	tern delete --force "$ID"
	# a live bind of the source again, not a copy: a change made now shows
	echo "after-$MARK" >"$BATS_TEST_TMPDIR/conf/app.conf"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run in_ct "$ID" 'cat /conf/app.conf'
	[ "$output" = "after-$MARK" ]
	# at the same place: the symlink's target, read-only as configured
	pid=$(state_field "$ID" pid)
	awk '$5 == "/real/conf" {print $6}' "/proc/$pid/mountinfo" | grep -q '^ro'
	! awk '{print $5}' "/proc/$pid/mountinfo" | grep -qx /conf || false
}

@test "checkpoint: restore runs the new config's prestart and createRuntime hooks" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	hook=$BATS_TEST_TMPDIR/hook.sh
	printf '#!/bin/sh\ncat > "%s/$1.json"\n' "$BATS_TEST_TMPDIR" >"$hook"
	chmod +x "$hook"
	update_config '.hooks = {"prestart": [{"path": "'"$hook"'", "args": ["hook", "prestart"]}],
		"createRuntime": [{"path": "'"$hook"'", "args": ["hook", "createRuntime"]}]}'
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	for h in prestart createRuntime; do
		[ "$(jq -r .id "$BATS_TEST_TMPDIR/$h.json")" = "$ID" ]
		[ "$(jq -r .pid "$BATS_TEST_TMPDIR/$h.json")" = "$pid" ]
	done
}

@test "checkpoint: a failing prestart hook on restore fails it cleanly" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	update_config '.hooks = {"prestart": [{"path": "/bin/false"}]}'
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "prestart hook" "/bin/false"
}

@test "checkpoint: restore refuses a config with linux.intelRdt (restored processes are not put in a resctrl group), leaves nothing" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	update_config '.linux.intelRdt = {"closID": "tern-restore"}'
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.intelRdt" "restore does not put the restored processes in a resctrl group"
}

# ---- bad input ----

@test "checkpoint: restore from a missing image path fails cleanly" {
	run tern restore -d --image-path "$BATS_TEST_TMPDIR/nope" -b "$BUNDLE" "$ID"
	check_fails_cleanly "--image-path" "nope" "No such file or directory"
}

@test "checkpoint: restore from an empty image path fails cleanly" {
	mkdir "$IMG"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "holds no checkpoint" "$IMG"
}

@test "checkpoint: restore from a corrupted image fails cleanly" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	for f in "$IMG"/core-*.img; do
		head -c 64 /dev/urandom >"$f"
	done
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "criu restore failed" "restore.log"
}

# hung_dump STAGE: a criu action script (through CRIU_CONFIG_FILE, which
# criu reads when it serves tern too) that hangs at STAGE of the dump:
# $HOLD.conf names it; it creates $HOLD.in there and waits for $HOLD.go
# (teardown's, should a criu be left waiting).
hung_dump() {
	HOLD=$BATS_TEST_TMPDIR/hold
	cat >"$HOLD.sh" <<EOF
#!/bin/sh
[ "\$CRTOOLS_SCRIPT_ACTION" = $1 ] || exit 0
touch $HOLD.in
while [ ! -e $HOLD.go ]; do sleep 0.05; done
EOF
	chmod 0755 "$HOLD.sh"
	echo "action-script $HOLD.sh" >"$HOLD.conf"
}

@test "checkpoint: a criu dump that hangs is killed past TERN_CRIU_TIMEOUT and says so; the container runs on, thawed" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	local pid t0=$SECONDS
	pid=$(state_field "$ID" pid)
	hung_dump pre-dump
	# a tern without the bound would wait for it forever: 60 s end it here
	TERN_CRIU_TIMEOUT=3 CRIU_CONFIG_FILE=$HOLD.conf run in_file timeout -s KILL 60 \
		"$TERN_BIN" --root "$ROOT" checkpoint --image-path "$IMG" "$ID"
	echo "$output"
	[ "$status" -eq 1 ]
	[ $((SECONDS - t0)) -lt 50 ]
	test -e "$HOLD.in"
	[[ "$output" == *"criu dump did not finish within 3 s: killed it; \`$ID\` runs on"* ]]
	! pgrep -f "$HOLD.sh" || false
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	local fz
	fz=$(sed -n 's/^[0-9]*:freezer:\(.*\)/\1/p' "/proc/$pid/cgroup")
	[ -z "$fz" ] || [ "$(cat "/sys/fs/cgroup/freezer$fz/freezer.state")" = THAWED ]
	local now
	now=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$now" 10
}

@test "checkpoint: a criu restore that hangs is killed past TERN_CRIU_TIMEOUT with the tree it restored; nothing is left" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	# post-restore: the tree is there, stopped by criu, and criu waits
	hung_dump post-restore
	local t0=$SECONDS
	# a tern without the bound would wait for it forever: 60 s end it here
	TERN_CRIU_TIMEOUT=3 CRIU_CONFIG_FILE=$HOLD.conf run in_file timeout -s KILL 60 \
		"$TERN_BIN" --root "$ROOT" restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	echo "$output"
	[ $((SECONDS - t0)) -lt 50 ]
	test -e "$HOLD.in"
	check_fails_cleanly "criu restore did not finish within 3 s: killed it"
	! pgrep -f "$HOLD.sh" || false
	! pgrep -f "sleep $MARK" || false
}

@test "checkpoint: restore to an id that exists fails and leaves it alone" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --leave-running --image-path "$IMG" "$ID"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"already exists"* ]]
	[ "$(state_field "$ID" status)" = running ]
	[ "$(pgrep -fc "sleep $MARK")" -eq 1 ]
}

# bats test_tags=vm:v2
@test "checkpoint: restore --systemd-cgroup without systemd as PID 1 fails clearly, leaves nothing" {
	if [ -d /run/systemd/system ]; then
		skip "systemd runs here: tests/integration-systemd restores under it instead"
	fi
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	run tern --systemd-cgroup restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "--systemd-cgroup: systemd is not running as PID 1"
}

@test "checkpoint: a stopped container cannot be checkpointed" {
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" stopped
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot checkpoint container \`$ID\`: it is stopped"* ]]
	[ ! -e "$IMG" ]
}

@test "checkpoint: no criu found is a clear error (--criu, \$TERN_CRIU, a broken criu)" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	run tern --criu /nonexistent/criu checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--criu \`/nonexistent/criu\`: No such file or directory"* ]]
	TERN_CRIU=/nonexistent/criu run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"\$TERN_CRIU \`/nonexistent/criu\`"* ]]
	TERN_CRIU=/bin/false run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"criu \`/bin/false\` does not work"*"scripts/install-criu.sh"* ]]
	[ ! -e "$IMG" ]
	[ "$(state_field "$ID" status)" = running ]
	# restore says the same, and leaves nothing
	run tern --criu /nonexistent/criu restore -d --image-path "$IMG" -b "$BUNDLE" "$ID-r"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--criu"* ]]
	[ ! -e "$ROOT/$ID-r" ]
}

@test "checkpoint: no criu anywhere names every place tried (private prefix hidden)" {
	# a private mount namespace hides the private install and PATH has no criu
	set_cmd "sleep $MARK"
	start_detached "$ID"
	run unshare -m sh -c 'mount -t tmpfs none /opt 2>/dev/null; PATH=/nonexistent "$@"' _ \
		"$TERN_BIN" --root "$ROOT" checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"no criu found"*"--criu"*"TERN_CRIU"*"/opt/tern-criu/bin/criu"*"PATH"*"scripts/install-criu.sh"* ]]
	[ "$(state_field "$ID" status)" = running ]
}

@test "checkpoint: --pre-dump says this kernel lacks memory dirty tracking (no soft-dirty here)" {
	if "${TERN_CRIU:-/opt/tern-criu/bin/criu}" check --feature mem_dirty_track >/dev/null 2>&1; then
		skip "this kernel has soft-dirty tracking: tests/integration-criu-guest tests pre-dump instead"
	fi
	set_cmd "sleep $MARK"
	start_detached "$ID"
	run tern checkpoint --pre-dump --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--pre-dump: this kernel lacks memory dirty tracking"* ]]
	[ ! -e "$IMG" ]
	[ "$(state_field "$ID" status)" = running ]
}

# bats test_tags=vm:v2
@test "checkpoint: --lazy-pages migrates a container whose memory is fetched on demand" {
	# criu's lazy page server needs 4 MiB pipes: without CAP_SYS_RESOURCE
	# (root on this machine lacks it) fs.pipe-max-size must allow them
	if ! has_cap_sys_resource && [ "$(cat /proc/sys/fs/pipe-max-size)" -lt 4194304 ]; then
		echo "# NOTE: no CAP_SYS_RESOURCE here: fs.pipe-max-size raised to 4 MiB for this test" >&3
		set_pipe_max 4194304
	fi
	set_args /bin/memhash 64 /tmp/hash
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/hash"
	read -r what before <"$BUNDLE/rootfs/tmp/hash"
	port=$((20000 + RANDOM % 20000))
	# --status-fd: a byte once the images are written and the page server listens
	mkfifo "$BATS_TEST_TMPDIR/status"
	exec 4<>"$BATS_TEST_TMPDIR/status"
	# (not through `tern`, which closes fds 3-9)
	"$TERN_BIN" --root "$ROOT" checkpoint --lazy-pages --page-server "127.0.0.1:$port" \
		--status-fd 3 --image-path "$IMG" "$ID" 3>"$BATS_TEST_TMPDIR/status" \
		>"$BATS_TEST_TMPDIR/ckpt.out" 2>&1 &
	ckpt=$!
	LAZY_CKPT_PID=$ckpt
	[ "$(timeout 30 dd bs=1 count=1 <&4 2>/dev/null | od -An -c | tr -d ' ')" = '\0' ]
	exec 4<&-
	[ -e "$IMG/inventory.img" ]
	# the 64 MiB stay behind: the image holds only what is not lazy
	size=$(du -sm "$IMG" | cut -f1)
	echo "lazy image: $size MiB"
	[ "$size" -lt 32 ]
	# state does not wait for the checkpoint, which holds the container
	# until every page is fetched
	[ "$(timeout 5 "$TERN_BIN" --root "$ROOT" state "$ID" | jq -r .status)" != "" ]
	"$CRIU_BIN" lazy-pages --page-server --address 127.0.0.1 --port "$port" -D "$IMG" \
		-o lazy-pages.log &
	LAZY_DAEMON_PID=$!
	wait_for_file "$IMG/lazy-pages.socket" 60
	rm "$BUNDLE/rootfs/tmp/hash"
	# a new id: the source exists until its last page has been fetched
	tern restore -d --lazy-pages --image-path "$IMG" -b "$BUNDLE" "$ID-lazy"
	[ "$(state_field "$ID-lazy" status)" = running ]
	tern kill "$ID-lazy" USR1
	wait_for_file "$BUNDLE/rootfs/tmp/hash" 30
	read -r what after <"$BUNDLE/rootfs/tmp/hash"
	echo "before $before after $after"
	[ "$what" = again ]
	[ "$after" = "$before" ]
	# every page fetched: the checkpoint and the daemon finish, the source
	# is gone
	timeout 60 tail --pid="$ckpt" -f /dev/null
	wait "$ckpt" || { cat "$BATS_TEST_TMPDIR/ckpt.out"; false; }
	timeout 30 tail --pid="$LAZY_DAEMON_PID" -f /dev/null
	# (and deleted, as after any checkpoint that stops it)
	run tern state "$ID"
	[ "$status" -ne 0 ]
	tern delete --force "$ID-lazy"
	check_nothing_left "$ID"
}

@test "checkpoint: --lazy-pages errors up front (no --page-server, pipes too small, no daemon)" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	run tern checkpoint --lazy-pages --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--lazy-pages needs --page-server IP:PORT"* ]]
	[ ! -e "$IMG" ]
	# without CAP_SYS_RESOURCE (dropped here, whatever the machine) and with
	# the default 1 MiB pipe limit criu would fail at the first page fetch
	set_pipe_max 1048576
	run capsh --drop=cap_sys_resource -- -c '"$@"' _ "$TERN_BIN" --root "$ROOT" checkpoint \
		--lazy-pages --page-server 127.0.0.1:1 --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"needs 4 MiB pipes"*"fs.pipe-max-size is 1048576"*"CAP_SYS_RESOURCE"* ]]
	[ ! -e "$IMG" ]
	[ "$(state_field "$ID" status)" = running ]
	# restore --lazy-pages with no `criu lazy-pages` listening
	tern checkpoint --image-path "$IMG" "$ID"
	run tern restore -d --lazy-pages --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "no \`criu lazy-pages\` daemon listens" "lazy-pages.socket"
}

@test "checkpoint: restore --lazy-pages waits, bounded, for a criu lazy-pages daemon started just before it" {
	# criu's lazy-pages daemon sizes its pipes to 4 MiB (see above)
	if ! has_cap_sys_resource && [ "$(cat /proc/sys/fs/pipe-max-size)" -lt 4194304 ]; then
		set_pipe_max 4194304
	fi
	set_cmd "echo started > /tmp/mark; sleep $MARK"
	start_detached "$ID"
	wait_until 10 grep -qx started "$BUNDLE/rootfs/tmp/mark"
	tern checkpoint --image-path "$IMG" "$ID"
	tern delete --force "$ID"
	# a daemon whose socket comes late, as one put in the background just
	# before the restore: the wrapper holds criu back 1 s before its own
	# start-up; a restore that looks for the socket only once always fails
	printf '#!/bin/sh\nsleep 1\nexec "$@"\n' >"$BATS_TEST_TMPDIR/late"
	chmod +x "$BATS_TEST_TMPDIR/late"
	for i in 1 2 3; do
		# fresh images each time: no socket left by the daemon before
		cp -a "$IMG" "$IMG$i"
		"$BATS_TEST_TMPDIR/late" "$CRIU_BIN" lazy-pages -D "$IMG$i" -o lazy-pages.log \
			</dev/null >/dev/null 2>&1 3>&- &
		LAZY_DAEMON_PID=$!
		run tern restore -d --lazy-pages --image-path "$IMG$i" -b "$BUNDLE" "$ID-r$i"
		[ "$status" -eq 0 ] || { echo "run $i: $output"; false; }
		[ "$(state_field "$ID-r$i" status)" = running ]
		run tern exec "$ID-r$i" cat /tmp/mark
		[ "$output" = started ]
		# every page in: the daemon ends by itself
		timeout 30 tail --pid="$LAZY_DAEMON_PID" -f /dev/null
		wait "$LAZY_DAEMON_PID"
		tern delete --force "$ID-r$i"
	done
	# no daemon at all: a clear error once the bound has passed, no hang
	cp -a "$IMG" "$IMG-none"
	SECONDS=0
	run timeout 60 "$TERN_BIN" --root "$ROOT" restore -d --lazy-pages --image-path "$IMG-none" \
		-b "$BUNDLE" "$ID-none"
	echo "$output"
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ "$SECONDS" -ge 4 ]
	[[ "$output" == *"\`$IMG-none/lazy-pages.socket\` did not appear within 5000 ms"* ]]
	run tern state "$ID-none"
	[ "$status" -ne 0 ]
}

@test "checkpoint/restore: --help exits 0, options as runc spells them" {
	run tern checkpoint --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--tcp-established"* ]]
	run tern restore --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--lsm-mount-context"* ]]
	run tern restore --lsm-mount-context
	[ "$status" -ne 0 ]
	[[ "$output" == *"requires an argument"* ]]
	run tern checkpoint --manage-cgroups-mode
	[[ "$output" == *"requires an argument"* ]]
	# containerd's single-dash spelling
	run tern restore -no-subreaper --image-path "$BATS_TEST_TMPDIR/none" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--image-path"* ]]
	[[ "$output" != *"unknown option"* ]]
	run tern checkpoint --manage-cgroups-mode bogus "$ID"
	[ "$status" -ne 0 ]
}

@test "checkpoint: --page-server sends the memory pages to a criu page server" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	criu=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	mkdir -p "$BATS_TEST_TMPDIR/remote"
	port=$((20000 + RANDOM % 20000))
	"$criu" page-server --images-dir "$BATS_TEST_TMPDIR/remote" --port "$port" \
		-o ps.log 3>&- &
	EXTRA_PIDS=$!
	wait_until 10 port_listening "$port"
	run tern checkpoint --page-server "127.0.0.1:$port" --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait "$EXTRA_PIDS"
	# the pages went to the server, not into the image directory
	ls "$BATS_TEST_TMPDIR"/remote/pages-*.img
	! ls "$IMG"/pages-*.img || false
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	cp "$BATS_TEST_TMPDIR"/remote/*.img "$IMG"/
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
}

@test "checkpoint: --status-fd gets a byte once the images are complete" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	"$TERN_BIN" --root "$ROOT" checkpoint --status-fd 7 --image-path "$IMG" "$ID" 7>"$BATS_TEST_TMPDIR/status" </dev/null 3>&-
	[ "$(od -An -tx1 "$BATS_TEST_TMPDIR/status" | tr -d ' ')" = 00 ]
	[ -f "$IMG/inventory.img" ]
}

@test "checkpoint: a socket to the outside needs --ext-unix-sk, and then keeps sending" {
	mkdir -p "$BATS_TEST_TMPDIR/sock"
	# mounted at the same path inside: CRIU reconnects the socket by the
	# name the outside end was bound to, from inside the container
	update_config '.mounts += [{"destination": "'"$BATS_TEST_TMPDIR"'/sock", "type": "bind", "source": "'"$BATS_TEST_TMPDIR"'/sock", "options": ["rbind", "rw"]}]'
	set_args /bin/unixdgram "$BATS_TEST_TMPDIR/sock/s"
	# CRIU finds the outside peer through sock_diag, which sees only its
	# own network namespace: the container shares the host's here
	remove_namespace network
	# the outside end: a datagram socket bound on the host that writes
	# down the last number it got
	"$BASE_ROOTFS/bin/unixrecv" "$BATS_TEST_TMPDIR/sock/s" "$BATS_TEST_TMPDIR/last" 3>&- &
	EXTRA_PIDS=$!
	start_detached "$ID"
	wait_for_file "$BATS_TEST_TMPDIR/last"
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"criu dump failed"* ]]
	[ "$(state_field "$ID" status)" = running ]
	run tern checkpoint --ext-unix-sk --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	before=$(cat "$BATS_TEST_TMPDIR/last")
	tern restore -d --ext-unix-sk --image-path "$IMG" -b "$BUNDLE" "$ID"
	# the same sender goes on counting into the same outside socket
	went_on "$BATS_TEST_TMPDIR/last" "$before"
}

@test "checkpoint: a held file lock needs --file-locks and is held again after restore" {
	touch "$BUNDLE/rootfs/lockfile"
	set_args /bin/holdlock /lockfile
	start_detached "$ID"
	for _ in $(seq 50); do
		flock -n "$BUNDLE/rootfs/lockfile" true || break
		sleep 0.1
	done
	! flock -n "$BUNDLE/rootfs/lockfile" true || false
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"criu dump failed"* ]]
	[ "$(state_field "$ID" status)" = running ]
	tern checkpoint --file-locks --image-path "$IMG" "$ID"
	# nobody holds it while the container is checkpointed
	flock -n "$BUNDLE/rootfs/lockfile" true
	tern restore -d --file-locks --image-path "$IMG" -b "$BUNDLE" "$ID"
	! flock -n "$BUNDLE/rootfs/lockfile" true || false
}

@test "checkpoint: --empty-ns network leaves the network namespace out, restore gets an empty one" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	nsenter -t "$(state_field "$ID" pid)" -n ip addr add 10.99.0.1/24 dev lo
	run tern exec "$ID" ip addr show lo
	[[ "$output" == *10.99.0.1* ]]
	tern checkpoint --empty-ns network --image-path "$IMG" "$ID"
	# no network images: links, addresses, routes were not dumped
	! ls "$IMG"/netdev-*.img || false
	! ls "$IMG"/ifaddr-*.img || false
	tern restore -d --empty-ns network --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$(state_field "$ID" status)" = running ]
	# a new, empty network namespace: lo only, without the address
	run tern exec "$ID" ip addr show lo
	[ "$status" -eq 0 ]
	[[ "$output" != *10.99.0.1* ]]
	run tern exec "$ID" ls /sys/class/net
	[ "$output" = lo ]
}

@test "checkpoint: a network namespace a new one equals stays out of the images; one the host changed from outside goes in and comes back changed" {
	set_cmd "sleep $MARK"
	# untouched: lo only, nothing in it could change it (no CAP_NET_ADMIN)
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'netns-fresh 1' "$IMG/tern-checkpoint.txt"
	! ls "$IMG"/netdev-*.img || false
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run tern exec "$ID" ls /sys/class/net
	[ "$output" = lo ]
	run tern exec "$ID" ip addr show lo
	[[ "$output" == *"inet 127.0.0.1/8"* ]]
	[[ "$output" == *UP* ]]
	tern delete -f "$ID"
	rm -rf "$IMG"

	# an address, a route and an iptables (nft) rule put in from outside
	# each make it go into the images, and criu brings them back
	local change
	for change in "ip addr add 10.99.0.1/32 dev lo" "ip route add 10.98.0.0/16 dev lo" \
		"iptables -A INPUT -s 10.97.0.1 -j DROP"; do
		start_detached "$ID"
		nsenter -t "$(state_field "$ID" pid)" -n $change
		tern checkpoint --image-path "$IMG" "$ID"
		grep -qx 'netns-fresh 0' "$IMG/tern-checkpoint.txt"
		tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
		local pid
		pid=$(state_field "$ID" pid)
		case $change in
		"ip addr"*) nsenter -t "$pid" -n ip addr show lo | grep -q 10.99.0.1/32 ;;
		"ip route"*) nsenter -t "$pid" -n ip route show | grep -q 10.98.0.0/16 ;;
		iptables*) nsenter -t "$pid" -n iptables -S INPUT | grep -q 10.97.0.1 ;;
		esac
		tern delete -f "$ID"
		rm -rf "$IMG"
	done
	check_nothing_left "$ID"
}

# (that --leave-running thaws the cgroup tern froze for criu is the
# counter going on in "--leave-running keeps it running" above)
# bats test_tags=vm:v2
@test "checkpoint: --leave-running leaves a paused container paused (v2: refuses it at once); a plain checkpoint deletes it" {
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	tern pause "$ID"
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		# v2 (the qemu guest): criu cannot dump what the v2 freezer
		# holds; refused at once, the container left paused
		run tern checkpoint --leave-running --image-path "$IMG.2" "$ID"
		[ "$status" -ne 0 ]
		[[ "$output" == *"it is paused"*"resume it first"* ]]
		[ ! -e "$IMG.2" ]
	else
		tern checkpoint --leave-running --image-path "$IMG.2" "$ID"
	fi
	[ "$(state_field "$ID" status)" = paused ]
	tern resume "$ID"
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$a"
	# and a plain checkpoint stops and deletes it: nothing of it is left
	tern checkpoint --image-path "$IMG.3" "$ID"
	check_nothing_left "$ID"
}

# ---- restore into a fresh rootfs (podman's restore --import) ----

# fresh_rootfs: the bundle's rootfs as the image was before create made
# any mount point in it, with what the container wrote in /tmp (what
# podman's restore --import hands the runtime: the image, and the
# container's changes from the checkpoint's rootfs-diff.tar). Without
# /tmp a checkpoint taken while the counter had /tmp/.c open could never
# be restored.
fresh_rootfs() {
	local kept=$BATS_TEST_TMPDIR/tmp-kept
	rm -rf "$kept"
	cp -a "$BUNDLE/rootfs/tmp" "$kept"
	rm -rf "$BUNDLE/rootfs"
	cp -a "$BASE_ROOTFS" "$BUNDLE/rootfs"
	cp -a "$kept/." "$BUNDLE/rootfs/tmp/"
}

@test "checkpoint: restore into a fresh rootfs makes the missing mount points, as runc does" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/vol" "$t/sub"
	echo "nameserver-$MARK" >"$t/resolv"
	update_config '.mounts += [
		{"destination": "/etc/resolv.conf", "type": "bind", "source": "'"$t"'/resolv", "options": ["bind"]},
		{"destination": "/new/vol", "type": "bind", "source": "'"$t"'/vol", "options": ["rbind"]},
		{"destination": "/new/vol/sub", "type": "bind", "source": "'"$t"'/sub", "options": ["rbind"]},
		{"destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["size=8m"]},
		{"destination": "/scratch/file", "type": "bind", "source": "'"$t"'/resolv", "options": ["bind"]}]'
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	tern checkpoint --image-path "$IMG" "$ID"
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	fresh_rootfs
	rm -r "$t/vol/sub"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# the same process goes on counting (in the fresh rootfs's /tmp)
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
	# a file for a file source, a directory for a directory source
	[ -f "$BUNDLE/rootfs/etc/resolv.conf" ] && [ ! -L "$BUNDLE/rootfs/etc/resolv.conf" ]
	[ -d "$BUNDLE/rootfs/new/vol" ] && [ -d "$BUNDLE/rootfs/scratch" ]
	# below a bind, in the bind's source, as create made it
	[ -d "$t/vol/sub" ]
	[ ! -e "$BUNDLE/rootfs/new/vol/sub" ]
	# nothing below the tmpfs: CRIU brought back its content
	[ ! -e "$BUNDLE/rootfs/scratch/file" ]
	run tern exec "$ID" cat /etc/resolv.conf /scratch/file
	[ "$output" = "nameserver-$MARK"$'\n'"nameserver-$MARK" ]
	tern exec "$ID" sh -c "echo in-sub > /new/vol/sub/x"
	[ "$(cat "$t/sub/x")" = in-sub ]
}

@test "checkpoint: restore makes a mount point through the image's symlinks inside the rootfs, never on the host" {
	local t=$BATS_TEST_TMPDIR
	mkdir -p "$t/vol"
	update_config '.mounts += [{"destination": "/new/vol", "type": "bind", "source": "'"$t"'/vol", "options": ["rbind"]}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	fresh_rootfs
	# a hostile image: /new leads far above the rootfs, to a host path
	ln -s "../../../../../../../../../..$t/outside" "$BUNDLE/rootfs/new"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	echo "$output"
	# inside the rootfs, ".." stops at its root
	[ -d "$BUNDLE/rootfs$t/outside/vol" ]
	[ ! -e "$t/outside" ]
	# criu itself follows the symlink out of the rootfs and finds nothing
	# there: the restore fails, and leaves nothing behind
	check_fails_cleanly "criu restore failed"
}

@test "checkpoint: restore with a bind source that is gone fails cleanly, before touching the rootfs" {
	mkdir -p "$BATS_TEST_TMPDIR/vol" "$BATS_TEST_TMPDIR/vol2"
	update_config '.mounts += [{"destination": "/new/one", "type": "bind", "source": "'"$BATS_TEST_TMPDIR"'/vol", "options": ["rbind"]},
		{"destination": "/new/two", "type": "bind", "source": "'"$BATS_TEST_TMPDIR"'/vol2", "options": ["rbind"]}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	fresh_rootfs
	rmdir "$BATS_TEST_TMPDIR/vol2"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "$BATS_TEST_TMPDIR/vol2" "/new/two" "No such file or directory"
	[ ! -e "$BUNDLE/rootfs/new" ]
}

# kdat_stamp: the boot id tern stamped on criu's kernel-probe cache, if any.
kdat_stamp() {
	getfattr --only-values -n trusted.tern.boot_id /run/criu.kdat 2>/dev/null
}

# bats test_tags=vm:v2
@test "checkpoint: criu's kernel probes are cached for this boot, also where /run is no tmpfs" {
	local mounts_before
	mounts_before=$(awk '$5 == "/run"' /proc/self/mountinfo)
	set_cmd "sleep $MARK"
	start_detached "$ID"
	# criu's own file (a tmpfs /run) or tern's: made again by the next run
	rm -f /run/criu.kdat
	tern checkpoint --leave-running --image-path "$IMG" "$ID"
	tern checkpoint --leave-running --image-path "$IMG.2" "$ID"
	grep -q 'Loaded kdat cache from /run/criu.kdat' "$IMG.2/dump.log"
	if [ "$(stat -f -c %T /run)" != tmpfs ]; then
		echo "/run is not a tmpfs here: tern makes the cache"
		[ "$(kdat_stamp)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
		# made before the first checkpoint's criu started
		grep -q 'Loaded kdat cache from /run/criu.kdat' "$IMG/dump.log"
	fi
	# the private tmpfs that made it is nowhere on the host
	[ "$(awk '$5 == "/run"' /proc/self/mountinfo)" = "$mounts_before" ]
	! ls /run/criu.kdat.tern-* 2>/dev/null
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# bats test_tags=vm:v2
@test "checkpoint: a kernel-probe cache of another boot is made anew (left to criu on a tmpfs /run)" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --leave-running --image-path "$IMG" "$ID"
	[ -s /run/criu.kdat ]
	setfattr -n trusted.tern.boot_id -v not-this-boot /run/criu.kdat
	tern checkpoint --leave-running --image-path "$IMG.2" "$ID"
	grep -q 'Loaded kdat cache from /run/criu.kdat' "$IMG.2/dump.log"
	if [ "$(stat -f -c %T /run)" != tmpfs ]; then
		[ "$(kdat_stamp)" = "$(cat /proc/sys/kernel/random/boot_id)" ]
	else
		echo "/run is a tmpfs here: criu's own cache, which tern leaves alone"
		[ "$(kdat_stamp)" = not-this-boot ]
	fi
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# bats test_tags=vm:v2
@test "checkpoint: the masked directories' empty tmpfs stays out of the images and comes back empty and read-only" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	local info masks tmpfs_kept dev
	info=/proc/$(state_field "$ID" pid)/mountinfo
	masks=$(awk '$5 == "/sys/firmware" {print $3}' "$info")
	# the other tmpfs, one archive each; not the rootfs (a tmpfs in the
	# qemu guest), which criu takes as it is, nor the empty /dev/shm, nor
	# the trees of /dev and cgroup v1's /sys/fs/cgroup (other tests)
	# (nor the binds of /dev/null that mask files: /dev's device)
	dev=$(awk '$5 == "/dev" {print $3}' "$info")
	tmpfs_kept=$(awk -v m="$masks" -v d="$dev" '$(NF - 2) == "tmpfs" && $3 != m && $3 != d && $5 != "/" && $5 != "/dev/shm" && $5 != "/sys/fs/cgroup" {print $3}' "$info" | sort -u | wc -l)
	tern checkpoint --image-path "$IMG" "$ID"
	[ ! -d /proc/acpi ] || grep -qx 'masked /proc/acpi' "$IMG/tern-checkpoint.txt"
	grep -qx 'masked /sys/firmware' "$IMG/tern-checkpoint.txt"
	[ "$(ls "$IMG" | grep -c '^tmpfs-dev-.*\.tar\.gz\.img$')" -eq "$tmpfs_kept" ]
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	local pid
	pid=$(state_field "$ID" pid)
	# one empty read-only tmpfs on both, as a new container has
	[ "$(awk '$5 == "/proc/acpi" || $5 == "/sys/firmware" {print $3, $4, $(NF - 2), substr($6, 1, 3)}' "/proc/$pid/mountinfo" | sort -u | wc -l)" -eq 1 ]
	awk '$5 == "/sys/firmware" {print $4, $(NF - 2), $6}' "/proc/$pid/mountinfo" | grep -q '^/ tmpfs ro,'
	[ -z "$(ls -A "/proc/$pid/root/sys/firmware")" ]
	run in_ct "$ID" 'touch /sys/firmware/x'
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: a masked directory the container remounted and wrote in is saved by criu and restored with what it holds" {
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"] | .value |= unique)'
	set_cmd "mount -o remount,rw /sys/firmware && echo kept >/sys/firmware/f && touch /tmp/ready && sleep $MARK"
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/ready"
	tern checkpoint --image-path "$IMG" "$ID"
	# the tmpfs is shared, so every masked directory holds the file too:
	# none is left out
	! grep -q '^masked ' "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run in_ct "$ID" 'cat /sys/firmware/f'
	[ "$status" -eq 0 ]
	[ "$output" = kept ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: config.json's empty tmpfs (/dev/shm) stays out of the images and comes back as the config says, writable" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	local minor
	minor=$(awk '$5 == "/dev/shm" {split($3, d, ":"); print d[2]}' "/proc/$(state_field "$ID" pid)/mountinfo")
	[ -n "$minor" ]
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs /dev/shm' "$IMG/tern-checkpoint.txt"
	# criu archived no tmpfs of this container (its archives are named by
	# the device: 0:N is N); /dev is a tree of tern's
	grep -q '^tmpfs-tree /dev ' "$IMG/tern-checkpoint.txt"
	! ls "$IMG" | grep -q '^tmpfs-dev-.*\.tar\.gz\.img$' || false
	[ ! -e "$IMG/tmpfs-dev-$minor.tar.gz.img" ]
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	local pid
	pid=$(state_field "$ID" pid)
	# a tmpfs of its own at its root, with the config's options
	awk '$5 == "/dev/shm" {print $4, $6, $(NF - 2), $NF}' "/proc/$pid/mountinfo" |
		grep -E '^/ rw,nosuid,nodev,noexec[^ ]* tmpfs rw,size=65536k'
	[ "$(stat -c %a "/proc/$pid/root/dev/shm")" = 1777 ]
	run in_ct "$ID" 'echo hi >/dev/shm/x && cat /dev/shm/x'
	[ "$status" -eq 0 ]
	[ "$output" = hi ]
	# nothing of ours is left in the state directory
	! ls -d "$ROOT/$ID/empty-tmpfs-"* 2>/dev/null || false
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: restoring an empty /dev/shm left out of the images into a config.json without that tmpfs fails naming it and leaves nothing" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs /dev/shm' "$IMG/tern-checkpoint.txt"
	update_config 'del(.mounts[] | select(.destination == "/dev/shm"))'
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "/dev/shm" "no tmpfs mount in config.json"
}

# bats test_tags=vm:v2
@test "checkpoint: cgroup v1's /sys/fs/cgroup tmpfs travels as its tree, not an archive, and comes back with the same hierarchies, read-only" {
	set_cmd "sleep $MARK"
	start_detached "$ID"
	local pid info
	pid=$(state_field "$ID" pid)
	info=/proc/$pid/mountinfo
	if [ "$(awk '$5 == "/sys/fs/cgroup" {print $(NF - 2)}' "$info")" != tmpfs ]; then
		# cgroup v2 (the qemu guest): a cgroup2 mount, no tree of ours
		tern checkpoint --image-path "$IMG" "$ID"
		! grep -q '^tmpfs-tree /sys/fs/cgroup ' "$IMG/tern-checkpoint.txt" || false
		return 0
	fi
	local before minor
	before=$(ls -l "/proc/$pid/root/sys/fs/cgroup" | awk 'NR > 1 {print $1, $9, $10, $11}')
	minor=$(awk '$5 == "/sys/fs/cgroup" {split($3, d, ":"); print d[2]}' "$info")
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs-tree /sys/fs/cgroup 755 0 0 1' "$IMG/tern-checkpoint.txt"
	[ "$(grep -c '^tmpfs-dir /sys/fs/cgroup ' "$IMG/tern-checkpoint.txt")" -ge 1 ]
	[ ! -e "$IMG/tmpfs-dev-$minor.tar.gz.img" ]
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	[ "$(ls -l "/proc/$pid/root/sys/fs/cgroup" | awk 'NR > 1 {print $1, $9, $10, $11}')" = "$before" ]
	awk '$5 == "/sys/fs/cgroup" {print $4, $6, $(NF - 2)}' "/proc/$pid/mountinfo" | grep -q '^/ ro,nosuid,nodev,noexec[^ ]* tmpfs$'
	# the hierarchies criu mounted on it: the container's own cgroup
	run in_ct "$ID" 'cat /sys/fs/cgroup/pids/pids.max; touch /sys/fs/cgroup/x'
	[[ "$output" == max* ]]
	[[ "$output" == *"Read-only file system"* ]]
	! ls -d "$ROOT/$ID/tmpfs-tree-"* 2>/dev/null || false
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# dev_listing PID: /dev of the container whose init is PID, an entry a
# line: type and mode, owner, device numbers or link target, name
dev_listing() {
	find "/proc/$1/root/dev/" -mindepth 1 -maxdepth 1 -printf '%M %u:%g %l %f\n' | sort
	stat -c '%F %t:%T %n' "/proc/$1/root/dev/"* | sed "s|/proc/$1/root||" | sort
}

# bats test_tags=vm:v2
@test "checkpoint: /dev travels as its tree, not an archive, and comes back with the same nodes, links, mounts and options" {
	update_config '.linux.devices = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229, "fileMode": 432, "uid": 1, "gid": 2}, {"path": "/dev/myfifo", "type": "p", "fileMode": 384}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	local pid before opts minor
	pid=$(state_field "$ID" pid)
	before=$(dev_listing "$pid")
	opts=$(awk '$5 == "/dev" {print $4, $6, $(NF - 2), $NF}' "/proc/$pid/mountinfo")
	minor=$(awk '$5 == "/dev" {split($3, d, ":"); print d[2]}' "/proc/$pid/mountinfo")
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs-tree /dev 755 0 0 0' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-node /dev null 666 0 0 c 1 3' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-node /dev fuse 660 1 2 c 10 229' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-node /dev myfifo 600 0 0 p 0 0' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-link /dev ptmx pts/ptmx' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-dir /dev pts 755 0 0' "$IMG/tern-checkpoint.txt"
	# criu archived no /dev
	[ ! -e "$IMG/tmpfs-dev-$minor.tar.gz.img" ]
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	[ "$(dev_listing "$pid")" = "$before" ]
	[ "$(awk '$5 == "/dev" {print $4, $6, $(NF - 2), $NF}' "/proc/$pid/mountinfo")" = "$opts" ]
	run in_ct "$ID" 'echo x >/dev/null && head -c 3 /dev/zero | wc -c && ls /dev/pts/ && ls /dev/fd/ >/dev/null && echo ok'
	[ "$status" -eq 0 ]
	[[ "$output" == 3*ptmx*ok ]]
	# and again, from the restored one
	rm -rf "$IMG"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs-tree /dev 755 0 0 0' "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	[ "$(dev_listing "$pid")" = "$before" ]
	! ls -d "$ROOT/$ID/tmpfs-tree-"* 2>/dev/null || false
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: a /dev the container wrote a file in, or made a node in, is saved by criu with what it holds" {
	update_config '.process.capabilities |= with_entries(.value += ["CAP_MKNOD"])'
	set_cmd "echo kept >/dev/f && mknod /dev/extra c 1 3 && touch /tmp/ready && sleep $MARK"
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/ready"
	tern checkpoint --image-path "$IMG" "$ID"
	! grep -q '^tmpfs-tree /dev ' "$IMG/tern-checkpoint.txt" || false
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run in_ct "$ID" 'cat /dev/f; stat -c "%F %t:%T" /dev/extra'
	[ "$status" -eq 0 ]
	[ "$output" = "kept
character special file 1:3" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: restore makes no device node the new config.json does not make (a node edited into the descriptor, or a device taken out of the config)" {
	update_config '.linux.devices = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'tmpfs-node /dev fuse 666 0 0 c 10 229' "$IMG/tern-checkpoint.txt"
	cp "$IMG/tern-checkpoint.txt" "$BATS_TEST_TMPDIR/desc"
	# the host's kernel log, under the name of a device the config makes
	sed -i 's|^tmpfs-node /dev null 666 0 0 c 1 3$|tmpfs-node /dev null 666 0 0 c 1 11|' "$IMG/tern-checkpoint.txt"
	grep -qx 'tmpfs-node /dev null 666 0 0 c 1 11' "$IMG/tern-checkpoint.txt"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "/dev/null" "(c 1:11) is not one config.json makes"
	# the descriptor as dumped, but the config no longer gives /dev/fuse
	cp "$BATS_TEST_TMPDIR/desc" "$IMG/tern-checkpoint.txt"
	update_config '.linux.devices = []'
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "/dev/fuse" "is not one config.json makes"
}

@test "checkpoint: a /dev/shm the container wrote in is saved by criu and restored with what it holds" {
	set_cmd "echo kept >/dev/shm/f && touch /tmp/ready && sleep $MARK"
	start_detached "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/ready"
	tern checkpoint --image-path "$IMG" "$ID"
	! grep -q '^tmpfs ' "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run in_ct "$ID" 'cat /dev/shm/f'
	[ "$status" -eq 0 ]
	[ "$output" = kept ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# userns_bundle: a user namespace whose ids are the host's (0-65535): its
# devices are binds of the host's. (With root mapped elsewhere criu's
# restore cannot open its images from inside the namespace: not handled
# yet.)
userns_bundle() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]'
}

@test "checkpoint: a container with a user namespace, its devices bound from the host, comes back with them" {
	userns_bundle
	set_cmd "$(counter count)"
	start_detached "$ID"
	wait_count_above "$BUNDLE/rootfs/tmp/count" 0
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'devbind /dev/null /null' "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$a"
	run in_ct "$ID" 'echo x >/dev/null && head -c 5 /dev/zero | wc -c && wc -c </proc/timer_list && stat -c "%t:%T" /dev/null /dev/tty'
	[ "$status" -eq 0 ]
	[ "$output" = "5
0
1:3
5:0" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint: restore binds no host device the new config does not give (a device bind edited in the descriptor)" {
	[ -c /dev/kmsg ] || skip "LOUD: this host has no /dev/kmsg to refuse"
	userns_bundle
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	sed -i 's|^devbind /dev/null /null$|devbind /dev/null /kmsg|' "$IMG/tern-checkpoint.txt"
	grep -qx 'devbind /dev/null /kmsg' "$IMG/tern-checkpoint.txt"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"binds \`/dev/kmsg\` at \`/dev/null\`: not a device the new config.json gives the container"* ]]
	check_nothing_left "$ID"
}

@test "checkpoint: a host device bound by config.json stays the config's bind (its source on restore)" {
	touch "$BUNDLE/rootfs/hostnull"
	update_config '.mounts += [{"destination": "/hostnull", "type": "bind", "source": "/dev/null", "options": ["bind"]}]'
	set_cmd "sleep $MARK"
	start_detached "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	grep -qx 'mount /hostnull' "$IMG/tern-checkpoint.txt"
	! grep -q '^devbind /hostnull ' "$IMG/tern-checkpoint.txt"
	tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	run in_ct "$ID" 'echo x >/hostnull && stat -c "%t:%T" /hostnull'
	[ "$status" -eq 0 ]
	[ "$output" = "1:3" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
