#!/usr/bin/env bats
# The container process: hostname, sysctl, env, cwd, user, rlimits, caps...

load helpers

@test "process: hostname" {
	update_config '.hostname = "tern-host"'
	set_cmd 'hostname'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = tern-host ]
}

@test "process: domainname" {
	# runc 1.1.5 lacks this
	update_config '.hostname = "tern-host" | .domainname = "tern.example"'
	set_cmd 'cat /proc/sys/kernel/domainname'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = tern.example ]
}

@test "process: linux.sysctl (ipc and net, in new namespaces)" {
	update_config '.linux.sysctl = {"kernel.shm_rmid_forced": "1", "net.ipv4.ip_forward": "1"}'
	set_cmd 'cat /proc/sys/kernel/shm_rmid_forced /proc/sys/net/ipv4/ip_forward'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 1 ]
	[ "${lines[1]}" = 1 ]
}

@test "process: env and cwd" {
	update_config '.process.env = ["PATH=/bin", "FOO=bar baz", "EMPTY="] | .process.cwd = "/tmp"'
	set_cmd 'echo "$FOO|$EMPTY|$(pwd)"; env | sort'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "bar baz||/tmp" ]
}

@test "process: user uid, gid, additionalGids, umask" {
	update_config '.process.user = {"uid": 1000, "gid": 1001, "additionalGids": [5, 6], "umask": 63}'
	set_cmd 'echo "$(id -u) $(id -g)"; id -G; umask; touch /tmp/f; stat -c %a /tmp/f'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "1000 1001" ]
	[[ " ${lines[1]} " == *" 5 "* && " ${lines[1]} " == *" 6 "* ]]
	[ "${lines[2]}" = 0077 ]
	[ "${lines[3]}" = 600 ]
	[ "$(stat -c %u:%g "$BUNDLE/rootfs/tmp/f")" = 1000:1001 ]
}

@test "process: rlimits (nofile, nproc) at or below the hard limits" {
	update_config '.process.rlimits = [{"type": "RLIMIT_NOFILE", "soft": 4000, "hard": 5000},
		{"type": "RLIMIT_NPROC", "soft": 300, "hard": 400}]'
	set_cmd 'ulimit -n; ulimit -Hn; ulimit -u'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 4000 ]
	[ "${lines[1]}" = 5000 ]
	[ "${lines[2]}" = 300 ]
}

@test "process: an rlimit above the machine's hard limit fails and names it" {
	hard=$(ulimit -Hn)
	update_config ".process.rlimits = [{\"type\": \"RLIMIT_NOFILE\", \"soft\": $((hard + 1000)), \"hard\": $((hard + 1000))}]"
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly
	is_runc || [[ "$output" == *RLIMIT_NOFILE* ]]
}

@test "process: noNewPrivileges" {
	update_config '.process.noNewPrivileges = true'
	set_cmd 'grep NoNewPrivs /proc/self/status'
	run_container
	[[ "$output" == *1 ]]
	update_config '.process.noNewPrivileges = false'
	run_container
	[[ "$output" == *0 ]]
}

@test "process: oomScoreAdj (raising works without CAP_SYS_RESOURCE)" {
	cur=$(cat /proc/self/oom_score_adj)
	want=$((cur + 100 > 1000 ? 1000 : cur + 100))
	update_config ".process.oomScoreAdj = $want"
	set_cmd 'cat /proc/self/oom_score_adj'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
}

capmask() {
	local m=0 c
	for c in "$@"; do m=$((m | (1 << c))); done
	printf '%016x' "$m"
}

@test "process: capabilities in /proc/self/status match the config" {
	# CAP_CHOWN=0 CAP_KILL=5 CAP_NET_RAW=13 CAP_SYS_ADMIN=21 CAP_SYS_TIME=25
	update_config '.process.capabilities = {
		"bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_SYS_ADMIN", "CAP_SYS_TIME"],
		"effective": ["CAP_CHOWN", "CAP_NET_RAW"],
		"permitted": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_SYS_ADMIN"],
		"inheritable": ["CAP_NET_RAW", "CAP_SYS_ADMIN"],
		"ambient": ["CAP_NET_RAW"]}'
	set_cmd 'grep ^Cap /proc/self/status'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == *"CapBnd:	$(capmask 0 5 13 21 25)"* ]]
	[[ "$output" == *"CapInh:	$(capmask 13 21)"* ]]
	[[ "$output" == *"CapAmb:	$(capmask 13)"* ]]
	# After the runtime's execve as uid 0 the kernel keeps the configured
	# permitted set and raises effective to it (what runc shows too).
	[[ "$output" == *"CapPrm:	$(capmask 0 13 21)"* ]]
	[[ "$output" == *"CapEff:	$(capmask 0 13 21)"* ]]
}

@test "process: capabilities of the first process (no ambient)" {
	update_config '.process.capabilities = {
		"bounding": ["CAP_CHOWN", "CAP_SYS_ADMIN"], "effective": ["CAP_CHOWN", "CAP_SYS_ADMIN"],
		"permitted": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}'
	update_config '.process.user.uid = 0'
	set_args /bin/grep ^Cap /proc/self/status
	run_container
	[ "$status" -eq 0 ]
	# root exec: permitted and effective stay as configured (bounded).
	[[ "$output" == *"CapBnd:	$(capmask 0 21)"* ]]
	[[ "$output" == *"CapEff:	$(capmask 0 21)"* ]]
	[[ "$output" == *"CapPrm:	$(capmask 0 21)"* ]]
	[[ "$output" == *"CapAmb:	$(capmask)"* ]]
}

@test "process: signals the runtime's caller ignored or blocked are reset for the container process (run and exec)" {
	# conmon ignores SIGPIPE; a shell ignores SIGINT and SIGQUIT in its
	# background jobs. Not through sh: busybox sh ignores SIGQUIT itself.
	set_args /bin/grep -E '^Sig(Ign|Blk):' /proc/self/status
	run in_file "$BASE_ROOTFS/bin/sigwrap" 13,2,3 10,15 "$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"SigIgn:	0000000000000000"* ]]
	# runc 1.1.5 lacks this: it leaves SIGUSR1 blocked
	is_runc || [[ "$output" == *"SigBlk:	0000000000000000"* ]]

	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	run in_file "$BASE_ROOTFS/bin/sigwrap" 13,2,3 10,15 "$TERN_BIN" --root "$ROOT" exec "$ID-2" \
		/bin/grep -E '^Sig(Ign|Blk):' /proc/self/status
	[ "$status" -eq 0 ]
	[[ "$output" == *"SigIgn:	0000000000000000"* ]]
	is_runc || [[ "$output" == *"SigBlk:	0000000000000000"* ]]
	# a shell's trap on a signal the caller ignored works
	run in_file "$BASE_ROOTFS/bin/sigwrap" 13 - "$TERN_BIN" --root "$ROOT" exec "$ID-2" \
		/bin/sh -c 'trap "echo trapped" PIPE; kill -PIPE $$; echo after'
	[ "$status" -eq 0 ]
	[ "$output" = "trapped
after" ]
}

@test "process: capabilities {} (every set left out) is the empty set, the bounding set too; so is no capabilities at all" {
	update_config '.process.capabilities = {}'
	set_args /bin/grep ^Cap /proc/self/status
	run_container
	[ "$status" -eq 0 ]
	local set
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		[[ "$output" == *"$set:	$(capmask)"* ]]
	done
	# root without CAP_CHOWN cannot give a file away
	set_cmd 'touch /tmp/f && chown 5 /tmp/f'
	run_container
	[ "$status" -ne 0 ]
	[[ "$output" == *"Operation not permitted"* ]]
	# as runc and crun: without process.capabilities, nothing either
	update_config 'del(.process.capabilities)'
	set_args /bin/grep ^Cap /proc/self/status
	run_container
	[ "$status" -eq 0 ]
	for set in CapInh CapPrm CapEff CapBnd CapAmb; do
		[[ "$output" == *"$set:	$(capmask)"* ]]
	done
	# one set given, the others left out: those are empty
	update_config '.process.capabilities = {"bounding": ["CAP_KILL"]}'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"CapBnd:	$(capmask 5)"* ]]
	[[ "$output" == *"CapEff:	$(capmask)"* ]]
	[[ "$output" == *"CapPrm:	$(capmask)"* ]]
}

@test "process: a missing cwd is created inside the rootfs, mode 0755 and owned by the container's root, before root.readonly" {
	umask 022
	update_config '.process.cwd = "/new/dir" | .root.readonly = true'
	set_cmd 'pwd; stat -c "%a %u:%g" /new /new/dir'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "/new/dir
755 0:0
755 0:0" ]
	[ -d "$BUNDLE/rootfs/new/dir" ]
	# through symlinks, resolved inside the rootfs: never on the host
	mkdir "$BATS_TEST_TMPDIR/outside" "$BATS_TEST_TMPDIR/outside-2"
	mkdir -p "$BUNDLE/rootfs$BATS_TEST_TMPDIR/outside"
	ln -s "$BATS_TEST_TMPDIR/outside" "$BUNDLE/rootfs/escape"
	ln -s ../../../../../../../../../.. "$BUNDLE/rootfs/up"
	update_config '.process.cwd = "/escape/sub" | .root.readonly = false'
	set_cmd 'echo ok'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
	[ ! -e "$BATS_TEST_TMPDIR/outside/sub" ]
	[ -d "$BUNDLE/rootfs$BATS_TEST_TMPDIR/outside/sub" ]
	update_config '.process.cwd = "/up/made-inside-'"$ID"'"'
	run_container
	[ "$status" -eq 0 ]
	[ -d "$BUNDLE/rootfs/made-inside-$ID" ]
	[ ! -e "/made-inside-$ID" ]
	# runc 1.1.5 lacks this: through a symlink whose target is missing it
	# fails ("mkdir /escape2: file exists"); tern makes the target, inside
	is_runc && return
	ln -s "$BATS_TEST_TMPDIR/outside-2" "$BUNDLE/rootfs/escape2"
	update_config '.process.cwd = "/escape2/sub"'
	run_container
	[ "$status" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/outside-2/sub" ]
	[ -d "$BUNDLE/rootfs$BATS_TEST_TMPDIR/outside-2/sub" ]
}

# The container's init writes the owner (uid:gid, as it sees them) of its
# stdio, fds 0-2, to /tmp/owners: a line each. (Not `stat ... >file`: busybox
# sh, pid 1 here, would point its own fd 1 at the file for the command.)
stdio_owners_cmd='o=$(stat -L -c %u:%g /proc/1/fd/0 /proc/1/fd/1 /proc/1/fd/2) && echo "$o" >/tmp/owners.tmp && mv /tmp/owners.tmp /tmp/owners'

# create_with_stdio KIND ID: create ID with its stdout and stderr on a new
# pipe or socket (stdin /dev/null), start it, and wait for /tmp/owners.
create_with_stdio() {
	rm -f "$BUNDLE/rootfs/tmp/owners"
	"$BASE_ROOTFS/bin/stdio-as" "$1" "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$2" \
		>"$BATS_TEST_TMPDIR/$2.out" 3>&- &
	EXTRA_PIDS="${EXTRA_PIDS:-} $!"
	wait_status "$2" created
	tern start "$2"
	wait_for_file "$BUNDLE/rootfs/tmp/owners"
}

@test "process: stdio pipes, sockets and files are chowned to process.user (uid only; not /dev/null), as runc does" {
	update_config '.process.user = {"uid": 1, "gid": 1}'
	set_cmd "$stdio_owners_cmd"
	create_with_stdio pipe "$ID"
	[ "$(cat "$BUNDLE/rootfs/tmp/owners")" = "0:0
1:0
1:0" ]
	create_with_stdio socket "$ID-s"
	[ "$(cat "$BUNDLE/rootfs/tmp/owners")" = "0:0
1:0
1:0" ]
	# a regular file: the file itself changes owner, on the host too
	rm -f "$BUNDLE/rootfs/tmp/owners"
	: >"$BATS_TEST_TMPDIR/out.file"
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID-f" </dev/null >"$BATS_TEST_TMPDIR/out.file" 2>&1
	tern start "$ID-f"
	wait_for_file "$BUNDLE/rootfs/tmp/owners"
	[ "$(cat "$BUNDLE/rootfs/tmp/owners")" = "0:0
1:0
1:0" ]
	[ "$(stat -c %u:%g "$BATS_TEST_TMPDIR/out.file")" = 1:0 ]
	# so the process can reopen its stdout
	set_cmd 'echo reopened >/dev/stdout'
	run bash -c '"$1" --root "$2" run -b "$3" "$4" 2>&1 | cat' _ "$TERN_BIN" "$ROOT" "$BUNDLE" "$ID-r"
	[ "$output" = reopened ]
}

@test "process: stdio in a user namespace: chowned when its owner is mapped (keeping the gid), left alone when not" {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))
		| .process.user = {"uid": 1, "gid": 1}'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	set_cmd "$stdio_owners_cmd"
	# a pipe made by the host's root, not mapped: EPERM, left as it is
	create_with_stdio pipe "$ID"
	[ "$(cat "$BUNDLE/rootfs/tmp/owners")" = "65534:65534
65534:65534
65534:65534" ]
	# a file of the container's root (host 100000) and group 5: uid 1, gid 5
	rm -f "$BUNDLE/rootfs/tmp/owners"
	: >"$BATS_TEST_TMPDIR/out.file"
	chown 100000:100005 "$BATS_TEST_TMPDIR/out.file"
	"$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID-f" </dev/null >"$BATS_TEST_TMPDIR/out.file" 2>&1
	tern start "$ID-f"
	wait_for_file "$BUNDLE/rootfs/tmp/owners"
	[ "$(cat "$BUNDLE/rootfs/tmp/owners")" = "65534:65534
1:5
1:5" ]
	[ "$(stat -c %u:%g "$BATS_TEST_TMPDIR/out.file")" = 100001:100005 ]
}

@test "process: a null device as stdio is never chowned, also where the container has no /dev/null to compare with" {
	set_cmd "sleep $MARK"
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	tern exec "$ID" rm /dev/null
	# a null device of the test's own, so that a regression chowns it and
	# not the host's /dev/null (which every later test would inherit)
	mknod "$BATS_TEST_TMPDIR/null" c 1 3
	"$TERN_BIN" --root "$ROOT" exec --user 100000:0 "$ID" true \
		<"$BATS_TEST_TMPDIR/null" >"$BATS_TEST_TMPDIR/null" 2>&1
	[ "$(stat -c %u:%g "$BATS_TEST_TMPDIR/null")" = 0:0 ]
}

@test "process: the pty of process.terminal belongs to process.user" {
	update_config '.process.terminal = true | .process.user = {"uid": 1, "gid": 1}'
	set_cmd 'stat -L -c %u /proc/self/fd/0 >/tmp/pty.tmp && mv /tmp/pty.tmp /tmp/pty'
	start_recvtty "$BATS_TEST_TMPDIR/tty.sock" "$BATS_TEST_TMPDIR/tty.out"
	run tern run -d --console-socket "$BATS_TEST_TMPDIR/tty.sock" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_for_file "$BUNDLE/rootfs/tmp/pty"
	[ "$(cat "$BUNDLE/rootfs/tmp/pty")" = 1 ]
}
