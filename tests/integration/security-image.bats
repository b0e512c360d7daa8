#!/usr/bin/env bats
# Hostile images (runc CVE-2026-41579, crun CVE-2026-47766): a rootfs whose
# /dev, /dev/pts, /dev/shm or /dev/mqueue is a symlink (to "/", to a host
# path, to "../../.."), and linux.devices paths through such links. Nothing
# may be mounted or written outside the rootfs, ever: each case checks the
# host's mount table and a marker directory at the host path the links
# name. The container either works, with everything inside its rootfs, or
# fails with an error naming the path.

load helpers

setup() {
	# runc 1.1.5 follows these links out: it made /ptmx, /fd, /stdin... on
	# the host's root here. Against another runtime only when asked.
	is_tern || [ -n "${HOSTILE_IMAGE_TESTS:-}" ] ||
		skip "not run against $TERN_BIN unless HOSTILE_IMAGE_TESTS=1: runc 1.1.5 writes to the host's / here"
	setup_bundle
	# the host path the image's links point at, with a marker in it
	HOSTT=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$HOSTT/pts" "$HOSTT/shm" "$HOSTT/mqueue"
	echo marker >"$HOSTT/marker"
	export HOSTT
}

# host_view: the host's mounts at the places a hostile /dev could reach
# (the root, /dev and its usual mounts, /tmp, anything under the host
# target), and every file under the host target, with type and size.
host_view() {
	awk -v t="$HOSTT" '$5 == "/" || $5 ~ /^\/dev(\/|$)/ || $5 == "/tmp" || index($5, t) == 1 { print $1, $5 }' /proc/self/mountinfo
	find "$HOSTT" -printf '%p %y %s\n' | sort
	# what the default devices would be called on the host's root
	ls -d /null /zero /full /random /urandom /tty /ptmx /pts /shm /mqueue /mydev /fd /stdin /stdout /stderr /core /console 2>/dev/null || true
}

# try_image WHAT...: run the container (the command lists /dev) and check
# the host did not change; the run must succeed or fail naming each WHAT.
try_image() {
	local before after
	before=$(host_view)
	set_cmd 'ls /dev >/dev/null && echo ran'
	run tern run -b "$BUNDLE" "$ID"
	after=$(host_view)
	echo "$output"
	if [ "$before" != "$after" ]; then
		echo "the host changed:"
		diff <(echo "$before") <(echo "$after") || true
		return 1
	fi
	if [ "$status" -eq 0 ]; then
		[ "$output" = ran ]
	else
		check_fails_cleanly "$@"
	fi
}

# dev_link TARGET: the image's /dev is a symlink to TARGET.
dev_link() {
	rm -rf "$BUNDLE/rootfs/dev"
	ln -s "$1" "$BUNDLE/rootfs/dev"
}

no_dev_tmpfs() {
	update_config '.mounts |= map(select(.destination != "/dev"))'
}

with_devices() {
	# (last: a node on the devpts is refused, naming it, in every image)
	update_config '.linux.devices = [{"path": "/dev/mydev", "type": "c", "major": 1, "minor": 5},
		{"path": "/dev/shm/mydev", "type": "c", "major": 1, "minor": 3},
		{"path": "/dev/mqueue/mydev", "type": "c", "major": 1, "minor": 3},
		{"path": "/dev/pts/mydev", "type": "c", "major": 1, "minor": 3}]'
}

@test "security-image: /dev a symlink to /" {
	dev_link /
	try_image /dev
}

@test "security-image: /dev a symlink to a host path" {
	dev_link "$HOSTT"
	try_image /dev
}

@test "security-image: /dev a symlink to ../../.." {
	dev_link ../../..
	try_image /dev
}

@test "security-image: /dev a symlink climbing out to a host path" {
	dev_link "../../../../../../../../..$HOSTT"
	try_image /dev
}

@test "security-image: /dev a symlink, no tmpfs on /dev in the config" {
	no_dev_tmpfs
	for t in / "$HOSTT" ../../.. "../../../../../../../../..$HOSTT"; do
		dev_link "$t"
		try_image /dev
	done
}

@test "security-image: /dev a symlink, with linux.devices" {
	with_devices
	for t in / "$HOSTT" ../../..; do
		dev_link "$t"
		try_image /dev
	done
	no_dev_tmpfs
	for t in / "$HOSTT" ../../..; do
		dev_link "$t"
		try_image /dev
	done
}

# sub_links TARGET-PREFIX: /dev/pts, /dev/shm, /dev/mqueue are symlinks to
# TARGET-PREFIX/pts and so on.
sub_links() {
	local d
	for d in pts shm mqueue; do
		rm -rf "${BUNDLE:?}/rootfs/dev/$d"
		ln -s "$1/$d" "$BUNDLE/rootfs/dev/$d"
	done
}

@test "security-image: /dev/pts, /dev/shm, /dev/mqueue symlinks to a host path" {
	sub_links "$HOSTT"
	# with the config's tmpfs on /dev the links are covered: it must work
	try_image
	no_dev_tmpfs
	try_image /dev
}

@test "security-image: /dev/pts, /dev/shm, /dev/mqueue symlinks to / and ../../.." {
	no_dev_tmpfs
	sub_links /
	try_image /dev
	sub_links ../../../../../..
	try_image /dev
}

@test "security-image: /dev/pts, /dev/shm, /dev/mqueue symlinks, with linux.devices under them" {
	with_devices
	no_dev_tmpfs
	sub_links "$HOSTT"
	try_image /dev
	sub_links "../../../../../../../..$HOSTT"
	try_image /dev
}

# in_userns: a user namespace (devices are then bound from the host's
# /dev onto files the runtime creates: the other path through devices.c).
in_userns() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
}

@test "security-image: in a user namespace, /dev and its mounts as symlinks, with linux.devices" {
	in_userns
	with_devices
	update_config '.linux.devices |= map(select(.path != "/dev/pts/mydev"))'
	for t in / "$HOSTT" ../../..; do
		dev_link "$t"
		try_image /dev
	done
	no_dev_tmpfs
	mkdir "$BUNDLE/rootfs/dev.real"
	chown 100000:100000 "$BUNDLE/rootfs/dev.real"
	for t in / "$HOSTT" ../../..; do
		dev_link "$t"
		try_image /dev
	done
	rm "$BUNDLE/rootfs/dev"
	mv "$BUNDLE/rootfs/dev.real" "$BUNDLE/rootfs/dev"
	sub_links "$HOSTT"
	try_image /dev
}

@test "security-image: a created container (mounts alive) with /dev a symlink to a host path changed nothing on the host" {
	dev_link "$HOSTT"
	with_devices
	update_config '.linux.devices |= map(select(.path != "/dev/pts/mydev"))'
	set_args /bin/sleep "$MARK"
	before=$(host_view)
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(host_view)" = "$before" ]
	# the devices are inside the rootfs, where the link leads from its root
	pid=$(state_field "$ID" pid)
	[ -c "/proc/$pid/root$HOSTT/mydev" ]
	[ -c "/proc/$pid/root$HOSTT/null" ]
	[ ! -e "$HOSTT/mydev" ]
}
