#!/usr/bin/env bats
# rootfs and mounts.

load helpers

# add_mount JSON: append one entry to .mounts
add_mount() {
	update_config ".mounts += [$1]"
}

@test "rootfs: root.path relative (default) and absolute" {
	set_cmd 'cat /image-dir/file'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "from the image" ]
	update_config ".root.path = \"$BUNDLE/rootfs\""
	run tern run -b "$BUNDLE" "$ID-abs"
	[ "$status" -eq 0 ]
	[ "$output" = "from the image" ]
}

@test "rootfs: root.readonly makes / read-only" {
	update_config '.root.readonly = true'
	set_cmd 'touch /x'
	run_container
	[ "$status" -ne 0 ]
	[[ "$output" == *"Read-only file system"* ]]
	[ ! -e "$BUNDLE/rootfs/x" ]
	# the mounts on top (tmpfs /dev/shm...) stay writable
	set_cmd 'touch /dev/shm/x && echo ok'
	run tern run -b "$BUNDLE" "$ID-2"
	[ "$output" = ok ]
}

@test "rootfs: linux.rootfsPropagation rslave / private" {
	# The host's mounts are private here: put the rootfs on a shared mount
	# so that the propagation type has a peer group to refer to.
	mount --bind "$BUNDLE/rootfs" "$BUNDLE/rootfs"
	mount --make-shared "$BUNDLE/rootfs"
	set_cmd 'awk "\$5 == \"/\"" /proc/self/mountinfo'
	update_config '.linux.rootfsPropagation = "rslave"'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *master:* ]]
	update_config '.linux.rootfsPropagation = "private"'
	run tern run -b "$BUNDLE" "$ID-p"
	[ "$status" -eq 0 ]
	[[ "$output" != *shared:* && "$output" != *master:* ]]
}

@test "rootfs: the container's mounts do not show up on the host" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	! grep -F "$BUNDLE/rootfs/proc" /proc/self/mountinfo || false
}

@test "mounts: bind, ro bind" {
	mkdir -p "$BATS_TEST_TMPDIR/hostdir"
	echo host-data >"$BATS_TEST_TMPDIR/hostdir/f"
	add_mount "{\"destination\": \"/mnt/rw\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/hostdir\", \"options\": [\"bind\"]}"
	add_mount "{\"destination\": \"/mnt/ro\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/hostdir\", \"options\": [\"bind\", \"ro\"]}"
	set_cmd 'cat /mnt/rw/f; echo new >/mnt/rw/g; cat /mnt/ro/g; touch /mnt/ro/h 2>&1; true'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = host-data ]
	[ "${lines[1]}" = new ]
	[[ "${lines[2]}" == *"Read-only file system"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/hostdir/g")" = new ]
	[ ! -e "$BATS_TEST_TMPDIR/hostdir/h" ]
}

@test "mounts: a bind-mounted file" {
	echo file-data >"$BATS_TEST_TMPDIR/hostfile"
	add_mount "{\"destination\": \"/etc/hostfile\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/hostfile\", \"options\": [\"bind\", \"ro\"]}"
	set_cmd 'cat /etc/hostfile'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = file-data ]
}

@test "mounts: rbind brings submounts, bind does not" {
	mkdir -p "$BATS_TEST_TMPDIR/tree/sub"
	mount -t tmpfs tmpfs "$BATS_TEST_TMPDIR/tree/sub"
	echo in-submount >"$BATS_TEST_TMPDIR/tree/sub/f"
	add_mount "{\"destination\": \"/mnt/r\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/tree\", \"options\": [\"rbind\"]}"
	add_mount "{\"destination\": \"/mnt/b\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/tree\", \"options\": [\"bind\"]}"
	set_cmd 'cat /mnt/r/sub/f; ls /mnt/b/sub | wc -l'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = in-submount ]
	[ "${lines[1]}" = 0 ]
}

@test "mounts: proc, sysfs, devpts, mqueue, cgroup, tmpfs are mounted with their types" {
	set_cmd 'for d in /proc /sys /dev/pts /dev/mqueue /sys/fs/cgroup /dev/shm /dev; do grep " $d " /proc/self/mountinfo | head -1 | sed "s/.* - \([^ ]*\) .*/$(echo $d | sed "s,/,_,g") \1/"; done'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == *"_proc proc"* ]]
	[[ "$output" == *"_sys sysfs"* ]]
	[[ "$output" == *"_dev_pts devpts"* ]]
	[[ "$output" == *"_dev_mqueue mqueue"* ]]
	[[ "$output" == *"_sys_fs_cgroup tmpfs"* || "$output" == *"_sys_fs_cgroup cgroup"* ]]
	[[ "$output" == *"_dev_shm tmpfs"* ]]
	[[ "$output" == *"_dev tmpfs"* ]]
}

@test "mounts: tmpfs with size and mode" {
	add_mount '{"destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m", "mode=1750"]}'
	set_cmd 'stat -c %a /scratch; df -k /scratch | tail -1'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1750 ]
	[ "$(echo "${lines[1]}" | awk '{print $2}')" = 1024 ]
}

@test "mounts: overlay with lowerdir/upperdir/workdir under the test dir" {
	o=$BATS_TEST_TMPDIR/ov
	mkdir -p "$o/lower" "$o/upper" "$o/work"
	echo lower-data >"$o/lower/l"
	add_mount "{\"destination\": \"/ov\", \"type\": \"overlay\", \"source\": \"overlay\", \"options\": [\"lowerdir=$o/lower\", \"upperdir=$o/upper\", \"workdir=$o/work\"]}"
	set_cmd 'cat /ov/l; echo up >/ov/u'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = lower-data ]
	[ "$(cat "$o/upper/u")" = up ]
	[ ! -e "$o/lower/u" ]
}

@test "mounts: noexec, nosuid, nodev have their effect" {
	add_mount '{"destination": "/nx", "type": "tmpfs", "source": "tmpfs", "options": ["noexec", "nosuid", "nodev"]}'
	add_mount '{"destination": "/ex", "type": "tmpfs", "source": "tmpfs", "options": ["exec"]}'
	# busybox picks the applet from argv[0]: the copies are called "true".
	set_cmd 'cp /bin/busybox /nx/true; cp /bin/busybox /ex/true; /ex/true && echo ex-ok; /nx/true 2>&1 || echo nx-failed; grep " /nx " /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *ex-ok* ]]
	[[ "$output" == *"Permission denied"* ]]
	[[ "$output" == *nx-failed* ]]
	mi=$(echo "$output" | grep " /nx ")
	[[ "$mi" == *nosuid* && "$mi" == *nodev* && "$mi" == *noexec* ]]
}

@test "mounts: propagation options (shared / private) on a bind mount" {
	mkdir -p "$BATS_TEST_TMPDIR/p1" "$BATS_TEST_TMPDIR/p2"
	add_mount "{\"destination\": \"/mnt/sh\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/p1\", \"options\": [\"rbind\", \"rshared\"]}"
	add_mount "{\"destination\": \"/mnt/pr\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/p2\", \"options\": [\"rbind\", \"rprivate\"]}"
	set_cmd 'grep " /mnt/sh " /proc/self/mountinfo; grep " /mnt/pr " /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *shared:* ]]
	[[ "${lines[1]}" != *shared:* && "${lines[1]}" != *master:* ]]
}

@test "mounts: tmpcopyup keeps the image's files under a tmpfs" {
	add_mount '{"destination": "/image-dir", "type": "tmpfs", "source": "tmpfs", "options": ["tmpcopyup"]}'
	set_cmd 'cat /image-dir/file; grep " /image-dir " /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "from the image" ]
	[[ "${lines[1]}" == *tmpfs* ]]
}

@test "mounts: a destination symlink pointing outside the rootfs touches nothing on the host" {
	outside=$BATS_TEST_TMPDIR/outside
	ln -s "$outside" "$BUNDLE/rootfs/evil-abs"
	ln -s "../../../../../../../../../../..$outside-rel" "$BUNDLE/rootfs/evil-rel"
	add_mount '{"destination": "/evil-abs/m", "type": "tmpfs", "source": "tmpfs"}'
	add_mount '{"destination": "/evil-rel", "type": "tmpfs", "source": "tmpfs"}'
	set_cmd 'touch /evil-abs/m/x /evil-rel/y; echo done'
	run_container
	# Either outcome is acceptable for the container (resolved inside the
	# rootfs, or refused); what must never happen is a host-side effect.
	[ ! -e "$outside" ]
	[ ! -e "$outside-rel" ]
	! grep -F "$outside" /proc/self/mountinfo || false
}

@test "mounts: a bad mount source fails, names it, leaves nothing behind" {
	set_args /bin/sleep "$MARK"
	add_mount "{\"destination\": \"/mnt/x\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/no-such-source\", \"options\": [\"bind\"]}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly no-such-source
}

@test "mounts: a tmpfs without mode= gets the mode of the directory it covers, 1777 where there was none" {
	mkdir -m 0750 "$BUNDLE/rootfs/t750"
	mkdir "$BUNDLE/rootfs/t2710" && chmod 2710 "$BUNDLE/rootfs/t2710"
	add_mount '{"destination": "/t750", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]}'
	add_mount '{"destination": "/t2710", "type": "tmpfs", "source": "tmpfs", "options": ["ro"]}'
	add_mount '{"destination": "/new/tnone", "type": "tmpfs", "source": "tmpfs"}'
	set_cmd 'stat -c "%n %a" /t750 /t2710 /new/tnone; grep -c " /t750 .* tmpfs " /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "/t750 750" ]
	[ "${lines[1]}" = "/t2710 2710" ]
	[ "${lines[2]}" = "/new/tnone 1777" ]
	[ "${lines[3]}" = 1 ]
	# the image's directories are left as they were
	[ "$(stat -c %a "$BUNDLE/rootfs/t750")" = 750 ]
}

@test "mounts: a tmpfs with mode= gets that mode, also over an existing directory" {
	# runc 1.1.5 lacks this: it chmods the tmpfs to the covered directory's
	# mode even when mode= is given (runc 1.2 and crun honour mode=)
	is_runc && skip "runc 1.1.5 lacks this"
	mkdir -m 0750 "$BUNDLE/rootfs/t750"
	add_mount '{"destination": "/t750", "type": "tmpfs", "source": "tmpfs", "options": ["mode=0711", "size=1m"]}'
	add_mount '{"destination": "/image-dir", "type": "tmpfs", "source": "tmpfs", "options": ["tmpcopyup", "mode=0700"]}'
	set_cmd 'stat -c "%n %a" /t750 /image-dir; cat /image-dir/file'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "/t750 711" ]
	[ "${lines[1]}" = "/image-dir 700" ]
	[ "${lines[2]}" = "from the image" ]
}

# share_rootfs: make the rootfs a shared mount on the host (the host's own
# mounts are private here), so that propagation has a host peer group to
# receive from or to be cut from. Prints that peer group's number.
share_rootfs() {
	mount --bind "$BUNDLE/rootfs" "$BUNDLE/rootfs"
	mount --make-shared "$BUNDLE/rootfs"
	awk -v m="$BUNDLE/rootfs" '$5 == m { for (i = 7; $i != "-"; i++) if ($i ~ /^shared:/) print substr($i, 8) }' /proc/self/mountinfo | tail -1
}

# root_line: the optional fields of "/" in the container's mountinfo (and of
# /proc, a mount of the container's own), printed by the container.
root_fields_cmd='for m in / /proc; do awk -v m=$m "\$5 == m { f = \"\"; for (i = 7; \$i != \"-\"; i++) f = f \" \" \$i; print m \":\" f }" /proc/self/mountinfo | tail -1; done'

@test "rootfs: every linux.rootfsPropagation value works and shows in the container's mountinfo as the spec says" {
	host_group=$(share_rootfs)
	[ -n "$host_group" ]
	set_cmd "$root_fields_cmd"
	for p in private rprivate slave rslave shared rshared unbindable runbindable; do
		# runc 1.1.5 lacks this for unbindable (its bind of the rootfs fails),
		# shared (no peer group) and slave (it makes the rootfs's own mount
		# private, so "/" receives nothing from the host)
		if is_runc && [[ $p == *unbindable || $p == *shared || $p == slave ]]; then continue; fi
		update_config ".linux.rootfsPropagation = \"$p\""
		run tern run -b "$BUNDLE" "$ID-$p"
		echo "$p: $output"
		[ "$status" -eq 0 ]
		root=$(echo "$output" | grep '^/:')
		proc=$(echo "$output" | grep '^/proc:')
		case $p in
		*private)
			[[ "$root" != *shared:* && "$root" != *master:* && "$root" != *unbindable* ]] ;;
		*slave)
			# receives from the host's peer group, does not send
			[[ "$root" == *"master:$host_group"* && "$root" != *shared:* ]] ;;
		*shared)
			# a new peer group, not the host's
			[[ "$root" == *shared:* && "$root" != *"shared:$host_group"* && "$root" != *master:* ]] ;;
		*unbindable)
			[[ "$root" == *unbindable* ]] ;;
		esac
		# the recursive values reach the container's other mounts
		case $p in
		rshared) [[ "$proc" == *shared:* ]] ;;
		runbindable) [[ "$proc" == *unbindable* ]] ;;
		rprivate) [[ "$proc" != *shared:* && "$proc" != *master:* ]] ;;
		esac
	done
}

@test "rootfs: rootfsPropagation slave receives the host's mounts under the rootfs, private does not" {
	# runc 1.1.5 lacks this (see above)
	is_runc && skip "runc 1.1.5 lacks this"
	share_rootfs >/dev/null
	mkdir -p "$BUNDLE/rootfs/mnt/from-host"
	set_args /bin/sleep "$MARK"
	update_config '.linux.rootfsPropagation = "slave"'
	run tern run -d -b "$BUNDLE" "$ID-slave"
	[ "$status" -eq 0 ]
	update_config '.linux.rootfsPropagation = "private"'
	run tern run -d -b "$BUNDLE" "$ID-private"
	[ "$status" -eq 0 ]
	mount -t tmpfs from-host "$BUNDLE/rootfs/mnt/from-host"
	echo hello >"$BUNDLE/rootfs/mnt/from-host/f"
	run tern exec "$ID-slave" cat /mnt/from-host/f
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	run tern exec "$ID-private" cat /mnt/from-host/f
	[ "$status" -ne 0 ]
	umount "$BUNDLE/rootfs/mnt/from-host"
}

# ---- mount destinations that reach /proc ----

@test "mounts: a destination reaching /proc through a symlink in the rootfs is refused, naming it" {
	# (refused by the old code too: the name was checked, then resolved
	# again for the mount; the test below shows the check is now on the
	# fd that is mounted on)
	is_runc && skip "runc 1.1.5 mounts through the symlink, onto the container's /proc/sys"
	ln -s /proc "$BUNDLE/rootfs/pp"
	mkdir "$BUNDLE/vol"
	for m in '"type": "tmpfs", "source": "tmpfs"' \
		"\"type\": \"bind\", \"source\": \"$BUNDLE/vol\", \"options\": [\"bind\"]"; do
		cp "$BUNDLE/config.json" "$BUNDLE/config.orig"
		add_mount "{\"destination\": \"/pp/sys/kernel\", $m}"
		run tern run -b "$BUNDLE" "$ID"
		check_fails_cleanly /pp/sys/kernel
		is_runc || [[ "$output" == *"the destination \`/pp/sys/kernel\` is inside /proc"* ]]
		mv "$BUNDLE/config.orig" "$BUNDLE/config.json"
	done
	# and a destination under /proc that is not one of the emulated files
	add_mount '{"destination": "/proc/sys/kernel", "type": "tmpfs", "source": "tmpfs"}'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly /proc/sys/kernel
}

# mounted_on_checked_fd TRACE: in an `strace -f` log, the tmpfs mounted with
# "size=1234k" and every move_mount target were statfs'ed on the very fd
# they are mounted on, after it was opened (no lookup between check and
# mount that a container sharing a volume could race).
mounted_on_checked_fd() {
	awk '
	{ pid = $1; l = $0; sub(/^[0-9]+ +/, "", l) }
	# a call that returns a new fd (possibly resumed on a line of its own)
	l ~ /^(<\.\.\. )?(open|openat|openat2|dup|dup2|dup3|open_tree|fsmount|recvmsg)[ (]/ ||
	    l ~ /^(<\.\.\. )?fcntl[ (].*F_DUPFD/ {
		if (match(l, /= [0-9]+$/)) { fd = substr(l, RSTART + 2); st[pid, fd] = "opened" }
	}
	l ~ /^fstatfs\([0-9]+,/ { split(substr(l, 9), a, ","); st[pid, a[1]] = "checked" }
	l ~ /^close\([0-9]+/ { split(substr(l, 7), a, ")"); st[pid, a[1]] = "closed" }
	l ~ /^mount\(.*size=1234k/ {
		match(l, /"\/proc\/self\/fd\/[0-9]+"/); fd = substr(l, RSTART + 15, RLENGTH - 16)
		print "tmpfs onto fd " fd ": " st[pid, fd]; n++; bad += st[pid, fd] != "checked"
	}
	l ~ /^move_mount\(/ {
		split(l, a, ", "); fd = a[3]
		print "move_mount onto fd " fd ": " st[pid, fd]; n++; bad += st[pid, fd] != "checked"
	}
	END { exit !(n >= 2 && bad == 0) }' "$1"
}

@test "mounts: the destination checked for procfs is the fd mounted on (strace)" {
	is_tern || skip "checks tern's own syscalls"
	mkdir "$BUNDLE/vol"
	# only the config's mounts use move_mount then (no masked or read-only
	# paths, no console)
	update_config '.linux.maskedPaths = [] | .linux.readonlyPaths = []'
	add_mount '{"destination": "/t", "type": "tmpfs", "source": "tmpfs", "options": ["size=1234k"]}'
	add_mount "{\"destination\": \"/v\", \"type\": \"bind\", \"source\": \"$BUNDLE/vol\", \"options\": [\"bind\"]}"
	run strace -f -qq -o "$BATS_TEST_TMPDIR/trace" \
		-e trace=open,openat,openat2,dup,dup2,dup3,fcntl,open_tree,fsmount,recvmsg,fstatfs,close,mount,move_mount \
		"$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID" </dev/null
	[ "$status" -eq 0 ]
	run mounted_on_checked_fd "$BATS_TEST_TMPDIR/trace"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c "^move_mount onto" <<<"$output")" -eq 1 ]
}

# ---- mountinfo order ----

@test "mounts: the container's mountinfo lists the rootfs, then the mounts in config order, parents first" {
	mkdir "$BUNDLE/vol1" "$BUNDLE/vol2"
	add_mount '{"destination": "/a", "type": "tmpfs", "source": "tmpfs"}'
	add_mount "{\"destination\": \"/a/b\", \"type\": \"bind\", \"source\": \"$BUNDLE/vol1\", \"options\": [\"bind\"]}"
	add_mount '{"destination": "/c", "type": "tmpfs", "source": "tmpfs"}'
	add_mount "{\"destination\": \"/d\", \"type\": \"bind\", \"source\": \"$BUNDLE/vol2\", \"options\": [\"rbind\"]}"
	set_cmd 'cat /proc/self/mountinfo'
	run_container
	[ "$status" -eq 0 ]
	# mount points in list order, and each mount's parent listed before it
	# (the first line's parent, the root's, is outside the namespace)
	local order
	order=$(awk '{ seen[$1] = 1 } NR > 1 && !seen[$2] { print "parent of " $5 " listed after it" }
		{ print $5 }' <<<"$output" | grep -E -x '/|/a|/a/b|/c|/d|parent .*' | tr '\n' ' ')
	echo "$output"
	echo "order: $order"
	[ "$order" = "/ /a /a/b /c /d " ]
}

# ---- issue 33: "ro" on a mount that has mounts under it ----

@test "mounts: a read-only tmpfs at /a with a bind at /a/b: /a/b's mountpoint is made before /a goes read-only" {
	mkdir -p "$BATS_TEST_TMPDIR/hostdir"
	echo host-data >"$BATS_TEST_TMPDIR/hostdir/f"
	add_mount '{"destination": "/a", "type": "tmpfs", "source": "tmpfs", "options": ["ro", "nosuid"]}'
	add_mount "{\"destination\": \"/a/b\", \"type\": \"bind\", \"source\": \"$BATS_TEST_TMPDIR/hostdir\", \"options\": [\"bind\"]}"
	set_cmd 'cat /a/b/f; touch /a/x 2>&1; echo new >/a/b/g && echo b-rw; grep -E " /a(/b)? " /proc/self/mountinfo | cut -d" " -f5,6'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = host-data ]
	[[ "${lines[1]}" == *"Read-only file system"* ]]
	[ "${lines[2]}" = b-rw ]
	[[ "${lines[3]}" == "/a ro,"* ]]
	[[ "${lines[4]}" == "/a/b rw,"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/hostdir/g")" = new ]
}
