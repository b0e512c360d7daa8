#!/bin/bash
# tern's commands under valgrind's memcheck: every lifecycle command (spec,
# create, start, state, list, ps, pause, resume, update, events --stats,
# kill, delete, run), exec, checkpoint and restore, on a -O1 -g build of this
# checkout, plus a few commands that fail on purpose (their error paths).
# Each command's memcheck logs (one per process) are in
# tests/.work/valgrind/logs/NN-NAME/. A command has errors when any of its
# processes reports an invalid read or write, a use of an uninitialised
# value, a bad free, a "definitely" or "indirectly lost" block, or a file
# descriptor it opened itself (not stdio, not inherited) still open when it
# exits. "Possibly lost" blocks are counted and printed, not failed on.
# The last line is
#   valgrind: N commands, N clean, N with errors
# and the exit status is non-zero when any command has errors (or did not
# exit as expected).
#
# What runs under valgrind, and what does not:
#   - the tern CLI process of every command, from main to exit;
#   - the processes tern forks without an exec (a plain fork-like clone, with
#     or without namespace flags, which valgrind follows): the container's
#     init from the clone in spawn.c through every stage of init.c up to its
#     execve of process.args, the exec child of `tern exec` up to its execve,
#     stage 1 of the two-stage spawn (a time namespace), and the helpers
#     that ps, checkpoint and restore fork. Each gets its own log;
#   - NOT the programs those exec: the container's process, hooks, criu
#     (libcriu starts it as a service), iptables. --trace-children=no: the
#     container's program is not valgrind's to run (valgrind is not in the
#     container's root), and criu is not tern's code.
# valgrind: 3.27 or newer, from scripts/install-valgrind.sh (run from here; it
# fetches Debian sid's into /opt/tern-valgrind when the system's is older),
# or $TERN_VALGRIND. bookworm's 3.19 cannot run tern: it does not know
# openat2 (the init fails "open the rootfs: Function not implemented") nor
# the new mount API.
# Limits:
#   - The CVE-2019-5736 re-exec of create/run/exec (main.c) would leave
#     valgrind: it execs tern again from an overlay or a sealed memfd, and
#     with --trace-children=no that tern runs natively, unchecked. So tern
#     runs here from a read-only bind mount of the build, in a private mount
#     namespace of this script: tern sees that it is already protected and
#     does not re-exec. The re-exec itself is left to the sanitizer run
#     (scripts/test-sanitizers.sh) and tests/integration/security.bats.
#   - valgrind keeps RLIMIT_NOFILE to itself and refuses (EPERM) any change
#     of its hard limit: the bundles here give RLIMIT_CORE instead of spec's
#     RLIMIT_NOFILE, so that the rlimit stage still runs.
#   - A process in a new pid namespace logs as vg.1.log (valgrind's %p is
#     its pid there): the init of each command is its directory's vg.1.log.
#   - A process that execs or is killed by SIGKILL writes no summary: its
#     log stops at the exec (the init, the exec child). So the reports in
#     each log are counted, not valgrind's ERROR SUMMARY.
#   - fds: valgrind (--track-fds=yes) reports a close of an fd that is not
#     open, and lists what is open at exit. The list counts for the tern
#     CLI process only: what it inherited from this script is left out, and
#     a forked child's list (the fds its parent had opened, which its exit
#     closes) is ignored.
#   - No --error-exitcode: with --track-fds=yes valgrind counts each fd
#     open at exit as an error, so a forked child that exits holding its
#     parent's fds would exit 99 instead of its own status, and tern would
#     take that for a failure (restore's mount point helper "died"). The
#     exit status stays tern's own; the errors are read from the logs.
#   - CRIU pre-dump (--pre-dump) needs soft-dirty tracking, which this host
#     lacks: checkpoint runs without it.
#   - Syscalls valgrind does not know would fail with ENOSYS under it (tern
#     taking a fallback, or failing); any such warning is listed at the end.
# Suppressions (tests/sanitizers/valgrind.supp): two mistakes of valgrind's
# own syscall wrappers (mount_setattr, close_range), each with the reason.
#
# Not part of scripts/test.sh (CI): about three minutes (half of it the
# build). Root, Debian 12, criu installed (scripts/install-criu.sh).
set -uo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
WORK=$REPO/tests/.work/valgrind
SRC=$WORK/src
RO=$WORK/ro
LOGS=$WORK/logs
STATE=$WORK/state
CRIU=${TERN_CRIU:-/opt/tern-criu/bin/criu}

if [ "${1:-}" != --in-private-mount-ns ]; then
	[ "$(id -u)" -eq 0 ] || { echo "test-valgrind.sh: run as root" >&2; exit 1; }
	VALGRIND=${TERN_VALGRIND:-$(scripts/install-valgrind.sh | tail -1)}
	[ -x "$VALGRIND" ] || { echo "test-valgrind.sh: no valgrind (scripts/install-valgrind.sh)" >&2; exit 1; }
	export VALGRIND
	[ -x "$CRIU" ] || { echo "test-valgrind.sh: no criu at $CRIU (scripts/install-criu.sh)" >&2; exit 1; }
	rm -rf "$WORK"
	mkdir -p "$SRC"
	scripts/copy-checkout.sh "$SRC" ||
		{ echo "test-valgrind.sh: copying the source failed" >&2; exit 1; }
	echo "== building with CFLAGS='-O1 -g'"
	(cd "$SRC" && ./autogen.sh && ./configure CFLAGS='-O1 -g' && make -j"$(nproc)") \
		</dev/null >"$WORK/build.log" 2>&1 ||
		{ tail -30 "$WORK/build.log"; echo "test-valgrind.sh: build failed (see $WORK/build.log)" >&2; exit 1; }
	# the rest in a mount namespace of its own: the read-only bind mount of
	# the build (see the header) goes away with it
	exec unshare -m --propagation private "$0" --in-private-mount-ns
fi

mkdir -p "$RO" "$LOGS" "$STATE"
mount --bind "$SRC" "$RO" && mount -o remount,bind,ro "$RO" ||
	{ echo "test-valgrind.sh: read-only bind mount of $SRC failed" >&2; exit 1; }
TERN=$RO/tern
export TERN_CRIU=$CRIU

VG=("$VALGRIND" --tool=memcheck --leak-check=full
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
	--track-fds=yes --track-origins=yes --num-callers=30
	--trace-children=no --suppressions="$SRC/tests/sanitizers/valgrind.supp")

# the bundle: a busybox rootfs, config.json from tern's own spec (which
# is itself one of the commands checked)
make_bundle() {
	local b=$1 f
	mkdir -p "$b/rootfs"/{bin,proc,sys,dev,tmp,etc,root}
	cp /bin/busybox "$b/rootfs/bin/busybox"
	for f in sh sleep true cat echo ls; do ln -sf busybox "$b/rootfs/bin/$f"; done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$b/rootfs/etc/passwd"
	chmod 1777 "$b/rootfs/tmp"
}

# plain (not under valgrind): for polling and cleanup only
tern_plain() { "$TERN" --root "$STATE" "$@"; }

# A wait that timed out makes the later ones give up at once: the commands
# after it fail anyway (and say so), no need to wait 20 s for each.
GAVE_UP=""

# wait_status ID STATUS: poll `state` (20 s at most: valgrind is slow)
wait_status() {
	local i s
	[ -z "$GAVE_UP" ] || return 1
	for ((i = 0; i < 400; i++)); do
		s=$(tern_plain state "$1" 2>/dev/null | jq -r .status 2>/dev/null)
		[ "$s" = "$2" ] && return 0
		sleep 0.05
	done
	echo "test-valgrind.sh: $1 never reached $2 (last: ${s:-none})" >&2
	GAVE_UP=1
	return 1
}

# wait_file PATH: poll until it exists and is not empty (20 s at most)
wait_file() {
	local i
	[ -z "$GAVE_UP" ] || return 1
	for ((i = 0; i < 400; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	echo "test-valgrind.sh: $1 never appeared" >&2
	GAVE_UP=1
	return 1
}

ncmd=0
declare -a NAMES=() BADRC=()
# vg NAME EXPECTED_EXIT ARG...: tern ARG... under memcheck, run in the
# current directory, output in its log directory
vg() {
	local name=$1 want=$2 dir rc
	shift 2
	ncmd=$((ncmd + 1))
	dir=$LOGS/$(printf '%02d' "$ncmd")-$name
	mkdir -p "$dir"
	NAMES+=("$dir")
	"${VG[@]}" --log-file="$dir/vg.%p.log" "$TERN" --root "$STATE" "$@" \
		</dev/null >"$dir/output" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
	rc=$?
	echo "$rc" >"$dir/exit"
	if [ "$rc" -ne "$want" ]; then
		BADRC+=("$dir")
		echo "-- $name: exit $rc, expected $want:"
		sed 's/^/   /' "$dir/output"
	fi
	printf '%-28s exit %s\n' "$name" "$rc"
	return 0
}

START=$(date +%s)
B=$WORK/bundle
make_bundle "$B"
cd "$B" || exit 1
vg spec 0 spec
jq '.process.terminal = false | .root.readonly = false
	| .process.args = ["/bin/sh", "-c", "echo started > /tmp/started; exec sleep 100000"]
	| .process.rlimits = [{"type": "RLIMIT_CORE", "hard": 0, "soft": 0}]' \
	config.json >config.new && mv config.new config.json
cd "$WORK" || exit 1

# lifecycle of one container
ID=vg-life
vg create 0 create -b "$B" "$ID"
wait_status "$ID" created
vg state-created 0 state "$ID"
vg start 0 start "$ID"
wait_file "$B/rootfs/tmp/started"
vg state 0 state "$ID"
vg list 0 list
vg list-json 0 list --format json
vg ps 0 ps "$ID"
vg ps-json 0 ps --format json "$ID"
vg exec 0 exec "$ID" /bin/sh -c 'echo from exec'
vg exec-detached 0 exec -d "$ID" /bin/sleep 100001
vg pause 0 pause "$ID"
wait_status "$ID" paused
vg resume 0 resume "$ID"
wait_status "$ID" running
vg update 0 update --memory 256M --pids-limit 500 "$ID"
vg events-stats 0 events --stats "$ID"
# (checkpoint deletes the container, as runc does)
vg checkpoint 0 checkpoint --image-path "$WORK/img" "$ID"
rm -f "$B/rootfs/tmp/started"
vg restore 0 restore -d --image-path "$WORK/img" -b "$B" "$ID"
wait_status "$ID" running
vg kill 0 kill "$ID" KILL
wait_status "$ID" stopped
vg delete 0 delete "$ID"

# run, in the foreground and detached, and a forced delete
cd "$B" || exit 1
jq '.process.args = ["/bin/sh", "-c", "echo hello"]' config.json >"$WORK/run.json"
cd "$WORK" || exit 1
RB=$WORK/bundle-run
mkdir -p "$RB"
jq '.root.path = "'"$B"'/rootfs"' "$WORK/run.json" >"$RB/config.json"
vg run 0 run -b "$RB" vg-run
vg run-detached 0 run -d -b "$B" vg-rund
wait_file "$B/rootfs/tmp/started"
vg delete-force 0 delete --force vg-rund

# the two-stage spawn (a time namespace) with a user namespace: id maps
TB=$WORK/bundle-userns
mkdir -p "$TB"
jq '.root.path = "'"$B"'/rootfs"
	| .process.args = ["/bin/true"]
	| .linux.namespaces += [{"type": "user"}, {"type": "time"}]
	| .linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
	| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]' \
	"$B/config.json" >"$TB/config.json"
vg run-userns-timens 0 run -b "$TB" vg-userns

# error paths: each must fail with a message and leave nothing behind
vg state-unknown 1 state vg-nonexistent
vg delete-unknown 1 delete vg-nonexistent
EB=$WORK/bundle-bad
mkdir -p "$EB"
jq '.root.path = "/nonexistent/rootfs"' "$B/config.json" >"$EB/config.json"
vg create-no-rootfs 1 create -b "$EB" vg-bad
echo '{"ociVersion": "1.0.2", "process": ' >"$EB/config.json"
vg create-bad-json 1 create -b "$EB" vg-bad
jq '.process.args = ["/nonexistent"]' "$B/config.json" >"$EB/config.json"
jq '.root.path = "'"$B"'/rootfs"' "$EB/config.json" >"$EB/c" && mv "$EB/c" "$EB/config.json"
vg run-no-program 1 run -b "$EB" vg-bad

# leftovers (also of a failed step above)
for id in $(tern_plain list --quiet 2>/dev/null); do
	tern_plain delete --force "$id" >/dev/null 2>&1
done

# judge every process's log
clean=0 witherr=0 possibly=0 nerr_all=0 nfd_all=0 nproc=0
declare -A UNHANDLED=()
for dir in "${NAMES[@]}"; do
	bad=""
	pids=" $(ls "$dir" | sed -n 's/^vg\.\([0-9]*\)\.log$/\1/p' | tr '\n' ' ')"
	for log in "$dir"/vg.*.log; do
		[ -e "$log" ] || continue
		nproc=$((nproc + 1))
		p=$(sed -n 's/.*possibly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d ,)
		[ -n "$p" ] && possibly=$((possibly + p))
		# Every report starts with an unindented line: count those that
		# are not valgrind's own banner and summaries. A process that
		# execs writes no ERROR SUMMARY, so the reports are what counts.
		# "Open ..." lists an fd open at exit.
		read -r n nfd < <(awk '
			/^==[0-9]+== [^ ]/ {
				line = $0; sub(/^==[0-9]+== /, "", line)
				if (line ~ /^(Memcheck, a memory|Copyright|Using Valgrind|Command:|Parent PID:|HEAP SUMMARY:|LEAK SUMMARY:|FILE DESCRIPTORS:|Reachable blocks|To see them|For lists of|For counts of|ERROR SUMMARY:|All heap blocks)/)
					next
				if (line ~ /^Open /) fds++; else errs++
			}
			/ERROR SUMMARY: / { summary = $4 }
			END {
				# (a kind this does not know still counts)
				if (summary != "" && summary - fds > errs) errs = summary - fds
				print errs + 0, fds + 0
			}' "$log")
		parent=$(sed -n 's/^==[0-9]*== Parent PID: \([0-9]*\)$/\1/p' "$log")
		# fds left open count for the tern CLI only, not for a forked
		# child of a tern process (its parent logged here too; one in a
		# new pid namespace sees parent 0): its exit closes them
		if [ "$parent" != 0 ] && [[ "$pids" != *" $parent "* ]] && [ "$nfd" -gt 0 ]; then
			bad="$bad $(basename "$log"):$nfd-fds-open-at-exit"
			nfd_all=$((nfd_all + nfd))
		fi
		if [ "$n" -gt 0 ]; then
			bad="$bad $(basename "$log"):$n-errors"
			nerr_all=$((nerr_all + n))
		fi
		while read -r sc; do
			[ -n "$sc" ] && UNHANDLED[$sc]=1
		done < <(sed -n 's/.*WARNING: unhandled amd64-linux syscall: \([0-9]*\).*/\1/p' "$log")
	done
	for b in "${BADRC[@]}"; do [ "$b" = "$dir" ] && bad="$bad wrong-exit-status"; done
	if [ -n "$bad" ]; then
		witherr=$((witherr + 1))
		echo "== $(basename "$dir"):$bad"
		for log in "$dir"/vg.*.log; do
			[[ "$bad" == *" $(basename "$log"):"* ]] || continue
			echo "---- $log"
			grep -v '^--[0-9]*-- ' "$log" | sed -n '/^==[0-9]*== Parent PID/,/HEAP SUMMARY/p'
		done
	else
		clean=$((clean + 1))
	fi
done
if [ "${#UNHANDLED[@]}" -gt 0 ]; then
	echo "syscalls valgrind does not know (ENOSYS under valgrind):" \
		"${!UNHANDLED[@]}"
fi
echo "$nproc processes logged, $nerr_all memcheck errors, $nfd_all fds open at exit, possibly lost: $possibly bytes in all;" \
	"logs in $LOGS; $(($(date +%s) - START)) s"
echo "valgrind: $ncmd commands, $clean clean, $witherr with errors"
[ "$witherr" -eq 0 ]
