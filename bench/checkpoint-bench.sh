#!/bin/bash
# Checkpoint/restore benchmark: a container holding 16 MiB and one holding
# 256 MiB of written memory (tests/helpers/memhash.c), checkpointed and
# restored by tern and by runc in the same run, interleaved. Both drive the
# same criu (runc through `--criu`, tern through libcriu). Prints, per
# runtime and size, the median wall time of `checkpoint` and of
# `restore -d`, the image size, and the ratios tern/runc. After every restore
# the memory is checksummed again and compared, so a fast but wrong restore
# does not count.
#
#   sudo bench/checkpoint-bench.sh [-n RUNS] [-w WARMUP]
#
# TERN_BIN, RUNC_BIN and CRIU choose the binaries (default: ./tern, runc
# from PATH, the criu scripts/install-criu.sh installs).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=5
WARMUP=1
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
[ "$(id -u)" -eq 0 ] || {
	echo "checkpoint-bench.sh: run as root" >&2
	exit 1
}

TERN_BIN=${TERN_BIN:-$REPO/tern}
RUNC_BIN=${RUNC_BIN:-$(command -v runc || true)}
CRIU=${CRIU:-$("$REPO/scripts/install-criu.sh" 2>/dev/null | tail -1)}
[ -x "$CRIU" ] || {
	echo "checkpoint-bench.sh: no criu (run scripts/install-criu.sh)" >&2
	exit 1
}

WORK=$(mktemp -d /tmp/tern-ckpt-bench.XXXXXX)
trap 'for r in tern runc; do for id in $(ls "$WORK/root-$r" 2>/dev/null); do rt_cmd $r delete -f "$id" >/dev/null 2>&1 || true; done; done; rm -rf "$WORK"' EXIT

BUNDLE=$WORK/bundle
mkdir -p "$BUNDLE/rootfs"/{bin,proc,sys,dev,tmp,etc}
cp /bin/busybox "$BUNDLE/rootfs/bin/busybox"
gcc -static -O2 -o "$BUNDLE/rootfs/bin/memhash" "$REPO/tests/helpers/memhash.c"
(cd "$BUNDLE" && "$TERN_BIN" spec)
jq '.process.terminal = false | .root.readonly = false' "$BUNDLE/config.json" >"$WORK/c"
mv "$WORK/c" "$BUNDLE/config.json"

rt_cmd() {
	local r=$1
	shift
	case $r in
	tern) "$TERN_BIN" --root "$WORK/root-tern" --criu "$CRIU" "$@" ;;
	runc) "$RUNC_BIN" --root "$WORK/root-runc" --criu "$CRIU" "$@" ;;
	esac
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

wait_file() {
	for _ in $(seq 600); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	echo "checkpoint-bench.sh: timed out waiting for $1" >&2
	return 1
}

# one RUNTIME MIB N: a full cycle; appends "ckpt restore size" to a file.
one() {
	local r=$1 mib=$2 n=$3 id="bench-$1-$2-$3" img="$WORK/img-$1-$2-$3" t0 t1 t2 h1 h2
	local hash=$BUNDLE/rootfs/tmp/hash
	rm -f "$hash"
	jq ".process.args = [\"/bin/memhash\", \"$mib\", \"/tmp/hash\"]" "$BUNDLE/config.json" >"$WORK/c"
	mv "$WORK/c" "$BUNDLE/config.json"
	# stdio to /dev/null for both (runc takes the same stdio back on restore)
	rt_cmd "$r" run -d -b "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
	wait_file "$hash"
	h1=$(cut -d' ' -f2 "$hash")
	t0=$(now_ms)
	rt_cmd "$r" checkpoint --image-path "$img" "$id" </dev/null >"$WORK/out" 2>&1 ||
		{ cat "$WORK/out" >&2; return 1; }
	t1=$(now_ms)
	# (both delete the container after a checkpoint)
	rm -f "$hash"
	t2=$(now_ms)
	rt_cmd "$r" restore -d --image-path "$img" -b "$BUNDLE" "$id" </dev/null >"$WORK/out" 2>&1 ||
		{ cat "$WORK/out" >&2; return 1; }
	t3=$(now_ms)
	rt_cmd "$r" kill "$id" USR1
	wait_file "$hash"
	h2=$(cut -d' ' -f2 "$hash")
	[ "$h1" = "$h2" ] || {
		echo "checkpoint-bench.sh: $r $mib MiB: memory differs after restore" >&2
		return 1
	}
	echo "$((t1 - t0)) $((t3 - t2)) $(du -sm "$img" | cut -f1)" >>"$WORK/res-$r-$mib"
	rt_cmd "$r" delete -f "$id"
	rm -rf "$img"
}

runtimes=(tern)
[ -n "$RUNC_BIN" ] && runtimes+=(runc)
echo "criu: $CRIU ($("$CRIU" --version | head -1)); runs: $RUNS; $(nproc) cpus"
# warm-up cycles (page cache, criu's kernel feature probing), not counted
for n in $(seq "$WARMUP"); do
	for r in "${runtimes[@]}"; do
		one "$r" 16 "w$n" || echo "checkpoint-bench.sh: $r warm-up failed" >&2
		rm -f "$WORK/res-$r-16"
	done
done
for mib in 16 256; do
	for n in $(seq "$RUNS"); do
		for r in "${runtimes[@]}"; do
			one "$r" "$mib" "$n" || echo "checkpoint-bench.sh: $r $mib MiB run $n failed" >&2
		done
	done
done

printf '%-6s %8s %16s %14s %10s\n' runtime memory "checkpoint ms" "restore ms" "image MiB"
for mib in 16 256; do
	for r in "${runtimes[@]}"; do
		f=$WORK/res-$r-$mib
		[ -s "$f" ] || {
			printf '%-6s %6s M %16s\n' "$r" "$mib" failed
			continue
		}
		c=$(cut -d' ' -f1 "$f" | median)
		s=$(cut -d' ' -f2 "$f" | median)
		z=$(cut -d' ' -f3 "$f" | median)
		printf '%-6s %6s M %16s %14s %10s\n' "$r" "$mib" "$c" "$s" "$z"
		eval "c_${r}_$mib=$c s_${r}_$mib=$s"
	done
	if [ -n "${c_runc_256:-}${c_runc_16:-}" ] && [ -s "$WORK/res-tern-$mib" ] && [ -s "$WORK/res-runc-$mib" ]; then
		eval "ct=\$c_tern_$mib cr=\$c_runc_$mib st=\$s_tern_$mib sr=\$s_runc_$mib"
		echo "  $mib MiB tern/runc: checkpoint $(awk -v a="$ct" -v b="$cr" 'BEGIN{printf "%.2f", a/b}')," \
			"restore $(awk -v a="$st" -v b="$sr" 'BEGIN{printf "%.2f", a/b}')"
	fi
done
