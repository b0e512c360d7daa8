#!/bin/bash
# Live migration benchmark: `tern migrate` beside the same move done by hand
# with runc, between two "nodes" on this machine (network namespaces joined
# by a veth pair, 10.231.0.1 and 10.231.0.2, each node with its own state
# root and bundle, as in tests/integration/migrate.bats).
#
#   sudo bench/migrate-bench.sh [-n RUNS] [-w WARMUP] [-k DIR] [-r] [-a MIB]
#
# -a MIB measures only the rootfs sync under an appending workload (issue
# 35): both nodes hold a file of MIB MiB in the rootfs, which a process of
# the container appends a line to every 10 ms; tern stop-and-copy of the
# 16 MiB idle stamper is timed with that appender and with the same
# appender writing to an empty file instead, and the bytes of each rootfs
# round are shown (what the big file costs is the difference of the
# downtimes).
# -k DIR keeps every counted move's JSON events (tern, both sides) there.
# -r runs the whole benchmark in a mount namespace of its own whose /run is
# a tmpfs, as on a stock Debian host. criu caches its kernel probes in
# /run/criu.kdat only on a tmpfs; where /run is not one (this machine) tern
# makes that cache itself (src/criu/criu-kdat.h), which runc's criu then reads
# too, so -r now changes little more than where state and images live.
#
# The container runs tests/helpers/stamper.c: it holds 16 or 256 MiB,
# dirties 0 (idle) or 10 MiB/s of it, and stamps the clock every
# millisecond. After a warm-up its largest gap is reset (SIGUSR1); the
# largest gap seen once it runs on the target is the downtime of the move.
# (The clock is CLOCK_REALTIME: criu restores into a time namespace whose
# monotonic clock hides most of the stop; see stamper.c.)
# Total is the wall time from the move's first command until the container
# runs on the target (tern: `tern migrate` returned, which in post-copy is
# once every page has arrived; runc: `runc restore -d` returned).
#
# tern: every mode this kernel supports (stop-and-copy, post-copy, pre-copy
# only where `criu check --feature mem_dirty_track` passes), also showing
# what tern migrate itself reports (downtime_ms, total_ms of its JSON done
# event). runc by hand: `runc checkpoint --image-path` on node A, the image
# directory and the whole rootfs (about 1 MiB here) as one tar stream over
# the veth (socat, 1 MiB blocks, no encryption; deletions in the rootfs
# would not travel), `runc restore -d` on node B. Runs are fresh each time and
# interleaved (tern modes, then runc, for each run). After every move the
# stamper must run on the target with its counter gone on (the same
# process: its reset count survived) and its memory pattern intact
# (SIGUSR2 checks every page), or the run counts as failed. A second table
# splits each move into its steps: tern from its JSON events (before the
# freeze, criu dump, images sent, restore until the target's RUNNING),
# runc by hand (checkpoint, copy, restore).
#
# TERN_BIN, RUNC_BIN and CRIU choose the binaries (default: ./tern and its
# tern-migrate beside it, runc from PATH, the criu that
# scripts/install-criu.sh installs). fs.pipe-max-size is raised to 4 MiB
# for the run (criu's lazy page server needs it) and put back at the end.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=3
WARMUP=1
KEEP=""
RUN_TMPFS=""
APPEND_MIB=""
APPEND=0
while getopts n:w:k:ra:h opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	w) WARMUP=$OPTARG ;;
	k) KEEP=$OPTARG ;;
	r) RUN_TMPFS=1 ;;
	a) APPEND_MIB=$OPTARG ;;
	*)
		sed -n '2,50p' "$0"
		exit 2
		;;
	esac
done
[ "$(id -u)" -eq 0 ] || {
	echo "migrate-bench.sh: run as root" >&2
	exit 1
}
if [ -n "$RUN_TMPFS" ] && [ -z "${TERN_BENCH_IN_NS:-}" ]; then
	# the same arguments again, in a private mount namespace (its mounts,
	# the tmpfs and the network namespaces' bind mounts, go with it)
	exec env TERN_BENCH_IN_NS=1 unshare --mount --propagation private -- "$0" "$@"
fi
if [ -n "${TERN_BENCH_IN_NS:-}" ]; then
	mount -t tmpfs -o mode=0755 tmpfs /run
	echo "migrate-bench.sh: /run is a tmpfs in this run (-r): criu caches its kernel probes"
fi
for cmd in jq socat ss nsenter tar gcc; do
	command -v "$cmd" >/dev/null || {
		echo "migrate-bench.sh: $cmd is needed" >&2
		exit 1
	}
done

TERN_BIN=${TERN_BIN:-$REPO/tern}
RUNC_BIN=${RUNC_BIN:-$(command -v runc || true)}
CRIU=${CRIU:-$("$REPO/scripts/install-criu.sh" 2>/dev/null | tail -1)}
[ -x "$CRIU" ] || {
	echo "migrate-bench.sh: no criu (run scripts/install-criu.sh)" >&2
	exit 1
}
[ -x "$TERN_BIN" ] || {
	echo "migrate-bench.sh: no tern at $TERN_BIN (build it, or set TERN_BIN)" >&2
	exit 1
}

WORK=$(mktemp -d /tmp/tern-mig-bench.XXXXXX)
NA=tmbA-$$
NB=tmbB-$$
VETH=tmb$$
VETH=${VETH:0:12}
PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)

# stop_jobs: end this script's background jobs (a receiver, started as
# nsenter, which execs timeout; timeout passes the signal on to its whole
# process group).
stop_jobs() {
	local pid
	for pid in $(jobs -p); do
		kill -TERM "$pid" 2>/dev/null || true
	done
}

# clear_nodes: delete every container on both nodes (a failed move may
# leave one running on either).
clear_nodes() {
	local r node d
	for r in tern runc; do
		for node in A B; do
			for d in "$WORK/$node/root-$r"/*/; do
				[ -d "$d" ] || continue
				timeout -s KILL 20 "$(rt_bin $r)" --root "$WORK/$node/root-$r" delete -f "$(basename "$d")" >/dev/null 2>&1 || true
			done
		done
	done
}

cleanup() {
	stop_jobs
	clear_nodes
	ip netns del "$NA" 2>/dev/null || true
	ip netns del "$NB" 2>/dev/null || true
	echo "$PIPE_MAX_WAS" >/proc/sys/fs/pipe-max-size
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rt_bin() { if [ "$1" = tern ]; then echo "$TERN_BIN"; else echo "$RUNC_BIN"; fi; }

# The two nodes.
ip netns add "$NA"
ip netns add "$NB"
ip link add "${VETH}a" type veth peer name "${VETH}b"
ip link set "${VETH}a" netns "$NA"
ip link set "${VETH}b" netns "$NB"
ip -n "$NA" addr add 10.231.0.1/24 dev "${VETH}a"
ip -n "$NB" addr add 10.231.0.2/24 dev "${VETH}b"
for ns in "$NA" "$NB"; do
	ip -n "$ns" link set lo up
done
ip -n "$NA" link set "${VETH}a" up
ip -n "$NB" link set "${VETH}b" up

# on NODE CMD...: CMD in node A's or B's network namespace (nsenter rather
# than `ip netns exec`, which remounts /sys and hides the cgroups).
on() {
	local ns=$NA
	[ "$1" = B ] && ns=$NB
	shift
	nsenter --net="/run/netns/$ns" "$@"
}

[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size

TOKEN=$WORK/token
head -c 32 /dev/urandom | base64 >"$TOKEN"
chmod 600 "$TOKEN"

# The image both nodes have: the stamper and nothing else.
BASE=$WORK/base
mkdir -p "$BASE/rootfs"/{bin,proc,sys,dev,tmp,etc}
chmod 1777 "$BASE/rootfs/tmp"
gcc -static -O2 -Wall -Werror -o "$BASE/rootfs/bin/stamper" "$REPO/tests/helpers/stamper.c"
if [ -n "$APPEND_MIB" ]; then
	# appendrun FILE CMD...: a child appends "line N" to FILE every 10 ms,
	# then CMD runs as the container's init (the stamper, as always)
	cat >"$WORK/appendrun.c" <<'EOC'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	if (fork() == 0) {
		int fd = open(argv[1], O_WRONLY | O_APPEND | O_CLOEXEC);
		struct timespec ts = {0, 10000000};
		char line[64];
		if (fd < 0)
			_exit(1);
		for (unsigned long i = 1;; i++) {
			int n = snprintf(line, sizeof(line), "line %lu\n", i);
			if (write(fd, line, (size_t)n) != n)
				_exit(1);
			nanosleep(&ts, NULL);
		}
	}
	execv(argv[2], argv + 2);
	return 127;
}
EOC
	gcc -static -O2 -Wall -Werror -o "$BASE/rootfs/bin/appendrun" "$WORK/appendrun.c"
	mkdir -p "$WORK/bigdata"
	head -c "${APPEND_MIB}M" /dev/urandom >"$WORK/bigdata/big"
	: >"$WORK/bigdata/small"
fi
(cd "$BASE" && "$TERN_BIN" spec)
jq '.process.terminal = false | .root.readonly = false' "$BASE/config.json" >"$WORK/c"
mv "$WORK/c" "$BASE/config.json"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

ms() { awk -v u="$1" 'BEGIN{printf "%.1f", u / 1000}'; }
met() { if [ "$1" = 1 ]; then echo met; else echo "NOT met"; fi; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

# wait_for SECONDS WHAT CMD...: poll CMD until it succeeds, or fail saying
# what was awaited.
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$(($(now_ms) + secs * 1000))
	until "$@"; do
		if [ "$(now_ms)" -gt "$end" ]; then
			echo "migrate-bench.sh: timed out after ${secs}s waiting for $what" >&2
			return 1
		fi
		sleep 0.02
	done
}

# field FILE NAME: the value after NAME in the stamper's file (empty if the
# file is not there yet).
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$1" 2>/dev/null || true; }

stamps_at_least() { local s; s=$(field "$1" stamps); [ -n "$s" ] && [ "$s" -ge "$2" ]; }
resets_are() { [ "$(field "$1" resets)" = "$2" ]; }
listening() { on "$1" ss -Hltn "sport = :$2" | grep -q .; }
json_event() { grep -F "\"event\":\"$2\"" "$1" 2>/dev/null | head -1; }
has_event() { [ -n "$(json_event "$1" "$2")" ]; }
state_is() { [ "$("$(rt_bin "$1")" --root "$2" state "$3" 2>/dev/null | jq -r .status)" = "$4" ]; }

# fail WHAT: record why this run failed (shown at the end), and fail.
fail() {
	echo "$*" >>"$WORK/failures"
	echo "migrate-bench.sh: $*" >&2
	return 1
}

# move METHOD MIB DIRTY TAG: one move, fresh nodes. METHOD is tern-MODE or
# runc. Appends "downtime_us total_ms [tern_downtime_ms tern_total_ms]" to
# $WORK/res-METHOD-MIB-DIRTY.
move() {
	local m=$1 mib=$2 dirty=$3 id="mb$$-$4" rt=tern
	[ "$m" = runc ] && rt=runc
	local A=$WORK/A B=$WORK/B label="$1 $2 MiB idle run $4"
	[ "$dirty" = 0 ] || label="$1 $2 MiB $3 MiB/s run $4"
	local RA=$A/root-$rt RB=$B/root-$rt
	local sa=$A/bundle/rootfs/tmp/stamp sb=$B/bundle/rootfs/tmp/stamp
	local t0 t1 t2 t3 s0 s1 gap stamps port rc tdown="" ttotal="" steps
	stop_jobs
	clear_nodes
	rm -rf "$A/bundle" "$B/bundle" "$A/img" "$B/img" "$WORK/recv".*
	mkdir -p "$A" "$B" "$RA" "$RB"
	for node in "$A" "$B"; do
		mkdir -p "$node/bundle"
		cp -a "$BASE/rootfs" "$node/bundle/"
		[ -z "$APPEND_MIB" ] || cp -a "$WORK/bigdata" "$node/bundle/rootfs/data"
	done
	# -a: the same appender in both, to an empty file or to the big one
	local pre=""
	[ -z "$APPEND_MIB" ] || pre='"/bin/appendrun", "/data/small", '
	[ "$APPEND" = 0 ] || pre='"/bin/appendrun", "/data/big", '
	jq ".process.args = [$pre\"/bin/stamper\", \"$mib\", \"$dirty\", \"/tmp/stamp\"]" \
		"$BASE/config.json" >"$A/bundle/config.json"
	jq ".linux.cgroupsPath = \"/$id-b\"" "$A/bundle/config.json" >"$B/bundle/config.json"

	# stdio on /dev/null: a regular file outside the rootfs cannot move
	on A "$(rt_bin $rt)" --root "$RA" run -d -b "$A/bundle" "$id" </dev/null >/dev/null 2>&1 ||
		fail "$label: $rt run -d failed" || return 1
	# warm-up: the memory written and half a second of stamps, then reset
	wait_for 60 "the stamper on node A ($label)" stamps_at_least "$sa" 500 || return 1
	"$(rt_bin $rt)" --root "$RA" kill "$id" USR1
	wait_for 10 "the stamper's reset ($label)" resets_are "$sa" 1 || return 1

	if [ "$rt" = tern ]; then
		# (nsenter itself, not the function on: $! must be what timeout becomes)
		nsenter --net="/run/netns/$NB" timeout -s KILL 300 "$TERN_BIN" --root "$RB" --criu "$CRIU" migrate-receive \
			--listen 10.231.0.2:0 --bundle "$B/bundle" --token-file "$TOKEN" --timeout 60 --format json \
			</dev/null >"$WORK/recv.out" 2>"$WORK/recv.err" &
		RECV=$!
		wait_for 10 "migrate-receive listening ($label)" has_event "$WORK/recv.out" listening ||
			fail "$label: migrate-receive: $(head -c 300 "$WORK/recv.err")" || return 1
		port=$(json_event "$WORK/recv.out" listening | jq -r .port)
		s0=$(field "$sa" stamps)
		t0=$(now_ms)
		rc=0
		on A timeout -s KILL 300 "$TERN_BIN" --root "$RA" --criu "$CRIU" migrate \
			--to "10.231.0.2:$port" --token-file "$TOKEN" --mode "${m#tern-}" --format json "$id" \
			</dev/null >"$WORK/mig.out" 2>"$WORK/mig.err" || rc=$?
		t1=$(now_ms)
		if [ "$rc" -ne 0 ]; then
			kill -TERM "$RECV" 2>/dev/null || true
			wait "$RECV" 2>/dev/null || true
			fail "$label: tern migrate --mode ${m#tern-} exited $rc: $(tr '\n' ' ' <"$WORK/mig.err" | head -c 400)" || return 1
		fi
		rc=0
		wait "$RECV" || rc=$?
		[ "$rc" -eq 0 ] || fail "$label: tern migrate-receive exited $rc: $(tr '\n' ' ' <"$WORK/recv.err" | head -c 400)" || return 1
		tdown=$(json_event "$WORK/mig.out" "done" | jq -r .downtime_ms)
		ttotal=$(json_event "$WORK/mig.out" "done" | jq -r .total_ms)
		# before the freeze, dump, images sent, restore until RUNNING
		steps=$(jq -rs '[.[] | select(.event == "phase" and .side == "source") | {(.phase): .t_ms}] | add
			| "\(.freeze) \(.dumped - .freeze) \(.images - .dumped) \(.running - .images) \(.running)"' "$WORK/mig.out")
		# the rootfs rounds: "ROUND:DATA_BYTES/BYTES ..."
		jq -rs '[.[] | select(.event == "phase" and .phase == "rootfs" and .side == "source")
			| "\(.round):\(.data_bytes)/\(.bytes)"] | join(" ")' "$WORK/mig.out" \
			>>"$WORK/rootfs-$m-$mib-$dirty-a$APPEND"
		if [ -n "$KEEP" ]; then
			mkdir -p "$KEEP"
			cp "$WORK/mig.out" "$KEEP/$m-$mib-$dirty-$4.source.json"
			cp "$WORK/recv.out" "$KEEP/$m-$mib-$dirty-$4.target.json"
		fi
	else
		# shellcheck disable=SC2016 # $1 is bash -c's
		nsenter --net="/run/netns/$NB" timeout -s KILL 300 bash -c 'socat -u -b 1048576 TCP-LISTEN:7701,bind=10.231.0.2,reuseaddr STDOUT | tar -b 2048 -B -C "$1" -xf -' \
			_ "$B" </dev/null 2>"$WORK/recv.err" &
		RECV=$!
		wait_for 10 "socat listening on node B ($label)" listening B 7701 || return 1
		s0=$(field "$sa" stamps)
		t0=$(now_ms)
		on A "$RUNC_BIN" --root "$RA" --criu "$CRIU" checkpoint --image-path "$A/img" "$id" \
			</dev/null >/dev/null 2>"$WORK/err" ||
			fail "$label: runc checkpoint: $(tr '\n' ' ' <"$WORK/err" | head -c 400)" || return 1
		t2=$(now_ms)
		# 1 MiB blocks: with tar's and socat's defaults (10 and 8 KiB) the
		# copy of 256 MiB takes seconds rather than a fifth of one
		tar -b 2048 -C "$A" -cf - img bundle/rootfs | on A socat -u -b 1048576 STDIN TCP:10.231.0.2:7701 ||
			fail "$label: sending the images" || return 1
		wait "$RECV" || fail "$label: receiving the images: $(head -c 300 "$WORK/recv.err")" || return 1
		t3=$(now_ms)
		on B "$RUNC_BIN" --root "$RB" --criu "$CRIU" restore -d --image-path "$B/img" -b "$B/bundle" "$id" \
			</dev/null >/dev/null 2>"$WORK/err" ||
			fail "$label: runc restore: $(tr '\n' ' ' <"$WORK/err" | head -c 400)" || return 1
		t1=$(now_ms)
		steps="0 $((t2 - t0)) $((t3 - t2)) $((t1 - t3)) $((t1 - t0))"
	fi

	# correctness: it runs on B, the same process stamps on (its counter
	# goes on and its reset survived), every page of its memory is right
	state_is "$rt" "$RB" "$id" running || fail "$label: not running on node B after the move" || return 1
	wait_for 30 "the stamper's file on node B ($label)" stamps_at_least "$sb" 1 || return 1
	s1=$(field "$sb" stamps)
	wait_for 30 "the stamper to stamp on node B ($label)" stamps_at_least "$sb" $((s1 + 300)) ||
		fail "$label: the stamper does not stamp on node B" || return 1
	read -r _ gap _ stamps _ <"$sb"
	[ "$stamps" -gt "$s0" ] && resets_are "$sb" 1 ||
		fail "$label: the stamper on node B is not the one moved (stamps $stamps, before $s0, $(cat "$sb"))" || return 1
	rm -f "$sb.verify"
	"$(rt_bin $rt)" --root "$RB" kill "$id" USR2
	wait_for 60 "the stamper's memory check ($label)" test -s "$sb.verify" || return 1
	grep -q '^verify ok' "$sb.verify" || fail "$label: memory differs after the move: $(cat "$sb.verify")" || return 1
	if [ "$rt" = runc ] || [ -n "$tdown" ]; then
		echo "$gap $((t1 - t0)) $tdown $ttotal" >>"$WORK/res-$m-$mib-$dirty"
		echo "$steps" >>"$WORK/steps-$m-$mib-$dirty"
	fi
	"$(rt_bin $rt)" --root "$RB" delete -f "$id" >/dev/null 2>&1 || true
	"$(rt_bin $rt)" --root "$RA" delete -f "$id" >/dev/null 2>&1 || true
	rm -rf "$A/bundle" "$B/bundle" "$A/img" "$B/img"
}

if [ -n "$APPEND_MIB" ]; then
	echo "criu: $CRIU; runs: $RUNS; $(nproc) cpus; $(date -u '+%F %H:%M UTC'); tern: $TERN_BIN"
	echo "appending workload: a ${APPEND_MIB} MiB file in the rootfs of both nodes, a line appended every 10 ms"
	n=0
	for w in $(seq "$WARMUP"); do
		n=$((n + 1))
		APPEND=0 move tern-stop-and-copy 16 0 "w$n" || true
	done
	rm -f "$WORK"/res-* "$WORK"/steps-* "$WORK"/rootfs-* "$WORK/failures"
	for r in $(seq "$RUNS"); do
		for APPEND in 0 1; do
			n=$((n + 1))
			move tern-stop-and-copy 16 0 "$n" || true
			[ ! -s "$WORK/res-tern-stop-and-copy-16-0" ] ||
				mv "$WORK/res-tern-stop-and-copy-16-0" "$WORK/res-a$APPEND-$n"
		done
	done
	dn=() tdn=()
	printf '%-28s %5s %12s %14s  %s\n' workload ok "downtime ms" "tern says d/t" "rootfs rounds, each ROUND:DATA_BYTES/BYTES SENT"
	for APPEND in 0 1; do
		what="appending to an empty file"
		[ "$APPEND" = 0 ] || what="appending to ${APPEND_MIB} MiB"
		cat "$WORK"/res-a$APPEND-* 2>/dev/null >"$WORK/all-a$APPEND" || true
		ok=$(wc -l <"$WORK/all-a$APPEND")
		if [ "$ok" -eq 0 ]; then
			printf '%-28s %5s %12s\n' "$what" "0/$RUNS" failed
			continue
		fi
		dn[APPEND]=$(cut -d' ' -f1 "$WORK/all-a$APPEND" | median)
		tdn[APPEND]=$(cut -d' ' -f3 "$WORK/all-a$APPEND" | median)
		printf '%-28s %5s %12s %14s  %s\n' "$what" "$ok/$RUNS" "$(ms "${dn[APPEND]}")" \
			"${tdn[APPEND]}/$(cut -d' ' -f4 "$WORK/all-a$APPEND" | median)" \
			"$(tail -1 "$WORK/rootfs-tern-stop-and-copy-16-0-a$APPEND" 2>/dev/null)"
	done
	if [ -n "${dn[0]:-}" ] && [ -n "${dn[1]:-}" ]; then
		echo "the appending workload adds $(ms $((dn[1] - dn[0]))) ms to the downtime (stamper's gap; tern says $((tdn[1] - tdn[0])) ms); target: under 20 ms: $(met "$((dn[1] - dn[0] < 20000))")"
	fi
	echo "(downtime: the stamper's largest gap, medians; rootfs rounds of the last run)"
	if [ -s "$WORK/failures" ]; then
		echo "failed runs:"
		sed 's/^/  /' "$WORK/failures"
	fi
	exit 0
fi

methods=(tern-stop-and-copy tern-post-copy)
if "$CRIU" check --feature mem_dirty_track >/dev/null 2>&1; then
	methods+=(tern-pre-copy)
	precopy_note=""
else
	precopy_note="pre-copy: not measured: this kernel has no soft-dirty tracking"
fi
[ -n "$RUNC_BIN" ] && methods+=(runc)

echo "criu: $CRIU ($("$CRIU" --version | head -1)); runc: ${RUNC_BIN:-none}; runs: $RUNS; $(nproc) cpus; $(date -u '+%F %H:%M UTC')"
n=0
for w in $(seq "$WARMUP"); do
	for m in "${methods[@]}"; do
		n=$((n + 1))
		move "$m" 16 0 "w$n" || echo "migrate-bench.sh: $m warm-up $w failed" >&2
		rm -f "$WORK"/res-* "$WORK"/steps-*
	done
done
rm -f "$WORK/failures"
for mib in 16 256; do
	for dirty in 0 10; do
		for r in $(seq "$RUNS"); do
			for m in "${methods[@]}"; do
				n=$((n + 1))
				move "$m" "$mib" "$dirty" "$n" || true
			done
		done
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (b > 0) printf "%.2f", a / b; else print "-"}'; }

echo
printf '%-6s %-10s %-15s %5s %12s %10s %14s %12s %10s %9s %9s\n' size load method ok \
	"downtime ms" "total ms" "tern says d/t" "runc down" "runc tot" "down t/r" "total t/r"
targets=()
for mib in 16 256; do
	for dirty in 0 10; do
		load=idle
		[ "$dirty" = 0 ] || load="$dirty MiB/s"
		rf=$WORK/res-runc-$mib-$dirty
		rd="" rt=""
		if [ -s "$rf" ]; then
			rd=$(cut -d' ' -f1 "$rf" | median)
			rt=$(cut -d' ' -f2 "$rf" | median)
		fi
		for m in "${methods[@]}"; do
			f=$WORK/res-$m-$mib-$dirty
			ok=0
			[ -s "$f" ] && ok=$(wc -l <"$f")
			if [ "$ok" -eq 0 ]; then
				printf '%-6s %-10s %-15s %5s %12s\n' "${mib}M" "$load" "${m#tern-}" "0/$RUNS" failed
				continue
			fi
			d=$(cut -d' ' -f1 "$f" | median)
			t=$(cut -d' ' -f2 "$f" | median)
			says=-
			if [ "$m" != runc ]; then
				says="$(cut -d' ' -f3 "$f" | median)/$(cut -d' ' -f4 "$f" | median)"
			fi
			if [ "$m" = runc ] || [ -z "$rd" ]; then
				printf '%-6s %-10s %-15s %5s %12s %10s %14s\n' "${mib}M" "$load" "${m#tern-}" "$ok/$RUNS" "$(ms "$d")" "$t" "$says"
				continue
			fi
			printf '%-6s %-10s %-15s %5s %12s %10s %14s %12s %10s %9s %9s\n' "${mib}M" "$load" "${m#tern-}" "$ok/$RUNS" \
				"$(ms "$d")" "$t" "$says" "$(ms "$rd")" "$rt" "$(ratio "$d" "$rd")" "$(ratio "$t" "$rt")"
			targets+=("$mib MiB $load ${m#tern-}: downtime $(ms "$d") ms <= runc's $(ms "$rd") ms: $(met "$((d <= rd))")")
			if [ "$mib" = 256 ] && [ "$dirty" = 0 ]; then
				targets+=("256 MiB idle ${m#tern-}: downtime $(ms "$d") ms <= 300 ms: $(met "$((d <= 300000))")")
				targets+=("256 MiB idle ${m#tern-}: total $t ms <= 2000 ms: $(met "$((t <= 2000))")")
			fi
		done
	done
done
echo "(downtime: the stamper's largest gap, ms; total: first command to running on node B, ms;"
echo " tern says: tern migrate's own downtime_ms/total_ms; t/r: tern/runc; medians of the ok runs)"
[ -z "$precopy_note" ] || echo "$precopy_note"
echo
echo "targets (issue 11):"
for t in "${targets[@]}"; do
	echo "  $t"
done
echo
echo "the steps of a move (medians, ms): tern: before the freeze (connect, TLS, rootfs round 1),"
echo "criu dump of the frozen container, images sent, restore until the target's RUNNING;"
echo "runc by hand: -, runc checkpoint, tar over the veth, runc restore -d; running: since the"
echo "first command until the target runs it (tern: the source hears RUNNING; post-copy's pages come after)"
printf '%-6s %-10s %-15s %8s %8s %8s %8s %8s\n' size load method before dump send restore running
for mib in 16 256; do
	for dirty in 0 10; do
		load=idle
		[ "$dirty" = 0 ] || load="$dirty MiB/s"
		for m in "${methods[@]}"; do
			f=$WORK/steps-$m-$mib-$dirty
			[ -s "$f" ] || continue
			printf '%-6s %-10s %-15s %8s %8s %8s %8s %8s\n' "${mib}M" "$load" "${m#tern-}" \
				"$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" \
				"$(cut -d' ' -f3 "$f" | median)" "$(cut -d' ' -f4 "$f" | median)" \
				"$(cut -d' ' -f5 "$f" | median)"
		done
	done
done
if [ -s "$WORK/failures" ]; then
	echo
	echo "failed runs:"
	sed 's/^/  /' "$WORK/failures"
fi
