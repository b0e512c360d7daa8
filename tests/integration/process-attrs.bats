#!/usr/bin/env bats
# Process attributes beyond user and capabilities: linux.personality,
# process.ioPriority, process.scheduler, linux.intelRdt (resctrl is absent
# on the test machine: the error is what is tested), and what a setuid-root
# binary gains in a container with and without noNewPrivileges.

load helpers

# sched_line / ioprio_line: the two lines the schedinfo helper prints.
sched_line() { echo "$output" | grep '^policy='; }
ioprio_line() { echo "$output" | grep '^ioprio '; }

@test "personality: LINUX32 makes uname -m say i686" {
	[ "$(uname -m)" = x86_64 ] || skip "the LINUX32 domain is for x86_64 hosts"
	is_tern || skip "runc 1.1.5 ignores linux.personality"
	update_config '.linux.personality = {"domain": "LINUX32"}'
	set_cmd 'uname -m; cat /proc/self/personality'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = i686 ]
	# PER_LINUX32 is 0x0008
	[ "${lines[1]}" = 00000008 ]
}

@test "personality: LINUX keeps x86_64; flags are added (ADDR_NO_RANDOMIZE)" {
	[ "$(uname -m)" = x86_64 ] || skip "checks the x86_64 machine name"
	is_tern || skip "runc 1.1.5 ignores linux.personality"
	update_config '.linux.personality = {"domain": "LINUX", "flags": ["ADDR_NO_RANDOMIZE"]}'
	set_cmd 'uname -m; cat /proc/self/personality'
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = x86_64 ]
	# ADDR_NO_RANDOMIZE is 0x0040000
	[ "${lines[1]}" = 00040000 ]
	# and it works: two runs see the same stack address
	set_cmd 'grep "\[stack\]" /proc/self/maps'
	run_container
	first=$output
	run_container
	[ "$status" -eq 0 ]
	[ -n "$first" ]
	[ "$output" = "$first" ]
}

@test "personality: an unknown domain fails clearly" {
	is_tern || skip "runc 1.1.5 ignores linux.personality"
	update_config '.linux.personality = {"domain": "SVR4"}'
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly "linux.personality.domain" "unknown domain \`SVR4\`"
	update_config '.linux.personality = {"domain": "LINUX", "flags": ["NO_SUCH_FLAG"]}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.personality.flags[0]" "NO_SUCH_FLAG"
}

@test "ioPriority: IOPRIO_CLASS_BE 6 and IOPRIO_CLASS_RT 3 (ioprio_get in the container)" {
	is_tern || skip "runc 1.1.5 ignores process.ioPriority"
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BE", "priority": 6}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	# IOPRIO_CLASS_BE = 2
	[ "$(ioprio_line)" = "ioprio class=2 data=6" ]
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_RT", "priority": 3}'
	run_container
	[ "$status" -eq 0 ]
	[ "$(ioprio_line)" = "ioprio class=1 data=3" ]
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_IDLE", "priority": 0}'
	run_container
	[ "$status" -eq 0 ]
	[ "$(ioprio_line)" = "ioprio class=3 data=0" ]
	# without it the process has the default (class 0, "none")
	update_config 'del(.process.ioPriority)'
	run_container
	[ "$status" -eq 0 ]
	[ "$(ioprio_line)" = "ioprio class=0 data=0" ]
}

@test "ioPriority: priority out of range or unknown class fails clearly" {
	is_tern || skip "runc 1.1.5 ignores process.ioPriority"
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BE", "priority": 8}'
	set_args /bin/sleep "$MARK"
	run_container
	# (the config parser already knows this range)
	check_fails_cleanly "process.ioPriority.priority" "0 and 7"
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BOGUS", "priority": 1}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.ioPriority.class" "IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE"
}

@test "scheduler: SCHED_BATCH with nice 7, SCHED_IDLE (sched_getattr in the container)" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	update_config '.process.scheduler = {"policy": "SCHED_BATCH", "nice": 7}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_BATCH priority=0 nice=7 flags=0x0 "* ]]
	update_config '.process.scheduler = {"policy": "SCHED_IDLE"}'
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_IDLE priority=0 "* ]]
	update_config '.process.scheduler = {"policy": "SCHED_OTHER", "nice": -5,
		"flags": ["SCHED_FLAG_RESET_ON_FORK"]}'
	run_container
	[ "$status" -eq 0 ]
	# reset-on-fork is reported back by sched_getattr as flag 0x1
	[[ "$(sched_line)" == "policy=SCHED_OTHER priority=0 nice=-5 flags=0x1 "* ]]
}

@test "scheduler: SCHED_FIFO priority 10 with a realtime budget in the container's cgroup" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	update_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 10}'
	if [ -e /sys/fs/cgroup/cpu/cpu.rt_runtime_us ]; then
		# cgroup v1 with CONFIG_RT_GROUP_SCHED (this host): a new cgroup has
		# no realtime time at all until given some.
		update_config '.linux.resources.cpu.realtimePeriod = 1000000
			| .linux.resources.cpu.realtimeRuntime = 10000'
	fi
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_FIFO priority=10 "* ]]
	update_config '.process.scheduler = {"policy": "SCHED_RR", "priority": 99}'
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_RR priority=99 "* ]]
}

@test "scheduler: SCHED_FIFO in a cgroup without realtime budget fails naming realtimeRuntime (cgroup v1 RT group scheduling)" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	[ -e /sys/fs/cgroup/cpu/cpu.rt_runtime_us ] || skip "needs cgroup v1 with CONFIG_RT_GROUP_SCHED"
	update_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 10}'
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly "process.scheduler" "Operation not permitted" "realtimeRuntime"
}

# userns_bundle: the container gets its own user namespace (root inside is
# host uid 100000).
userns_bundle() {
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]'
	add_namespace user
	update_config '.mounts |= map(select(.destination != "/sys/fs/cgroup" and .destination != "/sys"))'
	make_traversable "$BUNDLE/rootfs"
}

@test "scheduler: in a user namespace, SCHED_BATCH works and SCHED_FIFO fails naming CAP_SYS_NICE" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	userns_bundle
	# raising nice needs no capability: 19, the highest, whatever nice
	# value the tests run at (`nice -n 19 bats ...` on a shared machine)
	update_config '.process.scheduler = {"policy": "SCHED_BATCH", "nice": 19}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_BATCH priority=0 nice=19 "* ]]
	# a realtime policy needs CAP_SYS_NICE in the host's user namespace
	update_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 10}
		| .linux.resources.cpu.realtimePeriod = 1000000
		| .linux.resources.cpu.realtimeRuntime = 10000'
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly "process.scheduler" "Operation not permitted" "CAP_SYS_NICE in the host's user namespace"
}

@test "ioPriority: IOPRIO_CLASS_RT in a user namespace fails naming the capability" {
	is_tern || skip "runc 1.1.5 ignores process.ioPriority"
	userns_bundle
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_RT", "priority": 1}'
	set_args /bin/sleep "$MARK"
	run_container
	check_fails_cleanly "process.ioPriority" "Operation not permitted" "CAP_SYS_ADMIN"
	# the best-effort class needs nothing
	update_config '.process.ioPriority = {"class": "IOPRIO_CLASS_BE", "priority": 2}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[ "$(ioprio_line)" = "ioprio class=2 data=2" ]
}

@test "scheduler: SCHED_DEADLINE runtime/deadline/period reach the process" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	# no shell: a SCHED_DEADLINE task may not fork
	update_config '.process.scheduler = {"policy": "SCHED_DEADLINE",
		"runtime": 2000000, "deadline": 20000000, "period": 40000000}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_DEADLINE priority=0 nice=0 flags=0x0 runtime=2000000 deadline=20000000 period=40000000" ]]
}

@test "scheduler: SCHED_DEADLINE without SCHED_FLAG_RESET_ON_FORK warns (no fork); with it a shell's child runs as SCHED_OTHER" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	update_config '.process.scheduler = {"policy": "SCHED_DEADLINE",
		"runtime": 2000000, "deadline": 20000000, "period": 40000000}'
	set_args /bin/schedinfo
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning"*"process.scheduler: a SCHED_DEADLINE process cannot fork"*"SCHED_FLAG_RESET_ON_FORK"* ]]
	update_config '.process.scheduler.flags = ["SCHED_FLAG_RESET_ON_FORK"]'
	set_cmd '/bin/schedinfo; true'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" != *"cannot fork"* ]]
	# the shell forked: its child was reset to the default policy
	[[ "$(sched_line)" == "policy=SCHED_OTHER priority=0 nice=0 "* ]]
}

@test "scheduler: out-of-range values fail clearly before anything exists" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	set_args /bin/sleep "$MARK"
	update_config '.process.scheduler = {"policy": "SCHED_FIFO", "priority": 200}'
	run_container
	check_fails_cleanly "process.scheduler.priority: 200 is out of range for SCHED_FIFO (1-99)"
	update_config '.process.scheduler = {"policy": "SCHED_OTHER", "priority": 5}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.priority: 5"
	update_config '.process.scheduler = {"policy": "SCHED_OTHER", "nice": 40}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.nice: 40"
	update_config '.process.scheduler = {"policy": "SCHED_NOPE"}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.policy" "SCHED_NOPE"
	update_config '.process.scheduler = {"policy": "SCHED_DEADLINE", "runtime": 30000000,
		"deadline": 20000000}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.runtime" "runtime <= deadline <= period"
	# what the kernel would take and silently ignore is refused too
	update_config '.process.scheduler = {"policy": "SCHED_IDLE", "nice": 5}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.nice: 5 has no effect with SCHED_IDLE"
	update_config '.process.scheduler = {"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_DL_OVERRUN"]}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "process.scheduler.flags[0]: SCHED_FLAG_DL_OVERRUN is for SCHED_DEADLINE only"
}

@test "exec: --process with scheduler and ioPriority applies them to the new process" {
	is_tern || skip "runc 1.1.5 ignores process.scheduler"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	jq -n '{args: ["/bin/schedinfo"], cwd: "/", user: {uid: 0, gid: 0},
		scheduler: {policy: "SCHED_BATCH", nice: 3},
		ioPriority: {class: "IOPRIO_CLASS_IDLE", priority: 0}}' >"$BATS_TEST_TMPDIR/p.json"
	run tern exec --process "$BATS_TEST_TMPDIR/p.json" "$ID"
	[ "$status" -eq 0 ]
	[[ "$(sched_line)" == "policy=SCHED_BATCH priority=0 nice=3 "* ]]
	[ "$(ioprio_line)" = "ioprio class=3 data=0" ]
	# a bad one is refused before anything is spawned
	jq -n '{args: ["/bin/schedinfo"], cwd: "/", user: {uid: 0, gid: 0},
		ioPriority: {class: "IOPRIO_CLASS_BE", priority: 9}}' >"$BATS_TEST_TMPDIR/bad.json"
	run tern exec --process "$BATS_TEST_TMPDIR/bad.json" "$ID"
	[ "$status" -ne 0 ]
	[[ "$output" == *"ioPriority.priority"*"0 and 7"* ]]
	run tern ps --format json "$ID"
	[ "$(echo "$output" | jq length)" -eq 1 ]
}

# linux.intelRdt. NOT TESTED HERE: making, joining and removing resctrl
# groups, writing their schemata, putting the init and exec'd processes in
# them, MON groups. The machine has no resctrl at all: its CPU has no Intel
# RDT / AMD QoS (no rdt_a, cat_l3, mba or cqm flag in /proc/cpuinfo), its
# kernel is built without CONFIG_X86_CPU_RESCTRL, and qemu's emulated CPU
# (TCG, -cpu max) has none either (checked: Debian's kernel, built with
# resctrl, registers no resctrl filesystem in such a guest). A fake resctrl
# would test nothing the kernel does, so there is none. What is tested: the
# schema line checks (tests/unit/test-intel-rdt.c, and bad-input.bats with
# the binary), and here that every linux.intelRdt fails before anything is
# created, naming the field and why, with nothing left behind.
@test "intelRdt: fails clearly because this host has no resctrl (the resctrl path is untested here)" {
	if grep -qw resctrl /proc/filesystems; then
		skip "this host has resctrl: the error below is for hosts without it"
	fi
	is_tern || skip "runc 1.1.5 ignores linux.intelRdt without resctrl"
	set_args /bin/sleep "$MARK"
	for rdt in '{"closID": "tern-test", "l3CacheSchema": "L3:0=f"}' \
		'{"schemata": ["L3:0=7f0;1=1f", "MB:0=20;1=70"], "enableMonitoring": true}' \
		'{"closID": "tern-test"}' '{"closID": "/"}' '{}'; do
		update_config ".linux.intelRdt = $rdt"
		run_container
		check_fails_cleanly "linux.intelRdt" "resctrl is not available on this host" \
			"/proc/filesystems"
		run tern create -b "$BUNDLE" "$ID"
		check_fails_cleanly "linux.intelRdt" "resctrl is not available on this host"
	done
	[ ! -e /sys/fs/resctrl/tern-test ]
	[ ! -e "/sys/fs/resctrl/$ID" ]
}

@test "intelRdt: a bad schema line is named before resctrl is looked for" {
	is_tern || skip "runc 1.1.5 ignores linux.intelRdt without resctrl"
	set_args /bin/sleep "$MARK"
	update_config '.linux.intelRdt = {"schemata": ["L3:0=f", "L3:0=3"]}'
	run_container
	check_fails_cleanly "linux.intelRdt.schemata[1]" "domain 0 of L3 is set in schemata[0] too"
	update_config '.linux.intelRdt = {"l3CacheSchema": "MB:0=10"}'
	run_container
	check_fails_cleanly "linux.intelRdt.l3CacheSchema" "MB is not an L3 resource"
}

# setuid_rootfs: a setuid-root copy of the ids helper, and the process run
# as uid/gid 1000 with the runtime's default capabilities.
setuid_rootfs() {
	cp "$BUNDLE/rootfs/bin/ids" "$BUNDLE/rootfs/bin/ids-suid"
	chown 0:0 "$BUNDLE/rootfs/bin/ids-suid"
	chmod 4755 "$BUNDLE/rootfs/bin/ids-suid"
	update_config '.process.user = {"uid": 1000, "gid": 1000}'
	set_args /bin/ids-suid
}

capmask() {
	local m=0 c
	for c in "$@"; do m=$((m | (1 << c))); done
	printf '%016x' "$m"
}

@test "setuid: a setuid-root binary gains euid 0 without noNewPrivileges" {
	setuid_rootfs
	update_config '.process.noNewPrivileges = false'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == "ruid=1000 euid=0 suid=0 "* ]]
	[[ "$output" == *"NoNewPrivs=0" ]]
}

@test "setuid: with noNewPrivileges the setuid bit gives nothing" {
	setuid_rootfs
	update_config '.process.noNewPrivileges = true'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == "ruid=1000 euid=1000 suid=1000 CapPrm=0000000000000000 CapEff=0000000000000000 NoNewPrivs=1" ]]
}

@test "setuid: the exec gains only the bounding set, never a dropped capability" {
	setuid_rootfs
	# CAP_KILL=5 CAP_NET_BIND_SERVICE=10 CAP_AUDIT_WRITE=29; CAP_SYS_ADMIN,
	# CAP_DAC_OVERRIDE, CAP_SETUID... are not in the bounding set
	update_config '.process.noNewPrivileges = false
		| .process.capabilities = {
		"bounding": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
		"effective": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
		"permitted": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]}'
	run_container
	[ "$status" -eq 0 ]
	echo "$output"
	want=$(capmask 5 10 29)
	# euid 0 by the setuid bit, and the root exec's full set is clipped
	# by the bounding set
	[[ "$output" == "ruid=1000 euid=0 suid=0 CapPrm=$want CapEff=$want NoNewPrivs=0" ]]
	# the same with only CAP_KILL left in the bounding set
	update_config '.process.capabilities.bounding = ["CAP_KILL"]'
	run_container
	[ "$status" -eq 0 ]
	[[ "$output" == "ruid=1000 euid=0 suid=0 CapPrm=$(capmask 5) CapEff=$(capmask 5) NoNewPrivs=0" ]]
}

@test "setuid: exec --no-new-privs stops the setuid gain that a plain exec gets" {
	setuid_rootfs
	update_config '.process.noNewPrivileges = false'
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	run tern exec --user 1000:1000 "$ID" /bin/ids-suid
	[ "$status" -eq 0 ]
	[[ "$output" == "ruid=1000 euid=0 suid=0 "*"NoNewPrivs=0" ]]
	run tern exec --user 1000:1000 --no-new-privs "$ID" /bin/ids-suid
	[ "$status" -eq 0 ]
	[ "$output" = "ruid=1000 euid=1000 suid=1000 CapPrm=0000000000000000 CapEff=0000000000000000 NoNewPrivs=1" ]
}

@test "linux.sysctl: kernel.hostname beside the hostname field is refused before anything is created, naming both" {
	update_config '.hostname = "from-the-field" | .linux.sysctl = {"kernel.hostname": "from-the-sysctl"}'
	set_cmd 'hostname'
	run_container
	check_fails_cleanly "kernel.hostname" "hostname"
	is_runc || [[ "$output" == *"linux.sysctl: \`kernel.hostname\` conflicts with the \`hostname\` field (set the hostname there, where it is \`from-the-field\`)"* ]]
}

@test "linux.sysctl: kernel.hostname is refused without the hostname field too, and with the same value (as runc and crun)" {
	update_config 'del(.hostname) | .linux.sysctl = {"kernel/hostname": "h"}'
	run_container
	check_fails_cleanly "kernel" "hostname"
	is_runc || [[ "$output" == *"linux.sysctl: \`kernel/hostname\` conflicts with the \`hostname\` field (set the hostname there)"* ]]
	update_config '.hostname = "h" | .linux.sysctl = {"kernel.hostname": "h"}'
	run_container
	check_fails_cleanly "kernel.hostname" "hostname"
}

@test "linux.sysctl: kernel.domainname that differs from the domainname field is refused, naming both" {
	# runc 1.1.5 lacks this: it has no domainname field and applies the sysctl
	update_config '.domainname = "field.example" | .linux.sysctl = {"kernel.domainname": "sysctl.example"}'
	set_cmd 'cat /proc/sys/kernel/domainname'
	run_container
	if is_runc; then
		[ "$status" -eq 0 ]
		return 0
	fi
	check_fails_cleanly
	[[ "$output" == *"linux.sysctl: \`kernel.domainname\` = \`sysctl.example\` conflicts with the \`domainname\` field \`field.example\`"* ]]
}

@test "linux.sysctl: kernel.domainname equal to the domainname field, or without it, is applied" {
	update_config '.domainname = "same.example" | .linux.sysctl = {"kernel/domainname": "same.example"}'
	set_cmd 'cat /proc/sys/kernel/domainname'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = same.example ]
	update_config 'del(.domainname) | .linux.sysctl = {"kernel.domainname": "only.example"}'
	run_container
	[ "$status" -eq 0 ]
	[ "$output" = only.example ]
}
