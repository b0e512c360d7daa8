#!/usr/bin/env bats
# tern rollback of a container with a user namespace of its own (root is
# host uid 100000) and a network namespace of its own: criu makes the user
# namespace anew, restores the network namespace from the snapshot's
# images, and the live veth's inner end is moved in (snapshot-rollback.c).

load helpers
load snapshot-helpers

setup() {
	if is_runc; then
		skip "snapshot and rollback are tern's own"
	fi
	setup_bundle
	STORE=$ROOT/@snapshots/$ID
	# host network devices of this test: short, unique names
	P=nu$((RANDOM % 10000))x$$
	P=${P:0:9}
	LINKS=""
	export P
}

teardown() {
	teardown_bundle
	local l
	for l in $LINKS; do
		ip link del "$l" 2>/dev/null
	done
	return 0
}


# run_ct: $ID runs detached, its stdin /dev/null and its stdout and
# stderr the file $OUT, which the container's root (host 100000) owns:
# criu reopens a file there as that root (a root-only file is refused, see
# the last test).
run_ct() {
	OUT=$BATS_TEST_TMPDIR/out
	touch "$OUT"
	chown 100000:100000 "$OUT"
	"$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >"$OUT" 2>&1 3>&-
	wait_status "$ID" running
}

# veth_to PID OUTER INNER-ADDR: a veth from the host (OUTER) into PID's
# network namespace (eth0 there, INNER-ADDR/24, up).
veth_to() {
	ip link add "$2" type veth peer name eth0 netns "$1"
	LINKS="$LINKS $2"
	nsenter --net="/proc/$1/ns/net" ip addr add "$3/24" dev eth0
	nsenter --net="/proc/$1/ns/net" ip link set eth0 up
}

# answers ADDR: the container's server on ADDR:8080 answers with its
# hostname.
answers() {
	[ "$(busybox nc -w 2 "$1" 8080 </dev/null)" = tern ]
}

# start_log_and_server: the counter of snapshot-helpers (/tmp/log) and a
# TCP server on port 8080 that answers every connection with the hostname.
start_log_and_server() {
	set_cmd "$(log_cmd /tmp/log) & nc -ll -p 8080 -e /bin/hostname"
	run_ct
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
}

# warm_of NAME: the state of the warm spare of NAME (building, ready,
# failed, none); warm_built NAME: it is no longer building.
warm_of() {
	tern snapshot --list --format json "$ID" |
		jq -r --arg n "$1" '.[] | select(.name == $n) | .warm // "none"'
}

warm_built() {
	[ "$(warm_of "$1")" != building ]
}

# rolled_back_to S: the log is the snapshot's S lines, then the restored
# loop goes on with S+1... (a restart would write 1).
rolled_back_to() {
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $(($1 + 3))
	head -n $(($1 + 3)) "$BUNDLE/rootfs/tmp/log" | diff <(seq 1 $(($1 + 3))) -
}

# bats test_tags=vm:v2
@test "snapshot-userns: root mapped to host 100000: rollback puts memory and files back, twice, in the same user namespace mapping" {
	userns_rootfs
	set_cmd "$(log_cmd /tmp/log) & echo before > /tmp/kept; echo on-stdout; sleep $MARK"
	run_ct
	wait_until 10 grep -q on-stdout "$OUT"
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# the network namespace is in the images (nothing left out, nothing joined)
	grep -qx "netns-fresh 0" "$STORE/s1/images/tern-checkpoint.txt"
	grep -qx "netns-external 0" "$STORE/s1/images/tern-checkpoint.txt"
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	echo after >"$BUNDLE/rootfs/tmp/new"
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	local pid
	pid=$(state_field "$ID" pid)
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" != "$pid" ]
	rolled_back_to "$s"
	[ ! -e "$BUNDLE/rootfs/tmp/new" ]
	[ "$(cat "$BUNDLE/rootfs/tmp/kept")" = before ]
	pid=$(state_field "$ID" pid)
	# still root as host 100000, in a user namespace of its own
	[ "$(tr -s ' ' <"/proc/$pid/uid_map" | sed 's/^ //')" = "0 100000 65536" ]
	[ "$(stat -L -c %i "/proc/$pid/ns/user")" != "$(stat -L -c %i /proc/self/ns/user)" ]
	# the restored network namespace is its new user namespace's
	run nsenter --net="/proc/$pid/ns/net" --user="/proc/$pid/ns/user" ip link set lo up
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# and again, from the state the first rollback made
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	rolled_back_to "$s"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "snapshot-userns: a veth to the host keeps its outer end, address, MTU and bridge; the inner address and a listening socket come back" {
	userns_rootfs
	start_log_and_server
	local pid
	pid=$(state_field "$ID" pid)
	# one veth with an address on its outer end, one enslaved to a bridge
	veth_to "$pid" "${P}a" 10.231.81.2
	ip addr add 10.231.81.1/24 dev "${P}a"
	ip link set "${P}a" mtu 1400 up
	nsenter --net="/proc/$pid/ns/net" ip link add eth1 type veth peer name "${P}b" netns 1
	LINKS="$LINKS ${P}b"
	ip link add "${P}br" type bridge
	LINKS="$LINKS ${P}br"
	ip link set "${P}b" master "${P}br" up
	nsenter --net="/proc/$pid/ns/net" ip link set eth1 up
	ip link set "${P}br" up
	wait_until 10 answers 10.231.81.2
	local ifindex_a ifindex_b
	ifindex_a=$(cat "/sys/class/net/${P}a/ifindex")
	ifindex_b=$(cat "/sys/class/net/${P}b/ifindex")
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -qx "veth eth0 ${P}a" "$STORE/s1/images/tern-checkpoint.txt"
	grep -qx "veth eth1 ${P}b" "$STORE/s1/images/tern-checkpoint.txt"
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	rolled_back_to "$s"
	pid=$(state_field "$ID" pid)
	# the outer ends are the same devices, as they were
	[ "$(cat "/sys/class/net/${P}a/ifindex")" = "$ifindex_a" ]
	[ "$(cat "/sys/class/net/${P}b/ifindex")" = "$ifindex_b" ]
	ip -br addr show "${P}a" | grep -q "10.231.81.1/24"
	[ "$(cat "/sys/class/net/${P}a/mtu")" = 1400 ]
	[ "$(basename "$(readlink "/sys/class/net/${P}b/master")")" = "${P}br" ]
	# their peers are the restored namespace's eth0 and eth1
	nsenter --net="/proc/$pid/ns/net" ip -br addr show eth0 | grep -q "10.231.81.2/24"
	nsenter --net="/proc/$pid/ns/net" ip -br link show eth1 | grep -q UP
	nsenter --net="/proc/$pid/ns/net" ip -o link show eth0 | grep -q "eth0@if$ifindex_a:"
	nsenter --net="/proc/$pid/ns/net" ip -o link show eth1 | grep -q "eth1@if$ifindex_b:"
	# nothing of tern's left in the host's namespace
	! ip -br link | grep -q '^trb' || false
	# the restored server accepts again, twice (-ll)
	wait_until 10 answers 10.231.81.2
	answers 10.231.81.2
	# a second rollback hands the same devices on again
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(cat "/sys/class/net/${P}a/ifindex")" = "$ifindex_a" ]
	wait_until 10 answers 10.231.81.2
	tern delete --force "$ID"
	check_nothing_left "$ID"
	# the container's namespace took its veths with it
	wait_until 10 sh -c "! ip link show ${P}a"
}

@test "snapshot-userns: a restore that fails after the veth was handed over leaves no device behind; the container is stopped and says so" {
	userns_rootfs
	start_log_and_server
	local pid
	pid=$(state_field "$ID" pid)
	veth_to "$pid" "${P}a" 10.231.83.2
	ip link set "${P}a" up
	tern snapshot "$ID" s1
	rm "$STORE/s1/images/core-1.img"
	head -c 4096 /dev/urandom >"$STORE/s1/images/core-1.img"
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"its processes were killed: it has stopped"*"criu restore failed"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = stopped ]
	# the inner end tern moved out is gone, and its outer end with it, as
	# with the container's network namespace
	! ip -br link | grep -q '^trb' || false
	wait_until 10 sh -c "! ip link show ${P}a"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

# bats test_tags=vm:v2
@test "snapshot-userns: a warm spare (its own network namespace from the images) is swapped in; one with a veth to the host is refused and the rollback is cold" {
	userns_rootfs
	start_log_and_server
	local pid
	pid=$(state_field "$ID" pid)
	run tern snapshot --keep-warm "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local s
	s=$(wc -l <"$STORE/s1/tree/tmp/log")
	wait_until 60 warm_built s1
	[ "$(warm_of s1)" = ready ] || { cat "$STORE/.spare/error"; false; }
	# the spare listens on the port in a namespace of its own, apart
	wait_until 30 lines_at_least "$BUNDLE/rootfs/tmp/log" $((s + 10))
	run tern rollback --format json "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm == true'
	rolled_back_to "$s"
	pid=$(state_field "$ID" pid)
	[ "$(tr -s ' ' <"/proc/$pid/uid_map" | sed 's/^ //')" = "0 100000 65536" ]
	# the swapped-in server accepts in its namespace
	wait_until 10 sh -c "[ \"\$(nsenter --net=/proc/$pid/ns/net busybox nc -w 2 127.0.0.1 8080 </dev/null)\" = tern ]"
	# with a veth to the host, no spare: the rollback hands the veth over cold
	veth_to "$pid" "${P}a" 10.231.82.2
	ip addr add 10.231.82.1/24 dev "${P}a"
	ip link set "${P}a" up
	run tern snapshot --keep-warm "$ID" s2
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 warm_built s2
	[ "$(warm_of s2)" = failed ]
	grep -q "veth to the host (\`${P}a\`)" "$STORE/.spare/error"
	run tern rollback --format json "$ID" s2
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm != true'
	wait_until 10 answers 10.231.82.2
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "snapshot-userns: an idmapped mount stays idmapped across a rollback, cold and warm" {
	# runc 1.1.5 lacks this
	userns_rootfs
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	chown 1000:1000 "$src"
	make_traversable "$BATS_TEST_TMPDIR"
	update_config ".mounts += [{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"$src\",
		\"options\": [\"bind\", \"idmap\"],
		\"uidMappings\": [{\"containerID\": 1000, \"hostID\": 100000, \"size\": 1}],
		\"gidMappings\": [{\"containerID\": 1000, \"hostID\": 100000, \"size\": 1}]}]"
	set_cmd "$(log_cmd /data/log)"
	run_ct
	wait_until 10 lines_at_least "$src/log" 3
	# written through the mapping: the host's 1000
	[ "$(stat -c %u:%g "$src/log")" = 1000:1000 ]
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid c
	pid=$(state_field "$ID" pid)
	run tern rollback "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" != "$pid" ]
	# still writing through the mapping (a plain bind would be EACCES)
	c=$(cat "$src/log.n")
	wait_until 10 count_above "$src/log.n" "$c"
	[ "$(stat -c %u:%g "$src/log.n")" = 1000:1000 ]
	pid=$(state_field "$ID" pid)
	grep -q " /data .*idmapped" "/proc/$pid/mountinfo"
	# warm: a spare is made and swapped in, the mount idmapped in it too
	run tern snapshot --keep-warm "$ID" s2
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 warm_built s2
	[ "$(warm_of s2)" = ready ] || { cat "$STORE/.spare/error"; false; }
	run tern rollback --format json "$ID" s2
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	echo "$output" | jq -e '.warm == true'
	pid=$(state_field "$ID" pid)
	grep -q " /data .*idmapped" "/proc/$pid/mountinfo"
	c=$(cat "$src/log.n")
	wait_until 10 count_above "$src/log.n" "$c"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "snapshot-userns: a network namespace joined by path is refused before anything is touched" {
	userns_rootfs
	NETNS=$P
	ip netns add "$NETNS"
	add_namespace network "/run/netns/$NETNS"
	set_cmd "$(log_cmd /tmp/log)"
	run_ct
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" 3
	local pid
	pid=$(state_field "$ID" pid)
	# criu cannot dump it (the namespace is not the user namespace's)
	run tern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	# nor restore into it: said from the config, whatever snapshot is named
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"user namespace of its own"*"/run/netns/$NETNS"*"by path"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	local c
	c=$(cat "$BUNDLE/rootfs/tmp/log.n")
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/log.n" "$c"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "snapshot-userns: stdout to a file the container's root may not open is refused before anything is touched" {
	userns_rootfs
	start_counter # (tern run's stdout: a root-only 0600 file of the test's)
	run tern snapshot "$ID" s1
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid
	pid=$(state_field "$ID" pid)
	run tern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"fd 1"*"host uid 100000"* ]] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	local c
	c=$(cat "$BUNDLE/rootfs/tmp/log.n")
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/log.n" "$c"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
