#!/usr/bin/env bats
# The linux.resources fields that need a device or a kernel pool to be seen
# working: hugepageLimits (huge pages from the kernel's pool), blockIO
# throttling (a loop device the container writes to with O_DIRECT) and rdma.
# Written for both cgroup versions: the suite runs this file on this host
# (v1 hybrid, where hugetlb lives on the unified hierarchy) and inside the
# qemu guest on pure v2.

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load helpers

setup() {
	setup_bundle
	NR_HUGE_SAVED=$(cat /proc/sys/vm/nr_hugepages)
	LOOPDEV=
}

teardown() {
	# a cgroup a test froze ($ID-...) is thawed first, or nothing in it dies
	local f
	for f in "$(v2_mount)"/"${ID:-none}"*/cgroup.freeze; do
		[ -e "$f" ] && echo 0 >"$f"
	done
	teardown_bundle
	echo "$NR_HUGE_SAVED" >/proc/sys/vm/nr_hugepages
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV"
	return 0
}

# v2_mount: where the cgroup2 hierarchy is (/sys/fs/cgroup on pure v2, the
# unified one on a hybrid host).
v2_mount() {
	awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo
}

# ctl_dir CONTROLLER PID: the directory holding CONTROLLER's files for PID:
# its v1 hierarchy if it has one, else the cgroup2 mount (pure v2, or a
# hybrid host's unified hierarchy).
ctl_dir() {
	local v1 v2
	v1=$(awk -v c="$1" '$9 == "cgroup" && $NF ~ ("(^|,)" c "(,|$)") { print $5; exit }' /proc/self/mountinfo)
	if [ -n "$v1" ]; then
		host_cgroup_dir "$2" "$1"
	else
		v2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
		echo "$v2$(sed -n 's/^0:://p' /proc/"$2"/cgroup)"
	fi
}

# make_loopdev: a 32 MiB file for a loop device (the guest loads the driver
# on demand: its /dev has no loop-control node until then).
make_loopdev() {
	modprobe loop 2>/dev/null || true
	truncate -s 32M "$BATS_TEST_TMPDIR/disk"
}

# want_hugepages N: put N free 2 MiB pages in the kernel's pool.
want_hugepages() {
	echo "$1" >/proc/sys/vm/nr_hugepages
	local free
	free=$(awk '/^HugePages_Free/ { print $2 }' /proc/meminfo)
	[ "$free" -ge "$1" ] || {
		echo "!!! the kernel gave only $free of $1 huge pages: the test cannot run here !!!" >&2
		return 1
	}
}

@test "resources: hugepageLimits lets one 2 MiB page through and stops the second" {
	want_hugepages 4
	update_config '.linux.resources.hugepageLimits = [{"pageSize": "2MB", "limit": 2097152}]'
	set_cmd 'hugealloc 1; echo "status $?"; hugealloc 2; echo "status $?"'
	run_container
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "touched 1 huge pages" ]
	[ "${lines[1]}" = "status 0" ]
	# over the limit: either the reservation (mmap) or the fault fails
	[[ "${lines[2]}" == "mmap of 2 huge pages failed"* ]] || [[ "${lines[2]}" == "SIGBUS after 1 pages" ]]
	[ "${lines[3]}" != "status 0" ]
}

@test "resources: hugepageLimits is written where the hugetlb controller lives; stats count the pages" {
	want_hugepages 2
	update_config '.linux.resources.hugepageLimits = [{"pageSize": "2MB", "limit": 4194304}]'
	set_cmd "hugealloc 1 hold & sleep $MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	dir=$(ctl_dir hugetlb "$(state_field "$ID" pid)")
	if [ -e "$dir/hugetlb.2MB.max" ]; then
		[ "$(cat "$dir/hugetlb.2MB.max")" = 4194304 ]
	else
		[ "$(cat "$dir/hugetlb.2MB.limit_in_bytes")" = 4194304 ]
	fi
	# and events --stats reports the page the container holds
	for _ in $(seq 50); do
		run tern events --stats "$ID"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | jq '.data.hugetlb["2MB"].usage')" = 2097152 ] && break
		sleep 0.1
	done
	[ "$(echo "$output" | jq '.data.hugetlb["2MB"].usage')" = 2097152 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$dir" ]
}

@test "resources: blockIO throttleWriteBpsDevice slows O_DIRECT writes to a loop device" {
	make_loopdev
	LOOPDEV=$(losetup -f --show "$BATS_TEST_TMPDIR/disk")
	maj=$((0x$(stat -c %t "$LOOPDEV")))
	min=$((0x$(stat -c %T "$LOOPDEV")))
	update_config ".linux.devices += [{path: \"/dev/tdisk\", type: \"b\", major: $maj, minor: $min, fileMode: 432}]
		| .linux.resources.devices += [{allow: true, type: \"b\", major: $maj, minor: $min, access: \"rw\"}]
		| .linux.resources.blockIO = {throttleWriteBpsDevice: [{major: $maj, minor: $min, rate: 1048576}]}"
	# 4 MiB at 1 MiB/s: at least 3 s, where unthrottled it takes a blink
	set_cmd 'cat /sys/fs/cgroup/io.max /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device 2>/dev/null; s=$(date +%s); dd if=/dev/zero of=/dev/tdisk bs=512K count=8 oflag=direct 2>/dev/null; echo "dd $?"; echo "elapsed $(($(date +%s) - s))"'
	run_container
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -qx "dd 0"
	elapsed=$(echo "$output" | sed -n 's/^elapsed //p')
	[ "$elapsed" -ge 3 ]
}

@test "resources: blockIO throttles land in the controller's files; update changes them" {
	make_loopdev
	LOOPDEV=$(losetup -f --show "$BATS_TEST_TMPDIR/disk")
	maj=$((0x$(stat -c %t "$LOOPDEV")))
	min=$((0x$(stat -c %T "$LOOPDEV")))
	update_config ".linux.resources.blockIO = {
		throttleReadBpsDevice: [{major: $maj, minor: $min, rate: 2097152}],
		throttleWriteIOPSDevice: [{major: $maj, minor: $min, rate: 100}]}"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	if [ -d /sys/fs/cgroup/blkio ]; then
		dir=$(host_cgroup_dir "$pid" blkio)
		grep -qx "$maj:$min 2097152" "$dir/blkio.throttle.read_bps_device"
		grep -qx "$maj:$min 100" "$dir/blkio.throttle.write_iops_device"
	else
		dir=$(ctl_dir io "$pid")
		grep -x "$maj:$min rbps=2097152 wbps=max riops=max wiops=100" "$dir/io.max"
	fi
	# update changes the throttle on the running container
	echo "{\"blockIO\": {\"throttleReadBpsDevice\": [{\"major\": $maj, \"minor\": $min, \"rate\": 4194304}]}}" >"$BATS_TEST_TMPDIR/r.json"
	run tern update --resources "$BATS_TEST_TMPDIR/r.json" "$ID"
	[ "$status" -eq 0 ]
	if [ -d /sys/fs/cgroup/blkio ]; then
		grep -qx "$maj:$min 4194304" "$dir/blkio.throttle.read_bps_device"
	else
		grep -q "^$maj:$min rbps=4194304 " "$dir/io.max"
	fi
}

@test "resources: rdma limits for a device the host lacks fail clearly and leave nothing" {
	update_config '.linux.resources.rdma = {"mlx5_tern_none": {"hcaHandles": 2, "hcaObjects": 100}}'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly linux.resources.rdma
}

@test "resources: hugepageLimits with a page size the kernel lacks fails clearly and leaves nothing" {
	update_config '.linux.resources.hugepageLimits = [{"pageSize": "4MB", "limit": 4194304}]'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly linux.resources.hugepageLimits 4MB
}

@test "resources: device rules for one device add up (r then w allows a read-write open), a later deny takes back" {
	make_loopdev
	LOOPDEV=$(losetup -f --show "$BATS_TEST_TMPDIR/disk")
	maj=$((0x$(stat -c %t "$LOOPDEV")))
	min=$((0x$(stat -c %T "$LOOPDEV")))
	update_config ".linux.devices += [{path: \"/dev/tdisk\", type: \"b\", major: $maj, minor: $min, fileMode: 432}]
		| .linux.resources.devices = [{allow: false, access: \"rwm\"},
			{allow: true, type: \"b\", major: $maj, minor: $min, access: \"r\"},
			{allow: true, type: \"b\", major: $maj, minor: $min, access: \"w\"}]"
	set_cmd 'sh -c "exec 3<>/dev/tdisk" && echo rw-ok; head -c 1 /dev/tdisk >/dev/null && echo r-ok'
	run_container
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = rw-ok ]
	[ "${lines[1]}" = r-ok ]
	# a deny of w for the same device afterwards: reads still work, read-write does not
	update_config ".linux.resources.devices += [{allow: false, type: \"b\", major: $maj, minor: $min, access: \"w\"}]"
	run_container
	echo "$output"
	[[ "$output" != *rw-ok* ]]
	[[ "$output" == *r-ok* ]]
}

# ---- issue 10: a limit whose controller the host lacks is an error ----

# has_v1_controller NAME: a cgroup v1 hierarchy carries NAME.
has_v1_controller() {
	awk -v c="$1" '{ split($0, h, " - "); split(h[2], t, " ")
		if (t[1] == "cgroup") { n = split(t[3], o, ","); for (i = 1; i <= n; i++) if (o[i] == c) f = 1 } }
		END { exit !f }' /proc/self/mountinfo
}

@test "resources: network.classID / network.priorities without net_cls / net_prio fail before anything exists, naming the field" {
	if has_v1_controller net_cls || has_v1_controller net_prio; then
		skip "LOUD: this host has net_cls/net_prio hierarchies; the missing-controller case needs a host without (cgroup v2, or v1 without them)"
	fi
	update_config '.linux.resources.network = {"classID": 1048577}'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *linux.resources.network.classID*net_cls* ]]
	update_config '.linux.resources.network = {"priorities": [{"name": "lo", "priority": 2}]}'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly
	is_runc || [[ "$output" == *linux.resources.network.priorities*net_prio* ]]
	# before anything is made: not even the state directory, which cannot
	# be made under a regular file
	if is_tern; then
		touch "$BATS_TEST_TMPDIR/afile"
		run in_file "$TERN_BIN" --root "$BATS_TEST_TMPDIR/afile/state" run -b "$BUNDLE" "$ID"
		[ "$status" -ne 0 ]
		[[ "$output" == *linux.resources.network.priorities* ]]
	fi
	# an empty network object asks for nothing
	update_config '.linux.resources.network = {}'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
}

# The v2 freezer works on any cgroup2 hierarchy, a hybrid host's unified one
# too: an init put in a frozen cgroup there stops as on pure v2.
@test "cgroup v2: create into a frozen cgroup (cgroup.freeze) or below one is refused at once and leaves it as it was" {
	local v2
	v2=$(v2_mount)
	[ -n "$v2" ] || skip "no cgroup2 hierarchy mounted on this host"
	mkdir "$v2/$ID-frozen"
	echo 1 >"$v2/$ID-frozen/cgroup.freeze"
	set_args /bin/sleep "$MARK"
	update_config ".linux.cgroupsPath = \"/$ID-frozen\""
	# bounded: a runtime whose init stops in the freezer hangs here
	run in_file timeout -s KILL 20 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ] && [ "$status" -ne 137 ]
	[[ "$output" == *frozen* ]]
	is_runc || [[ "$output" == *"$v2/$ID-frozen"* ]]
	if is_tern; then
		# below it: the new cgroup would inherit the freezing
		update_config ".linux.cgroupsPath = \"/$ID-frozen/c\""
		run in_file timeout -s KILL 20 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID"
		[ "$status" -ne 0 ] && [ "$status" -ne 137 ]
		[[ "$output" == *"$v2/$ID-frozen"*frozen* ]]
		[ ! -e "$v2/$ID-frozen/c" ]
	fi
	# the user's cgroup: still there, still frozen, empty
	[ "$(cat "$v2/$ID-frozen/cgroup.freeze")" = 1 ]
	[ -z "$(cat "$v2/$ID-frozen/cgroup.procs")" ]
	echo 0 >"$v2/$ID-frozen/cgroup.freeze"
	rmdir "$v2/$ID-frozen"
	check_nothing_left "$ID"
}
