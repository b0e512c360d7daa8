#!/bin/bash
# A bounded soak of tern: every command in a loop for --minutes N (default
# 10), while watching for leaks.
#
# Each cycle: run (foreground), create/start, state, list, ps, exec
# (output checked), pause/resume, update, events --stats, spec, features,
# checkpoint/restore, kill, delete. Meanwhile three long-lived tern
# processes stay up for the whole soak: a foreground `tern run`, an
# attached `tern exec` into that container and a streaming `tern events`
# (a loop inside tern that reads statistics every 200 ms).
#
# Watched:
# - the maximum RSS of every tern invocation (GNU time's %M), per command:
#   that of the first cycle against that of the last;
# - the open fds and the RSS of the three long-lived tern processes, from
#   start to end;
# - the open fds of this script (the parent of every tern);
# - leftovers at the end: state directories, mounts under the work
#   directory, cgroups named after the soak's ids, processes carrying the
#   soak's marker, and the drift of /proc/sys/fs/file-nr (reported only:
#   the machine is shared, other work moves it).
#
# Not part of CI (scripts/test.sh): it runs for minutes by design. Root,
# Debian 12, after `make`; criu as scripts/install-criu.sh installs it.
# Prints a summary and exits non-zero on any failed command, leak or
# leftover.
#
#   scripts/soak.sh [--minutes N] [--tern PATH] [--keep]
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
REPO=$(pwd)
MINUTES=10
TERN=$REPO/tern
KEEP=
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes)
		MINUTES=${2:-}
		shift
		;;
	--tern)
		TERN=${2:-}
		shift
		;;
	--keep) KEEP=1 ;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "soak.sh: unknown option $1" >&2
		exit 2
		;;
	esac
	shift
done
[[ "$MINUTES" =~ ^[0-9]+$ ]] && [ "$MINUTES" -gt 0 ] || {
	echo "soak.sh: --minutes wants a whole number > 0" >&2
	exit 2
}
[ "$(id -u)" -eq 0 ] || { echo "soak.sh: run as root" >&2; exit 2; }
[ -x "$TERN" ] || { echo "soak.sh: no tern at $TERN (make first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "soak.sh: needs GNU time (/usr/bin/time, apt-get install time)" >&2; exit 2; }
for t in jq busybox; do
	command -v "$t" >/dev/null || { echo "soak.sh: needs $t" >&2; exit 2; }
done

W=$(mktemp -d /tmp/tern-soak.XXXXXX)
ROOT=$W/state
B=$W/bundle
LOG=$W/log
MARK=$((200000 + RANDOM))
P=soak$$ # every id starts with it (cgroups are named after ids)
FAILS=0
COMMANDS=0
CYCLES=0

fail() {
	FAILS=$((FAILS + 1))
	echo "FAIL (cycle $CYCLES): $*" | tee -a "$LOG" >&2
}

# --- the bundle: busybox and a sleep that carries the marker
mkdir -p "$B/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$B/rootfs/bin/"
for f in sh sleep echo cat true readlink; do ln -s busybox "$B/rootfs/bin/$f"; done
(cd "$B" && "$TERN" spec) || { echo "soak.sh: tern spec failed" >&2; exit 1; }
jq ".process.terminal = false | .root.readonly = false | .process.args = [\"/bin/sleep\", \"$MARK\"]" \
	"$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
FG=$W/fg
mkdir -p "$FG"
cp -a "$B/rootfs" "$FG/"
jq ".process.args = [\"/bin/sh\", \"-c\", \"echo fg-up; exec sleep $MARK\"]" "$B/config.json" >"$FG/config.json"

# --- per-command maximum RSS, first and last cycle
declare -A RSS_FIRST RSS_LAST RSS_MAX

# t NAME ARGS...: tern ARGS with this root, measured; output in $OUT.
t() {
	local name=$1 rc=0 kb
	shift
	COMMANDS=$((COMMANDS + 1))
	# into a file, never a pipe: a container created or run -d inherits
	# tern's stdio, and a pipe's reader would wait for it to end
	timeout -s KILL 120 /usr/bin/time -f %M -o "$W/rss" "$TERN" --root "$ROOT" "$@" \
		</dev/null >"$W/out" 2>&1 || rc=$?
	OUT=$(cat "$W/out")
	kb=$(tail -n 1 "$W/rss" 2>/dev/null)
	if [[ "$kb" =~ ^[0-9]+$ ]]; then
		[ -n "${RSS_FIRST[$name]:-}" ] || RSS_FIRST[$name]=$kb
		RSS_LAST[$name]=$kb
		[ "$kb" -gt "${RSS_MAX[$name]:-0}" ] && RSS_MAX[$name]=$kb
	fi
	[ "$rc" -ne 137 ] || OUT="(killed after 120 s: hung) $OUT"
	return $rc
}

# ok NAME ARGS...: t, and a failure is a soak failure.
ok() {
	t "$@" || fail "$*: $OUT"
}

status_of() {
	t state state "$1" && jq -r .status <<<"$OUT"
}

wait_status() {
	local i s
	for i in $(seq 200); do
		s=$(status_of "$1") && [ "$s" = "$2" ] && return 0
		sleep 0.05
	done
	fail "$1: status '$s', wanted '$2'"
	return 1
}

fds_of() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
rss_of() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }

baseline_file_nr=$(cut -f1 /proc/sys/fs/file-nr)
baseline_parent_fds=$(fds_of $$)

# --- the long-lived ones
"$TERN" --root "$ROOT" run -b "$FG" "$P-fg" </dev/null >"$W/fg.out" 2>&1 &
FG_PID=$!
for i in $(seq 200); do grep -q fg-up "$W/fg.out" && break; sleep 0.05; done
grep -q fg-up "$W/fg.out" || { fail "the foreground run did not come up: $(cat "$W/fg.out")"; }
"$TERN" --root "$ROOT" exec "$P-fg" sleep "$MARK" </dev/null >"$W/exec.out" 2>&1 &
EXEC_PID=$!
"$TERN" --root "$ROOT" events --interval 200ms "$P-fg" </dev/null >"$W/events.out" 2>&1 &
EV_PID=$!
for i in $(seq 200); do [ -s "$W/events.out" ] && break; sleep 0.05; done
declare -A LL_PID=([run]=$FG_PID [exec]=$EXEC_PID [events]=$EV_PID)
declare -A FD_START FD_END RSS_START RSS_WARM RSS_END
for k in run exec events; do
	FD_START[$k]=$(fds_of "${LL_PID[$k]}")
	RSS_START[$k]=$(rss_of "${LL_PID[$k]}")
done

# --- the cycles
END=$((SECONDS + MINUTES * 60))
cd "$W" || exit 2
while [ "$SECONDS" -lt "$END" ]; do
	CYCLES=$((CYCLES + 1))
	id=$P-$CYCLES

	# run in the foreground: the exit status is the process's
	jq '.process.args = ["/bin/sh", "-c", "exit 3"]' "$B/config.json" >"$W/r.json"
	# (a second bundle would be a second rootfs copy: swap the config)
	cp "$B/config.json" "$W/main.json" && cp "$W/r.json" "$B/config.json"
	t run run -b "$B" "$id-r"
	rc=$?
	cp "$W/main.json" "$B/config.json"
	[ "$rc" -eq 3 ] || fail "run: exit $rc, wanted 3: $OUT"

	ok create create -b "$B" "$id"
	s=$(status_of "$id")
	[ "$s" = created ] || fail "$id after create: $s"
	ok start start "$id"
	wait_status "$id" running
	ok list list
	[[ "$OUT" == *"$id "* ]] || fail "list does not show $id: $OUT"
	ok list list --format json
	ok ps ps "$id"
	[[ "$OUT" == *"sleep $MARK"* ]] || fail "ps does not show the sleep: $OUT"
	ok exec exec "$id" sh -c "echo exec-in-$id"
	[ "$OUT" = "exec-in-$id" ] || fail "exec printed: $OUT"
	ok pause pause "$id"
	wait_status "$id" paused
	ok resume resume "$id"
	wait_status "$id" running
	ok update update --memory 64m --pids-limit 100 "$id"
	ok events events --stats "$id"
	jq -e '.data.memory' <<<"$OUT" >/dev/null || fail "events --stats: $OUT"
	mkdir -p "$W/specdir"
	rm -f "$W/specdir/config.json"
	ok spec spec --bundle "$W/specdir"
	ok features features
	# checkpoint (the container is deleted, as runc does), restore it
	# under its id
	rm -rf "$W/img"
	if t checkpoint checkpoint --image-path "$W/img" "$id"; then
		t state state "$id" && fail "state of checkpointed $id answers: $OUT"
		ok restore restore -d --image-path "$W/img" -b "$B" "$id"
		wait_status "$id" running
		ok exec exec "$id" true
	else
		fail "checkpoint $id: $OUT"
	fi
	ok kill kill "$id" KILL
	wait_status "$id" stopped
	ok delete delete "$id"
	t state state "$id" && fail "state of deleted $id answers: $OUT"

	# a created container deleted without start; a running one --force
	ok create create -b "$B" "$id-c"
	ok delete delete "$id-c"
	ok run run -d -b "$B" "$id-d"
	ok delete delete --force "$id-d"

	if [ "$CYCLES" = 1 ]; then
		# warmed up: what the loops inside them must not outgrow
		for k in run exec events; do RSS_WARM[$k]=$(rss_of "${LL_PID[$k]}"); done
	fi
	# the long-lived ones are still there
	for k in run exec events; do
		[ -d "/proc/${LL_PID[$k]}" ] || fail "the long-lived tern $k has gone"
	done
	# every few cycles, leftovers of this cycle: only the fg container
	left=$(find "$ROOT" -mindepth 1 -maxdepth 1 ! -name '.*' ! -name "$P-fg")
	[ -z "$left" ] || fail "state directories left: $left"
done
cd "$REPO" || exit 2

for k in run exec events; do
	FD_END[$k]=$(fds_of "${LL_PID[$k]}")
	RSS_END[$k]=$(rss_of "${LL_PID[$k]}")
done
parent_fds=$(fds_of $$)

# --- stop the long-lived ones: the exec, the events stream, then the run
kill "$EXEC_PID" 2>/dev/null
"$TERN" --root "$ROOT" kill "$P-fg" KILL >/dev/null 2>&1
for pid in $FG_PID $EXEC_PID $EV_PID; do
	for i in $(seq 200); do [ -d "/proc/$pid" ] || break; sleep 0.05; done
	[ -d "/proc/$pid" ] && fail "tern $pid did not end with its container" && kill -9 "$pid" 2>/dev/null
done
wait "$FG_PID" 2>/dev/null
wait "$EV_PID" 2>/dev/null
wait "$EXEC_PID" 2>/dev/null

# --- leftovers
left_state=$(find "$ROOT" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l)
left_mounts=$(grep -c -F "$W" /proc/self/mountinfo)
left_cgroups=$(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$P-*" 2>/dev/null | wc -l)
left_procs=$(pgrep -f "sleep $MARK" | wc -l)
left_tern=$(pgrep -f -- "--root $ROOT" | wc -l)
file_nr=$(cut -f1 /proc/sys/fs/file-nr)
[ "$left_state" -eq 0 ] || fail "state directories left: $(ls "$ROOT")"
[ "$left_mounts" -eq 0 ] || fail "mounts left: $(grep -F "$W" /proc/self/mountinfo)"
[ "$left_cgroups" -eq 0 ] || fail "cgroups left: $(find /sys/fs/cgroup/ -maxdepth 7 -type d -name "$P-*")"
[ "$left_procs" -eq 0 ] || fail "processes left: $(pgrep -af "sleep $MARK")"
[ "$left_tern" -eq 0 ] || fail "tern processes left: $(pgrep -af -- "--root $ROOT")"

# --- leaks
for k in run exec events; do
	[ "${FD_END[$k]:-x}" = "${FD_START[$k]:-y}" ] ||
		fail "long-lived tern $k: fds ${FD_START[$k]:-?} at the start, ${FD_END[$k]:-?} at the end"
	# a loop that leaked would grow with the cycles: allow 512 kB of
	# noise over what it used after the first cycle
	[ -n "${RSS_END[$k]:-}" ] && [ -n "${RSS_WARM[$k]:-}" ] &&
		[ "${RSS_END[$k]}" -le $((RSS_WARM[$k] + 512)) ] ||
		fail "long-lived tern $k: RSS ${RSS_WARM[$k]:-?} kB after the first cycle, ${RSS_END[$k]:-?} kB at the end"
done
[ "$parent_fds" -le "$baseline_parent_fds" ] ||
	fail "this script's fds: $baseline_parent_fds at the start, $parent_fds at the end"
for name in "${!RSS_FIRST[@]}"; do
	# each invocation is a new process: the same work in the last cycle
	# as in the first must not need more memory (allow 25% + 1 MB)
	f=${RSS_FIRST[$name]} l=${RSS_LAST[$name]}
	if [ "$l" -gt $((f + f / 4 + 1024)) ]; then
		fail "tern $name: max RSS $f kB in the first cycle, $l kB in the last"
	fi
done

# --- the summary
{
	echo "== soak summary ($MINUTES min, tern $TERN)"
	echo "cycles: $CYCLES  commands: $COMMANDS  failures: $FAILS"
	echo "max RSS per command, kB (first cycle / last cycle / max):"
	for name in $(printf '%s\n' "${!RSS_FIRST[@]}" | sort); do
		printf '  %-11s %6s / %6s / %6s\n' "$name" "${RSS_FIRST[$name]}" "${RSS_LAST[$name]}" "${RSS_MAX[$name]}"
	done
	echo "long-lived tern processes (fds start->end, RSS kB start->after cycle 1->end):"
	for k in run exec events; do
		printf '  %-7s fds %s -> %s, RSS %s -> %s -> %s\n' "$k" "${FD_START[$k]:-?}" \
			"${FD_END[$k]:-?}" "${RSS_START[$k]:-?}" "${RSS_WARM[$k]:-?}" "${RSS_END[$k]:-?}"
	done
	echo "events lines streamed: $(wc -l <"$W/events.out")"
	echo "this script's fds: $baseline_parent_fds -> $parent_fds"
	echo "leftovers: state dirs $left_state, mounts $left_mounts, cgroups $left_cgroups, processes $left_procs, tern processes $left_tern"
	echo "file-nr (allocated file handles, whole machine, shared): $baseline_file_nr -> $file_nr (drift $((file_nr - baseline_file_nr)), not judged)"
	echo "result: $([ "$FAILS" -eq 0 ] && echo PASS || echo "FAIL ($FAILS)")"
} | tee -a "$LOG"
if [ -z "$KEEP" ] && [ "$FAILS" -eq 0 ]; then
	rm -rf "$W"
else
	echo "work directory kept: $W (log: $LOG)"
fi
[ "$FAILS" -eq 0 ]
