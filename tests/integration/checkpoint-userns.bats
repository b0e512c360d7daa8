#!/usr/bin/env bats
# tern checkpoint and restore of containers with a user namespace of their
# own whose root is an unprivileged host uid (100000 here; what Kubernetes'
# hostUsers: false and podman's --userns=auto give): criu makes the user
# namespace anew and reads the images, the stdio files and the mount
# sources as that root.

load helpers

setup() {
	if is_runc; then
		skip "checks tern's own checkpoint of a high-mapped user namespace"
	fi
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	teardown_bundle
}


# counter FILE: the container counts into /tmp/FILE, a whole number each
# time (written aside and renamed).
counter() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/.c; mv /tmp/.c /tmp/$1; sleep 0.1; done"
}

# count_of FILE: its number, once it holds a whole one.
count_of() {
	local v
	v=$(cat "$1" 2>/dev/null) && [[ "$v" =~ ^[0-9]+$ ]] && echo "$v"
}

count_above() {
	local v
	v=$(count_of "$1") && [ "$v" -gt "$2" ]
}

start_ct() {
	"$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
}

# bats test_tags=vm:v2
@test "checkpoint-userns: root mapped to host 100000: checkpoint and restore, the counter goes on, the maps are the config's" {
	userns_rootfs
	set_cmd "$(counter count)"
	start_ct
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/count" 3
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status 2>/dev/null)" = "" ]
	# its network namespace is as good as new: criu makes it empty, tern
	# sets it up (lo up) as create does
	grep -qx "netns-empty 1" "$IMG/tern-checkpoint.txt"
	local c pid
	c=$(count_of "$BUNDLE/rootfs/tmp/count")
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/count" "$c"
	pid=$(state_field "$ID" pid)
	[ "$(tr -s ' ' <"/proc/$pid/uid_map" | sed 's/^ //')" = "0 100000 65536" ]
	[ "$(tr -s ' ' <"/proc/$pid/gid_map" | sed 's/^ //')" = "0 100000 65536" ]
	[ "$(stat -c %u "/proc/$pid")" = 100000 ]
	# its network namespace is its user namespace's (made by criu)
	[ "$(stat -L -c %i "/proc/$pid/ns/net")" != "$(stat -L -c %i /proc/self/ns/net)" ]
	nsenter --net="/proc/$pid/ns/net" ip -o link show lo | grep -q "UP"
	nsenter --net="/proc/$pid/ns/net" ip -o addr show lo | grep -q "127.0.0.1/8"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint-userns: a network namespace with an address of its own is restored from the images (not made empty)" {
	userns_rootfs
	set_cmd "$(counter count)"
	start_ct
	wait_until 10 count_above "$BUNDLE/rootfs/tmp/count" 3
	local pid
	pid=$(state_field "$ID" pid)
	nsenter --net="/proc/$pid/ns/net" ip link set lo up
	nsenter --net="/proc/$pid/ns/net" ip addr add 10.77.0.5/32 dev lo
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	! grep -q "netns-empty 1" "$IMG/tern-checkpoint.txt"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	pid=$(state_field "$ID" pid)
	nsenter --net="/proc/$pid/ns/net" ip -o addr show lo | grep -q "10.77.0.5/32"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "checkpoint-userns: an idmapped bind mount comes back idmapped, written through its mapping" {
	userns_rootfs
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	chown 1000:1000 "$src"
	make_traversable "$BATS_TEST_TMPDIR"
	update_config ".mounts += [{\"destination\": \"/data\", \"type\": \"bind\", \"source\": \"$src\",
		\"options\": [\"bind\", \"idmap\"],
		\"uidMappings\": [{\"containerID\": 1000, \"hostID\": 100000, \"size\": 1}],
		\"gidMappings\": [{\"containerID\": 1000, \"hostID\": 100000, \"size\": 1}]}]"
	set_cmd "i=0; while :; do i=\$((i+1)); echo \$i > /data/.c; mv /data/.c /data/count; sleep 0.1; done"
	start_ct
	wait_until 10 count_above "$src/count" 3
	[ "$(stat -c %u:%g "$src/count")" = 1000:1000 ]
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	local c pid
	c=$(count_of "$src/count")
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	wait_until 10 count_above "$src/count" "$c"
	[ "$(stat -c %u:%g "$src/count")" = 1000:1000 ]
	pid=$(state_field "$ID" pid)
	grep -q " /data .*idmapped" "/proc/$pid/mountinfo"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
