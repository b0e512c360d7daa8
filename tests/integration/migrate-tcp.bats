#!/usr/bin/env bats
# tern migrate --tcp-established: a TCP conversation survives the move.
#
# The topology (on top of migrate-helpers.bash's two nodes, A 10.231.0.1
# and B 10.231.0.2): the container has its own network namespace with a
# veth, eth0 10.231.9.2/24 inside, default route via 10.231.9.1, the outer
# end ($OUT) in node A with 10.231.9.1. The client runs in node A and talks
# from A's own address, 10.231.0.1: 10.231.9.1 moves to B with the
# container, so a client bound to it would get the answers on B.
#
# The move takes the container's namespace with it: criu recreates eth0
# (address, routes, the socket in repair mode) and the outer end appears in
# node B under the same name, with no address. The operator's part, done
# here once the migration returns: give B's end 10.231.9.1 and let B
# forward, and on A route 10.231.9.2 through B.

load helpers
load migrate-helpers

setup() {
	if is_runc; then
		skip "tern migrate is tern's own"
	fi
	migrate_setup
	OUT=${VETH}o
	CLIENT_PID=
}

teardown() {
	# the client (bash and its socat) runs in a session of its own
	[ -n "$CLIENT_PID" ] && kill -9 -- "-$CLIENT_PID" 2>/dev/null
	migrate_teardown
}

# in_ctr CMD...: CMD in the source container's network namespace.
in_ctr() {
	nsenter --net="/proc/$SRC_PID/ns/net" "$@"
}

# plumb_source: the container's veth, its address and route, on node A.
plumb_source() {
	on A ip link add "$OUT" type veth peer name eth0 netns "$SRC_PID"
	on A ip addr add 10.231.9.1/24 dev "$OUT"
	on A ip link set "$OUT" up
	in_ctr ip addr add 10.231.9.2/24 dev eth0
	in_ctr ip link set eth0 up
	in_ctr ip route add default via 10.231.9.1
}

# start_client: in node A, a client that sends "mN" every 10 ms and wants
# "N mN" back from tcpecho (which counts the lines in its memory): any
# other answer (a restarted server counts from 1 again), an EOF or an
# error stops it with the reason in client.err. client.n holds the last N
# answered (written whole, then renamed).
start_client() {
	cat >"$BATS_TEST_TMPDIR/client.sh" <<'EOF'
d=$1
coproc S { exec socat - TCP:10.231.9.2:5555,bind=10.231.0.1; }
i=0
while :; do
	i=$((i + 1))
	echo "m$i" >&"${S[1]}" || { echo "write failed at $i" >"$d/client.err"; exit 1; }
	read -r l <&"${S[0]}" || { echo "EOF or error at $i" >"$d/client.err"; exit 1; }
	[ "$l" = "$i m$i" ] || { echo "at $i the answer was '$l'" >"$d/client.err"; exit 1; }
	echo "$i" >"$d/client.n.tmp" && mv "$d/client.n.tmp" "$d/client.n"
	sleep 0.01
done
EOF
	setsid nsenter --net="/run/netns/$NA" bash "$BATS_TEST_TMPDIR/client.sh" "$BATS_TEST_TMPDIR" \
		</dev/null >/dev/null 2>"$BATS_TEST_TMPDIR/client.stderr" 3>&- &
	CLIENT_PID=$!
}

# client_above N: the client had an answer past N, and is still running.
client_above() {
	[ ! -e "$BATS_TEST_TMPDIR/client.err" ] || return 1
	[ -e "$BATS_TEST_TMPDIR/client.n" ] && [ "$(cat "$BATS_TEST_TMPDIR/client.n")" -gt "$1" ]
}

# start_conversation: the container (tcpecho and a counter) on node A,
# plumbed, and the client talking to it; CONN is its connection, SOCAT_PID
# the client's socat.
start_conversation() {
	set_cmd "/bin/tcpecho 5555 & $(counter_cmd /tmp/count)"
	start_source
	plumb_source
	wait_until 10 sh -c "nsenter --net=/proc/$SRC_PID/ns/net ss -Hltn 'sport = :5555' | grep -q ."
	start_client
	wait_until 10 client_above 20 || { cat client.err client.stderr; false; }
	CONN=$(client_conn)
	[[ "$CONN" == "10.231.0.1:"*" 10.231.9.2:5555" ]] || { echo "conn: $CONN"; false; }
	SOCAT_PID=$(pgrep -P "$CLIENT_PID" socat)
}

# no_lock PID: the network namespace of PID has no TERN-MIGRATE chain
# (the lock tern adds to a dumped source) in either family.
no_lock() {
	local r
	r=$(nsenter --net="/proc/$1/ns/net" iptables-save)$(nsenter --net="/proc/$1/ns/net" ip6tables-save)
	[[ "$r" != *TERN-MIGRATE* ]] || { echo "$r"; return 1; }
}

# client_conn: the client's connection as node A sees it (local and peer
# address and port), empty if it has none.
client_conn() {
	on A ss -Htn state established dst 10.231.9.2 | awk '{print $3, $4}'
}

# move_conversation ARG...: start_conversation, tern migrate
# --tcp-established ARG... to node B, the operator's re-plumbing there, and
# the checks that the same conversation goes on with the container on B.
move_conversation() {
	start_conversation
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --tcp-established --format json "$@"
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	source_gone
	# the outer end went with the source's namespace and came back on B.
	# The kernel frees the namespace in the background, within ms here;
	# a source connection closed for real behind the lock (no repair
	# mode, see src/linux/tcp-sockets.h) kept it about 100 s, failing this wait
	# about one run in four on a loaded machine.
	wait_until 60 sh -c "! nsenter --net=/run/netns/$NA ip link show $OUT 2>/dev/null"
	on B ip link show "$OUT"
	# while nothing routes the conversation, the client gets no answer:
	# its connection waits (retransmits), neither reset nor closed
	[ ! -e client.err ] || { cat client.err; false; }
	before=$(cat client.n)

	# the operator's part
	on B ip addr add 10.231.9.1/24 dev "$OUT"
	on B ip link set "$OUT" up
	on B sysctl -qw net.ipv4.ip_forward=1
	on A ip route add 10.231.9.2/32 via 10.231.0.2

	# the same client, over the same socket, gets the answers that follow
	wait_until 60 client_above $((before + 50)) || { cat client.err client.stderr; false; }
	[ "$(client_conn)" = "$CONN" ]
	[ "$(pgrep -P "$CLIENT_PID" socat)" = "$SOCAT_PID" ]
	# and it is the container on B that answers: its end is on B now,
	# without the lock that the source's namespace had at the end
	b_pid=$(tern_b state "$ID" | jq -r .pid)
	nsenter --net="/proc/$b_pid/ns/net" ss -Htn state established 'sport = :5555' | grep -q 10.231.0.1
	no_lock "$b_pid"
	# the rest of the container went on too
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	! ls -d "$BUNDLE_B"/.tern-migrate-* 2>/dev/null || false
}

@test "migrate --tcp-established: a conversation with a client on node A goes on over the same connection once the container runs on node B (stop-and-copy)" {
	move_conversation --mode stop-and-copy
}

@test "migrate --tcp-established: the same with the default mode (post-copy here)" {
	# criu's lazy page server needs 4 MiB pipes (no CAP_SYS_RESOURCE here)
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	move_conversation
	echo "$output" | grep '"event":"done"' | jq -e '.mode == "post-copy"'
}

@test "migrate --tcp-established: a migration that fails after the dump rolls back: the source's lock goes, the same conversation goes on on node A" {
	start_conversation
	# the receiver dies with kill -9 in the middle of its restore (see
	# hold_restore): the source was dumped (and its network locked) by
	# then, and has not read RUNNING; the receiver's watchdog undoes the
	# restore
	hold_restore
	receive --token-file "$TOKEN"
	kill_receiver_when_held &
	migrate --token-file "$TOKEN" --tcp-established --mode stop-and-copy --format json
	[ -e "$HOLD.in" ]
	[ "$status" -ne 0 ]
	echo "$output" | grep -q '"event":"rollback"' || { echo "$output"; false; }
	echo "$output" | grep -q '"phase":"dumped"' || { echo "$output"; false; }
	still_runs
	[ "$(state_field "$ID" pid)" = "$SRC_PID" ]
	no_lock "$SRC_PID"
	before=$(cat client.n)
	wait_until 60 client_above $((before + 50)) || { cat client.err client.stderr; false; }
	[ "$(client_conn)" = "$CONN" ]
	[ "$(pgrep -P "$CLIENT_PID" socat)" = "$SOCAT_PID" ]
}
