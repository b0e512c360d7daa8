#!/usr/bin/env bats
# The bounded fuzz pass (tests/fuzz/run-fuzz.sh): each libFuzzer target
# replays its seed corpus and its regressions (tests/fuzz/regressions/,
# every crash found so far) and makes $TERN_FUZZ_RUNS mutations (default
# 5000) with a fixed seed, under ASan (leaks included) and UBSan. A crash,
# a leak, a sanitizer report or a timeout fails the test and leaves the
# input in tests/.work/fuzz/artifacts/bounded/TARGET/. The targets only parse:
# nothing on the host is mounted, signalled or written but their scratch
# directories under tests/.work/fuzz/tmp.
#
# Needs clang with libFuzzer (Debian 12: clang libclang-rt-14-dev). Without
# it every test fails, naming the packages: fuzzing is part of the suite.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
FUZZ=$REPO/tests/fuzz/run-fuzz.sh
RUNS=${TERN_FUZZ_RUNS:-5000}

setup_file() {
	# build once for all the tests (each run then finds it up to date)
	local out
	if ! out=$("$FUZZ" --build-only 2>&1); then
		{
			echo "$out"
			echo "tests/fuzz/run-fuzz.sh --build-only failed (clang and libclang-rt-14-dev installed?)"
		} | sed 's/^/# /' >&3
		return 1
	fi
}

fuzz() {
	run "$FUZZ" --runs "$RUNS" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fuzz-$1: ok"* ]]
}

@test "fuzz ckpt-descriptor: bounded run, no crash or leak" {
	fuzz ckpt-descriptor
}

@test "fuzz cgroup-path: bounded run, no crash or leak" {
	fuzz cgroup-path
}

@test "fuzz cgroup-stats: bounded run, no crash or leak" {
	fuzz cgroup-stats
}

@test "fuzz cgroup: bounded run, no crash or leak" {
	fuzz cgroup
}

@test "fuzz config: bounded run, no crash or leak" {
	fuzz config
}

@test "fuzz criu-opts: bounded run, no crash or leak" {
	fuzz criu-opts
}

@test "fuzz exec-opts: bounded run, no crash or leak" {
	fuzz exec-opts
}

@test "fuzz migrate-images: bounded run, no crash or leak" {
	fuzz migrate-images
}

@test "fuzz migrate-messages: bounded run, no crash or leak" {
	fuzz migrate-messages
}

@test "fuzz mount-options: bounded run, no crash or leak" {
	fuzz mount-options
}

@test "fuzz mountinfo: bounded run, no crash or leak" {
	fuzz mountinfo
}

@test "fuzz pagemap: bounded run, no crash or leak" {
	fuzz pagemap
}

@test "fuzz process: bounded run, no crash or leak" {
	fuzz process
}

@test "fuzz rootfs-sync: bounded run, no crash or leak" {
	fuzz rootfs-sync
}

@test "fuzz signal: bounded run, no crash or leak" {
	fuzz signal
}

@test "fuzz snapshot-meta: bounded run, no crash or leak" {
	fuzz snapshot-meta
}

@test "fuzz state: bounded run, no crash or leak" {
	fuzz state
}

@test "fuzz update-opts: bounded run, no crash or leak" {
	fuzz update-opts
}
