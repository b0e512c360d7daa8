#!/bin/bash
# Where the milliseconds of a CRIU-based operation go (issue 37, step 1).
# For a small one-process busybox container (`sleep`, the bundle shape of
# bench/snapshot-bench.sh) it runs N rounds of
#   tern:  snapshot (the first: the whole rootfs is recorded); a second
#          snapshot (its rootfs linked to the first's); cold rollback to the
#          first; cold clone (one) of it; checkpoint (the container stops)
#          + restore -d. snapshot, rollback and clone run with --format
#          json: tern's own frozen, rootfs and criu times go in the tables
#   runc:  checkpoint --leave-running; delete -f + restore -d (same bundle,
#          same criu)
# and splits each command's wall time into phases:
#   pre    the command's start until criu opens its log (tern's or runc's
#          own work, the fork+exec of criu, criu's loading and RPC set-up)
#   criu   criu's log, -v4 with its own timestamps (tern and runc both ask
#          criu for log level 4), cut at the log messages listed in
#          DUMP_PHASES and RESTORE_PHASES of bench/criu-phases.py (which
#          makes the tables)
#   post   criu's last log line until the command returns (criu's exit,
#          what the runtime does afterwards)
# "pre" and "post" come from the log file's birth and change times, which
# this kernel stamps with the coarse (tick) clock: a few ms either way.
# A second pass (-t, one round) runs every command under
#   perf trace --no-syscalls -e sched:sched_process_exec,sched:sched_process_exit
# (kernel tracepoints, no ptrace: strace -f cannot be used, criu restore
# must ptrace the tasks it makes), which gives the exact exec and exit of
# criu and of the helpers it runs (tar, sh, gzip...), so "pre" splits into
# the runtime's own part and criu's start before its log.
# A third pass (-p) records a `perf trace -s` syscall summary of one tern
# snapshot (criu dump) and one cold rollback (criu restore).
#
#   sudo bench/criu-phases.sh [-n ROUNDS] [-o OUTDIR] [-t] [-p]
# (-n 0 -t -p: only the trace and perf passes, after a warm-up round)
#
# TERN_BIN, RUNC_BIN and CRIU choose the binaries (default: ./tern,
# /opt/peers-sid/bin/runc (runc 1.3.6, ../shared/tools/install-sid-peers.sh)
# or runc from PATH, the criu scripts/install-criu.sh installs). OUTDIR
# keeps every criu log, tern's debug log, the raw times (times.tsv) and
# the tables (phases.md); default a new /tmp/criu-phases.XXXXXX.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
OUT=
TRACE=0
PERF=0
while getopts n:o:tph opt; do
	case $opt in
	n) ROUNDS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	t) TRACE=1 ;;
	p) PERF=1 ;;
	*)
		sed -n '2,39p' "$0"
		exit 2
		;;
	esac
done
[ "$(id -u)" -eq 0 ] || {
	echo "criu-phases.sh: run as root" >&2
	exit 1
}

TERN_BIN=${TERN_BIN:-$REPO/tern}
if [ -z "${RUNC_BIN:-}" ]; then
	RUNC_BIN=/opt/peers-sid/bin/runc
	[ -x "$RUNC_BIN" ] || RUNC_BIN=$(command -v runc || true)
fi
CRIU=${CRIU:-$("$REPO/scripts/install-criu.sh" 2>/dev/null | tail -1)}
[ -x "$CRIU" ] || {
	echo "criu-phases.sh: no criu (run scripts/install-criu.sh)" >&2
	exit 1
}
PY=$(command -v /usr/bin/python3 python3 | head -1)

WORK=$(mktemp -d /tmp/criu-phases-work.XXXXXX)
RUNROOT=$(mktemp -d /run/criu-phases.XXXXXX)
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/criu-phases.XXXXXX)
mkdir -p "$OUT/logs"
cleanup() {
	local r id
	for r in tern runc; do
		for id in $(rt_cmd $r list -q 2>/dev/null); do
			rt_cmd $r delete -f "$id" >/dev/null 2>&1 || true
		done
	done
	rm -rf "$WORK" "$RUNROOT"
}
trap cleanup EXIT

BUNDLE=$WORK/bundle
mkdir -p "$BUNDLE/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$BUNDLE/rootfs/bin/busybox"
for f in $(/bin/busybox --list); do
	[ "$f" = busybox ] || ln -s busybox "$BUNDLE/rootfs/bin/$f"
done
(cd "$BUNDLE" && "$TERN_BIN" spec)
jq '.process.terminal = false | .root.readonly = false | .process.args = ["/bin/sleep", "100000"]' \
	"$BUNDLE/config.json" >"$WORK/c"
mv "$WORK/c" "$BUNDLE/config.json"

# TERN_LOG: when set, tern logs json debug lines there.
# rt_argv RUNTIME ARGS...: the command line into ARGV. runc 1.3 ignores
# --criu and runs the criu of PATH: CRIU's directory goes first in PATH.
TERN_LOG=
rt_argv() {
	local r=$1
	shift
	case $r in
	tern)
		ARGV=("$TERN_BIN" --root "$RUNROOT/tern" --criu "$CRIU")
		[ -z "$TERN_LOG" ] || ARGV+=(--log "$TERN_LOG" --log-format json --debug)
		;;
	runc) ARGV=(env "PATH=$(dirname "$CRIU"):$PATH" "$RUNC_BIN" --root "$RUNROOT/runc") ;;
	esac
	ARGV+=("$@")
}
rt_cmd() {
	local ARGV
	rt_argv "$@"
	"${ARGV[@]}"
}

now_us() { printf -v "$1" '%s' "${EPOCHREALTIME/./}"; }

# a rollback or clone fills memory behind itself (tern-filler): wait (up
# to 2 s: other work on the machine may have fillers of its own) until
# none is left, so that it does not fall into the next operation
wait_fillers() {
	for _ in $(seq 100); do
		pgrep -x tern-filler >/dev/null || return 0
		sleep 0.02
	done
}

# op PASS RUNTIME OPNAME ROUND ARGS...: run the runtime with ARGS, timed; keep the criu logs it
# made; one line in times.tsv
op() {
	local pass=$1 r=$2 name=$3 n=$4 t0 t1 logs="" l b m k=0 tag
	shift 4
	tag=$pass-$r-$name-$n
	touch "$WORK/mark"
	sleep 0.01 # (the coarse file clock: logs after the mark are newer)
	if [ "$r" = tern ] && [ "$pass" = main ]; then
		TERN_LOG=$OUT/logs/$tag.tern.json
	fi
	local ARGV pre=()
	# shellcheck disable=SC2054 # (a comma-separated list of events)
	[ "$pass" = trace ] && pre=(perf trace --no-syscalls -e sched:sched_process_exec,sched:sched_process_exit
		-o "$OUT/logs/$tag.perf")
	rt_argv "$r" "$@"
	now_us t0
	"${pre[@]}" "${ARGV[@]}" </dev/null >"$WORK/out" 2>&1 || {
		now_us t1
		TERN_LOG=
		echo "criu-phases.sh: $tag failed:" >&2
		cat "$WORK/out" >&2
		return 1
	}
	now_us t1
	TERN_LOG=
	cp "$WORK/out" "$OUT/logs/$tag.out"
	while read -r l; do
		k=$((k + 1))
		b=$(stat -c %.9W "$l")
		m=$(stat -c %.9Y "$l")
		cp "$l" "$OUT/logs/$tag.$k.$(basename "$l")"
		logs+="$OUT/logs/$tag.$k.$(basename "$l")@$b@$m,"
	done < <(find "$RUNROOT" "$WORK" -name '*.log' -newer "$WORK/mark" 2>/dev/null | sort)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pass" "$r" "$name" "$n" "$t0" "$t1" "${logs%,}" >>"$OUT/times.tsv"
}

wait_running() {
	for _ in $(seq 400); do
		[ "$(rt_cmd "$1" state "$2" 2>/dev/null | jq -r .status)" = running ] && return 0
		sleep 0.02
	done
	echo "criu-phases.sh: $1 $2 is not running" >&2
	return 1
}

round_tern() {
	local pass=$1 n=$2 id="cp-t-$1-$2"
	rt_cmd tern run -d -b "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
	wait_running tern "$id"
	op "$pass" tern snapshot "$n" snapshot --format json "$id" a
	op "$pass" tern snapshot2 "$n" snapshot --format json "$id" b
	op "$pass" tern rollback "$n" rollback --format json "$id" a
	wait_fillers
	op "$pass" tern clone "$n" clone --format json "$id" a "$id-c"
	wait_fillers
	rt_cmd tern delete -f "$id-c"
	op "$pass" tern checkpoint "$n" checkpoint --image-path "$WORK/ck-$id" "$id"
	op "$pass" tern restore "$n" restore -d --image-path "$WORK/ck-$id" -b "$BUNDLE" "$id"
	wait_running tern "$id"
	rt_cmd tern delete -f "$id"
	rm -rf "$WORK/ck-$id"
}

round_runc() {
	local pass=$1 n=$2 id="cp-r-$1-$2"
	rt_cmd runc run -d -b "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
	wait_running runc "$id"
	op "$pass" runc checkpoint-lr "$n" checkpoint --leave-running --image-path "$WORK/ck-$id" "$id"
	rt_cmd runc delete -f "$id"
	op "$pass" runc restore "$n" restore -d --image-path "$WORK/ck-$id" -b "$BUNDLE" "$id"
	wait_running runc "$id"
	rt_cmd runc delete -f "$id"
	rm -rf "$WORK/ck-$id"
}

{
	echo "date: $(date -u +%FT%TZ)"
	echo "uptime before: $(uptime)"
	echo "tern: $TERN_BIN ($("$TERN_BIN" --version 2>&1 | head -1))"
	echo "runc: $RUNC_BIN ($("$RUNC_BIN" --version 2>&1 | head -1))"
	echo "criu: $CRIU ($("$CRIU" --version | head -1))"
	echo "kdat cache: $(ls -l --time-style=+%FT%T /run/criu.kdat 2>&1)"
	echo "/run: $(stat -f -c %T /run); $(nproc) cpus"
} >"$OUT/env.txt"
cat "$OUT/env.txt"

# a warm-up round of each, not counted (page cache, kdat cache)
round_tern warm 0 || echo "criu-phases.sh: tern warm-up failed" >&2
[ -n "$RUNC_BIN" ] && { round_runc warm 0 || echo "criu-phases.sh: runc warm-up failed" >&2; }
for n in $(seq "$ROUNDS"); do
	round_tern main "$n" || echo "criu-phases.sh: tern round $n failed" >&2
	[ -n "$RUNC_BIN" ] && { round_runc main "$n" || echo "criu-phases.sh: runc round $n failed" >&2; }
done
if [ "$TRACE" = 1 ]; then
	round_tern trace 1 || echo "criu-phases.sh: tern trace round failed" >&2
	[ -n "$RUNC_BIN" ] && { round_runc trace 1 || echo "criu-phases.sh: runc trace round failed" >&2; }
fi
if [ "$PERF" = 1 ]; then
	id=cp-perf
	rt_cmd tern run -d -b "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
	wait_running tern "$id"
	perf trace -s -o "$OUT/perf-trace-snapshot.txt" -- "$TERN_BIN" --root "$RUNROOT/tern" --criu "$CRIU" snapshot "$id" a </dev/null >/dev/null 2>&1 || echo "criu-phases.sh: perf trace of snapshot failed" >&2
	perf trace -s -o "$OUT/perf-trace-rollback.txt" -- "$TERN_BIN" --root "$RUNROOT/tern" --criu "$CRIU" rollback "$id" a </dev/null >/dev/null 2>&1 || echo "criu-phases.sh: perf trace of rollback failed" >&2
	wait_fillers
	rt_cmd tern delete -f "$id"
fi
echo "uptime after: $(uptime)" >>"$OUT/env.txt"

"$PY" "$REPO/bench/criu-phases.py" "$OUT" "$CRIU" | tee "$OUT/phases.md"
echo "criu-phases.sh: logs and tables in $OUT"
