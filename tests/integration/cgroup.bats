#!/usr/bin/env bats
# Where the container lives: its cgroup (the resource limits are another
# file's business). Placement is checked in every hierarchy this host has.

load helpers

# expected_cgroups ID: our own /proc/self/cgroup with "/ID" appended to
# each path: where runc, and tern, put a container without cgroupsPath (below
# the runtime's own cgroup, so a limit on the caller also holds the container).
expected_cgroups() {
	awk -F: -v id="$1" 'BEGIN { OFS = ":" } { $3 = ($3 == "/" ? "" : $3) "/" id; print }' /proc/$$/cgroup
}

@test "cgroup: without cgroupsPath the container nests below the caller's cgroup in every hierarchy, and exec joins it" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	diff <(expected_cgroups "$ID") /proc/"$pid"/cgroup
	run tern exec "$ID" cat /proc/self/cgroup
	[ "$status" -eq 0 ]
	diff <(expected_cgroups "$ID") <(printf '%s\n' "${lines[@]}")
	mem=$(host_cgroup_dir "$pid" memory)
	[[ "$mem" == */"$ID" ]]
	[ -d "$mem" ]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$mem" ]
}

@test "cgroup: linux.cgroupsPath (absolute) is honoured and removed on delete" {
	update_config ".linux.cgroupsPath = \"/tern-test/$ID\""
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	mem=$(host_cgroup_dir "$pid" memory)
	[[ "$mem" == /sys/fs/cgroup*/tern-test/"$ID" ]]
	[[ "$(host_cgroup_dir "$pid" pids)" == /sys/fs/cgroup*/tern-test/"$ID" ]]
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	[ ! -e "$mem" ]
	rmdir /sys/fs/cgroup/*/tern-test /sys/fs/cgroup/tern-test 2>/dev/null || true
}

@test "cgroup: a cgroup namespace has the container's cgroup as its root" {
	update_config '.linux.namespaces += [{"type": "cgroup"}]'
	set_cmd 'cat /proc/self/cgroup'
	run_container
	[ "$status" -eq 0 ]
	for line in "${lines[@]}"; do
		[[ "$line" == *":/" ]] || {
			echo "not the namespace root: $line" >&2
			false
		}
	done
}

@test "cgroup: the cgroup is removed after the process was SIGKILLed from the host" {
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	kill -9 "$(state_field "$ID" pid)"
	wait_status "$ID" stopped
	run tern delete "$ID"
	[ "$status" -eq 0 ]
	check_nothing_left "$ID"
}

@test "cgroup: --systemd-cgroup without systemd as PID 1 fails clearly and leaves nothing" {
	[ ! -d /run/systemd/system ] || skip "LOUD: systemd runs on this host; this test covers hosts without it"
	update_config ".linux.cgroupsPath = \"system.slice:tern:$ID\""
	run in_file "$TERN_BIN" --root "$ROOT" --systemd-cgroup run -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *--systemd-cgroup*systemd* ]]
	check_nothing_left "$ID"
}

@test "cgroup: hooks see the container process already in its cgroup" {
	hook=$BATS_TEST_TMPDIR/hook.sh
	# the hook reads the state on stdin and records the process's cgroups
	cat >"$hook" <<HOOK
#!/bin/sh
pid=\$(jq -r .pid)
cat /proc/\$pid/cgroup > "$BATS_TEST_TMPDIR/\$1.cgroup"
HOOK
	chmod +x "$hook"
	update_config ".hooks = {
		createRuntime: [{path: \"$hook\", args: [\"hook\", \"createRuntime\"]}],
		poststart: [{path: \"$hook\", args: [\"hook\", \"poststart\"]}]}"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	pid=$(state_field "$ID" pid)
	for h in createRuntime poststart; do
		wait_for_file "$BATS_TEST_TMPDIR/$h.cgroup"
		# every hierarchy (v1) or the unified one (v2) names the container
		diff /proc/"$pid"/cgroup "$BATS_TEST_TMPDIR/$h.cgroup"
		grep -q "/$ID\$" "$BATS_TEST_TMPDIR/$h.cgroup"
	done
}

# ---- issue 10: the cgroup mount shows only the container's own cgroups ----

# is_v2_host: /sys/fs/cgroup is the cgroup2 hierarchy itself (pure v2).
is_v2_host() {
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]
}

# attack_script LIMIT: the container's process. 20 times it writes its pid
# (it is the init: 1) into every cgroup.procs it can find under
# /sys/fs/cgroup, which would move it into that cgroup; then it records
# what it sees at the root of its pids hierarchy and how far a fork bomb
# gets, and sleeps. The record appears at once (written aside, then
# renamed), so the test never reads half of it.
attack_script() {
	cat <<SCRIPT
i=0
while [ \$i -lt 20 ]; do
	for f in \$(find /sys/fs/cgroup /cg2 -name cgroup.procs 2>/dev/null); do
		echo \$\$ 2>/dev/null >"\$f"
	done
	i=\$((i + 1))
done
if [ -d /sys/fs/cgroup/pids ]; then d=/sys/fs/cgroup/pids; else d=/sys/fs/cgroup; fi
{
	echo "pids.max \$(cat \$d/pids.max 2>&1)"
	[ ! -d /cg2 ] || echo "cg2-root-is-own \$([ -e /cg2/cgroup.type ] && echo yes || echo no)"
	forkbomb 200
} >/tmp/result.tmp 2>&1
mv /tmp/result.tmp /tmp/result
exec sleep $MARK
SCRIPT
}

# escape_attempts CGROUPNS: three containers in a row (the setup race this
# guards against was lost in 9 of 10 starts), each with a writable cgroup
# mount and a pids limit, each trying 20 times to leave its cgroup. After
# each: the container saw its own limit at its root, the fork bomb stopped
# at the limit, and from the host the process is still in exactly the
# container's cgroup in every hierarchy.
escape_attempts() {
	local cgroupns=$1 round id pid out n
	update_config '.mounts |= map(if .type == "cgroup" then .options = ((.options // []) - ["ro"] + ["rw"]) else . end)
		| .linux.resources.pids = {"limit": 32}'
	[ "$cgroupns" = yes ] && add_namespace cgroup
	# (set_args takes one argument per line)
	jq --arg s "$(attack_script)" '.process.args = ["/bin/sh", "-c", $s]' "$BUNDLE/config.json" >"$BUNDLE/c.json"
	mv "$BUNDLE/c.json" "$BUNDLE/config.json"
	for round in 1 2 3; do
		id=$ID-$round
		rm -f "$BUNDLE/rootfs/tmp/result"
		run tern run -d -b "$BUNDLE" "$id"
		[ "$status" -eq 0 ]
		wait_for_file "$BUNDLE/rootfs/tmp/result" 60
		out=$(cat "$BUNDLE/rootfs/tmp/result")
		echo "round $round: $out"
		pid=$(state_field "$id" pid)
		diff <(expected_cgroups "$id") /proc/"$pid"/cgroup
		[ "$(cat "$(host_cgroup_dir "$pid" pids)/pids.max")" = 32 ]
		[[ "$out" == *"pids.max 32"* ]]
		[[ "$out" != *"cg2-root-is-own no"* ]]
		n=$(sed -n 's/^forked \([0-9]*\):.*/\1/p' <<<"$out")
		[ -n "$n" ] && [ "$n" -lt 32 ]
		run tern delete --force "$id"
		[ "$status" -eq 0 ]
	done
}

@test "cgroup: a writable cgroup mount without a cgroup namespace shows only the container's cgroups; 20 escape attempts fail" {
	# runc 1.1.5 lacks this on a pure v2 host: without a cgroup namespace it
	# mounts the whole cgroup2 hierarchy
	if is_runc && is_v2_host; then
		skip "runc 1.1.5 lacks this: it shows the host's whole cgroup2 hierarchy"
	fi
	escape_attempts no
}

@test "cgroup: a writable cgroup mount in a cgroup namespace shows only the container's cgroups; 20 escape attempts fail" {
	escape_attempts yes
}

@test "cgroup: a writable cgroup2 mount shows only the container's cgroup, with or without a cgroup namespace" {
	# hybrid: the unified hierarchy; pure v2: the only one
	grep -q ' - cgroup2 ' /proc/self/mountinfo || skip "LOUD: no cgroup2 hierarchy on this host"
	# runc 1.1.5 lacks this: a "cgroup2" mount is a fresh mount of the
	# whole hierarchy there
	is_tern || skip "runc 1.1.5 lacks this: it mounts the host's whole cgroup2 hierarchy"
	update_config '.mounts += [{"destination": "/cg2", "type": "cgroup2", "source": "cgroup2", "options": ["rw", "nosuid", "noexec", "nodev"]}]'
	escape_attempts no
	remove_namespace cgroup
	escape_attempts yes
}
