# Shared helpers for tern's integration tests (bats).
#
# The runtime under test is $TERN_BIN (default: the repo's ./tern). The same
# suite runs against runc (`TERN_BIN=/usr/sbin/runc bats tests/integration`)
# to check that the tests themselves describe runc-compatible behaviour;
# assertions on tern's own wording are guarded with is_tern.
#
# Every test gets its own bundle ($BUNDLE), state root ($ROOT) and container
# id ($ID), all under $BATS_TEST_TMPDIR, and teardown removes whatever the
# test left behind, also when it failed.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
TERN_BIN=${TERN_BIN:-$REPO/tern}
RUNC_BIN=${RUNC_BIN:-/usr/sbin/runc}
WORK=$REPO/tests/.work
BASE_ROOTFS=$WORK/rootfs

# is_tern: true when the binary under test is tern (not runc or crun), for
# assertions on tern's own messages.
is_tern() {
	case "$(basename "$TERN_BIN")" in
	runc* | crun*) return 1 ;;
	esac
	return 0
}

is_runc() { ! is_tern; }

# build_base_rootfs: build once per checkout (cached under tests/.work) a tiny
# rootfs from Debian's busybox-static plus our static helpers. A lock keeps
# parallel bats jobs from building it twice; a stamp records the inputs so a
# changed helper source rebuilds it.
build_base_rootfs() {
	local stamp_want f
	stamp_want=$(cat /bin/busybox "$REPO"/tests/helpers/*.c | md5sum | cut -d' ' -f1)
	mkdir -p "$WORK"
	(
		flock 9
		if [ -f "$WORK/stamp" ] && [ "$(cat "$WORK/stamp")" = "$stamp_want" ]; then
			exit 0
		fi
		rm -rf "$BASE_ROOTFS" "$WORK/rootfs.new"
		local r=$WORK/rootfs.new
		mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,home,var,run,image-dir}
		cp /bin/busybox "$r/bin/busybox"
		for f in $(/bin/busybox --list); do
			[ "$f" = busybox ] || ln -sf busybox "$r/bin/$f"
		done
		for f in "$REPO"/tests/helpers/*.c; do
			gcc -static -O2 -Wall -Werror -o "$r/bin/$(basename "$f" .c)" "$f" || exit 1
		done
		printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$r/etc/passwd"
		printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
		echo "from the image" >"$r/image-dir/file"
		chmod 1777 "$r/tmp"
		mv "$r" "$BASE_ROOTFS"
		echo "$stamp_want" >"$WORK/stamp"
	) 9>"$WORK/lock"
}

# make_traversable DIR: a+x on DIR and every parent, so that a container
# with a user namespace (root mapped to an unprivileged host uid) can reach
# its rootfs through bats's private (mode 0700) temporary directories.
make_traversable() {
	local d=$1
	while [ "$d" != / ] && [ -n "$d" ]; do
		chmod a+x "$d"
		d=$(dirname "$d")
	done
}

# userns_rootfs: the bundle's container gets a user namespace of its own
# whose root is host uid and gid 100000 (65536 ids, the shape of
# Kubernetes' hostUsers: false and podman's --userns=auto), which owns the
# rootfs copy.
userns_rootfs() {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
}

# setup_bundle: a fresh bundle for this test: rootfs copy, config.json from
# the runtime's own `spec`, adjusted so that the defaults suit tests (no
# terminal, writable root, args run `true`). Sets BUNDLE ROOT ID MARK.
setup_bundle() {
	build_base_rootfs || return 1
	BUNDLE=$BATS_TEST_TMPDIR/bundle
	ROOT=$BATS_TEST_TMPDIR/state
	# Short and unique across parallel jobs; the id also names the cgroup, so
	# teardown and the leak checks can look for it.
	ID=tt${BATS_SUITE_TEST_NUMBER:-0}-$$-$RANDOM
	# A number that appears on the command line of the container's process,
	# so pgrep can find leftovers: `sleep $MARK` sleeps long enough anyway.
	MARK=$((100000 + RANDOM))
	mkdir -p "$BUNDLE" "$ROOT"
	cp -a "$BASE_ROOTFS" "$BUNDLE/rootfs"
	(cd "$BUNDLE" && "$TERN_BIN" spec) || return 1
	update_config '.process.terminal = false
		| .root.readonly = false
		| .process.args = ["/bin/true"]'
	export BUNDLE ROOT ID MARK
}

# update_config JQ-FILTER [BUNDLE]: edit config.json in place with jq.
update_config() {
	local cfg=${2:-$BUNDLE}/config.json
	jq "$1" "$cfg" >"$cfg.new" && mv "$cfg.new" "$cfg"
}

# set_args ARG...: process.args = the arguments, as JSON strings.
set_args() {
	update_config ".process.args = $(printf '%s\n' "$@" | jq -R . | jq -s -c .)"
}

# set_cmd 'SHELL COMMAND': process.args = ["/bin/sh", "-c", COMMAND].
set_cmd() {
	set_args /bin/sh -c "$1"
}

# add_namespace TYPE [PATH]
add_namespace() {
	if [ -n "${2:-}" ]; then
		update_config "(.linux.namespaces |= (map(select(.type != \"$1\")) + [{\"type\": \"$1\", \"path\": \"$2\"}]))"
	else
		update_config "(.linux.namespaces |= (map(select(.type != \"$1\")) + [{\"type\": \"$1\"}]))"
	fi
}

remove_namespace() {
	update_config "(.linux.namespaces |= map(select(.type != \"$1\")))"
}

# in_file CMD...: run CMD with stdin from /dev/null and stdout+stderr into a
# fresh file, then print that file. A detached or created container inherits
# the runtime's stdio; if that were bats's `run` pipe, bats would wait for
# the container to exit. A regular file has no such reader to block.
in_file() {
	local f rc=0
	f=$(mktemp "$BATS_TEST_TMPDIR/out.XXXXXX")
	# fd 3 is bats's TAP stream: a runtime that leaked it into a long-lived
	# container would hang the suite, so close 3-9 unless the test passes
	# fds on purpose (KEEP_FDS=1, for --preserve-fds and the leak checks).
	if [ -n "${KEEP_FDS:-}" ]; then
		"$@" </dev/null >"$f" 2>&1 || rc=$?
	else
		"$@" </dev/null >"$f" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- || rc=$?
	fi
	cat "$f"
	# A transcript of every runtime call, shown by teardown when the test
	# fails (bats itself only shows the failing line, not `run`'s output).
	{
		echo "\$ ${*}"
		cat "$f"
		echo "[exit $rc]"
	} >>"$BATS_TEST_TMPDIR/calls.log"
	return $rc
}

# tern ARG...: the runtime under test with this test's state root. Use as
# `run tern ...` to check status and output.
tern() {
	in_file "$TERN_BIN" --root "$ROOT" "$@"
}

# build_fault_tern: a tern with the fault points, built from a copy of this
# checkout (committed or not) so that the checkout's own build stays as it
# is; rebuilt only when the sources changed. Prints the binary's path.
build_fault_tern() {
	local dir=$WORK/faults stamp
	stamp=$(cd "$REPO" && git ls-files -z src libocispec configure.ac Makefile.am | xargs -0 cat 2>/dev/null | md5sum | cut -d' ' -f1)
	if [ ! -x "$dir/src/tern" ] || [ "$(cat "$dir/stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf "$dir"
		mkdir -p "$dir/src"
		"$REPO/scripts/copy-checkout.sh" "$dir/src" || return 1
		(cd "$dir/src" && ./autogen.sh && ./configure --enable-fault-injection &&
			make -j"$(nproc)" tern) </dev/null >"$dir/build.log" 2>&1 || {
			tail -n 30 "$dir/build.log" >&2
			return 1
		}
		echo "$stamp" >"$dir/stamp"
	fi
	echo "$dir/src/tern"
}

# runc_ ARG...: the reference runtime, with its own state root.
runc_() {
	in_file "$RUNC_BIN" --root "$ROOT-runc" "$@"
}

# state_field ID FIELD: one field of `state`.
state_field() {
	tern state "$1" | jq -r ".$2"
}

# wait_status ID STATUS [TIMEOUT_SECONDS]: poll until state reports STATUS.
# The default is wide: a TCG guest or a loaded CI machine is slow, and the
# wait ends as soon as the status is there.
wait_status() {
	local i n=$((${3:-30} * 20)) s
	for ((i = 0; i < n; i++)); do
		# (not JSON while the container does not exist yet: keep polling)
		s=$(tern state "$1" 2>/dev/null | jq -r .status 2>/dev/null || true)
		[ "$s" = "$2" ] && return 0
		sleep 0.05
	done
	echo "container $1: status '$s', wanted '$2'" >&2
	return 1
}

# require_soft_dirty: skip, loudly, where the kernel cannot track dirty
# pages for criu (the files that need it run in the qemu guest).
require_soft_dirty() {
	local criu=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	[ -x "$criu" ] || criu=criu
	if ! "$criu" check --feature mem_dirty_track >/dev/null 2>&1; then
		skip "!!! THIS KERNEL HAS NO SOFT-DIRTY TRACKING: run this file inside tests/vm/run-in-guest.sh !!!"
	fi
}

# wait_for_file PATH [TIMEOUT_SECONDS] (default 30, as wait_status)
wait_for_file() {
	local i n=$((${2:-30} * 20))
	for ((i = 0; i < n; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	echo "timed out waiting for $1" >&2
	return 1
}

# pid_gone PID: the process has ended: no such process, or a zombie that
# nobody has reaped yet (kill -0 still succeeds on one).
pid_gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	# the state follows the command name, which may hold spaces: after ") "
	[ "$(echo "${stat##*) }" | cut -d' ' -f1)" = Z ]
}

# wait_until TIMEOUT_SECONDS CMD...: run CMD (output discarded) every 0.05 s
# until it succeeds; fail after TIMEOUT_SECONDS, saying what was awaited.
# For conditions, not for time: a test never sleeps for a guessed while.
wait_until() {
	local i n=$(($1 * 20))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

# mark_procs_at_least N: at least N processes run `sleep $MARK` (this
# test's own sleepers); no_mark_procs: none does. For wait_until.
mark_procs_at_least() {
	[ "$(pgrep -f "sleep $MARK" | wc -l)" -ge "$1" ]
}

no_mark_procs() {
	! pgrep -f "sleep $MARK" >/dev/null
}

# count_above FILE N: FILE holds a whole number greater than N. A counter
# that a container rewrites must be written to a temporary file and
# renamed (see counter_cmd), so that FILE is never seen half written; the
# number check keeps a missing file from reading as a number.
count_above() {
	local v
	v=$(cat "$1" 2>/dev/null) || return 1
	[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt "$2" ]
}

# wait_count_above FILE N [TIMEOUT_SECONDS]: wait until FILE counts past N.
wait_count_above() {
	wait_until "${3:-30}" count_above "$1" "$2"
}

# cgroup_has_procs DIR N: the cgroup directory DIR holds at least N
# processes (for wait_until).
cgroup_has_procs() {
	[ "$(wc -l <"$1/cgroup.procs")" -ge "$2" ]
}

# count_changed FILE N: FILE holds a whole number other than N.
count_changed() {
	local v
	v=$(cat "$1" 2>/dev/null) || return 1
	[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" != "$2" ]
}

# went_on FILE BEFORE: wait until the restored counter in FILE moves on
# from BEFORE, and check that it went on from there: the same process,
# not one started anew (that one would write 1 first).
went_on() {
	wait_until 30 count_changed "$1" "$2" || return 1
	local v
	v=$(cat "$1")
	echo "before $2, then $v"
	[ "$v" -gt "$2" ]
}

# port_listening PORT: something listens on TCP PORT in this network
# namespace (for wait_until).
port_listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# has_lines_matching FILE PATTERN N: at least N lines of FILE (appended to
# by a running process) match the fixed string PATTERN (for wait_until).
has_lines_matching() {
	[ "$(grep -cF -- "$2" "$1" 2>/dev/null)" -ge "$3" ]
}

# counter_cmd FILE [PERIOD]: a shell loop (for set_cmd) that counts in FILE
# every PERIOD seconds (default 0.1), writing each value to FILE.tmp first
# and renaming it, so that a reader never sees the file empty or half
# written.
counter_cmd() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i > $1.tmp; mv $1.tmp $1; sleep ${2:-0.1}; done"
}

# run_container: `run` the bundle in the foreground and capture output and
# status in bats's $output / $status.
run_container() {
	run tern run -b "$BUNDLE" "$ID"
}

# check_nothing_left ID: no state, no mount mentioning the bundle or the
# state dir, no process carrying $MARK, no runtime process of the id, no
# cgroup directory named after the id.
check_nothing_left() {
	local id=$1 leak=0
	if [ -e "$ROOT/$id" ]; then
		echo "leftover state dir: $ROOT/$id" >&2
		leak=1
	fi
	if grep -F -e "$BUNDLE" -e "$ROOT/$id/" /proc/self/mountinfo >&2; then
		echo "leftover mounts of $BUNDLE or of the state dir (above)" >&2
		leak=1
	fi
	if pgrep -f "sleep $MARK" >&2; then
		echo "leftover processes with marker $MARK (above)" >&2
		leak=1
	fi
	# a runtime process of this id still alive: a hung create or exec, or
	# an init that never reached its execve (no marker on its command line)
	if pgrep -f -- "--root $ROOT .* $id( |\$)" >&2; then
		echo "leftover runtime processes of $id (above)" >&2
		leak=1
	fi
	local cg
	# find fails when a cgroup it walks goes away meanwhile (other tests
	# remove theirs all the time): what it did print is still the answer,
	# and its status must not end the test (errexit) with no word said
	cg=$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "*$id*" 2>/dev/null || true)
	if [ -n "$cg" ]; then
		echo "leftover cgroups: $cg" >&2
		leak=1
	fi
	return $leak
}

# start_sleeper: $ID runs detached from $BUNDLE, its process a sleep.
start_sleeper() {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "$output"
		return 1
	}
}

# output_mentions KEYWORD...: $output names every KEYWORD.
output_mentions() {
	local k
	for k in "$@"; do
		[[ "$output" == *"$k"* ]] || {
			echo "output does not mention '$k': $output" >&2
			return 1
		}
	done
}

# check_fails_cleanly KEYWORD...: $status non-zero, each KEYWORD in $output,
# and nothing left behind for $ID.
check_fails_cleanly() {
	[ "$status" -ne 0 ] || {
		echo "expected failure, got status 0: $output" >&2
		return 1
	}
	output_mentions "$@" || return 1
	check_nothing_left "$ID"
}

# start_recvtty SOCKET OUTFILE [INPUT]: run recvtty in the background.
start_recvtty() {
	"$BASE_ROOTFS/bin/recvtty" "$@" 3>&- &
	RECVTTY_PID=$!
	wait_for_file "$1"
}

# kill_marker: kill processes carrying $MARK (teardown's last resort).
kill_marker() {
	[ -n "${MARK:-}" ] && pkill -9 -f "sleep $MARK" 2>/dev/null
	return 0
}

teardown_bundle() {
	local id pid
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -s "$BATS_TEST_TMPDIR/calls.log" ]; then
		echo "--- last runtime calls of this test:"
		tail -n 30 "$BATS_TEST_TMPDIR/calls.log" | cut -c1-400
	fi
	# Every runtime call here is bounded: a runtime that hangs (holding the
	# state lock, say) must not hang the whole suite.
	if [ -n "${ROOT:-}" ] && [ -d "$ROOT" ]; then
		for id in $(timeout -s KILL 10 "$TERN_BIN" --root "$ROOT" list -q 2>/dev/null); do
			timeout -s KILL 10 "$TERN_BIN" --root "$ROOT" delete --force "$id" >/dev/null 2>&1
		done
	fi
	if [ -d "${ROOT:-/nonexistent}-runc" ]; then
		for id in $(timeout -s KILL 10 "$RUNC_BIN" --root "$ROOT-runc" list -q 2>/dev/null); do
			timeout -s KILL 10 "$RUNC_BIN" --root "$ROOT-runc" delete --force "$id" >/dev/null 2>&1
		done
	fi
	# Runtime processes of this test still alive (a hung run or exec): their
	# command line holds this test's own state root, nobody else's does.
	[ -n "${ROOT:-}" ] && pkill -9 -f -- "--root $ROOT" 2>/dev/null
	kill_marker
	[ -n "${RECVTTY_PID:-}" ] && kill "$RECVTTY_PID" 2>/dev/null
	for pid in ${EXTRA_PIDS:-}; do
		kill -9 "$pid" 2>/dev/null
	done
	[ -n "${NETNS:-}" ] && ip netns del "$NETNS" 2>/dev/null
	# cgroups named after this test's ids (every id starts with $ID): kill
	# what is left in them and remove them, deepest first.
	if [ -n "${ID:-}" ]; then
		local cg
		find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$ID*" 2>/dev/null | sort -r |
			while read -r cg; do
				xargs -r kill -9 <"$cg/cgroup.procs" 2>/dev/null
				rmdir "$cg" 2>/dev/null || { sleep 0.1; rmdir "$cg" 2>/dev/null; }
			done
	fi
	# Unmount anything left under the test dir, deepest first.
	local mp
	awk '{print $5}' /proc/self/mountinfo | grep -F "$BATS_TEST_TMPDIR" | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null; done
	# bats removes the test directories only when the whole run ends: in a
	# qemu guest, where /tmp is a tmpfs in the guest's RAM, the bundles and
	# images of a long file fill it. A passed test's directory goes now (a
	# failed one stays, to look at); never across a mount left behind.
	if [ -n "${BATS_TEST_COMPLETED:-}" ] && [ -d "${BATS_TEST_TMPDIR:-}" ]; then
		find "$BATS_TEST_TMPDIR" -mindepth 1 -maxdepth 1 -exec rm -rf --one-file-system {} + 2>/dev/null
	fi
	return 0
}

setup() {
	setup_bundle
}

teardown() {
	teardown_bundle
}

# host_cgroup_dir PID CONTROLLER: the directory of PID's cgroup for a
# controller, on v1 (its own hierarchy) or v2 (the unified one).
host_cgroup_dir() {
	local pid=$1 ctrl=$2 line
	line=$(grep -E "^[0-9]+:([^:]*,)?$ctrl(,[^:]*)?:" /proc/"$pid"/cgroup || true)
	if [ -n "$line" ]; then
		local mnt
		mnt=$(awk -v c="$ctrl" '$9 == "cgroup" && $NF ~ ("(^|,)" c "(,|$)") { print $5; exit }' /proc/self/mountinfo)
		echo "$mnt${line##*:}"
	else
		echo "/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)"
	fi
}
