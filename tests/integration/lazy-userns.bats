#!/usr/bin/env bats
# Lazy pages (userfaultfd) for a container with a user namespace of its
# own: criu opens each restored process's userfaultfd inside that
# namespace, where vm.unprivileged_userfaultfd=0 forbids the syscall; tern
# then preloads tern-uffd-preload.so into criu, which makes them through
# /dev/userfaultfd (src/criu/criu-uffd.h). The memory must come back
# whole, and nothing of the device or the preload may reach the container.

load helpers
load snapshot-helpers

setup() {
	is_tern || skip "tern's own lazy restore"
	[ -c /dev/userfaultfd ] || skip "LOUD: no /dev/userfaultfd (Linux >= 6.1) on this host"
	[ "$(cat /proc/sys/vm/unprivileged_userfaultfd)" = 0 ] ||
		skip "LOUD: vm.unprivileged_userfaultfd is 1 here: the syscall itself is allowed"
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	cd "$BATS_TEST_TMPDIR"
	# (ids mapped to the host's own: criu opens the images from inside)
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]'
}

teardown() {
	[ -n "${LAZY_DAEMON_PID:-}" ] && kill -9 "$LAZY_DAEMON_PID" 2>/dev/null
	teardown_bundle
}

# pids_of ID: the container's init and every process below it.
pids_of() {
	local todo=("$(state_field "$1" pid)") p
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		echo "$p"
		for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
			todo+=("$c")
		done
	done
}

# nothing_of_the_device ID: no process of ID holds /dev/userfaultfd or a
# userfaultfd, maps the preload or has it in its environment.
nothing_of_the_device() {
	local p n=0
	for p in $(pids_of "$1"); do
		n=$((n + 1))
		if ls -l /proc/"$p"/fd/ | grep -E 'userfaultfd'; then
			echo "process $p holds a userfaultfd or the device"
			return 1
		fi
		if grep -F tern-uffd-preload /proc/"$p"/maps; then
			echo "process $p maps the preload"
			return 1
		fi
		if tr '\0' '\n' </proc/"$p"/environ | grep -E '^LD_PRELOAD='; then
			echo "process $p has LD_PRELOAD"
			return 1
		fi
	done
	# (the init and memhash at least)
	[ "$n" -ge 2 ]
}

# all_copied LOG MIN: criu lazy-pages' LOG says it transferred every page
# of a process that had at least MIN of them.
all_copied() {
	grep -E 'UFFD transferred pages: \(([0-9]+)/\1\)' "$1" |
		sed -E 's/.*\(([0-9]+)\/.*/\1/' | awk -v m="$2" '$1 >= m {ok=1} END {exit !ok}' ||
		{ tail -20 "$1"; false; }
}

# restored_hash: memhash hashes its memory again (SIGUSR1); prints the hash.
restored_hash() {
	local h=$BUNDLE/rootfs/tmp/hash pid
	rm -f "$h"
	pid=$(pgrep -P "$(state_field "$ID" pid)" -x memhash)
	kill -USR1 "$pid"
	wait_until 60 grep -q '^again ' "$h"
	cut -d' ' -f2 "$h"
}

@test "lazy-userns: restore -d of a user-namespaced container takes its memory lazily through /dev/userfaultfd; nothing of it reaches the container" {
	# a hook run during the restore (from tern's environment, which holds
	# LD_PRELOAD only while criu starts) records what it was given
	update_config '.hooks.createRuntime = [{"path": "/bin/sh", "args": ["sh", "-c", "env >>'"$BATS_TEST_TMPDIR"'/hook-env"]}]'
	start_memhash 64
	tern checkpoint --image-path "$IMG" "$ID"
	rm -f "$BATS_TEST_TMPDIR/hook-env"
	# (the debug log to a file: the restored init takes the restore's
	# stdio as its own, which must be as the checkpoint saw it, empty)
	tern --debug --log "$BATS_TEST_TMPDIR/debug.log" restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	grep -q "lazy pages in a user namespace: through /dev/userfaultfd" "$BATS_TEST_TMPDIR/debug.log" ||
		{ cat "$BATS_TEST_TMPDIR/debug.log"; false; }
	# criu restored lazily, and its daemon copied every page of memhash's
	# 64 MiB in (criu's own restore reads them in and logs no such line)
	grep -q 'Lazy restore skips' "$IMG/restore.log"
	! grep -q 'Lazy pages are not available' "$IMG/restore.log"
	all_copied "$IMG/lazy-pages.log" 16384
	[ "$(state_field "$ID" status)" = running ]
	# the memory as it was, every byte
	[ "$(restored_hash)" = "$FIRST" ]
	nothing_of_the_device "$ID"
	# its network namespace was dumped and restored without criu's
	# network lock (no TCP connection kept): no lock rule was left there
	grep -qx 'netns-unlocked 1' "$IMG/tern-checkpoint.txt"
	local pid
	pid=$(state_field "$ID" pid)
	! nsenter --net=/proc/"$pid"/ns/net iptables-legacy-save | grep -q CRIU
	# the hook ran, without the preload
	[ -s "$BATS_TEST_TMPDIR/hook-env" ]
	! grep -q LD_PRELOAD "$BATS_TEST_TMPDIR/hook-env"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "lazy-userns: without /dev/userfaultfd the restore fills the memory page by page, and says so" {
	start_memhash 16
	tern checkpoint --image-path "$IMG" "$ID"
	# (a file over the device, in a mount namespace of this test's own)
	touch "$BATS_TEST_TMPDIR/not-a-device"
	run in_file unshare -m --propagation private sh -c \
		'mount --bind "$1" /dev/userfaultfd && shift && exec "$@"' sh "$BATS_TEST_TMPDIR/not-a-device" \
		"$TERN_BIN" --root "$ROOT" --debug --log "$BATS_TEST_TMPDIR/debug.log" restore -d \
		--image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "no lazy pages in a user namespace.*no /dev/userfaultfd.*page by page" \
		"$BATS_TEST_TMPDIR/debug.log" || { cat "$BATS_TEST_TMPDIR/debug.log"; false; }
	! grep -q 'Lazy restore skips' "$IMG/restore.log"
	[ ! -e "$IMG/lazy-pages.log" ]
	[ "$(restored_hash)" = "$FIRST" ]
	nothing_of_the_device "$ID"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "lazy-userns: the container's own fds at the device fd's number (70, 71) come back as they were, with every process's memory lazily" {
	# (the preload holds the device at 70 in criu: a restored fd there
	# moves it; two processes, each with a userfaultfd of its own)
	set_cmd "exec 70</etc/passwd 71</etc/group; /bin/memhash 16 /tmp/hash & sleep $MARK"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	FIRST=$(cut -d' ' -f2 "$BUNDLE/rootfs/tmp/hash")
	tern checkpoint --image-path "$IMG" "$ID"
	tern --debug --log "$BATS_TEST_TMPDIR/debug.log" restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	grep -q "through /dev/userfaultfd" "$BATS_TEST_TMPDIR/debug.log"
	all_copied "$IMG/lazy-pages.log" 4096
	[ "$(restored_hash)" = "$FIRST" ]
	local p n=0
	for p in $(pids_of "$ID"); do
		[[ "$(readlink /proc/"$p"/fd/70)" == */etc/passwd ]] || { ls -l /proc/"$p"/fd/; false; }
		[[ "$(readlink /proc/"$p"/fd/71)" == */etc/group ]] || { ls -l /proc/"$p"/fd/; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
	nothing_of_the_device "$ID"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "lazy-userns: restore --lazy-pages from a criu lazy-pages daemon of the caller's own works for a user-namespaced container too" {
	start_memhash 16
	tern checkpoint --image-path "$IMG" "$ID"
	"${TERN_CRIU:-/opt/tern-criu/bin/criu}" lazy-pages -D "$IMG" -o lazy-pages.log -v4 \
		</dev/null >/dev/null 2>&1 3>&- &
	LAZY_DAEMON_PID=$!
	wait_for_file "$IMG/lazy-pages.socket" 60
	tern --debug --log "$BATS_TEST_TMPDIR/debug.log" restore -d --lazy-pages --image-path "$IMG" \
		-b "$BUNDLE" "$ID"
	grep -q "through /dev/userfaultfd" "$BATS_TEST_TMPDIR/debug.log"
	[ "$(restored_hash)" = "$FIRST" ]
	# the daemon copied every page in and is done
	timeout 60 tail --pid="$LAZY_DAEMON_PID" -f /dev/null
	wait "$LAZY_DAEMON_PID"
	all_copied "$IMG/lazy-pages.log" 4096
	nothing_of_the_device "$ID"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "lazy-userns: root mapped to host 100000 (hostUsers: false's shape): lazily restored through /dev/userfaultfd, every byte back" {
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	set_cmd "/bin/memhash 64 /tmp/hash & sleep $MARK"
	"$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	FIRST=$(cut -d' ' -f2 "$BUNDLE/rootfs/tmp/hash")
	tern checkpoint --image-path "$IMG" "$ID"
	tern --debug --log "$BATS_TEST_TMPDIR/debug.log" restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	grep -q "through /dev/userfaultfd" "$BATS_TEST_TMPDIR/debug.log"
	all_copied "$IMG/lazy-pages.log" 16384
	local pid
	pid=$(state_field "$ID" pid)
	[ "$(stat -c %u "/proc/$pid")" = 100000 ]
	[ "$(restored_hash)" = "$FIRST" ]
	nothing_of_the_device "$ID"
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "lazy-userns: snapshot and clone of a user-namespaced container: the clone's memory comes lazily through /dev/userfaultfd" {
	start_memhash 64
	tern snapshot "$ID" s
	tern --debug --log "$BATS_TEST_TMPDIR/debug.log" clone "$ID" s "$ID-c"
	grep -q "through /dev/userfaultfd" "$BATS_TEST_TMPDIR/debug.log" ||
		{ cat "$BATS_TEST_TMPDIR/debug.log"; false; }
	[ "$(state_field "$ID-c" status)" = running ]
	# (filled behind the clone: its hash waits for every page)
	run signal_memhash "$ID-c" USR1 again
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f2)" = "$FIRST" ] || { echo "$output $FIRST"; false; }
	nothing_of_the_device "$ID-c"
	delete_clones_then_source "$ID-c"
}
