#!/usr/bin/env bats
# Attacks from the runc/crun CVE classes, each performed for real: a test
# fails when its attack works. (CVE numbers name the class, not a claim that
# tern shares runc's code.)

load helpers

# Host-side view of the mounts, for "nothing was mounted on the host".
mounts_mentioning() {
	grep -F "$1" /proc/self/mountinfo || true
}

# A private copy of the runtime under test: the CVE-2019-5736 attacks
# write into the runtime's executable when they work, and must not be able
# to break the build tree's binary while showing it.
use_runtime_copy() {
	cp "$TERN_BIN" "$BATS_TEST_TMPDIR/runtime-copy"
	TERN_BIN=$BATS_TEST_TMPDIR/runtime-copy
	RUNTIME_SUM=$(sha256sum <"$TERN_BIN")
}

# wait_for_line FILE TEXT [SECONDS]
wait_for_line() {
	local i n=$((${3:-10} * 10))
	for ((i = 0; i < n; i++)); do
		grep -qF "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "timed out waiting for '$2' in $1:" >&2
	cat "$1" >&2 2>/dev/null
	return 1
}

# ---- 1. CVE-2019-5736: overwriting the runtime through /proc/PID/exe ----

# The attacker (tests/helpers/exeattack.c) runs in the container and races
# the runtime processes that enter it: it opens /proc/PID/exe of one that is
# still the runtime's binary, then reopens that file for writing once the
# runtime is gone. RUNTIME_UNDER_ATTACK lets the test be pointed at an older
# build to see it fail.
prepare_exe_attack() {
	use_runtime_copy
	if [ -n "${RUNTIME_UNDER_ATTACK:-}" ]; then
		cp "$RUNTIME_UNDER_ATTACK" "$TERN_BIN"
		RUNTIME_SUM=$(sha256sum <"$TERN_BIN")
	fi
}

# check_exe_attack_failed LOG: the attacker could not write to the
# runtime's executable. Against a runtime without protection it gets hold
# of the exe within a few tries (seen: 2 to 20) and the write works; tern
# is not dumpable until it execs, so the attacker should never even open
# it, and if it did, it would hold only a file it cannot write (on a
# read-only overlay, or a sealed copy).
check_exe_attack_failed() {
	local log=$1
	if grep -q "opened the exe of pid" "$log"; then
		wait_for_line "$log" "open for writing through" 30
	fi
	cat "$log"
	! grep -q "ATTACK WORKED" "$log" || false
	[ "$(sha256sum <"$TERN_BIN")" = "$RUNTIME_SUM" ]
}

@test "security: CVE-2019-5736: a process in the container cannot write to the runtime binary through an exec'ing runtime" {
	prepare_exe_attack
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern exec -d "$ID" /bin/sh -c '/bin/exeattack 20 >/tmp/attack.log 2>&1'
	[ "$status" -eq 0 ]
	log=$BUNDLE/rootfs/tmp/attack.log
	wait_for_line "$log" "attacker ready"
	# Each exec child is the runtime inside the container until it execs.
	for i in $(seq 100); do
		"$TERN_BIN" --root "$ROOT" exec "$ID" /bin/true </dev/null >/dev/null 2>&1 3>&-
		grep -q "opened the exe" "$log" && break
	done
	echo "attacker tries: $i execs"
	check_exe_attack_failed "$log"
}

@test "security: CVE-2019-5736: a process in the container cannot write to the runtime binary through a starting init" {
	prepare_exe_attack
	# The attacker's container; victims join its pid namespace, so the
	# attacker sees each victim's init, the runtime until it execs.
	set_cmd "/bin/exeattack 20 >/tmp/attack.log 2>&1; sleep $MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	log=$BUNDLE/rootfs/tmp/attack.log
	wait_for_line "$log" "attacker ready"
	pid=$(state_field "$ID" pid)
	mkdir "$BATS_TEST_TMPDIR/victim"
	cp "$BUNDLE/config.json" "$BATS_TEST_TMPDIR/victim/"
	update_config ".root.path = \"$BUNDLE/rootfs\" | .process.args = [\"/bin/true\"]
		| .linux.namespaces |= map(if .type == \"pid\" then .path = \"/proc/$pid/ns/pid\" else . end)" \
		"$BATS_TEST_TMPDIR/victim"
	for i in $(seq 40); do
		"$TERN_BIN" --root "$ROOT" run -b "$BATS_TEST_TMPDIR/victim" "$ID-v$i" </dev/null >/dev/null 2>&1 3>&-
		grep -q "opened the exe" "$log" && break
	done
	echo "attacker tries: $i runs"
	check_exe_attack_failed "$log"
}

@test "security: CVE-2019-5736: the runtime that enters a container runs from a read-only overlay (or a sealed copy)" {
	prepare_exe_attack
	set_args /bin/sleep "$MARK"
	"$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID" </dev/null >"$BATS_TEST_TMPDIR/runner.out" 2>&1 3>&- &
	runner=$!
	wait_status "$ID" running 60 || { cat "$BATS_TEST_TMPDIR/runner.out"; false; }
	exe=$(readlink "/proc/$runner/exe")
	echo "exe: $exe ($(stat -L -f -c %T "/proc/$runner/exe"))"
	# a read-only overlay of its directory, attached to no mount tree, or
	# where that cannot be made, a sealed memfd
	[[ "$exe" == /memfd:* ]] || [ "$(stat -L -f -c %T "/proc/$runner/exe")" = overlayfs ]
	is_runc || [[ "$exe" == "/$(basename "$TERN_BIN")" ]] || [[ "$exe" == /memfd:* ]]
	# What an attacker holding that file could do once it is not busy.
	exec 7<"/proc/$runner/exe"
	tern kill "$ID" KILL
	wait "$runner" || true
	run bash -c 'echo PWNED >>/proc/self/fd/7' 7<&7
	exec 7<&-
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(sha256sum <"$TERN_BIN")" = "$RUNTIME_SUM" ]
}

@test "security: CVE-2016-9962: a created init's fds, cwd and exe are out of reach of the container's processes" {
	prepare_exe_attack
	touch "$BATS_TEST_TMPDIR/host-marker-$MARK"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	# A created, not started, container in the same pid namespace: its
	# init is the runtime, waiting for `start` with the state directory open.
	mkdir "$BATS_TEST_TMPDIR/victim"
	cp "$BUNDLE/config.json" "$BATS_TEST_TMPDIR/victim/"
	update_config ".root.path = \"$BUNDLE/rootfs\" | .process.args = [\"/bin/true\"]
		| .linux.namespaces |= map(if .type == \"pid\" then .path = \"/proc/$pid/ns/pid\" else . end)" \
		"$BATS_TEST_TMPDIR/victim"
	run tern create -b "$BATS_TEST_TMPDIR/victim" "$ID-victim"
	[ "$status" -eq 0 ]
	run tern exec "$ID" /bin/sh -c '
		for p in /proc/[0-9]*; do
			for f in $p/exe $p/cwd $p/root $p/fd/*; do
				for up in "" ../ ../../ ../../../ ../../../../ ../../../../../ ../../../../../../; do
					[ -e "$f/${up}host-marker-'"$MARK"'" ] && echo "ESCAPED through $f"
				done
			done
			echo "exe of $p: $(readlink $p/exe 2>&1)"
		done 2>/dev/null; echo scanned'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *scanned* ]]
	[[ "$output" != *ESCAPED* ]]
	[ "$(sha256sum <"$TERN_BIN")" = "$RUNTIME_SUM" ]
}

# ---- 2. CVE-2024-21626: runtime fds and process.cwd ----

@test "security: CVE-2024-21626: process.cwd /proc/self/fd/N never starts the process outside the rootfs" {
	touch "$BUNDLE/rootfs/marker-$MARK"
	set_cmd "[ -e ../../../../../../../../marker-$MARK ] && echo INSIDE || echo OUTSIDE"
	for n in 3 4 5 6 7 8 9 10 11 12; do
		update_config ".process.cwd = \"/proc/self/fd/$n\""
		run tern run -b "$BUNDLE" "$ID-$n"
		echo "fd $n: status $status: $output"
		if [ "$status" -eq 0 ]; then
			[ "$output" = INSIDE ]
		else
			[[ "$output" == *"process.cwd"* ]]
			check_nothing_left "$ID-$n"
		fi
	done
}

@test "security: CVE-2024-21626: process.cwd with .. stays inside the rootfs" {
	touch "$BUNDLE/rootfs/marker-$MARK"
	set_cmd "[ -e marker-$MARK ] && echo INSIDE || echo OUTSIDE"
	update_config '.process.cwd = "/../../../../../.."'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = INSIDE ]
	# A cwd that is a symlink out of the rootfs is followed inside it.
	ln -s ../../../../../../../.. "$BUNDLE/rootfs/up"
	update_config '.process.cwd = "/up"'
	run tern run -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	[ "$output" = INSIDE ]
}

@test "security: CVE-2024-21626: exec --cwd /proc/self/fd/N never starts the process outside the rootfs" {
	touch "$BUNDLE/rootfs/marker-$MARK"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	for n in 3 4 5 6 7 8 9 10 11 12 13 14; do
		KEEP_FDS=1 run tern exec --cwd "/proc/self/fd/$n" "$ID" /bin/sh -c \
			"[ -e ../../../../../../../../marker-$MARK ] && echo INSIDE || echo OUTSIDE" 3<"$BATS_TEST_TMPDIR" 5</
		echo "fd $n: status $status: $output"
		if [ "$status" -eq 0 ]; then
			[ "$output" = INSIDE ]
		else
			[[ "$output" == *"cwd"* ]]
		fi
	done
}

@test "security: CVE-2024-21626: the container process holds only stdio, as itself and as /proc/1/fd shows it" {
	# Runtime fds offered by the caller (a directory among them) must not
	# reach the container process: neither in its own fd table nor in
	# what /proc/1/fd shows to a process exec'd beside it.
	# the list is renamed into place once complete
	set_cmd "/bin/listfds >/tmp/fds.tmp; mv /tmp/fds.tmp /tmp/fds; sleep $MARK"
	KEEP_FDS=1 run tern run -d -b "$BUNDLE" "$ID" 3<"$BATS_TEST_TMPDIR" 4</ 5</dev/null
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/fds"
	[ "$(cut -d' ' -f1 "$BUNDLE/rootfs/tmp/fds" | sort -n | tr '\n' ' ')" = "0 1 2 " ]
	run tern exec "$ID" /bin/sh -c 'ls /proc/1/fd | sort -n | tr "\n" " "'
	[ "$status" -eq 0 ]
	[ "$output" = "0 1 2 " ]
}

# ---- 3. mount targets that are symlinks to the host ----

@test "security: mount destinations that are symlinks to host paths stay inside the rootfs" {
	host=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$host/abs" "$host/rel"
	ln -s "$host/abs" "$BUNDLE/rootfs/abs-link"
	ln -s "../../../../../../../../../..$host/rel" "$BUNDLE/rootfs/rel-link"
	update_config '.mounts += [
		{"destination": "/abs-link", "type": "tmpfs", "source": "tmpfs"},
		{"destination": "/rel-link/sub", "type": "tmpfs", "source": "tmpfs"}]'
	set_cmd "touch /abs-link/planted /rel-link/sub/planted && touch /tmp/planted; sleep $MARK"
	before=$(mounts_mentioning "$host")
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/planted"
	[ "$(mounts_mentioning "$host")" = "$before" ]
	[ -z "$(ls -A "$host/abs")" ]
	[ -z "$(ls -A "$host/rel")" ]
	# The mounts are there, inside the rootfs.
	run tern exec "$ID" /bin/sh -c 'ls /abs-link /rel-link/sub'
	[ "$status" -eq 0 ]
	[[ "$output" == *planted*planted* ]]
	[ -d "$BUNDLE/rootfs$host/abs" ]
	[ -d "$BUNDLE/rootfs$host/rel/sub" ]
}

@test "security: maskedPaths and readonlyPaths that are symlinks to host paths stay inside the rootfs" {
	host=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$host/dir"
	echo secret >"$host/file"
	ln -s "$host/file" "$BUNDLE/rootfs/masked-file"
	ln -s "../../../../../../../../..$host/dir" "$BUNDLE/rootfs/masked-dir"
	ln -s "$host/dir" "$BUNDLE/rootfs/ro-dir"
	mkdir -p "$BUNDLE/rootfs$host/dir"
	echo inside >"$BUNDLE/rootfs$host/file"
	update_config '.linux.maskedPaths += ["/masked-file", "/masked-dir"]
		| .linux.readonlyPaths += ["/ro-dir"]'
	set_cmd "cat /masked-file; echo x >$host/dir/w 2>/dev/null && echo WRITABLE; touch /tmp/tried; sleep $MARK"
	before=$(mounts_mentioning "$host")
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/tried"
	[ "$(mounts_mentioning "$host")" = "$before" ]
	[ "$(cat "$host/file")" = secret ]
	[ -z "$(ls -A "$host/dir")" ]
	echo probe >"$host/dir/probe" # still writable on the host
	rm "$host/dir/probe"
}

@test "security: linux.devices paths through symlinks to the host stay inside the rootfs" {
	host=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$host"
	echo secret >"$host/null-file"
	# /dev from the image (no tmpfs over it), with planted links.
	update_config '.mounts |= map(select(.destination != "/dev"))
		| .linux.devices = [{"path": "/dev/evil/zero", "type": "c", "major": 1, "minor": 5}]'
	mkdir -p "$BUNDLE/rootfs/dev"
	ln -s "$host" "$BUNDLE/rootfs/dev/evil"
	ln -s "$host/null-file" "$BUNDLE/rootfs/dev/null"
	ln -s "../../../../../../../..$host/tty-file" "$BUNDLE/rootfs/dev/tty"
	before=$(mounts_mentioning "$host")
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(mounts_mentioning "$host")" = "$before" ]
	[ "$(ls -A "$host")" = null-file ]
	[ "$(cat "$host/null-file")" = secret ]
	[ -c "$BUNDLE/rootfs/dev/null" ]
	[ -c "$BUNDLE/rootfs$host/zero" ]
}

# ---- 4. CVE-2025-31133: the /dev/null used for masking ----

@test "security: CVE-2025-31133: a file bound over /dev/null is never used as the mask" {
	echo attacker-file >"$BATS_TEST_TMPDIR/fake-null"
	update_config '.mounts += [{"destination": "/dev/null", "type": "bind", "source": "'"$BATS_TEST_TMPDIR/fake-null"'", "options": ["bind"]}]
		| .linux.maskedPaths += ["/image-dir/file"]'
	set_cmd 'cat /image-dir/file; stat -c %t:%T /dev/null'
	run tern run -b "$BUNDLE" "$ID"
	echo "$output"
	if [ "$status" -eq 0 ]; then
		[ "$output" = "1:3" ]
	else
		check_fails_cleanly /dev/null
	fi
	[ "$(cat "$BATS_TEST_TMPDIR/fake-null")" = attacker-file ]
}

@test "security: CVE-2025-31133: a /dev whose null is a symlink or a file fails masking clearly" {
	mkdir -p "$BATS_TEST_TMPDIR/fakedev"
	echo attacker-file >"$BATS_TEST_TMPDIR/fakedev/secret"
	update_config '.mounts |= map(if .destination == "/dev" then {"destination": "/dev", "type": "bind", "source": "'"$BATS_TEST_TMPDIR/fakedev"'", "options": ["rbind"]} else . end)
		| .mounts |= map(select(.destination | startswith("/dev/") | not))
		| .linux.maskedPaths += ["/image-dir/file"]'
	set_cmd 'cat /image-dir/file'
	ln -s secret "$BATS_TEST_TMPDIR/fakedev/null"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly maskedPaths /dev/null
	rm "$BATS_TEST_TMPDIR/fakedev/null"
	cp "$BATS_TEST_TMPDIR/fakedev/secret" "$BATS_TEST_TMPDIR/fakedev/null"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly maskedPaths /dev/null
}

# ---- 5. CVE-2025-52565: /dev/console and /dev/ptmx ----

@test "security: CVE-2025-52565: a /dev/console symlink to a host file is replaced, not followed" {
	host=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$host"
	echo secret >"$host/console-file"
	update_config '.process.terminal = true | .mounts |= map(select(.destination != "/dev"))'
	set_cmd 'stat -c %F /dev/console; tty; echo done'
	mkdir -p "$BUNDLE/rootfs/dev"
	ln -s "$host/console-file" "$BUNDLE/rootfs/dev/console"
	mkdir -p "$BUNDLE/rootfs$host"
	echo inside >"$BUNDLE/rootfs$host/console-file"
	before=$(mounts_mentioning "$host")
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait "$RECVTTY_PID"
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
	echo "$out"
	[[ "$out" == *"character special file"* ]]
	[[ "$out" == *done* ]]
	[ "$(mounts_mentioning "$host")" = "$before" ]
	[ "$(cat "$host/console-file")" = secret ]
	[ "$(cat "$BUNDLE/rootfs$host/console-file")" = inside ]
}

@test "security: CVE-2025-52565: /dev/ptmx and /dev/pts/N planted in a bound /dev are not used" {
	host=$BATS_TEST_TMPDIR/host-target
	mkdir -p "$host" "$BATS_TEST_TMPDIR/fakedev/pts"
	echo secret >"$host/file"
	# /dev bound from a directory the attacker filled: ptmx is a link to
	# a plain file, no devpts instance behind it.
	update_config '.process.terminal = true
		| .mounts |= map(select(.destination | startswith("/dev") | not))
		| .mounts += [{"destination": "/dev", "type": "bind", "source": "'"$BATS_TEST_TMPDIR/fakedev"'", "options": ["rbind"]}]'
	ln -s "$host/file" "$BATS_TEST_TMPDIR/fakedev/ptmx"
	mkdir -p "$BUNDLE/rootfs$host"
	echo inside >"$BUNDLE/rootfs$host/file"
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	check_fails_cleanly ptmx
	[ "$(cat "$host/file")" = secret ]
	[ "$(cat "$BUNDLE/rootfs$host/file")" = inside ]
}

# ---- 6. CVE-2025-52881: writes to /proc through a verified procfs ----

@test "security: CVE-2025-52881: linux.sysctl is not redirected by a bind over its /proc/sys file" {
	echo original >"$BATS_TEST_TMPDIR/fake-sysctl"
	# /proc/sys/kernel/ns_last_pid is one of the few files a bind may cover.
	update_config '.mounts += [{"destination": "/proc/sys/kernel/ns_last_pid", "type": "bind", "source": "'"$BATS_TEST_TMPDIR/fake-sysctl"'", "options": ["bind"]}]
		| .linux.sysctl = {"kernel.ns_last_pid": "4242"}'
	set_cmd 'echo started'
	run tern run -b "$BUNDLE" "$ID"
	echo "$output"
	[ "$(cat "$BATS_TEST_TMPDIR/fake-sysctl")" = original ]
	if [ "$status" -eq 0 ]; then
		[ "$output" = started ]
	else
		check_fails_cleanly linux.sysctl
	fi
}

@test "security: CVE-2025-52881: a bind reaching /proc/sys through a symlink does not redirect linux.sysctl" {
	echo original >"$BATS_TEST_TMPDIR/fake-sysctl"
	ln -s /proc "$BUNDLE/rootfs/pp"
	update_config '.mounts += [{"destination": "/pp/sys/kernel/domainname", "type": "bind", "source": "'"$BATS_TEST_TMPDIR/fake-sysctl"'", "options": ["bind"]}]
		| .linux.sysctl = {"kernel.domainname": "attacker.example"}'
	update_config '.linux.maskedPaths = [] | .linux.readonlyPaths = []'
	set_cmd 'echo started'
	run tern run -b "$BUNDLE" "$ID"
	echo "$output"
	[ "$(cat "$BATS_TEST_TMPDIR/fake-sysctl")" = original ]
	if [ "$status" -eq 0 ]; then
		[ "$output" = started ]
	else
		check_fails_cleanly /proc
	fi
}

@test "security: CVE-2025-52881: a host directory bound on /proc receives neither sysctls nor oom_score_adj" {
	fake=$BATS_TEST_TMPDIR/fakeproc
	mkdir -p "$fake/sys/kernel" "$fake/self"
	echo original >"$fake/sys/kernel/domainname"
	echo original >"$fake/self/oom_score_adj"
	update_config '.mounts |= map(if .destination == "/proc" then {"destination": "/proc", "type": "bind", "source": "'"$fake"'", "options": ["rbind"]} else . end)
		| .linux.sysctl = {"kernel.domainname": "attacker.example"}
		| .process.oomScoreAdj = 123
		| .linux.maskedPaths = [] | .linux.readonlyPaths = []'
	set_cmd 'echo started'
	run tern run -b "$BUNDLE" "$ID"
	echo "$output"
	[ "$(cat "$fake/sys/kernel/domainname")" = original ]
	[ "$(cat "$fake/self/oom_score_adj")" = original ]
	if [ "$status" -ne 0 ]; then
		check_fails_cleanly
	fi
}

@test "security: CVE-2025-52881: sysctl and oomScoreAdj still reach the real procfs" {
	update_config '.linux.sysctl = {"kernel.domainname": "tern.example"} | .process.oomScoreAdj = 321'
	set_cmd 'cat /proc/sys/kernel/domainname /proc/self/oom_score_adj'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$output" = "tern.example
321" ]
}

@test "security: linux.sysctl cannot change a host-wide setting (kernel.core_pattern)" {
	saved=$(cat /proc/sys/kernel/core_pattern)
	update_config '.linux.sysctl = {"kernel.core_pattern": "|/bin/false tern-test"}'
	run tern run -b "$BUNDLE" "$ID"
	now=$(cat /proc/sys/kernel/core_pattern)
	[ "$now" = "$saved" ] || echo "$saved" >/proc/sys/kernel/core_pattern
	[ "$now" = "$saved" ]
	check_fails_cleanly linux.sysctl kernel.core_pattern
}

@test "security: linux.sysctl of a namespace the container does not have of its own is refused" {
	remove_namespace network
	update_config '.linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	saved=$(cat /proc/sys/net/ipv4/ip_forward)
	run tern run -b "$BUNDLE" "$ID"
	[ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$saved" ]
	check_fails_cleanly linux.sysctl net.ipv4.ip_forward network
	# Joining the host's own namespace by path is no better.
	add_namespace network /proc/self/ns/net
	run tern run -b "$BUNDLE" "$ID"
	[ "$(cat /proc/sys/net/ipv4/ip_forward)" = "$saved" ]
	check_fails_cleanly linux.sysctl net.ipv4.ip_forward
}

# ---- 7. /proc and /sys as symlinks in the image ----

@test "security: a rootfs whose /proc is a symlink is refused clearly" {
	rmdir "$BUNDLE/rootfs/proc"
	ln -s /etc "$BUNDLE/rootfs/proc"
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly /proc symlink
	[ ! -e "$BUNDLE/rootfs/etc/self" ]
}

@test "security: a rootfs whose /sys is a relative symlink out is refused clearly" {
	rmdir "$BUNDLE/rootfs/sys"
	ln -s ../../../../../../tmp "$BUNDLE/rootfs/sys"
	before=$(grep -c ' /tmp' /proc/self/mountinfo || true)
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly /sys symlink
	[ "$(grep -c ' /tmp' /proc/self/mountinfo || true)" = "$before" ]
}

# ---- 8. pid namespace and a read-only root ----

@test "security: a container process cannot see or signal host processes" {
	sleep "$MARK" 3>&- &
	host_pid=$!
	EXTRA_PIDS=$host_pid
	set_cmd "kill -0 $host_pid 2>/dev/null && echo SIGNALLED; [ -e /proc/$host_pid ] && echo SEEN; ls /proc | grep -c '^[0-9]'"
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" != *SIGNALLED* ]]
	[[ "$output" != *SEEN* ]]
	# sh, ls and grep at most
	[ "$(echo "$output" | tail -n1)" -le 3 ]
	kill -0 "$host_pid"
}

@test "security: root.readonly cannot be remounted read-write from inside, even as root" {
	update_config '.root.readonly = true'
	set_cmd 'mount -o remount,rw / && echo REMOUNTED; touch /probe && echo WROTE; mount -o remount,bind,rw / && echo REMOUNTED; exit 0'
	run tern run -b "$BUNDLE" "$ID"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *REMOUNTED* ]]
	[[ "$output" != *WROTE* ]]
	[ ! -e "$BUNDLE/rootfs/probe" ]
}

# ---- the protections do not break a user namespace ----

@test "security: in a user namespace, sysctl, oomScoreAdj, cwd, terminal and exec still work" {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))
		| .linux.sysctl = {"net.ipv4.ip_forward": "1"}
		| .process.oomScoreAdj = 234 | .process.cwd = "/image-dir"'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE/rootfs"
	set_cmd "cat /proc/sys/net/ipv4/ip_forward /proc/self/oom_score_adj; pwd; sleep $MARK"
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	update_config '.process.terminal = true'
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_for_line "$BATS_TEST_TMPDIR/tty.out" /image-dir
	out=$(tr -d '\r' <"$BATS_TEST_TMPDIR/tty.out")
	echo "$out"
	[ "$out" = "1
234
/image-dir" ]
	run tern exec --cwd /image-dir "$ID" /bin/sh -c 'pwd; cat /proc/self/oom_score_adj'
	[ "$status" -eq 0 ]
	[ "$output" = "/image-dir
234" ]
}

# ---- Kubernetes: securityContext.capabilities.drop ["ALL"] ----

# cri_drop_all_config SANDBOX-PID: config.json in the shape containerd's CRI
# plugin (1.6, the runc shim's bundle) writes for a pod's container with
# capabilities.drop ["ALL"]: oci.WithCapabilities(nil) leaves the
# capabilities object with every list omitted ("capabilities": {}), no
# noNewPrivileges (Kubernetes' allowPrivilegeEscalation defaults to true),
# ambient cleared, the sandbox's ipc, uts and network namespaces joined by
# path, its /etc files and /dev/shm bound in, the CRI annotations.
cri_drop_all_config() {
	local ns=/proc/$1/ns etc=$BATS_TEST_TMPDIR/pod-etc
	mkdir -p "$etc" "$BATS_TEST_TMPDIR/pod-shm"
	echo "127.0.0.1 localhost" >"$etc/hosts"
	echo "pod-$ID" >"$etc/hostname"
	echo "nameserver 127.0.0.1" >"$etc/resolv.conf"
	: >"$etc/termination-log"
	jq -n --arg ns "$ns" --arg etc "$etc" --arg shm "$BATS_TEST_TMPDIR/pod-shm" --arg id "$ID" '{
	ociVersion: "1.0.2-dev",
	process: {
		user: {uid: 0, gid: 0, additionalGids: [0]},
		args: ["/bin/sh", "-c", "grep ^Cap /proc/self/status; touch /tmp/f; chown 5 /tmp/f || echo chown refused"],
		env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		      ("HOSTNAME=pod-" + $id)],
		cwd: "/",
		capabilities: {},
		oomScoreAdj: 1000
	},
	root: {path: "rootfs"},
	mounts: [
		{destination: "/proc", type: "proc", source: "proc", options: ["nosuid", "noexec", "nodev"]},
		{destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid", "strictatime", "mode=755", "size=65536k"]},
		{destination: "/dev/pts", type: "devpts", source: "devpts",
		 options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
		{destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"]},
		{destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"]},
		{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "ro"]},
		{destination: "/etc/hosts", type: "bind", source: ($etc + "/hosts"), options: ["rbind", "rprivate", "rw"]},
		{destination: "/dev/termination-log", type: "bind", source: ($etc + "/termination-log"), options: ["rbind", "rprivate", "rw"]},
		{destination: "/etc/hostname", type: "bind", source: ($etc + "/hostname"), options: ["rbind", "rprivate", "rw"]},
		{destination: "/etc/resolv.conf", type: "bind", source: ($etc + "/resolv.conf"), options: ["rbind", "rprivate", "rw"]},
		{destination: "/dev/shm", type: "bind", source: $shm, options: ["rbind", "rprivate", "rw"]}
	],
	annotations: {
		"io.kubernetes.cri.container-type": "container",
		"io.kubernetes.cri.container-name": "drop-all",
		"io.kubernetes.cri.image-name": "localhost/busybox:latest",
		"io.kubernetes.cri.sandbox-id": ($id + "-pause"),
		"io.kubernetes.cri.sandbox-name": "drop-all-pod",
		"io.kubernetes.cri.sandbox-namespace": "default",
		"io.kubernetes.cri.sandbox-uid": "5e1f0d1c-0000-4000-8000-000000000001"
	},
	linux: {
		resources: {devices: [{allow: false, access: "rwm"}], memory: {}, cpu: {shares: 2}},
		cgroupsPath: ("/" + $id),
		namespaces: [{type: "pid"}, {type: "ipc", path: ($ns + "/ipc")}, {type: "uts", path: ($ns + "/uts")},
			     {type: "mount"}, {type: "network", path: ($ns + "/net")}],
		maskedPaths: ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
			      "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"],
		readonlyPaths: ["/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
	}}' >"$BUNDLE/config.json"
}

@test "security: a Kubernetes container that drops ALL capabilities (containerd's \"capabilities\": {}) has none, bounding set included" {
	# the pod's sandbox: its namespaces are joined by path
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID-pause"
	[ "$status" -eq 0 ]
	cri_drop_all_config "$(state_field "$ID-pause" pid)"
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	local set
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		[[ "$output" == *"$set:	0000000000000000"* ]]
	done
	# root in it cannot do what a capability would allow
	[[ "$output" == *"chown refused"* ]]
}
