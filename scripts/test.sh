#!/bin/bash
# Build tern from this checkout and run every test: the C unit tests
# (make check) and the integration suite (bats). Runs as root on Debian 12,
# non-interactively (CI has no stdin). The last line of output is always
#   total: N passed, N failed, N skipped
# and the exit status is non-zero if anything failed.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

cd "$(dirname "$0")/.."
REPO=$(pwd)
LOGDIR=$REPO/tests/.work/logs
passed=0 failed=0 skipped=0

summary() {
	echo "total: $passed passed, $failed failed, $skipped skipped"
}

# phase TITLE: a heading, with the minutes and seconds since the start, so
# that a CI log shows where the time goes.
phase() {
	printf '== %s (at %dm%02ds)\n' "$1" $((SECONDS / 60)) $((SECONDS % 60))
}

die() {
	echo "test.sh: $*" >&2
	failed=$((failed + 1))
	summary
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (sudo ./scripts/test.sh): containers need it"

phase "installing dependencies"
apt-get update -q </dev/null || die "apt-get update failed"
# The last line is what the qemu guests boot (tests/vm/run-in-guest.sh would
# install it too, but the guests start together, next to the host suite).
# INITRD=No: no initrd for /boot; run-in-guest.sh builds its own.
INITRD=No apt-get install -y -q --no-install-recommends \
	build-essential autoconf automake libtool pkg-config libssl-dev \
	libyajl-dev libseccomp-dev libcap-dev libselinux1-dev libsystemd-dev libprotobuf-c-dev \
	criu busybox-static jq bats runc iproute2 procps util-linux uidmap libcap2-bin socat attr strace clang libclang-rt-14-dev \
	golang-github-containers-common podman conmon catatonit containerd \
	qemu-system-x86 linux-image-amd64 initramfs-tools lz4 </dev/null ||
	die "apt-get install failed"
./scripts/install-criu.sh </dev/null || die "installing criu failed"

phase "building"
{ ./autogen.sh && ./configure && make -j"$(nproc)"; } </dev/null || die "build failed"

mkdir -p "$LOGDIR"

# count_tap FILE RC: add a bats TAP log to the totals. A non-zero RC with no
# "not ok" line (a bad test file, a crashed bats, a guest that did not boot or
# timed out) still counts as a failure.
count_tap() {
	local tap=$1 rc=$2 p s f
	p=$(grep -c '^ok ' "$tap" | tr -d ' ')
	s=$(grep -c '^ok .* # skip' "$tap" | tr -d ' ')
	f=$(grep -c '^not ok ' "$tap" | tr -d ' ')
	passed=$((passed + p - s))
	skipped=$((skipped + s))
	failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		failed=$((failed + 1))
	fi
}

# ---- qemu guests ----
# This machine is cgroup v1 hybrid, has no soft-dirty tracking and does not
# run systemd: what needs those runs for real in guests booted from Debian's
# own kernel (tests/vm/run-in-guest.sh installs qemu and the kernel itself).
# The guests emulate their CPUs (TCG), hence the wide timeouts. One after
# the other, after the host suite, they kept this machine's two cores only
# about 60% busy and made CI last about an hour; so they run in two lanes at
# once, started before the unit tests and the host suite and beside them, at
# a lower priority (nice 10) so that the host suite's own timeouts see an
# idle-like machine. They end last, so they start as soon as tern is built.
# Each guest's output is kept in its .tap file and printed when all are done.
# The base rootfs is built first: the guests see this checkout's
# tests/.work through their overlay and would otherwise each build their own
# while the host suite builds it too.

# guest NAME CMD...: one guest run, CMD being run-in-guest.sh (after any
# env VAR=...); its output in $LOGDIR/NAME.tap, its status in NAME.rc.
guest() {
	local name=$1
	shift
	BATS_TEST_TIMEOUT=600 nice -n 10 "$@" </dev/null >"$LOGDIR/$name.tap" 2>&1
	echo $? >"$LOGDIR/$name.rc"
}

# report NAME TITLE: a finished guest run's output, counted.
report() {
	echo "== $2"
	cat "$LOGDIR/$1.tap"
	count_tap "$LOGDIR/$1.tap" "$(cat "$LOGDIR/$1.rc" 2>/dev/null || echo 1)"
}

# Both lanes boot a pure cgroup v2 guest first, then a systemd one. The
# guests run only the tests tagged vm:v2 (bats --filter-tags): whole files
# for cgroup v2 and the incremental dumps, and the part of checkpoint.bats,
# snapshot-warm.bats and oci13-mempolicy.bats that can differ there; the rest
# behaves the same on either kernel and runs on this machine only (a test in
# an emulated guest takes about five times as long as here).
# Lane 1:
# - cgroup v2: seccomp-compat32.bats needs int $0x80, which some hosts'
#   kernels refuse (it skips there, loudly), and netdev-dummy.bats dummy
#   network devices: Debian's kernel has both. Two NUMA nodes
#   (TERN_VM_NUMA=2): oci13-mempolicy.bats puts pages on node 1 for real
#   (this host has one node; the other files do not mind them). A spare
#   NIC: a physical device that netdev-physical.bats moves into a
#   container and gets back.
# - systemd: the guest boots systemd as PID 1, on pure v2.
SPARE_NIC_MAC=52:54:00:7e:72:6e
rm -f "$LOGDIR"/*.rc
BATS_TEST_DIRNAME=$REPO/tests/integration bash -c \
	'source "$BATS_TEST_DIRNAME/helpers.bash" && build_base_rootfs' ||
	die "building the tests' base rootfs failed"
phase "qemu guests started: cgroup v2 then systemd v2, and checkpoint/restore then systemd hybrid"
{
	guest cgroup-v2 env TERN_VM_NUMA=2 TERN_VM_SPARE_NIC=$SPARE_NIC_MAC \
		tests/vm/run-in-guest.sh --timeout 3600 -- \
		env TERN_BIN="$REPO/tern" TERN_REQUIRE_COMPAT32=1 TERN_TEST_SPARE_NIC_MAC=$SPARE_NIC_MAC \
		bats --tap --timing --filter-tags vm:v2 tests/integration-v2 \
		tests/integration/pause-ps-update.bats tests/integration/events.bats \
		tests/integration/cgroup-resources.bats \
		tests/integration/seccomp-compat32.bats tests/integration/netdev-dummy.bats \
		tests/integration/netdev-physical.bats tests/integration/oci13-mempolicy.bats
	guest systemd-v2 tests/vm/run-in-guest.sh --timeout 1800 --systemd -- \
		env TERN_BIN="$REPO/tern" bats --tap --timing tests/integration-systemd
} &
lane1=$!
# Lane 2:
# - checkpoint/restore. This machine's kernel has no CONFIG_MEM_SOFT_DIRTY,
#   so CRIU's pre-dump and incremental dumps run here, on Debian's kernel,
#   with the guest's own files (snapshot-spares-v2.bats: a clone spare moved
#   between v2 cgroups), snapshot-warm.bats (a spare frozen by the v2
#   freezer while CRIU holds it) and part of checkpoint.bats, on pure
#   cgroup v2. The private criu in /opt is visible there. cgroup.bats runs
#   in this boot too (it needs nothing else), to even out the lanes. So do
#   the user-namespaced checkpoint, rollback (cold, and warm: the v2
#   freezer) and clone-spare tests (a spare's processes moved between v2
#   cgroups), container root at an unprivileged host uid.
# - systemd in systemd's hybrid layout (the one this machine has).
{
	guest criu-guest tests/vm/run-in-guest.sh --timeout 3600 -- \
		env TERN_BIN="$REPO/tern" bats --tap --timing --filter-tags vm:v2 \
		tests/integration-criu-guest tests/integration/checkpoint.bats \
		tests/integration/snapshot-warm.bats tests/integration/cgroup.bats \
		tests/integration/checkpoint-userns.bats tests/integration/snapshot-userns.bats \
		tests/integration/clone-userns.bats
	guest systemd-hybrid tests/vm/run-in-guest.sh --timeout 1800 --systemd --hybrid -- \
		env TERN_BIN="$REPO/tern" bats --tap --timing tests/integration-systemd
} &
lane2=$!
phase "unit tests (make check)"
make -j"$(nproc)" check </dev/null
make_rc=$?
# automake's TAP driver writes one .trs per test program, with a
# ":test-result: X" line per test case.
for trs in tests/unit/*.trs; do
	[ -e "$trs" ] || continue
	passed=$((passed + $(grep -c '^:test-result: PASS' "$trs")))
	failed=$((failed + $(grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)' "$trs")))
	skipped=$((skipped + $(grep -c '^:test-result: \(SKIP\|XFAIL\)' "$trs")))
done
if [ "$make_rc" -ne 0 ] && ! grep -q '^:test-result: \(FAIL\|XPASS\|ERROR\)' tests/unit/*.trs 2>/dev/null; then
	# make check failed before any test could report (e.g. a compile error).
	failed=$((failed + 1))
fi

phase "integration tests (bats), on this machine"
# podman.bats drives tern through podman and conmon (installed above), with a
# private containers.conf and storage under bats's temporary directory;
# containerd.bats through containerd's runc shim, on a private containerd
# that it starts and stops itself.
TAP=$LOGDIR/integration.tap
# A runtime that hangs fails its test instead of hanging CI.
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-120}
TERN_BIN=$REPO/tern bats --tap --timing tests/integration </dev/null 2>&1 | tee "$TAP"
count_tap "$TAP" "${PIPESTATUS[0]}"

phase "waiting for the qemu guests"
wait "$lane1" "$lane2"
phase "qemu guests done"
report cgroup-v2 "cgroup v2 tests in a qemu guest (Debian's kernel, pure cgroup v2)"
report criu-guest "checkpoint/restore and cgroup.bats in a qemu guest (incremental dumps need soft-dirty tracking; pure cgroup v2)"
report systemd-v2 "systemd cgroup driver in a qemu guest booted with systemd (v2)"
report systemd-hybrid "systemd cgroup driver in a qemu guest booted with systemd (hybrid)"

summary
[ "$failed" -eq 0 ]
