#!/usr/bin/env bats
# create, start, run, state, list, kill, delete: the container lifecycle.

load helpers

@test "run: exit status is the process's" {
	set_cmd 'exit 0'
	run_container
	[ "$status" -eq 0 ]
	set_cmd 'exit 3'
	run_container
	[ "$status" -eq 3 ]
}

# run_killed SIGNAL: run in the foreground, kill from the host side with
# SIGNAL, print run's exit status. (Inside a pid namespace the process is
# pid 1 and cannot be killed by a signal it sent itself.)
run_killed() {
	local rc=0
	tern run -b "$BUNDLE" "$ID-$1" &
	local rpid=$!
	wait_status "$ID-$1" running
	tern kill "$ID-$1" "$1"
	wait $rpid || rc=$?
	echo "$rc"
}

@test "run: killed by signal N exits 128+N" {
	# Not pid 1 of its own pid namespace: init ignores SIGTERM when it has no
	# handler, and this test is about the exit status, not about that rule.
	remove_namespace pid
	set_args /bin/sleep "$MARK"
	[ "$(run_killed KILL)" -eq 137 ]
	[ "$(run_killed TERM)" -eq 143 ]
}

@test "run: output of the process reaches our stdout" {
	set_args /bin/echo "hello from inside"
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = "hello from inside" ]
}

@test "run: the container is removed once its process exits" {
	set_cmd 'exit 0'
	run_container
	[ "$status" -eq 0 ]
	run tern state "$ID"
	[ "$status" -ne 0 ]
	[ ! -e "$ROOT/$ID" ]
	check_nothing_left "$ID"
}

@test "run -d / --detach: returns while the process runs" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = running ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	run tern run --detach --bundle "$BUNDLE" "$ID-2"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID-2" status)" = running ]
}

@test "create/start/state: created -> running -> stopped, state JSON" {
	set_cmd "read x </tmp/fifo; exit 0"
	mkfifo "$BUNDLE/rootfs/tmp/fifo"
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern state "$ID"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e --arg id "$ID" --arg b "$BUNDLE" \
		'.ociVersion and .id == $id and .status == "created" and .pid > 0 and .bundle == $b and (.created | length > 0)'
	pid=$(echo "$output" | jq .pid)
	[ -d "/proc/$pid" ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	run tern state "$ID"
	echo "$output" | jq -e '.status == "running"'
	[ "$(echo "$output" | jq .pid)" = "$pid" ]
	echo go >"$BUNDLE/rootfs/tmp/fifo"
	wait_status "$ID" stopped
	run tern state "$ID"
	[ "$status" -eq 0 ]
	echo "$output" | jq -e --arg id "$ID" '.id == $id and .status == "stopped"'
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	run tern state "$ID"
	[ "$status" -ne 0 ]
	check_nothing_left "$ID"
}

@test "create -b: the process does not run before start" {
	set_cmd "touch /ran"
	run tern create --bundle "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	# a created process waits for start: the file cannot appear however
	# long we look, the delay only gives a broken create time to show
	sleep 0.2
	[ ! -e "$BUNDLE/rootfs/ran" ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	[ -e "$BUNDLE/rootfs/ran" ]
}

@test "create --pid-file writes the container's pid" {
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" --pid-file "$BATS_TEST_TMPDIR/pidfile" "$ID"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_TEST_TMPDIR/pidfile")" = "$(state_field "$ID" pid)" ]
}

@test "create runs from the bundle dir when -b is not given" {
	set_args /bin/sleep "$MARK"
	cd "$BUNDLE"
	run tern create "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" bundle)" = "$BUNDLE" ]
}

@test "state: process that exits by itself is stopped" {
	set_cmd 'exit 0'
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
}

@test "state: host-side kill -9 of the container pid gives stopped" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	kill -9 "$pid"
	wait_status "$ID" stopped
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "start of a stopped container fails" {
	set_cmd 'exit 0'
	run tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" stopped
	run tern start "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *stopped* ]] || [[ "$output" == *"not in created"* ]] || [[ "$output" == *"cannot start"* ]]
	is_runc || [[ "$output" == *"$ID"* ]]
}

@test "start twice: second start fails" {
	set_args /bin/sleep "$MARK"
	tern create -b "$BUNDLE" "$ID"
	run tern start "$ID"
	[ "$status" -eq 0 ]
	run tern start "$ID"
	[ "$status" -ne 0 ]
}

@test "list: table, -q, --format json" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	tern create -b "$BUNDLE" "$ID-c"
	run tern list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *ID*PID*STATUS*BUNDLE*CREATED*OWNER* ]]
	[[ "$output" == *"$ID "*running*"$BUNDLE"* ]]
	[[ "$output" == *"$ID-c "*created*"$BUNDLE"* ]]
	run tern list -q
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort | tr '\n' ' ')" = "$ID $ID-c " ]
	run tern list --format json
	[ "$status" -eq 0 ]
	echo "$output" | jq -e --arg id "$ID" 'map(select(.id == $id))[0] | .status == "running" and .pid > 0'
	echo "$output" | jq -e --arg id "$ID-c" 'map(select(.id == $id))[0] | .status == "created"'
	run tern list -f json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq length)" -eq 2 ]
}

@test "list: empty root" {
	run tern list -q
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "kill: signal names with and without SIG, numbers" {
	# sleep is not pid 1 here, so SIGTERM without a handler kills it.
	remove_namespace pid
	set_args /bin/sleep "$MARK"
	for sig in KILL SIGKILL 9 TERM SIGTERM 15; do
		tern run -d -b "$BUNDLE" "$ID-$sig"
		run tern kill "$ID-$sig" "$sig"
		[ "$status" -eq 0 ]
		wait_status "$ID-$sig" stopped
		tern delete "$ID-$sig"
	done
}

@test "kill: default signal is SIGTERM" {
	# PID 1 of its namespace ignores a signal it has no handler for yet:
	# send it once the trap is set
	set_cmd "trap 'echo got-term >/tmp/trap; exit 0' TERM; touch /tmp/ready; while :; do sleep 0.05; done"
	tern run -d -b "$BUNDLE" "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/ready"
	run tern kill "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	[ "$(cat "$BUNDLE/rootfs/tmp/trap")" = got-term ]
}

@test "kill: a handled signal reaches the process (USR1)" {
	set_cmd "trap 'echo usr1 >/tmp/trap' USR1; touch /tmp/ready; while [ ! -s /tmp/trap ]; do sleep 0.05; done"
	tern run -d -b "$BUNDLE" "$ID"
	wait_for_file "$BUNDLE/rootfs/tmp/ready"
	run tern kill "$ID" SIGUSR1
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	[ "$(cat "$BUNDLE/rootfs/tmp/trap")" = usr1 ]
}

@test "kill --all: kills every process of the container" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	run tern exec -d "$ID" /bin/sleep "$MARK"
	echo "exec -d: $status $output"
	pgrep -a -f "sleep $MARK"
	[ "$(pgrep -f "sleep $MARK" | wc -l)" -eq 2 ]
	run tern kill --all "$ID" KILL
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	wait_until 60 no_mark_procs
}

# signal_calls FILE: the signal syscalls that strace recorded in FILE.
signal_calls() {
	grep -E '(^|[0-9] +)(pidfd_open|pidfd_send_signal|kill)\(' "$1"
}

@test "kill, kill --all, delete --force: the init is pinned with a pidfd and signalled through it, never by pid" {
	# a pid names a process only while it lives: once the init is gone,
	# kill(2) of its pid may hit whatever got the pid next
	is_tern || skip "runc 1.1 signals the init by pid (kill(2))"
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	strace -f -o "$BATS_TEST_TMPDIR/kill.strace" -e trace=pidfd_open,pidfd_send_signal,kill \
		"$TERN_BIN" --root "$ROOT" kill "$ID" 0
	signal_calls "$BATS_TEST_TMPDIR/kill.strace"
	grep -qE "pidfd_open\($pid, 0\) += [0-9]+" "$BATS_TEST_TMPDIR/kill.strace"
	grep -qE 'pidfd_send_signal\([0-9]+, 0, NULL, 0\) += 0' "$BATS_TEST_TMPDIR/kill.strace"
	! grep -qE '(^|[0-9] +)kill\(' "$BATS_TEST_TMPDIR/kill.strace"

	run tern exec -d "$ID" /bin/sleep "$MARK"
	[ "$status" -eq 0 ]
	wait_until 10 mark_procs_at_least 2
	strace -f -o "$BATS_TEST_TMPDIR/all.strace" -e trace=pidfd_open,pidfd_send_signal,kill \
		"$TERN_BIN" --root "$ROOT" kill --all "$ID" STOP
	signal_calls "$BATS_TEST_TMPDIR/all.strace"
	[ "$(grep -cE 'pidfd_send_signal\([0-9]+, SIGSTOP, NULL, 0\) += 0' "$BATS_TEST_TMPDIR/all.strace")" -eq 2 ]
	! grep -qE '(^|[0-9] +)kill\(' "$BATS_TEST_TMPDIR/all.strace"
	tern kill --all "$ID" CONT

	strace -f -o "$BATS_TEST_TMPDIR/delete.strace" -e trace=pidfd_open,pidfd_send_signal,kill \
		"$TERN_BIN" --root "$ROOT" delete --force "$ID"
	signal_calls "$BATS_TEST_TMPDIR/delete.strace"
	grep -qE 'pidfd_send_signal\([0-9]+, SIGKILL, NULL, 0\) += 0' "$BATS_TEST_TMPDIR/delete.strace"
	! grep -qE "(^|[0-9] +)kill\($pid," "$BATS_TEST_TMPDIR/delete.strace"
	run tern state "$ID"
	[ "$status" -ne 0 ]
	wait_until 30 no_mark_procs
}

@test "kill, kill --all: without pidfd_open (kernels before 5.3: ENOSYS) the init is still signalled, by pid" {
	is_tern || skip "tests tern's fallback"
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	strace -f -o "$BATS_TEST_TMPDIR/all.strace" -e trace=pidfd_open,pidfd_send_signal,kill \
		-e inject=pidfd_open:error=ENOSYS "$TERN_BIN" --root "$ROOT" kill --all "$ID" STOP
	signal_calls "$BATS_TEST_TMPDIR/all.strace"
	grep -qE "(^|[0-9] +)kill\($pid, SIGSTOP\) += 0" "$BATS_TEST_TMPDIR/all.strace"
	tern kill --all "$ID" CONT
	strace -f -o "$BATS_TEST_TMPDIR/kill.strace" -e trace=pidfd_open,pidfd_send_signal,kill \
		-e inject=pidfd_open:error=ENOSYS "$TERN_BIN" --root "$ROOT" kill "$ID" KILL
	signal_calls "$BATS_TEST_TMPDIR/kill.strace"
	grep -qE "pidfd_open\($pid, 0\) += -1 ENOSYS" "$BATS_TEST_TMPDIR/kill.strace"
	grep -qE "(^|[0-9] +)kill\($pid, SIGKILL\) += 0" "$BATS_TEST_TMPDIR/kill.strace"
	wait_status "$ID" stopped
}

@test "kill, delete --force: a pid that is no longer the init's (reused) is not signalled" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	# an unrelated process of ours under the pid, as if the init had died
	# and its pid had been given to it; state.json keeps the init's start
	# time
	sleep 1000 &
	local other=$!
	EXTRA_PIDS="$other"
	cp "$ROOT/$ID/state.json" "$BATS_TEST_TMPDIR/state.json"
	# (runc 1.1 keeps the pid and its start time as init_process_pid and
	# init_process_start)
	local field=.pid
	is_tern || field=.init_process_pid
	jq --argjson p "$other" "$field = \$p" "$BATS_TEST_TMPDIR/state.json" >"$ROOT/$ID/state.json"
	run tern kill "$ID" KILL
	echo "kill: $status $output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"container not running"* ]]
	! pid_gone "$other"
	run tern delete --force "$ID"
	echo "delete --force: $status $output"
	! pid_gone "$other"
	kill "$other"
}

@test "kill: signal 0 probes the init: success while it runs, not running once stopped" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	run tern kill "$ID" 0
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# no signal sent: still running, the same process
	[ "$(state_field "$ID" status)" = running ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	! pid_gone "$pid"
	# runc takes the number only, not "SIG0"
	run tern kill "$ID" SIG0
	[ "$status" -ne 0 ]
	[ "$(state_field "$ID" status)" = running ]
	run tern kill "$ID" KILL
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	# as runc: exit 1, "container not running"
	run tern kill "$ID" 0
	[ "$status" -eq 1 ]
	[[ "$output" == *"container not running"* ]]
}

@test "kill: bad signal name fails and names it" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	run tern kill "$ID" SIGNOTASIGNAL
	[ "$status" -ne 0 ]
	[[ "$output" == *NOTASIGNAL* ]]
	[ "$(state_field "$ID" status)" = running ]
}

@test "delete: running without --force fails, --force kills it" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID"
	run tern delete "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *running* ]]
	is_runc || [[ "$output" == *"$ID"* ]]
	[ "$(state_field "$ID" status)" = running ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	run tern state "$ID"
	[ "$status" -ne 0 ]
	check_nothing_left "$ID"
}

@test "delete: a created container with --force" {
	set_args /bin/sleep "$MARK"
	tern create -b "$BUNDLE" "$ID"
	run tern delete -f "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "delete: a created (never started) container without --force" {
	set_args /bin/sleep "$MARK"
	tern create -b "$BUNDLE" "$ID"
	run tern delete "$ID"
	# runc refuses only running containers; a created one is deleted.
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "duplicate id: create fails, the first container is untouched" {
	set_args /bin/sleep "$MARK"
	tern create -b "$BUNDLE" "$ID"
	pid=$(state_field "$ID" pid)
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *exist* ]]
	is_runc || [[ "$output" == *"already exists"* && "$output" == *"$ID"* ]]
	[ "$(state_field "$ID" status)" = created ]
	[ "$(state_field "$ID" pid)" = "$pid" ]
	[ "$(pgrep -f "sleep $MARK" | wc -l)" -le 1 ]
}

@test "unknown id: state, kill, delete, start, exec fail and name the id" {
	for cmd in state kill delete start "exec"; do
		if [ "$cmd" = exec ]; then
			run tern exec nosuch-$ID /bin/true
		else
			run tern $cmd nosuch-$ID
		fi
		[ "$status" -ne 0 ]
		[[ "$output" == *"does not exist"* || "$output" == *"not found"* || "$output" == *"nosuch-$ID"* ]]
		is_runc || [[ "$output" == *"nosuch-$ID"* ]]
	done
}

@test "global --root: state lives where --root says" {
	set_args /bin/sleep "$MARK"
	other=$BATS_TEST_TMPDIR/other-root
	run in_file "$TERN_BIN" --root "$other" run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ -d "$other/$ID" ]
	run in_file "$TERN_BIN" --root "$other" list -q
	[ "$output" = "$ID" ]
	run tern list -q
	[ -z "$output" ]
	in_file "$TERN_BIN" --root "$other" delete -f "$ID"
	[ ! -e "$other/$ID" ]
}

@test "single-dash long flags: -root, -bundle" {
	set_args /bin/sleep "$MARK"
	run in_file "$TERN_BIN" -root "$ROOT" create -bundle "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = created ]
	run in_file "$TERN_BIN" -root "$ROOT" delete -force "$ID"
	[ "$status" -eq 0 ]
}

@test "create --no-pivot: the container runs" {
	set_cmd 'echo ok; cat /etc/passwd | head -1'
	run tern run --no-pivot -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = ok ]
	[[ "${lines[1]}" == root:* ]]
}

# issue 33: MS_MOVE + chroot kept the host's mounts (its /proc among them)
# in the container's mount namespace, hidden only by the chroot; the kernel
# allows a new procfs (with nothing masked) in a new user namespace as soon
# as a fully visible one exists in the mount namespace.
@test "create --no-pivot: the host's mounts are gone, no unmasked procfs from a new user namespace" {
	update_config '.process.capabilities.bounding += ["CAP_SETFCAP"]
		| .process.capabilities.effective += ["CAP_SETFCAP"]
		| .process.capabilities.permitted += ["CAP_SETFCAP"]'
	set_cmd 'unshare -mrpf sh -c "echo in-userns; mount -t proc none /proc && echo MOUNTED" 2>&1; cat /proc/self/mountinfo'
	run tern run --no-pivot -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	# The user namespace itself was made: the attack was really tried.
	[ "${lines[0]}" = in-userns ]
	[[ "$output" != *MOUNTED* ]]
	[[ "${lines[1]}" == *"mount: permission denied"* || "${lines[1]}" == *"Operation not permitted"* ]]
	# The mountinfo lines: the rootfs ("/") and mounts under it, nothing
	# with a parent outside them (the old root's host mounts).
	mi=$(printf '%s\n' "${lines[@]:2}")
	root_id=$(awk '$5 == "/" { print $1 }' <<<"$mi" | tail -1)
	[ -n "$root_id" ]
	ids=$(awk '{ print $1 }' <<<"$mi")
	while read -r id parent mp; do
		[ "$id" = "$root_id" ] && continue
		grep -qx "$parent" <<<"$ids" || {
			echo "a mount outside the rootfs: $id $parent $mp"
			false
		}
	done < <(awk '{ print $1, $2, $5 }' <<<"$mi")
}

@test "create --no-pivot in a user namespace: the host's locked mounts are covered, no unmasked procfs" {
	# There the host's mounts are locked: they cannot be unmounted, an
	# empty tmpfs goes over them (the kernel does not count a procfs under
	# a locked mount as fully visible).
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))
		| .process.capabilities.bounding += ["CAP_SETFCAP"]
		| .process.capabilities.effective += ["CAP_SETFCAP"]
		| .process.capabilities.permitted += ["CAP_SETFCAP"]'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	set_cmd 'unshare -mrpf sh -c "echo in-userns; mount -t proc none /proc && echo MOUNTED" 2>&1; true'
	run tern run --no-pivot -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = in-userns ]
	[[ "$output" != *MOUNTED* ]]
	[[ "${lines[1]}" == *"mount: permission denied"* || "${lines[1]}" == *"Operation not permitted"* ]]
}

@test "create --no-pivot: nothing of the host's mounts is left in the container's mount namespace" {
	# nsmounts (tests/helpers) lists the namespace's mounts with listmount(2),
	# also those the chroot hides from mountinfo: it needs CAP_SYS_ADMIN.
	update_config '.process.capabilities.bounding += ["CAP_SYS_ADMIN"]
		| .process.capabilities.effective += ["CAP_SYS_ADMIN"]
		| .process.capabilities.permitted += ["CAP_SYS_ADMIN"]'
	set_cmd 'wc -l </proc/self/mountinfo; grep -c " - proc " /proc/self/mountinfo; grep -c " - sysfs " /proc/self/mountinfo; nsmounts'
	run tern run --no-pivot -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	n_info=${lines[0]}
	above=$(awk '$1 == "above-root" { print $2 }' <<<"$output")
	total=$(awk '$1 == "total" { print $2 }' <<<"$output")
	[ -n "$above" ] && [ -n "$total" ]
	# No procfs (magic 9fa0) or sysfs (62656572) but the container's own
	# (runc 1.1 removes those, the ones that matter to the kernel).
	[ "$(awk '$3 == "9fa0"' <<<"$output" | wc -l)" -eq "${lines[1]}" ]
	[ "$(awk '$3 == "62656572"' <<<"$output" | wc -l)" -eq "${lines[2]}" ]
	# tern: only the mounts the rootfs sits on (they hold it) beside the
	# rootfs and its submounts.
	echo "mountinfo $n_info, in the namespace $total, above the root $above"
	is_runc || [ "$total" -eq $((n_info + above)) ]
}

@test "create --no-new-keyring: the container keeps the caller's session keyring" {
	[ -r /proc/keys ] || skip "LOUD: /proc/keys is not readable on this host"
	update_config '.linux.maskedPaths |= map(select(. != "/proc/keys"))'
	set_cmd 'cat /proc/keys'
	# By default the container gets a new session keyring named after the
	# container id (runc calls it _ses.<id>); with --no-new-keyring it has none.
	run tern run -b "$BUNDLE" "$ID-b"
	[ "$status" -eq 0 ]
	[[ "$output" == *"_ses.$ID-b"* ]]
	run tern run --no-new-keyring -b "$BUNDLE" "$ID-c"
	[ "$status" -eq 0 ]
	[[ "$output" != *"$ID-c"* ]]
}

# ---- issue 10: the words clients match (see the list in src/lifecycle/state.c) ----

@test "messages: kill of a stopped container says \"container not running\" (containerd's shim matches it)" {
	set_args /bin/true
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	run tern kill "$ID" KILL
	[ "$status" -ne 0 ]
	[[ "$output" == *"container not running"* ]]
	is_runc || [[ "$output" == *"\`$ID\`"* ]]
	# the default signal too, and the container is still there to delete
	run tern kill "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"container not running"* ]]
	run tern delete "$ID"
	[ "$status" -eq 0 ]
}

@test "messages: every command on an unknown id says \"does not exist\" (containerd's shim and podman match it)" {
	for cmd in state kill delete start pause resume ps exec; do
		if [ "$cmd" = exec ]; then
			run tern exec "nosuch-$ID" /bin/true
		else
			run tern $cmd "nosuch-$ID"
		fi
		[ "$status" -ne 0 ]
		[[ "$output" == *"container does not exist"* ]] || {
			echo "$cmd: $output" >&2
			false
		}
		is_runc || [[ "$output" == *"nosuch-$ID"* ]]
	done
}

@test "messages: create and run of an id in use say \"container with given ID already exists\"" {
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	for cmd in create run; do
		run tern $cmd -b "$BUNDLE" "$ID"
		[ "$status" -ne 0 ]
		[[ "$output" == *"container with given ID already exists"* ]]
		is_runc || [[ "$output" == *"\`$ID\`"* ]]
	done
	# the first one is untouched
	[ "$(state_field "$ID" status)" = created ]
}

@test "run: a container whose process dies between create and its exec makes run fail, not hang" {
	# a failing startContainer hook ends the container's process after
	# `start` has opened exec.fifo, before its execve
	update_config '.hooks.startContainer = [{"path": "/bin/false"}]'
	set_args /bin/sleep "$MARK"
	run in_file timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[ "$status" -ne 137 ]
	check_nothing_left "$ID"
}
