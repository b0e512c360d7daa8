#!/usr/bin/env bats
# File descriptors: --preserve-fds and leak checks.

load helpers

fd_numbers() {
	echo "$1" | cut -d' ' -f1 | sort -n | tr '\n' ' '
}

@test "fds: only 0, 1, 2 are open in the container process" {
	set_args /bin/listfds
	# Offer the runtime some fds of ours, files and a directory: none may
	# reach the container.
	KEEP_FDS=1 run tern run -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR" 4</dev/null 6>"$BATS_TEST_TMPDIR/x" 9</etc/passwd
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 " ]
}

@test "fds: create/start: only 0, 1, 2 in the init process" {
	set_cmd '/bin/listfds >/tmp/fds'
	KEEP_FDS=1 run tern create -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR" 5</dev/null
	[ "$status" -eq 0 ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	[ "$(fd_numbers "$(cat "$BUNDLE/rootfs/tmp/fds")")" = "0 1 2 " ]
}

@test "fds: run --preserve-fds N passes fds 3..3+N-1" {
	echo three >"$BATS_TEST_TMPDIR/f3"
	echo four >"$BATS_TEST_TMPDIR/f4"
	set_args /bin/listfds
	KEEP_FDS=1 run tern run --preserve-fds 2 -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR/f3" 4<"$BATS_TEST_TMPDIR/f4" 5</dev/null
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 3 4 " ]
	[[ "$output" == *"3 $BATS_TEST_TMPDIR/f3"* ]]
	[[ "$output" == *"4 $BATS_TEST_TMPDIR/f4"* ]]
}

@test "fds: create --preserve-fds: the preserved fd is usable after start" {
	echo preserved >"$BATS_TEST_TMPDIR/f3"
	set_cmd 'cat <&3 >/tmp/got'
	KEEP_FDS=1 run tern create --preserve-fds 1 -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR/f3"
	[ "$status" -eq 0 ]
	tern start "$ID"
	wait_status "$ID" stopped
	[ "$(cat "$BUNDLE/rootfs/tmp/got")" = preserved ]
}

@test "fds: stdio of the container is the caller's" {
	set_cmd 'echo out; echo err >&2'
	run bash -c '"$1" --root "$2" run -b "$3" "$4" 2>/dev/null' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = out ]
	run bash -c '"$1" --root "$2" run -b "$3" "$4" 2>&1 >/dev/null' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID-2"
	[ "$output" = err ]
	set_cmd 'read line; echo "got $line"'
	run bash -c 'echo hello | "$1" --root "$2" run -b "$3" "$4"' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID-3"
	[ "$output" = "got hello" ]
}

@test "fds: exec --detach: only 0, 1, 2 in the process" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	# the list is renamed into place once complete
	KEEP_FDS=1 run tern exec -d "$ID" /bin/sh -c '/bin/listfds >/tmp/fds.tmp; mv /tmp/fds.tmp /tmp/fds' 3<"$BATS_TEST_TMPDIR" 4</ 6</dev/null
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/fds"
	[ "$(fd_numbers "$(cat "$BUNDLE/rootfs/tmp/fds")")" = "0 1 2 " ]
}

@test "fds: with a terminal, only 0, 1, 2 (the pty) in run and exec" {
	update_config '.process.terminal = true'
	set_cmd '/bin/listfds >/tmp/fds.tmp; mv /tmp/fds.tmp /tmp/fds; sleep '"$MARK"
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	KEEP_FDS=1 run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR" 5</
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/fds"
	[ "$(fd_numbers "$(cat "$BUNDLE/rootfs/tmp/fds")")" = "0 1 2 " ]
	start_recvtty "$BATS_TEST_TMPDIR/tty2.sock" "$BATS_TEST_TMPDIR/tty2.out"
	KEEP_FDS=1 run tern exec -t --console-socket "$BATS_TEST_TMPDIR/tty2.sock" "$ID" /bin/listfds 3<"$BATS_TEST_TMPDIR" 5</
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	[ "$(fd_numbers "$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty2.out")")" = "0 1 2 " ]
}

@test "fds: close_range refused around the runtime (an engine's older seccomp profile): the container still inherits no fd" {
	local deny=$BASE_ROOTFS/bin/deny-syscall
	set_args /bin/listfds
	KEEP_FDS=1 run in_file timeout -s KILL 60 "$deny" close_range \
		"$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID" 5</etc/passwd 7<"$BATS_TEST_TMPDIR"
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 " ]
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	KEEP_FDS=1 run in_file timeout -s KILL 60 "$deny" close_range \
		"$TERN_BIN" --root "$ROOT" exec "$ID-2" /bin/listfds 5</etc/passwd 7<"$BATS_TEST_TMPDIR"
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 " ]
}

# no_exec_left: the container holds its init and nothing else.
no_exec_left() {
	run tern ps --format json "$ID"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq length)" -eq 1 ] || {
		echo "processes in the container: $output"
		return 1
	}
}

@test "fds: exec --preserve-fds with a hole in 3..3+N-1 is refused, naming the fd" {
	# runc 1.1.5 does what tern did: its own fd (/sys/fs/cgroup) fills the hole
	is_tern || skip "runc 1.1.5 hands its own fd to the process in the hole"
	echo three >"$BATS_TEST_TMPDIR/f3"
	echo five >"$BATS_TEST_TMPDIR/f5"
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	# fd 4 was not passed: whatever tern opened there (a namespace fd, the
	# sync socket) would have become the process's fd 4
	KEEP_FDS=1 run tern exec --preserve-fds 3 "$ID" /bin/listfds 3<"$BATS_TEST_TMPDIR/f3" 4>&- 5<"$BATS_TEST_TMPDIR/f5"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" != *"0 /dev/null"* ]] # listfds never ran
	[[ "$output" == *"--preserve-fds 3: fd 4 (of 3 to 5) was not passed"* ]]
	no_exec_left
	# the same with --detach (whose wait for the exec was the sync socket)
	KEEP_FDS=1 run tern exec -d --preserve-fds 2 "$ID" /bin/sleep "$MARK" 3>&- 4<"$BATS_TEST_TMPDIR/f3"
	[ "$status" -ne 0 ]
	[[ "$output" == *"fd 3 (of 3 to 4) was not passed"* ]]
	no_exec_left
	# tern's own --log file in the hole is not the caller's either
	KEEP_FDS=1 run tern --log "$BATS_TEST_TMPDIR/log" exec --preserve-fds 1 "$ID" /bin/listfds 3>&-
	[ "$status" -ne 0 ]
	[[ "$output" == *"fd 3 (of 3 to 3) was not passed"* ]]
	no_exec_left
}

@test "fds: exec --preserve-fds N with every fd passed: 0, 1, 2 and those, nothing of tern's" {
	for n in 3 4 5; do echo "$n" >"$BATS_TEST_TMPDIR/f$n"; done
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	KEEP_FDS=1 run tern --log "$BATS_TEST_TMPDIR/log" exec --preserve-fds 3 "$ID" /bin/listfds \
		3<"$BATS_TEST_TMPDIR/f3" 4<"$BATS_TEST_TMPDIR/f4" 5<"$BATS_TEST_TMPDIR/f5" 6>&- 7>&- 8>&- 9>&-
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 3 4 5 " ]
	for n in 3 4 5; do
		[[ "$output" == *"$n $BATS_TEST_TMPDIR/f$n"* ]]
	done
}

@test "fds: run and create --preserve-fds with a hole in 3..3+N-1 are refused, naming the fd, leaving nothing" {
	is_tern || skip "runc 1.1.5 fails later, on its own dup of the missing fd"
	echo three >"$BATS_TEST_TMPDIR/f3"
	set_args /bin/listfds
	# fd 4 was not passed: the first fd tern opened (the bundle, the state
	# directory, the sync socket) would have become the container's fd 4
	KEEP_FDS=1 run tern run --preserve-fds 3 -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR/f3" 4>&- 5<"$BATS_TEST_TMPDIR/f3"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" != *"1 pipe:"* ]] # listfds never ran
	[[ "$output" == *"--preserve-fds 3: fd 4 (of 3 to 5) was not passed"* ]]
	check_nothing_left "$ID"
	KEEP_FDS=1 run tern create --preserve-fds 1 -b "$BUNDLE" "$ID" 3>&-
	[ "$status" -ne 0 ]
	[[ "$output" == *"--preserve-fds 1: fd 3 (of 3 to 3) was not passed"* ]]
	check_nothing_left "$ID"
	# socket activation's LISTEN_FDS count after the preserved ones
	KEEP_FDS=1 run env LISTEN_FDS=1 "$TERN_BIN" --root "$ROOT" run --preserve-fds 1 -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR/f3" 4>&-
	[ "$status" -ne 0 ]
	[[ "$output" == *"fd 4 (of 3 to 4) was not passed"* ]]
	check_nothing_left "$ID"
}

@test "fds: a caller that closed its stdio: the container gets /dev/null there, never an fd of tern's" {
	# Closed, fds 0 and 2 would be the first ones tern opens (the bundle,
	# the state directory, a socket) and go to the container as its stdio.
	# (Not through `run tern`: in_file gives tern a stdio of its own.)
	is_tern || skip "runc 1.1.5 gives the container pipes of its own there"
	set_args /bin/listfds
	run bash -c '"$1" --root "$2" run -b "$3" "$4" 0<&- 2>&-' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(fd_numbers "$output")" = "0 1 2 " ]
	[ "$(echo "$output" | grep '^0 ')" = "0 /dev/null" ]
	[ "$(echo "$output" | grep '^2 ')" = "2 /dev/null" ]
	# the same for create/start, whose init waits with all three held open
	# (the shell expands the readlinks before it redirects its stdout)
	set_cmd 'echo "$(readlink /proc/$$/fd/0) $(readlink /proc/$$/fd/1) $(readlink /proc/$$/fd/2)" >/tmp/fds'
	run bash -c '"$1" --root "$2" create -b "$3" "$4" 0<&- 1>&- 2>&-' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	tern start "$ID-2"
	wait_status "$ID-2" stopped
	cat "$BUNDLE/rootfs/tmp/fds"
	[ "$(cat "$BUNDLE/rootfs/tmp/fds")" = "/dev/null /dev/null /dev/null" ]
}
