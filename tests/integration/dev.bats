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
