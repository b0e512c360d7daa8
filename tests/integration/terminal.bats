#!/usr/bin/env bats
# process.terminal with --console-socket.

load helpers

@test "terminal: create --console-socket hands over the pty master" {
	update_config '.process.terminal = true'
	set_cmd 'tty; stty size >/dev/null && echo is-a-tty; echo done'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern create --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
	[[ "$out" == */dev/pts/0* ]]
	[[ "$out" == *is-a-tty* ]]
	[[ "$out" == *done* ]]
}

@test "terminal: run -d --console-socket, input reaches the process" {
	update_config '.process.terminal = true'
	set_cmd 'read line; echo "got:$line"'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out" $'hello\n'
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	grep -q 'got:hello' "$BATS_TEST_TMPDIR/tty.out"
}

@test "terminal: stdio of the process are the pty" {
	update_config '.process.terminal = true'
	set_cmd 'readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2 2>/dev/null || for i in 0 1 2; do readlink /proc/self/fd/$i; done'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	[ "$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out" | grep -c '^/dev/pts/0$')" -eq 3 ]
}

@test "terminal: terminal true without --console-socket in create fails" {
	update_config '.process.terminal = true'
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly console
}

@test "terminal: process.consoleSize is the pty's size" {
	update_config '.process.terminal = true | .process.consoleSize = {"height": 33, "width": 101}'
	set_cmd 'stty size'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
	[[ "$out" == *"33 101"* ]]
}
