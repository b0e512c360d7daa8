#!/bin/bash
# The memory of one long `tern events` stats stream (issue 33, item 14).
#
# Starts one container (busybox, a memory and a pids limit, so that every
# interval reads those controllers too) and one `tern events --interval I`
# on it, and samples the stream's anonymous resident memory (RssAnon: heap
# and stacks, where a leak grows; not VmRSS, which also counts file pages
# as they are first touched) every --every seconds for --minutes. Prints
# one line per sample: minutes, stats objects so far, RssAnon in kB.
#
# Fails if RssAnon at the end exceeds that after the first sample by more
# than 64 kB (heap noise is a page or two; a leak of even 16 bytes per
# interval over an hour at 10 ms is 5 MB), if the stream stops, or if
# anything is left behind.
#
# Not part of CI: it runs for as long as it is told. Root, after `make`.
# On the cgroup v2 path, in the qemu guest:
#   tests/vm/run-in-guest.sh --timeout 4000 -- scripts/soak-events.sh --minutes 60
#
#   scripts/soak-events.sh [--minutes N] [--interval DURATION] [--every S] [--tern PATH]
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
MINUTES=60
INTERVAL=10ms
EVERY=60
TERN=$(pwd)/tern
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes | --interval | --every | --tern)
		[ $# -ge 2 ] || { echo "soak-events.sh: $1 wants a value" >&2; exit 2; }
		case "$1" in
		--minutes) MINUTES=$2 ;;
		--interval) INTERVAL=$2 ;;
		--every) EVERY=$2 ;;
		--tern) TERN=$2 ;;
		esac
		shift
		;;
	-h | --help)
		sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "soak-events.sh: unknown option $1" >&2
		exit 2
		;;
	esac
	shift
done
for v in "$MINUTES" "$EVERY"; do
	[[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || {
		echo "soak-events.sh: --minutes and --every want a whole number > 0" >&2
		exit 2
	}
done
[ "$(id -u)" -eq 0 ] || { echo "soak-events.sh: run as root" >&2; exit 2; }
[ -x "$TERN" ] || { echo "soak-events.sh: no tern at $TERN (make first)" >&2; exit 2; }
for t in jq busybox; do
	command -v "$t" >/dev/null || { echo "soak-events.sh: needs $t" >&2; exit 2; }
done

W=$(mktemp -d /tmp/tern-soak-events.XXXXXX)
ROOT=$W/state
B=$W/bundle
ID=soak-events-$$
MARK=$((300000 + RANDOM))
EV_PID=

cleanup() {
	[ -n "$EV_PID" ] && kill "$EV_PID" 2>/dev/null
	"$TERN" --root "$ROOT" delete --force "$ID" >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$B/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp "$(command -v busybox)" "$B/rootfs/bin/busybox"
ln -s busybox "$B/rootfs/bin/sleep"
(cd "$B" && "$TERN" spec) || { echo "soak-events.sh: tern spec failed" >&2; exit 1; }
jq ".process.terminal = false | .process.args = [\"/bin/sleep\", \"$MARK\"]
    | .linux.resources.memory = {\"limit\": 67108864} | .linux.resources.pids = {\"limit\": 50}" \
	"$B/config.json" >"$B/c" && mv "$B/c" "$B/config.json"
"$TERN" --root "$ROOT" run -d -b "$B" "$ID" </dev/null >/dev/null 2>"$W/run.err" || {
	echo "soak-events.sh: run failed: $(cat "$W/run.err")" >&2
	exit 1
}
# into a file: its lines are counted, never parsed while half-written
"$TERN" --root "$ROOT" events --interval "$INTERVAL" "$ID" </dev/null >"$W/events" 2>&1 &
EV_PID=$!

objects() { grep -c '"type":"stats"' "$W/events"; }
anon_rss() { awk '/^RssAnon:/ {print $2}' "/proc/$EV_PID/status" 2>/dev/null; }

echo "tern events --interval $INTERVAL for $MINUTES min ($(uname -r), $(stat -fc %T /sys/fs/cgroup))"
printf '%8s %10s %10s\n' minutes objects RssAnon_kB
START=$SECONDS
END=$((START + MINUTES * 60))
first= last= rc=0
while :; do
	sleep "$EVERY"
	kill -0 "$EV_PID" 2>/dev/null || {
		echo "soak-events.sh: tern events ended: $(tail -n 3 "$W/events")" >&2
		rc=1
		break
	}
	last=$(anon_rss)
	[ -n "$first" ] || first=$last
	printf '%8s %10s %10s\n' "$(((SECONDS - START) / 60))" "$(objects)" "$last"
	[ "$SECONDS" -lt "$END" ] || break
done
if [ "$rc" -eq 0 ]; then
	echo "RssAnon: $first kB after the first ${EVERY}s, $last kB at the end"
	[ "$last" -le $((first + 64)) ] || {
		echo "soak-events.sh: RssAnon grew by $((last - first)) kB" >&2
		rc=1
	}
fi
kill "$EV_PID" 2>/dev/null
wait "$EV_PID" 2>/dev/null
EV_PID=
"$TERN" --root "$ROOT" delete --force "$ID" || rc=1
pgrep -f "sleep $MARK" >/dev/null && { echo "soak-events.sh: the container's process is left" >&2; rc=1; }
find /sys/fs/cgroup -name "*$ID*" 2>/dev/null | grep -q . && { echo "soak-events.sh: cgroups are left" >&2; rc=1; }
exit $rc
