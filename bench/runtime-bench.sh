#!/bin/bash
# The runtime benchmark: tern, crun and runc on the same bundle, interleaved
# (tern crun runc tern crun runc ...) after a warm-up, one scenario at a
# time:
#   run       a foreground `run` of /bin/true (create, start, wait, delete)
#   seccomp   the same with podman's default seccomp profile (as podman
#             renders it into a container's config.json)
#   userns    the same in a user namespace (container root is host uid
#             100000, 65536 ids mapped)
#   exec      `exec` of /bin/true into a running container
#   parallel  P containers started at once (`run -d` each, in parallel):
#             the wall time until every one of them runs, and the failures;
#             then all are deleted (not timed)
#   ckpt      checkpoint and restore of 16 and 256 MiB (bench/checkpoint-
#             bench.sh: tern and runc on the same criu; crun is built
#             without criu here)
# Per scenario and runtime it prints the median and the spread (25th-75th
# percentile) of the wall time, the CPU time (user+system of the runtime and
# what it waited for) and the peak RSS (the largest of the runtime's
# processes), and the ratios to crun and runc. The table goes to
# bench/results/runtime-DATE.md, with a plot (gnuplot) beside it.
#
#   sudo bench/runtime-bench.sh [-n RUNS] [-w WARMUP] [-p PARALLEL] [-r ROUNDS] [-C]
#
#   -n RUNS      samples per runtime and scenario (default 40, at least 20)
#   -w WARMUP    unrecorded runs first (default 3)
#   -p PARALLEL  containers started at once in `parallel` (default 100)
#   -r ROUNDS    rounds of `parallel` per runtime (default 5)
#   -C           leave out the checkpoint/restore scenario
#
# TERN_BIN, CRUN_BIN, RUNC_BIN choose the binaries (default: ./tern stripped
# as install.sh installs it, crun and runc from PATH). Everything runs
# inside a private mount namespace where /sys/fs/cgroup/unified is
# unmounted (crun 1.8 refuses the host's hybrid cgroup layout otherwise);
# every runtime gets that same view. The host's own mounts are untouched.
# Run it on an idle machine: it measures time.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=40
WARMUP=3
PAR=100
ROUNDS=5
CKPT=1
while getopts n:w:p:r:Ch opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	p) PAR=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	C) CKPT= ;;
	*)
		sed -n '2,34p' "$0"
		exit 2
		;;
	esac
done
[ "$RUNS" -ge 20 ] || {
	echo "runtime-bench.sh: use at least 20 runs (-n)" >&2
	exit 2
}
[ "$(id -u)" -eq 0 ] || {
	echo "runtime-bench.sh: run as root" >&2
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
RESULTS=$REPO/bench/results
STAMP=$(date -u +%Y%m%d-%H%M)

WORK=$(mktemp -d /tmp/tern-rbench.XXXXXX)
cleanup() {
	local name id
	for name in "${names[@]:-}"; do
		[ -n "$name" ] || continue
		for id in $(rt "$name" list -q 2>/dev/null); do
			rt "$name" delete -f "$id" >/dev/null 2>&1 || true
		done
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${TERN_NO_STRIP:-}" ]; then
	cp "$TERN_BIN" "$WORK/tern"
	strip "$WORK/tern"
	TERN_BIN=$WORK/tern
fi
gcc -O2 -o "$WORK/measure" "$REPO/bench/measure.c"
MEASURE=$WORK/measure

# ---- the bundles ----

# A busybox-static rootfs, and a config from runc's spec (so that no
# runtime's own defaults are favoured), without a terminal.
ROOTFS=$WORK/rootfs
mkdir -p "$ROOTFS"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$ROOTFS/bin/busybox"
for f in true sh sleep; do ln -s busybox "$ROOTFS/bin/$f"; done
SPEC_BIN=${RUNC_BIN:-${CRUN_BIN:-$TERN_BIN}}
(cd "$WORK" && "$SPEC_BIN" spec && mv config.json spec.json)

# bundle NAME JQ-FILTER: $WORK/b-NAME with the spec changed by the filter
# (a copy of the rootfs: runc takes no symlink for one)
bundle() {
	mkdir -p "$WORK/b-$1"
	cp -a "$ROOTFS" "$WORK/b-$1/rootfs"
	jq ".process.terminal = false | .root.path = \"rootfs\" | $2" "$WORK/spec.json" >"$WORK/b-$1/config.json"
}
bundle true '.process.args = ["/bin/true"]'
bundle sleep '.process.args = ["/bin/sleep", "100000"]'
bundle userns '.process.args = ["/bin/true"] |
	.linux.namespaces += [{"type": "user"}] |
	.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}] |
	.linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
# (a user namespace's root must be able to reach the rootfs)
chmod 755 "$WORK"

# podman's default seccomp profile as podman renders it into config.json:
# a container created from an image of the same rootfs, in a private podman
# store. Podman writes config.json at `init`, just before it calls its
# runtime (which may then fail here: crun cannot raise RLIMIT_NOFILE to
# podman's default); the file is all this needs.
podman_seccomp() {
	local p=(podman --root "$WORK/podman/root" --runroot "$WORK/podman/run" --storage-driver vfs
		--cgroup-manager cgroupfs --events-backend none)
	tar -C "$ROOTFS" -c . | "${p[@]}" import - localhost/tern-rbench >/dev/null 2>&1
	"${p[@]}" create --name tern-rbench localhost/tern-rbench /bin/true >/dev/null
	"${p[@]}" init tern-rbench >/dev/null 2>&1 || true
	local cfg
	cfg=$(find "$WORK/podman/root" -path '*userdata/config.json' | head -1)
	[ -n "$cfg" ] && jq -e '.linux.seccomp.syscalls | length > 0' "$cfg" >/dev/null || return 1
	jq '.linux.seccomp' "$cfg" >"$WORK/seccomp.json"
	"${p[@]}" rm -f tern-rbench >/dev/null 2>&1 || true
	"${p[@]}" rmi -f localhost/tern-rbench >/dev/null 2>&1 || true
}
if command -v podman >/dev/null && podman_seccomp; then
	bundle seccomp ".process.args = [\"/bin/true\"] | .linux.seccomp = $(cat "$WORK/seccomp.json")"
	SECCOMP_FROM="podman $(podman --version | awk '{print $3}')'s default profile ($(jq '.syscalls | length' "$WORK/seccomp.json") rules)"
else
	echo "runtime-bench.sh: podman could not render its seccomp profile: the seccomp scenario is left out" >&2
	SECCOMP_FROM=
fi

# ---- the runtimes ----

names=()
declare -A bin=()
for pair in "tern:$TERN_BIN" "crun:$CRUN_BIN" "runc:$RUNC_BIN"; do
	name=${pair%%:*} b=${pair#*:}
	if [ -z "$b" ] || [ ! -x "$b" ]; then
		echo "runtime-bench.sh: skipping $name: not found (${b:-not in PATH})" >&2
		continue
	fi
	names+=("$name")
	bin[$name]=$b
	mkdir -p "$WORK/root-$name"
done

rt() {
	local name=$1
	shift
	"${bin[$name]}" --root "$WORK/root-$name" "$@"
}

# measure_into FILE CMD...: one sample (wall cpu rss) appended to FILE, or
# a non-zero return with the command's stderr in $WORK/err.
measure_into() {
	local f=$1 line
	shift
	line=$(MEASURE_ERR=$WORK/err "$MEASURE" "$@")
	[ "${line##* }" = 0 ] || return 1
	echo "${line% *}" >>"$f"
}

declare -A broken=()

# interleave SCENARIO FN: FN NAME ID FILE for each runtime in turn, WARMUP
# then RUNS times; a runtime that fails is reported and left out.
interleave() {
	local sc=$1 fn=$2 i name
	for name in "${names[@]}"; do : >"$WORK/s-$sc-$name"; done
	for ((i = 0; i < WARMUP + RUNS; i++)); do
		for name in "${names[@]}"; do
			[ -z "${broken[$sc-$name]:-}" ] || continue
			local f=$WORK/s-$sc-$name
			[ "$i" -ge "$WARMUP" ] || f=$WORK/discard
			if ! "$fn" "$name" "rb-$sc-$name-$i" "$f"; then
				broken[$sc-$name]=1
				echo "runtime-bench.sh: $sc: $name failed on run $i: $(tail -3 "$WORK/err" 2>/dev/null)" >&2
				rt "$name" delete -f "rb-$sc-$name-$i" >/dev/null 2>&1 || true
			fi
		done
	done
}

# a foreground run of bundle $BUNDLE_NAME (the runtime removes it)
one_run() {
	measure_into "$3" "${bin[$1]}" --root "$WORK/root-$1" run -b "$WORK/b-$BUNDLE_NAME" "$2" || return 1
	# (anything left over goes outside the timed part)
	if [ -n "$(rt "$1" list -q 2>/dev/null)" ]; then rt "$1" delete -f "$2" >/dev/null 2>&1 || true; fi
}

one_exec() {
	measure_into "$3" "${bin[$1]}" --root "$WORK/root-$1" exec "rb-target-$1" /bin/true
}

echo "runtime-bench: $(nproc) cpus, $(uname -r), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
for name in "${names[@]}"; do
	echo "  $name: ${bin[$name]} ($("${bin[$name]}" --version 2>/dev/null | head -1))"
done
echo "  $RUNS runs after $WARMUP warm-up, interleaved; parallel: $PAR containers x $ROUNDS rounds"

scenarios=()
for sc in run seccomp userns; do
	[ "$sc" != seccomp ] || [ -n "$SECCOMP_FROM" ] || continue
	case $sc in
	run) BUNDLE_NAME=true ;;
	*) BUNDLE_NAME=$sc ;;
	esac
	echo "== $sc"
	interleave "$sc" one_run
	scenarios+=("$sc")
done

echo "== exec"
for name in "${names[@]}"; do
	rt "$name" run -d -b "$WORK/b-sleep" "rb-target-$name" </dev/null >/dev/null 2>&1 ||
		echo "runtime-bench.sh: exec: $name could not start the target container" >&2
done
interleave exec one_exec
for name in "${names[@]}"; do rt "$name" delete -f "rb-target-$name" >/dev/null 2>&1 || true; done
scenarios+=(exec)

# parallel: PAR `run -d` at once; the wall time until all have returned
# (each returns once its container runs), the failures counted; one sample
# per round. Peak RSS and CPU: of one of them, not meaningful here.
echo "== parallel ($PAR at once)"
declare -A par_fail=()
for name in "${names[@]}"; do : >"$WORK/s-parallel-$name"; par_fail[$name]=0; done
for ((r = 0; r < ROUNDS; r++)); do
	for name in "${names[@]}"; do
		t0=$(date +%s%N)
		for ((k = 0; k < PAR; k++)); do
			(rt "$name" run -d -b "$WORK/b-sleep" "rb-p$r-$k" </dev/null >/dev/null 2>"$WORK/perr-$name-$k" || true) &
		done
		wait
		t1=$(date +%s%N)
		echo "$(((t1 - t0) / 1000)) 0 0" >>"$WORK/s-parallel-$name"
		for ((k = 0; k < PAR; k++)); do
			if [ "$(rt "$name" state "rb-p$r-$k" 2>/dev/null | jq -r .status)" != running ]; then
				par_fail[$name]=$((par_fail[$name] + 1))
			fi
		done
		for ((k = 0; k < PAR; k++)); do rt "$name" delete -f "rb-p$r-$k" >/dev/null 2>&1 & done
		wait
	done
done
scenarios+=(parallel)

# ---- the summary ----

# stats FILE COLUMN: "median p25 p75" of that column
stats() {
	cut -d' ' -f"$2" "$1" | sort -n | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit 1
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[int((NR - 1) * 0.25) + 1], v[int((NR - 1) * 0.75) + 1] }'
}

mkdir -p "$RESULTS"
MD=$RESULTS/runtime-$STAMP.md
DAT=$WORK/plot.dat
{
	echo "# tern, crun and runc: bench/runtime-bench.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "$(nproc) CPUs, Linux $(uname -r), cgroup v1 (hybrid: the v2 mount hidden from all three);"
	echo "$RUNS runs after $WARMUP warm-up, interleaved; parallel: $PAR containers at once, $ROUNDS rounds."
	for name in "${names[@]}"; do
		echo "$name: $("${bin[$name]}" --version 2>/dev/null | head -1)."
	done
	[ -z "$SECCOMP_FROM" ] || echo "seccomp: $SECCOMP_FROM."
	echo "Wall and CPU in ms, RSS in MiB: median (25th-75th percentile); ratios of the medians."
	echo
	echo "| scenario | runtime | wall ms | CPU ms | peak RSS MiB | wall/crun | wall/runc | failures |"
	echo "|---|---|---|---|---|---|---|---|"
} >"$MD"
: >"$DAT"
declare -A med=()
for sc in "${scenarios[@]}"; do
	for name in "${names[@]}"; do
		f=$WORK/s-$sc-$name
		if [ -n "${broken[$sc-$name]:-}" ] || [ ! -s "$f" ]; then
			echo "| $sc | $name | failed | | | | | |" >>"$MD"
			continue
		fi
		read -r w w25 w75 < <(stats "$f" 1)
		read -r c c25 c75 < <(stats "$f" 2)
		read -r m m25 m75 < <(stats "$f" 3)
		med[$sc-$name]=$w
		fmt_ms() { awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { printf "%.1f (%.1f-%.1f)", a / 1000, b / 1000, c / 1000 }'; }
		fmt_mib() { awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { printf "%.1f (%.1f-%.1f)", a / 1024, b / 1024, c / 1024 }'; }
		if [ "$sc" = parallel ]; then cpu=-; rss=-; fails=${par_fail[$name]}; else
			cpu=$(fmt_ms "$c" "$c25" "$c75"); rss=$(fmt_mib "$m" "$m25" "$m75"); fails=0; fi
		echo "$sc $name $(awk -v a="$w" 'BEGIN { print a / 1000 }')" >>"$DAT"
		printf '| %s | %s | %s | %s | %s | @%s-%s-crun | @%s-%s-runc | %s |\n' "$sc" "$name" \
			"$(fmt_ms "$w" "$w25" "$w75")" "$cpu" "$rss" "$sc" "$name" "$sc" "$name" "$fails" >>"$MD"
	done
done
# the ratios, now that every median is known
for sc in "${scenarios[@]}"; do
	for name in "${names[@]}"; do
		for other in crun runc; do
			r=n/a
			if [ -n "${med[$sc-$name]:-}" ] && [ -n "${med[$sc-$other]:-}" ]; then
				r=$(awk -v a="${med[$sc-$name]}" -v b="${med[$sc-$other]}" 'BEGIN { printf "%.2f", a / b }')
			fi
			sed -i "s|@$sc-$name-$other|$r|" "$MD"
		done
	done
done

if [ -n "$CKPT" ] && [ -n "${bin[runc]:-}" ]; then
	echo "== checkpoint/restore (bench/checkpoint-bench.sh)"
	TERN_BIN=$TERN_BIN RUNC_BIN=${bin[runc]} "$REPO/bench/checkpoint-bench.sh" -n 5 | tee "$WORK/ckpt.out"
	{
		echo
		echo "Checkpoint and restore, tern and runc on the same criu (crun here is"
		echo "built without criu), median of 5 (bench/checkpoint-bench.sh):"
		echo
		echo '```'
		cat "$WORK/ckpt.out"
		echo '```'
	} >>"$MD"
fi

# the plot: median wall time per scenario and runtime
if ! command -v gnuplot >/dev/null; then
	echo "runtime-bench.sh: installing gnuplot-nox for the plot" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gnuplot-nox </dev/null >&2 ||
		echo "runtime-bench.sh: no gnuplot: the table has no plot" >&2
fi
if command -v gnuplot >/dev/null; then
	PNG=$RESULTS/runtime-$STAMP.png
	awk '{ v[$1 " " $2] = $3; s[$1] = 1; r[$2] = 1; if (!($1 in so)) { so[$1] = ++ns; sn[ns] = $1 } if (!($2 in ro)) { ro[$2] = ++nr; rn[nr] = $2 } }
		END { printf "scenario"; for (j = 1; j <= nr; j++) printf " %s", rn[j]; print ""
			for (i = 1; i <= ns; i++) { printf "%s", sn[i]; for (j = 1; j <= nr; j++) { k = sn[i] " " rn[j]; printf " %s", (k in v) ? v[k] : "NaN" } print "" } }' \
		"$DAT" >"$WORK/plot.tab"
	ncol=$(head -1 "$WORK/plot.tab" | wc -w)
	gnuplot <<GP
set terminal pngcairo size 900,500 noenhanced
set output "$PNG"
set title "tern, crun, runc: median wall time (ms), $(date -u +%Y-%m-%d)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel "ms (log)"
set key top left
plot for [c=2:$ncol] "$WORK/plot.tab" using c:xtic(1) title columnheader(c)
GP
	echo "![median wall time](runtime-$STAMP.png)" >>"$MD"
fi
echo
cat "$MD"
echo
echo "written: $MD"
