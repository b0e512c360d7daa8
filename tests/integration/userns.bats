#!/usr/bin/env bats
# User namespaces with several id ranges: the maps the kernel holds, file
# ownership seen through them, and the errors for maps the kernel refuses.

load helpers

# three_ranges: a user namespace with three uid and three gid ranges, and
# the rootfs copy owned by the container's root (host uid/gid 100000), so
# the mapped root can use it.
three_ranges() {
	add_namespace user
	update_config '.linux.uidMappings = [
			{"containerID": 0, "hostID": 100000, "size": 1000},
			{"containerID": 1000, "hostID": 200000, "size": 1000},
			{"containerID": 5000, "hostID": 300000, "size": 10}]
		| .linux.gidMappings = [
			{"containerID": 0, "hostID": 110000, "size": 500},
			{"containerID": 500, "hostID": 210000, "size": 500},
			{"containerID": 7000, "hostID": 310000, "size": 3}]'
	# /sys cannot be mounted from a user namespace without a new netns owner
	# in every runtime; it is not what these tests are about.
	update_config '.mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	chown -R 100000:110000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
}

# normalized: the map lines with single spaces, no leading blanks.
normalized() {
	tr -s ' ' <<<"$1" | sed 's/^ //'
}

@test "userns: three uid and gid ranges are exactly the lines of /proc/self/uid_map and gid_map" {
	three_ranges
	set_cmd 'cat /proc/self/uid_map; echo --; cat /proc/self/gid_map'
	run_container
	[ "$status" -eq 0 ]
	[ "$(normalized "$output")" = "0 100000 1000
1000 200000 1000
5000 300000 10
--
0 110000 500
500 210000 500
7000 310000 3" ]
}

@test "userns: files of mapped host ids show the container ids, unmapped ones the overflow id" {
	three_ranges
	local r=$BUNDLE/rootfs/owned
	mkdir "$r"
	touch "$r/first" "$r/second" "$r/third" "$r/unmapped" "$r/hostroot"
	chown 100007:110004 "$r/first"     # range 0: 7, 4
	chown 200005:210009 "$r/second"    # range 1: 1005, 509
	chown 300009:310002 "$r/third"     # range 2: 5009, 7002
	chown 150000:150000 "$r/unmapped"  # between the ranges
	chown 0:0 "$r/hostroot"            # host root is never mapped here
	set_cmd 'cd /owned && for f in first second third unmapped hostroot; do echo "$f $(stat -c %u:%g $f)"; done'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "first 7:4
second 1005:509
third 5009:7002
unmapped $(cat /proc/sys/kernel/overflowuid):$(cat /proc/sys/kernel/overflowgid)
hostroot $(cat /proc/sys/kernel/overflowuid):$(cat /proc/sys/kernel/overflowgid)" ]
}

@test "userns: a container user of the second range is the matching host uid" {
	three_ranges
	update_config '.process.user = {"uid": 1001, "gid": 501}'
	set_args sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	# Real, effective, saved and fs ids, as the host sees them.
	[ "$(awk '/^Uid:/ {print $2, $3, $4, $5}' /proc/"$pid"/status)" = "200001 200001 200001 200001" ]
	[ "$(awk '/^Gid:/ {print $2, $3, $4, $5}' /proc/"$pid"/status)" = "210001 210001 210001 210001" ]
	run tern exec "$ID" id -u
	[ "$status" -eq 0 ]
	[ "$output" = 1001 ]
}

@test "userns: files created inside by the second range land on the host as its host uid" {
	three_ranges
	mkdir -m 1777 "$BUNDLE/rootfs/data"
	update_config '.process.user = {"uid": 1002, "gid": 502}'
	set_cmd 'touch /data/made'
	run_container
	[ "$status" -eq 0 ]
	[ "$(stat -c %u:%g "$BUNDLE/rootfs/data/made")" = 200002:210002 ]
}

@test "userns: linux.uidMappings without a user namespace is refused, naming the field" {
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 10}]'
	run_container
	if is_runc; then
		# runc 1.1.5 ignores the maps silently: tern refuses to
		[ "$status" -eq 0 ]
		return 0
	fi
	check_fails_cleanly "linux.uidMappings: requires a user namespace in linux.namespaces"
}

@test "userns: linux.gidMappings without a user namespace is refused, naming the field" {
	update_config '.linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 10}]'
	run_container
	if is_runc; then
		[ "$status" -eq 0 ] # ignored by runc 1.1.5, as above
		return 0
	fi
	check_fails_cleanly "linux.gidMappings: requires a user namespace in linux.namespaces"
}

@test "userns: overlapping container ranges are refused, naming the entry" {
	three_ranges
	update_config '.linux.uidMappings[1].containerID = 990'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"linux.uidMappings[1]: containerID range 990-1989 overlaps entry [0] (0-999)"* ]]
}

@test "userns: overlapping host ranges are refused, naming the entry" {
	three_ranges
	update_config '.linux.gidMappings[2].hostID = 210400'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"linux.gidMappings[2]: hostID range 210400-210402 overlaps entry [1] (210000-210499)"* ]]
}

@test "userns: a range of size 0 is refused, naming the field" {
	three_ranges
	update_config '.linux.uidMappings[2].size = 0'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"linux.uidMappings[2].size: must be greater than 0"* ]]
}

@test "userns: more than 340 ranges (the kernel's limit) are refused" {
	three_ranges
	update_config '.linux.uidMappings = [range(341) | {"containerID": ., "hostID": (100000 + .), "size": 1}]'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"linux.uidMappings: at most 340 ranges (the kernel's limit), got 341"* ]]
}

@test "userns: exactly 340 ranges work, and all of them are in uid_map" {
	three_ranges
	# container 0 keeps the owner of the rootfs; 339 one-id ranges after it
	# (short numbers: the whole map must also fit in one write of < 4 KiB)
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 1}]
		+ [range(1; 340) | {"containerID": ., "hostID": (1000 + .), "size": 1}]'
	set_cmd 'wc -l </proc/self/uid_map; grep -c " 1339 " /proc/self/uid_map'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 340 ]
	[ "${lines[1]}" = 1 ]
}

@test "userns: a map longer than the kernel's one-page write is refused, naming the field" {
	three_ranges
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 1}]
		+ [range(1; 340) | {"containerID": (4000000000 + .), "hostID": (3000000000 + .), "size": 1}]'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"linux.uidMappings: the 340 ranges take "*" bytes written out, the kernel takes at most 4095"* ]]
}

@test "userns: a root that is not mapped fails with a clear error" {
	three_ranges
	# container root is not mapped at all: nothing can become uid 0 inside
	update_config '.linux.uidMappings = [{"containerID": 1000, "hostID": 200000, "size": 1000}]'
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *"uid 0"*"linux.uidMappings"* ]]
}

@test "userns: maps are written only through a real procfs (a tmpfs over /proc is refused)" {
	# In a private mount namespace a tmpfs hides the real /proc from tern.
	# Without the fstatfs check tern would open PID/uid_map on whatever is
	# mounted there (here: fail with ENOENT; with a prepared fake tree, write
	# the map into a plain file and carry on with an unmapped namespace).
	three_ranges
	run unshare -m --propagation private sh -c '
		mount -t tmpfs fake /proc || exit 90
		exec "$0" --root "$1" run -b "$2" "$3"
	' "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[ "$status" -ne 90 ]
	# tern refuses before any map is written: it needs /proc/self/exe for
	# its sealed copy, and writes maps only through a private procfs
	is_runc || [[ "$output" == *"/proc"* ]]
	check_nothing_left "$ID"
}

@test "userns: a rootfs the mapped root cannot enter fails cleanly with Permission denied" {
	three_ranges
	# host root's own, mode 0700: container root (host 100000) cannot enter
	chown 0:0 "$BUNDLE/rootfs"
	chmod 700 "$BUNDLE/rootfs"
	run_container
	check_fails_cleanly
	[[ "${output,,}" == *"permission denied"* ]]
	is_runc || [[ "$output" == *"inside the rootfs: Permission denied"* ]]
}

@test "userns: several ranges on the two-stage path (with a time namespace) are written too" {
	# runc 1.1.5 lacks this (time namespaces)
	three_ranges
	# a time namespace makes tern unshare in a first child and write the
	# maps on its request (SYNC_MAPS_REQUEST), not right after the clone
	add_namespace time
	set_cmd 'cat /proc/self/uid_map; readlink /proc/self/ns/time'
	run_container
	[ "$status" -eq 0 ]
	[ "$(normalized "$(echo "$output" | head -3)")" = "0 100000 1000
1000 200000 1000
5000 300000 10" ]
	[ "${lines[3]}" != "$(readlink /proc/self/ns/time)" ]
}
