#!/usr/bin/env bats
# Who may read or change a checkpoint: the images hold the container's
# memory, and a restore runs whatever they say. tern refuses an image or
# work directory that another user owns or that group or others can write
# (runc 1.1 uses such a directory as it is), makes a missing one 0700, and
# criu writes every image 0600 (umask 077 around the dump). Not tagged
# vm:v2: nothing here depends on the cgroup version.

load helpers

setup() {
	if is_runc; then
		skip "runc uses an image directory others can write as it is, and writes images 0644"
	fi
	setup_bundle
	IMG=$BATS_TEST_TMPDIR/img
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	teardown_bundle
}

# counter NAME: a shell loop counting in /tmp/NAME (see checkpoint.bats).
counter() {
	echo "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/.c; mv /tmp/.c /tmp/$1; sleep 0.1; done; sleep $MARK"
}

start_counter() {
	set_cmd "$(counter count)"
	tern run -d -b "$BUNDLE" "$ID" >/dev/null
	wait_status "$ID" running
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
}

# refused_untouched: the checkpoint failed before criu ran: the container
# runs on and $IMG holds no image.
refused_untouched() {
	[ "$status" -ne 0 ]
	[ "$(state_field "$ID" status)" = running ]
	[ -z "$(find "$IMG" -name '*.img')" ]
}

@test "checkpoint-security: an --image-path that group or others can write is refused, naming it; the container runs on" {
	start_counter
	mkdir "$IMG"
	for mode in 0777 1777 0770 0702; do
		chmod "$mode" "$IMG"
		run tern checkpoint --image-path "$IMG" "$ID"
		refused_untouched
		[[ "$output" == *"--image-path \`$IMG\` is writable by group or others (mode $mode)"* ]] ||
			{ echo "$output"; false; }
	done
}

@test "checkpoint-security: an --image-path owned by another user (nobody) is refused, naming it" {
	start_counter
	mkdir -m 0700 "$IMG"
	chown nobody "$IMG"
	run tern checkpoint --image-path "$IMG" "$ID"
	refused_untouched
	[[ "$output" == *"--image-path \`$IMG\` is owned by uid $(id -u nobody), not by this user"* ]] ||
		{ echo "$output"; false; }
}

@test "checkpoint-security: a --work-path that others can write is refused, naming it" {
	start_counter
	mkdir -m 0777 "$BATS_TEST_TMPDIR/work"
	chmod 0777 "$BATS_TEST_TMPDIR/work"
	run tern checkpoint --image-path "$IMG" --work-path "$BATS_TEST_TMPDIR/work" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--work-path \`$BATS_TEST_TMPDIR/work\` is writable by group or others"* ]] ||
		{ echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	[ ! -e "$BATS_TEST_TMPDIR/work/dump.log" ]
}

@test "checkpoint-security: a fresh --image-path is made 0700, every image and log is 0600, and restore works" {
	start_counter
	run tern checkpoint --image-path "$IMG" --work-path "$BATS_TEST_TMPDIR/work" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(stat -c %a "$IMG")" = 700 ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/work")" = 700 ]
	[ -f "$IMG/inventory.img" ]
	[ -f "$BATS_TEST_TMPDIR/work/dump.log" ]
	run find "$IMG" "$BATS_TEST_TMPDIR/work" -perm /077
	[ -z "$output" ] || { ls -la "$IMG" "$BATS_TEST_TMPDIR/work"; false; }
	before=$(cat "$BUNDLE/rootfs/tmp/count")
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	went_on "$BUNDLE/rootfs/tmp/count" "$before"
}

@test "checkpoint-security: an existing 0755 --image-path of this user (as podman makes) is used; its images are 0600" {
	start_counter
	mkdir -m 0755 "$IMG"
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(stat -c %a "$IMG")" = 755 ]
	[ -n "$(find "$IMG" -name '*.img')" ]
	run find "$IMG" -type f -perm /077
	[ -z "$output" ] || { ls -la "$IMG"; false; }
}

@test "checkpoint-security: restore from an image directory others could write (the images may be swapped) is refused, naming it; nothing is left" {
	start_counter
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	chmod 0777 "$IMG"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--image-path \`$IMG\` is writable by group or others (mode 0777)"* ]] ||
		{ echo "$output"; false; }
	run tern state "$ID"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/$ID" ]
}

@test "checkpoint-security: a snapshot's images and dump log are 0600 too (its criu is started before the freeze, with umask 077)" {
	start_counter
	# (tern's own umask as an operator's shell may have it)
	(umask 022 && tern snapshot "$ID" s1)
	local images=$ROOT/@snapshots/$ID/s1/images
	[ -f "$images/inventory.img" ]
	[ -f "$images/dump.log" ]
	run find "$images" -type f -perm /077
	[ -z "$output" ] || { ls -la "$images"; false; }
}

@test "checkpoint-security: a checkpoint that fails before criu's dump leaves no criu behind (the one started ahead is reaped)" {
	start_counter
	local criu=${TERN_CRIU:-/opt/tern-criu/bin/criu}
	! pgrep -f "^$criu swrk" || false
	# not a directory: refused after the criu started ahead is running
	touch "$BATS_TEST_TMPDIR/file"
	run tern checkpoint --image-path "$BATS_TEST_TMPDIR/file" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"--image-path"* ]]
	# reaped before tern returned: no criu of it runs on
	! pgrep -f "^$criu swrk" || false
	[ "$(state_field "$ID" status)" = running ]
}
