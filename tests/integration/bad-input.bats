#!/usr/bin/env bats
# The bad-input matrix: broken bundles and command lines, one @test per row
# so that a failure names its case. Every case must fail (non-zero, no
# crash), say what is wrong (the field, file or id: checked for tern, whose
# wording this file knows; runc is only held to failing cleanly), and leave
# nothing behind (check_clean below). errors.bats holds the older cases;
# none of them is repeated here.
#
# The rows are short on purpose: bad_config FILTER KEYWORD... edits
# config.json with a jq filter and expects `create` to fail naming
# KEYWORD; bad_cli and bad_in_state do the same for command lines and for
# commands in the wrong state of a container.

load helpers

CRIU_BIN=${TERN_CRIU:-/opt/tern-criu/bin/criu}

# setup_bundle's work, once per file: the config from the runtime's own
# `spec` (the process sleeps long enough to be found, and killed, by its
# marker if it got away). Each test then takes a copy of it and a copy of
# the rootfs made of hard links: some 300 tests, and nothing here writes into a
# file of the rootfs (a container made here never runs its process).
setup_file() {
	build_base_rootfs
	mkdir -p "$BATS_FILE_TMPDIR/spec"
	(cd "$BATS_FILE_TMPDIR/spec" && "$TERN_BIN" spec)
	jq '.process.terminal = false | .root.readonly = false
		| .process.args = ["/bin/sleep", "MARK"]' \
		"$BATS_FILE_TMPDIR/spec/config.json" >"$BATS_FILE_TMPDIR/config.json"
}

setup() {
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	ROOT=$BATS_TEST_TMPDIR/state
	ID=tt${BATS_SUITE_TEST_NUMBER:-0}-$$-$RANDOM
	MARK=$((100000 + RANDOM))
	mkdir -p "$BUNDLE" "$ROOT"
	cp -al "$BASE_ROOTFS" "$BUNDLE/rootfs"
	sed "s/\"MARK\"/\"$MARK\"/" "$BATS_FILE_TMPDIR/config.json" >"$BUNDLE/config.json"
	export BUNDLE ROOT ID MARK
	# Files outside the rootfs that a symlink inside it points at: an
	# escape would show up here, under the test's own directory.
	OUTSIDE=$BATS_TEST_TMPDIR/outside
	mkdir -p "$OUTSIDE"
	echo host >"$OUTSIDE/file"
}

# A test that ended with check_clean passing has nothing left to clean up
# but its directory; the others get teardown_bundle's full sweep.
teardown() {
	if [ -n "${BATS_TEST_COMPLETED:-}" ] && [ -n "${CHECKED_CLEAN:-}" ]; then
		rm -rf --one-file-system "$BUNDLE" "$ROOT" "$OUTSIDE"
		return 0
	fi
	teardown_bundle
}

# A runtime call that cannot hang the file: killed after 60 s (status 137,
# which expect_failure counts as a crash).
rt() {
	in_file timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" "$@"
}

# check_clean: check_nothing_left, and more: no file at all in the state
# root (a lock or temporary file of a failed create), no mount anywhere
# under the test's directory (the rootfs, the state root, $OUTSIDE), no
# runtime process of this test's state root, and no process holding a file
# of the test's directory open or as its cwd (an fd or process that got
# away).
check_clean() {
	local leak=0 left
	check_nothing_left "$ID" || leak=1
	# (the state root's caches are shared by its containers on purpose:
	# their names hold a ':', which no container id has)
	left=$(find "$ROOT" -mindepth 1 -not -path "$ROOT/.*:*" 2>/dev/null || true)
	if [ -n "$left" ]; then
		echo "leftover files in the state root: $left" >&2
		leak=1
	fi
	if grep -F "$BATS_TEST_TMPDIR" /proc/self/mountinfo >&2; then
		echo "leftover mounts under $BATS_TEST_TMPDIR (above)" >&2
		leak=1
	fi
	if pgrep -f -- "--root $ROOT" >&2; then
		echo "leftover runtime processes of $ROOT (above)" >&2
		leak=1
	fi
	# /proc/PID/fd/* and cwd of every process but this shell and its
	# parents (bats keeps nothing open there)
	left=$(find /proc/[0-9]*/fd /proc/[0-9]*/cwd -maxdepth 1 -lname "$BATS_TEST_TMPDIR*" 2>/dev/null |
		grep -v -e "^/proc/$$/" -e "^/proc/$BASHPID/" || true)
	if [ -n "$left" ]; then
		echo "files of the test dir held open: $left" >&2
		leak=1
	fi
	[ "$leak" = 0 ] && CHECKED_CLEAN=1
	return $leak
}

# expect_failure KEYWORD...: $status is a failure, not a crash or a hang
# (129..191: killed by a signal, rt's timeout included; runc's exec fails
# with 255), and for tern $output names every KEYWORD.
expect_failure() {
	if [ "$status" -eq 0 ] || { [ "$status" -gt 128 ] && [ "$status" -lt 192 ]; }; then
		echo "expected a clean failure, got status $status: $output" >&2
		return 1
	fi
	if [[ "$output" == *"AddressSanitizer"* || "$output" == *"runtime error:"* ]]; then
		echo "sanitizer report: $output" >&2
		return 1
	fi
	is_tern || return 0
	output_mentions "$@"
}

# bad_config FILTER KEYWORD...: config.json edited by the jq FILTER makes
# create fail naming each KEYWORD, and nothing is left.
bad_config() {
	update_config "$1"
	shift
	run rt create -b "$BUNDLE" "$ID"
	expect_failure "$@"
	check_clean
}

# spec_1_3 FIELD: a row for a runtime-spec 1.3 field, which runc 1.1.5
# predates and ignores: skipped for runc, saying so.
spec_1_3() {
	is_tern || skip "runc 1.1.5 predates runtime-spec 1.3: it ignores $1"
}

# bad_config_raw SED-EXPR KEYWORD...: the same for an edit jq cannot make
# (bytes that are not UTF-8).
bad_config_raw() {
	sed -i "$1" "$BUNDLE/config.json"
	shift
	run rt create -b "$BUNDLE" "$ID"
	expect_failure "$@"
	check_clean
}

# bad_cli KEYWORD... -- ARG...: the command line fails naming each KEYWORD.
bad_cli() {
	local kw=()
	while [ "$1" != -- ]; do
		kw+=("$1")
		shift
	done
	shift
	run rt "$@"
	expect_failure "${kw[@]}"
	check_clean
}

# to_state STATE: bring $ID into STATE (created, running, paused, stopped).
to_state() {
	case $1 in
	created) rt create -b "$BUNDLE" "$ID" ;;
	running) rt run -d -b "$BUNDLE" "$ID" ;;
	paused) rt run -d -b "$BUNDLE" "$ID" && rt pause "$ID" ;;
	stopped)
		rt run -d -b "$BUNDLE" "$ID" && rt kill "$ID" KILL && wait_status "$ID" stopped
		;;
	esac >/dev/null
	[ "$(state_field "$ID" status)" = "$1" ]
}

# bad_in_state STATE KEYWORD... -- ARG...: with $ID in STATE, the command
# (ARG..., where the word ID stands for the container's id) fails naming
# each KEYWORD (ID again for the id), and the container is still there in
# the same state; then it deletes cleanly.
bad_in_state() {
	local state=$1 kw=() args=() a
	shift
	while [ "$1" != -- ]; do
		a=$1
		[ "$a" = ID ] && a=$ID
		kw+=("$a")
		shift
	done
	shift
	for a in "$@"; do
		[ "$a" = ID ] && a=$ID
		args+=("$a")
	done
	to_state "$state"
	run rt "${args[@]}"
	expect_failure "${kw[@]}"
	[ "$(state_field "$ID" status)" = "$state" ] || {
		echo "the failed command changed the state from $state" >&2
		return 1
	}
	rt delete --force "$ID"
	check_clean
}

# stays_inside: the container was made (the runtime kept the path inside
# the rootfs) or failed cleanly; either way nothing outside changed.
stays_inside() {
	run rt create -b "$BUNDLE" "$ID"
	if [ "$status" -eq 0 ]; then
		rt delete --force "$ID"
	else
		expect_failure
	fi
	check_clean
	[ "$(ls -A "$OUTSIDE")" = file ] || {
		echo "something was made outside the rootfs: $(ls -A "$OUTSIDE")" >&2
		return 1
	}
	[ "$(cat "$OUTSIDE/file")" = host ]
	[ ! -c "$OUTSIDE/file" ]
}

# a mount appended to the default ones is mounts[7]
M=7

# ---- wrong types, field by field -------------------------------------------

@test "type: ociVersion a number" {
	bad_config '.ociVersion = 1' ociVersion
}
@test "type: process a string" {
	bad_config '.process = "sh"' process
}
@test "type: process.terminal a string" {
	bad_config '.process.terminal = "no"' process.terminal
}
@test "type: process.user an array" {
	bad_config '.process.user = [0]' process.user
}
@test "type: process.user.uid a string" {
	bad_config '.process.user.uid = "0"' process.user.uid
}
@test "type: process.user.additionalGids a string" {
	bad_config '.process.user.additionalGids = "0"' process.user.additionalGids
}
@test "type: process.env a string" {
	bad_config '.process.env = "PATH=/bin"' process.env
}
@test "type: process.env[0] a number" {
	bad_config '.process.env = [1]' 'process.env[0]'
}
@test "type: process.args[1] null" {
	bad_config '.process.args = ["/bin/sleep", null]' 'process.args[1]'
}
@test "type: process.cwd a number" {
	bad_config '.process.cwd = 5' process.cwd
}
@test "type: process.capabilities an array" {
	bad_config '.process.capabilities = ["CAP_KILL"]' process.capabilities
}
@test "type: process.capabilities.bounding[0] a number" {
	bad_config '.process.capabilities.bounding = [5]' 'process.capabilities.bounding[0]'
}
@test "type: process.rlimits an object" {
	bad_config '.process.rlimits = {"type": "RLIMIT_NOFILE"}' process.rlimits
}
@test "type: process.rlimits[0].type a number" {
	bad_config '.process.rlimits = [{"type": 7, "soft": 1, "hard": 1}]' 'process.rlimits[0].type'
}
@test "type: process.rlimits[0].hard a string" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_CORE", "soft": 1, "hard": "1"}]' 'process.rlimits[0].hard'
}
@test "type: process.noNewPrivileges a number" {
	bad_config '.process.noNewPrivileges = 1' process.noNewPrivileges
}
@test "type: process.oomScoreAdj a string" {
	bad_config '.process.oomScoreAdj = "1"' process.oomScoreAdj
}
@test "type: process.consoleSize a string" {
	bad_config '.process.consoleSize = "80x25"' process.consoleSize
}
@test "type: process.apparmorProfile a number" {
	bad_config '.process.apparmorProfile = 5' process.apparmorProfile
}
@test "type: process.scheduler a string" {
	bad_config '.process.scheduler = "SCHED_OTHER"' process.scheduler
}
@test "type: process.ioPriority.priority a string" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BE", "priority": "4"}' process.ioPriority.priority
}
@test "type: linux.intelRdt.schemata a string" {
	bad_config '.linux.intelRdt = {"schemata": "L3:0=f"}' linux.intelRdt.schemata
}
@test "type: hostname a number" {
	bad_config '.hostname = 5' hostname
}
@test "type: domainname an array" {
	bad_config '.domainname = ["a"]' domainname
}
@test "type: root a string" {
	bad_config '.root = "rootfs"' root
}
@test "type: root.path a number" {
	bad_config '.root.path = 5' root.path
}
@test "type: root.readonly null is fine, a number is not" {
	bad_config '.root.readonly = 0' root.readonly
}
@test "type: mounts a number" {
	bad_config '.mounts = 5' mounts
}
@test "type: mounts[].destination a number" {
	bad_config '.mounts += [{"destination": 5, "type": "tmpfs", "source": "tmpfs"}]' "mounts[$M].destination"
}
@test "type: mounts[].options a string" {
	bad_config '.mounts += [{"destination": "/m", "type": "tmpfs", "source": "tmpfs", "options": "ro"}]' "mounts[$M].options"
}
@test "type: hooks a number" {
	bad_config '.hooks = 5' hooks
}
@test "type: hooks.prestart an object" {
	bad_config '.hooks.prestart = {"path": "/bin/true"}' hooks.prestart
}
@test "type: hooks.createRuntime[0].path a number" {
	bad_config '.hooks.createRuntime = [{"path": 5}]' 'hooks.createRuntime[0].path'
}
@test "type: hooks.createRuntime[0].args a string" {
	bad_config '.hooks.createRuntime = [{"path": "/bin/true", "args": "true"}]' 'hooks.createRuntime[0].args'
}
@test "type: hooks.poststart[0].timeout a string" {
	bad_config '.hooks.poststart = [{"path": "/bin/true", "timeout": "1"}]' 'hooks.poststart[0].timeout'
}
@test "type: linux a number" {
	bad_config '.linux = 5' linux
}
@test "type: linux.namespaces a string" {
	bad_config '.linux.namespaces = "pid"' linux.namespaces
}
@test "type: linux.namespaces[].type a number" {
	bad_config '.linux.namespaces += [{"type": 3}]' linux.namespaces
}
@test "type: linux.namespaces[].path a number" {
	bad_config '.linux.namespaces = [{"type": "network", "path": 5}]' 'linux.namespaces[0].path'
}
@test "type: linux.uidMappings a string" {
	bad_config '.linux.uidMappings = "0 1000 1"' linux.uidMappings
}
@test "type: linux.devices an object" {
	bad_config '.linux.devices = {"path": "/dev/x"}' linux.devices
}
@test "type: linux.devices[0].major a string" {
	bad_config '.linux.devices = [{"path": "/dev/x", "type": "c", "major": "1", "minor": 3}]' 'linux.devices[0].major'
}
@test "type: linux.resources a number" {
	bad_config '.linux.resources = 5' linux.resources
}
@test "type: linux.resources.memory.limit a string" {
	bad_config '.linux.resources.memory = {"limit": "1g"}' linux.resources.memory.limit
}
@test "type: linux.resources.pids.limit a string" {
	bad_config '.linux.resources.pids = {"limit": "x"}' linux.resources.pids.limit
}
@test "type: linux.resources.devices[0].allow a string" {
	bad_config '.linux.resources.devices = [{"allow": "yes"}]' 'linux.resources.devices[0].allow'
}
@test "type: linux.sysctl value a number" {
	bad_config '.linux.sysctl = {"kernel.shmmax": 5}' linux.sysctl
}
@test "type: linux.seccomp a string" {
	bad_config '.linux.seccomp = "x"' linux.seccomp
}
@test "type: linux.seccomp.syscalls[0].names a string" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": "getpid", "action": "SCMP_ACT_ERRNO"}]}' 'linux.seccomp.syscalls[0].names'
}
@test "type: linux.maskedPaths[0] a number" {
	bad_config '.linux.maskedPaths = [5]' 'linux.maskedPaths[0]'
}
@test "type: linux.readonlyPaths a string" {
	bad_config '.linux.readonlyPaths = "/proc"' linux.readonlyPaths
}
@test "type: linux.cgroupsPath a number" {
	bad_config '.linux.cgroupsPath = 5' linux.cgroupsPath
}
@test "type: linux.rootfsPropagation a number" {
	bad_config '.linux.rootfsPropagation = 5' linux.rootfsPropagation
}
@test "type: annotations an array" {
	bad_config '.annotations = ["a"]' annotations
}
@test "type: annotations value a number" {
	bad_config '.annotations = {"a": 5}' annotations.a
}
@test "type: linux.netDevices an array" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = ["eth0"]' linux.netDevices
}
@test "type: linux.netDevices entry a string" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"eth0": "eth1"}' linux.netDevices.eth0
}
@test "type: linux.netDevices name a number" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"eth0": {"name": 5}}' linux.netDevices.eth0.name
}

# ---- out of range, 64-bit overflows ------------------------------------------

@test "range: process.user.uid -1" {
	bad_config '.process.user.uid = -1' process.user.uid
}
@test "range: process.user.uid 2^32" {
	bad_config '.process.user.uid = 4294967296' process.user.uid 4294967296
}
@test "range: process.user.gid 1e30" {
	bad_config '.process.user.gid = 1e30' process.user.gid
}
@test "range: process.user.additionalGids[1] -1" {
	bad_config '.process.user.additionalGids = [1, -1]' 'process.user.additionalGids[1]'
}
@test "range: process.user.additionalGids 2^32-1 (no such group id)" {
	bad_config '.process.user.additionalGids = [4294967295]' process.user 4294967295
}
@test "range: process.user.umask 2^32" {
	bad_config '.process.user.umask = 4294967296' process.user.umask
}
@test "range: process.oomScoreAdj 5000" {
	bad_config '.process.oomScoreAdj = 5000' process.oomScoreAdj
}
@test "range: process.oomScoreAdj -5000" {
	bad_config '.process.oomScoreAdj = -5000' process.oomScoreAdj
}
@test "range: process.oomScoreAdj 2^63 (int64 overflow)" {
	bad_config_raw 's/"oomScoreAdj": *[0-9-]*/"oomScoreAdj": 9223372036854775808/; s/"process": {/"process": {"oomScoreAdj": 9223372036854775808,/' process.oomScoreAdj
}
@test "range: process.consoleSize.height -1" {
	bad_config '.process.consoleSize = {"height": -1, "width": 10}' process.consoleSize.height
}
@test "range: process.rlimits[0].soft 2^64 (uint64 overflow)" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_CORE", "soft": 18446744073709551616, "hard": 10}]' 'process.rlimits[0].soft'
}
@test "range: process.rlimits[0].soft -1" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_CORE", "soft": -1, "hard": 10}]' 'process.rlimits[0].soft'
}
@test "range: process.rlimits soft above hard" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_CORE", "soft": 100, "hard": 10}]' 'process.rlimits[0]' RLIMIT_CORE
}
@test "range: process.rlimits[0] without soft" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_NOFILE", "hard": 10}]' 'process.rlimits[0].soft'
}
@test "range: RLIMIT_NOFILE 0 leaves no fd to start the container" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_NOFILE", "soft": 0, "hard": 0}]' RLIMIT_NOFILE
}
@test "range: process.ioPriority.priority 99" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BE", "priority": 99}' process.ioPriority.priority
}
@test "range: process.scheduler.nice 100" {
	bad_config '.process.scheduler = {"policy": "SCHED_OTHER", "nice": 100}' process.scheduler.nice
}
@test "range: process.scheduler.priority 500 for SCHED_FIFO" {
	bad_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 500}' process.scheduler.priority
}
@test "range: process.scheduler.priority 0 for SCHED_RR" {
	bad_config '.process.scheduler = {"policy": "SCHED_RR", "priority": 0}' process.scheduler.priority "1-99"
}
@test "range: process.scheduler.priority 5 for SCHED_BATCH" {
	bad_config '.process.scheduler = {"policy": "SCHED_BATCH", "priority": 5}' process.scheduler.priority SCHED_BATCH
}
@test "range: process.scheduler SCHED_DEADLINE runtime above the deadline" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 30000000, "deadline": 20000000, "period": 40000000}' process.scheduler.runtime "runtime <= deadline <= period"
}
@test "range: process.scheduler SCHED_DEADLINE deadline above the period" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 10000000, "deadline": 50000000, "period": 40000000}' process.scheduler.deadline "runtime <= deadline <= period"
}
@test "range: process.scheduler SCHED_DEADLINE runtime below 1024 ns" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 1000, "deadline": 20000000}' process.scheduler.runtime 1024
}
@test "range: process.scheduler SCHED_DEADLINE period of 5 s, above the kernel's maximum" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 1000000, "deadline": 2000000, "period": 5000000000}' process.scheduler.period sched_deadline_period
}
@test "range: process.scheduler SCHED_DEADLINE deadline (the period) of 50 us, below the kernel's minimum" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 20000, "deadline": 50000}' process.scheduler.deadline sched_deadline_period
}
@test "range: process.ioPriority.priority -1" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_RT", "priority": -1}' process.ioPriority.priority
}
@test "range: process.ioPriority.priority 4 with IOPRIO_CLASS_IDLE (it has no levels)" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_IDLE", "priority": 4}' process.ioPriority.priority IOPRIO_CLASS_IDLE
}
@test "range: linux.intelRdt.l3CacheSchema mask not hexadecimal" {
	bad_config '.linux.intelRdt = {"l3CacheSchema": "L3:0=zz"}' linux.intelRdt.l3CacheSchema zz
}
@test "range: linux.intelRdt.memBwSchema bandwidth not decimal" {
	bad_config '.linux.intelRdt = {"memBwSchema": "MB:0=ff"}' linux.intelRdt.memBwSchema ff
}
@test "range: linux.intelRdt.schemata domain not a number" {
	bad_config '.linux.intelRdt = {"schemata": ["L3:x=f"]}' 'linux.intelRdt.schemata[0]' 'domain `x`'
}
@test "range: hostname of 100 characters" {
	bad_config '.hostname = ("h" * 100)' hostname
}
@test "range: hooks timeout 0" {
	bad_config '.hooks.createRuntime = [{"path": "/bin/true", "timeout": 0}]' 'hooks.createRuntime[0].timeout'
}
@test "range: hooks timeout -1" {
	bad_config '.hooks.prestart = [{"path": "/bin/true", "timeout": -1}]' 'hooks.prestart[0].timeout'
}
@test "range: hooks timeout 2^63 (int64 overflow)" {
	bad_config '.hooks.prestart = [{"path": "/bin/true", "timeout": 9223372036854775808}]' 'hooks.prestart[0].timeout'
}
@test "range: linux.resources.memory.limit 2^63 (int64 overflow)" {
	bad_config '.linux.resources.memory = {"limit": 9223372036854775808}' linux.resources.memory.limit
}
@test "range: linux.resources.memory.limit of 100 bytes" {
	bad_config '.linux.resources.memory = {"limit": 100}' linux.resources.memory.limit
}
@test "range: linux.resources.memory.swappiness 500" {
	bad_config '.linux.resources.memory = {"swappiness": 500}' linux.resources.memory.swappiness
}
@test "range: linux.resources.cpu.shares -5" {
	bad_config '.linux.resources.cpu = {"shares": -5}' linux.resources.cpu.shares
}
@test "range: linux.resources.cpu.period 1" {
	bad_config '.linux.resources.cpu = {"quota": 1000, "period": 1}' linux.resources.cpu.period
}
@test "range: linux.resources.cpu.cpus 0-999" {
	bad_config '.linux.resources.cpu = {"cpus": "0-999"}' linux.resources.cpu.cpus
}
@test "range: linux.resources.cpu.cpus not a list" {
	bad_config '.linux.resources.cpu = {"cpus": "abc"}' linux.resources.cpu.cpus abc
}
@test "range: linux.resources.cpu.mems 77" {
	bad_config '.linux.resources.cpu = {"mems": "77"}' linux.resources.cpu.mems
}
@test "range: linux.resources.pids.limit 2^64" {
	bad_config '.linux.resources.pids = {"limit": 18446744073709551616}' linux.resources.pids.limit
}
@test "range: linux.resources.blockIO.weight 5000" {
	bad_config '.linux.resources.blockIO = {"weight": 5000}' linux.resources.blockIO.weight
}
@test "range: linux.resources.network.classID -1" {
	bad_config '.linux.resources.network = {"classID": -1}' linux.resources.network.classID
}
@test "range: linux.resources.hugepageLimits page size 3MB" {
	bad_config '.linux.resources.hugepageLimits = [{"pageSize": "3MB", "limit": 1}]' linux.resources.hugepageLimits 3MB
}
@test "range: linux.devices[0].major -1" {
	bad_config '.linux.devices = [{"path": "/dev/xx", "type": "c", "major": -1, "minor": 3}]' 'linux.devices[0]' /dev/xx
}
# Above 2^31-1 (runc's range), an id is refused: 4294967295 is (uid_t)-1,
# which setresuid/setresgid take as "leave unchanged", so the process would
# stay root.
@test "range: process.user.uid 4294967295 ((uid_t)-1)" {
	bad_config '.process.user.uid = 4294967295' process.user.uid 4294967295 0-2147483647
}
@test "range: process.user.uid 2^31" {
	bad_config '.process.user.uid = 2147483648' process.user.uid 2147483648 0-2147483647
}
@test "range: process.user.gid 4294967295 ((gid_t)-1)" {
	bad_config '.process.user.gid = 4294967295' process.user.gid 4294967295 0-2147483647
}
@test "range: process.user.additionalGids[1] 4294967295" {
	bad_config '.process.user.additionalGids = [1, 4294967295]' 'process.user.additionalGids[1]' 4294967295 0-2147483647
}
@test "range: linux.uidMappings[1].containerID 2^31" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}, {"containerID": 2147483648, "hostID": 200000, "size": 1}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' 'linux.uidMappings[1].containerID' 2147483648 0-2147483647
}
@test "range: linux.uidMappings[0].hostID 2^31" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 2147483648, "size": 65536}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' 'linux.uidMappings[0].hostID' 2147483648 0-2147483647
}
@test "range: linux.gidMappings[1].containerID 2^31" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}, {"containerID": 2147483648, "hostID": 200000, "size": 1}]' 'linux.gidMappings[1].containerID' 2147483648 0-2147483647
}
@test "range: linux.gidMappings[0].hostID 2^31" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] | .linux.gidMappings = [{"containerID": 0, "hostID": 2147483648, "size": 65536}]' 'linux.gidMappings[0].hostID' 2147483648 0-2147483647
}
@test "range: mounts[].uidMappings[0].hostID 2^31" {
	is_tern || skip "runc 1.1.5 predates mounts[].uidMappings (runtime-spec 1.2): it ignores them"
	bad_config '.mounts += [{"destination": "/m", "type": "bind", "source": "/tmp", "options": ["rbind"], "uidMappings": [{"containerID": 0, "hostID": 2147483648, "size": 1}], "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}]' "mounts[$M].uidMappings[0].hostID" 2147483648 0-2147483647
}
@test "range: mounts[].gidMappings[0].containerID 2^31" {
	is_tern || skip "runc 1.1.5 predates mounts[].uidMappings (runtime-spec 1.2): it ignores them"
	bad_config '.mounts += [{"destination": "/m", "type": "bind", "source": "/tmp", "options": ["rbind"], "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}], "gidMappings": [{"containerID": 2147483648, "hostID": 1000, "size": 1}]}]' "mounts[$M].gidMappings[0].containerID" 2147483648 0-2147483647
}
@test "range: linux.devices[0].major 2^32" {
	bad_config '.linux.devices = [{"path": "/dev/xx", "type": "c", "major": 4294967296, "minor": 3}]' 'linux.devices[0]' /dev/xx
}
@test "range: linux.uidMappings[0].size -1" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": -1}] | .linux.gidMappings = .linux.uidMappings' 'linux.uidMappings[0].size'
}
@test "range: linux.uidMappings hostID + size past 2^32-1" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 4294967295, "size": 10}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' 'linux.uidMappings[0]' 4294967295
}

# ---- unknown names -------------------------------------------------------------

@test "name: rlimit type in lower case" {
	bad_config '.process.rlimits = [{"type": "rlimit_nofile", "soft": 1, "hard": 1}]' 'process.rlimits[0].type' rlimit_nofile
}
@test "name: capability in lower case" {
	bad_config '.process.capabilities.effective += ["cap_bogus"]' process.capabilities.effective cap_bogus
}
@test "name: process.ioPriority.class" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BOGUS", "priority": 1}' process.ioPriority.class
}
@test "name: process.scheduler.policy" {
	bad_config '.process.scheduler = {"policy": "SCHED_BOGUS"}' process.scheduler.policy SCHED_BOGUS
}
@test "name: process.scheduler.policy SCHED_ISO (not in Linux)" {
	bad_config '.process.scheduler = {"policy": "SCHED_ISO"}' process.scheduler.policy SCHED_ISO
}
@test "name: process.scheduler.flags" {
	bad_config '.process.scheduler = {"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_BOGUS"]}' 'process.scheduler.flags[1]' SCHED_FLAG_BOGUS
}
@test "name: process.ioPriority.class IOPRIO_CLASS_NONE" {
	bad_config '.process.ioPriority = {"class": "IOPRIO_CLASS_NONE", "priority": 0}' process.ioPriority.class IOPRIO_CLASS_NONE
}
@test "name: linux.intelRdt.schemata resource" {
	bad_config '.linux.intelRdt = {"schemata": ["L3:0=f", "L9:0=1"]}' 'linux.intelRdt.schemata[1]' L9
}
@test "name: linux.intelRdt.closID with a slash" {
	bad_config '.linux.intelRdt = {"closID": "../x"}' linux.intelRdt.closID ../x
}
@test "name: linux.intelRdt.closID info (resctrl's own)" {
	bad_config '.linux.intelRdt = {"closID": "info"}' linux.intelRdt.closID info
}
@test "name: linux.intelRdt.memBwSchema of another resource" {
	bad_config '.linux.intelRdt = {"memBwSchema": "L3:0=f"}' linux.intelRdt.memBwSchema 'MB:'
}
@test "name: namespace without a type" {
	bad_config '.linux.namespaces += [{"path": "/proc/1/ns/net"}]' linux.namespaces
}
@test "name: seccomp defaultAction" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_BOGUS"}' linux.seccomp.defaultAction SCMP_ACT_BOGUS
}
@test "name: seccomp architecture" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_BOGUS"]}' 'linux.seccomp.architectures[0]' SCMP_ARCH_BOGUS
}
@test "name: seccomp syscall action" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_BOGUS"}]}' 'linux.seccomp.syscalls[0].action' SCMP_ACT_BOGUS
}
@test "name: seccomp argument operator" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_BOGUS"}]}]}' 'linux.seccomp.syscalls[0].args[0].op' SCMP_CMP_BOGUS
}
@test "name: seccomp argument index 9" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["getpid"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 9, "value": 1, "op": "SCMP_CMP_EQ"}]}]}' 'linux.seccomp.syscalls[0].args[0].index'
}
@test "name: seccomp flag" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_BOGUS"]}' 'linux.seccomp.flags[0]' SECCOMP_FILTER_FLAG_BOGUS
}
@test "name: linux.resources.devices[0].type" {
	bad_config '.linux.resources.devices = [{"allow": true, "type": "q"}]' 'linux.resources.devices[0].type'
}
@test "name: linux.resources.devices[0].access" {
	bad_config '.linux.resources.devices = [{"allow": true, "access": "rwz"}]' 'linux.resources.devices[0].access'
}
@test "name: linux.devices[0].type" {
	bad_config '.linux.devices = [{"path": "/dev/xx", "type": "q", "major": 1, "minor": 3}]' 'linux.devices[0].type'
}
@test "name: linux.rootfsPropagation" {
	bad_config '.linux.rootfsPropagation = "bogus"' linux.rootfsPropagation bogus
}
@test "name: linux.personality.domain" {
	bad_config '.linux.personality = {"domain": "LINUX_BOGUS"}' linux.personality.domain LINUX_BOGUS
}
@test "name: linux.sysctl unknown key" {
	bad_config '.linux.sysctl = {"net.bogus.thing": "1"}' linux.sysctl net.bogus.thing
}
@test "name: linux.sysctl key with .." {
	bad_config '.linux.sysctl = {"../../etc/passwd": "1"}' linux.sysctl ../../etc/passwd
}
@test "name: mount type bogusfs" {
	bad_config '.mounts += [{"destination": "/m", "type": "bogusfs", "source": "none"}]' "mounts[$M]" bogusfs
}
@test "name: unknown mount option" {
	bad_config '.mounts += [{"destination": "/m", "type": "tmpfs", "source": "tmpfs", "options": ["bogusopt"]}]' "mounts[$M]"
}
@test "name: bad tmpfs size option" {
	bad_config '.mounts += [{"destination": "/m", "type": "tmpfs", "source": "tmpfs", "options": ["size=abc"]}]' "mounts[$M]"
}
@test "name: linux.netDevices host device that does not exist" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"tern-nodev0": {}}' 'linux.netDevices["tern-nodev0"]' "no such network device"
}
@test "name: linux.netDevices name with a slash" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"lo": {"name": "a/b"}}' 'linux.netDevices["lo"].name' a/b
}
@test "name: linux.netDevices name over 15 bytes" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"lo": {"name": "abcdefghijklmnop"}}' 'linux.netDevices["lo"].name' "15 bytes"
}

# ---- contradictions ----------------------------------------------------------

@test "contradiction: duplicate namespace" {
	bad_config '.linux.namespaces += [{"type": "pid"}]' linux.namespaces pid
}
@test "contradiction: duplicate rlimit" {
	bad_config '.process.rlimits = [{"type": "RLIMIT_CORE", "soft": 1, "hard": 1}, {"type": "RLIMIT_CORE", "soft": 1, "hard": 1}]' 'process.rlimits[1]' RLIMIT_CORE
}
@test "contradiction: user namespace without mappings" {
	bad_config '.linux.namespaces += [{"type": "user"}] | del(.linux.uidMappings, .linux.gidMappings)' linux.uidMappings "at least one mapping"
}
@test "contradiction: user namespace with uid but no gid mappings" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] | del(.linux.gidMappings)' linux.gidMappings "at least one mapping"
}
@test "contradiction: overlapping uid mappings" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}, {"containerID": 100, "hostID": 300000, "size": 10}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' 'linux.uidMappings[1]' overlaps
}
@test "contradiction: overlapping host ranges in gid mappings" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 100}, {"containerID": 1000, "hostID": 100050, "size": 10}]' 'linux.gidMappings[1]' overlaps
}
@test "contradiction: mapping of size 0" {
	bad_config '.linux.namespaces += [{"type": "user"}] | .linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 0}] | .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]' 'linux.uidMappings[0].size'
}
@test "contradiction: mappings without a user namespace" {
	bad_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] | .linux.gidMappings = .linux.uidMappings' linux.uidMappings "user namespace"
}
@test "contradiction: timeOffsets without a time namespace" {
	bad_config '.linux.timeOffsets = {"monotonic": {"secs": 1}}' linux.timeOffsets "time namespace"
}
@test "contradiction: network sysctl without a network namespace" {
	bad_config '.linux.sysctl = {"net.ipv4.ip_forward": "1"} | .linux.namespaces |= map(select(.type != "network"))' linux.sysctl net.ipv4.ip_forward
}
@test "contradiction: host-wide sysctl" {
	bad_config '.linux.sysctl = {"vm.swappiness": "10"}' linux.sysctl vm.swappiness
}
@test "contradiction: seccomp SCMP_ACT_NOTIFY as the default action" {
	bad_config '.linux.seccomp = {"defaultAction": "SCMP_ACT_NOTIFY"}' linux.seccomp.defaultAction SCMP_ACT_NOTIFY
}
@test "contradiction: memory swap below the limit" {
	bad_config '.linux.resources.memory = {"limit": 100000000, "swap": 50000000}' linux.resources.memory.swap
}
@test "contradiction: process.scheduler.nice with SCHED_IDLE (the kernel drops it)" {
	bad_config '.process.scheduler = {"policy": "SCHED_IDLE", "nice": 10}' process.scheduler.nice SCHED_IDLE
}
@test "contradiction: process.scheduler.nice with SCHED_FIFO" {
	bad_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 10, "nice": -5}' process.scheduler.nice SCHED_FIFO
}
@test "contradiction: process.scheduler.runtime with SCHED_OTHER" {
	bad_config '.process.scheduler = {"policy": "SCHED_OTHER", "runtime": 1000000}' process.scheduler.runtime SCHED_DEADLINE
}
@test "contradiction: process.scheduler SCHED_DEADLINE without a runtime" {
	bad_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "deadline": 20000000}' process.scheduler.runtime
}
@test "contradiction: process.scheduler.flags SCHED_FLAG_DL_OVERRUN with SCHED_OTHER" {
	bad_config '.process.scheduler = {"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_DL_OVERRUN"]}' 'process.scheduler.flags[0]' SCHED_DEADLINE
}
@test "contradiction: process.scheduler.flags SCHED_FLAG_RECLAIM with SCHED_BATCH" {
	bad_config '.process.scheduler = {"policy": "SCHED_BATCH", "flags": ["SCHED_FLAG_RECLAIM"]}' 'process.scheduler.flags[0]' SCHED_DEADLINE
}
@test "contradiction: process.scheduler.flags SCHED_FLAG_UTIL_CLAMP_MIN without a value" {
	bad_config '.process.scheduler = {"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_UTIL_CLAMP_MIN"]}' 'process.scheduler.flags[0]' "no field"
}
@test "contradiction: process.scheduler.flags SCHED_FLAG_KEEP_PARAMS" {
	bad_config '.process.scheduler = {"policy": "SCHED_BATCH", "nice": 5, "flags": ["SCHED_FLAG_KEEP_PARAMS"]}' 'process.scheduler.flags[0]' SCHED_FLAG_KEEP_PARAMS
}
@test "contradiction: process.scheduler.flags SCHED_FLAG_KEEP_POLICY with another policy than tern's" {
	bad_config '.process.scheduler = {"policy": "SCHED_BATCH", "flags": ["SCHED_FLAG_KEEP_POLICY"]}' 'process.scheduler.flags[0]' SCHED_FLAG_KEEP_POLICY SCHED_BATCH
}
@test "contradiction: linux.intelRdt.schemata domain given twice in a line" {
	bad_config '.linux.intelRdt = {"schemata": ["L3:0=f;0=3"]}' 'linux.intelRdt.schemata[0]' "domain 0 is given twice"
}
@test "contradiction: linux.intelRdt.schemata domain in two lines" {
	bad_config '.linux.intelRdt = {"schemata": ["L3:0=f", "MB:0=10", "L3:0=3"]}' 'linux.intelRdt.schemata[2]' 'schemata[0]'
}
@test "contradiction: linux.intelRdt.l3CacheSchema of an MB line" {
	bad_config '.linux.intelRdt = {"l3CacheSchema": "MB:0=10"}' linux.intelRdt.l3CacheSchema "not an L3 resource"
}
@test "contradiction: linux.intelRdt on a host without resctrl" {
	! grep -qw resctrl /proc/filesystems || skip "this host has resctrl"
	bad_config '.linux.intelRdt = {"closID": "tern-bad-input", "schemata": ["L3:0=f"]}' linux.intelRdt "resctrl is not available"
}
@test "contradiction: cgroupsPath climbing out with .." {
	bad_config '.linux.cgroupsPath = "relative/../.."' linux.cgroupsPath
}
@test "contradiction: idmap mount option without a user namespace" {
	bad_config '.mounts += [{"destination": "/m", "type": "bind", "source": "/tmp", "options": ["rbind", "idmap"]}]' "mounts[$M].options" idmap
}
@test "contradiction: mount uidMappings without gidMappings" {
	bad_config '.mounts += [{"destination": "/m", "type": "bind", "source": "/tmp", "options": ["rbind"], "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}]' "mounts[$M].uidMappings"
}
@test "contradiction: bind mount of a file onto a directory" {
	bad_config '.mounts += [{"destination": "/etc", "type": "bind", "source": "/etc/hostname", "options": ["bind"]}]' "mounts[$M]" /etc/hostname
}
@test "contradiction: linux.netDevices without a network namespace" {
	spec_1_3 linux.netDevices
	bad_config '.linux.namespaces |= map(select(.type != "network")) | .linux.netDevices = {"lo": {}}' linux.netDevices "network namespace"
}
@test "contradiction: linux.netDevices moving the loopback" {
	spec_1_3 linux.netDevices
	bad_config '.linux.netDevices = {"lo": {"name": "lo0"}}' 'linux.netDevices["lo"]' loopback
}
@test "contradiction: a mount duplicated, the second one broken" {
	bad_config '.mounts += [{"destination": "/m", "type": "tmpfs", "source": "tmpfs"}, {"destination": "/m", "type": "bind", "source": "/no/such/dir", "options": ["bind"]}]' "mounts[$((M + 1))]" /no/such/dir
}

# ---- missing or malformed required values ----------------------------------

@test "missing: process.args[0] the empty string" {
	bad_config '.process.args = [""]' 'process.args[0]' 
}
@test "missing: process.cwd empty" {
	bad_config '.process.cwd = ""' process.cwd
}
@test "missing: process.env entry without =" {
	bad_config '.process.env += ["NOEQUALS"]' 'process.env[' NOEQUALS
}
@test "missing: root.path empty" {
	bad_config '.root.path = ""' root.path
}
@test "missing: mounts[].destination" {
	bad_config '.mounts += [{"type": "tmpfs", "source": "tmpfs"}]' "mounts[$M].destination"
}
@test "missing: bind mount without a source" {
	bad_config '.mounts += [{"destination": "/m", "type": "bind", "options": ["rbind"]}]' "mounts[$M]" source
}
@test "missing: linux.devices[0].major of a char device" {
	bad_config '.linux.devices = [{"path": "/dev/xx", "type": "c"}]' 'linux.devices[0].major'
}
@test "missing: linux.devices[0].path relative" {
	bad_config '.linux.devices = [{"path": "dev/xx", "type": "c", "major": 1, "minor": 3}]' 'linux.devices[0].path'
}
@test "missing: linux.devices[0].path" {
	bad_config '.linux.devices = [{"type": "c", "major": 1, "minor": 3}]' 'linux.devices[0].path'
}
@test "missing: hooks path relative" {
	bad_config '.hooks.createRuntime = [{"path": "relative/hook"}]' 'hooks.createRuntime[0].path'
}

# ---- missing files -------------------------------------------------------------

@test "file: config.json empty" {
	: >"$BUNDLE/config.json"; run rt create -b "$BUNDLE" "$ID"; expect_failure config.json; check_clean
}
@test "file: config.json is JSON null" {
	echo null >"$BUNDLE/config.json"; run rt create -b "$BUNDLE" "$ID"; expect_failure config.json; check_clean
}
@test "file: config.json a directory" {
	rm "$BUNDLE/config.json"; mkdir "$BUNDLE/config.json"; run rt create -b "$BUNDLE" "$ID"; expect_failure config.json; check_clean
}
@test "file: config.json a symlink loop" {
	rm "$BUNDLE/config.json"; ln -s config.json "$BUNDLE/config.json"; run rt create -b "$BUNDLE" "$ID"; expect_failure config.json; check_clean
}
@test "file: the bundle does not exist" {
	bad_cli "$BUNDLE-none" -- create -b "$BUNDLE-none" "$ID"
}
@test "file: the bundle is a regular file" {
	bad_cli "$BUNDLE/config.json" -- create -b "$BUNDLE/config.json" "$ID"
}
@test "file: rootfs a symlink loop" {
	rm -rf "$BUNDLE/rootfs"; ln -s rootfs "$BUNDLE/rootfs"; bad_config . rootfs
}
@test "file: rootfs a regular file" {
	rm -rf "$BUNDLE/rootfs"; touch "$BUNDLE/rootfs"; bad_config . rootfs
}
@test "file: root.path elsewhere, missing" {
	bad_config ".root.path = \"$BATS_TEST_TMPDIR/no-rootfs\"" "$BATS_TEST_TMPDIR/no-rootfs"
}
@test "file: prestart hook missing" {
	bad_config '.hooks.prestart = [{"path": "/no/such/hook"}]' prestart /no/such/hook
}
@test "file: createContainer hook missing" {
	bad_config '.hooks.createContainer = [{"path": "/no/such/hook"}]' createContainer /no/such/hook
}
@test "file: createRuntime hook fails" {
	bad_config '.hooks.createRuntime = [{"path": "/bin/sh", "args": ["sh", "-c", "exit 3"]}]' createRuntime "status 3"
}
@test "file: createRuntime hook runs past its timeout" {
	bad_config ".hooks.createRuntime = [{\"path\": \"/bin/sleep\", \"args\": [\"sleep\", \"$MARK\"], \"timeout\": 1}]" createRuntime "timed out"
}
@test "file: seccomp listenerPath missing" {
	bad_config ".linux.seccomp = {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"$BATS_TEST_TMPDIR/no-listener\", \"syscalls\": [{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}" linux.seccomp.listenerPath "$BATS_TEST_TMPDIR/no-listener"
}
@test "file: seccomp listenerPath a regular file" {
	bad_config ".linux.seccomp = {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"$OUTSIDE/file\", \"syscalls\": [{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}" linux.seccomp.listenerPath "$OUTSIDE/file"
}
@test "file: namespace path missing" {
	bad_config '.linux.namespaces |= map(if .type == "network" then .path = "/no/such/ns" else . end)' /no/such/ns
}
@test "file: namespace path a regular file" {
	bad_config '.linux.namespaces |= map(if .type == "network" then .path = "/etc/passwd" else . end)' 'linux.namespaces[' /etc/passwd "not a namespace file"
}
@test "file: namespace path of another type" {
	bad_config ".linux.namespaces |= map(if .type == \"network\" then .path = \"/proc/$$/ns/mnt\" else . end)" 'linux.namespaces[' "/proc/$$/ns/mnt" "not a network namespace"
}
@test "file: mount source a symlink loop" {
	ln -s loop "$OUTSIDE/loop"; bad_config ".mounts += [{\"destination\": \"/m\", \"type\": \"bind\", \"source\": \"$OUTSIDE/loop\", \"options\": [\"bind\"]}]" "mounts[$M]" "$OUTSIDE/loop"
}
@test "file: console socket missing" {
	update_config '.process.terminal = true'; bad_cli "$BATS_TEST_TMPDIR/no-sock" -- create -b "$BUNDLE" --console-socket "$BATS_TEST_TMPDIR/no-sock" "$ID"
}
@test "file: console socket a regular file" {
	update_config '.process.terminal = true'; bad_cli "$OUTSIDE/file" -- create -b "$BUNDLE" --console-socket "$OUTSIDE/file" "$ID"
}
@test "file: terminal without a console socket" {
	update_config '.process.terminal = true'; bad_cli console -- create -b "$BUNDLE" "$ID"
}
@test "file: pid file in a missing directory" {
	bad_cli "$BATS_TEST_TMPDIR/no-dir/pid" -- create -b "$BUNDLE" --pid-file "$BATS_TEST_TMPDIR/no-dir/pid" "$ID"
}

# ---- symlinks in the rootfs: loops fail, escapes stay inside ------------------

@test "symlink: cwd a loop" {
	ln -s loop "$BUNDLE/rootfs/loop"; bad_config '.process.cwd = "/loop"' process.cwd /loop
}
@test "symlink: args[0] a loop" {
	ln -s loop "$BUNDLE/rootfs/loop"; bad_config '.process.args = ["/loop"]' /loop
}
@test "symlink: mount destination a loop" {
	ln -s loop "$BUNDLE/rootfs/loop"; bad_config '.mounts += [{"destination": "/loop/m", "type": "tmpfs", "source": "tmpfs"}]' "mounts[$M]" /loop
}
@test "symlink: mount destination through a link to the host stays inside" {
	ln -s "$OUTSIDE" "$BUNDLE/rootfs/escape"
	update_config '.mounts += [{"destination": "/escape/m", "type": "tmpfs", "source": "tmpfs"}]'
	stays_inside
}
@test "symlink: mount destination with .. stays inside" {
	update_config ".mounts += [{\"destination\": \"/../../../../../../..$OUTSIDE/m\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"}]"
	stays_inside
}
@test "symlink: relative mount destination with .. stays inside" {
	update_config ".mounts += [{\"destination\": \"../../../../../../..$OUTSIDE/m\", \"type\": \"tmpfs\", \"source\": \"tmpfs\"}]"
	stays_inside
}
@test "symlink: a bind mount onto a link to a host file stays inside" {
	ln -s "$OUTSIDE/file" "$BUNDLE/rootfs/escape"
	update_config '.mounts += [{"destination": "/escape", "type": "bind", "source": "/etc/hostname", "options": ["bind"]}]'
	stays_inside
}
@test "symlink: device path through a link to the host stays inside" {
	ln -s "$OUTSIDE" "$BUNDLE/rootfs/dev-escape"
	update_config '.linux.devices = [{"path": "/dev-escape/null2", "type": "c", "major": 1, "minor": 3}]'
	stays_inside
}
@test "symlink: a device over a link to a host file stays inside" {
	update_config '.linux.devices = [{"path": "/dev/escape", "type": "c", "major": 1, "minor": 3}]
		| .mounts |= map(select(.destination != "/dev"))'
	ln -s "$OUTSIDE/file" "$BUNDLE/rootfs/dev/escape"
	stays_inside
}
@test "symlink: maskedPaths through a link to the host stays inside" {
	ln -s "$OUTSIDE" "$BUNDLE/rootfs/mask-escape"
	update_config '.linux.maskedPaths += ["/mask-escape/file"] | .linux.readonlyPaths += ["/mask-escape"]'
	stays_inside
}

# ---- huge values, bytes that are not UTF-8 -------------------------------------

@test "huge: 100000 arguments" {
	python3 -c "
import json, sys
p = sys.argv[1] + '/config.json'
c = json.load(open(p))
c['process']['args'] = ['/bin/true'] + ['x' * 20] * 100000
json.dump(c, open(p, 'w'))" "$BUNDLE"
	run rt run -b "$BUNDLE" "$ID"
	expect_failure "Argument list too long"
	check_clean
}
@test "huge: an environment string of a megabyte" {
	python3 -c "
import json, sys
p = sys.argv[1] + '/config.json'
c = json.load(open(p))
c['process']['env'].append('BIG=' + 'y' * 1048576)
json.dump(c, open(p, 'w'))" "$BUNDLE"
	run rt run -b "$BUNDLE" "$ID"
	expect_failure "Argument list too long"
	check_clean
}
@test "huge: config.json nested 100000 deep" {
	python3 -c "
import sys
open(sys.argv[1] + '/config.json', 'w').write('{\"annotations\": ' + '[' * 100000 + ']' * 100000 + '}')" "$BUNDLE"
	run rt create -b "$BUNDLE" "$ID"
	expect_failure config.json
	check_clean
}
@test "utf8: hostname with bytes that are not UTF-8" {
	update_config '.hostname = "HOSTX"'; bad_config_raw 's/HOSTX/\xff\xfeab/' config.json
}
@test "utf8: process.args with bytes that are not UTF-8" {
	set_args /bin/echo ARGX; bad_config_raw 's/ARGX/\xc3\x28/' config.json
}
@test "utf8: a key that is not UTF-8" {
	bad_config_raw 's/"hostname"/"host\xffname"/' config.json
}

# ---- container ids ---------------------------------------------------------------

@test "id: with a slash" {
	bad_cli "a/b" -- create -b "$BUNDLE" a/b
}
@test "id: .." {
	bad_cli ".." -- create -b "$BUNDLE" ..
}
@test "id: ." {
	bad_cli "id" -- create -b "$BUNDLE" .
}
@test "id: with a space" {
	bad_cli "a b" -- create -b "$BUNDLE" "a b"
}
@test "id: with a newline" {
	bad_cli "id" -- create -b "$BUNDLE" $'a\nb'
}
@test "id: bytes that are not UTF-8" {
	bad_cli "id" -- create -b "$BUNDLE" $'a\xffb'
}
@test "id: 300 characters" {
	bad_cli "too long" -- create -b "$BUNDLE" "$ID$(printf 'x%.0s' {1..300})"
}
@test "id: 5000 characters" {
	bad_cli "too long" -- create -b "$BUNDLE" "$ID$(printf 'x%.0s' {1..5000})"
}
@test "id: two ids" {
	bad_cli -- create -b "$BUNDLE" "$ID" "$ID-2"
}
@test "id: ../ for state" {
	bad_cli "../x" -- state ../x
}
@test "id: ../ for start" {
	bad_cli "../x" -- start ../x
}
@test "id: ../ for kill" {
	bad_cli "../x" -- kill ../x KILL
}
@test "id: ../ for delete --force" {
	bad_cli "../x" -- delete --force ../x
}
@test "id: ../ for pause" {
	bad_cli "../x" -- pause ../x
}
@test "id: ../ for resume" {
	bad_cli "../x" -- resume ../x
}
@test "id: ../ for exec" {
	bad_cli "../x" -- exec ../x true
}
@test "id: ../ for ps" {
	bad_cli "../x" -- ps ../x
}
@test "id: ../ for events" {
	bad_cli "../x" -- events --stats ../x
}
@test "id: ../ for update" {
	bad_cli "../x" -- update --pids-limit 10 ../x
}
@test "id: ../ for checkpoint" {
	bad_cli "../x" -- --criu "$CRIU_BIN" checkpoint --image-path "$BATS_TEST_TMPDIR/img" ../x
}
@test "id: empty for state" {
	bad_cli "id" -- state ""
}
@test "id: missing for kill" {
	bad_cli -- kill
}

# ---- unknown flags, every command; bad flag values -------------------------------

@test "flag: unknown global flag" {
	bad_cli --bogus -- --bogus list
}
@test "flag: unknown command" {
	bad_cli frobnicate -- frobnicate "$ID"
}
@test "flag: create --bogus" {
	bad_cli --bogus -- create --bogus -b "$BUNDLE" "$ID"
}
@test "flag: run --bogus" {
	bad_cli --bogus -- run --bogus -b "$BUNDLE" "$ID"
}
@test "flag: start --bogus" {
	bad_cli --bogus -- start --bogus "$ID"
}
@test "flag: exec --bogus" {
	bad_cli --bogus -- exec --bogus "$ID" true
}
@test "flag: kill --bogus" {
	bad_cli --bogus -- kill --bogus "$ID"
}
@test "flag: delete --bogus" {
	bad_cli --bogus -- delete --bogus "$ID"
}
@test "flag: state --bogus" {
	bad_cli --bogus -- state --bogus "$ID"
}
@test "flag: pause --bogus" {
	bad_cli --bogus -- pause --bogus "$ID"
}
@test "flag: resume --bogus" {
	bad_cli --bogus -- resume --bogus "$ID"
}
@test "flag: ps --bogus" {
	bad_cli --bogus -- ps --bogus "$ID"
}
@test "flag: events --bogus" {
	bad_cli --bogus -- events --bogus "$ID"
}
@test "flag: update --bogus" {
	bad_cli --bogus -- update --bogus "$ID"
}
@test "flag: list --bogus" {
	bad_cli --bogus -- list --bogus
}
@test "flag: spec --bogus" {
	bad_cli --bogus -- spec --bogus
}
@test "flag: checkpoint --bogus" {
	bad_cli --bogus -- checkpoint --bogus "$ID"
}
@test "flag: restore --bogus" {
	bad_cli --bogus -- restore --bogus -b "$BUNDLE" "$ID"
}
@test "flag: features --bogus" {
	bad_cli --bogus -- features --bogus
}
@test "flag: --log-format xml" {
	bad_cli xml -- --log-format xml list
}
@test "flag: --log in a missing directory" {
	bad_cli "$BATS_TEST_TMPDIR/no-dir/log" -- --log "$BATS_TEST_TMPDIR/no-dir/log" list
}
@test "flag: create --preserve-fds abc" {
	bad_cli preserve-fds abc -- create --preserve-fds abc -b "$BUNDLE" "$ID"
}
@test "flag: create --preserve-fds -1" {
	bad_cli preserve-fds -- create --preserve-fds -1 -b "$BUNDLE" "$ID"
}
@test "flag: run --preserve-fds 2^64" {
	bad_cli preserve-fds -- run --preserve-fds 18446744073709551616 -b "$BUNDLE" "$ID"
}
@test "flag: list --format xml" {
	bad_cli xml -- list --format xml
}
@test "flag: spec --bundle missing" {
	bad_cli "$BATS_TEST_TMPDIR/no-dir" -- spec --bundle "$BATS_TEST_TMPDIR/no-dir"
}
@test "flag: restore --image-path missing" {
	bad_cli "$BATS_TEST_TMPDIR/no-img" -- --criu "$CRIU_BIN" restore --image-path "$BATS_TEST_TMPDIR/no-img" -b "$BUNDLE" "$ID"
}

# flags of commands on a running container: it stays running, unchanged

@test "flag: kill with signal 65" {
	bad_in_state running 65 -- kill ID 65
}
@test "flag: kill with signal SIG" {
	bad_in_state running SIG -- kill ID SIG
}
@test "flag: kill with signal -9" {
	bad_in_state running -- kill ID -9
}
@test "flag: exec without a command" {
	bad_in_state running -- exec ID
}
@test "flag: exec --user abc" {
	bad_in_state running abc -- exec --user abc ID true
}
@test "flag: exec --user 1:2:3" {
	bad_in_state running 1:2:3 -- exec --user 1:2:3 ID true
}
@test "flag: exec --user 4294967295 ((uid_t)-1)" {
	bad_in_state running --user 4294967295 0-2147483647 -- exec --user 4294967295 ID true
}
@test "flag: exec --user 0:4294967295 ((gid_t)-1)" {
	bad_in_state running --user gid 4294967295 0-2147483647 -- exec --user 0:4294967295 ID true
}
@test "flag: exec --additional-gids 4294967295" {
	bad_in_state running --additional-gids 4294967295 0-2147483647 -- exec --additional-gids 4294967295 ID true
}
@test "flag: exec --process with user.uid 4294967295" {
	echo '{"args": ["true"], "cwd": "/", "user": {"uid": 4294967295, "gid": 0}}' >"$BATS_TEST_TMPDIR/p.json"; bad_in_state running user.uid 4294967295 0-2147483647 -- exec --process "$BATS_TEST_TMPDIR/p.json" ID
}
@test "flag: exec --process with user.additionalGids[0] 4294967295" {
	echo '{"args": ["true"], "cwd": "/", "user": {"uid": 0, "gid": 0, "additionalGids": [4294967295]}}' >"$BATS_TEST_TMPDIR/p.json"; bad_in_state running 'user.additionalGids[0]' 4294967295 -- exec --process "$BATS_TEST_TMPDIR/p.json" ID
}
@test "flag: exec --cwd relative" {
	bad_in_state running cwd -- exec --cwd relative ID true
}
@test "flag: exec --cap CAP_BOGUS" {
	bad_in_state running CAP_BOGUS -- exec --cap CAP_BOGUS ID true
}
@test "flag: exec --env without =" {
	bad_in_state running NOEQUALS -- exec --env NOEQUALS ID true
}
@test "flag: exec --process missing" {
	bad_in_state running "$BATS_TEST_TMPDIR/no-process.json" -- exec --process "$BATS_TEST_TMPDIR/no-process.json" ID
}
@test "flag: exec --process malformed" {
	echo '{"args": [' >"$BATS_TEST_TMPDIR/p.json"; bad_in_state running p.json -- exec --process "$BATS_TEST_TMPDIR/p.json" ID
}
@test "flag: exec --process with a wrong type" {
	echo '{"args": "true", "cwd": "/"}' >"$BATS_TEST_TMPDIR/p.json"; bad_in_state running args -- exec --process "$BATS_TEST_TMPDIR/p.json" ID
}
@test "flag: exec --preserve-fds abc" {
	bad_in_state running preserve-fds -- exec --preserve-fds abc ID true
}
@test "flag: ps --format xml" {
	bad_in_state running xml -- ps --format xml ID
}
@test "flag: events --interval abc" {
	bad_in_state running abc -- events --interval abc ID
}
@test "flag: events --interval 0" {
	bad_in_state running interval -- events --interval 0 ID
}
@test "flag: update --memory abc" {
	bad_in_state running abc -- update --memory abc ID
}
@test "flag: update --memory 2^64" {
	bad_in_state running memory -- update --memory 18446744073709551616 ID
}
@test "flag: update --cpu-quota x" {
	bad_in_state running cpu-quota -- update --cpu-quota x ID
}
@test "flag: update --pids-limit 1.5" {
	bad_in_state running pids-limit -- update --pids-limit 1.5 ID
}
@test "flag: update --blkio-weight 5" {
	bad_in_state running blkio -- update --blkio-weight 5 ID
}
@test "flag: update --l3-cache-schema with a mask that is not hexadecimal" {
	bad_in_state running --l3-cache-schema zz -- update --l3-cache-schema L3:0=zz ID
}
@test "flag: update --mem-bw-schema of an L3 line" {
	bad_in_state running --mem-bw-schema "is not MB" -- update --mem-bw-schema L3:0=f ID
}
@test "flag: update --l3-cache-schema of a container without linux.intelRdt" {
	bad_in_state running --l3-cache-schema ID "no resctrl group" -- update --l3-cache-schema L3:0=f ID
}
@test "flag: update --cpuset-cpus z" {
	bad_in_state running cpus -- update --cpuset-cpus z ID
}
@test "flag: update -r missing file" {
	bad_in_state running "$BATS_TEST_TMPDIR/no-res.json" -- update -r "$BATS_TEST_TMPDIR/no-res.json" ID
}
@test "flag: update -r with a wrong type" {
	echo '{"memory": {"limit": "1g"}}' >"$BATS_TEST_TMPDIR/r.json"; bad_in_state running memory.limit -- update -r "$BATS_TEST_TMPDIR/r.json" ID
}
@test "flag: checkpoint --manage-cgroups-mode bogus" {
	bad_in_state running bogus -- --criu "$CRIU_BIN" checkpoint --manage-cgroups-mode bogus --image-path "$BATS_TEST_TMPDIR/img" ID
}
@test "flag: checkpoint --image-path under a regular file" {
	bad_in_state running "$OUTSIDE/file" -- --criu "$CRIU_BIN" checkpoint --image-path "$OUTSIDE/file/img" ID
}

# ---- every command in a wrong state -------------------------------------------------

@test "state: start a running container (start twice)" {
	bad_in_state running -- start ID
}
@test "state: start a paused container" {
	bad_in_state paused -- start ID
}
@test "state: pause a created container" {
	bad_in_state created -- pause ID
}
@test "state: pause a stopped container" {
	bad_in_state stopped -- pause ID
}
@test "state: resume a created container" {
	bad_in_state created -- resume ID
}
@test "state: resume a stopped container" {
	bad_in_state stopped -- resume ID
}
@test "state: exec into a stopped container" {
	bad_in_state stopped -- exec ID true
}
@test "state: checkpoint a created container" {
	bad_in_state created -- --criu "$CRIU_BIN" checkpoint --image-path "$BATS_TEST_TMPDIR/img" ID
}
@test "state: checkpoint a stopped container" {
	bad_in_state stopped -- --criu "$CRIU_BIN" checkpoint --image-path "$BATS_TEST_TMPDIR/img" ID
}
@test "state: delete a paused container without --force" {
	bad_in_state paused -- delete ID
}
@test "state: update a stopped container" {
	bad_in_state stopped -- update --pids-limit 10 ID
}
@test "state: create over an existing (stopped) id" {
	bad_in_state stopped -- create -b "$BUNDLE" ID
}

# with a real checkpoint of a running container (CRIU, about a second)
make_checkpoint() {
	to_state running
	rt --criu "$CRIU_BIN" checkpoint --leave-running --image-path "$BATS_TEST_TMPDIR/img" "$ID" >/dev/null
	[ -e "$BATS_TEST_TMPDIR/img/inventory.img" ]
}

@test "state: restore into an existing id" {
	make_checkpoint
	run rt --criu "$CRIU_BIN" restore -d --image-path "$BATS_TEST_TMPDIR/img" -b "$BUNDLE" "$ID"
	expect_failure "$ID" exists
	[ "$(state_field "$ID" status)" = running ]
	rt delete --force "$ID"
	check_clean
}

@test "flag: restore --manage-cgroups-mode bogus" {
	make_checkpoint
	run rt --criu "$CRIU_BIN" restore -d --manage-cgroups-mode bogus --image-path "$BATS_TEST_TMPDIR/img" -b "$BUNDLE" "$ID-r"
	expect_failure bogus
	[ ! -e "$ROOT/$ID-r" ]
	[ "$(state_field "$ID" status)" = running ]
	rt delete --force "$ID"
	check_clean
}
