#!/usr/bin/env bats
# A created container: between `create` and `start` its init is still the
# runtime, waiting for `start`. Whatever it holds open then is in reach of
# any process of the container's pid namespace with CAP_SYS_PTRACE (an
# exec granted it, a sidecar sharing the pid namespace) through
# /proc/1/fd: it must lead nowhere outside the rootfs. Each attack is
# performed for real; a test fails when it works.

load helpers
load seccomp-helpers

# created_sleeper [GLOBAL-OPTION...]: $ID created (not started) from
# $BUNDLE, its process a sleep; sets PID to its init's host pid.
created_sleeper() {
	set_args /bin/sleep "$MARK"
	run tern "$@" create -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "$output"
		return 1
	}
	PID=$(state_field "$ID" pid)
	[ "$(state_field "$ID" status)" = created ]
}

@test "security-created: a created init holds no directory and nothing but pipes, sockets, fifos and anon/ns fds beyond stdio" {
	# with a log file: a file of the host's, not to be held either
	created_sleeper --log "$BATS_TEST_TMPDIR/runtime.log"
	local fd target kind bad=0
	for fd in /proc/"$PID"/fd/*; do
		target=$(readlink "$fd")
		kind=$(stat -L -c %F "$fd" 2>&1) || true
		echo "${fd##*/} -> $target ($kind)"
		# fchdir into it (what `cd` of the magic link does): must fail
		if (cd "$fd" 2>/dev/null); then
			echo "  ^ a directory: fchdir into it works"
			bad=1
		fi
		# stdio is the caller's to give (here /dev/null and a log file)
		[ "${fd##*/}" -le 2 ] && continue
		case "$target:$kind" in
		pipe:* | socket:* | anon_inode:* | *:fifo | *:socket) ;;
		*)
			echo "  ^ neither a pipe, socket, fifo nor an anonymous fd"
			bad=1
			;;
		esac
	done
	[ "$bad" -eq 0 ]
	# and it still starts
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" running
}

@test "security-created: a process with CAP_SYS_PTRACE cannot walk out of the rootfs through a created init's fds" {
	# Markers that exist only on the host: in the state root and above it.
	touch "$ROOT/marker-$MARK" "$BATS_TEST_TMPDIR/marker-$MARK"
	[ ! -e "$BUNDLE/rootfs$BATS_TEST_TMPDIR/marker-$MARK" ]
	created_sleeper
	# Through each fd of the init (and its cwd, root and exe): resolve the
	# magic link and walk up (the state dir's parent, and far enough up to
	# reach the host's / and then the absolute path of the marker); and
	# `cd -P` into each fd (fchdir) and walk up from there.
	up=../../../../../../../../../../../../../../../..
	run tern exec --cap CAP_SYS_PTRACE "$ID" /bin/sh -c '
		ls /proc/1/fd >/dev/null || echo "NO ACCESS to /proc/1/fd"
		for f in /proc/1/fd/* /proc/1/cwd /proc/1/root /proc/1/exe; do
			for p in "$f/../marker-'"$MARK"'" "$f/../../marker-'"$MARK"'" \
				"$f/'"$up$BATS_TEST_TMPDIR"'/marker-'"$MARK"'"; do
				[ -e "$p" ] && echo "ESCAPED through $p"
			done
			# cwd and root are directories of the container: walking
			# up from them is what the checks above did
			case $f in /proc/1/fd/*) ;; *) continue ;; esac
			if cd -P "$f" 2>/dev/null; then
				echo "fchdir into $f worked"
				[ -e "'"$up$BATS_TEST_TMPDIR"'/marker-'"$MARK"'" ] &&
					echo "ESCAPED through cd $f: host root holds $(ls '"$up"' | tr "\n" " ")"
				cd /
			fi
			echo "tried $f"
		done
		echo scanned'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *scanned* ]]
	# the attacker did see the init's fds: the test can fail
	[[ "$output" == *"tried /proc/1/fd/"* ]]
	[[ "$output" != *"NO ACCESS"* ]]
	[[ "$output" != *ESCAPED* ]]
	[[ "$output" != *"fchdir into"* ]]
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" running
}

@test "security-created: a created container under a filter that refuses openat2 and the mount calls still starts" {
	# Without noNewPrivileges the filter is loaded before the init waits
	# for `start` (sync.h, stage A): the reopen of exec.fifo then runs
	# under it, and must find its way without those calls (an errno that
	# is neither EPERM nor ENOSYS, as a profile may choose).
	seccomp "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [$(rule openat2,fsopen,fsconfig,fsmount,open_tree SCMP_ACT_ERRNO '{errnoRet: 42}')]}"
	update_config '.process.noNewPrivileges = false'
	created_sleeper
	run tern start "$ID"
	[ "$status" -eq 0 ]
	wait_status "$ID" running
	run tern exec "$ID" /bin/seccomp-call nr:437 0 0 0 0
	[[ "$output" == *"errno 42"* ]]
}

# ---- startContainer hooks run with the process's privileges ----

# privs_of FILE: privprobe's report, on one line.
privs_of() {
	tr '\n' ' ' <"$1"
}

@test "security-created: a setuid-root startContainer hook gains nothing under noNewPrivileges as user 1000" {
	# privprobe, setuid root, as a startContainer hook (run in the
	# container, by `start`) and as the process itself
	chmod 4755 "$BUNDLE/rootfs/bin/privprobe"
	[ "$(stat -c %u "$BUNDLE/rootfs/bin/privprobe")" -eq 0 ]
	update_config '.process.user = {"uid": 1000, "gid": 1000}
		| .process.capabilities = {"bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
			"effective": [], "permitted": [], "inheritable": [], "ambient": []}
		| .hooks.startContainer = [{"path": "/bin/privprobe", "args": ["privprobe", "/tmp/hook-privs"]}]'
	set_args /bin/privprobe /tmp/process-privs
	# Without noNewPrivileges the setuid bit works (so the probe can tell):
	# euid 0 and the bounding set, for the hook and the process alike.
	update_config '.process.noNewPrivileges = false'
	run tern run -b "$BUNDLE" "$ID-nnp-off"
	[ "$status" -eq 0 ]
	echo "without: hook: $(privs_of "$BUNDLE/rootfs/tmp/hook-privs")"
	echo "without: process: $(privs_of "$BUNDLE/rootfs/tmp/process-privs")"
	grep -qx "uid=1000 euid=0" "$BUNDLE/rootfs/tmp/hook-privs"
	grep -qx "uid=1000 euid=0" "$BUNDLE/rootfs/tmp/process-privs"
	rm "$BUNDLE/rootfs/tmp/hook-privs" "$BUNDLE/rootfs/tmp/process-privs"
	# With it, neither the hook nor the process gains anything.
	update_config '.process.noNewPrivileges = true'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	echo "with: hook: $(privs_of "$BUNDLE/rootfs/tmp/hook-privs")"
	echo "with: process: $(privs_of "$BUNDLE/rootfs/tmp/process-privs")"
	for f in hook-privs process-privs; do
		grep -qx "uid=1000 euid=1000" "$BUNDLE/rootfs/tmp/$f"
		grep -qx "CapEff:[[:space:]]*0000000000000000" "$BUNDLE/rootfs/tmp/$f"
		# the bounding set is the configured one (CHOWN, KILL, NET_BIND_SERVICE)
		grep -qx "CapBnd:[[:space:]]*0000000000000421" "$BUNDLE/rootfs/tmp/$f"
	done
}
