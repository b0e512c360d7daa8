# Helpers for migrate.bats (and the pre-copy test in the qemu guest): two
# "nodes" on one machine, network namespaces $NA and $NB joined by a veth
# pair (10.231.0.1 and 10.231.0.2), each with its own --root ($ROOT, $RB)
# and bundle ($BUNDLE, $BUNDLE_B). The nodes are entered with `nsenter
# --net` rather than `ip netns exec`, which remounts /sys and so hides the
# cgroup hierarchies from tern. Both nodes share this machine's cgroupfs,
# so the target's bundle gets a cgroupsPath of its own ($ID-b).

# The setup and teardown of every migrate*.bats (a file that needs more
# defines its own and calls these).
setup() {
	if is_runc; then
		skip "tern migrate is tern's own"
	fi
	migrate_setup
}

teardown() {
	migrate_teardown
}

migrate_setup() {
	setup_bundle
	N=$$-${BATS_SUITE_TEST_NUMBER:-0}
	NA=tmigA-$N
	NB=tmigB-$N
	VETH=tmv$$${BATS_SUITE_TEST_NUMBER:-0}
	VETH=${VETH:0:13}
	ip netns add "$NA"
	ip netns add "$NB"
	ip link add "${VETH}a" type veth peer name "${VETH}b"
	ip link set "${VETH}a" netns "$NA"
	ip link set "${VETH}b" netns "$NB"
	ip -n "$NA" addr add 10.231.0.1/24 dev "${VETH}a"
	ip -n "$NB" addr add 10.231.0.2/24 dev "${VETH}b"
	for ns in "$NA" "$NB"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$NA" link set "${VETH}a" up
	ip -n "$NB" link set "${VETH}b" up
	RB=$BATS_TEST_TMPDIR/nodeB/state
	BUNDLE_B=$BATS_TEST_TMPDIR/nodeB/bundle
	mkdir -p "$RB"
	TOKEN=$BATS_TEST_TMPDIR/token
	head -c 32 /dev/urandom | base64 >"$TOKEN"
	chmod 600 "$TOKEN"
	PORT=$((20000 + RANDOM % 20000))
	cd "$BATS_TEST_TMPDIR"
}

migrate_teardown() {
	# background migrations of this test: their arguments hold its dir;
	# a criu action script held by a failed test (see hold_dump): its criu
	# gives up once it dies
	pkill -9 -f -- "--token-file $BATS_TEST_TMPDIR/" 2>/dev/null
	pkill -9 -f -- "$BATS_TEST_TMPDIR/hold" 2>/dev/null
	# idle connections of hold_connection
	if [ -s "$BATS_TEST_TMPDIR/held.pids" ]; then
		kill -9 $(cat "$BATS_TEST_TMPDIR/held.pids") 2>/dev/null
	fi
	if [ -d "${RB:-/nonexistent}" ]; then
		for id in $(timeout -s KILL 10 "$TERN_BIN" --root "$RB" list -q 2>/dev/null); do
			timeout -s KILL 10 "$TERN_BIN" --root "$RB" delete --force "$id" >/dev/null 2>&1
		done
	fi
	teardown_bundle
	[ -n "${NA:-}" ] && ip netns del "$NA" 2>/dev/null
	[ -n "${NB:-}" ] && ip netns del "$NB" 2>/dev/null
	if [ -n "${PIPE_MAX_WAS:-}" ]; then
		echo "$PIPE_MAX_WAS" >/proc/sys/fs/pipe-max-size
	fi
	return 0
}

# on NODE CMD...: run CMD in node A or B's network namespace.
on() {
	local ns=$NA
	[ "$1" = B ] && ns=$NB
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

# tern_b ARG...: tern on node B.
tern_b() {
	in_file "$TERN_BIN" --root "$RB" "$@"
}

# start_source: node B's bundle is a copy of the bundle as it is now (the
# image both nodes have), then the container starts on node A with its
# stdio on /dev/null.
start_source() {
	mkdir -p "$BUNDLE_B"
	cp -a "$BUNDLE/rootfs" "$BUNDLE/config.json" "$BUNDLE_B/"
	update_config ".linux.cgroupsPath = \"/$ID-b\"" "$BUNDLE_B"
	on A "$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
	SRC_PID=$(state_field "$ID" pid)
	SRC_START=$(cut -d' ' -f22 "/proc/$SRC_PID/stat")
}

# receive [ARG...]: migrate-receive on node B in the background, JSON
# progress in recv.out, text errors in recv.err, exit status in recv.rc.
receive() {
	rm -f "$BATS_TEST_TMPDIR/recv.rc"
	(
		rc=0
		bounded on B "$TERN_BIN" --root "$RB" migrate-receive \
			--listen "10.231.0.2:$PORT" --bundle "$BUNDLE_B" --format json "$@" \
			</dev/null >"$BATS_TEST_TMPDIR/recv.out" 2>"$BATS_TEST_TMPDIR/recv.err" || rc=$?
		echo "$rc" >"$BATS_TEST_TMPDIR/recv.rc"
	) 3>&- &
	wait_until 10 grep -q '"event":"listening"' "$BATS_TEST_TMPDIR/recv.out" ||
		{ cat "$BATS_TEST_TMPDIR/recv.err"; return 1; }
}

# hold_connection: an idle TCP connection from node A to the receiver,
# which says nothing and stays open (a sleep that inherited the socket)
# until migrate_teardown kills it; its pid goes to held.pids once it is
# connected, and hold_connection returns then.
hold_connection() {
	local n
	n=$(held_count)
	on A bash -c 'exec 5<>"/dev/tcp/10.231.0.2/$1" && echo $$ >>"$2" && exec sleep 600' - \
		"$PORT" "$BATS_TEST_TMPDIR/held.pids" </dev/null >/dev/null 2>&1 3>&- &
	wait_until 10 held_above "$n"
}

# held_count: how many hold_connection connected; held_above N: more than N.
held_count() {
	cat "$BATS_TEST_TMPDIR/held.pids" 2>/dev/null | wc -l
}
held_above() {
	[ "$(held_count)" -gt "$1" ]
}

# scan_connection [TEXT]: connect to the receiver from node A, send TEXT
# (if any) and close, as a port scanner or a stray client would. (The
# receiver may reset the connection as soon as it has read the TEXT: a
# failed write after the connect is no failure here.)
scan_connection() {
	on A bash -c 'exec 5<>"/dev/tcp/10.231.0.2/$1" || exit 1; printf %s "$2" >&5 2>/dev/null; exit 0' \
		- "$PORT" "${1:-}" </dev/null 3>&-
}

# receive_status: wait for the receiver; its exit status (and its stderr
# shown on failure).
receive_status() {
	if [ -n "${MIGRATE_STALL:-}" ]; then
		wait_moving "$MIGRATE_STALL" test -s "$BATS_TEST_TMPDIR/recv.rc" || return 1
	else
		wait_until 150 test -s "$BATS_TEST_TMPDIR/recv.rc" || return 1
	fi
	cat "$BATS_TEST_TMPDIR/recv.err" >&2
	return "$(cat "$BATS_TEST_TMPDIR/recv.rc")"
}

# migrate ARG...: tern migrate of $ID on node A, bounded, as bats's `run`.
migrate() {
	run in_file bounded on A "$TERN_BIN" --root "$ROOT" migrate \
		--to "10.231.0.2:$PORT" "$@" "$ID"
}

# The bound of a migration (receive, migrate, receive_status): 150 s by
# default. A file whose migrations may take longer on a slow or loaded
# machine (the qemu guest's TCG CPU, at load 30) sets MIGRATE_STALL=SECS
# instead: a migration is then stopped only once it has moved nothing for
# SECS (progress_sig), however long it takes while it moves.

# progress_sig: a digest of what this test's migration has moved so far:
# the sizes of its outputs (the JSON events of both sides, in_file's
# files) and of its image directories on both nodes. Each round, each
# image sent and each event changes it; a stuck migration does not.
progress_sig() {
	{
		stat -c '%n %s' "$BATS_TEST_TMPDIR"/recv.out "$BATS_TEST_TMPDIR"/recv.err \
			"$BATS_TEST_TMPDIR"/out.* 2>/dev/null
		du -sb "$ROOT/$ID" "$RB/$ID" "$BUNDLE_B"/.tern-migrate-* 2>/dev/null
	} | md5sum
}

# wait_moving STALL CMD...: wait until CMD succeeds, for as long as the
# migration moves; fail once progress_sig has not changed for STALL s.
wait_moving() {
	local stall=$1 last sig since=$SECONDS
	shift
	last=$(progress_sig)
	until "$@" >/dev/null 2>&1; do
		sleep 0.5
		sig=$(progress_sig)
		if [ "$sig" != "$last" ]; then
			last=$sig
			since=$SECONDS
		elif ((SECONDS - since >= stall)); then
			echo "no progress for ${stall} s while waiting for: $*" >&2
			return 1
		fi
	done
}

# bounded CMD...: run CMD (a command or `on NODE ...`), killed with
# SIGKILL after 150 s, or with MIGRATE_STALL set once the migration has
# moved nothing for that long; CMD's exit status (137 when killed).
bounded() {
	if [ -z "${MIGRATE_STALL:-}" ]; then
		if [ "$1" = on ]; then
			on "$2" timeout -s KILL 150 "${@:3}"
		else
			timeout -s KILL 150 "$@"
		fi
		return
	fi
	local pid rc=0
	"$@" &
	pid=$!
	if ! wait_moving "$MIGRATE_STALL" process_gone "$pid"; then
		echo "killed, no progress for $MIGRATE_STALL s: $*" >&2
		# `on` runs in a subshell: its nsenter is the command
		pkill -9 -P "$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" || rc=$?
	return $rc
}

# source_gone: the source container and everything it had on node A is
# gone (state, its init, its mounts, its cgroup directories).
source_gone() {
	run tern state "$ID"
	[ "$status" -ne 0 ] || { echo "source still there: $output" >&2; return 1; }
	[ ! -e "$ROOT/$ID" ] || { echo "leftover $ROOT/$ID" >&2; return 1; }
	# (its pid may have been given to another process since; a zombie is
	# dead, waiting for this machine's PID 1 to reap it)
	local stat
	stat=$(cat "/proc/$SRC_PID/stat" 2>/dev/null || true)
	if [ "$(echo "$stat" | cut -d' ' -f22)" = "$SRC_START" ] &&
		[ "$(echo "$stat" | cut -d' ' -f3)" != Z ]; then
		echo "source init $SRC_PID still runs" >&2
		return 1
	fi
	! grep -F "$BUNDLE/" /proc/self/mountinfo >&2 || return 1
	local cg
	cg=$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID" 2>/dev/null || true)
	[ -z "$cg" ] || { echo "leftover cgroups: $cg" >&2; return 1; }
}

# target_clean [ID]: node B has no container, no state, no image
# directory, no criu, no cgroup of the target.
target_clean() {
	local id=${1:-$ID}
	[ ! -e "$RB/$id" ] || { echo "leftover $RB/$id" >&2; return 1; }
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || { echo "leftover image dir" >&2; return 1; }
	! pgrep -f "$BUNDLE_B/" >&2 || { echo "leftover processes (above)" >&2; return 1; }
	! grep -F "$BUNDLE_B/" /proc/self/mountinfo >&2 || return 1
	local cg
	cg=$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$id-b" 2>/dev/null || true)
	[ -z "$cg" ] || { echo "leftover cgroups: $cg" >&2; return 1; }
}

# listening_b, connected_b: on node B, something listens on $PORT / a
# connection to it is established (for wait_until).
listening_b() {
	on B ss -Hltn "sport = :$PORT" | grep -q .
}
connected_b() {
	on B ss -Htn state established "sport = :$PORT" | grep -q .
}

# still_runs: the source container runs and its counter goes on.
still_runs() {
	[ "$(state_field "$ID" status)" = running ]
	local now
	now=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/count" "$now"
}

# kill_receiver: SIGKILL to migrate-receive itself (the oldest process with
# its command line: not its watchdog, restore or criu, which it forked).
kill_receiver() {
	pkill -9 -o -f -- "tern-migrate --root $RB migrate-receive"
}

# kill_source: SIGKILL to tern migrate itself.
kill_source() {
	pkill -9 -o -f -- "tern-migrate --root $ROOT migrate"
}

# hold_restore: the target's own config.json holds criu in the middle of
# the restore (a prestart hook, which runs once criu has set up the
# namespaces, criu waiting for it): it creates $HOLD.in, then waits for
# $HOLD.go. A kill at $HOLD.in lands during the restore, never after.
hold_restore() {
	HOLD=$BATS_TEST_TMPDIR/hold
	update_config ".hooks.prestart = [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\",
		\"touch $HOLD.in; while [ ! -e $HOLD.go ]; do sleep 0.05; done\"]}]" "$BUNDLE_B"
}

# hold_dump pre-dump|post-dump: the source's criu holds at the start of
# its dump (after the rootfs rounds, before any image) or at its end (the
# pages sent, criu yet to exit, so the images are not all there): a criu
# action script (named by the config file in CRIU_CONFIG_FILE, which criu
# reads when it serves tern too) creates $HOLD.in, then waits for $HOLD.go
# or for its criu to go. Run the tern migrate to hold with
# CRIU_CONFIG_FILE=$HOLD.conf.
hold_dump() {
	HOLD=$BATS_TEST_TMPDIR/hold
	cat >"$HOLD.sh" <<EOF
#!/bin/sh
[ "\$CRTOOLS_SCRIPT_ACTION" = $1 ] || exit 0
touch $HOLD.in
while [ ! -e $HOLD.go ] && kill -0 \$PPID 2>/dev/null; do sleep 0.05; done
EOF
	chmod 0755 "$HOLD.sh"
	echo "action-script $HOLD.sh" >"$HOLD.conf"
}

# kill_receiver_when_held: once the hold (hold_restore, hold_dump) is
# reached, kill -9 migrate-receive itself (not its watchdog), then
# release the hold once it is dead. Run it in the background.
kill_receiver_when_held() {
	local r
	exec 3>&-
	wait_until 60 test -e "$HOLD.in" &&
		r=$(pgrep -o -f -- "tern-migrate --root $RB migrate-receive") &&
		kill -9 "$r" &&
		wait_until 60 process_gone "$r"
	touch "$HOLD.go"
}

# no_process_like PATTERN: no live process has PATTERN in its command line.
no_process_like() {
	! pgrep -f -- "$1" >/dev/null
}

# process_gone PID: PID has exited (gone, or a zombie its parent has yet
# to reap).
process_gone() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 0
	[ "${st%% *}" = Z ]
}
