#!/usr/bin/env bats
# tern clone of a snapshot of a container with a user namespace of its own
# (issue 36): cold, --share-memory and from spares, with container root at
# a high host range (as containerd writes for a Kubernetes `hostUsers:
# false` pod) and with idmapped mounts. criu makes the clone's user
# namespace anew and its network namespace from the images.

load helpers
load snapshot-helpers

SPARES=.clone-spares

# userns_high [N]: a user namespace of its own, container ids 0-65535 at
# host 65536*N (default 11), the rootfs the container root's; the state
# root 0700 (as tern makes /run/tern): nothing of a clone may need others
# to search it. Sets HOST.
userns_high() {
	HOST=$((65536 * ${1:-11}))
	add_namespace user
	update_config ".linux.uidMappings = [{\"containerID\": 0, \"hostID\": $HOST, \"size\": 65536}]
		| .linux.gidMappings = [{\"containerID\": 0, \"hostID\": $HOST, \"size\": 65536}]"
	chown -R "$HOST:$HOST" "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	chmod 0700 "$ROOT"
	export HOST
}

# maps_are PID HOST: uid_map and gid_map of PID are "0 HOST 65536".
maps_are() {
	[ "$(tr -s ' ' <"/proc/$1/uid_map" | sed 's/^ //')" = "0 $2 65536" ] &&
		[ "$(tr -s ' ' <"/proc/$1/gid_map" | sed 's/^ //')" = "0 $2 65536" ]
}

# netns_is_its_own PID OTHER: PID has a user and a network namespace
# other than OTHER's, and its network namespace belongs to its user
# namespace (root there may add an address, which the netns's owner alone
# allows), and the namespace came from the images (10.99.0.1 on lo, which
# start_marked_counter put in the source's).
netns_is_its_own() {
	[ "$(readlink "/proc/$1/ns/user")" != "$(readlink "/proc/$2/ns/user")" ] &&
		[ "$(readlink "/proc/$1/ns/net")" != "$(readlink "/proc/$2/ns/net")" ] &&
		nsenter --target "$1" --user --net ip addr add 10.98.0.7/32 dev lo &&
		nsenter --target "$1" --net ip -4 -o addr show dev lo | grep -q ' 10.99.0.1/32 ' &&
		! nsenter --target "$2" --net ip -4 -o addr show dev lo | grep -q ' 10.98.0.7/32 '
}

# spares_are NAME WANTED READY / spares_failed NAME (as snapshot-spares.bats)
spares_are() {
	[ "$(tern snapshot --list --format json "$ID" |
		jq -c --arg n "$1" '.[] | select(.name == $n) | .spares // {}')" = \
		"{\"wanted\":$2,\"ready\":$3,\"failed\":false}" ]
}
spares_failed() {
	tern snapshot --list --format json "$ID" |
		jq -e --arg n "$1" '.[] | select(.name == $n) | .spares.failed' >/dev/null
}

# nothing_of_clones_left: no state, bundle, mount, cgroup or process of a
# clone or spare of $ID, nor a restore's yard (checkpoint-userns.h) of ours.
nothing_of_clones_left() {
	! grep -F -e "$ROOT/@clones" -e "$STORE/$SPARES" /proc/self/mountinfo >&2 || return 1
	if pgrep -f "$STORE/$SPARES" >&2; then return 1; fi
	[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "*$ID-*" 2>/dev/null || true)" ] || return 1
	[ -z "$(ls "$ROOT/@clones" 2>/dev/null)" ]
}

# the clone's / is its root's: it may write there
writes_own_root() {
	tern exec "$1" sh -c "echo $2 >/mine && cat /mine"
}

@test "clone of a userns container (root at host 65536*11): independent, memory and files as at the snapshot, its own userns and netns (from the images), maps as the config's; delete leaves nothing" {
	userns_high
	start_marked_counter
	local src_pid=$PID
	echo before >"$BUNDLE/rootfs/tmp/f"
	tern snapshot "$ID" base
	# the network namespace is in the images, nothing for tern to make
	grep -qx 'netns-fresh 0' "$STORE/base/images/tern-checkpoint.txt"
	local s
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	echo after >"$BUNDLE/rootfs/tmp/f"
	run tern clone "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local pid r
	pid=$(state_field "$ID-c" pid)
	r=$(clone_rootfs "$ID-c")
	[ "$(state_field "$ID-c" status)" = running ]
	# memory: it counts on from the snapshot's count; files: as then
	wait_until 30 lines_at_least "$r/tmp/log" $((s + 2))
	head -n $((s + 2)) "$r/tmp/log" | diff <(seq 1 $((s + 2))) -
	[ "$(cat "$r/tmp/f")" = before ]
	# what its shell printed goes to its bundle's stdio.log, its root's
	wait_until 30 has_lines_matching "$ROOT/@clones/$ID-c.bundle/stdio.log" out- 3
	[ "$(stat -c %u:%g "$ROOT/@clones/$ID-c.bundle/stdio.log")" = "$HOST:$HOST" ]
	maps_are "$pid" "$HOST"
	netns_is_its_own "$pid" "$src_pid"
	# independent: each writes its own; the source counts on
	run writes_own_root "$ID-c" clone
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = clone ]
	[ "$(stat -c %u "$ROOT/@clones/$ID-c.bundle/.upper/mine")" = "$HOST" ]
	[ ! -e "$BUNDLE/rootfs/mine" ]
	echo source >"$BUNDLE/rootfs/tmp/g"
	[ ! -e "$r/tmp/g" ]
	local n
	n=$(wc -l <"$BUNDLE/rootfs/tmp/log")
	wait_until 10 lines_at_least "$BUNDLE/rootfs/tmp/log" $((n + 3))
	[ "$(state_field "$ID" pid)" = "$src_pid" ]
	# the images are the container root's group's to read, no one else's
	[ "$(stat -c %a:%u:%g "$STORE/base/images")" = "710:0:$HOST" ]
	[ "$(stat -c %a:%u:%g "$STORE/base/images/inventory.img")" = "640:0:$HOST" ]
	delete_clones_then_source "$ID-c"
	nothing_of_clones_left
}

@test "clone --share-memory of a userns container: its memory is marked for merging and reads as the snapshot's" {
	userns_high 12
	start_memhash 16
	tern snapshot "$ID" base
	run tern clone --share-memory "$ID" base "$ID-k"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	maps_are "$(state_field "$ID-k" pid)" "$HOST"
	grep -qx "ksm_merge_any: yes" "/proc/$(memhash_pid "$ID-k")/ksm_stat"
	grep -qx "ksm_merge_any: no" "/proc/$(memhash_pid "$ID")/ksm_stat"
	[ "$(signal_memhash "$ID-k" USR1 again)" = "again $FIRST" ]
	# it diverges on its own
	run signal_memhash "$ID-k" USR2 new
	[ "$status" -eq 0 ]
	[ "$output" != "new $FIRST" ]
	delete_clones_then_source "$ID-k"
	nothing_of_clones_left
}

# bats test_tags=vm:v2
@test "clone --spares of a userns container: spares are made with criu's netns, a clone claims one and runs on as the snapshot was; --spares 0 and delete leave nothing" {
	userns_high 13
	start_marked_counter
	local src_pid=$PID
	tern snapshot "$ID" base
	local s
	s=$(wc -l <"$STORE/base/tree/tmp/log")
	run tern clone --spares 2 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 90 eval 'spares_are base 2 2 || spares_failed base'
	spares_are base 2 2 || { cat "$STORE/$SPARES/base/error" "$STORE/$SPARES/base/build.log"; false; }
	run tern clone --format json "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	local pid r
	pid=$(state_field "$ID-c" pid)
	r=$(clone_rootfs "$ID-c")
	wait_until 30 lines_at_least "$r/tmp/log" $((s + 2))
	head -n $((s + 2)) "$r/tmp/log" | diff <(seq 1 $((s + 2))) -
	wait_until 30 has_lines_matching "$ROOT/@clones/$ID-c.bundle/stdio.log" out- 3
	maps_are "$pid" "$HOST"
	netns_is_its_own "$pid" "$src_pid"
	run writes_own_root "$ID-c" spare
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# its cgroup is its own, named after it
	[[ "$(host_cgroup_dir "$pid" memory)" == */"$ID-c" ]]
	# a second clone from the other spare, in a namespace of its own too
	run tern clone --format json "$ID" base "$ID-d"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	[ "$(readlink "/proc/$(state_field "$ID-d" pid)/ns/net")" != "$(readlink "/proc/$pid/ns/net")" ]
	# the builder makes the next ones
	wait_until 90 eval 'spares_are base 2 2 || spares_failed base'
	spares_are base 2 2
	run tern clone --spares 0 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ ! -e "$STORE/$SPARES" ]
	delete_clones_then_source "$ID-c" "$ID-d"
	nothing_of_clones_left
}

# restore_yards: the restores' yards on this host (checkpoint-userns.h)
restore_yards() {
	ls -d /run/tern-restore-* /tmp/tern-restore-* 2>/dev/null | sort || true
}

# spares_being_made N: a userns counter, its snapshot `base`, and `clone
# --spares N` of it, returned once the first spare's restore has begun
# (its directory is there); YARDS: the restore yards there were before.
spares_being_made() {
	userns_high 12
	start_marked_counter
	YARDS=$(restore_yards)
	tern snapshot "$ID" base
	run tern clone --spares "$1" "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 60 eval 'compgen -G "$STORE/$SPARES/base/s-*" >/dev/null'
}

@test "delete of a userns container while its clone spares are being made: the spares go first; no process, cgroup (not the unified one criu would make again), mount or yard left" {
	spares_being_made 2
	run tern delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ ! -e "$STORE" ]
	check_nothing_left "$ID"
	nothing_of_clones_left
	! pgrep -f "tern-spare-$ID-" >&2 || false
	[ "$(restore_yards)" = "$YARDS" ] || { diff <(echo "$YARDS") <(restore_yards); false; }
}

@test "delete while the clone spares' builder is stopped (SIGSTOP) in a spare's restore: the builder and its criu are killed, nothing of the spare left" {
	# three: the builder is still at work when it is looked for
	spares_being_made 3
	# the builder is the session leader that holds the lock
	local p builder=
	for p in $(pgrep -f -- "clone --spares 3 $ID base"); do
		[ "$(ps -o sid= -p "$p" | tr -d ' ')" != "$p" ] || builder=$p
	done
	[ -n "$builder" ]
	kill -STOP "$builder"
	run tern delete --force "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"builder (pid $builder) is stopped: killed"* ]] || { echo "$output"; false; }
	[ ! -e "$STORE" ]
	# (gone once its parent, init, has reaped it)
	wait_until 30 eval '! kill -0 "$builder" 2>/dev/null'
	check_nothing_left "$ID"
	nothing_of_clones_left
	[ "$(restore_yards)" = "$YARDS" ] || { diff <(echo "$YARDS") <(restore_yards); false; }
}

# A config as containerd (CRI) writes it for a pod with `hostUsers: false`:
# its own user namespace at 65536*N, its own network namespace, and its
# volumes bound with uidMappings/gidMappings (idmapped) so that the host's
# root-owned files are the container root's.
cri_userns_config() {
	userns_high 14
	VOL=$BATS_TEST_TMPDIR/volume
	mkdir -p "$VOL"
	echo "from the volume" >"$VOL/f"
	make_traversable "$VOL"
	update_config ".linux.namespaces = [{\"type\": \"pid\"}, {\"type\": \"ipc\"}, {\"type\": \"uts\"},
			{\"type\": \"mount\"}, {\"type\": \"network\"}, {\"type\": \"user\"}, {\"type\": \"cgroup\"}]
		| .mounts += [{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"$VOL\",
			\"options\": [\"rbind\", \"rprivate\", \"rw\"],
			\"uidMappings\": [{\"containerID\": 0, \"hostID\": $HOST, \"size\": 65536}],
			\"gidMappings\": [{\"containerID\": 0, \"hostID\": $HOST, \"size\": 65536}]}]"
	export VOL
}

# through_volume ID WORD: in ID, the volume's file is root's and reads
# back; a file written there is the host's root's (the idmap holds)
through_volume() {
	tern exec "$1" sh -c "stat -c %u:%g /data/f && cat /data/f && echo $2 >/data/$2" &&
		[ "$(stat -c %u:%g "$VOL/$2")" = 0:0 ]
}

@test "clone of a CRI hostUsers:false-shaped container (userns at 65536*14, idmapped volume): cold and from a spare, and rolled back; the volume stays idmapped" {
	cri_userns_config
	start_marked_counter
	# (a rollback reopens the init's stdout file as the container's root;
	# containerd's shim gives pipes)
	chown "$HOST:$HOST" "$OUT"
	run through_volume "$ID" src
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[0]}" = 0:0 ]
	tern snapshot "$ID" base
	run tern clone "$ID" base "$ID-c"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run through_volume "$ID-c" cold
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "0:0
from the volume" ]
	maps_are "$(state_field "$ID-c" pid)" "$HOST"
	run tern clone --spares 1 "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 90 eval 'spares_are base 1 1 || spares_failed base'
	spares_are base 1 1 || { cat "$STORE/$SPARES/base/error" "$STORE/$SPARES/base/build.log"; false; }
	run tern clone --format json "$ID" base "$ID-s"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	jq -e '.spare == true' <<<"$output"
	run through_volume "$ID-s" spare
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[0]}" = 0:0 ]
	# the idmapped copies tern made for criu went with the restores
	! grep -F -e "$VOL" /proc/self/mountinfo | grep -v -e "$ID" >&2 || true
	# and rolled back (cold: the snapshot's spares are clones')
	local pid
	pid=$(state_field "$ID" pid)
	run tern rollback "$ID" base
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" pid)" != "$pid" ]
	maps_are "$(state_field "$ID" pid)" "$HOST"
	run through_volume "$ID" rolled
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "${lines[0]}" = 0:0 ]
	run tern clone --spares 0 "$ID" base
	[ "$status" -eq 0 ]
	delete_clones_then_source "$ID-c" "$ID-s"
	nothing_of_clones_left
}

@test "clone of a userns container refused up front, nothing left: a network namespace joined by path or left out of the images, a veth to the host" {
	userns_high 15
	start_counter
	tern snapshot "$ID" base
	# criu itself will not dump a container that joined by path a network
	# namespace of another user namespace; a snapshot that says so (or
	# one taken before the network namespace went into the images, by an
	# older tern) is refused before anything is made
	local cfg=$STORE/base/images/tern-config.json desc=$STORE/base/images/tern-checkpoint.txt
	cp "$cfg" "$BATS_TEST_TMPDIR/cfg" && cp "$desc" "$BATS_TEST_TMPDIR/desc"
	jq '.linux.namespaces |= map(if .type == "network" then .path = "/run/netns/x" else . end)' \
		"$BATS_TEST_TMPDIR/cfg" >"$cfg"
	run tern clone "$ID" base "$ID-c"
	[ "$status" -ne 0 ]
	[[ "$output" == *"user namespace of its own that joined its network namespace by path"* ]] || {
		echo "$output"
		false
	}
	run tern clone --spares 1 "$ID" base
	[ "$status" -ne 0 ]
	[[ "$output" == *"--spares"*"joined its network namespace by path"* ]] || { echo "$output"; false; }
	cp "$BATS_TEST_TMPDIR/cfg" "$cfg"
	sed -i 's/^netns-fresh 0$/netns-fresh 1/' "$desc"
	run tern clone "$ID" base "$ID-c"
	[ "$status" -ne 0 ]
	[[ "$output" == *"network namespace left out of the images"*"take a new snapshot"* ]] || {
		echo "$output"
		false
	}
	cp "$BATS_TEST_TMPDIR/desc" "$desc"
	[ ! -e "$ROOT/$ID-c" ]
	[ -z "$(ls "$ROOT/@clones" 2>/dev/null)" ]
	[ ! -e "$STORE/$SPARES" ]

	# a veth to the host: criu cannot make it in the clone's namespace
	local v=tv$$
	v=${v:0:12}
	ip link add "$v" type veth peer name eth1 netns "$(state_field "$ID" pid)"
	tern snapshot "$ID" withveth
	grep -qx "veth eth1 $v" "$STORE/withveth/images/tern-checkpoint.txt"
	run tern clone "$ID" withveth "$ID-c"
	[ "$status" -ne 0 ]
	[[ "$output" == *"veth to the host"*"\`eth1\`"*"\`$v\`"*"criu cannot make a veth"* ]] || {
		echo "$output"
		false
	}
	run tern clone --spares 1 "$ID" withveth
	[ "$status" -ne 0 ]
	[[ "$output" == *"veth to the host"* ]] || { echo "$output"; false; }
	[ ! -e "$ROOT/$ID-c" ]
	[ -z "$(ls "$ROOT/@clones" 2>/dev/null)" ]
	[ ! -e "$STORE/$SPARES" ]
	# the snapshot without the veth still clones
	run tern clone "$ID" base "$ID-ok"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	delete_clones_then_source "$ID-ok"
	nothing_of_clones_left
	! ip link show "$v" 2>/dev/null
}
