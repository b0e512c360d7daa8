#!/bin/bash
# tern built with AddressSanitizer, its leak checker and
# UndefinedBehaviorSanitizer (./configure --enable-sanitizers), then the
# unit tests and this machine's integration suite run against that build.
# Any sanitizer report fails the run, also one from a process whose exit
# status no test looks at (a detached container's tern, a watchdog): each
# report is a file in tests/.work/sanitizers/reports, listed at the end.
#
# Not part of scripts/test.sh (CI): the qemu guests are left out, and the
# sanitized tern is slower. Run scripts/test.sh once before: it installs
# what the tests need. Root, Debian 12. The last line is
#   sanitizers: N passed, N failed, N skipped, N reports
set -uo pipefail

cd "$(dirname "$0")/.."
REPO=$(pwd)
WORK=$REPO/tests/.work/sanitizers
SRC=$WORK/src
REPORTS=$WORK/reports

[ "$(id -u)" -eq 0 ] || { echo "test-sanitizers.sh: run as root" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$SRC" "$REPORTS"
scripts/copy-checkout.sh "$SRC" ||
	{ echo "test-sanitizers.sh: copying the source failed" >&2; exit 1; }

echo "== building with --enable-sanitizers"
(cd "$SRC" && ./autogen.sh && ./configure --enable-sanitizers && make -j"$(nproc)") </dev/null ||
	{ echo "test-sanitizers.sh: build failed" >&2; exit 1; }

export ASAN_OPTIONS="log_path=$REPORTS/asan:detect_leaks=1:fast_unwind_on_malloc=0"
export UBSAN_OPTIONS="log_path=$REPORTS/ubsan:print_stacktrace=1"
# leaks of the libraries tern links, not tern's own (each one explained)
export LSAN_OPTIONS="suppressions=$SRC/tests/sanitizers/lsan.supp:print_suppressions=0"
passed=0 failed=0 skipped=0

echo "== unit tests (make check)"
(cd "$SRC" && make -j"$(nproc)" check) </dev/null
unit_rc=$?
for trs in "$SRC"/tests/unit/*.trs; do
	[ -e "$trs" ] || continue
	passed=$((passed + $(grep -c '^:test-result: PASS' "$trs")))
	failed=$((failed + $(grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)' "$trs")))
	skipped=$((skipped + $(grep -c '^:test-result: \(SKIP\|XFAIL\)' "$trs")))
done
[ "$unit_rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))

echo "== integration tests (bats) with the sanitized tern"
TAP=$WORK/integration.tap
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}
TERN_BIN=$SRC/tern bats --tap "$SRC/tests/integration" </dev/null 2>&1 | tee "$TAP"
bats_rc=${PIPESTATUS[0]}
p=$(grep -c '^ok ' "$TAP")
s=$(grep -c '^ok .* # skip' "$TAP")
f=$(grep -c '^not ok ' "$TAP")
passed=$((passed + p - s))
skipped=$((skipped + s))
failed=$((failed + f))
[ "$bats_rc" -eq 0 ] || [ "$f" -gt 0 ] || failed=$((failed + 1))

reports=0
for r in "$REPORTS"/*; do
	[ -e "$r" ] || continue
	reports=$((reports + 1))
	echo "== sanitizer report $r"
	cat "$r"
done
echo "sanitizers: $passed passed, $failed failed, $skipped skipped, $reports reports"
[ "$failed" -eq 0 ] && [ "$reports" -eq 0 ]
