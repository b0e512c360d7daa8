#!/bin/sh
# Build tern's libFuzzer targets (tests/fuzz/fuzz-*.c) with clang and run them.
#
#   run-fuzz.sh [--build-only] [--runs N] [TARGET...]
#       the bounded, deterministic pass (what tests/integration/fuzz.bats
#       runs): each target replays its seed corpus and its regressions, then
#       makes N (default 5000) mutations with -seed=1. Any crash, leak,
#       timeout or sanitizer report fails it. All targets: about a minute.
#   run-fuzz.sh --seconds N [TARGET...]
#       a campaign: N seconds per target, one after another, on a working
#       corpus under tests/.work/fuzz/campaign/TARGET (seeded from the repo's
#       corpus, which is never written to); prints the executions and time
#       of each target from libFuzzer's final stats. After a crash the
#       target starts again for the time left.
#
# Everything built or written goes under tests/.work/fuzz: build/ (objects
# and targets), logs/, artifacts/MODE/TARGET/ (crashing inputs), bounded/ and
# campaign/ (working corpora), tmp/MODE/TARGET/ (the scratch directories of
# the targets that write files: fake cgroup counters, received images, the
# rootfs a sync stream is applied to, a checkpoint descriptor). The targets
# only parse: no mount, no signal, no cgroup write, nothing outside tmp/.
#
# Needs clang with libFuzzer and the sanitizers (Debian 12: clang and
# libclang-rt-14-dev) and the -dev packages tern builds with.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=$top/tests/.work/fuzz
build=$work/build
CC=${CC:-clang}

mode=bounded
runs=5000
secs=0
while [ $# -gt 0 ]; do
	case $1 in
	--build-only) mode=build ;;
	--runs) runs=$2; shift ;;
	--seconds) mode=campaign; secs=$2; shift ;;
	-h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run-fuzz.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "run-fuzz.sh: $CC not found: install clang and libclang-rt-14-dev" >&2
	exit 1
fi

all_targets() {
	for f in "$here"/fuzz-*.c; do
		t=${f##*/fuzz-}
		echo "${t%.c}"
	done
}
targets=${*:-$(all_targets)}

mkdir -p "$build/obj" "$work/logs"

deps="yajl libseccomp libcap libselinux libsystemd criu openssl"
# shellcheck disable=SC2086 # a list of names
pcflags=$(pkg-config --cflags $deps)
# shellcheck disable=SC2086
pclibs=$(pkg-config --libs $deps)
# fuzzer-no-link: coverage for the fuzzer in tern's own code; the fuzzer's
# main() comes in only when a target is linked.
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
	-fno-sanitize-recover=undefined -D_GNU_SOURCE -DTERN_MCHAN_TESTING
	-iquote $build -iquote $top/libocispec $pcflags"
for layer in "$top"/src/*/; do
	cflags="$cflags -iquote ${layer%/}"
done

# The two values of configure's config.h that the sources use, taken from
# configure.ac (the fuzz build does not run configure).
version=$(sed -n 's/^AC_INIT(\[tern\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")
oci=$(sed -n 's/.*\[TERN_OCI_VERSION\], \["\([^"]*\)"\].*/\1/p' "$top/configure.ac")
printf '#define PACKAGE_VERSION "%s"\n#define TERN_OCI_VERSION "%s"\n' "$version" "$oci" \
	>"$build/config.h.tmp"
if ! cmp -s "$build/config.h.tmp" "$build/config.h"; then
	mv "$build/config.h.tmp" "$build/config.h"
else
	rm "$build/config.h.tmp"
fi

# Every source of tern but the two main()s, into one archive; a target
# links what it uses. An object is rebuilt when its source or any header is
# newer.
newest_header=$(ls -t "$top"/src/*/*.h "$top"/libocispec/*.h "$build/config.h" | head -n 1)
objs=
for src in "$top"/libocispec/*.c "$top"/src/*/*.c; do
	case ${src##*/} in main.c | migrate-main.c) continue ;; esac
	base=${src##*/}
	dir=${src%/*}
	obj=$build/obj/${dir##*/}-${base%.c}.o
	if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
		# shellcheck disable=SC2086
		$CC $cflags -c "$src" -o "$obj.tmp"
		mv "$obj.tmp" "$obj"
	fi
	objs="$objs $obj"
done
# shellcheck disable=SC2086
if [ ! -f "$build/libtern-fuzz.a" ] || [ -n "$(find $objs -newer "$build/libtern-fuzz.a")" ]; then
	rm -f "$build/libtern-fuzz.a"
	ar rcs "$build/libtern-fuzz.a" $objs
fi

for t in $targets; do
	src=$here/fuzz-$t.c
	[ -f "$src" ] || { echo "run-fuzz.sh: no target $t ($src)" >&2; exit 2; }
	bin=$build/fuzz-$t
	newest_fuzz_header=$(ls -t "$here"/*.h "$here/stub.c" | head -n 1)
	if [ ! -f "$bin" ] || [ "$src" -nt "$bin" ] || [ "$build/libtern-fuzz.a" -nt "$bin" ] ||
		[ "$newest_fuzz_header" -nt "$bin" ]; then
		# shellcheck disable=SC2086
		$CC $cflags -fsanitize=fuzzer "$src" "$here/stub.c" "$build/libtern-fuzz.a" $pclibs \
			-lpthread \
			-o "$bin.tmp"
		mv "$bin.tmp" "$bin" # atomic: a campaign may be running the old one
	fi
done
[ "$mode" = build ] && exit 0

# Inputs larger than this are cut; the config and state seeds are the
# largest (a default spec is about 3 KiB).
max_len=65536
failed=
for t in $targets; do
	bin=$build/fuzz-$t
	corpus=$here/corpus/$t
	regress=$here/regressions/$t
	art=$work/artifacts/$mode/$t
	log=$work/logs/$t-$mode.log
	mkdir -p "$art" "$corpus"
	# The targets that need a scratch directory make theirs under $TMPDIR;
	# one that crashed cannot remove it, so each run starts with an empty one.
	export TMPDIR="$work/tmp/$mode/$t"
	rm -rf "$TMPDIR"
	mkdir -p "$TMPDIR"
	set -- "$corpus"
	[ -d "$regress" ] && set -- "$@" "$regress"
	if [ "$mode" = bounded ]; then
		# New inputs go to the first directory only: a scratch one.
		scratch=$work/bounded/$t
		rm -rf "$scratch"
		mkdir -p "$scratch"
		# fuzz-cgroup-stats writes and reads some 30 files an input:
		# a fifth of the runs keeps it near the others' time
		n=$runs
		[ "$t" = cgroup-stats ] && n=$((runs / 5))
		start=$(date +%s)
		if "$bin" -runs="$n" -seed=1 -max_len=$max_len -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix="$art/" "$scratch" "$@" >"$log" 2>&1; then
			echo "fuzz-$t: ok ($n runs, $(($(date +%s) - start)) s)"
		else
			echo "fuzz-$t: FAILED (log: $log; input in $art/)" >&2
			grep -E "ERROR|SUMMARY|Test unit written" "$log" >&2 || true
			failed="$failed $t"
		fi
	else
		# Working corpus: seeds and regressions copied once, grown in place.
		camp=$work/campaign/$t
		mkdir -p "$camp"
		for d in "$@"; do
			find "$d" -maxdepth 1 -type f -exec cp -n {} "$camp/" \;
		done
		echo "fuzz-$t: $secs s from $(date -u +%H:%M:%S) (log: $log)"
		# A crash ends a run of libFuzzer: its input is kept in artifacts/
		# and the target starts again for the time left.
		: >"$log"
		end=$(($(date +%s) + secs))
		execs=0
		took=0
		runs=0
		while [ "$(date +%s)" -lt "$end" ]; do
			left=$((end - $(date +%s)))
			"$bin" -max_total_time="$left" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 \
				-print_final_stats=1 -artifact_prefix="$art/" "$camp" >>"$log" 2>&1 || true
			n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
			execs=$((execs + ${n:-0}))
			# "Done N runs in S second(s)"; a run that crashed has no such
			# line: its time is what the wall clock says
			d=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
			took=$((took + ${d:-$((left - (end - $(date +%s))))}))
			sed -i 's/^Done \([0-9]* runs\)/done \1/' "$log"
			runs=$((runs + 1))
			# a stats line per run: the next run's figures are its own
			echo "run-fuzz.sh: run $runs ended, $n executions" >>"$log"
			sed -i 's/^stat::number_of_executed_units:/counted::number_of_executed_units:/' "$log"
		done
		crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
		echo "fuzz-$t: $execs executions in $took s ($runs libFuzzer runs); crash/leak/timeout inputs in $art: $crashes"
	fi
done
if [ -n "$failed" ]; then
	echo "run-fuzz.sh: failed:$failed" >&2
	exit 1
fi
