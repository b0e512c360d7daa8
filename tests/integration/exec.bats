#!/usr/bin/env bats
# exec: a new process inside a running container.

load helpers

@test "exec: output and exit status are the process's" {
	start_sleeper
	run tern exec "$ID" /bin/echo hello
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	run tern exec "$ID" /bin/sh -c 'exit 5'
	[ "$status" -eq 5 ]
}

@test "exec: joins every namespace of the container" {
	# A user namespace too, so that all of them are covered; cgroup as well.
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	add_namespace user
	add_namespace cgroup
	update_config '.mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	make_traversable "$BUNDLE/rootfs"
	start_sleeper
	pid=$(state_field "$ID" pid)
	run tern exec "$ID" /bin/sh -c 'for n in $(ls /proc/self/ns); do echo "$n $(readlink /proc/self/ns/$n)"; done'
	[ "$status" -eq 0 ]
	# Every namespace the kernel lists (time and the *_for_children ones
	# included), compared with the container's init process.
	for n in $(ls /proc/$pid/ns); do
		want="$n $(readlink /proc/$pid/ns/$n)"
		[[ "$output" == *"$want"* ]] || {
			echo "exec is not in the init's $n namespace: want '$want' in: $output"
			false
		}
	done
	for n in cgroup ipc mnt net pid user uts; do
		[ "$(readlink /proc/$pid/ns/$n)" != "$(readlink /proc/$$/ns/$n)" ]
	done
}

@test "exec: joins the container's time namespace" {
	# runc 1.1.5 lacks this
	add_namespace time
	start_sleeper
	pid=$(state_field "$ID" pid)
	run tern exec "$ID" /bin/readlink /proc/self/ns/time
	[ "$status" -eq 0 ]
	[ "$output" = "$(readlink /proc/$pid/ns/time)" ]
	[ "$output" != "$(readlink /proc/$$/ns/time)" ]
}

@test "exec --process FILE" {
	start_sleeper
	cat >"$BATS_TEST_TMPDIR/process.json" <<-'JSON'
	{"args": ["/bin/sh", "-c", "echo $FOO $(pwd) $(id -u)"], "env": ["FOO=from-json", "PATH=/bin"],
	 "cwd": "/tmp", "user": {"uid": 1234, "gid": 1234}, "terminal": false}
	JSON
	run tern exec --process "$BATS_TEST_TMPDIR/process.json" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = "from-json /tmp 1234" ]
	run tern exec -p "$BATS_TEST_TMPDIR/process.json" "$ID"
	[ "$status" -eq 0 ]
}

@test "exec --env/-e and --cwd" {
	start_sleeper
	run tern exec --env FOO=bar --env BAZ=qux --cwd /tmp "$ID" /bin/sh -c 'echo "$FOO $BAZ $(pwd)"'
	[ "$status" -eq 0 ]
	[ "$output" = "bar qux /tmp" ]
	run tern exec -e FOO=short "$ID" /bin/sh -c 'echo "$FOO"'
	[ "$output" = short ]
}

@test "exec --user/-u uid[:gid] and --additional-gids/-g" {
	start_sleeper
	run tern exec --user 1000 "$ID" /bin/id -u
	[ "$output" = 1000 ]
	run tern exec -u 1000:2000 -g 10 -g 20 "$ID" /bin/sh -c 'echo "$(id -u) $(id -g) $(id -G)"'
	[ "$status" -eq 0 ]
	[[ "$output" == "1000 2000 "* ]]
	[[ " $output " == *" 10 "* ]]
	[[ " $output " == *" 20 "* ]]
	run tern exec --user 7:8 --additional-gids 30 "$ID" /bin/id -G
	[[ " $output " == *" 30 "* ]]
}

@test "exec --cap adds a capability" {
	start_sleeper
	run tern exec "$ID" /bin/grep CapEff /proc/self/status
	[ "$status" -eq 0 ]
	# spec default: AUDIT_WRITE(29) KILL(5) NET_BIND_SERVICE(10)
	[[ "$output" == *0000000020000420 ]]
	run tern exec --cap CAP_SYS_ADMIN "$ID" /bin/grep CapEff /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$output" == *0000000020200420 ]]
}

@test "exec --no-new-privs" {
	update_config '.process.noNewPrivileges = false'
	start_sleeper
	run tern exec "$ID" /bin/grep NoNewPrivs /proc/self/status
	[[ "$output" == *0 ]]
	run tern exec --no-new-privs "$ID" /bin/grep NoNewPrivs /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$output" == *1 ]]
}

@test "exec --detach/-d with --pid-file" {
	start_sleeper
	run tern exec -d --pid-file "$BATS_TEST_TMPDIR/exec.pid" "$ID" /bin/sleep "$MARK"
	[ "$status" -eq 0 ]
	pid=$(cat "$BATS_TEST_TMPDIR/exec.pid")
	echo "pid file: $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
	[ -d "/proc/$pid" ]
	grep -q "$MARK" "/proc/$pid/cmdline"
	[ "$(readlink /proc/$pid/ns/pid)" = "$(readlink /proc/$(state_field "$ID" pid)/ns/pid)" ]
	run tern exec --detach "$ID" /bin/sleep "$MARK"
	[ "$status" -eq 0 ]
	[ "$(pgrep -f "sleep $MARK" | wc -l)" -eq 3 ]
}

@test "exec --tty/-t with --console-socket" {
	start_sleeper
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	# --console-socket needs --detach: the caller holds the master, not us.
	run tern exec -t -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" "$ID" /bin/sh -c 'tty; echo tty-ok'
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	echo "tty output: $(cat "$BATS_TEST_TMPDIR/tty.out")"
	grep -q '/dev/pts/' "$BATS_TEST_TMPDIR/tty.out"
	grep -q 'tty-ok' "$BATS_TEST_TMPDIR/tty.out"
}

@test "exec --preserve-fds N passes fds 3..3+N-1 and nothing more" {
	start_sleeper
	echo three >"$BATS_TEST_TMPDIR/f3"
	echo four >"$BATS_TEST_TMPDIR/f4"
	KEEP_FDS=1 run tern exec --preserve-fds 1 "$ID" /bin/listfds 3<"$BATS_TEST_TMPDIR/f3" 4<"$BATS_TEST_TMPDIR/f4"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f1 | sort -n | tr '\n' ' ')" = "0 1 2 3 " ]
	[[ "$output" == *"3 $BATS_TEST_TMPDIR/f3"* ]]
	KEEP_FDS=1 run tern exec --preserve-fds 2 "$ID" /bin/sh -c 'cat <&3; cat <&4' 3<"$BATS_TEST_TMPDIR/f3" 4<"$BATS_TEST_TMPDIR/f4"
	[ "$status" -eq 0 ]
	[ "$output" = "three
four" ]
}

@test "exec: no fd leaks into the process" {
	start_sleeper
	KEEP_FDS=1 run tern exec "$ID" /bin/listfds 3<"$BATS_TEST_TMPDIR" 5</dev/null 7>"$BATS_TEST_TMPDIR/x"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | cut -d' ' -f1 | sort -n | tr '\n' ' ')" = "0 1 2 " ]
}

@test "exec into a stopped container fails" {
	set_cmd 'exit 0'
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" stopped
	run tern exec "$ID" /bin/true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"$ID"* ]]
}

@test "exec of a missing binary fails and names it" {
	start_sleeper
	run tern exec "$ID" /no/such/binary
	[ "$status" -ne 0 ]
	[[ "$output" == */no/such/binary* ]]
}

@test "exec --apparmor / --process-label: refused with a clear error on a host without that LSM" {
	[ ! -e /sys/module/apparmor ] || skip "LOUD: this host has AppArmor; this test covers hosts without it"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern exec --apparmor some-profile "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"--apparmor"*"AppArmor"* ]]
	run tern exec --process-label system_u:system_r:container_t:s0 "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"--process-label"*"SELinux"* ]]
}

@test "exec: the process leads its own session and process group in the container's pid namespace (as runc), with and without -t" {
	start_sleeper
	# /proc/PID/stat: pid (comm) state ppid pgrp session
	run tern exec "$ID" /bin/sh -c 'cut -d" " -f1,5,6 /proc/$$/stat'
	[ "$status" -eq 0 ]
	local pid=${output%% *}
	[ "$pid" -gt 1 ]
	[ "$output" = "$pid $pid $pid" ]
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern exec -t -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" "$ID" \
		/bin/sh -c 'cut -d" " -f1,5,6 /proc/$$/stat >/tmp/pg.tmp && mv /tmp/pg.tmp /tmp/pg'
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/pg"
	read -r pid pgrp sid <"$BUNDLE/rootfs/tmp/pg"
	[ "$pgrp" = "$pid" ]
	[ "$sid" = "$pid" ]
}

exec_capmask() {
	local m=0 c
	for c in "$@"; do m=$((m | (1 << c))); done
	printf '%016x' "$m"
}

@test "exec: capabilities: --process without them gets the container's; none when the container has none; --cap adds to that" {
	# CAP_CHOWN=0 CAP_KILL=5
	update_config '.process.capabilities = {"bounding": ["CAP_CHOWN", "CAP_KILL"],
		"effective": ["CAP_CHOWN", "CAP_KILL"], "permitted": ["CAP_CHOWN", "CAP_KILL"]}'
	start_sleeper
	local proc=$BATS_TEST_TMPDIR/process.json
	echo '{"args": ["/bin/grep", "^Cap", "/proc/self/status"], "cwd": "/",
		"env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}' >"$proc"
	run tern exec --process "$proc" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapBnd:	$(exec_capmask 0 5)"* ]]
	[[ "$output" == *"CapEff:	$(exec_capmask 0 5)"* ]]
	# a container without process.capabilities: none, for exec too
	update_config 'del(.process.capabilities)'
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	run tern exec --process "$proc" "$ID-2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapBnd:	$(exec_capmask)"* ]]
	[[ "$output" == *"CapEff:	$(exec_capmask)"* ]]
	run tern exec "$ID-2" /bin/grep ^Cap /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapBnd:	$(exec_capmask)"* ]]
	[[ "$output" == *"CapPrm:	$(exec_capmask)"* ]]
	# runc 1.1.5 lacks this: --cap on a container without capabilities
	# crashes it (nil pointer)
	is_runc && return
	run tern exec --cap CAP_KILL "$ID-2" /bin/grep ^Cap /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapBnd:	$(exec_capmask 5)"* ]]
	[[ "$output" == *"CapEff:	$(exec_capmask 5)"* ]]
}

@test "exec: args[0] that execve refuses (a directory, no execute bit, a noexec mount, root's only for another user) fails with Permission denied" {
	local r=$BUNDLE/rootfs a
	mkdir -p "$r/adir" "$r/mnt/noexec" "$BATS_TEST_TMPDIR/noexec"
	printf '#!/bin/sh\necho ran\n' | tee "$r/noexec.sh" "$r/rootonly.sh" "$BATS_TEST_TMPDIR/noexec/run.sh" >/dev/null
	chmod 644 "$r/noexec.sh"
	chmod 700 "$r/rootonly.sh"
	chmod 755 "$BATS_TEST_TMPDIR/noexec/run.sh"
	update_config ".mounts += [{\"destination\": \"/mnt/noexec\", \"type\": \"bind\",
		\"source\": \"$BATS_TEST_TMPDIR/noexec\", \"options\": [\"bind\", \"noexec\"]}]"
	start_sleeper
	for a in /adir /noexec.sh /mnt/noexec/run.sh; do
		run tern exec "$ID" "$a"
		[ "$status" -ne 0 ]
		[[ "${output,,}" == *"permission denied"* ]]
		is_runc || [[ "$output" == *"exec \`$a\`: Permission denied"* ]]
	done
	run tern exec --user 1000:1000 "$ID" /rootonly.sh
	[ "$status" -ne 0 ]
	[[ "${output,,}" == *"permission denied"* ]]
	run tern exec "$ID" /rootonly.sh
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
	# the container still runs only its init
	run tern exec "$ID" /bin/ps -o pid,args
	[ "$(echo "$output" | grep -vc -e PID -e ps)" -eq 1 ]
	# runc 1.1.5 lacks this: its PATH search says "not found" (see errors.bats)
	is_runc && return
	run tern exec --env PATH=/adir:/:/bin "$ID" noexec.sh
	[ "$status" -ne 0 ]
	[[ "$output" == *"exec \`noexec.sh\`: Permission denied"* ]]
}

exec_capmask() {
	local m=0 c
	for c in "$@"; do m=$((m | (1 << c))); done
	printf '%016x' "$m"
}

@test "exec: stdio (pipe, file) and the pty of -t belong to --user, as runc gives them" {
	start_sleeper
	# a pipe, and a regular file of root's: chowned to uid 1, gid kept
	run bash -c '"$1" --root "$2" exec --user 1:1 "$3" /bin/sh -c "stat -L -c %u:%g /proc/\$\$/fd/1" | cat' \
		_ "$TERN_BIN" "$ROOT" "$ID"
	[ "$output" = 1:0 ]
	# (-d: in the foreground runc passes pipes of its own, not our stdio)
	: >"$BATS_TEST_TMPDIR/out.file"
	"$TERN_BIN" --root "$ROOT" exec -d --user 1:1 "$ID" /bin/sh -c \
		'o=$(stat -L -c %u:%g /proc/$$/fd/1) && echo "$o" >/tmp/o.tmp && mv /tmp/o.tmp /tmp/o' \
		</dev/null >"$BATS_TEST_TMPDIR/out.file" 2>&1
	wait_for_file "$BUNDLE/rootfs/tmp/o"
	[ "$(cat "$BUNDLE/rootfs/tmp/o")" = 1:0 ]
	[ "$(stat -c %u:%g "$BATS_TEST_TMPDIR/out.file")" = 1:0 ]
	# the pty made for -t
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern exec -t -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" --user 1:1 "$ID" \
		/bin/sh -c 'stat -L -c %u /proc/$$/fd/0 >/tmp/pty.tmp && mv /tmp/pty.tmp /tmp/pty'
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/pty"
	[ "$(cat "$BUNDLE/rootfs/tmp/pty")" = 1 ]
}

# dumpable_before_pid_ns LOG: in strace LOG, every task that joins a pid
# namespace (setns ... CLONE_NEWPID; its children are born in it) made
# itself non-dumpable (PR_SET_DUMPABLE 0) since its last execve, and at
# least one such join is there. The flag is inherited across clone, so the
# exec child is never dumpable inside the container's pid namespace.
dumpable_before_pid_ns() {
	awk '
	{ pid = $1 }
	/ execve(at)?\(/ { safe[pid] = 0 }
	/ prctl\(PR_SET_DUMPABLE, (0|SUID_DUMP_DISABLE)[,)]/ { safe[pid] = 1 }
	/ setns\(.*CLONE_NEWPID/ {
		joins++
		if (!safe[pid]) { print "task " pid " joins the pid namespace while dumpable: " $0; bad = 1 }
	}
	END {
		if (joins == 0) { print "no setns(CLONE_NEWPID) in the trace"; exit 1 }
		exit bad
	}' "$1"
}

@test "exec: the exec child is non-dumpable before it is in the container's pid namespace" {
	command -v strace >/dev/null ||
		skip "!!! strace IS NOT INSTALLED: this test reads the order of prctl and setns from it (apt-get install strace) !!!"
	start_sleeper
	run strace -f -qq -o "$BATS_TEST_TMPDIR/strace.log" -e trace=execve,execveat,prctl,setns \
		"$TERN_BIN" --root "$ROOT" exec "$ID" /bin/true
	[ "$status" -eq 0 ]
	run dumpable_before_pid_ns "$BATS_TEST_TMPDIR/strace.log"
	echo "$output"
	[ "$status" -eq 0 ]
}

# runc reads --process from whatever it can open: `-p <(jq ...)` is a pipe
# (/dev/fd/N), and a FIFO is read once its writer has written and closed.
@test "exec --process from a pipe and from a FIFO" {
	start_sleeper
	proc='{args: ["/bin/sh", "-c", "echo \($m) $A"], cwd: "/", env: ["A=there"],
		user: {uid: 0, gid: 0}}'
	run tern exec --process <(jq -n --arg m pipe "$proc") "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "pipe there" ]
	mkfifo "$BATS_TEST_TMPDIR/p.fifo"
	# (bounded: a writer whose reader never opens the FIFO must not stay)
	timeout 60 sh -c 'jq -n --arg m fifo "$1" >"$2"' sh "$proc" "$BATS_TEST_TMPDIR/p.fifo" 3>&- &
	run tern exec -p "$BATS_TEST_TMPDIR/p.fifo" "$ID"
	wait $!
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "fifo there" ]
}

@test "exec --process from a pipe larger than the size limit is refused, naming it" {
	is_tern || skip "runc reads a process file of any size"
	start_sleeper
	run tern exec -p <(
		printf '{"args": ["/bin/true"], "cwd": "/", "env": ["A='
		head -c $((65 << 20)) /dev/zero | tr '\0' x
		printf '"]}'
	) "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"64 MiB"* ]]
	# and a directory or a device is still no process file
	run tern exec -p /dev/null "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not a regular file or a pipe"* ]]
}

# runc exec exits 255 when it, not the process, failed, so that a caller
# can tell a refused exec from the process's own `exit 1`; errors in the
# options themselves exit 1 (runc's CLI library); the message keeps the
# strerror text podman maps to 126 and 127.
@test "exec: a runtime failure exits 255, the process's own status is kept" {
	start_sleeper
	run tern exec "$ID" /bin/sh -c 'exit 1'
	[ "$status" -eq 1 ]
	run tern exec "$ID" /bin/sh -c 'exit 255'
	[ "$status" -eq 255 ]
	run tern exec no-such-container /bin/true
	[ "$status" -eq 255 ]
	[[ "$output" == *"does not exist"* ]]
	run tern exec --cwd /no-such-dir "$ID" /bin/true
	[ "$status" -eq 255 ]
	[[ "$output" == *no-such-dir* ]]
	run tern exec "$ID" /no-such-program
	[ "$status" -eq 255 ]
	[[ "${output,,}" == *"no such file or directory"* ]]
	run tern exec "$ID" /image-dir/file
	[ "$status" -eq 255 ]
	[[ "${output,,}" == *"permission denied"* ]]
	run tern exec "$ID"
	[ "$status" -eq 255 ]
	run tern exec -p "$BATS_TEST_TMPDIR/no-such.json" "$ID"
	[ "$status" -eq 255 ]
	[[ "$output" == *no-such.json* ]]
	run tern exec --no-such-flag "$ID" /bin/true
	[ "$status" -eq 1 ]
	tern pause "$ID"
	run tern exec "$ID" /bin/true
	[ "$status" -eq 255 ]
	[[ "$output" == *paused* ]]
	tern resume "$ID"
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	run tern exec "$ID" /bin/true
	[ "$status" -eq 255 ]
	[[ "$output" == *stopped* ]]
}
