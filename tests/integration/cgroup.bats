#!/usr/bin/env bats
# Where the container lives: its cgroup (the resource limits are another
# file's business). Placement is checked in every hierarchy this host has.

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

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
	# (renamed into place: the test never reads it half written)
	cat >"$hook" <<HOOK
#!/bin/sh
pid=\$(jq -r .pid)
cat /proc/\$pid/cgroup > "$BATS_TEST_TMPDIR/\$1.cgroup.tmp"
mv "$BATS_TEST_TMPDIR/\$1.cgroup.tmp" "$BATS_TEST_TMPDIR/\$1.cgroup"
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

# ---- issue 10: delete removes sub-cgroups ----

# cgroup_dirs PID: the host directory of PID's cgroup in every hierarchy it
# is in (v1 controllers and name=, the cgroup2 one on hybrid and v2 hosts).
cgroup_dirs() {
	local line ctrls path mnt
	while IFS= read -r line; do
		ctrls=${line#*:}
		ctrls=${ctrls%%:*}
		path=${line#*:*:}
		# mountinfo: fields, " - ", fstype source superoptions
		mnt=$(awk -v c="${ctrls%%,*}" '{
			split($0, h, " - "); split(h[1], f, " "); split(h[2], t, " ")
			if (c == "" && t[1] == "cgroup2") { print f[5]; exit }
			if (c != "" && t[1] == "cgroup") {
				n = split(t[3], o, ",")
				for (i = 1; i <= n; i++) if (o[i] == c) { print f[5]; exit }
			}
		}' /proc/self/mountinfo)
		[ -n "$mnt" ] && echo "$mnt$path"
	done </proc/"$1"/cgroup
}

# make_subs DIR: DIR/sub/deeper (v1 cpuset: with the parent's cpus and mems,
# which a new cpuset cgroup lacks).
make_subs() {
	local d
	for d in "$1/sub" "$1/sub/deeper"; do
		mkdir "$d"
		if [ -e "$d/cpuset.cpus" ]; then
			cat "$(dirname "$d")/cpuset.cpus" >"$d/cpuset.cpus"
			cat "$(dirname "$d")/cpuset.mems" >"$d/cpuset.mems"
		fi
	done
}

# container_with_subs: a running container whose cgroup has sub/deeper in
# every hierarchy, with a second process of the container in sub/deeper.
# Sets PID (the init), XPID (the other one) and DIRS.
container_with_subs() {
	local d
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	PID=$(state_field "$ID" pid)
	run tern exec -d --pid-file "$BATS_TEST_TMPDIR/x.pid" "$ID" /bin/sleep "$MARK"
	[ "$status" -eq 0 ]
	XPID=$(cat "$BATS_TEST_TMPDIR/x.pid")
	DIRS=$(cgroup_dirs "$PID")
	[ -n "$DIRS" ]
	for d in $DIRS; do
		[[ "$d" == */"$ID" ]]
		make_subs "$d"
		echo "$XPID" >"$d/sub/deeper/cgroup.procs"
	done
}

# check_subs_gone: every directory of DIRS is gone, and both processes.
check_subs_gone() {
	local d
	for d in $DIRS; do
		[ ! -e "$d" ] || {
			echo "left behind: $(find "$d" -type d)" >&2
			return 1
		}
	done
	wait_until 10 pid_gone "$XPID"
	wait_until 10 pid_gone "$PID"
	check_nothing_left "$ID"
}

@test "cgroup: delete --force removes sub-cgroups (with processes in them) in every hierarchy" {
	container_with_subs
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_subs_gone
}

@test "cgroup: delete --force of a paused container removes sub-cgroups, one of them frozen on its own" {
	container_with_subs
	run tern pause "$ID"
	[ "$status" -eq 0 ]
	# frozen by itself too, so thawing the container's cgroup does not thaw
	# it (runc 1.1.5 lacks this: its delete fails, "container init still
	# running", the init waiting for the frozen process to die)
	for d in $DIRS; do
		is_tern || break
		if [ -e "$d/sub/deeper/freezer.state" ]; then
			echo FROZEN >"$d/sub/deeper/freezer.state"
		elif [ -e "$d/sub/deeper/cgroup.freeze" ]; then
			echo 1 >"$d/sub/deeper/cgroup.freeze"
		fi
	done
	run tern delete --force "$ID"
	[ "$status" -eq 0 ]
	check_subs_gone
}

@test "cgroup: a create that fails after a hook made sub-cgroups removes them all" {
	hook=$BATS_TEST_TMPDIR/hook.sh
	# the hook finds the container's cgroups from its pid, makes sub-cgroups
	# in each, and fails
	{
		echo '#!/bin/bash'
		declare -f cgroup_dirs make_subs
		echo 'pid=$(jq -r .pid)'
		echo 'for d in $(cgroup_dirs "$pid"); do make_subs "$d"; echo "$d" >>'"$BATS_TEST_TMPDIR/dirs"'; done'
		echo 'exit 3'
	} >"$hook"
	chmod +x "$hook"
	update_config ".hooks = {createRuntime: [{path: \"$hook\"}]}"
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -ne 0 ]
	[ -s "$BATS_TEST_TMPDIR/dirs" ]
	for d in $(cat "$BATS_TEST_TMPDIR/dirs"); do
		[ ! -e "$d" ]
	done
	check_nothing_left "$ID"
}

# ---- issue 10: exec --cgroup ----

# exec_cgroups ARG...: /proc/self/cgroup of a process that `exec ARG... $ID`
# starts, one line per hierarchy.
exec_cgroups() {
	tern exec "$@" "$ID" cat /proc/self/cgroup
}

# run_with_subs: a running container with sub/deeper in every hierarchy of
# its cgroup; sets PID and DIRS.
run_with_subs() {
	local d
	set_args /bin/sleep "$MARK"
	run tern run -d -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	PID=$(state_field "$ID" pid)
	DIRS=$(cgroup_dirs "$PID")
	for d in $DIRS; do make_subs "$d"; done
}

@test "cgroup: exec --cgroup PATH runs the process in that sub-cgroup of every hierarchy" {
	run_with_subs
	run exec_cgroups --cgroup sub/deeper
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq "$(wc -l </proc/"$PID"/cgroup)" ]
	for line in "${lines[@]}"; do
		[[ "$line" == *"/$ID/sub/deeper" ]] || {
			echo "not in sub/deeper: $line" >&2
			false
		}
	done
	# a leading slash is still below the container's cgroup (as in runc)
	run exec_cgroups --cgroup /sub
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"/$ID/sub" ]]
}

@test "cgroup: exec --cgroup CTRL:PATH (repeatable) moves only those v1 controllers" {
	[ -d /sys/fs/cgroup/pids ] && [ -d /sys/fs/cgroup/memory ] || skip "LOUD: needs cgroup v1 pids and memory hierarchies"
	run_with_subs
	run exec_cgroups --cgroup pids:sub --cgroup memory,freezer:sub/deeper
	[ "$status" -eq 0 ]
	for line in "${lines[@]}"; do
		case $line in
		*:pids:*) [[ "$line" == *"/$ID/sub" ]] ;;
		*:memory:* | *:freezer:*) [[ "$line" == *"/$ID/sub/deeper" ]] ;;
		*) [[ "$line" == *"/$ID" ]] ;;
		esac || {
			echo "wrong cgroup: $line" >&2
			false
		}
	done
}

@test "cgroup: exec --cgroup with a missing sub-cgroup, an unknown controller or .. fails and names it" {
	run_with_subs
	run tern exec --cgroup nosuch "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"/$ID/nosuch"*"No such file or directory"* ]]
	run tern exec --cgroup ../escape "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"--cgroup"*"../escape"* ]]
	run tern exec --cgroup nosuchctrl:sub "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *nosuchctrl* ]]
	# and the container's cgroup has no stray process from these
	[ "$(cat "$(cgroup_dirs "$PID" | head -1)/cgroup.procs")" = "$PID" ]
}

@test "cgroup: exec --cgroup CTRL:PATH is refused on a pure cgroup v2 host" {
	is_v2_host || skip "a cgroup v1 or hybrid host: covered by the CTRL:PATH test above"
	run_with_subs
	run tern exec --cgroup memory:sub "$ID" true
	[ "$status" -ne 0 ]
	is_runc || [[ "$output" == *"memory:sub"*"cgroup v2"* ]]
}

@test "cgroup: a second mount of a hierarchy (another container's cgroup bind) does not move the container" {
	# As a container without a mount namespace of its own leaves in ours:
	# binds of its cgroup directories. Made here in a private mount
	# namespace, so the host's mount table stays as it is.
	local first line
	first=$(awk '{ split($0, h, " - "); split(h[1], f, " "); split(h[2], t, " ")
		if (t[1] == "cgroup" || t[1] == "cgroup2") { print f[5]; exit } }' /proc/self/mountinfo)
	[ -n "$first" ]
	mkdir "$first/$ID-other"
	mkdir -p "$BATS_TEST_TMPDIR/other"
	set_cmd 'cat /proc/self/cgroup'
	run in_file unshare -m --propagation private sh -c \
		"mount --bind '$first/$ID-other' '$BATS_TEST_TMPDIR/other' &&
		 exec '$TERN_BIN' --root '$ROOT' run -b '$BUNDLE' '$ID'"
	[ "$status" -eq 0 ]
	diff <(expected_cgroups "$ID") <(printf '%s\n' "${lines[@]}")
	rmdir "$first/$ID-other"
	check_nothing_left "$ID"
}

@test "cgroup: a cgroup2 mount in a cgroup namespace over an rbind of /sys (where the host's is) is the namespace's" {
	local v2mnt
	v2mnt=$(awk '{ split($0, h, " - "); split(h[1], f, " "); split(h[2], t, " ")
		if (t[1] == "cgroup2") { print f[5]; exit } }' /proc/self/mountinfo)
	[ -n "$v2mnt" ] || skip "LOUD: no cgroup2 hierarchy on this host"
	# runc 1.1.5 lacks this: the mount fails with EBUSY (the kernel does not
	# stack a superblock on itself)
	is_tern || skip "runc 1.1.5 lacks this: EBUSY"
	update_config ".mounts |= map(select(.type != \"cgroup\" and .destination != \"/sys\"))
		| .mounts += [{destination: \"/sys\", type: \"bind\", source: \"/sys\", options: [\"rbind\", \"nosuid\", \"noexec\", \"nodev\"]},
			{destination: \"$v2mnt\", type: \"cgroup2\", source: \"cgroup2\", options: [\"rw\"]}]"
	add_namespace cgroup
	# the namespace's root is the container's cgroup, which has a
	# cgroup.type (the host's root has none)
	set_cmd "cat $v2mnt/cgroup.type && echo \$\$ >$v2mnt/cgroup.procs && tail -1 /proc/self/cgroup"
	run_container
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = domain ]
	[ "${lines[1]}" = "0::/" ]
}
