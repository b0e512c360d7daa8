#!/usr/bin/env bats
# Idmapped mounts: mounts[].uidMappings/gidMappings and the idmap / ridmap
# options (runtime-spec 1.2), with and without a container user namespace.
# runc 1.1.5 and crun 1.8.1 predate the options: every test is marked
# `# runc 1.1.5 lacks this`.

load helpers

setup() {
	setup_bundle
	# A host directory with a file of host uid/gid 1000; the directory
	# itself stays root's.
	SRC=$BATS_TEST_TMPDIR/src
	mkdir -p "$SRC"
	touch "$SRC/f"
	chown 1000:1000 "$SRC/f"
	chmod 755 "$SRC"
	make_traversable "$BATS_TEST_TMPDIR"
	OVERFLOW="$(cat /proc/sys/kernel/overflowuid):$(cat /proc/sys/kernel/overflowgid)"
	# The index the next added mount gets, for messages.
	N=$(jq '.mounts | length' "$BUNDLE/config.json")
	export SRC OVERFLOW N
}

# add_mount JSON: append one mount object to config.mounts.
add_mount() {
	update_config ".mounts += [$1]"
}

# map C H S: a one-range mapping list, as JSON.
map() {
	echo "[{\"containerID\": $1, \"hostID\": $2, \"size\": $3}]"
}

# container_userns: root in the container is host 100000 (65536 ids), the
# rootfs copy is owned by it.
container_userns() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	N=$(jq '.mounts | length' "$BUNDLE/config.json")
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
}

@test "idmap: host uid 1000 appears as 2000 through the mount (no user namespace)" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	set_cmd 'stat -c %u:%g /mnt/f; stat -c %u:%g /mnt; grep -c " /mnt .*idmapped" /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 2000:2000 ]
	# the directory is root's on disk, which the mapping does not cover
	[ "${lines[1]}" = "$OVERFLOW" ]
	[ "${lines[2]}" = 1 ]
	# the host's view is untouched
	[ "$(stat -c %u:%g "$SRC/f")" = 1000:1000 ]
}

@test "idmap: host uid 1000 appears as root through the mount (no user namespace)" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"source\": \"$SRC\",
		\"options\": [\"rbind\", \"idmap\"], \"uidMappings\": $(map 1000 0 1),
		\"gidMappings\": $(map 1000 0 1)}"
	set_cmd 'stat -c %u:%g /mnt/f'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 0:0 ]
}

@test "idmap: with a container user namespace, host uid 1000 is the container's root" {
	# runc 1.1.5 lacks this
	container_userns
	# the mapping's hostID is the host's view: 100000 is root inside
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 100000 1),
		\"gidMappings\": $(map 1000 100000 1)}"
	add_mount "{\"destination\": \"/plain\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\"]}"
	set_cmd 'stat -c %u:%g /mapped/f /plain/f; cat /proc/self/uid_map'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0:0 ]
	[ "${lines[1]}" = "$OVERFLOW" ]
	[ "$(echo "${lines[2]}" | tr -s ' ' | sed 's/^ //')" = "0 100000 65536" ]
}

@test "idmap: written through the mount by the container's root, a file is host uid 1000's" {
	# runc 1.1.5 lacks this
	container_userns
	chown 1000:1000 "$SRC"
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 100000 1),
		\"gidMappings\": $(map 1000 100000 1)}"
	set_cmd 'touch /mapped/new && stat -c %u:%g /mapped/new'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 0:0 ]
	[ "$(stat -c %u:%g "$SRC/new")" = 1000:1000 ]
}

@test "idmap: the option without mappings uses the container's user namespace mappings" {
	# runc 1.1.5 lacks this
	container_userns
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"idmap\"]}"
	add_mount "{\"destination\": \"/plain\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\"]}"
	set_cmd 'stat -c %u:%g /mapped/f /plain/f /mapped'
	run_container
	[ "$status" -eq 0 ]
	# on-disk 1000 is shown as 1000 inside, as if the files were the
	# container's own; without the idmap the host's 1000 is unmapped
	[ "${lines[0]}" = 1000:1000 ]
	[ "${lines[1]}" = "$OVERFLOW" ]
	# on-disk root is the container's root
	[ "${lines[2]}" = 0:0 ]
}

@test "idmap: the option without mappings in a user namespace joined by path uses that namespace" {
	# runc 1.1.5 lacks this
	# a long-lived user namespace 0 -> 100000 (65536) to join
	unshare --user sleep "$MARK" &
	EXTRA_PIDS=$!
	local upid=$!
	for _ in $(seq 50); do
		[ "$(readlink /proc/$upid/ns/user)" != "$(readlink /proc/self/ns/user)" ] && break
		sleep 0.1
	done
	echo "0 100000 65536" >/proc/$upid/uid_map
	echo "0 100000 65536" >/proc/$upid/gid_map
	add_namespace user "/proc/$upid/ns/user"
	update_config '.mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"idmap\"]}"
	set_cmd 'stat -c %u:%g /mapped/f'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 1000:1000 ]
}

@test "idmap: ridmap maps a submount of an rbind, idmap only the top" {
	# runc 1.1.5 lacks this
	local other=$BATS_TEST_TMPDIR/other
	mkdir -p "$SRC/sub" "$other"
	touch "$other/g"
	chown 1000:1000 "$other/g"
	mount --bind "$other" "$SRC/sub"
	add_mount "{\"destination\": \"/top\", \"source\": \"$SRC\",
		\"options\": [\"rbind\", \"idmap\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	add_mount "{\"destination\": \"/all\", \"source\": \"$SRC\",
		\"options\": [\"rbind\", \"ridmap\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	set_cmd 'stat -c "%n %u:%g" /top/f /top/sub/g /all/f /all/sub/g'
	run_container
	umount "$SRC/sub"
	[ "$status" -eq 0 ]
	[ "$output" = "/top/f 2000:2000
/top/sub/g 1000:1000
/all/f 2000:2000
/all/sub/g 2000:2000" ]
}

@test "idmap: other options still apply (ro)" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\", \"ro\"], \"uidMappings\": $(map 1000 0 1),
		\"gidMappings\": $(map 1000 0 1)}"
	set_cmd 'stat -c %u /mnt/f; touch /mnt/x 2>&1; echo rc=$?'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[[ "${lines[1]}" == *"Read-only file system"* ]]
	[ "${lines[2]}" = "rc=1" ]
	[ ! -e "$SRC/x" ]
}

@test "idmap: mappings without the idmap option still idmap the mount (as runc 1.2)" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	set_cmd 'stat -c %u:%g /mnt/f'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 2000:2000 ]
}

@test "idmap: a destination through an absolute symlink stays inside the rootfs" {
	# runc 1.1.5 lacks this
	local hostdir=$BATS_TEST_TMPDIR/hostdir
	mkdir -p "$hostdir"
	touch "$hostdir/host-only"
	ln -s "$hostdir" "$BUNDLE/rootfs/link"
	add_mount "{\"destination\": \"/link\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	set_cmd 'stat -c %u /link/f; ls /link'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 2000 ]
	[ "${lines[1]}" = f ]
	# the target was made inside the rootfs, the host directory is untouched
	[ -d "$BUNDLE/rootfs$hostdir" ]
	[ "$(ls "$hostdir")" = host-only ]
}

@test "idmap: no tree or namespace fd reaches the container process" {
	# runc 1.1.5 lacks this
	container_userns
	add_mount "{\"destination\": \"/a\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 100000 1),
		\"gidMappings\": $(map 1000 100000 1)}"
	add_mount "{\"destination\": \"/b\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"ridmap\"]}"
	set_args /bin/listfds
	run_container
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f1 | sort -n | tr '\n' ' ')" = "0 1 2 " ]
}

@test "idmap: uidMappings without gidMappings is refused, naming mounts[N]" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 2000 1)}"
	run_container
	check_fails_cleanly "mounts[$N].uidMappings: must be given together with gidMappings"
}

@test "idmap: the idmap option without mappings and without a user namespace is refused" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"idmap\"]}"
	run_container
	check_fails_cleanly "mounts[$N].options: \`idmap\`/\`ridmap\` without uidMappings/gidMappings" "no user namespace"
}

@test "idmap: mappings on a mount that is not a bind are refused" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"tmpfs\", \"source\": \"tmpfs\",
		\"options\": [\"idmap\"], \"uidMappings\": $(map 0 2000 1), \"gidMappings\": $(map 0 2000 1)}"
	run_container
	check_fails_cleanly "mounts[$N].uidMappings: idmapped mounts are only supported for bind mounts"
}

@test "idmap: the ridmap option on a mount that is not a bind is refused" {
	# runc 1.1.5 lacks this
	container_userns
	add_mount '{"destination": "/mnt", "type": "tmpfs", "source": "tmpfs", "options": ["ridmap"]}'
	run_container
	check_fails_cleanly "mounts[$N].options: idmapped mounts are only supported for bind mounts"
}

@test "idmap: overlapping ranges in a mount's mappings are refused, naming the entry" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$SRC\",
		\"options\": [\"bind\", \"idmap\"],
		\"uidMappings\": [{\"containerID\": 0, \"hostID\": 2000, \"size\": 10}, {\"containerID\": 20, \"hostID\": 2005, \"size\": 1}],
		\"gidMappings\": $(map 0 2000 1)}"
	run_container
	check_fails_cleanly "mounts[$N].uidMappings[1]: hostID range 2005-2005 overlaps entry [0]"
}

@test "idmap: a filesystem that cannot be idmapped (sysfs) fails cleanly, naming mounts[N]" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"/sys/kernel\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 0 2000 1),
		\"gidMappings\": $(map 0 2000 1)}"
	run_container
	check_fails_cleanly "mount \`/sys/kernel\` to \`/mnt\` (mounts[$N])" "does not support idmapped mounts" "Invalid argument"
}

@test "idmap: tmpfs can be idmapped on this kernel (a bind of a host tmpfs)" {
	# runc 1.1.5 lacks this
	local t=$BATS_TEST_TMPDIR/tmpfs
	mkdir -p "$t"
	mount -t tmpfs -o mode=755 tmpfs "$t"
	touch "$t/f"
	chown 1000:1000 "$t/f"
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$t\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 2000 1),
		\"gidMappings\": $(map 1000 2000 1)}"
	set_cmd 'stat -c %u:%g /mnt/f'
	run_container
	umount "$t"
	[ "$status" -eq 0 ]
	[ "$output" = 2000:2000 ]
}

@test "idmap: a missing source fails cleanly, naming mounts[N]" {
	# runc 1.1.5 lacks this
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/none\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 0 2000 1),
		\"gidMappings\": $(map 0 2000 1)}"
	run_container
	check_fails_cleanly "(mounts[$N]): No such file or directory"
}

@test "idmap: a relative source is relative to the bundle" {
	# runc 1.1.5 lacks this
	mkdir "$BUNDLE/vol"
	touch "$BUNDLE/vol/f"
	chown 1000:1000 "$BUNDLE/vol/f"
	add_mount "{\"destination\": \"/mnt\", \"type\": \"bind\", \"source\": \"vol\",
		\"options\": [\"bind\", \"idmap\"], \"uidMappings\": $(map 1000 3000 1),
		\"gidMappings\": $(map 1000 3000 1)}"
	set_cmd 'stat -c %u:%g /mnt/f'
	# from elsewhere: the source must not be found relative to tern's cwd
	cd /
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 3000:3000 ]
}

@test "idmap: features report idmapped mounts and both options" {
	# runc 1.1.5 lacks this
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.linux.mountExtensions.idmap.enabled == true'
	echo "$output" | jq -e '.mountOptions | index("idmap") != null and index("ridmap") != null'
}

@test "idmap: on the two-stage path too (user and time namespaces)" {
	# runc 1.1.5 lacks this
	container_userns
	add_namespace time
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"idmap\"]}"
	set_cmd 'stat -c %u:%g /mapped/f'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 1000:1000 ]
}

@test "idmap: an idmapped bind of a read-only host mount stays read-only for the container's CAP_SYS_ADMIN" {
	# runc 1.1.5 lacks this
	# The tree is copied from the container's own mount namespace, where the
	# kernel locked the host mount's flags; a copy made in the host's
	# namespace could be remounted read-write from inside.
	container_userns
	update_config '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])'
	chmod 777 "$SRC"
	mount --bind "$SRC" "$SRC"
	mount -o remount,bind,ro "$SRC"
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$SRC\", \"options\": [\"bind\", \"idmap\"]}"
	set_cmd 'mount -o remount,bind,rw /mapped 2>/dev/null && echo remounted; touch /mapped/x 2>/dev/null && echo wrote; echo done'
	run_container
	umount "$SRC"
	[ "$status" -eq 0 ]
	[ "$output" = done ]
	[ ! -e "$SRC/x" ]
}

@test "idmap: a source under a host directory the container's root cannot enter" {
	# runc 1.1.5 lacks this
	container_userns
	local priv=$BATS_TEST_TMPDIR/private
	mkdir -p "$priv"
	mv "$SRC" "$priv/src"
	chmod 700 "$priv"
	add_mount "{\"destination\": \"/mapped\", \"type\": \"bind\", \"source\": \"$priv/src\", \"options\": [\"bind\", \"idmap\"]}"
	set_cmd 'stat -c %u:%g /mapped/f'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = 1000:1000 ]
}
