#!/bin/bash
# Run a command inside a qemu guest that boots Debian's own kernel
# (linux-image-amd64) on a pure cgroup v2 hierarchy, and exit with the
# command's status. The guest sees this machine's root filesystem (read-only,
# over virtio-9p) under a writable tmpfs overlay, so the command runs the same
# binaries, the same checkout and the same bats as here; nothing it writes
# reaches the host.
#
#   tests/vm/run-in-guest.sh [--timeout SECS] [--systemd [--hybrid]] -- COMMAND [ARG...]
#
# --systemd: the guest boots systemd as PID 1 (after the overlay set-up
# below) and COMMAND runs as a systemd service (tern-job.service, with
# Delegate=yes), so that the systemd cgroup driver has a systemd to talk to;
# /sys/fs/cgroup is then mounted by systemd. --hybrid (with --systemd):
# systemd's hybrid layout instead of pure v2 (v1 controller hierarchies plus
# an empty v2 one at /sys/fs/cgroup/unified), as on the machine the project
# is developed on.
#
# COMMAND runs as root in the caller's working directory with the caller's
# exported environment (minus an outer bats run's BATS_* bookkeeping); stdin
# is /dev/null. In the guest, / is this machine's root under a tmpfs overlay
# (writable; the checkout's tests/.work cache too, with what the host had
# there), with shared propagation as systemd sets it up; /run, /tmp, /var/tmp
# and /var/lib are fresh empty tmpfs (the checkout and the working directory
# stay visible if they are under one of them); /sys/fs/cgroup is cgroup2
# (no v1: cgroup_no_v1=all) with every controller enabled in the root's
# cgroup.subtree_control, and the command runs in the root cgroup.
# Its stdout and stderr arrive here on stdout and stderr while it runs. Exit status: COMMAND's own, or 124 when
# the guest did not finish within --timeout (default 600 s; qemu is killed),
# or 125 when the guest could not be started or set up (the guest's console
# log is printed).
#
# Needs root (the guest's files are created with the owners the guest asks
# for: qemu's 9p "passthrough" model). Installs what it needs with apt-get when
# missing: qemu-system-x86, linux-image-amd64, initramfs-tools, lz4.
#
# Environment: TERN_VM_CACHE (default /var/cache/tern-vm) keeps the built
# initrd between runs; TERN_VM_KERNEL picks a kernel version from /boot;
# TERN_VM_MEM (MiB, default 2048) and TERN_VM_SMP (default 2) size the guest;
# TERN_VM_NUMA=N (default 1) gives it N NUMA nodes: the memory split evenly
# between them, CPU c on node c % N (a node past the CPUs has memory only),
# for the linux.memoryPolicy tests (oci13-mempolicy.bats) that need more
# than one node; TERN_VM_SPARE_NIC=MAC gives it a virtio NIC with that
# address on a hub of its own (no way out), a physical device that
# netdev-physical.bats may move into a container (the guest's kernel loads
# its driver, virtio_net, when the test asks);
# TERN_VM_KEEP=1 keeps the run's temporary directory (console log, output).
#
# There is no /dev/kvm on the machines this runs on: qemu emulates the CPU
# (TCG): measured here, the guest boots in 10-15 s and runs tests about 5
# times slower than the host (lifecycle.bats: 187 s against 37 s).
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive

prog='run-in-guest.sh'
VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST_INIT=$VM_DIR/guest-init.sh
CACHE=${TERN_VM_CACHE:-/var/cache/tern-vm}
MEM=${TERN_VM_MEM:-2048}
SMP=${TERN_VM_SMP:-2}
NUMA=${TERN_VM_NUMA:-1}
SPARE_NIC=${TERN_VM_SPARE_NIC:-}
timeout=600

init_mode=plain
cgroups=v2
usage() {
	echo "usage: $prog [--timeout SECS] [--systemd [--hybrid]] -- COMMAND [ARG...]" >&2
	exit 125
}

die() {
	echo "$prog: $*" >&2
	exit 125
}

while [ $# -gt 0 ]; do
	case "$1" in
	--timeout)
		[ $# -ge 2 ] || usage
		timeout=$2
		shift 2
		;;
	--timeout=*)
		timeout=${1#--timeout=}
		shift
		;;
	--systemd)
		init_mode=systemd
		shift
		;;
	--hybrid)
		cgroups=hybrid
		shift
		;;
	--)
		shift
		break
		;;
	-h | --help) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || usage
[ "$cgroups" = v2 ] || [ "$init_mode" = systemd ] ||
	die "--hybrid needs --systemd (systemd mounts the v1 hierarchies)"
case "$timeout" in
'' | *[!0-9]*) die "--timeout wants a number of seconds, not '$timeout'" ;;
esac
case "$NUMA" in
'' | *[!0-9]* | 0) die "TERN_VM_NUMA wants a number of nodes (1 or more), not '$NUMA'" ;;
esac
[ $((MEM % NUMA)) -eq 0 ] || die "TERN_VM_MEM ($MEM MiB) does not split evenly into $NUMA NUMA nodes"
[ "$(id -u)" -eq 0 ] || die "run as root: the guest shares this machine's root filesystem"
# The kernel command line splits on spaces and has no quoting we can rely on.
case "$GUEST_INIT" in
*[[:space:]]*) die "the checkout's path has white space in it: $GUEST_INIT" ;;
esac

case "$PWD/" in
*$'\n'*) die "the working directory's name has a newline in it" ;;
/run/* | /proc/* | /sys/* | /dev/*)
	die "the guest has its own $PWD; run from a directory of the host's root filesystem" ;;
esac

t_start=$(date +%s)

# --- what we need on the host ---

# guest_kernel: the newest Debian kernel in /boot whose modules are
# installed (the guest loads overlay, veth, ... from /lib/modules over 9p).
guest_kernel() {
	local k best=
	if [ -n "${TERN_VM_KERNEL:-}" ]; then
		echo "$TERN_VM_KERNEL"
		return
	fi
	for k in /boot/vmlinuz-*; do
		[ -e "$k" ] || continue
		k=${k#/boot/vmlinuz-}
		[ -e "/lib/modules/$k/modules.dep" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$k" | sort -V | tail -n1)
	done
	echo "$best"
}

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mkinitramfs >/dev/null || need+=(initramfs-tools)
command -v lz4 >/dev/null || need+=(lz4)
[ -n "$(guest_kernel)" ] || need+=(linux-image-amd64)
if [ ${#need[@]} -gt 0 ]; then
	echo "$prog: installing ${need[*]}" >&2
	# INITRD=No: the kernel package would otherwise build a 31 MB initrd
	# for /boot that nothing here boots; we build our own, smaller one.
	{ apt-get update -q &&
		INITRD=No apt-get install -y -q --no-install-recommends \
			-o DPkg::Lock::Timeout=600 "${need[@]}"; } </dev/null >&2 ||
		die "apt-get install ${need[*]} failed"
fi
kver=$(guest_kernel)
[ -n "$kver" ] || die "no kernel in /boot with modules in /lib/modules (is linux-image-amd64 installed?)"
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || die "$kernel: not readable"

# --- the initrd, built once per kernel and configuration ---

# The key covers everything that goes into the initrd that we control or
# that changes with the system: our config, the kernel, initramfs-tools.
key=$({
	echo "$kver"
	cat "$VM_DIR"/initramfs/initramfs.conf "$VM_DIR"/initramfs/modules
	dpkg-query -W -f='${Version}\n' initramfs-tools 2>/dev/null
} | sha256sum | cut -c1-16)
initrd=$CACHE/initrd-$kver-$key.img
mkdir -p "$CACHE" || die "mkdir $CACHE failed"
(
	# Parallel runs build it once; the others wait for it.
	flock 9 || exit 1
	[ -s "$initrd" ] && exit 0
	echo "$prog: building $initrd" >&2
	conf=$(mktemp -d "$CACHE/conf.XXXXXX") || exit 1
	trap 'rm -rf "$conf" "$initrd.new"' EXIT
	# mkinitramfs -d wants a whole configuration directory; git does not
	# keep the empty ones, so assemble it here.
	mkdir -p "$conf"/conf.d "$conf"/scripts "$conf"/hooks &&
		cp "$VM_DIR"/initramfs/initramfs.conf "$VM_DIR"/initramfs/modules "$conf"/ &&
		mkinitramfs -d "$conf" -o "$initrd.new" "$kver" >&2 &&
		mv "$initrd.new" "$initrd"
) 9>"$CACHE/lock" || die "building the initrd for $kver failed"

# --- the run ---

run=$(mktemp -d /tmp/tern-vm.XXXXXX) || die "mktemp failed"
io=$run/io
mkdir "$io" || die "mkdir $io failed"
qpid='' tails=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	# qpid is timeout(1), which passes TERM on to qemu.
	[ -n "$qpid" ] && kill -TERM "$qpid" 2>/dev/null
	for p in "${tails[@]}"; do kill "$p" 2>/dev/null; done
	if [ "${TERN_VM_KEEP:-0}" = 1 ]; then
		echo "$prog: kept $run" >&2
	else
		rm -rf "$run"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The job: the caller's exported environment, working directory and argv,
# quoted so that the guest's bash reads back exactly the same words.
{
	for v in $(compgen -e); do
		case "$v" in
		PWD | OLDPWD | SHLVL | _) continue ;;
		# An outer bats run (this script called from a .bats test) exports
		# its own bookkeeping (BATS_RUN_TMPDIR, BATS_TEST_NAME, ...), which
		# would confuse a bats started in the guest. Settings pass.
		BATS_TEST_TIMEOUT | BATS_LIB_PATH | BATS_NO_PARALLELIZE_*) ;;
		BATS_*) continue ;;
		esac
		printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf 'ARGS=('
	printf '%q ' "$@"
	printf ')\n'
} >"$io/job" || die "writing the job file"
printf '%s\n' "$PWD" >"$io/cwd" || die "writing the cwd file"
: >"$io/stdout"
: >"$io/stderr"

# cgroup_no_v1=all: a pure v2 host, nothing falls back to v1 (hybrid: systemd's
# legacy switch, which gives v1 controllers plus the empty unified hierarchy).
# cache=loose: the root is read-only and does not change under the guest in
# a way the tests care about, so let the guest cache it (much faster).
# fsck.mode=skip: there is nothing to check on 9p.
# panic=-1 with -no-reboot: a guest init that dies ends qemu.
# shellcheck disable=SC2054 # the commas belong to rootflags
# no_timer_check: on a loaded host the emulated CPU can be too slow for the
# kernel's early IO-APIC timer check, which then panics ("IO-APIC + timer
# doesn't work!"); the check is pointless in a VM.
append=(console=ttyS0 quiet loglevel=4 panic=-1 mitigations=off no_timer_check
	root=ternroot rootfstype=9p ro fsck.mode=skip
	rootflags=trans=virtio,version=9p2000.L,cache=loose,msize=262144
	"init=$GUEST_INIT" "tern.init=$init_mode")
if [ "$cgroups" = v2 ]; then
	append+=(cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1)
else
	append+=(systemd.unified_cgroup_hierarchy=0)
fi

# NUMA nodes: each its own RAM backend (qemu then wants every node to have
# one, and their sizes to add up to -m).
numa=()
if [ "$NUMA" -gt 1 ]; then
	for ((n = 0; n < NUMA; n++)); do
		node="node,nodeid=$n,memdev=ram$n"
		for ((c = n; c < SMP; c += NUMA)); do node+=",cpus=$c"; done
		numa+=(-object "memory-backend-ram,id=ram$n,size=$((MEM / NUMA))M" -numa "$node")
	done
fi

nics=(-nic none)
if [ -n "$SPARE_NIC" ]; then
	nics=(-netdev hubport,id=spare,hubid=0 -device "virtio-net-pci,netdev=spare,mac=$SPARE_NIC")
fi

# multidevs=remap: the host's root spans several file systems; without it
# inode numbers from different devices could collide in the guest.
# timeout(1) rather than a sleeping watchdog: a stray sleep would keep the
# caller's pipes open (`run-in-guest.sh ... | tee`) long after we are done.
# qemu ends on TERM; KILL follows if it does not within 10 s.
# boot_guest: one run of qemu; sets qemu_rc.
boot_guest() {
	timeout -k 10 "$timeout" qemu-system-x86_64 \
		-nodefaults -no-user-config -display none -no-reboot \
		-accel tcg,thread=multi -cpu max -smp "$SMP" -m "$MEM" \
		"${numa[@]}" \
		-kernel "$kernel" -initrd "$initrd" -append "${append[*]}" \
		-serial "file:$run/console.log" \
		-fsdev local,id=root,path=/,security_model=passthrough,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=root,mount_tag=ternroot \
		-fsdev local,id=io,path="$io",security_model=passthrough \
		-device virtio-9p-pci,fsdev=io,mount_tag=ternio \
		"${nics[@]}" \
		</dev/null >"$run/qemu.log" 2>&1 &
	qpid=$!
	t_qemu=$(date +%s)

	# Stream the command's output while the guest runs; tail stops on its own
	# once qemu is gone and it has read the rest.
	tail -n +1 -s 0.2 -f --pid="$qpid" "$io/stdout" </dev/null &
	tails+=($!)
	tail -n +1 -s 0.2 -f --pid="$qpid" "$io/stderr" </dev/null >&2 &
	tails+=($!)

	wait "$qpid"
	qemu_rc=$?
	qpid=
	for p in "${tails[@]}"; do wait "$p"; done
	tails=()
}

# A guest that died before it started the command (a kernel that did not
# come up on a starved emulated CPU) gets one more boot; a command that
# started is never run twice.
for attempt in 1 2; do
	boot_guest
	[ -e "$io/started" ] || [ -s "$io/status" ] && break
	[ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ] && break
	[ "$attempt" -eq 2 ] && break
	echo "$prog: the guest did not come up (console below); booting it once more" >&2
	tail -n 20 "$run/console.log" >&2
done
t_end=$(date +%s)

show_console() {
	echo "$prog: --- qemu output ---" >&2
	cat "$run/qemu.log" >&2
	echo "$prog: --- guest console (last 60 lines) ---" >&2
	tail -n 60 "$run/console.log" >&2
	echo "$prog: --- end ---" >&2
}

# timeout(1) says 124 when it stopped qemu with TERM, 137 when it needed
# KILL; qemu itself exits 0 (power off, reboot) or 1 (bad options).
if [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
	show_console
	echo "$prog: TIMEOUT: the guest did not finish within $timeout s; qemu killed" >&2
	exit 124
fi
if ! [ -s "$io/status" ]; then
	show_console
	die "the guest ended (qemu status $qemu_rc) without running the command to completion"
fi
rc=$(cat "$io/status")
case "$rc" in
'' | *[!0-9]*) die "bad status from the guest: '$rc'" ;;
esac

# Times from the host's clock: qemu writes the guest's files on the host.
t_cmd=$(stat -c %Y "$io/started" 2>/dev/null || echo "$t_end")
t_done=$(stat -c %Y "$io/status")
echo "$prog: kernel $kver, $NUMA NUMA node(s); setup $((t_qemu - t_start)) s, boot $((t_cmd - t_qemu)) s," \
	"command $((t_done - t_cmd)) s, total $((t_end - t_start)) s; status $rc" >&2
exit "$rc"
