#!/bin/bash
# Snapshot / rollback / clone benchmark: a container holding 16 MiB and one
# holding 256 MiB of written memory (tests/helpers/memhash.c), whose rootfs
# changes by 1 MiB between two snapshots. Per size and run:
#   tern:  snapshot a; write 1 MiB; snapshot b; rollback to a (a CRIU
#          restore); snapshot --keep-warm w, wait for its spare, write
#          1 MiB, rollback to w (the spare swapped in); clone 10
#          containers from a, one after the other (timed until the 10th
#          runs, and until every clone's memory is filled behind them);
#          10 spares made with clone --spares 10 (not timed: the
#          "initialise once"), then 10 clones that take them, timed;
#          10 more with --share-memory, ksmd on and fast: the MiB it
#          merged once that stopped growing (ksmd's settings put back)
#   runc, by hand (it has no such commands): checkpoint --leave-running as
#          the snapshot (memory only: runc keeps no rootfs); delete -f and
#          restore -d from those images as the rollback; 10 restores -d of
#          the images under new ids as the clones
# Each time is wall clock, from the command's start until it returns with
# the container running. After every rollback the memory is checksummed
# again and compared, so a fast but wrong rollback does not count. Prints
# the medians and the ratios tern/runc.
#
#   sudo bench/snapshot-bench.sh [-n RUNS] [-w WARMUP] [-m "16 256"]
#
# Run it alone: "filled" waits for every tern-filler on the machine.
#
# TERN_BIN, RUNC_BIN and CRIU choose the binaries (default: ./tern, runc
# from PATH, the criu scripts/install-criu.sh installs). The state roots are
# in /run, as tern's and runc's defaults are (a tmpfs on a stock Debian
# host; on the development machine /run is on the root ext4).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=3
WARMUP=1
MIBS="16 256"
while getopts n:w:m:h opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	m) MIBS=$OPTARG ;;
	*)
		sed -n '2,24p' "$0"
		exit 2
		;;
	esac
done
[ "$(id -u)" -eq 0 ] || {
	echo "snapshot-bench.sh: run as root" >&2
	exit 1
}

TERN_BIN=${TERN_BIN:-$REPO/tern}
RUNC_BIN=${RUNC_BIN:-$(command -v runc || true)}
CRIU=${CRIU:-$("$REPO/scripts/install-criu.sh" 2>/dev/null | tail -1)}
[ -x "$CRIU" ] || {
	echo "snapshot-bench.sh: no criu (run scripts/install-criu.sh)" >&2
	exit 1
}

WORK=$(mktemp -d /tmp/tern-snap-bench.XXXXXX)
RUNROOT=$(mktemp -d /run/tern-snap-bench.XXXXXX)
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
gcc -static -O2 -o "$BUNDLE/rootfs/bin/memhash" "$REPO/tests/helpers/memhash.c"
(cd "$BUNDLE" && "$TERN_BIN" spec)
jq '.process.terminal = false | .root.readonly = false' "$BUNDLE/config.json" >"$WORK/c"
mv "$WORK/c" "$BUNDLE/config.json"

rt_cmd() {
	local r=$1
	shift
	case $r in
	tern) "$TERN_BIN" --root "$RUNROOT/tern" --criu "$CRIU" "$@" ;;
	runc) "$RUNC_BIN" --root "$RUNROOT/runc" --criu "$CRIU" "$@" ;;
	esac
}

# now_ms VAR: the wall clock in ms into VAR, from bash's own clock (no
# fork of date(1), which costs milliseconds on a loaded machine)
now_ms() { printf -v "$1" '%s' $((${EPOCHREALTIME/./} / 1000)); }

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

wait_file() {
	for _ in $(seq 1200); do
		[ -s "$1" ] && grep -q "${2:-}" "$1" && return 0
		sleep 0.05
	done
	echo "snapshot-bench.sh: timed out waiting for $1" >&2
	return 1
}

# timed OUTVAR CMD...: run CMD (output to $WORK/out), its wall ms in OUTVAR
timed() {
	local var=$1 t0 t1
	shift
	now_ms t0
	"$@" </dev/null >"$WORK/out" 2>&1 || {
		cat "$WORK/out" >&2
		return 1
	}
	now_ms t1
	printf -v "$var" '%s' $((t1 - t0))
}

check_hash() {
	local r=$1 id=$2 want=$3 hash=$4
	rt_cmd "$r" exec "$id" sh -c 'kill -USR1 $(pidof memhash)' </dev/null >/dev/null 2>&1 ||
		rt_cmd "$r" kill -a "$id" USR1 >/dev/null 2>&1
	wait_file "$hash" again
	[ "$(cut -d' ' -f2 "$hash")" = "$want" ] || {
		echo "snapshot-bench.sh: $r: memory differs after the rollback" >&2
		return 1
	}
}

# wait_spares ID NAME N: N of tern's clone spares of NAME are ready.
wait_spares() {
	local j
	for _ in $(seq 1200); do
		j=$(rt_cmd tern snapshot --list --format json "$1" | jq -c --arg n "$2" '.[] | select(.name == $n) | .spares // {}')
		[ "$(jq -r .ready <<<"$j")" = "$3" ] && return 0
		[ "$(jq -r .failed <<<"$j")" = true ] && break
		sleep 0.05
	done
	echo "snapshot-bench.sh: the clone spares of $2 are $j" >&2
	return 1
}

# wait_warm ID NAME: tern's warm spare of NAME is ready.
wait_warm() {
	local st
	for _ in $(seq 1200); do
		st=$(rt_cmd tern snapshot --list --format json "$1" | jq -r --arg n "$2" '.[] | select(.name == $n) | .warm')
		[ "$st" = ready ] && return 0
		[ "$st" = failed ] && break
		sleep 0.05
	done
	echo "snapshot-bench.sh: the warm spare of $2 is $st" >&2
	return 1
}

# ksm_shared ID MIB: 10 clones of ID's snapshot a with --share-memory,
# ksmd on and scanning fast; sets sh to the MiB ksmd merged (pages_sharing)
# once it stops growing (or after 60 s), and puts ksmd's settings back.
KSM=/sys/kernel/mm/ksm
ksm_shared() {
	local id=$1 mib=$2 saved i last=-1 now same=0
	saved="$(cat $KSM/run) $(cat $KSM/pages_to_scan) $(cat $KSM/sleep_millisecs)"
	echo 4000 >$KSM/pages_to_scan
	echo 10 >$KSM/sleep_millisecs
	echo 1 >$KSM/run
	for i in $(seq 0 9); do
		rt_cmd tern clone --share-memory "$id" a "$id-k$i" </dev/null >/dev/null 2>&1 || true
	done
	for _ in $(seq 120); do
		sleep 0.5
		now=$(cat $KSM/pages_sharing)
		if [ "$now" -eq "$last" ] && [ "$now" -gt 0 ]; then
			same=$((same + 1))
			[ "$same" -ge 4 ] && break
		else
			same=0
		fi
		last=$now
	done
	sh=$(($(cat $KSM/pages_sharing) * 4 / 1024))
	for i in $(seq 0 9); do rt_cmd tern delete -f "$id-k$i" >/dev/null 2>&1 || true; done
	read -r i last now <<<"$saved"
	echo "$last" >$KSM/pages_to_scan
	echo "$now" >$KSM/sleep_millisecs
	echo "$i" >$KSM/run
}

# one RUNTIME MIB N: appends "snapshot second-snapshot rollback
# warm-rollback clone10 clone10-filled" ms (warm-rollback 0 for runc, which
# has none), "shared" MiB (10 clones with --share-memory; 0 for runc) and
# "spares" ms (10 clones from 10 clone spares; 0 for runc).
one() {
	local r=$1 mib=$2 n=$3 id="sb-$1-$2-$3" hash=$BUNDLE/rootfs/tmp/hash h1 a b rb rw=0 cl fl sh=0 sp=0 i
	rm -f "$hash" "$BUNDLE/rootfs/tmp/changing"
	jq ".process.args = [\"/bin/sh\", \"-c\", \"/bin/memhash $mib /tmp/hash & exec sleep 100000\"]" \
		"$BUNDLE/config.json" >"$WORK/c"
	mv "$WORK/c" "$BUNDLE/config.json"
	rt_cmd "$r" run -d -b "$BUNDLE" "$id" </dev/null >/dev/null 2>&1
	wait_file "$hash" first
	h1=$(cut -d' ' -f2 "$hash")
	if [ "$r" = tern ]; then
		timed a rt_cmd tern snapshot "$id" a
		head -c $((1 << 20)) /dev/urandom >"$BUNDLE/rootfs/tmp/changing"
		timed b rt_cmd tern snapshot "$id" b
		rm -f "$hash.again"
		timed rb rt_cmd tern rollback "$id" a
		[ ! -e "$BUNDLE/rootfs/tmp/changing" ] || {
			echo "snapshot-bench.sh: tern: the rootfs was not rolled back" >&2
			return 1
		}
		check_hash tern "$id" "$h1" "$hash"
		rt_cmd tern snapshot --keep-warm "$id" w </dev/null >/dev/null
		wait_warm "$id" w
		head -c $((1 << 20)) /dev/urandom >"$BUNDLE/rootfs/tmp/changing"
		rm -f "$hash.again"
		timed rw rt_cmd tern rollback --format json "$id" w
		jq -e '.warm == true' "$WORK/out" >/dev/null || {
			echo "snapshot-bench.sh: tern: the warm spare was not used: $(cat "$WORK/out")" >&2
			return 1
		}
		[ ! -e "$BUNDLE/rootfs/tmp/changing" ] || {
			echo "snapshot-bench.sh: tern: the rootfs was not rolled back (warm)" >&2
			return 1
		}
		check_hash tern "$id" "$h1" "$hash"
		local t0 t1
		now_ms t0
		for i in $(seq 0 9); do
			rt_cmd tern clone "$id" a "$id-c$i" </dev/null >"$WORK/out" 2>&1 || {
				cat "$WORK/out" >&2
				return 1
			}
		done
		now_ms t1
		cl=$((t1 - t0))
		# (a clone returns running; its memory is filled behind it)
		while pgrep -x tern-filler >/dev/null; do sleep 0.01; done
		now_ms t1
		fl=$((t1 - t0))
		for i in $(seq 0 9); do rt_cmd tern delete -f "$id-c$i"; done
		rt_cmd tern clone --spares 10 "$id" a </dev/null >/dev/null
		wait_spares "$id" a 10
		now_ms t0
		for i in $(seq 0 9); do
			rt_cmd tern clone --format json "$id" a "$id-s$i" </dev/null >"$WORK/out-s$i" 2>&1 || {
				cat "$WORK/out-s$i" >&2
				return 1
			}
		done
		now_ms t1
		sp=$((t1 - t0))
		for i in $(seq 0 9); do
			jq -e '.spare == true' "$WORK/out-s$i" >/dev/null || {
				echo "snapshot-bench.sh: tern: the clone took no spare: $(cat "$WORK/out-s$i")" >&2
				return 1
			}
		done
		# (a clone from a spare has the snapshot's memory too)
		check_hash tern "$id-s0" "$h1" "$RUNROOT/tern/@clones/$id-s0.bundle/rootfs/tmp/hash"
		for i in $(seq 0 9); do rt_cmd tern delete -f "$id-s$i"; done
		rt_cmd tern clone --spares 0 "$id" a </dev/null >/dev/null
		ksm_shared "$id" "$mib"
	else
		local img=$WORK/img-$id img2=$WORK/img2-$id
		timed a rt_cmd runc checkpoint --leave-running --image-path "$img" "$id"
		head -c $((1 << 20)) /dev/urandom >"$BUNDLE/rootfs/tmp/changing"
		timed b rt_cmd runc checkpoint --leave-running --image-path "$img2" "$id"
		local t0 t1
		now_ms t0
		rt_cmd runc delete -f "$id"
		rt_cmd runc restore -d --image-path "$img" -b "$BUNDLE" "$id" </dev/null >"$WORK/out" 2>&1 || {
			cat "$WORK/out" >&2
			return 1
		}
		now_ms t1
		rb=$((t1 - t0))
		check_hash runc "$id" "$h1" "$hash"
		now_ms t0
		for i in $(seq 0 9); do
			rt_cmd runc restore -d --image-path "$img" -b "$BUNDLE" "$id-c$i" </dev/null >"$WORK/out" 2>&1 || {
				cat "$WORK/out" >&2
				return 1
			}
		done
		now_ms t1
		cl=$((t1 - t0))
		fl=$cl
		for i in $(seq 0 9); do rt_cmd runc delete -f "$id-c$i"; done
		rm -rf "$img" "$img2"
	fi
	echo "$a $b $rb $rw $cl $fl $sh $sp" >>"$WORK/res-$r-$mib"
	rt_cmd "$r" delete -f "$id"
}

runtimes=(tern)
[ -n "$RUNC_BIN" ] && runtimes+=(runc)
echo "criu: $CRIU ($("$CRIU" --version | head -1)); runs: $RUNS; $(nproc) cpus; state in /run ($(stat -f -c %T /run))"
for n in $(seq "$WARMUP"); do
	for r in "${runtimes[@]}"; do
		one "$r" 16 "w$n" || echo "snapshot-bench.sh: $r warm-up failed" >&2
		rm -f "$WORK/res-$r-16"
	done
done
for mib in $MIBS; do
	for n in $(seq "$RUNS"); do
		for r in "${runtimes[@]}"; do
			one "$r" "$mib" "$n" || echo "snapshot-bench.sh: $r $mib MiB run $n failed" >&2
		done
	done
done

printf '%-6s %8s %12s %14s %12s %12s %12s %12s %12s %12s\n' runtime memory "snapshot ms" "2nd snap. ms" \
	"rollback ms" "warm rb. ms" "10 clones ms" "...filled ms" "shared MiB" "10 spares ms"
for mib in $MIBS; do
	for r in "${runtimes[@]}"; do
		f=$WORK/res-$r-$mib
		[ -s "$f" ] || {
			printf '%-6s %6s M %12s\n' "$r" "$mib" failed
			continue
		}
		for k in 1 2 3 4 5 6 7 8; do
			eval "v${k}_${r}=$(cut -d' ' -f$k "$f" | median)"
		done
		[ "$r" = tern ] || { v4_runc=-; v8_runc=-; }
		eval "printf '%-6s %6s M %12s %14s %12s %12s %12s %12s %12s %12s\n' $r $mib \$v1_$r \$v2_$r \$v3_$r \$v4_$r \$v5_$r \$v6_$r \$v7_$r \$v8_$r"
	done
	if [ -s "$WORK/res-tern-$mib" ] && [ -s "$WORK/res-runc-$mib" ]; then
		echo "  $mib MiB tern/runc: snapshot $(awk -v a="$v1_tern" -v b="$v1_runc" 'BEGIN{printf "%.2f", a/b}')," \
			"2nd $(awk -v a="$v2_tern" -v b="$v2_runc" 'BEGIN{printf "%.2f", a/b}')," \
			"rollback $(awk -v a="$v3_tern" -v b="$v3_runc" 'BEGIN{printf "%.2f", a/b}')," \
			"warm rollback $(awk -v a="$v4_tern" -v b="$v3_runc" 'BEGIN{printf "%.3f", a/b}') (of runc's restore)," \
			"10 clones $(awk -v a="$v5_tern" -v b="$v5_runc" 'BEGIN{printf "%.2f", a/b}')," \
			"10 from spares $(awk -v a="$v8_tern" -v b="$v5_runc" 'BEGIN{printf "%.3f", a/b}') (of runc's 10 restores)"
	fi
done
