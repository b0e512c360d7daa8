#!/usr/bin/env bats
# The runtime under podman, as users run it: Debian's podman 4.3 with conmon,
# `podman --runtime PATH`. The runtime is $PODMAN_RUNTIME (default: the
# runtime under test, $TERN_BIN), so `TERN_BIN=/usr/sbin/runc bats
# tests/integration/podman.bats` checks that these tests describe what runc
# does under the same podman.
#
# Nothing of the host's podman is touched: every call reads a private
# containers.conf (CONTAINERS_CONF: this machine's rlimits, cgroupfs, file
# locks, a file events log, no default network) and storage.conf, with
# --root, --runroot and --tmpdir under this file's temporary directory;
# containers go below a cgroup parent and into a network namespace of this
# file's own, and teardown_file removes all of it. The image is imported
# from the busybox-static rootfs that helpers.bash builds.

load helpers
bats_require_minimum_version 1.5.0

PODMAN_RUNTIME=${PODMAN_RUNTIME:-$TERN_BIN}
IMAGE=localhost/tern-bats:latest

# pm_raw ARG...: podman with this file's private configuration and storage.
# Bounded: a hung runtime fails its test instead of the suite.
pm_raw() {
	timeout -k 5 100 podman --root "$PM_DIR/root" --runroot "$PM_DIR/runroot" \
		--tmpdir "$PM_DIR/tmp" --runtime "$PODMAN_RUNTIME" "$@"
}

# pm ARG...: pm_raw through in_file (fds 3-9 closed, so that conmon cannot
# hold bats's output open; a transcript for failed tests). Use as `run pm ...`.
pm() {
	in_file pm_raw "$@"
}

# pm_input TEXT ARG...: pm_raw with TEXT on its stdin (for exec -i, which
# returns when the process does, so bats's `run` may read its output).
pm_input() {
	local text=$1
	shift
	pm_raw "$@" <<<"$text" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
}

setup_file() {
	local missing=
	for tool in podman conmon; do
		command -v "$tool" >/dev/null || missing="$missing $tool"
	done
	if [ -n "$missing" ]; then
		echo "podman.bats needs$missing (Debian packages; scripts/test.sh installs them)" >&2
		return 1
	fi
	build_base_rootfs || return 1
	export PM_DIR=$BATS_FILE_TMPDIR/podman
	# podman checks criu's version and runc runs `criu` from PATH: the one
	# that works on this kernel (scripts/install-criu.sh; tern finds it
	# itself) comes first
	[ -d /opt/tern-criu/bin ] && export PATH=/opt/tern-criu/bin:$PATH
	export PM_NETNS=ternpm-$$-$RANDOM
	export PM_CGPARENT=/ternpm-$$-$RANDOM
	mkdir -p "$PM_DIR/tmp" "$PM_DIR/net"
	cat >"$PM_DIR/containers.conf" <<-EOF
		[containers]
		# podman's defaults exceed this machine's hard limits (no CAP_SYS_RESOURCE)
		default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
		netns = "none"

		[network]
		network_config_dir = "$PM_DIR/net"

		[engine]
		cgroup_manager = "cgroupfs"
		events_logger = "file"
		events_logfile_path = "$PM_DIR/events.log"
		lock_type = "file"
		tmp_dir = "$PM_DIR/tmp"
		volume_path = "$PM_DIR/volumes"
	EOF
	cat >"$PM_DIR/storage.conf" <<-EOF
		[storage]
		driver = "overlay"
		graphroot = "$PM_DIR/root"
		runroot = "$PM_DIR/runroot"
	EOF
	export CONTAINERS_CONF=$PM_DIR/containers.conf
	export CONTAINERS_STORAGE_CONF=$PM_DIR/storage.conf
	ip netns add "$PM_NETNS" || return 1
	tar -C "$BASE_ROOTFS" -cf "$PM_DIR/rootfs.tar" . || return 1
	# an import also writes root's blob cache, /var/lib/containers/cache,
	# whatever the storage: here it writes a throwaway one, in a mount
	# namespace of its own (the directory is the one podman would make)
	mkdir -p /var/lib/containers/cache
	unshare -m --propagation private bash -c '
		mount -t tmpfs -o mode=0700 tmpfs /var/lib/containers/cache &&
		timeout -k 5 100 podman --root "$PM_DIR/root" --runroot "$PM_DIR/runroot" \
			--tmpdir "$PM_DIR/tmp" import "$PM_DIR/rootfs.tar" "$1"' _ "$IMAGE" \
		</dev/null >"$PM_DIR/import.log" 2>&1 ||
		{ cat "$PM_DIR/import.log" >&2; return 1; }
}

teardown_file() {
	[ -n "${PM_DIR:-}" ] || return 0
	pm_raw rm --all --force --time 0 </dev/null >/dev/null 2>&1
	pm_raw rmi --all --force </dev/null >/dev/null 2>&1
	# conmon and container processes of this file that outlived podman:
	# their command lines name this file's own directories
	pkill -9 -f -- "$PM_DIR/" 2>/dev/null
	local mp cg
	awk '{print $5}' /proc/self/mountinfo | grep -F "$PM_DIR/" | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null; done
	find /sys/fs/cgroup/ -maxdepth 3 -type d -name "${PM_CGPARENT#/}" 2>/dev/null |
		while read -r cg; do
			find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
		done
	[ -n "${PM_NETNS:-}" ] && ip netns del "$PM_NETNS" 2>/dev/null
	rm -rf "$PM_DIR"
	return 0
}

setup() {
	# container names start with this, so teardown finds this test's own
	NAME=tp${BATS_SUITE_TEST_NUMBER:-0}-$$-$RANDOM
	# every container: this file's cgroup parent and network namespace
	# (a network namespace given by path gets /etc/resolv.conf and
	# /etc/hosts like a bridged one, without touching the host's network)
	RUN_OPTS=(--cgroup-parent "$PM_CGPARENT" --network "ns:/run/netns/$PM_NETNS")
}

teardown() {
	local c
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -s "$BATS_TEST_TMPDIR/calls.log" ]; then
		echo "--- last podman calls of this test:"
		tail -n 30 "$BATS_TEST_TMPDIR/calls.log" | cut -c1-400
	fi
	for c in $(pm_raw ps --all --format '{{.Names}}' </dev/null 2>/dev/null); do
		[[ "$c" == "$NAME"* ]] && pm_raw rm --force --time 0 "$c" </dev/null >/dev/null 2>&1
	done
	return 0
}

# start NAME ARG...: `podman run -d` a container named NAME running ARG...
start() {
	local name=$1
	shift
	pm run -d --name "$name" "${RUN_OPTS[@]}" "$@" >/dev/null
}

@test "podman: runs a container with the runtime under test" {
	start "$NAME" "$IMAGE" sleep 1000
	run pm inspect --format '{{.OCIRuntime}} {{.State.Running}}' "$NAME"
	[ "$output" = "$PODMAN_RUNTIME true" ]
	run pm exec "$NAME" cat /image-dir/file
	[ "$output" = "from the image" ]
}

# ---- signals: conmon ignores SIGPIPE ----

@test "podman: a container started by podman has no signal ignored or blocked; a shell's PIPE trap fires" {
	run pm run --rm "${RUN_OPTS[@]}" "$IMAGE" sh -c \
		'grep -E "^Sig(Blk|Ign)" /proc/self/status; trap "echo trapped PIPE" PIPE; kill -PIPE $$; echo after'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "SigBlk:	0000000000000000" ]
	[ "${lines[1]}" = "SigIgn:	0000000000000000" ]
	[ "${lines[2]}" = "trapped PIPE" ]
	[ "${lines[3]}" = after ]
}

@test "podman: a process podman execs has no signal ignored or blocked; a shell's PIPE trap fires" {
	start "$NAME" "$IMAGE" sleep 1000
	run pm exec "$NAME" sh -c \
		'grep -E "^Sig(Blk|Ign)" /proc/self/status; trap "echo trapped PIPE" PIPE; kill -PIPE $$; echo after'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "SigBlk:	0000000000000000" ]
	[ "${lines[1]}" = "SigIgn:	0000000000000000" ]
	[ "${lines[2]}" = "trapped PIPE" ]
	[ "${lines[3]}" = after ]
}

# ---- exit codes: podman maps "permission denied" to 126, "no such file" to 127 ----

# noexec_volume: a host directory holding an executable script, for a
# volume mounted noexec.
noexec_volume() {
	mkdir -p "$BATS_TEST_TMPDIR/scripts"
	printf '#!/bin/sh\necho ran\n' >"$BATS_TEST_TMPDIR/scripts/s"
	chmod 755 "$BATS_TEST_TMPDIR/scripts/s"
}

@test "podman: run of a directory, a non-executable file, a script on noexec exits 126" {
	noexec_volume
	run pm run --rm "${RUN_OPTS[@]}" "$IMAGE" /tmp
	echo "directory: $status $output"
	[ "$status" -eq 126 ]
	run pm run --rm "${RUN_OPTS[@]}" "$IMAGE" /image-dir/file
	echo "non-executable file: $status $output"
	[ "$status" -eq 126 ]
	run pm run --rm "${RUN_OPTS[@]}" -v "$BATS_TEST_TMPDIR/scripts:/mnt:noexec" "$IMAGE" /mnt/s
	echo "script on noexec: $status $output"
	[ "$status" -eq 126 ]
	# the same script where exec is allowed runs
	run pm run --rm "${RUN_OPTS[@]}" -v "$BATS_TEST_TMPDIR/scripts:/mnt" "$IMAGE" /mnt/s
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
}

@test "podman: run of a missing command exits 127" {
	run -127 pm run --rm "${RUN_OPTS[@]}" "$IMAGE" /nonexistent
	echo "missing path: $status $output"
	[ "$status" -eq 127 ]
	run -127 pm run --rm "${RUN_OPTS[@]}" "$IMAGE" no-such-command
	echo "not in PATH: $status $output"
	[ "$status" -eq 127 ]
}

@test "podman: exec of a directory, a non-executable file, a script on noexec exits 126; a missing one 127" {
	noexec_volume
	start "$NAME" -v "$BATS_TEST_TMPDIR/scripts:/mnt:noexec" "$IMAGE" sleep 1000
	for cmd in /tmp /image-dir/file /mnt/s; do
		run pm exec "$NAME" "$cmd"
		echo "$cmd: $status $output"
		[ "$status" -eq 126 ]
	done
	for cmd in /nonexistent no-such-command; do
		run -127 pm exec "$NAME" "$cmd"
		echo "$cmd: $status $output"
		[ "$status" -eq 127 ]
	done
}

# ---- checkpoint --export / restore --import ----

# The counter a checkpointed container runs: a token drawn once (held in
# the shell's memory) and a count, written to /data/n through a temporary
# file and a rename, so a reader never sees it half written. A restored
# process writes the same token; one started anew would draw another.
COUNTER='tok=$RANDOM$RANDOM; i=0; while :; do i=$((i+1)); echo "$tok $i" > /data/n.tmp; mv /data/n.tmp /data/n; sleep 0.1; done'

# counted_past FILE N: FILE's count is past N.
counted_past() {
	local tok n
	read -r tok n <"$1" 2>/dev/null || return 1
	[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt "$2" ]
}

# checkpoint_round_trip RUN-OPTION...: run the counter with a volume and the
# options, checkpoint --export it to a tar, remove it, restore --import the
# tar, and check the same process counts on.
checkpoint_round_trip() {
	local vol=$BATS_TEST_TMPDIR/vol tar=$BATS_TEST_TMPDIR/ckpt.tar tok n tok2 n2
	mkdir -p "$vol"
	start "$NAME" -v "$vol:/data" "$@" "$IMAGE" sh -c "$COUNTER"
	wait_until 10 counted_past "$vol/n" 2
	pm container checkpoint --export "$tar" "$NAME"
	[ -s "$tar" ]
	read -r tok n <"$vol/n"
	# a checkpoint without --leave-running stops the container
	run pm inspect --format '{{.State.Running}}' "$NAME"
	[ "$output" = false ]
	pm rm --force --time 0 "$NAME"
	run pm container restore --import "$tar"
	[ "$status" -eq 0 ]
	run pm inspect --format '{{.State.Running}}' "$NAME"
	[ "$output" = true ]
	wait_until 10 counted_past "$vol/n" "$n"
	read -r tok2 n2 <"$vol/n"
	echo "before: $tok $n, after: $tok2 $n2"
	# the same process, with its memory: same token, its count went on
	[ "$tok2" = "$tok" ]
	# the mounts podman makes for every container are back
	run pm exec "$NAME" sh -c 'test -s /etc/hostname && test -f /run/.containerenv && echo present'
	[ "$status" -eq 0 ]
	[ "$output" = present ]
}

@test "podman: checkpoint --export then restore --import, with a volume and the default /etc/resolv.conf, /etc/hosts" {
	checkpoint_round_trip
	run pm exec "$NAME" sh -c 'test -f /etc/resolv.conf && test -f /etc/hosts && echo present'
	[ "$output" = present ]
}

@test "podman: checkpoint --export then restore --import, with a volume and --dns=none" {
	checkpoint_round_trip --dns=none
}

# The runtime's checkpoint deletes the container itself (as runc's does);
# podman then deletes it with --force, which must not fail, and its
# in-place restore reuses the id.
@test "podman: checkpoint then restore in place: the same process counts on under the same id" {
	local vol=$BATS_TEST_TMPDIR/vol tok n tok2 n2
	mkdir -p "$vol"
	start "$NAME" -v "$vol:/data" "$IMAGE" sh -c "$COUNTER"
	wait_until 10 counted_past "$vol/n" 2
	pm container checkpoint "$NAME"
	read -r tok n <"$vol/n"
	run pm inspect --format '{{.State.Running}}' "$NAME"
	[ "$output" = false ]
	pm container restore "$NAME"
	run pm inspect --format '{{.State.Running}}' "$NAME"
	[ "$output" = true ]
	wait_until 10 counted_past "$vol/n" "$n"
	read -r tok2 n2 <"$vol/n"
	echo "before: $tok $n, after: $tok2 $n2"
	[ "$tok2" = "$tok" ]
}

# ---- exec --user: stdio the user can reopen ----

@test "podman: exec --user 1000 owns its stdio pipes as runc makes them and can reopen them" {
	start "$NAME" "$IMAGE" sleep 1000
	run pm exec --user 1000 "$NAME" sh -c \
		'id -u; stat -L -c %u /proc/self/fd/1 /proc/self/fd/2; echo reopened > /dev/stdout'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = 1000 ]
	[ "${lines[2]}" = 1000 ]
	[ "${lines[3]}" = reopened ]
	# stdin too, with -i
	run pm_input typed exec -i --user 1000 "$NAME" cat /dev/stdin
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = typed ]
}

@test "podman: exec -t --user 1000 owns its terminal as runc makes it" {
	start "$NAME" "$IMAGE" sleep 1000
	run pm exec -t --user 1000 "$NAME" sh -c 'stat -L -c %u /proc/self/fd/0; echo reopened > /dev/stdout'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(tr -d '\r' <<<"$output")" = "1000"$'\n'"reopened" ]
}

@test "podman: run --user 1000 owns its stdio pipes as runc makes them and can reopen them" {
	run pm run --rm --user 1000 "${RUN_OPTS[@]}" "$IMAGE" sh -c \
		'stat -L -c %u /proc/self/fd/1; echo reopened > /dev/stdout'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1000 ]
	[ "${lines[1]}" = reopened ]
}
