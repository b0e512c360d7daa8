#!/bin/bash
# Start-up benchmark: a /bin/true container (a foreground run: create,
# start, wait, delete) with tern, crun and runc on the same bundle,
# interleaved, after a warm-up. Prints the median wall time per runtime and
# the ratios tern/crun and tern/runc.
#
#   sudo bench/run-bench.sh [-n RUNS] [-w WARMUP]
#
# TERN_BIN, CRUN_BIN, RUNC_BIN choose the binaries (default: ./tern, crun,
# runc from PATH). A runtime that is missing or fails is reported and left
# out of the ratios.
#
# All three run inside a private mount namespace where the cgroup v2 mount
# /sys/fs/cgroup/unified is unmounted: crun refuses the host's hybrid cgroup
# layout otherwise, and giving every runtime the same view keeps the
# comparison fair. The host's own mounts are not touched.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=30
WARMUP=3
while getopts n:w:h opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	*)
		sed -n '2,15p' "$0"
		exit 2
		;;
	esac
done
[ "$RUNS" -ge 20 ] || {
	echo "run-bench.sh: use at least 20 runs (-n)" >&2
	exit 2
}
[ "$(id -u)" -eq 0 ] || {
	echo "run-bench.sh: run as root" >&2
	exit 1
}

if [ -z "${TERN_BENCH_INNER:-}" ]; then
	exec unshare -m --propagation private env TERN_BENCH_INNER=1 "$0" "$@"
fi
if mountpoint -q /sys/fs/cgroup/unified; then
	umount /sys/fs/cgroup/unified
fi

TERN_BIN=${TERN_BIN:-$REPO/tern}
CRUN_BIN=${CRUN_BIN:-$(command -v crun || true)}
RUNC_BIN=${RUNC_BIN:-$(command -v runc || true)}

WORK=$(mktemp -d /tmp/tern-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# tern as installed (scripts/install.sh strips it): the build's debug info
# would otherwise be copied into the sealed memfd on every run (about 2 ms).
if [ -z "${TERN_NO_STRIP:-}" ]; then
	cp "$TERN_BIN" "$WORK/tern"
	strip "$WORK/tern"
	TERN_BIN=$WORK/tern
fi

# The bundle: busybox-static and /bin/true, no terminal, config from runc's
# (or crun's) spec so that no runtime's own defaults are favoured.
BUNDLE=$WORK/bundle
mkdir -p "$BUNDLE/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$BUNDLE/rootfs/bin/busybox"
ln -s busybox "$BUNDLE/rootfs/bin/true"
ln -s busybox "$BUNDLE/rootfs/bin/sh"
SPEC_BIN=${RUNC_BIN:-${CRUN_BIN:-$TERN_BIN}}
(cd "$BUNDLE" && "$SPEC_BIN" spec)
jq '.process.terminal = false | .process.args = ["/bin/true"]' "$BUNDLE/config.json" >"$BUNDLE/c.json"
mv "$BUNDLE/c.json" "$BUNDLE/config.json"

names=()
bins=()
for pair in "tern:$TERN_BIN" "crun:$CRUN_BIN" "runc:$RUNC_BIN"; do
	name=${pair%%:*} bin=${pair#*:}
	if [ -z "$bin" ] || [ ! -x "$bin" ]; then
		echo "skipping $name: not found (${bin:-not in PATH})" >&2
		continue
	fi
	names+=("$name")
	bins+=("$bin")
	mkdir -p "$WORK/root-$name"
	: >"$WORK/times-$name"
done

# once NAME BIN ID: one container, prints the wall time in microseconds or
# returns non-zero. A foreground `run` creates, starts, waits and deletes
# (runc and crun remove the container when its process exits, and tern
# does the same), so there is no separate delete to time. Anything left
# behind is removed outside the timed part, so the next run starts clean.
once() {
	local name=$1 bin=$2 id=$3 t0 t1 rc=0
	t0=$(date +%s%N)
	"$bin" --root "$WORK/root-$name" run -b "$BUNDLE" "$id" </dev/null >/dev/null 2>"$WORK/err-$name" || rc=$?
	t1=$(date +%s%N)
	if [ -n "$("$bin" --root "$WORK/root-$name" list -q 2>/dev/null)" ]; then
		"$bin" --root "$WORK/root-$name" delete -f "$id" >/dev/null 2>&1 || true
	fi
	[ "$rc" -eq 0 ] || return 1
	echo $(((t1 - t0) / 1000))
}

declare -A broken=()
for ((i = 0; i < WARMUP + RUNS; i++)); do
	for k in "${!names[@]}"; do
		name=${names[$k]}
		[ -z "${broken[$name]:-}" ] || continue
		if us=$(once "$name" "${bins[$k]}" "bench-$name-$i"); then
			[ "$i" -lt "$WARMUP" ] || echo "$us" >>"$WORK/times-$name"
		else
			broken[$name]=1
			echo "$name failed on run $i: $(tail -3 "$WORK/err-$name")" >&2
		fi
	done
done

median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

declare -A med=()
printf '%-6s %8s %12s\n' runtime runs median_ms
for name in "${names[@]}"; do
	if [ -n "${broken[$name]:-}" ]; then
		printf '%-6s %8s %12s\n' "$name" failed -
		continue
	fi
	med[$name]=$(median "$WORK/times-$name")
	printf '%-6s %8d %12.2f\n' "$name" "$(wc -l <"$WORK/times-$name")" "$(echo "${med[$name]}" | awk '{print $1 / 1000}')"
done

ratio() {
	if [ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ]; then
		awk -v a="${med[$1]}" -v b="${med[$2]}" 'BEGIN { printf "%.2f\n", a / b }'
	else
		echo n/a
	fi
}
echo "tern/crun: $(ratio tern crun)"
echo "tern/runc: $(ratio tern runc)"
