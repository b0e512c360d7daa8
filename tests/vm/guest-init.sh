#!/bin/bash
# PID 1 of the cgroup v2 test guest started by tests/vm/run-in-guest.sh.
#
# The kernel's initramfs has mounted the host's root filesystem (virtio-9p,
# read-only) as / and exec'd this script from it. We:
#   1. lay a tmpfs-backed overlay over that read-only root and pivot into it,
#      so that the tests can write anywhere (the repo's tests/.work cache,
#      /etc, /root, ...) while the host's files stay untouched;
#   2. give the new root fresh /proc, /sys, /dev, empty tmpfs on /run, /tmp,
#      /var/tmp and /var/lib, and a pure cgroup v2 hierarchy at /sys/fs/cgroup with every controller
#      enabled for child cgroups;
#   3. run the job the host left on the "ternio" 9p share (its environment,
#      working directory and argv), with stdout and stderr written to files
#      on that share, which the host streams to its own stdout and stderr;
#   4. write the job's exit status there and power off.
# With tern.init=systemd on the kernel command line, steps 2 to 4 are
# systemd's: after step 1 we exec systemd, which mounts the cgroup
# hierarchies itself and starts only tern-job.service, a unit that runs this
# script again as `guest-init.sh --job` for steps 3 and 4.
#
# Our own messages go to /dev/console (the serial port, which the host keeps
# in a log and shows only when something went wrong).

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "tern-guest: $*" >/dev/console; }

# power_off: end the guest. There is no systemd here (poweroff is a link to
# systemctl on Debian), so ask the kernel directly. If even that fails, PID 1
# exits: the kernel panics, panic=-1 turns that into a reboot and qemu's
# -no-reboot into an exit. Either way qemu ends instead of hanging.
power_off() {
	sync
	echo o >/proc/sysrq-trigger 2>/dev/null
	busybox poweroff -f 2>/dev/null
	sleep 10
	exit 1
}

# fail: the guest could not be set up. The host sees no status file and
# reports that, with the console log.
fail() {
	say "FAILED: $*"
	power_off
}

mount_once() { # TYPE SOURCE TARGET [OPTIONS]
	mountpoint -q "$3" && return 0
	mkdir -p "$3" 2>/dev/null
	mount -t "$1" ${4:+-o "$4"} "$2" "$3"
}

run_job() {
	# --- 3. the job ---
	io=/run/tern-io
	[ -r $io/job ] || fail "no job file on the ternio share"
	# The job file exports the caller's environment and sets ARGS (written with
	# printf %q on the host); ./cwd holds the caller's working directory.
	ARGS=()
	# shellcheck disable=SC1090,SC1091
	. $io/job || fail "reading the job file"
	[ ${#ARGS[@]} -gt 0 ] || fail "empty command"
	read -r cwd <$io/cwd || fail "reading the working directory"
	cd -- "$cwd" || fail "cd to $cwd"
	# A caller's TMPDIR may be a per-run directory under the host's /run.
	[ -z "${TMPDIR:-}" ] || mkdir -p "$TMPDIR"
	date +%s >$io/started
	say "running: ${ARGS[*]}"
	("${ARGS[@]}") </dev/null >$io/stdout 2>$io/stderr
	rc=$?
	say "command exited with status $rc"

	# --- 4. report and power off ---
	# Written last and renamed into place, so that the host never reads a
	# half-written status.
	echo $rc >$io/status.new && mv $io/status.new $io/status
	power_off
}

if [ "${1:-}" = --job ]; then
	# started by tern-job.service under systemd
	ip link set lo up 2>/dev/null
	hostname tern-vm 2>/dev/null
	say "cgroups: $(stat -fc %T /sys/fs/cgroup), running in $(cat /proc/self/cgroup | tr '\n' ' ')"
	run_job
	exit 0
fi

# --- 1. a writable root: overlay of a tmpfs over the read-only 9p root ---
mount_once proc proc /proc || fail "mounting /proc"
mount_once sysfs sysfs /sys || fail "mounting /sys"
mount_once devtmpfs devtmpfs /dev || fail "mounting /dev"
# The initramfs moved its /run (a tmpfs) here; make sure there is one.
mount_once tmpfs tmpfs /run mode=0755 || fail "mounting /run"

# Modules load from the host's /lib/modules/<guest kernel>, which the
# kernel package installed on the shared root.
modprobe overlay || fail "loading the overlay module"

stage=/run/tern-vm
mkdir -p $stage/rw $stage/io $stage/root || fail "creating $stage"
# Everything the guest writes lives in RAM; the guest has -m 2048.
mount -t tmpfs -o mode=0755,size=75% tern-rw $stage/rw || fail "mounting the overlay's tmpfs"
mkdir -p $stage/rw/upper $stage/rw/work
# The share for the job and its results. No cache option: 9p then writes
# straight through to the host, so the host sees output as it is written.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ternio $stage/io ||
	fail "mounting the ternio share"
# The 9p root is lowerdir; the overlay sees only the 9p tree (which includes
# the host's mounts below /, as qemu reads them), not the guest's own mounts.
mount -t overlay -o lowerdir=/,upperdir=$stage/rw/upper,workdir=$stage/rw/work tern-root $stage/root ||
	fail "mounting the overlay root"

new=$stage/root
mount -t proc proc $new/proc || fail "mounting proc in the new root"
mount -t sysfs sysfs $new/sys || fail "mounting sysfs in the new root"
mount -t devtmpfs devtmpfs $new/dev || fail "mounting devtmpfs in the new root"
mkdir -p $new/dev/pts $new/dev/shm $new/dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts $new/dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev shm $new/dev/shm
mount -t mqueue mqueue $new/dev/mqueue
# Fresh, empty tmpfs on /run, /tmp, /var/tmp and /var/lib. The host's hold
# the host's own state (container state, sockets, locks, storage) that must
# not leak into the guest's tests; and scratch directories must not be on
# the overlay root, since an overlay mount (which tests make) cannot use
# another overlay as its upper layer.
#
# A checkout or working directory under one of them (a CI clone in /tmp)
# must stay visible, though: keep its overlay view aside and put it back
# on top of the new tmpfs.
read -r cwd <$stage/io/cwd || fail "reading the working directory"
repo=$(cd "$(dirname "$0")/../.." && pwd)
keep=()
for p in "$repo" "$cwd"; do
	case "$p/" in
	/tmp/* | /var/tmp/* | /var/lib/*) ;;
	*) continue ;;
	esac
	n=$stage/keep/${#keep[@]}
	{ mkdir -p "$n" && mount --bind "$new$p" "$n"; } || fail "keeping $p visible"
	keep+=("$p")
done
mount -t tmpfs -o mode=0755 tmpfs $new/run || fail "mounting /run"
mount -t tmpfs -o mode=1777 tmpfs $new/tmp || fail "mounting /tmp"
mount -t tmpfs -o mode=1777 tmpfs $new/var/tmp || fail "mounting /var/tmp"
mount -t tmpfs -o mode=0755 tmpfs $new/var/lib || fail "mounting /var/lib"
for i in "${!keep[@]}"; do
	{ mkdir -p "$new${keep[$i]}" && mount --move "$stage/keep/$i" "$new${keep[$i]}"; } ||
		fail "putting ${keep[$i]} back"
done
mkdir -p $new/run/tern-io $new/run/lock
mount --move $stage/io $new/run/tern-io || fail "moving the ternio share"

mkdir -p $new/.oldroot
cd $new || fail "entering the new root"
pivot_root . .oldroot || fail "pivot_root into the overlay"
cd / || fail "cd /"
# The old root (9p) stays referenced by the overlay as its lower layer; the
# mounts left on it (/proc, /run, ...) are not needed any more.
umount -l /.oldroot || fail "detaching the old root"
rmdir /.oldroot
# Shared propagation, as systemd sets it up on the hosts that run cgroup v2,
# so the runtime's mount setup is exercised the way it will be used there.
mount --make-rshared / || fail "making / shared"

if grep -qw tern.init=systemd /proc/cmdline; then
	# The job runs as a service with a delegated cgroup; nothing else
	# starts (DefaultDependencies=no, and --unit names only this unit).
	cat >/etc/systemd/system/tern-job.service <<EOF || fail "writing tern-job.service"
[Unit]
Description=tern test job
DefaultDependencies=no
[Service]
Type=oneshot
Delegate=yes
ExecStart=/bin/bash $repo/tests/vm/guest-init.sh --job
EOF
	say "starting systemd"
	exec /lib/systemd/systemd --system --unit=tern-job.service
fi

# --- 2. cgroup v2 only ---
# cgroup_no_v1=all on the kernel command line keeps v1 controllers out, so
# anything that silently falls back to v1 fails here instead of passing.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || fail "mounting cgroup2"
read -ra controllers </sys/fs/cgroup/cgroup.controllers
for c in "${controllers[@]}"; do
	echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control ||
		say "could not enable the $c controller for child cgroups"
done
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ip link set lo up 2>/dev/null
hostname tern-vm 2>/dev/null
say "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

run_job
