#!/usr/bin/env bats
# The command line itself: spec, --version, --help, --log, --debug.

load helpers

@test "spec: writes a valid config.json in the current directory" {
	mkdir "$BATS_TEST_TMPDIR/s" && cd "$BATS_TEST_TMPDIR/s"
	run in_file "$TERN_BIN" spec
	[ "$status" -eq 0 ]
	jq -e '.ociVersion and (.process.args | type == "array") and .root.path == "rootfs"
		and (.linux.namespaces | map(.type) | index("mount") != null)
		and (.mounts | map(.destination) | index("/proc") != null)' config.json
}

@test "spec: refuses to overwrite an existing config.json" {
	mkdir "$BATS_TEST_TMPDIR/s" && cd "$BATS_TEST_TMPDIR/s"
	echo '{}' >config.json
	run in_file "$TERN_BIN" spec
	[ "$status" -ne 0 ]
	[[ "$output" == *config.json* ]]
	[ "$(cat config.json)" = '{}' ]
}

@test "spec --bundle / -b: writes into the bundle dir" {
	mkdir "$BATS_TEST_TMPDIR/b1" "$BATS_TEST_TMPDIR/b2"
	run in_file "$TERN_BIN" spec --bundle "$BATS_TEST_TMPDIR/b1"
	[ "$status" -eq 0 ]
	jq -e .ociVersion "$BATS_TEST_TMPDIR/b1/config.json"
	run in_file "$TERN_BIN" spec -b "$BATS_TEST_TMPDIR/b2"
	[ "$status" -eq 0 ]
	jq -e .ociVersion "$BATS_TEST_TMPDIR/b2/config.json"
}

@test "spec --rootless: user namespace with mappings, no network namespace" {
	mkdir "$BATS_TEST_TMPDIR/s" && cd "$BATS_TEST_TMPDIR/s"
	run in_file "$TERN_BIN" spec --rootless
	[ "$status" -eq 0 ]
	jq -e '(.linux.namespaces | map(.type) | index("user") != null)
		and (.linux.uidMappings | length > 0) and (.linux.gidMappings | length > 0)
		and (.linux.namespaces | map(.type) | index("network") == null)' config.json
}

@test "--version prints a version and the spec version" {
	run "$TERN_BIN" --version
	[ "$status" -eq 0 ]
	[[ "$output" == *version* ]]
	[[ "$output" == *spec* ]]
	run "$TERN_BIN" -v
	[ "$status" -eq 0 ]
	[[ "$output" == *version* ]]
}

@test "--help exits 0 for the program and for every command" {
	run "$TERN_BIN" --help
	[ "$status" -eq 0 ]
	for c in create start run state list kill delete exec spec; do
		[[ "$output" == *"$c"* ]]
	done
	for c in create start run state list kill delete exec spec; do
		run "$TERN_BIN" "$c" --help
		[ "$status" -eq 0 ] || {
			echo "$c --help: $status $output"
			false
		}
		[[ "$output" == *"$c"* ]]
	done
	run "$TERN_BIN" help
	[ "$status" -eq 0 ]
}

@test "--help for a command lists its flags" {
	run "$TERN_BIN" create --help
	[ "$status" -eq 0 ]
	for f in --bundle --console-socket --pid-file --no-pivot --no-new-keyring --preserve-fds; do
		[[ "$output" == *"$f"* ]]
	done
	run "$TERN_BIN" exec --help
	for f in --process --tty --detach --pid-file --env --cwd --user --additional-gids --cap --no-new-privs --preserve-fds; do
		[[ "$output" == *"$f"* ]] || {
			echo "exec --help lacks $f"
			false
		}
	done
}

@test "unknown command and unknown flag fail" {
	run "$TERN_BIN" no-such-command
	[ "$status" -ne 0 ]
	run "$TERN_BIN" --root "$ROOT" state --no-such-flag x
	[ "$status" -ne 0 ]
	[[ "$output" == *no-such-flag* ]]
}

@test "--log FILE --log-format json: every line is a JSON object with level, msg, time" {
	log=$BATS_TEST_TMPDIR/log.json
	run in_file "$TERN_BIN" --root "$ROOT" --log "$log" --log-format json state "nosuch-$ID"
	[ "$status" -ne 0 ]
	[ -s "$log" ]
	# jq -e on each line separately: a line that is not a JSON object fails.
	while IFS= read -r line; do
		echo "$line" | jq -e 'type == "object" and (.level | type == "string") and (.msg | type == "string") and (.time | type == "string")'
	done <"$log"
	grep -q '"level":"error"' "$log" || jq -e 'select(.level == "error")' "$log"
	is_runc || grep -q "nosuch-$ID" "$log"
}

@test "--log with --debug: debug lines during a run, still JSON" {
	log=$BATS_TEST_TMPDIR/log.json
	run in_file "$TERN_BIN" --root "$ROOT" --debug --log "$log" --log-format json run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[ -s "$log" ]
	while IFS= read -r line; do
		echo "$line" | jq -e 'type == "object" and .level and .msg and .time' >/dev/null
	done <"$log"
	jq -s -e 'map(select(.level == "debug")) | length > 0' "$log"
}

@test "--log FILE (text format): the error goes to the file" {
	log=$BATS_TEST_TMPDIR/log.txt
	run in_file "$TERN_BIN" --root "$ROOT" --log "$log" state "nosuch-$ID"
	[ "$status" -ne 0 ]
	grep -q "does not exist\|nosuch-$ID" "$log"
}

@test "errors go to stderr" {
	run bash -c '"$1" --root "$2" state "$3" 2>/dev/null' _ "$TERN_BIN" "$ROOT" "nosuch-$ID"
	[ "$status" -ne 0 ]
	[ -z "$output" ]
	run bash -c '"$1" --root "$2" state "$3" 2>&1 >/dev/null' _ "$TERN_BIN" "$ROOT" "nosuch-$ID"
	[ -n "$output" ]
	is_runc || [[ "$output" == tern:* ]]
}

@test "features: the runtime-spec features document, truthful about what tern does" {
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.ociVersionMin == "1.0.0" and (.hooks | length == 6)'
	echo "$output" | jq -e '.mountOptions | index("rbind") != null and index("tmpcopyup") != null'
	echo "$output" | jq -e '.linux.cgroup.v1 and .linux.cgroup.v2'
	echo "$output" | jq -e '.linux.seccomp.enabled and (.linux.seccomp.operators | length == 7)'
	echo "$output" | jq -e '.linux.capabilities | index("CAP_SYS_ADMIN") != null'
	if is_tern; then
		echo "$output" | jq -e '.linux.namespaces | index("time") != null'
		echo "$output" | jq -e '.linux.mountExtensions.idmap.enabled and (.mountOptions | index("ridmap") != null)'
		# the systemd driver is there; scopes on the user bus are not
		echo "$output" | jq -e '.linux.cgroup.systemd == true and .linux.cgroup.systemdUser == false'
		echo "$output" | jq -e '.linux.seccomp.actions | index("SCMP_ACT_NOTIFY") != null'
		# supported (compiled in), whether or not this host runs either LSM
		echo "$output" | jq -e '.linux.apparmor.enabled == true and .linux.selinux.enabled == true'
		# runtime-spec 1.3: tern takes configs up to 1.3.x
		echo "$output" | jq -e '.ociVersionMax == "1.3.0"'
		# implemented (intel-rdt.c), but told from this host, unlike the
		# rest: true where resctrl is mounted (a linux.intelRdt fails
		# without it: process-attrs.bats)
		if grep -qw resctrl /proc/filesystems && grep -q ' - resctrl ' /proc/self/mountinfo; then
			rdt=true
		else
			rdt=false
		fi
		echo "$output" | jq -e --argjson r "$rdt" '.linux.intelRdt == {"enabled": $r, "schemata": $r, "monitoring": $r}'
		echo "$output" | jq -e '.linux.cgroup.rdma == true'
		# tern reads no config.json annotation: none changes what it does
		echo "$output" | jq -e '.potentiallyUnsafeConfigAnnotations == []'
		# checkpoint/restore through CRIU (checkpoint.bats)
		echo "$output" | jq -e '.annotations."org.tern.checkpoint.enabled" == "true"'
		echo "$output" | jq -e '.annotations."org.tern.version" | length > 0'
	fi
}

@test "features: every key is one runtime-spec 1.3 defines (features.md: MUST NOT contain others)" {
	is_tern || skip "runc 1.1.5 implements 1.0.2"
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	echo "$output" | jq -e 'keys - ["ociVersionMin", "ociVersionMax", "hooks", "mountOptions",
		"linux", "annotations", "potentiallyUnsafeConfigAnnotations"] == []'
	echo "$output" | jq -e '.linux | keys - ["namespaces", "capabilities", "cgroup", "seccomp",
		"apparmor", "selinux", "intelRdt", "mountExtensions", "memoryPolicy",
		"netDevices"] == []'
	echo "$output" | jq -e '.linux.cgroup | keys - ["v1", "v2", "systemd", "systemdUser", "rdma"] == []'
	echo "$output" | jq -e '.linux.intelRdt | keys - ["enabled", "schemata", "monitoring"] == []'
}

@test "features: a configuration at ociVersionMax is taken without a warning" {
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	local max
	max=$(echo "$output" | jq -r .ociVersionMax)
	update_config ".ociVersion = \"$max\""
	set_args /bin/true
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	[[ "$output" != *"ociVersion"* ]]
}

# runc's CLI library moves options that follow the container id to the
# front (urfave/cli's argument reordering), and scripts written for runc
# put them there: `runc update ID --pids-limit 30`.
@test "options after the container id: update, state, events, pause, resume, kill, delete" {
	start_sleeper
	pid=$(state_field "$ID" pid)
	run tern update "$ID" --pids-limit 30
	[ "$status" -eq 0 ]
	[ "$(cat "$(host_cgroup_dir "$pid" pids)/pids.max")" = 30 ]
	run tern update "$ID" --pids-limit=31 --
	[ "$status" -eq 0 ]
	[ "$(cat "$(host_cgroup_dir "$pid" pids)/pids.max")" = 31 ]
	run tern events "$ID" --stats
	[ "$status" -eq 0 ]
	echo "$output" | jq -e --arg id "$ID" '.type == "stats" and .id == $id'
	for c in state pause resume start; do
		run tern "$c" "$ID" --help
		[ "$status" -eq 0 ] || {
			echo "$c ID --help: $status $output"
			false
		}
		[[ "$output" == *"$c"* ]]
	done
	run tern state "$ID" --no-such-flag
	[ "$status" -ne 0 ]
	! is_tern || [[ "$output" == *no-such-flag* ]]
	run tern pause -- "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = paused ]
	run tern resume "$ID" --
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = running ]
	# the signal is a second positional argument, --all an option after both
	run tern kill "$ID" KILL --all
	[ "$status" -eq 0 ]
	wait_status "$ID" stopped
	run tern delete "$ID" --force
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$ID" ]
	# a running one, so that only --force can delete it
	start_sleeper
	run tern delete "$ID" --force
	[ "$status" -eq 0 ]
	[ ! -e "$ROOT/$ID" ]
	check_nothing_left "$ID"
}

@test "options after the container id: create, start, run take -b / --bundle / -d there" {
	set_args /bin/sleep "$MARK"
	cd "$BATS_TEST_TMPDIR"
	run tern create "$ID" -b "$BUNDLE"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = created ]
	[ "$(state_field "$ID" bundle)" = "$BUNDLE" ]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	[ "$(state_field "$ID" status)" = running ]
	run tern delete "$ID" --force
	[ "$status" -eq 0 ]
	run tern run "$ID" --bundle "$BUNDLE" -d
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
	run tern delete -f "$ID"
	[ "$status" -eq 0 ]
	# `--` ends the options: what follows is the id
	set_args /bin/sh -c 'exit 3'
	run tern run -b "$BUNDLE" -- "$ID"
	[ "$status" -eq 3 ]
	check_nothing_left "$ID"
}

@test "options after the container id: checkpoint and restore" {
	is_tern || skip "runc 1.1.5 runs bookworm's criu 3.17, which fails on this kernel"
	set_args /bin/sleep "$MARK"
	cd "$BATS_TEST_TMPDIR"
	run tern run "$ID" -d -b "$BUNDLE"
	[ "$status" -eq 0 ]
	run tern checkpoint "$ID" --image-path "$BATS_TEST_TMPDIR/img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ -f "$BATS_TEST_TMPDIR/img/inventory.img" ]
	# (the checkpoint deleted the container, as runc's does)
	run tern restore "$ID" -d --image-path "$BATS_TEST_TMPDIR/img" -b "$BUNDLE"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(state_field "$ID" status)" = running ]
}

# runc parses no options after exec's id (and ps's): every word there is
# the command's, also one that looks like a runtime option.
@test "exec and ps: words after the id belong to the command, untouched" {
	start_sleeper
	run tern exec "$ID" /bin/sh -c 'echo --help'
	[ "$status" -eq 0 ]
	[ "$output" = --help ]
	run tern exec "$ID" ls -l -d /image-dir
	[ "$status" -eq 0 ]
	[[ "$output" == d*/image-dir ]]
	run tern exec --env A=B "$ID" /bin/sh -c 'echo "$A" "$@"' sh --env -t
	[ "$status" -eq 0 ]
	[ "$output" = "B --env -t" ]
	# an option after the id is the command (runc: exec: "--env": not found)
	run tern exec "$ID" --env A=B /bin/true
	[ "$status" -ne 0 ]
	[[ "$output" == *--env* ]]
	run tern ps "$ID" -o pid,comm
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *PID*COMMAND* ]]
	if is_tern; then
		# tern drops one `--` after the id (runc would run a program `--`)
		run tern exec "$ID" -- /bin/sh -c 'echo "$0"' --help
		[ "$status" -eq 0 ]
		[ "$output" = --help ]
	fi
}
