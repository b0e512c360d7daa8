#!/bin/bash
# Lazy-pages restore with and without a user namespace: a container holding
# 16 MiB and one holding 256 MiB of written memory (tests/helpers/memhash.c)
# is checkpointed and restored (`restore -d`, which takes the memory through
# `criu lazy-pages` where it can), and snapshotted and cloned, in three
# shapes, interleaved in one run:
#   plain      no user namespace: the restored processes open their
#              userfaultfd themselves
#   userns     a user namespace of its own (ids mapped 0-65535 to the
#              host's): the userfaultfd through /dev/userfaultfd and
#              tern-uffd-preload.so in criu
#   userns-fill the same, with /dev/userfaultfd hidden (a file bound over
#              it in a private mount namespace): criu's page-by-page fill,
#              what a user namespace got before (restore only)
# Each time is wall clock until the command returns with the container
# running (restore -d: every page in; clone: running, the rest filled
# behind it). After each the memory is hashed again and compared, and the
# restore log must show the lazy restore (plain, userns) or not
# (userns-fill). Prints per shape and size the median, min and max.
#
#   sudo bench/lazy-userns-bench.sh [-n RUNS] [-w WARMUP] [-m "16 256"]
#
# TERN_BIN and CRIU choose the binaries (default: ./tern, the criu
# scripts/install-criu.sh installs).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=5
WARMUP=1
MIBS="16 256"
while getopts n:w:m:h opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	m) MIBS=$OPTARG ;;
	*)
		sed -n '2,25p' "$0"
		exit 2
		;;
	esac
done
[ "$(id -u)" -eq 0 ] || {
	echo "lazy-userns-bench.sh: run as root" >&2
	exit 1
}

TERN_BIN=${TERN_BIN:-$REPO/tern}
CRIU=${CRIU:-$("$REPO/scripts/install-criu.sh" 2>/dev/null | tail -1)}
[ -x "$CRIU" ] || {
	echo "lazy-userns-bench.sh: no criu (run scripts/install-criu.sh)" >&2
	exit 1
}

WORK=$(mktemp -d /tmp/tern-lazy-userns-bench.XXXXXX)
ROOT=$WORK/root
cleanup() {
	for id in $("$TERN_BIN" --root "$ROOT" list -q 2>/dev/null); do
		"$TERN_BIN" --root "$ROOT" delete -f "$id" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# one bundle per shape
for shape in plain userns; do
	b=$WORK/bundle-$shape
	mkdir -p "$b/rootfs"/{bin,proc,sys,dev,tmp,etc}
	cp /bin/busybox "$b/rootfs/bin/busybox"
	ln -s busybox "$b/rootfs/bin/sh"
	ln -s busybox "$b/rootfs/bin/sleep"
	gcc -static -O2 -o "$b/rootfs/bin/memhash" "$REPO/tests/helpers/memhash.c"
	(cd "$b" && "$TERN_BIN" spec)
	jq '.process.terminal = false | .root.readonly = false' "$b/config.json" >"$WORK/c"
	if [ "$shape" = userns ]; then
		jq '.linux.namespaces += [{"type": "user"}]
			| .linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
			| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]' \
			"$WORK/c" >"$WORK/c2"
		mv "$WORK/c2" "$WORK/c"
	fi
	mv "$WORK/c" "$b/config.json"
done
touch "$WORK/not-a-device"

t() { "$TERN_BIN" --root "$ROOT" "$@" </dev/null >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; return 1; }; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
stats() { sort -n | awk '{a[NR]=$1} END {if (!NR) exit; m=(NR%2)?a[(NR+1)/2]:int((a[NR/2]+a[NR/2+1])/2); printf "%d %d %d %d", m, a[1], a[NR], NR}'; }

wait_file() {
	for _ in $(seq 1200); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	echo "lazy-userns-bench.sh: timed out waiting for $1" >&2
	return 1
}

# start SHAPE MIB ID: ID runs memhash MIB in SHAPE's bundle; prints its hash.
start() {
	local b=$WORK/bundle-${1%-fill}
	rm -f "$b/rootfs/tmp/hash"
	jq ".process.args = [\"/bin/sh\", \"-c\", \"/bin/memhash $2 /tmp/hash & exec sleep 100000\"]" \
		"$b/config.json" >"$WORK/c"
	mv "$WORK/c" "$b/config.json"
	# (stdio /dev/null: a restore hands the init its own in their place)
	"$TERN_BIN" --root "$ROOT" run -d -b "$b" "$3" </dev/null >/dev/null 2>&1
	wait_file "$b/rootfs/tmp/hash"
	cut -d' ' -f2 "$b/rootfs/tmp/hash"
}

# rehash ID ROOTFS: memhash in ID hashes its memory again; prints the hash.
rehash() {
	local init m
	init=$("$TERN_BIN" --root "$ROOT" state "$1" | jq -r .pid)
	m=$(pgrep -P "$init" -x memhash)
	rm -f "$2/tmp/hash"
	kill -USR1 "$m"
	wait_file "$2/tmp/hash"
	grep '^again ' "$2/tmp/hash" | cut -d' ' -f2
}

# restore_one SHAPE MIB N: checkpoint and restore -d; appends the ms.
restore_one() {
	local shape=$1 mib=$2 id="r-$1-$2-$3" img="$WORK/img-$1-$2-$3" b=$WORK/bundle-${1%-fill} h1 h2 t0 t1
	h1=$(start "$shape" "$mib" "$id")
	t checkpoint --image-path "$img" "$id"
	t0=$(now_ms)
	if [ "$shape" = userns-fill ]; then
		unshare -m --propagation private sh -c 'mount --bind "$1" /dev/userfaultfd && shift && exec "$@"' \
			sh "$WORK/not-a-device" "$TERN_BIN" --root "$ROOT" restore -d --image-path "$img" -b "$b" "$id" \
			</dev/null >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; return 1; }
	else
		t restore -d --image-path "$img" -b "$b" "$id"
	fi
	t1=$(now_ms)
	if [ "$shape" = userns-fill ]; then
		! grep -q 'Lazy restore skips' "$img/restore.log"
	else
		grep -q 'Lazy restore skips' "$img/restore.log" || {
			echo "lazy-userns-bench.sh: $shape $mib MiB: the restore was not lazy" >&2
			return 1
		}
	fi
	h2=$(rehash "$id" "$b/rootfs")
	[ "$h1" = "$h2" ] || {
		echo "lazy-userns-bench.sh: $shape $mib MiB: memory differs after restore" >&2
		return 1
	}
	echo "$((t1 - t0))" >>"$WORK/restore-$shape-$mib"
	t delete -f "$id"
	rm -rf "$img"
}

# clone_one SHAPE MIB N: snapshot, then clone (timed); appends the ms.
clone_one() {
	local shape=$1 mib=$2 id="c-$1-$2-$3" h1 h2 t0 t1
	h1=$(start "$shape" "$mib" "$id")
	t snapshot "$id" s
	t0=$(now_ms)
	rm -f "$WORK/clone-debug.log"
	if ! "$TERN_BIN" --root "$ROOT" --debug --log "$WORK/clone-debug.log" clone "$id" s "$id-c" \
		</dev/null >"$WORK/out" 2>&1; then
		sed -n 1p "$WORK/out" >"$WORK/clone-$shape-$mib.refused"
		t delete -f "$id"
		return 0
	fi
	t1=$(now_ms)
	if [ "$shape" = userns ] && ! grep -q 'through /dev/userfaultfd' "$WORK/clone-debug.log"; then
		echo "lazy-userns-bench.sh: $shape $mib MiB: the clone was not lazy" >&2
		return 1
	fi
	h2=$(rehash "$id-c" "$ROOT/@clones/$id-c.bundle/rootfs")
	[ "$h1" = "$h2" ] || {
		echo "lazy-userns-bench.sh: $shape $mib MiB: clone's memory differs" >&2
		return 1
	}
	echo "$((t1 - t0))" >>"$WORK/clone-$shape-$mib"
	t delete -f "$id-c"
	t delete -f "$id"
}

echo "criu: $CRIU ($("$CRIU" --version | head -1)); tern: $TERN_BIN ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo ?)); runs: $RUNS; $(nproc) cpus; $(uname -r)"
echo "vm.unprivileged_userfaultfd=$(cat /proc/sys/vm/unprivileged_userfaultfd); /dev/userfaultfd: $(stat -c '%A %U %t:%T' /dev/userfaultfd 2>/dev/null || echo none)"
for n in $(seq "$WARMUP"); do
	for shape in plain userns userns-fill; do
		restore_one "$shape" 16 "w$n" || echo "lazy-userns-bench.sh: $shape warm-up failed" >&2
		rm -f "$WORK/restore-$shape-16"
	done
done
for mib in $MIBS; do
	for n in $(seq "$RUNS"); do
		for shape in plain userns userns-fill; do
			restore_one "$shape" "$mib" "$n" || echo "lazy-userns-bench.sh: $shape $mib MiB restore run $n failed" >&2
		done
		for shape in plain userns; do
			clone_one "$shape" "$mib" "$n" || echo "lazy-userns-bench.sh: $shape $mib MiB clone run $n failed" >&2
		done
	done
done

printf '%-12s %-8s %6s %22s %22s\n' shape op memory "median ms (min-max)" "vs plain (median)"
for op in restore clone; do
	for mib in $MIBS; do
		base=$(stats <"$WORK/$op-plain-$mib" 2>/dev/null | cut -d' ' -f1 || true)
		for shape in plain userns userns-fill; do
			f=$WORK/$op-$shape-$mib
			if [ -s "$WORK/$op-$shape-$mib.refused" ] && [ ! -s "$f" ]; then
				printf '%-12s %-8s %4s M   refused: %s\n' "$shape" "$op" "$mib" "$(cut -c1-100 "$f.refused")"
				continue
			fi
			[ -s "$f" ] || continue
			read -r med lo hi cnt <<<"$(stats <"$f")"
			ratio=-
			[ -n "$base" ] && ratio=$(awk -v a="$med" -v b="$base" 'BEGIN{printf "%.2f", a/b}')
			printf '%-12s %-8s %4s M %10s (%s-%s, n=%s) %12s\n' "$shape" "$op" "$mib" "$med" "$lo" "$hi" "$cnt" "$ratio"
		done
	done
done
