#!/usr/bin/env bats
# The runtime under containerd, as Kubernetes runs it: Debian's containerd
# 1.6 and its runc shim (io.containerd.runc.v2) with the runtime under test
# as the shim's binary (`ctr run --runc-binary`, what a RuntimeClass's
# BinaryName option does). The containers are made from this test's own
# config.json (`ctr run --config`), so a test can hand the shim exactly the
# config shape containerd's CRI plugin writes.
#
# Nothing of the host's containerd is touched: setup_file starts a private
# one (its own root, state and socket, the CRI plugin off) under this
# file's temporary directory, and teardown_file stops it and its shims.
# `TERN_BIN=/usr/sbin/runc bats tests/integration/containerd.bats` checks
# that these tests describe what runc does under the same shim.

load helpers

CT_NS=tern-bats

# ct ARG...: ctr on this file's containerd, through in_file (a transcript
# for failed tests, fds 3-9 closed). Bounded: a hung shim or runtime fails
# its test instead of the suite.
ct() {
	in_file timeout -k 5 60 ctr --address "$CT_DIR/containerd.sock" -n "$CT_NS" "$@"
}

setup_file() {
	local missing= tool
	for tool in containerd ctr containerd-shim-runc-v2; do
		command -v "$tool" >/dev/null || missing="$missing $tool"
	done
	if [ -n "$missing" ]; then
		echo "containerd.bats needs$missing (Debian package containerd; scripts/test.sh installs it)" >&2
		return 1
	fi
	build_base_rootfs || return 1
	export CT_DIR=$BATS_FILE_TMPDIR/containerd
	mkdir -p "$CT_DIR"
	cat >"$CT_DIR/config.toml" <<-EOF
		version = 2
		root = "$CT_DIR/root"
		state = "$CT_DIR/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$CT_DIR/containerd.sock"
		[ttrpc]
		  address = "$CT_DIR/containerd.sock.ttrpc"
	EOF
	# fds 3-9 closed: bats waits for whoever holds its output open
	containerd --config "$CT_DIR/config.toml" </dev/null >"$CT_DIR/containerd.log" 2>&1 \
		3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	echo $! >"$CT_DIR/containerd.pid"
	wait_until 30 ctr --address "$CT_DIR/containerd.sock" version || {
		cat "$CT_DIR/containerd.log" >&2
		return 1
	}
}

teardown_file() {
	[ -n "${CT_DIR:-}" ] || return 0
	[ -s "$CT_DIR/containerd.pid" ] && kill "$(cat "$CT_DIR/containerd.pid")" 2>/dev/null
	# shims (and what they run) that outlived their tests: their command
	# lines name this file's containerd socket
	pkill -9 -f -- "$CT_DIR/containerd.sock" 2>/dev/null
	local mp
	awk '{print $5}' /proc/self/mountinfo | grep -F "$CT_DIR/" | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null; done
	rm -rf "$CT_DIR"
	return 0
}

setup() {
	setup_bundle
	# the shim keeps the runtime's state under --runc-root/NAMESPACE: that
	# is $ROOT, for teardown_bundle and check_nothing_left
	SHIM_ROOT=$BATS_TEST_TMPDIR/shim-root
	ROOT=$SHIM_ROOT/$CT_NS
	update_config ".root.path = \"$BUNDLE/rootfs\" | .linux.cgroupsPath = \"/$ID\""
}

teardown() {
	ct task kill -s SIGKILL "$ID" >/dev/null 2>&1
	wait_until 10 task_stopped_or_gone
	ct task delete "$ID" >/dev/null 2>&1
	ct container delete "$ID" >/dev/null 2>&1
	teardown_bundle
}

# ct_run ARG...: `ctr run` of this test's config as container $ID, with the
# runtime under test as the shim's binary.
ct_run() {
	ct run --config "$BUNDLE/config.json" --runc-binary "$TERN_BIN" \
		--runc-root "$SHIM_ROOT" "$@" "$ID"
}

# task_status: RUNNING, STOPPED, PAUSED... of task $ID, as ctr lists it.
task_status() {
	ctr --address "$CT_DIR/containerd.sock" -n "$CT_NS" task ls 2>/dev/null |
		awk -v id="$ID" '$1 == id { print $3 }'
}

task_is() { [ "$(task_status)" = "$1" ]; }

task_stopped_or_gone() {
	local s
	s=$(task_status)
	[ -z "$s" ] || [ "$s" = STOPPED ]
}

@test "containerd: a container runs through the runc shim: its output, its exit status, nothing left after delete" {
	set_cmd 'echo hello from the container; exit 3'
	run ct_run --rm
	[ "$status" -eq 3 ]
	[[ "$output" == *"hello from the container"* ]]
	run ct container ls -q
	[[ "$output" != *"$ID"* ]]
	check_nothing_left "$ID"
}

@test "containerd: kill of a task that has exited is \"process already finished\", not an unknown error (the shim matches \"container not running\")" {
	# what the shim makes of the runtime's words decides whether stopping a
	# pod whose container exited goes on or fails (and leaks the pod)
	set_args /bin/true
	run ct_run -d
	[ "$status" -eq 0 ]
	wait_until 30 task_is STOPPED
	run ct task kill "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"process already finished"* ]]
	[[ "$output" != *"unknown"* ]]
	run ct task delete "$ID"
	[ "$status" -eq 0 ]
	run ct container delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "containerd: Kubernetes' drop ALL (the CRI's \"capabilities\": {}) leaves no capability to the container or its exec'd processes" {
	# containerd's CRI plugin writes a capabilities object with every list
	# left out for securityContext.capabilities.drop ["ALL"], and
	# noNewPrivileges false (Kubernetes' default)
	update_config '.process.capabilities = {} | .process.noNewPrivileges = false'
	set_args sleep "$MARK"
	run ct_run -d
	[ "$status" -eq 0 ]
	wait_until 30 task_is RUNNING
	# The answer is the exec's exit status, not its output: ctr 1.6 can lose
	# a short-lived exec's output (it may take the exit event and close its
	# fifos before the shim has copied the output across), while the exit
	# status always arrives. 3: not ten capability lines; 4: one is not zero.
	# $(grep) is a subshell of the exec'd sh: it has the sets that sh has.
	run ct task exec --exec-id caps "$ID" sh -c '
		sets=$(grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb):" /proc/1/status /proc/self/status)
		[ "$(echo "$sets" | grep -c ":Cap...:")" -eq 10 ] || exit 3
		echo "$sets" | grep -v ":Cap...:[[:space:]]*0000000000000000$" && exit 4
		exit 0'
	[ "$status" -eq 0 ] || {
		echo "exit status 3: not 10 capability lines; 4: capabilities left (lines above, if ctr passed them on)" >&2
		false
	}
}

@test "containerd: exec'd processes start in a process group of their own, with no signal ignored; pause, resume and SIGTERM work through the shim" {
	set_cmd "trap 'exit 7' TERM; while :; do sleep $MARK & wait \$!; done"
	run ct_run -d
	[ "$status" -eq 0 ]
	wait_until 30 task_is RUNNING
	# The answers are exit statuses, not output: ctr 1.6 can lose a
	# short-lived exec's output (see the capabilities test above).
	# Field 5 of /proc/self/stat is the process group; $$ the shell's pid
	# (cut runs in the shell's process group: no job control).
	run ct task exec --exec-id pg "$ID" sh -c '[ "$$" -gt 1 ] && [ "$(cut -d" " -f5 /proc/self/stat)" = "$$" ]'
	[ "$status" -eq 0 ] || {
		echo "the exec'd process does not lead its own process group" >&2
		false
	}
	# grep itself is the exec'd process (a shell would set its own)
	run ct task exec --exec-id sigblk "$ID" grep -qx 'SigBlk:	0000000000000000' /proc/self/status
	[ "$status" -eq 0 ] || {
		echo "the exec'd process starts with signals blocked" >&2
		false
	}
	run ct task exec --exec-id sigign "$ID" grep -qx 'SigIgn:	0000000000000000' /proc/self/status
	[ "$status" -eq 0 ] || {
		echo "the exec'd process starts with signals ignored" >&2
		false
	}
	run ct task pause "$ID"
	[ "$status" -eq 0 ]
	wait_until 30 task_is PAUSED
	run ct task resume "$ID"
	[ "$status" -eq 0 ]
	wait_until 30 task_is RUNNING
	run ct task kill -s SIGTERM "$ID"
	[ "$status" -eq 0 ]
	wait_until 30 task_is STOPPED
	run ct task delete "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"exit code 7"* ]] || {
		echo "exit status 7 expected from the TERM trap: $output" >&2
		false
	}
	run ct container delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}
