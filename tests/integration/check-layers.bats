#!/usr/bin/env bats
# scripts/check-layers.sh, which `make check` runs: it passes on this tree,
# and it fails, naming the line, on each kind of fault it exists for. The
# faults are made in a copy of src/, never in the tree itself. Needs no
# container and no root.

load helpers

setup() {
	TOP=$BATS_TEST_TMPDIR/top
	mkdir -p "$TOP/scripts"
	cp -r "$BATS_TEST_DIRNAME/../../src" "$BATS_TEST_DIRNAME/../../libocispec" "$TOP/"
	cp "$BATS_TEST_DIRNAME/../../scripts/check-layers.sh" "$TOP/scripts/"
}

check() {
	run bash "$TOP/scripts/check-layers.sh" "$TOP"
}

@test "check-layers: this tree passes" {
	check
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[[ "$output" == *"no circle"* ]]
}

@test "check-layers: an include that points up a layer fails, naming the line" {
	sed -i '1a #include "cli.h"' "$TOP/src/base/log.c"
	check
	[ "$status" -ne 0 ]
	[[ "$output" == *'src/base/log.c:2: base includes "cli.h" of cli, a higher layer'* ]]
}

@test "check-layers: two modules of one layer that include each other fail as a circle" {
	echo '#include "container-load.h"' >>"$TOP/src/lifecycle/state.h"
	check
	[ "$status" -ne 0 ]
	[[ "$output" == *"a circle"* ]]
	[[ "$output" == *"container-load"* ]]
}

@test "check-layers: a header found in no layer, and a source file outside the layers, fail" {
	sed -i '1a #include "nowhere.h"' "$TOP/src/linux/caps.c"
	touch "$TOP/src/stray.c"
	check
	[ "$status" -ne 0 ]
	[[ "$output" == *'src/linux/caps.c:2: includes "nowhere.h", which is in no layer'* ]]
	[[ "$output" == *"src/stray.c is in no layer"* ]]
}
