# Helpers for snapshot.bats and snapshot-warm.bats: the setup, a counter
# that logs every number it reaches, and what waits on it.

setup() {
	if is_runc; then
		skip "snapshot and rollback are tern's own"
	fi
	setup_bundle
	STORE=$ROOT/@snapshots/$ID
}

teardown() {
	teardown_bundle
}

# log_cmd FILE: a shell loop (for set_cmd) that appends the next number to
# FILE every 0.05 s, and keeps the latest in FILE.n (renamed into place).
log_cmd() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i >> $1; echo \$i > $1.tmp; mv $1.tmp $1.n; sleep 0.05; done"
}

# lines_at_least FILE N: FILE has at least N complete lines.
lines_at_least() {
	[ "$(tr -cd '\n' <"$1" 2>/dev/null | wc -c)" -ge "$2" ]
}

# start_counter: the container appends 1, 2, 3... to /tmp/log.
start_counter() {
	set_cmd "$(log_cmd /tmp/log)"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
}

# start_marked_counter: a counter with a 256 MiB memory limit whose shell
# also prints out-N to its stdout, the file $OUT; its network namespace
# gets 10.99.0.1 on lo, to be found again. Sets OUT, PID (the init),
# NET_INO (its network namespace) and MEM_CG (its memory cgroup).
start_marked_counter() {
	update_config '.linux.resources.memory.limit = 268435456'
	set_cmd "$(log_cmd /tmp/log) & while :; do echo out-\$(cat /tmp/log.n 2>/dev/null); sleep 0.05; done"
	OUT=$BATS_TEST_TMPDIR/stdout
	"$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >"$OUT" 2>&1
	wait_status "$ID" running
	wait_until 10 has_lines_matching "$OUT" out- 3
	PID=$(state_field "$ID" pid)
	NET_INO=$(stat -L -c %i "/proc/$PID/ns/net")
	nsenter --net="/proc/$PID/ns/net" ip addr add 10.99.0.1/32 dev lo
	MEM_CG=$(host_cgroup_dir "$PID" memory)
}

# start_memhash MIB: the container holds MIB MiB of pseudo-random memory
# (tests/helpers/memhash.c) and sleeps; FIRST is the hash it wrote.
start_memhash() {
	set_cmd "/bin/memhash $1 /tmp/hash & sleep $MARK"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	FIRST=$(cut -d' ' -f2 "$BUNDLE/rootfs/tmp/hash")
}

# delete_clones_then_source CLONE-ID...: each clone is deleted with its
# state, bundle and overlay, then $ID, and nothing of any is left.
delete_clones_then_source() {
	local c
	for c in "$@"; do
		tern delete --force "$c"
		[ ! -e "$ROOT/$c" ]
		[ ! -e "$ROOT/@clones/$c.bundle" ]
	done
	! grep -F "$ROOT/@clones" /proc/self/mountinfo || false
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# clone_rootfs NEW-ID: where a clone's rootfs is (its default bundle).
clone_rootfs() {
	echo "$ROOT/@clones/$1.bundle/rootfs"
}

# memhash_pid ID: the host pid of the memhash in container ID.
memhash_pid() {
	pgrep -P "$(state_field "$1" pid)" -x memhash
}

# signal_memhash ID SIGNAL WANT: memhash in ID answers SIGNAL with a line
# starting with WANT ("again", "new") in its /tmp/hash; prints the line.
signal_memhash() {
	local h
	h="$(clone_rootfs "$1")/tmp/hash"
	rm -f "$h"
	kill "-$2" "$(memhash_pid "$1")"
	wait_until 60 grep -q "^$3 " "$h"
	cat "$h"
}

# cgroup_is_frozen DIR: the cgroup (v1 freezer or v2) is frozen.
cgroup_is_frozen() {
	if [ -e "$1/freezer.state" ]; then
		[ "$(cat "$1/freezer.state")" = FROZEN ]
	else
		grep -qx 'frozen 1' "$1/cgroup.events"
	fi
}
