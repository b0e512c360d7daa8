#!/usr/bin/env bats
# Namespaces: new ones, joined ones, id mappings, the time namespace.

load helpers

# userns_mappings: root in the container is uid/gid 100000 on the host.
userns_mappings() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	# /sys cannot be mounted from a user namespace without a new netns owner
	# in every runtime; it is not what these tests are about.
	update_config '.mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	make_traversable "$BUNDLE/rootfs"
}

@test "namespaces: pid network mount ipc uts user cgroup are new, proved from inside" {
	for n in pid network mount ipc uts cgroup; do add_namespace $n; done
	userns_mappings
	set_cmd 'for n in pid net mnt ipc uts user cgroup; do echo "$n $(readlink /proc/self/ns/$n)"; done'
	run_container
	[ "$status" -eq 0 ]
	for n in pid net mnt ipc uts user cgroup; do
		line=$(echo "$output" | grep "^$n ")
		[ -n "$line" ]
		[ "$line" != "$n $(readlink /proc/$$/ns/$n)" ] || {
			echo "namespace $n is the host's: $line"
			false
		}
	done
}

@test "namespaces: pid 1 inside a new pid namespace" {
	set_cmd 'echo $$'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
}

@test "namespaces: without a network namespace the host's is kept" {
	remove_namespace network
	set_cmd 'readlink /proc/self/ns/net'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "$(readlink /proc/$$/ns/net)" ]
}

@test "namespaces: time namespace (new)" {
	# runc 1.1.5 lacks this
	add_namespace time
	set_cmd 'readlink /proc/self/ns/time'
	run_container
	[ "$status" -eq 0 ]
	[ -n "$output" ]
	[ "$output" != "$(readlink /proc/$$/ns/time)" ]
}

@test "namespaces: linux.timeOffsets shift the boottime clock" {
	# runc 1.1.5 lacks this
	add_namespace time
	update_config '.linux.timeOffsets = {"boottime": {"secs": 864000, "nanosecs": 0}, "monotonic": {"secs": 86400, "nanosecs": 0}}'
	set_cmd 'cut -d. -f1 /proc/uptime'
	host_up=$(cut -d. -f1 /proc/uptime)
	run_container
	[ "$status" -eq 0 ]
	[ "$output" -ge $((host_up + 864000)) ]
	[ "$output" -lt $((host_up + 864000 + 60)) ]
}

@test "namespaces: join a network namespace by path (ip netns)" {
	NETNS=tt-$ID
	ip netns add "$NETNS"
	add_namespace network "/var/run/netns/$NETNS"
	want="net:[$(stat -L -c %i "/var/run/netns/$NETNS")]"
	set_cmd 'readlink /proc/self/ns/net'
	run_container
	ip netns del "$NETNS" || true
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
}

@test "namespaces: join uts and ipc of another process by /proc/PID/ns path" {
	unshare --uts --ipc sleep "$MARK" &
	upid=$!
	EXTRA_PIDS=$upid
	for i in $(seq 50); do
		[ "$(readlink /proc/$upid/ns/uts)" != "$(readlink /proc/$$/ns/uts)" ] && break
		sleep 0.05
	done
	add_namespace uts "/proc/$upid/ns/uts"
	add_namespace ipc "/proc/$upid/ns/ipc"
	update_config 'del(.hostname)'
	set_cmd 'readlink /proc/self/ns/uts; readlink /proc/self/ns/ipc'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(readlink /proc/$upid/ns/uts)" ]
	[ "${lines[1]}" = "$(readlink /proc/$upid/ns/ipc)" ]
	kill "$upid"
}

@test "namespaces: a bad namespace path fails and names it" {
	add_namespace network /no/such/netns
	run_container
	check_fails_cleanly /no/such/netns
}

@test "user namespace: uid_map/gid_map inside show the mappings" {
	userns_mappings
	set_cmd 'cat /proc/self/uid_map /proc/self/gid_map; id -u'
	run_container
	[ "$status" -eq 0 ]
	[ "$(echo "${lines[0]}" | tr -s ' ' | sed 's/^ //')" = "0 100000 65536" ]
	[ "$(echo "${lines[1]}" | tr -s ' ' | sed 's/^ //')" = "0 100000 65536" ]
	[ "${lines[2]}" = 0 ]
}

@test "user namespace: files created inside are owned by the mapped host uid" {
	userns_mappings
	mkdir -p "$BUNDLE/rootfs/data"
	chown 100000:100000 "$BUNDLE/rootfs/data"
	update_config '.process.capabilities.bounding += ["CAP_CHOWN"]
		| .process.capabilities.effective += ["CAP_CHOWN"]
		| .process.capabilities.permitted += ["CAP_CHOWN"]'
	set_cmd 'touch /data/root-file; chown 5:7 /data/root-file; touch /data/r2'
	run_container
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g "$BUNDLE/rootfs/data/r2")" = 100000:100000 ]
	[ "$(stat -c %u:%g "$BUNDLE/rootfs/data/root-file")" = 100005:100007 ]
}

@test "namespaces: the loopback interface of a new network namespace is up, localhost servers work" {
	add_namespace network
	# tcpecho listens on every address; nc connects to 127.0.0.1 until the
	# server listens (a few tries at most), which fails with "Network is
	# unreachable" for as long as lo is down.
	set_cmd 'ip link show lo | head -1; tcpecho 5555 & srv=$!; ok=; for i in $(seq 50); do if echo hello | nc 127.0.0.1 5555; then ok=1; break; fi; sleep 0.1; done; kill $srv 2>/dev/null; [ -n "$ok" ]'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"<LOOPBACK,UP,LOWER_UP>"* ]]
	[[ "$output" == *"1 hello"* ]]
}

@test "namespaces: a joined network namespace's loopback is left as it is" {
	# runc and crun bring lo up only in a network namespace they create.
	NETNS=tt-$ID
	ip netns add "$NETNS"
	add_namespace network "/var/run/netns/$NETNS"
	set_cmd 'ip link show lo | head -1'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"<LOOPBACK>"* ]]
	[[ "$(ip netns exec "$NETNS" ip link show lo | head -1)" != *UP* ]]
}
