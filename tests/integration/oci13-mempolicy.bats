#!/usr/bin/env bats
# runtime-spec 1.3: linux.memoryPolicy (set_mempolicy(2)) and
# process.execCPUAffinity (sched_setaffinity(2)), checked where they land:
# the policy in /proc/self/numa_maps of the container's processes (and, on
# a machine with two nodes, the node each page of a mapping is on), the
# CPUs in /proc/self/status. Bad combinations fail before anything exists.
#
# This machine has one NUMA node: the tests that need two say so and skip;
# scripts/test.sh runs this file in a qemu guest with two nodes
# (TERN_VM_NUMA=2 tests/vm/run-in-guest.sh), where they run for real.

# The tests tagged vm:v2 also run in scripts/test.sh's qemu guest (two NUMA
# nodes, Debian's 6.1 kernel, pure cgroup v2): the two-node ones, the
# refusals of modes that kernel lacks, and the order of affinity and cgroup
# join. The rest behave the same on either kernel.

load helpers

setup() {
	setup_bundle
	is_tern || skip "runc 1.1.5 has neither linux.memoryPolicy nor process.execCPUAffinity"
	[ -e /proc/self/numa_maps ] ||
		skip "!!! THIS KERNEL HAS NO NUMA SUPPORT (no /proc/self/numa_maps): memory policies cannot be tested here !!!"
}

# node_count: the NUMA nodes this machine has online.
node_count() {
	local n=0 id
	for id in /sys/devices/system/node/node[0-9]*; do
		[ -d "$id" ] && n=$((n + 1))
	done
	echo "$n"
}

# possible_nodes: "COUNT MAX" of the nodes this machine can have, as tern
# reads them (node/possible: "0-3" gives "4 3").
possible_nodes() {
	local item items count=0 max=0
	IFS=, read -ra items </sys/devices/system/node/possible
	for item in "${items[@]}"; do
		count=$((count + ${item#*-} - ${item%-*} + 1))
		max=${item#*-}
	done
	echo "$count $max"
}

require_two_nodes() {
	if [ "$(node_count)" -lt 2 ]; then
		skip "!!! THIS MACHINE HAS $(node_count) NUMA NODE(S): the two-node tests run in the qemu guest (TERN_VM_NUMA=2 tests/vm/run-in-guest.sh, from scripts/test.sh) !!!"
	fi
}

# kernel_at_least MAJOR MINOR
kernel_at_least() {
	local v major minor
	v=$(uname -r)
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%[!0-9]*}
	[ "$major" -gt "$1" ] || { [ "$major" -eq "$1" ] && [ "$minor" -ge "$2" ]; }
}

# policy [JQ]: set linux.memoryPolicy to the JSON object given.
policy() {
	update_config ".linux.memoryPolicy = $1"
}

# policy_of LINE: the policy in a numa_maps line ("7f00 bind=static:0
# file=/bin/busybox ..." gives "bind=static:0"; it may hold a space, as
# "prefer (many):0" does).
policy_of() {
	local rest=${1#* }
	rest=${rest%% file=*}
	rest=${rest%% anon=*}
	echo "$rest"
}

# run_policy JSON: run a container with that policy that prints the first
# line of its own numa_maps (the task policy shows on every mapping that
# has none of its own); sets POLICY.
run_policy() {
	policy "$1"
	set_args /bin/head -n 1 /proc/self/numa_maps
	run_container
	[ "$status" -eq 0 ] || {
		echo "$output"
		return 1
	}
	POLICY=$(policy_of "${lines[0]}")
}

# node_pages LINE NODE: the pages on NODE in a numa_maps line (0 if none).
node_pages() {
	local f
	for f in $1; do
		case "$f" in "N$2="*)
			echo "${f#N"$2"=}"
			return
			;;
		esac
	done
	echo 0
}

@test "memoryPolicy: each mode on node 0 is the policy of the container's process" {
	local want
	while IFS='|' read -r json want; do
		run_policy "$json"
		[ "$POLICY" = "$want" ] || {
			echo "policy $json: numa_maps says '$POLICY', wanted '$want'"
			return 1
		}
	done <<'EOF'
{"mode": "MPOL_DEFAULT"}|default
{"mode": "MPOL_LOCAL"}|local
{"mode": "MPOL_BIND", "nodes": "0"}|bind:0
{"mode": "MPOL_INTERLEAVE", "nodes": "0"}|interleave:0
{"mode": "MPOL_PREFERRED", "nodes": "0"}|prefer:0
{"mode": "MPOL_PREFERRED"}|local
{"mode": "MPOL_PREFERRED_MANY", "nodes": "0"}|prefer (many):0
{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_STATIC_NODES"]}|bind=static:0
{"mode": "MPOL_INTERLEAVE", "nodes": "0", "flags": ["MPOL_F_RELATIVE_NODES"]}|interleave=relative:0
{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_NUMA_BALANCING"]}|bind=balancing:0
EOF
	# and without a policy, the kernel's default
	update_config 'del(.linux.memoryPolicy)'
	run_container
	[ "$status" -eq 0 ]
	[ "$(policy_of "${lines[0]}")" = default ]
}

# bats test_tags=vm:v2
@test "memoryPolicy: MPOL_WEIGHTED_INTERLEAVE where the kernel has it (Linux 6.9), a clear refusal where not" {
	if kernel_at_least 6 9; then
		run_policy '{"mode": "MPOL_WEIGHTED_INTERLEAVE", "nodes": "0"}'
		[ "$POLICY" = "weighted interleave:0" ]
	else
		policy '{"mode": "MPOL_WEIGHTED_INTERLEAVE", "nodes": "0"}'
		set_args /bin/sleep "$MARK"
		run tern create -b "$BUNDLE" "$ID"
		check_fails_cleanly "linux.memoryPolicy.mode" "this kernel (Linux $(uname -r))" \
			"does not know MPOL_WEIGHTED_INTERLEAVE" "new in Linux 6.9"
	fi
}

# bats test_tags=vm:v2
@test "memoryPolicy: NUMA balancing with MPOL_PREFERRED_MANY where the kernel takes it (Linux 6.10), a clear refusal where not" {
	if kernel_at_least 6 10; then
		run_policy '{"mode": "MPOL_PREFERRED_MANY", "nodes": "0", "flags": ["MPOL_F_NUMA_BALANCING"]}'
		[ "$POLICY" = "prefer (many)=balancing:0" ]
	elif ! kernel_at_least 6 9; then
		policy '{"mode": "MPOL_PREFERRED_MANY", "nodes": "0", "flags": ["MPOL_F_NUMA_BALANCING"]}'
		set_args /bin/sleep "$MARK"
		run tern create -b "$BUNDLE" "$ID"
		check_fails_cleanly "linux.memoryPolicy.flags" "this kernel (Linux $(uname -r)) refuses" \
			"MPOL_PREFERRED_MANY nodes 0 MPOL_F_NUMA_BALANCING"
	else
		skip "Linux $(uname -r): between the kernels this test knows the answer for"
	fi
}

@test "memoryPolicy: tern exec processes get it too (they inherit nothing from the init)" {
	policy '{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_STATIC_NODES"]}'
	start_sleeper
	pid=$(state_field "$ID" pid)
	[ "$(policy_of "$(head -n 1 /proc/"$pid"/numa_maps)")" = "bind=static:0" ]
	run tern exec "$ID" /bin/head -n 1 /proc/self/numa_maps
	[ "$status" -eq 0 ]
	[ "$(policy_of "$output")" = "bind=static:0" ]
	# exec --process as well: the policy is the container's, not the process's
	printf '{"args": ["/bin/head", "-n", "1", "/proc/self/numa_maps"], "cwd": "/"}' \
		>"$BATS_TEST_TMPDIR/p.json"
	run tern exec --process "$BATS_TEST_TMPDIR/p.json" "$ID"
	[ "$status" -eq 0 ]
	[ "$(policy_of "$output")" = "bind=static:0" ]
	# tern itself keeps the default policy
	[ "$(policy_of "$(head -n 1 /proc/self/numa_maps)")" = default ]
}

@test "memoryPolicy: invalid combinations fail before anything is created, naming the field" {
	set_args /bin/sleep "$MARK"
	local count max beyond want
	read -r count max < <(possible_nodes)
	beyond=$((max + 1))
	while IFS='|' read -r json want; do
		policy "$json"
		run tern create -b "$BUNDLE" "$ID"
		# (the messages' text is in tests/unit/test-numa.c; here the field)
		check_fails_cleanly "linux.memoryPolicy" "$want" || {
			echo "policy $json"
			return 1
		}
	done <<EOF
{"mode": "MPOL_DEFAULT", "nodes": "0"}|.nodes: must be empty: MPOL_DEFAULT takes no nodes
{"mode": "MPOL_LOCAL", "nodes": "0"}|.nodes: must be empty: MPOL_LOCAL takes no nodes
{"mode": "MPOL_LOCAL", "flags": ["MPOL_F_STATIC_NODES"]}|.flags: must be empty: MPOL_LOCAL takes no flags
{"mode": "MPOL_BIND"}|.nodes: MPOL_BIND needs at least one node
{"mode": "MPOL_INTERLEAVE", "nodes": ""}|.nodes: MPOL_INTERLEAVE needs at least one node
{"mode": "MPOL_FIRST_TOUCH", "nodes": "0"}|.mode: unknown mode "MPOL_FIRST_TOUCH"
{"nodes": "0"}|.mode: is required
{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_LAZY"]}|.flags[0]: unknown flag "MPOL_F_LAZY"
{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_STATIC_NODES", "MPOL_F_RELATIVE_NODES"]}|.flags: MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES exclude each other
{"mode": "MPOL_INTERLEAVE", "nodes": "0", "flags": ["MPOL_F_NUMA_BALANCING"]}|.flags: MPOL_F_NUMA_BALANCING works only with MPOL_BIND and MPOL_PREFERRED_MANY
{"mode": "MPOL_BIND", "nodes": "0-"}|.nodes: "0-" is not a list of node numbers
{"mode": "MPOL_BIND", "nodes": "$beyond"}|.nodes: node $beyond does not exist on this machine (its nodes: 
{"mode": "MPOL_BIND", "nodes": "0,65535"}|.nodes: node 65535 does not exist on this machine
{"mode": "MPOL_INTERLEAVE", "nodes": "$count", "flags": ["MPOL_F_RELATIVE_NODES"]}|.nodes: with MPOL_F_RELATIVE_NODES the nodes are positions among the container's nodes, and this machine has $count
EOF
	# run takes the same path as create
	policy '{"mode": "MPOL_LOCAL", "nodes": "0"}'
	run tern run -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.memoryPolicy.nodes: must be empty: MPOL_LOCAL takes no nodes"
}

# bats test_tags=vm:v2
@test "memoryPolicy: two nodes: MPOL_BIND 1 puts every page on node 1" {
	require_two_nodes
	policy '{"mode": "MPOL_BIND", "nodes": "1"}'
	set_args /bin/numamap 4
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(policy_of "$output")" = "bind:1" ]
	[ "$(node_pages "$output" 1)" -eq 1024 ]
	[ "$(node_pages "$output" 0)" -eq 0 ]
	# and so for a tern exec process
	set_args /bin/sleep "$MARK"
	start_sleeper
	run tern exec "$ID" /bin/numamap 4
	[ "$status" -eq 0 ]
	[ "$(node_pages "$output" 1)" -eq 1024 ]
	[ "$(node_pages "$output" 0)" -eq 0 ]
}

# bats test_tags=vm:v2
@test "memoryPolicy: two nodes: MPOL_INTERLEAVE 0-1 spreads the pages, MPOL_PREFERRED 1 prefers node 1" {
	require_two_nodes
	policy '{"mode": "MPOL_INTERLEAVE", "nodes": "0-1"}'
	set_args /bin/numamap 4
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(policy_of "$output")" = "interleave:0-1" ]
	# page by page in turn, on both nodes; not exactly half and half: an
	# interleaved page goes elsewhere when its node is short of free
	# memory (node 0 holds the guest's kernel and its tmpfs root)
	[ "$(node_pages "$output" 0)" -gt 0 ]
	[ "$(node_pages "$output" 1)" -gt 0 ]
	[ $(($(node_pages "$output" 0) + $(node_pages "$output" 1))) -eq 1024 ]
	policy '{"mode": "MPOL_PREFERRED", "nodes": "1"}'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(policy_of "$output")" = "prefer:1" ]
	# node 1 has ample free memory: nothing falls back to node 0
	[ "$(node_pages "$output" 1)" -eq 1024 ]
}

# bats test_tags=vm:v2
@test "memoryPolicy: two nodes: MPOL_F_RELATIVE_NODES counts within linux.resources.cpu.mems" {
	require_two_nodes
	# the container may use node 1 only: relative node 0 is node 1
	update_config '.linux.resources.cpu = {"mems": "1"}'
	policy '{"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_RELATIVE_NODES"]}'
	set_cmd 'grep Mems_allowed_list /proc/self/status; numamap 4'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "${lines[0]}" == "Mems_allowed_list:"*1 ]]
	[ "$(node_pages "${lines[1]}" 1)" -eq 1024 ]
	[ "$(node_pages "${lines[1]}" 0)" -eq 0 ]
	# a policy outside the cgroup's nodes is refused up front
	policy '{"mode": "MPOL_BIND", "nodes": "0"}'
	set_args /bin/sleep "$MARK"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.memoryPolicy.nodes" "none of the nodes 0 is in linux.resources.cpu.mems (1)"
}

# cpus_allowed: the Cpus_allowed_list value in $output.
cpus_allowed() {
	echo "$output" | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p'
}

@test "execCPUAffinity: a tern exec process runs on final; the init is not affected (config.md)" {
	[ "$(nproc --all)" -ge 2 ] || skip "!!! ONE CPU HERE: execCPUAffinity needs two !!!"
	update_config '.process.execCPUAffinity = {"initial": "0", "final": "1"}'
	start_sleeper
	pid=$(state_field "$ID" pid)
	# the init keeps what it had: the setting is for exec processes
	[ "$(pid_cpus "$pid")" = "$(pid_cpus self)" ]
	run tern exec "$ID" /bin/grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ]
	[ "$(cpus_allowed)" = 1 ]
	# exec --process: its own execCPUAffinity, or else config.json's
	printf '{"args": ["/bin/grep", "Cpus_allowed_list", "/proc/self/status"], "cwd": "/", "execCPUAffinity": {"final": "0"}}' \
		>"$BATS_TEST_TMPDIR/own.json"
	run tern exec --process "$BATS_TEST_TMPDIR/own.json" "$ID"
	[ "$status" -eq 0 ]
	[ "$(cpus_allowed)" = 0 ]
	printf '{"args": ["/bin/grep", "Cpus_allowed_list", "/proc/self/status"], "cwd": "/"}' \
		>"$BATS_TEST_TMPDIR/none.json"
	run tern exec --process "$BATS_TEST_TMPDIR/none.json" "$ID"
	[ "$status" -eq 0 ]
	[ "$(cpus_allowed)" = 1 ]
}

# bats test_tags=vm:v2
@test "execCPUAffinity: initial is set before the process joins the cgroup, final after (strace)" {
	[ "$(nproc --all)" -ge 2 ] || skip "!!! ONE CPU HERE: execCPUAffinity needs two !!!"
	command -v strace >/dev/null || skip "!!! NO strace HERE (apt-get install strace) !!!"
	update_config '.process.execCPUAffinity = {"initial": "1", "final": "0"}'
	start_sleeper
	log=$BATS_TEST_TMPDIR/strace.log
	# (a sanitized tern's leak checker cannot run under ptrace)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run strace -f -qq -o "$log" -e trace=sched_setaffinity,openat \
		"$TERN_BIN" --root "$ROOT" exec "$ID" /bin/grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ]
	[ "$(cpus_allowed)" = 0 ]
	# the parent pins the new process to CPU 1, then writes it into the
	# container's cgroup(s); the process itself goes to CPU 0 after that
	initial=$(grep -n 'sched_setaffinity([1-9][0-9]*, [0-9]*, \[1\]) *= 0' "$log" | head -n 1 | cut -d: -f1)
	join=$(grep -n 'cgroup.procs", O_WRONLY' "$log" | grep -F "$ID" | head -n 1 | cut -d: -f1)
	final=$(grep -n 'sched_setaffinity(0, [0-9]*, \[0\]) *= 0' "$log" | head -n 1 | cut -d: -f1)
	echo "initial at line $initial, first cgroup join at $join, final at $final"
	[ -n "$initial" ] && [ -n "$join" ] && [ -n "$final" ]
	[ "$initial" -lt "$join" ]
	[ "$join" -lt "$final" ]
}

@test "execCPUAffinity: with initial only, tern leaves the affinity to the kernel once in the cgroup" {
	[ "$(nproc --all)" -ge 2 ] || skip "!!! ONE CPU HERE: execCPUAffinity needs two !!!"
	update_config '.process.execCPUAffinity = {"initial": "1"}'
	start_sleeper
	run tern exec "$ID" /bin/grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ]
	got=$(cpus_allowed)
	# config.md: without final the runtime does not change the affinity
	# after the move, and the kernel decides. What it decides (v1 cpuset
	# kernels before 6.2 reset it to the cpuset's CPUs, later ones keep
	# the CPUs asked for within the cpuset) is measured here the same
	# way: a process on CPU 1 that joins the container's cpuset cgroup.
	pid=$(state_field "$ID" pid)
	dir=$(host_cgroup_dir "$pid" cpuset)
	output=$(taskset -c 1 sh -c "echo \$\$ >'$dir/cgroup.procs' && grep Cpus_allowed_list /proc/self/status")
	want=$(cpus_allowed)
	echo "exec process: $got; a process moved there by hand: $want"
	[ -n "$want" ]
	[ "$got" = "$want" ]
}

# cpuset_cpus PID: the CPUs PID's cpuset cgroup allows (v1 cpuset.cpus, v2
# cpuset.cpus.effective).
cpuset_cpus() {
	local dir
	dir=$(host_cgroup_dir "$1" cpuset)
	if [ -e "$dir/cpuset.cpus.effective" ]; then
		cat "$dir/cpuset.cpus.effective"
	else
		cat "$dir/cpuset.cpus"
	fi
}

# run_pinned CMD...: tern run as a caller pinned to CPU 0 runs it (taskset,
# as a systemd unit's CPUAffinity= or a kubelet's CPU manager would pin it).
run_pinned() {
	run in_file taskset -c 0 "$TERN_BIN" --root "$ROOT" "$@"
}

# pid_cpus PID: the Cpus_allowed_list of PID.
pid_cpus() {
	sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/"$1"/status
}

# pinned_run_and_exec [CPUS]: a pinned tern runs the container, and a pinned
# tern execs into it; the init and the exec process must both be on CPUS,
# by default the CPUs of the container's cpuset (which must not be the
# caller's 0 alone).
pinned_run_and_exec() {
	local pid want=${1:-}
	run_pinned run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	pid=$(state_field "$ID" pid)
	if [ -z "$want" ]; then
		want=$(cpuset_cpus "$pid")
		[ "$want" != 0 ] || return 1
	fi
	echo "want CPUs $want; the init has $(pid_cpus "$pid")"
	[ "$(pid_cpus "$pid")" = "$want" ] || return 1
	run_pinned exec "$ID" /bin/grep Cpus_allowed_list /proc/self/status
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(cpus_allowed)" = "$want" ] || return 1
}

@test "a tern pinned to one CPU does not pin the container: the init and exec processes get every CPU of its cpuset (as runc and crun)" {
	[ "$(nproc --all)" -ge 2 ] || skip "!!! ONE CPU HERE: a pinned caller needs two !!!"
	set_args /bin/sleep "$MARK"
	# no cpuset of its own: the CPUs of the cgroup it is in; Linux 6.2 and
	# later would keep the caller's CPU 0 (numa.h)
	pinned_run_and_exec
	# only CPU 1, which the caller's CPU 0 is not in
	tern delete --force "$ID"
	update_config '.linux.resources.cpu = {"cpus": "1"}'
	pinned_run_and_exec 1
	# an exec process's own execCPUAffinity.final still wins
	printf '{"args": ["/bin/grep", "Cpus_allowed_list", "/proc/self/status"], "cwd": "/", "execCPUAffinity": {"final": "1"}}' \
		>"$BATS_TEST_TMPDIR/final.json"
	run_pinned exec --process "$BATS_TEST_TMPDIR/final.json" "$ID"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(cpus_allowed)" = 1 ]
	# a filter that kills sched_setaffinity, loaded before the user
	# changes (noNewPrivileges false): the CPUs are reset before it
	tern delete --force "$ID"
	update_config '.process.noNewPrivileges = false | .linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sched_setaffinity"], "action": "SCMP_ACT_KILL_PROCESS"}]}'
	pinned_run_and_exec 1
	[ "$(state_field "$ID" status)" = running ]
}

@test "execCPUAffinity: CPUs the machine lacks and bad lists fail clearly, at create and at exec" {
	local ncpu
	ncpu=$(nproc --all)
	set_args /bin/sleep "$MARK"
	update_config ".process.execCPUAffinity = {\"initial\": \"0\", \"final\": \"$ncpu\"}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.execCPUAffinity.final: CPU $ncpu does not exist on this machine (its CPUs: "
	update_config '.process.execCPUAffinity = {"initial": "0-"}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.execCPUAffinity.initial" '"0-" is not a list of CPU numbers'
	update_config '.process.execCPUAffinity = {"initial": "", "final": ""}'
	start_sleeper
	printf '{"args": ["/bin/true"], "cwd": "/", "execCPUAffinity": {"initial": "%s"}}' "$ncpu" \
		>"$BATS_TEST_TMPDIR/p.json"
	run tern exec --process "$BATS_TEST_TMPDIR/p.json" "$ID"
	[ "$status" -ne 0 ]
	output_mentions "process.execCPUAffinity.initial: CPU $ncpu does not exist on this machine"
	# nothing was started: the container still has its init alone
	run tern ps "$ID"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c "sleep $MARK")" -eq 1 ]
	[ "$(echo "$output" | grep -vc -e '^UID' -e "sleep $MARK")" -eq 0 ]
}

@test "ociVersion 1.3.0 and tern features: memoryPolicy lists every mode and flag of the spec" {
	update_config '.ociVersion = "1.3.0"'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" != *ociVersion* ]]
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -c .linux.memoryPolicy.modes)" = '["MPOL_DEFAULT","MPOL_BIND","MPOL_INTERLEAVE","MPOL_WEIGHTED_INTERLEAVE","MPOL_PREFERRED","MPOL_PREFERRED_MANY","MPOL_LOCAL"]' ]
	[ "$(echo "$output" | jq -c .linux.memoryPolicy.flags)" = '["MPOL_F_NUMA_BALANCING","MPOL_F_RELATIVE_NODES","MPOL_F_STATIC_NODES"]' ]
}
