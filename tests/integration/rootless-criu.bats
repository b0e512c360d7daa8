#!/usr/bin/env bats
# criu for users without root: how scripts/install-criu.sh installs it (the
# binary itself runs, with the file capability cap_checkpoint_restore+ep and
# no other, in a prefix only root can write), and what a rootless tern does
# with it: checkpoint, restore and snapshot of the user's own container are
# refused before anything is done, each with its reason (criu 4.2's
# unprivileged mode cannot dump a user namespace; tern restores in a mount
# namespace of its own; --tcp-established and --lazy-pages need more than
# CAP_CHECKPOINT_RESTORE), and the container runs on untouched. The user is
# made for this file and removed at its end (rootless-helpers.bash).

load helpers
load rootless-helpers

# a user of its own: rootless.bats may run at the same time
RL_USER=ternrl-criu
CRIU_PREFIX=/opt/tern-criu

setup_file() {
	rl_setup_file
}

teardown_file() {
	rl_teardown_file
}

setup() {
	[ -x "$CRIU_PREFIX/bin/criu" ] || skip "LOUD: no $CRIU_PREFIX/bin/criu: run scripts/install-criu.sh"
	CRIU_EXE=$(readlink -f "$CRIU_PREFIX/bin/criu")
	TEST_PREFIX=/opt/tern-criu-bats-$$-${BATS_SUITE_TEST_NUMBER:-0}
	rl_setup
}

teardown() {
	rm -rf "$TEST_PREFIX"
	rl_teardown
}

# start_user_counter: the user's container counts in /tmp/count (its own
# rootfs), running detached; sets PID.
start_user_counter() {
	set_cmd "$(counter_cmd /tmp/count)"
	update_config '.root.readonly = false'
	chown "$RL_USER:" "$BUNDLE/config.json"
	run rtern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "$output"
		return 1
	}
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	PID=$(rtern state "$ID" | jq -r .pid)
}

# still_counting: the container is running and its counter goes on.
still_counting() {
	[ "$(rtern state "$ID" | jq -r .status)" = running ]
	[ "$(rtern state "$ID" | jq -r .pid)" = "$PID" ]
	local a
	a=$(cat "$BUNDLE/rootfs/tmp/count")
	wait_count_above "$BUNDLE/rootfs/tmp/count" "$a"
}

@test "rootless-criu: the installed criu is the binary itself (an ELF loading the prefix's libraries), not a script" {
	[ -L "$CRIU_PREFIX/bin/criu" ]
	[ "$CRIU_EXE" = "$CRIU_PREFIX/libexec/criu" ]
	[ "$(head -c 4 "$CRIU_EXE" | od -An -c | tr -d ' ')" = '177ELF' ]
	run readelf -l "$CRIU_EXE"
	[[ "$output" == *"[Requesting program interpreter: $CRIU_PREFIX/root/"* ]]
	run readelf -d "$CRIU_EXE"
	[[ "$output" == *"(RPATH)"*"Library rpath: [$CRIU_PREFIX/root/usr/lib/x86_64-linux-gnu"* ]]
	# it runs as itself: /proc/self/exe is criu, not a loader
	run "$CRIU_PREFIX/bin/criu" --version
	[ "$status" -eq 0 ]
	[[ "$output" == *"Version: 4."* ]]
}

@test "rootless-criu: getcap shows exactly cap_checkpoint_restore=ep on the installed criu" {
	run getcap "$CRIU_EXE"
	[ "$status" -eq 0 ]
	[ "$output" = "$CRIU_EXE cap_checkpoint_restore=ep" ]
}

@test "rootless-criu: the capability is what lets the user run criu (a copy without it is refused by criu)" {
	# the user's criu check in unprivileged mode passes with the capability
	run as_user "$CRIU_PREFIX/bin/criu" check --unprivileged
	[ "$status" -eq 0 ]
	[[ "$output" == *"Looks good."* ]]
	# the same binary copied (cp drops the capability) fails, naming it
	cp "$CRIU_EXE" "$RL_DIR/criu-nocap"
	chown "$RL_USER:" "$RL_DIR/criu-nocap"
	[ -z "$(getcap "$RL_DIR/criu-nocap")" ]
	run as_user "$RL_DIR/criu-nocap" check --unprivileged
	[ "$status" -ne 0 ]
	[[ "$output" == *"CAP_CHECKPOINT_RESTORE"* ]]
	# and criu itself demands the unprivileged mode of a non-root user
	run as_user "$CRIU_PREFIX/bin/criu" check
	[ "$status" -ne 0 ]
	[[ "$output" == *"--unprivileged"* ]]
}

@test "rootless-criu: a user without root cannot write the prefix (the binary, its libraries, any directory)" {
	local d bad
	# everything but apt's download cache: root's, writable by no one else
	bad=$(find "$CRIU_PREFIX" -path "$CRIU_PREFIX/apt" -prune -o \
		\( ! -user 0 -o \( ! -type l -perm /022 \) \) -print)
	[ -z "$bad" ] || {
		echo "not root's alone: $bad"
		false
	}
	# and every directory up to / (whoever could write one could swap it)
	d=$CRIU_PREFIX
	while [ "$d" != / ]; do
		[ "$(stat -c %u "$d")" = 0 ]
		[ -z "$(find "$d" -maxdepth 0 -perm /022)" ]
		d=$(dirname "$d")
	done
	# tried for real, as the user
	for d in "$CRIU_PREFIX" "$CRIU_PREFIX/bin" "$CRIU_PREFIX/libexec" \
		"$CRIU_PREFIX/root/usr/lib/x86_64-linux-gnu"; do
		run as_user touch "$d/rl-planted"
		[ "$status" -ne 0 ]
		[[ "$output" == *"Permission denied"* ]]
		[ ! -e "$d/rl-planted" ]
	done
	run as_user sh -c "echo x >>'$CRIU_EXE'"
	[ "$status" -ne 0 ]
	run as_user mv "$CRIU_PREFIX/bin/criu" "$RL_DIR/moved"
	[ "$status" -ne 0 ]
	[ "$(getcap "$CRIU_EXE")" = "$CRIU_EXE cap_checkpoint_restore=ep" ]
}

@test "rootless-criu: install-criu.sh upgrades an old-style install (a loader wrapper script) in place, and again is a no-op" {
	mkdir -p "$TEST_PREFIX/bin"
	cp -a "$CRIU_PREFIX/root" "$TEST_PREFIX/root"
	cat >"$TEST_PREFIX/bin/criu" <<WRAP
#!/bin/sh
# criu 4.2.1-1 from Debian sid, run through its own glibc (installed by
# tern's scripts/install-criu.sh).
exec "$TEST_PREFIX/root/usr/lib64/ld-linux-x86-64.so.2" --library-path "$TEST_PREFIX/root/usr/lib/x86_64-linux-gnu:$TEST_PREFIX/root/lib/x86_64-linux-gnu" "$TEST_PREFIX/root/usr/sbin/criu" "\$@"
WRAP
	chmod 755 "$TEST_PREFIX/bin/criu"
	# the old shape: a file capability on the sid binary does nothing
	# through the loader
	run as_user "$TEST_PREFIX/bin/criu" check --unprivileged
	[ "$status" -ne 0 ]
	[[ "$output" == *"CAP_CHECKPOINT_RESTORE"* ]]
	run env TERN_CRIU_PREFIX="$TEST_PREFIX" "$REPO/scripts/install-criu.sh"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "$TEST_PREFIX/bin/criu" ]
	[[ "$output" == *"upgrading the criu in $TEST_PREFIX/root in place"* ]]
	[ "$(readlink "$TEST_PREFIX/bin/criu")" = ../libexec/criu ]
	[ "$(getcap "$TEST_PREFIX/libexec/criu")" = "$TEST_PREFIX/libexec/criu cap_checkpoint_restore=ep" ]
	run as_user "$TEST_PREFIX/bin/criu" check --unprivileged
	[ "$status" -eq 0 ]
	# root's criu is the same binary, and works as before
	run "$TEST_PREFIX/bin/criu" check
	[ "$status" -eq 0 ]
	# idempotent: the second run only says what it uses
	local ino
	ino=$(stat -c %i "$TEST_PREFIX/libexec/criu")
	run env TERN_CRIU_PREFIX="$TEST_PREFIX" "$REPO/scripts/install-criu.sh"
	[ "$status" -eq 0 ]
	[[ "$output" == *"using $TEST_PREFIX/bin/criu"*"cap_checkpoint_restore=ep"* ]]
	[ "$(stat -c %i "$TEST_PREFIX/libexec/criu")" = "$ino" ]
}

@test "rootless-criu: install-criu.sh refuses a prefix that a user without root could write (under /tmp)" {
	local p=$BATS_TEST_TMPDIR/prefix
	mkdir -p "$p"
	cp -a "$CRIU_PREFIX/root" "$p/root"
	run env TERN_CRIU_PREFIX="$p" "$REPO/scripts/install-criu.sh"
	[ "$status" -ne 0 ]
	[[ "$output" == *"is not root's alone"*"could replace the capable criu"* ]]
	# no capable binary left behind
	[ ! -e "$p/libexec/criu" ]
	[ ! -e "$p/libexec/criu.new" ]
}

@test "rootless-criu: checkpoint of the user's container is refused up front, naming the user namespace; it runs on, nothing made" {
	start_user_counter
	run rtern checkpoint --image-path "$RL_DIR/img" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot checkpoint \`$ID\` without root: it has a user namespace of its own"* ]]
	[[ "$output" == *"supplementary groups (CAP_SETGID in the host)"* ]]
	[[ "$output" == *"/proc/PID/map_files"* ]]
	# not criu's own setcap hint: tern never started criu
	[[ "$output" != *"setcap"* ]]
	[ ! -e "$RL_DIR/img" ]
	[ ! -e "$XDG/tern/$ID/last-failure" ]
	still_counting
	# --leave-running is no different
	run rtern checkpoint --leave-running --image-path "$RL_DIR/img" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"user namespace of its own"* ]]
	[ ! -e "$RL_DIR/img" ]
	still_counting
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

# The blocker itself, shown with criu alone: the user's own criu dump of
# its own container, in criu's unprivileged mode, stops at the user
# namespace. A criu that gets past it fails this test: then tern's refusal
# (criu-rootless.c) can be lifted.
@test "rootless-criu: criu 4.2's unprivileged mode, run by the user on its own container, stops at the user namespace (why tern refuses)" {
	start_user_counter
	as_user mkdir "$RL_DIR/raw"
	run as_user "$CRIU_PREFIX/bin/criu" dump --unprivileged --leave-running -t "$PID" \
		-D "$RL_DIR/raw" -o dump.log -v4
	[ "$status" -ne 0 ]
	grep -q "Unable to drop supplementary groups" "$RL_DIR/raw/dump.log" ||
		{ grep -i error "$RL_DIR/raw/dump.log"; false; }
	still_counting
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless-criu: --tcp-established is refused with its reason (CAP_NET_ADMIN in the host)" {
	start_user_counter
	run rtern checkpoint --tcp-established --image-path "$RL_DIR/img" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"without root: --tcp-established needs TCP repair, which needs CAP_NET_ADMIN"* ]]
	[ ! -e "$RL_DIR/img" ]
	still_counting
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless-criu: --lazy-pages is refused with its reason (userfaultfd), on checkpoint and on restore" {
	start_user_counter
	run rtern checkpoint --lazy-pages --page-server 127.0.0.1:1 --image-path "$RL_DIR/img" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"without root with --lazy-pages: the restored processes' memory comes through a userfaultfd"* ]]
	[[ "$output" == *"vm.unprivileged_userfaultfd"* ]]
	[ ! -e "$RL_DIR/img" ]
	still_counting
	mkdir "$RL_DIR/img2"
	chown "$RL_USER:" "$RL_DIR/img2"
	chmod 700 "$RL_DIR/img2"
	run rtern restore -d --lazy-pages --image-path "$RL_DIR/img2" -b "$BUNDLE" "$ID-r"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot restore \`$ID-r\` without root with --lazy-pages"* ]]
	[ ! -e "$XDG/tern/$ID-r" ]
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless-criu: restore is refused up front with its reason; no state, no process, no mount" {
	# images made by root of a container mapped to the user: what a user
	# would have to restore
	set_cmd "$(counter_cmd /tmp/count)"
	update_config '.root.readonly = false'
	chown "$RL_USER:" "$BUNDLE/config.json"
	local rroot=$BATS_TEST_TMPDIR/rootroot
	"$TERN_BIN" --root "$rroot" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	"$TERN_BIN" --root "$rroot" checkpoint --image-path "$RL_DIR/img" "$ID"
	[ -f "$RL_DIR/img/inventory.img" ]
	chown -R "$RL_USER:" "$RL_DIR/img"
	run rtern restore -d --image-path "$RL_DIR/img" -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot restore \`$ID\` without root: tern restores in a mount namespace of its own"* ]]
	[ ! -e "$XDG/tern/$ID" ]
	! pgrep -u "$RL_UID" -f "count" || false
	check_nothing_left "$ID"
}

@test "rootless-criu: snapshot is refused with the checkpoint's reason; no snapshot recorded, the container runs on" {
	start_user_counter
	run rtern snapshot "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"snapshot \`s1\` of \`$ID\`"*"user namespace of its own"* ]]
	run rtern snapshot --list --format json "$ID"
	[ "$status" -eq 0 ]
	[ "$(jq length <<<"$output")" = 0 ]
	still_counting
	# so rollback and clone have nothing to start from
	run rtern rollback "$ID" s1
	[ "$status" -ne 0 ]
	[[ "$output" == *"has no snapshot \`s1\`"* ]]
	still_counting
	run rtern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "rootless-criu: features says checkpoint works in a user namespace (root) and not rootless, the same for both" {
	run rtern features
	[ "$status" -eq 0 ]
	jq -e '.annotations."org.tern.checkpoint.userns.enabled" == "true"' <<<"$output"
	jq -e '.annotations."org.tern.checkpoint.rootless.enabled" == "false"' <<<"$output"
	[ "$output" = "$("$TERN_BIN" features)" ]
	run rtern checkpoint --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Without root (rootless), checkpoint, restore and snapshot are refused"* ]]
}
