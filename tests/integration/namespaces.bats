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
	set_cmd 'ip link show lo | head -1; tcpecho 5555 & srv=$!; ok=; for i in $(seq 600); do if echo hello | nc 127.0.0.1 5555; then ok=1; break; fi; sleep 0.1; done; kill $srv 2>/dev/null; [ -n "$ok" ]'
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

# Without a mount namespace (none in linux.namespaces) the container shares
# the caller's: tern mounts under the rootfs there, chroots the container
# into it, and unmounts exactly what it mounted at delete.
# runc 1.1.5 lacks this: it refuses maskedPaths/readonlyPaths without a
# mount namespace, makes the caller's / rslave, ignores root.readonly and
# leaves every mount behind; these tests are tern's own.

# rootfs_mounts [ROOTFS]: the host's mounts at or under the rootfs.
rootfs_mounts() {
	awk -v r="${1:-$BUNDLE/rootfs}" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo
}

# unmount_test_mounts: the test's own mounts under the bundle, deepest
# first (on a shared /tmp, as in the guest, the kernel makes copies of a
# bind of the rootfs onto itself too).
unmount_test_mounts() {
	local mp
	while mp=$(awk -v b="$BUNDLE" 'index($5, b) == 1 { print $5 }' /proc/self/mountinfo | sort -r | head -1) && [ -n "$mp" ]; do
		umount -l "$mp"
	done
}

# host_root_fields: the caller's own / and /run/netns (shared here), with
# their propagation: tern must leave them as they are.
host_root_fields() {
	awk '$5 == "/" || $5 == "/run/netns" { f = $5; for (i = 7; $i != "-"; i++) f = f " " $i; print f }' /proc/self/mountinfo
}

@test "no mount namespace: run, exec, delete --force; chrooted in the caller's namespace, every mount tern made is gone after" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	set_args /bin/sleep "$MARK"
	# A mount that was there before is not the container's: it stays (its
	# copy in the container's rootfs bind goes).
	mkdir -p "$BUNDLE/rootfs/mnt/pre"
	mount -t tmpfs pre "$BUNDLE/rootfs/mnt/pre"
	echo pre-data >"$BUNDLE/rootfs/mnt/pre/f"
	host_before=$(host_root_fields)
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	# the container's mounts are in the caller's namespace, under the rootfs
	rootfs_mounts | grep -qx "$BUNDLE/rootfs/proc"
	[ "$(host_root_fields)" = "$host_before" ]
	run tern exec "$ID" sh -c 'readlink /proc/self/ns/mnt; cat /image-dir/file /mnt/pre/f; awk "\$5 == \"/\"" /proc/self/mountinfo | wc -l; wc -c </proc/timer_list; grep " /proc/sys " /proc/self/mountinfo'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(readlink /proc/$$/ns/mnt)" ]
	[ "${lines[1]}" = "from the image" ]
	[ "${lines[2]}" = pre-data ]
	[ "${lines[3]}" = 1 ]
	# maskedPaths and readonlyPaths apply (as crun does)
	[ "${lines[4]}" = 0 ]
	[[ "${lines[5]}" == *" ro,"* ]]
	# the init is chrooted too
	[ "$(readlink "/proc/$(state_field "$ID" pid)/root")" = "$BUNDLE/rootfs" ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" != *"still in use"* ]]
	[ "$(rootfs_mounts)" = "$BUNDLE/rootfs/mnt/pre" ]
	[ "$(cat "$BUNDLE/rootfs/mnt/pre/f")" = pre-data ]
	umount "$BUNDLE/rootfs/mnt/pre"
	check_nothing_left "$ID"
}

@test "no mount namespace: run in the foreground, and delete of a stopped container, leave no mount" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	update_config '.root.readonly = true'
	set_cmd 'touch /x 2>&1; echo done'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	check_nothing_left "$ID"
	# root.readonly made the container's own rootfs mount read-only, not
	# the host's mount holding the rootfs
	touch "$BUNDLE/rootfs/x"
	set_args /bin/true
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	wait_status "$ID-2" stopped
	[ -n "$(rootfs_mounts)" ]
	run tern delete "$ID-2"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID-2"
}

@test "no mount namespace: a failed create leaves no mount behind (bad mount, failing hook, missing binary)" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	cp "$BUNDLE/config.json" "$BATS_TEST_TMPDIR/good.json"
	# a mount that fails after proc, /dev and the others are in place
	update_config ".mounts += [{\"destination\": \"/mnt/x\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/no-such-source\", \"options\": [\"bind\"]}]"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly no-such-source
	# a createRuntime hook that fails once every mount is made
	cp "$BATS_TEST_TMPDIR/good.json" "$BUNDLE/config.json"
	update_config '.hooks.createRuntime = [{"path": "/bin/false"}]'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly createRuntime
	# after the chroot and the masks: a process that cannot be executed
	cp "$BATS_TEST_TMPDIR/good.json" "$BUNDLE/config.json"
	set_args /no/such/binary
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly /no/such/binary
}

@test "no mount namespace: a create killed halfway is unmounted by delete" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	set_args /bin/sleep "$MARK"
	mkfifo "$BATS_TEST_TMPDIR/release"
	# the hook runs once every mount is made, and waits
	update_config ".hooks.createRuntime = [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"touch $BATS_TEST_TMPDIR/in-hook; cat $BATS_TEST_TMPDIR/release\"]}]"
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&- &
	create_pid=$!
	wait_for_file "$BATS_TEST_TMPDIR/in-hook"
	rootfs_mounts | grep -qx "$BUNDLE/rootfs/proc"
	kill -9 "$create_pid"
	wait "$create_pid" || true
	echo >"$BATS_TEST_TMPDIR/release"
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"

	# the same again, then a new create of that id reclaims the leftovers
	# (without a cgroup mount: tern reads the cgroup hierarchies from
	# mountinfo before it reclaims the old state, and would take the old
	# container's cgroup mounts under the rootfs for the host's)
	update_config '.mounts |= map(select(.type != "cgroup"))'
	rm "$BATS_TEST_TMPDIR/in-hook"
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&- &
	create_pid=$!
	wait_for_file "$BATS_TEST_TMPDIR/in-hook"
	kill -9 "$create_pid"
	wait "$create_pid" || true
	echo >"$BATS_TEST_TMPDIR/release"
	update_config 'del(.hooks)'
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(rootfs_mounts | grep -cx "$BUNDLE/rootfs/proc")" = 1 ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "no mount namespace: a mount still in use is detached with a warning; one tern did not make keeps delete from finishing, and says so" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	# a host process working in the container's /dev/shm
	(cd "$BUNDLE/rootfs/dev/shm" && exec sleep $((MARK + 1))) &
	EXTRA_PIDS=$!
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$BUNDLE/rootfs/dev/shm"*"still in use"* ]]
	check_nothing_left "$ID"
	kill "$EXTRA_PIDS"

	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	# mounted by someone else, on the container's rootfs mount
	mount -t tmpfs other "$BUNDLE/rootfs/image-dir"
	run tern delete --force "$ID-2"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$BUNDLE/rootfs/image-dir"*"tern did not mount"* ]]
	# the state stays, so that delete can finish later
	[ "$(state_field "$ID-2" status)" = stopped ]
	umount "$BUNDLE/rootfs/image-dir"
	run tern delete "$ID-2"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID-2"
}

@test "no mount namespace: rootfsPropagation applies to the container's rootfs mount only" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	# The rootfs on a shared mount with a peer group of its own (this
	# machine's mounts are private, a systemd host's shared): a host peer
	# group to receive from. A tmpfs of its own, not a bind of the rootfs
	# onto itself, which on a shared /tmp (the guest's) joins /tmp's group.
	r=$BATS_TEST_TMPDIR/shared-root
	mkdir "$r"
	mount -t tmpfs shared-root "$r"
	mount --make-private "$r"
	cp -a "$BUNDLE/rootfs/." "$r/"
	mount --make-shared "$r"
	update_config ".root.path = \"$r\""
	group=$(awk -v m="$r" '$5 == m { for (i = 7; $i != "-"; i++) if ($i ~ /^shared:/) print substr($i, 8) }' /proc/self/mountinfo)
	[ -n "$group" ]
	host_before=$(host_root_fields)
	mounts_before=$(rootfs_mounts "$r")
	set_cmd 'awk "\$5 == \"/\" { f = \"\"; for (i = 7; \$i != \"-\"; i++) f = f \" \" \$i; print \"/:\" f }" /proc/self/mountinfo'
	for p in private rprivate slave rslave shared rshared unbindable runbindable; do
		update_config ".linux.rootfsPropagation = \"$p\""
		run tern run -b "$BUNDLE" "$ID-$p"
		echo "$p: $output"
		[ "$status" -eq 0 ]
		case $p in
		*private) [ "$output" = "/:" ] ;;
		*slave) [ "$output" = "/: master:$group" ] ;;
		*shared) [[ "$output" == "/: shared:"* && "$output" != "/: shared:$group" ]] ;;
		*unbindable) [ "$output" = "/: unbindable" ] ;;
		esac
		# the caller's mounts keep their propagation; only the rootfs's own
		# mount is left under it
		[ "$(host_root_fields)" = "$host_before" ]
		[ "$(rootfs_mounts "$r")" = "$mounts_before" ]
	done
	umount "$r"
	[ -z "$(rootfs_mounts "$r")" ]
	check_nothing_left "$ID"
}

@test "no mount namespace: a rootfs bound onto itself in its parent's peer group is refused, the caller's mounts untouched" {
	is_runc && skip "runc 1.1.5 lacks this"
	remove_namespace mount
	# `mount --bind rootfs rootfs` on a shared filesystem: the rootfs mount
	# is a peer of its parent, so the container's rootfs bind would be
	# copied under it, in the caller's namespace
	mount --bind "$BUNDLE" "$BUNDLE"
	mount --make-shared "$BUNDLE"
	mount --bind "$BUNDLE/rootfs" "$BUNDLE/rootfs"
	before=$(grep -F "$BUNDLE" /proc/self/mountinfo | cut -d' ' -f1-9)
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$BUNDLE/rootfs"*"peer group"*"--make-private"* ]]
	[ "$(grep -F "$BUNDLE" /proc/self/mountinfo | cut -d' ' -f1-9)" = "$before" ]
	[ ! -e "$ROOT/$ID" ]
	# made private, it works, and the caller's mounts stay as they were
	mount --make-private "$BUNDLE/rootfs"
	before=$(grep -F "$BUNDLE" /proc/self/mountinfo | cut -d' ' -f1-9)
	set_cmd 'cat /image-dir/file'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = "from the image" ]
	[ "$(grep -F "$BUNDLE" /proc/self/mountinfo | cut -d' ' -f1-9)" = "$before" ]
	unmount_test_mounts
	check_nothing_left "$ID"
}

@test "no mount namespace with a new user namespace: a clear error, nothing left" {
	remove_namespace mount
	userns_mappings
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"linux.namespaces"*"mount namespace"* ]]
	check_nothing_left "$ID"
}

@test "no mount namespace: joining the caller's own mount namespace by path is the same, never a pivot_root of the caller's root" {
	is_runc && skip "runc 1.1.5 lacks this"
	add_namespace mount /proc/self/ns/mnt
	set_cmd 'cat /image-dir/file'
	# in a mount namespace of the test's own, so that a regression (a
	# pivot_root of the caller's root) could not hurt the host
	run in_file unshare -m --propagation unchanged sh -c '"$0" --root "$1" run -b "$2" "$3"; echo "rc=$?"; grep -c "$2/rootfs" /proc/self/mountinfo; [ -e /image-dir ] && echo "the caller was moved into the rootfs"; true' "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = "from the image
rc=0
0" ]
	check_nothing_left "$ID"
}
