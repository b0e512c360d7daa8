#!/usr/bin/env bats
# tern killed dead (SIGKILL) at every stage of create, start, exec, delete,
# checkpoint and restore, and the container's init killed at every stage of
# its setup. After each kill, `state` must tell the truth, `delete --force`
# must clean up, and nothing may be left: no state directory, mount,
# cgroup, process or image directory.
#
# The stages are the fault points of src/base/fault.h, which only a build with
# ./configure --enable-fault-injection has: setup_file builds one from this
# checkout under tests/.work/faults (build_fault_tern, helpers.bash) or
# takes $TERN_FAULT_BIN. Each test first runs its command once with
# TERN_FAULT_TRACE to learn the points it passes, in order, then walks
# them: stage N is the Nth point.

load helpers

setup_file() {
	is_runc && return 0
	export TERN_FAULT_BIN=${TERN_FAULT_BIN:-$(build_fault_tern)}
	[ -x "$TERN_FAULT_BIN" ]
}

setup() {
	if is_runc; then
		skip "fault injection points are tern's own (src/base/fault.h)"
	fi
	setup_bundle
	DEFAULT_TERN=$TERN_BIN
	TERN_BIN=$TERN_FAULT_BIN
	set_args /bin/sleep "$MARK"
	IMG=$BATS_TEST_TMPDIR/img
	CRIU_BIN=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	INJECTED=0
}

teardown() {
	teardown_bundle
	[ -n "${FULL_MOUNTS:-}" ] && unmount_full
	return 0
}

# points_of CMD...: the fault points CMD passes (run through tern with
# this test's root), once each, in the order first reached.
points_of() {
	local trace=$BATS_TEST_TMPDIR/trace
	rm -f "$trace"
	TERN_FAULT_TRACE=$trace tern "$@" >/dev/null || {
		echo "the traced run failed: tern $*" >&2
		return 1
	}
	awk '!seen[$2]++ { print $2 }' "$trace"
}

# kill_at POINT CMD...: run CMD with tern told to die at POINT; fail unless
# it did (its own stderr says so; so does the container's init, whose
# stderr is the same file).
kill_at() {
	local point=$1 out rc=0
	shift
	out=$(TERN_FAULT_KILL_AT=$point tern "$@") || rc=$?
	if [ "$rc" -eq 0 ] || [[ "$out" != *"fault injection: SIGKILL at $point"* ]]; then
		echo "stage $point was not reached (exit $rc): $out" >&2
		return 1
	fi
	INJECTED=$((INJECTED + 1))
}

# container_processes: pids of the processes that are this container's:
# its init before exec (a tern whose command line names the id) or after
# (the program carries $MARK).
container_processes() {
	pgrep -f -- "sleep $MARK|tern .*$ID" || true
}

# state_is_true: what `state` says holds. "created", "running" and "paused"
# name a live process of this container; "stopped" and "does not exist"
# mean no process of it is left once the dying ones are gone (a killed
# create's init dies of its parent's death, asynchronously). "creating" is
# only for a command still at work, and none is.
# A tree may also die after `state` looked at it: criu kills a restored
# tree whose tern died while criu waited on it (restore:criu-network-unlock
# in a CI run), so a "created", "running" or "paused" whose process is
# gone or dying (no command line left) when we look is asked again, until
# `state` says stopped; one that stays a lie fails after 10 s.
state_is_true() {
	local i err=$BATS_TEST_TMPDIR/state-check.err
	for ((i = 0; i < 200; i++)); do
		state_holds 2>"$err" && return 0
		grep -q "^state says [a-z]* with pid [0-9]*, which is not the container's$" "$err" ||
			break
		sleep 0.05
	done
	cat "$err" >&2
	return 1
}

state_holds() {
	local out status pid
	out=$(tern state "$ID" 2>&1) || {
		[[ "$out" == *"does not exist"* ]] || {
			echo "state failed: $out" >&2
			return 1
		}
		wait_until 10 no_container_process || return 1
		return 0
	}
	status=$(echo "$out" | jq -r .status)
	pid=$(echo "$out" | jq -r .pid)
	case "$status" in
	created | running | paused)
		[ "$pid" -gt 0 ] && ! pid_gone "$pid" && container_processes | grep -qx "$pid" || {
			echo "state says $status with pid $pid, which is not the container's" >&2
			container_processes >&2
			return 1
		}
		# created: the init still waits for start; running or paused:
		# it has become the container's program
		local args want=program
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
		[ "$status" = created ] && want=init
		if { [ $want = init ] && [[ "$args" == *"sleep $MARK"* ]]; } ||
			{ [ $want = program ] && [[ "$args" != *"sleep $MARK"* ]]; }; then
			echo "state says $status, and pid $pid runs: $args" >&2
			return 1
		fi
		;;
	stopped)
		wait_until 10 no_container_process || {
			echo "state says stopped, and these live on:" >&2
			container_processes | xargs -r ps -o pid,stat,args -p >&2
			return 1
		}
		;;
	*)
		echo "state says '$status' with nobody at work on the container" >&2
		return 1
		;;
	esac
}

no_container_process() {
	[ -z "$(container_processes)" ]
}

# after_kill POINT: state tells the truth, delete --force cleans, nothing
# is left, and the id is free for a new container.
after_kill() {
	state_is_true || {
		echo "after a kill at $1" >&2
		return 1
	}
	tern delete --force "$ID" >/dev/null || {
		echo "delete --force failed after a kill at $1" >&2
		return 1
	}
	check_nothing_left "$ID" && no_container_process || {
		echo "left behind after a kill at $1" >&2
		return 1
	}
	if [ -e "$IMG" ] && [ "${IMG_KEPT:-}" != "$1" ]; then
		echo "image directory $IMG left behind after a kill at $1" >&2
		return 1
	fi
	rm -rf "$IMG"
}

created() {
	tern create -b "$BUNDLE" "$ID" >/dev/null
}

running() {
	tern run -d -b "$BUNDLE" "$ID" >/dev/null
	wait_status "$ID" running
}

report() {
	echo "# $1: $INJECTED stages, each killed once" >&3
}

# walk_create POINT...: trace create (which must pass each POINT), then
# kill it at every point it passes and check what the kill left.
walk_create() {
	local points p want
	points=$(points_of create -b "$BUNDLE" "$ID")
	tern delete --force "$ID" >/dev/null
	for want in "$@"; do
		[[ "$points" == *"$want"* ]] || {
			echo "create never passed $want" >&2
			return 1
		}
	done
	for p in $points; do
		case "$p" in
		# past the end of create: start's to kill
		init:start-requested | init:started-byte-written) continue ;;
		esac
		kill_at "$p" create -b "$BUNDLE" "$ID"
		after_kill "$p"
	done
}

@test "faults: the default build has no fault points: their variables change nothing" {
	local points trace=$BATS_TEST_TMPDIR/default-trace
	points=$(points_of create -b "$BUNDLE" "$ID")
	[ -n "$points" ]
	tern delete --force "$ID"
	# told to trace, to die at the first point of create and to fail a step
	TERN_BIN=$DEFAULT_TERN TERN_FAULT_TRACE=$trace \
		TERN_FAULT_KILL_AT="$(head -n1 <<<"$points")" TERN_FAULT_FAIL=lazy-fill \
		run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	TERN_BIN=$DEFAULT_TERN run tern start "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ ! -e "$trace" ]
	# none of the names is in the binary at all
	! grep -a -q -e TERN_FAULT -e "fault injection" "$DEFAULT_TERN" || false
}

@test "faults: tern create killed at every stage, and the init at every stage of its setup" {
	walk_create create:state-creating-written init:rootfs-set-up
	report create
}

@test "faults: tern create killed at every stage of the two-stage path (cgroup made before the clone)" {
	# a time namespace takes the path that forks the init from a first
	# child, in a cgroup made before the clone, as on a v2-only host
	add_namespace time
	walk_create create:cgroup-made spawn:init-forked
	report "create (two-stage)"
}

@test "faults: tern start killed at every stage" {
	local points p
	created
	points=$(points_of start "$ID")
	tern delete --force "$ID" >/dev/null
	[[ "$points" == *start:exec-fifo-opened* ]]
	for p in $points; do
		created
		kill_at "$p" start "$ID"
		after_kill "$p"
	done
	# the init's own stages of start: it has the environment of create
	local trace=$BATS_TEST_TMPDIR/init-trace
	for p in init:start-requested init:started-byte-written; do
		rm -f "$trace"
		TERN_FAULT_TRACE=$trace TERN_FAULT_KILL_AT=$p tern create -b "$BUNDLE" "$ID" >/dev/null
		# it dies before or after it lets start go on: either answer is
		# right, a hang is not (start waits for the init or its death)
		run tern start "$ID"
		grep -q " $p\$" "$trace" || {
			echo "the init never reached $p" >&2
			return 1
		}
		INJECTED=$((INJECTED + 1))
		after_kill "$p"
	done
	report start
}

@test "faults: tern exec killed at every stage" {
	local points p
	running
	points=$(points_of exec "$ID" /bin/true)
	[[ "$points" == *exec:cloned* ]]
	for p in $points; do
		kill_at "$p" exec "$ID" /bin/sleep "$MARK"
		# the container itself must be unharmed
		[ "$(state_field "$ID" status)" = running ]
	done
	after_kill exec
	report exec
}

@test "faults: tern delete --force killed at every stage" {
	local points p
	running
	points=$(points_of delete --force "$ID")
	[[ "$points" == *delete:process-killed* ]]
	for p in $points; do
		running
		kill_at "$p" delete --force "$ID"
		after_kill "$p"
	done
	report delete
}

@test "faults: tern checkpoint killed at every stage" {
	local points p
	running
	cd "$BATS_TEST_TMPDIR"
	points=$(points_of checkpoint --image-path "$IMG" "$ID")
	tern delete --force "$ID" >/dev/null
	rm -rf "$IMG"
	[[ "$points" == *checkpoint:frozen* ]]
	for p in $points; do
		running
		# killed once criu has dumped, the images are whole: kept (also
		# in the delete that follows a dump that stopped the container)
		case $p in
		checkpoint:dumped | delete:*) IMG_KEPT=$p ;;
		esac
		kill_at "$p" checkpoint --image-path "$IMG" "$ID"
		after_kill "$p"
	done
	report checkpoint
}

@test "faults: tern restore killed at every stage" {
	local points p
	running
	cd "$BATS_TEST_TMPDIR"
	# (checkpoint deletes the container, as runc does)
	tern checkpoint --image-path "$IMG.orig" "$ID" >/dev/null
	wait_until 10 no_container_process
	cp -a "$IMG.orig" "$IMG"
	points=$(points_of restore -d --image-path "$IMG" -b "$BUNDLE" "$ID")
	[[ "$points" == *restore:criu-restored* ]]
	tern delete --force "$ID" >/dev/null
	for p in $points; do
		rm -rf "$IMG"
		cp -a "$IMG.orig" "$IMG"
		IMG_KEPT=$p # restore's images are the caller's
		kill_at "$p" restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
		after_kill "$p"
	done
	report restore
}

@test "faults: a clone spares builder killed at every stage of its spare's restore (a user-namespaced container): --spares 0 and delete leave nothing, the restore's yard included" {
	local points p dir yards log
	userns_rootfs
	running
	tern snapshot "$ID" base >/dev/null
	dir=$ROOT/@snapshots/$ID/.clone-spares/base
	log=$dir/build.log
	yards=$(ls -d /run/tern-restore-* /tmp/tern-restore-* 2>/dev/null | sort || true)
	# the builder (a child of clone --spares, in the background) passes
	# the points of a restore; TERN_FAULT_TRACE is inherited
	local trace=$BATS_TEST_TMPDIR/trace
	TERN_FAULT_TRACE=$trace tern clone --spares 1 "$ID" base >/dev/null
	wait_until 60 test -e "$(compgen -G "$dir/s-*" | head -n 1)/ready"
	points=$(awk '$2 ~ /^restore:/ && !seen[$2]++ { print $2 }' "$trace")
	[[ "$points" == *restore:mounts-made* && "$points" == *restore:criu-restored* ]] || {
		echo "points: $points"
		false
	}
	tern clone --spares 0 "$ID" base >/dev/null
	for p in $points; do
		TERN_FAULT_KILL_AT=$p tern clone --spares 1 "$ID" base >/dev/null
		wait_until 60 grep -q "fault injection: SIGKILL at $p" "$log"
		# its restore's criu goes down with it (its peer is gone)
		wait_until 60 flock -n "$dir/.lock" true
		tern clone --spares 0 "$ID" base >/dev/null
		[ ! -e "$dir" ] || { echo "after a kill at $p: $dir is left"; false; }
		! grep -F "$dir" /proc/self/mountinfo >&2 || { echo "mounts left after a kill at $p"; false; }
		[ -z "$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "tern-spare-$ID-*" 2>/dev/null || true)" ] ||
			{ echo "a spare's cgroup left after a kill at $p"; false; }
		[ "$(ls -d /run/tern-restore-* /tmp/tern-restore-* 2>/dev/null | sort || true)" = "$yards" ] ||
			{ echo "a restore yard left after a kill at $p"; false; }
		! pgrep -f "$dir" >&2 || { echo "processes left after a kill at $p"; false; }
		INJECTED=$((INJECTED + 1))
	done
	report "clone --spares (the builder)"
	tern delete --force "$ID" >/dev/null
	check_nothing_left "$ID"
}

# full_fs DIR MIB [INODES]: a tmpfs of MIB MiB (and INODES inodes) at DIR
# (teardown unmounts it), for the disk-full tests; fill_fs DIR fills what
# is left of its blocks and inodes.
full_fs() {
	mkdir -p "$1"
	mount -t tmpfs -o "size=${2}m,nr_inodes=${3:-1000},mode=0755" tmpfs "$1"
	FULL_MOUNTS+=("$1")
}

fill_fs() {
	local i
	dd if=/dev/zero of="$1/.fill" bs=64k 2>/dev/null || true
	# the last blocks, smaller than dd's
	head -c 100000 /dev/zero >"$1/.fill2" 2>/dev/null || true
	# tmpfs directories take an inode, not a block
	for ((i = 0; i < 1000; i++)); do
		mkdir "$1/.inode$i" 2>/dev/null || break
	done
	[ "$(stat -f -c %a "$1")" -eq 0 ] && [ "$(stat -f -c %d "$1")" -eq 0 ]
}

unmount_full() {
	local m
	for m in "${FULL_MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null || true
	done
}

@test "faults: a full disk as --root: a clear error, nothing half written" {
	FULL_MOUNTS=()
	local root=$BATS_TEST_TMPDIR/fullroot
	full_fs "$root" 1
	fill_fs "$root"
	run in_file "$TERN_BIN" --root "$root" create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *"$root/$ID"* ]]
	[ ! -e "$root/$ID" ]
	ROOT=$root check_nothing_left "$ID"
	no_container_process
	# room again: the same id works
	rm -rf "$root"/.fill* "$root"/.inode*
	"$TERN_BIN" --root "$root" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1
	"$TERN_BIN" --root "$root" delete --force "$ID"
	ROOT=$root check_nothing_left "$ID"
	unmount_full
}

@test "faults: a full disk as the checkpoint's image path: a clear error, the container runs on" {
	FULL_MOUNTS=()
	local imgfs=$BATS_TEST_TMPDIR/fullimg
	running
	full_fs "$imgfs" 1
	fill_fs "$imgfs"
	cd "$BATS_TEST_TMPDIR"
	run tern checkpoint --image-path "$imgfs/img" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$imgfs/img"* || "$output" == *"No space left on device"* ]]
	# no half images, and the container was left as it was
	[ ! -e "$imgfs/img" ]
	[ "$(state_field "$ID" status)" = running ]
	tern delete --force "$ID" >/dev/null
	check_nothing_left "$ID"
	unmount_full
}

@test "faults: a full disk under the bundle: a clear error naming the path, nothing left" {
	FULL_MOUNTS=()
	local fs=$BATS_TEST_TMPDIR/fullbundle
	full_fs "$fs" 64 $(($(find "$BUNDLE" | wc -l) + 50))
	cp -a "$BUNDLE" "$fs/bundle"
	BUNDLE=$fs/bundle
	# a mount point the rootfs lacks must be made, and cannot be
	update_config '.mounts += [{"destination": "/made/here", "type": "tmpfs", "source": "tmpfs"}]'
	fill_fs "$fs"
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *"/made"* ]]
	check_nothing_left "$ID"
	no_container_process
	unmount_full
}
