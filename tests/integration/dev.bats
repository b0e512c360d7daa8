#!/usr/bin/env bats
# /dev, linux.devices, maskedPaths, readonlyPaths.

load helpers

@test "/dev: the default devices with the right major:minor" {
	set_cmd 'for d in null zero full random urandom tty; do echo "$d $(stat -c "%F %t:%T" /dev/$d)"; done'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"null character special file 1:3"* ]]
	[[ "$output" == *"zero character special file 1:5"* ]]
	[[ "$output" == *"full character special file 1:7"* ]]
	[[ "$output" == *"random character special file 1:8"* ]]
	[[ "$output" == *"urandom character special file 1:9"* ]]
	[[ "$output" == *"tty character special file 5:0"* ]]
}

@test "/dev: the devices work (null, zero, full, urandom)" {
	set_cmd 'echo x >/dev/null && head -c 4 /dev/zero | od -An -tx1 | tr -d " " && (echo x >/dev/full) 2>&1; head -c 8 /dev/urandom | wc -c'
	run_container
	[ "${lines[0]}" = 00000000 ]
	[[ "${lines[1]}" == *"No space left on device"* ]]
	[ "${lines[2]}" = 8 ]
}

@test "/dev: ptmx, fd, stdin/stdout/stderr links, shm, pts" {
	set_cmd 'ls -l /dev/ptmx; for l in fd stdin stdout stderr; do readlink /dev/$l; done; test -d /dev/shm && echo shm; test -d /dev/pts && echo pts; grep " /dev/pts " /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *ptmx* ]]
	[ "${lines[1]}" = /proc/self/fd ]
	[ "${lines[2]}" = /proc/self/fd/0 ]
	[ "${lines[3]}" = /proc/self/fd/1 ]
	[ "${lines[4]}" = /proc/self/fd/2 ]
	[ "${lines[5]}" = shm ]
	[ "${lines[6]}" = pts ]
	[[ "${lines[7]}" == *devpts* ]]
}

@test "/dev: no host devices leak in" {
	set_cmd 'ls /dev'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" != *sda* && "$output" != *vda* && "$output" != *kmsg* && "$output" != *mem$'\n'* ]]
}

@test "linux.devices: a device node with its major/minor/mode/uid/gid" {
	update_config '.linux.devices = [{"path": "/dev/mydev", "type": "c", "major": 1, "minor": 3, "fileMode": 432, "uid": 5, "gid": 6},
		{"path": "/dev/sub/blk", "type": "b", "major": 7, "minor": 0, "fileMode": 384, "uid": 0, "gid": 0}]'
	set_cmd 'stat -c "%F %t:%T %a %u %g" /dev/mydev /dev/sub/blk'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "character special file 1:3 660 5 6" ]
	[ "${lines[1]}" = "block special file 7:0 600 0 0" ]
}

@test "maskedPaths: unreadable" {
	set_cmd 'cat /proc/kcore 2>/dev/null | wc -c; ls /sys/firmware | wc -l'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[ "${lines[1]}" = 0 ]
}

@test "maskedPaths: an extra masked file" {
	update_config '.linux.maskedPaths += ["/proc/cpuinfo"]'
	set_cmd 'cat /proc/cpuinfo | wc -c'
	run_container
	[ "${lines[0]}" = 0 ]
}

@test "maskedPaths: the masked directories share one empty read-only tmpfs" {
	is_runc && skip "runc 1.1.5 mounts a tmpfs for each masked directory"
	mkdir -p "$BUNDLE/rootfs/m1" "$BUNDLE/rootfs/m2"
	echo secret >"$BUNDLE/rootfs/m1/f"
	update_config '.linux.maskedPaths += ["/m1", "/m2"]'
	# one superblock: criu archives it once in a checkpoint, not once each
	set_cmd 'awk '"'"'$5 == "/m1" || $5 == "/m2" || $5 == "/sys/firmware" {print $3, $4, $(NF - 2), substr($6, 1, 3)}'"'"' /proc/self/mountinfo | sort -u; { ls -A /m1; ls -A /m2; } | wc -l; touch /m2/x 2>&1; true'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(echo "${lines[0]}" | awk '{print $1}') / tmpfs ro," ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[1]}" = 0 ]
	[[ "${lines[2]}" == *"Read-only file system"* ]]
}

@test "readonlyPaths: read-only" {
	update_config '.linux.readonlyPaths += ["/proc/sys"] | .linux.readonlyPaths |= unique'
	mkdir -p "$BUNDLE/rootfs/rodir"
	update_config '.linux.readonlyPaths += ["/rodir"]'
	set_cmd 'echo 1 >/proc/sys/kernel/shm_rmid_forced 2>&1; touch /rodir/x 2>&1; grep " /proc/sys " /proc/self/mountinfo'
	run_container
	[[ "${lines[0]}" == *"Read-only file system"* ]]
	[[ "${lines[1]}" == *"Read-only file system"* ]]
	[[ "${lines[2]}" == *" ro,"* || "${lines[2]}" == *" ro "* ]]
	[ ! -e "$BUNDLE/rootfs/rodir/x" ]
}

# userns_bundle: a user namespace mapping root to host 100000 (65536 ids),
# the rootfs copy owned by it. In it mknod of a device is not allowed, so
# every device is bound from the host's.
userns_bundle() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
}

# A container command printing "PATH OPTIONS" (the per-mount options of its
# mountinfo line) for each path given as an argument.
mount_opts_cmd='for d in "$@"; do grep " $d " /proc/self/mountinfo | cut -d" " -f5,6; done'

@test "/dev in a user namespace: each default device is bound from the host nosuid,noexec, and works" {
	# runc 1.1.5 lacks this: it binds them without nosuid/noexec (crun sets both)
	userns_bundle
	set_args sh -c "$mount_opts_cmd; echo x >/dev/null && head -c 2 /dev/zero | od -An -tx1 | tr -d ' '" \
		sh /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty
	run_container
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 7 ]
	for i in 0 1 2 3 4 5; do
		[[ ",${lines[$i]#* }," == *,nosuid,* && ",${lines[$i]#* }," == *,noexec,* ]] ||
			{ echo "not nosuid,noexec: ${lines[$i]}"; false; }
		[[ ",${lines[$i]#* }," != *,nodev,* ]]
	done
	[ "${lines[6]}" = 0000 ]
}

@test "linux.devices in a user namespace: bound from the host nosuid,noexec" {
	# runc 1.1.5 lacks this (no nosuid/noexec)
	userns_bundle
	# /dev/kmsg (c 1:11): a device every kernel has, and not a default one
	update_config '.linux.devices = [{"path": "/dev/kmsg", "type": "c", "major": 1, "minor": 11, "fileMode": 420}]'
	set_args sh -c "$mount_opts_cmd; stat -c '%F %t:%T' /dev/kmsg" sh /dev/kmsg
	run_container
	[ "$status" -eq 0 ]
	[[ ",${lines[0]#* }," == *,nosuid,* && ",${lines[0]#* }," == *,noexec,* ]]
	[ "${lines[1]}" = "character special file 1:b" ]
}

@test "linux.devices in a user namespace: a device the host has under another name is bound from there" {
	# runc 1.1.5 lacks this: it binds only from the same path on the host
	# (/dev/mynull does not exist there); tern finds 1:3 as /dev/null
	userns_bundle
	[ ! -e /dev/mynull ]
	update_config '.linux.devices = [{"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3, "fileMode": 438}]'
	set_cmd 'stat -c "%F %t:%T" /dev/mynull; echo x >/dev/mynull && echo written'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "character special file 1:3
written" ]
}

@test "linux.devices in a user namespace: a device the host lacks is refused by name, before anything is created" {
	userns_bundle
	# no such device on this host, under any name
	[ ! -e /sys/dev/char/1:250 ] || { echo "this host has a device c 1:250: pick another" >&2; false; }
	# the image's own /dev, no tmpfs on it: what is made there would stay
	update_config '.mounts |= map(select(.destination | startswith("/dev") | not))
		| .linux.devices = [{"path": "/dev/kmsg", "type": "c", "major": 1, "minor": 11},
			{"path": "/dev/nothere", "type": "c", "major": 1, "minor": 250}]'
	local before
	before=$(ls -la "$BUNDLE/rootfs/dev")
	run_container
	check_fails_cleanly "/dev/nothere"
	# runc 1.1.5 lacks this: it has made the devices before by then
	is_runc || [ "$(ls -la "$BUNDLE/rootfs/dev")" = "$before" ]
	is_runc || [[ "$output" == *"linux.devices[1] \`/dev/nothere\`: the host has no device c 1:250 to bind"* ]]
}

# ---- issue 33: a read-only /dev ----

@test "/dev: a tmpfs /dev with \"ro\" is made read-only after the devices, /dev/pts, /dev/shm, /dev/mqueue and the links" {
	update_config '(.mounts[] | select(.destination == "/dev") | .options) += ["ro"]'
	set_cmd 'touch /dev/x 2>&1; echo x >/dev/null && echo null-ok; test -c /dev/pts/ptmx && echo pts-ok; touch /dev/shm/y && echo shm-ok; test -d /dev/mqueue && echo mqueue-ok; readlink /dev/ptmx; grep " /dev " /proc/self/mountinfo | cut -d" " -f5,6'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"Read-only file system"* ]]
	[ "${lines[1]}" = null-ok ]
	[ "${lines[2]}" = pts-ok ]
	[ "${lines[3]}" = shm-ok ]
	[ "${lines[4]}" = mqueue-ok ]
	[ "${lines[5]}" = pts/ptmx ]
	[[ "${lines[6]}" == "/dev ro,"* ]]
}

@test "/dev: a tmpfs /dev with \"ro\" and a terminal: /dev/console is bound before /dev goes read-only" {
	update_config '(.mounts[] | select(.destination == "/dev") | .options) += ["ro"] | .process.terminal = true'
	set_cmd 'test -c /dev/console && echo console-ok; touch /dev/x 2>&1; true'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	grep -q console-ok "$BATS_TEST_TMPDIR/tty.out"
	grep -q "Read-only file system" "$BATS_TEST_TMPDIR/tty.out"
}
