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

@test "userns: the child's error is what tern says when it has exited before tern's next message to it (not a broken pipe)" {
	is_tern || skip "tern's own sync protocol"
	command -v strace >/dev/null || skip "LOUD: no strace (scripts/test.sh installs it) to hold tern's second message back"
	three_ranges
	update_config '.linux.uidMappings = [{"containerID": 1000, "hostID": 200000, "size": 1000}]'
	# tern's second sendmsg to the child (the bind sources, after `go`)
	# waits 300 ms: the child, unable to become root, has failed and gone
	run strace -o /dev/null -e trace=sendmsg -e inject=sendmsg:delay_enter=300000:when=2 \
		"$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID"
	check_fails_cleanly
	[[ "$output" == *"uid 0"*"linux.uidMappings"* ]]
	[[ "$output" != *"Broken pipe"* ]]
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

# ---- bind sources opened by the parent (mount-source.h) ----

# private_sources: under $PRIV, a host directory of root's with mode 0700
# that the container's root (host uid 100000) cannot enter, holding a
# directory vol/ (with a file) and a file file.txt, both readable by anyone.
private_sources() {
	PRIV=$BATS_TEST_TMPDIR/private
	mkdir -p "$PRIV/vol"
	echo "from vol" >"$PRIV/vol/f"
	echo "a file" >"$PRIV/file.txt"
	chmod 755 "$PRIV/vol"
	chmod 644 "$PRIV/vol/f" "$PRIV/file.txt"
	chown 0:0 "$PRIV"
	chmod 700 "$PRIV"
	N=$(jq '.mounts | length' "$BUNDLE/config.json")
	export PRIV N
}

add_mount() {
	update_config ".mounts += [$1]"
}

@test "userns: a bind source under a host directory the container's root cannot enter works (as in runc)" {
	three_ranges
	private_sources
	add_mount "{\"destination\": \"/vol\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"bind\"]}"
	set_cmd 'cat /vol/f; stat -c %u /vol/f'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "from vol" ]
	# host root's file, unmapped inside
	[ "${lines[1]}" = "$(cat /proc/sys/kernel/overflowuid)" ]
}

@test "userns: an rbind from under a 0700 host directory brings its submounts" {
	three_ranges
	private_sources
	mkdir "$PRIV/vol/sub"
	mount -t tmpfs -o mode=755 tmpfs "$PRIV/vol/sub"
	echo "in the submount" >"$PRIV/vol/sub/g"
	add_mount "{\"destination\": \"/vol\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"rbind\"]}"
	set_cmd 'cat /vol/f /vol/sub/g'
	run_container
	umount "$PRIV/vol/sub"
	[ "$status" -eq 0 ]
	[ "$output" = "from vol
in the submount" ]
}

@test "userns: a file bind from under a 0700 host directory" {
	three_ranges
	private_sources
	# the destination does not exist in the image: made as a file
	add_mount "{\"destination\": \"/etc/made/file.txt\", \"type\": \"bind\", \"source\": \"$PRIV/file.txt\", \"options\": [\"bind\"]}"
	set_cmd 'cat /etc/made/file.txt; [ -f /etc/made/file.txt ] && echo regular'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "a file
regular" ]
}

@test "userns: a read-only bind from under a 0700 host directory is read-only inside" {
	three_ranges
	private_sources
	chown 100000:110000 "$PRIV/vol"
	add_mount "{\"destination\": \"/vol\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"bind\", \"ro\", \"nosuid\", \"nodev\", \"noexec\"]}"
	set_cmd 'touch /vol/new 2>&1; grep " /vol " /proc/self/mountinfo | cut -d" " -f6'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"Read-only file system"* ]]
	[[ ",${lines[1]}," == *,ro,* && ",${lines[1]}," == *,nosuid,* ]]
	[[ ",${lines[1]}," == *,nodev,* && ",${lines[1]}," == *,noexec,* ]]
	[ ! -e "$PRIV/vol/new" ]
}

@test "userns: a missing bind source fails before anything is created, naming the mount and the source" {
	three_ranges
	mkdir "$BUNDLE/vol"
	# a first bind that works, onto a destination the image lacks: runtimes
	# that mount in order create it before they reach the missing one
	add_mount "{\"destination\": \"/first-made\", \"type\": \"bind\", \"source\": \"$BUNDLE/vol\", \"options\": [\"bind\"]}"
	N=$(jq '.mounts | length' "$BUNDLE/config.json")
	add_mount "{\"destination\": \"/second\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/no-such-dir\", \"options\": [\"bind\"]}"
	run_container
	check_fails_cleanly "no-such-dir"
	[[ "${output,,}" == *"no such file or directory"* ]]
	is_runc || [[ "$output" == *"mount \`$BATS_TEST_TMPDIR/no-such-dir\` to \`/second\` (mounts[$N]): No such file or directory"* ]]
	[ ! -e "$BUNDLE/rootfs/first-made" ]
	[ ! -e "$BUNDLE/rootfs/second" ]
}

@test "userns: a read-only host mount bound into the container stays read-only, even for its CAP_SYS_ADMIN" {
	# the kernel locks the flags of the host's mounts in a namespace made for
	# a less privileged user namespace: the sources must be copies of those
	three_ranges
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	local ro=$BATS_TEST_TMPDIR/ro
	mkdir -p "$ro"
	chmod 777 "$ro"
	mount --bind "$ro" "$ro"
	mount -o remount,bind,ro "$ro"
	add_mount "{\"destination\": \"/ro\", \"type\": \"bind\", \"source\": \"$ro\", \"options\": [\"bind\"]}"
	set_cmd 'mount -o remount,bind,rw /ro 2>/dev/null && echo remounted; touch /ro/x 2>/dev/null && echo wrote; echo done'
	run_container
	umount "$ro"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	[ ! -e "$ro/x" ]
}

@test "userns: a submount of an rbind source cannot be unmounted to see what it covers" {
	three_ranges
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/hidden"
	echo secret >"$src/hidden/under"
	chmod -R a+rX "$src"
	mount -t tmpfs tmpfs "$src/hidden"
	add_mount "{\"destination\": \"/src\", \"type\": \"bind\", \"source\": \"$src\", \"options\": [\"rbind\"]}"
	set_cmd 'umount /src/hidden 2>/dev/null; umount -l /src/hidden 2>/dev/null; cat /src/hidden/under 2>/dev/null; echo done'
	run_container
	umount "$src/hidden"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
}

@test "userns: the opened sources are closed once attached (none left in the init at prestart)" {
	# runc 1.1.5 lacks this: it keeps them open until the init execs
	is_runc && skip "runc 1.1.5 keeps the mount sources open until exec"
	three_ranges
	private_sources
	# the hook counts the init's open fds (the state's pid)
	update_config ".hooks.prestart = [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"pid=\$(sed -n 's/.*\\\"pid\\\": *\\\\([0-9]*\\\\).*/\\\\1/p'); ls /proc/\$pid/fd | wc -l >\$0\", \"$BATS_TEST_TMPDIR/fds-none\"], \"env\": [\"PATH=/usr/bin:/bin\"]}]"
	run_container
	[ "$status" -eq 0 ]
	for i in 1 2 3 4 5 6; do
		add_mount "{\"destination\": \"/vol$i\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"rbind\"]}"
	done
	update_config ".hooks.prestart[0].args[3] = \"$BATS_TEST_TMPDIR/fds-six\""
	run tern run -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	# stdio and the runtime's own few at least: the hook did count
	[ "$(cat "$BATS_TEST_TMPDIR/fds-none")" -ge 3 ]
	[ "$(cat "$BATS_TEST_TMPDIR/fds-six")" = "$(cat "$BATS_TEST_TMPDIR/fds-none")" ]
}

@test "userns: on a kernel without mount_setattr (5.2-5.11) the sources are opened on the host side too" {
	# runc 1.1.5 lacks this: the helper only makes sense for tern's fallback
	is_tern || skip "tests tern's fallback to O_PATH sources"
	three_ranges
	private_sources
	mkdir "$PRIV/vol/sub"
	mount -t tmpfs -o mode=755 tmpfs "$PRIV/vol/sub"
	echo "in the submount" >"$PRIV/vol/sub/g"
	# readonlyPaths are made with mount_setattr, which is what is missing
	update_config '.linux.readonlyPaths = []'
	add_mount "{\"destination\": \"/vol\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"rbind\", \"ro\"]}"
	add_mount "{\"destination\": \"/etc/file.txt\", \"type\": \"bind\", \"source\": \"$PRIV/file.txt\", \"options\": [\"bind\"]}"
	set_cmd 'cat /vol/f /vol/sub/g /etc/file.txt; touch /vol/x 2>&1'
	run in_file "$BASE_ROOTFS/bin/enosys" mount_setattr "$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID"
	umount "$PRIV/vol/sub"
	[ "${lines[0]}" = "from vol" ]
	[ "${lines[1]}" = "in the submount" ]
	[ "${lines[2]}" = "a file" ]
	[[ "${lines[3]}" == *"Read-only file system"* ]]
}

@test "userns: bind sources from under a 0700 host directory on the two-stage path (time namespace)" {
	# runc 1.1.5 lacks this (time namespaces)
	three_ranges
	private_sources
	# the sources go to the init once the first stage has made its
	# namespaces (after SYNC_CHILD_PID), not right after the clone
	add_namespace time
	add_mount "{\"destination\": \"/vol\", \"type\": \"bind\", \"source\": \"$PRIV/vol\", \"options\": [\"rbind\", \"ro\"]}"
	add_mount "{\"destination\": \"/file.txt\", \"type\": \"bind\", \"source\": \"$PRIV/file.txt\", \"options\": [\"bind\"]}"
	set_cmd 'cat /vol/f /file.txt'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "from vol
a file" ]
}

@test "bind sources: without a user namespace a bind of a shared host mount is the container's slave" {
	# what the container mounts below it stays inside; what the host mounts
	# below it later shows inside, as with any mount after rootfs rslave
	local s=$BATS_TEST_TMPDIR/shared
	mkdir -p "$s/inner" "$s/late"
	mount --bind "$s" "$s"
	mount --make-shared "$s"
	add_mount "{\"destination\": \"/s\", \"type\": \"bind\", \"source\": \"$s\", \"options\": [\"bind\"]}"
	add_mount '{"destination": "/s/inner", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]}'
	set_args sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	local leaked=0
	grep -q " $s/inner " /proc/self/mountinfo && leaked=1
	mount -t tmpfs tmpfs "$s/late"
	run tern exec "$ID" sh -c 'grep -c " /s/late " /proc/self/mountinfo'
	umount "$s/late"
	tern delete -f "$ID" >/dev/null
	umount -l "$s"
	[ "$leaked" -eq 0 ]
	[ "$output" = 1 ]
}

@test "userns: a plain bind of a host directory with a mount under it shows the directory without the submount; rbind shows both" {
	# crun clones such a source in the host's namespace; runc 1.1.5 fails
	# (the kernel refuses a non-recursive copy of a tree whose submounts
	# are locked, as they are in the container's namespace: EINVAL)
	is_runc && skip "runc 1.1.5 fails with EINVAL"
	three_ranges
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/sub"
	echo "in the dir" >"$src/f"
	chmod -R a+rX "$src"
	mount -t tmpfs -o mode=755 tmpfs "$src/sub"
	echo "in the submount" >"$src/sub/g"
	add_mount "{\"destination\": \"/plain\", \"type\": \"bind\", \"source\": \"$src\", \"options\": [\"bind\"]}"
	add_mount "{\"destination\": \"/rec\", \"type\": \"bind\", \"source\": \"$src\", \"options\": [\"rbind\"]}"
	set_cmd 'cat /plain/f; ls -A /plain/sub | wc -l; cat /rec/f /rec/sub/g; grep " /plain/sub " /proc/self/mountinfo | wc -l'
	run_container
	umount "$src/sub"
	[ "$status" -eq 0 ]
	[ "$output" = "in the dir
0
in the dir
in the submount
0" ]
}

@test "userns: a plain bind of a read-only host mount with a mount under it is refused, naming it; rbind keeps it read-only" {
	# The copy that makes such a plain bind work (made outside the
	# container's user namespace) is not locked by the kernel: the
	# container's root could remount it read-write. An rbind's copy is.
	is_runc && skip "runc 1.1.5 fails with EINVAL"
	three_ranges
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/sub"
	echo "in the dir" >"$src/f"
	chmod -R a+rX "$src"
	mount --bind "$src" "$src"
	mount -o remount,bind,ro "$src"
	mount -t tmpfs -o mode=755 tmpfs "$src/sub"
	add_mount "{\"destination\": \"/plain\", \"type\": \"bind\", \"source\": \"$src\", \"options\": [\"bind\"]}"
	set_cmd 'cat /plain/f'
	run_container
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"plain bind of \`$src\` (mounts["*"]) in a user namespace"*"its own mount is ro"*"rbind"* ]]
	check_nothing_left "$ID"
	# rbind: the kernel locks the flags, remount rw fails in there
	update_config '.mounts[-1].options = ["rbind"]
		| .process.capabilities.bounding += ["CAP_SYS_ADMIN"]
		| .process.capabilities.effective += ["CAP_SYS_ADMIN"]
		| .process.capabilities.permitted += ["CAP_SYS_ADMIN"]'
	set_cmd 'cat /plain/f; mount -o remount,bind,rw /plain 2>/dev/null && echo REMOUNTED; grep " /plain " /proc/self/mountinfo | cut -d" " -f6'
	run_container
	umount "$src/sub"
	umount "$src"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "in the dir
ro,relatime" ]
}
