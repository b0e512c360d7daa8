#!/usr/bin/env bats
# Many tern processes at once: 100 containers through their whole life in
# parallel; commands racing on one container id (each holds the flock of
# the container's state directory, src/lifecycle/state.c); and containers whose
# process exits while exec, pause, update or checkpoint is half way.
#
# Where the exit can be placed, it is: tern runs under strace, which stops
# it (SIGSTOP) right after a given open(2) returns, or criu holds at an
# action script; the test makes the container's process exit there and
# lets tern go on. Races that only interleavings produce are looped, and
# only what must hold on every interleaving is asserted: each command ends
# (a hang fails the test), fails with a message from a known list or
# succeeds, `state` then tells the truth, and `delete --force` leaves
# nothing behind.

load helpers

CRIU_BIN=${TERN_CRIU:-/opt/tern-criu/bin/criu}

setup() {
	setup_bundle
	set_args /bin/sleep "$MARK"
}

teardown() {
	[ -n "${HELD:-}" ] && kill -9 "$HELD" 2>/dev/null
	[ -n "${HOLD_PID:-}" ] && kill -9 "$HOLD_PID" 2>/dev/null
	[ -n "${HOLD:-}" ] && touch "$HOLD.go"
	teardown_bundle
}

# require_strace: the holds below stop tern with strace.
require_strace() {
	command -v strace >/dev/null ||
		skip "!!! strace IS NOT INSTALLED: these tests stop tern at a known point with it (apt-get install strace) !!!"
}

# nothing_left_under_root: no container directory under $ROOT, no cgroup,
# mount or process of this test, and no tern of this test still running.
nothing_left_under_root() {
	local left
	left=$(find "$ROOT" -mindepth 1 -maxdepth 1 ! -name '.*')
	if [ -n "$left" ]; then
		echo "leftover state: $left" >&2
		return 1
	fi
	if pgrep -f -- "--root $ROOT " >&2; then
		echo "tern processes of this test still running (above)" >&2
		return 1
	fi
	check_nothing_left "$ID"
}

# cgroup_dirs: the cgroup directories of $ID, from its state.json.
cgroup_dirs() {
	jq -r '.cgroup_paths | to_entries[] | .key + .value' "$ROOT/$ID/state.json"
}

# quickly_nothing_left CGROUP-DIRS: as nothing_left_under_root, for loops:
# the container's own cgroup directories instead of a search of them all.
quickly_nothing_left() {
	local d
	for d in $1; do
		[ ! -d "$d" ] || {
			echo "leftover cgroup $d" >&2
			return 1
		}
	done
	[ -z "$(find "$ROOT" -mindepth 1 -maxdepth 1 ! -name '.*')" ] &&
		! grep -F "$BUNDLE" /proc/self/mountinfo >&2 &&
		! pgrep -f "sleep $MARK" >&2 &&
		! pgrep -f -- "--root $ROOT " >&2
}

# truthful_state ID: `state` agrees with the kernel. A container that
# exists: its pid is alive (and frozen when paused, not when running) or,
# stopped, reads 0. One that does not: no state directory either. A
# process may still be on its way out (killed, or ending by itself): when
# it is gone right after `state` said it lives, `state` must now say
# stopped.
truthful_state() {
	local id=$1 out status pid frozen
	if ! out=$("$TERN_BIN" --root "$ROOT" state "$id" 2>&1); then
		[[ "$out" == *"does not exist"* ]] || {
			echo "state failed: $out" >&2
			return 1
		}
		[ ! -e "$ROOT/$id" ] || {
			echo "state says $id does not exist, but $ROOT/$id is there" >&2
			return 1
		}
		return 0
	fi
	status=$(jq -r .status <<<"$out")
	pid=$(jq -r .pid <<<"$out")
	if [ "$status" != stopped ] && pid_gone "$pid"; then
		out=$("$TERN_BIN" --root "$ROOT" state "$id" 2>&1)
		[ "$(jq -r .status <<<"$out")" = stopped ] || {
			echo "pid $pid of $id is gone, state says: $out" >&2
			return 1
		}
		return 0
	fi
	frozen=THAWED
	[ -e "/sys/fs/cgroup/freezer/$id/freezer.state" ] &&
		frozen=$(cat "/sys/fs/cgroup/freezer/$id/freezer.state")
	case "$status" in
	stopped) [ "$pid" = 0 ] ;;
	running) [ "$frozen" = THAWED ] ;;
	paused) [ "$frozen" = FROZEN ] ;;
	created) [ -p "$ROOT/$id/exec.fifo" ] ;;
	*) false ;;
	esac || {
		echo "state of $id says $status (pid $pid), the kernel: freezer $frozen" >&2
		return 1
	}
}

# init_pid ID: the container's pid, from `state`.
init_pid() {
	"$TERN_BIN" --root "$ROOT" state "$1" | jq -r .pid
}

# hold_tern PATH N TERN-ARGS...: run tern (this test's --root) under strace
# in the background, and return once strace has stopped it with SIGSTOP
# right after its Nth open of PATH (only opens of PATH count). The held
# tern is $HELD; release_hold lets it go on.
hold_tern() {
	local path=$1 n=$2
	shift 2
	HOLD_LOG=$BATS_TEST_TMPDIR/strace.log
	HOLD_OUT=$BATS_TEST_TMPDIR/held.out
	rm -f "$HOLD_LOG"
	# (a sanitized tern's leak checker cannot run under ptrace: it would
	# fail the held tern at exit; its commands are leak-checked unheld)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -o "$HOLD_LOG" -P "$path" -e trace=openat -e inject=openat:signal=SIGSTOP:when="$n" \
		"$TERN_BIN" --root "$ROOT" "$@" </dev/null >"$HOLD_OUT" 2>&1 3>&- &
	HOLD_PID=$!
	# strace logs the group stop once it has happened: a SIGCONT sent
	# before that would be lost, and tern stay stopped
	wait_until 30 grep -q "stopped by SIGSTOP" "$HOLD_LOG" || {
		cat "$HOLD_LOG" "$HOLD_OUT"
		return 1
	}
	HELD=$(pgrep -P "$HOLD_PID")
	[ -n "$HELD" ]
}

# release_hold: SIGCONT the held tern and wait (bounded) for it to end;
# HOLD_RC is its exit status, $output what it printed.
release_hold() {
	kill -CONT "$HELD"
	wait_until 60 pid_gone "$HELD" || {
		echo "tern did not end once released: $(cat "$HOLD_OUT")" >&2
		return 1
	}
	HOLD_RC=0
	wait "$HOLD_PID" || HOLD_RC=$?
	output=$(cat "$HOLD_OUT")
	echo "held tern: exit $HOLD_RC: $output"
	HELD=
	HOLD_PID=
}

# exit_on_fifo: the container's process waits for a line on the fifo
# /tmp/go, then exits 0 (its output goes to the bundle, never to bats).
exit_on_fifo() {
	mkfifo "$BUNDLE/rootfs/tmp/go"
	set_cmd "read x < /tmp/go; exit 0; sleep $MARK"
}

# end_init PID: make the process waiting in exit_on_fifo exit, and wait
# until it has.
end_init() {
	echo go >"$BUNDLE/rootfs/tmp/go"
	wait_until 30 pid_gone "$1"
}

# known_failure OUTPUT: a failed command said one of the things a command
# racing others on one container may truthfully say.
known_failure() {
	local m
	for m in "does not exist" "cannot start container" "cannot delete container" \
		"cannot pause container" "cannot resume container" "cannot exec in container" \
		"cannot update container" "cannot checkpoint container" "container not running" \
		"it stopped while the exec was being set up" "criu dump failed" "No such process" \
		"exited before it started"; do
		[[ "$1" == *"$m"* ]] && return 0
	done
	echo "unexpected failure: $1" >&2
	return 1
}

@test "concurrency: 100 containers created, started, exec'd into, killed and deleted by 16 tern processes at a time" {
	local worker=$BATS_TEST_TMPDIR/worker.sh results=$BATS_TEST_TMPDIR/results
	# One container's life, checked at each step; prints "ok ID" or
	# "FAIL ID: what". Bounded: no step may hang.
	cat >"$worker" <<'EOF'
#!/bin/bash
# (lean: few forks per step, the machine has two cores for 16 of these)
T=$TERN_BIN R=$ROOT id=$1
fail() {
	echo "FAIL $id: $*"
	"$T" --root "$R" delete --force "$id" >/dev/null 2>&1
	exit 0
}
tn() { "$T" --root "$R" "$@"; }
# status_is S: `state` says S (its JSON is one field a line)
status_is() {
	out=$(tn state "$id" 2>&1) && [[ "$out" == *"\"status\": \"$1\""* ]]
}
tn create -b "$BUNDLE" "$id" </dev/null >/dev/null 2>"$R.err.$id" || fail "create: $(cat "$R.err.$id")"
status_is created || fail "after create: $out"
[[ "$out" =~ \"pid\":\ ([0-9]+) ]] && pid=${BASH_REMATCH[1]} && [ "$pid" -gt 0 ] || fail "pid in: $out"
tn start "$id" || fail "start"
status_is running || fail "after start: $out"
# the exec ran, and in this container: its pid namespace is the init's
out=$(tn exec "$id" sh -c 'echo "exec-ok $(readlink /proc/self/ns/pid)"' 2>&1) || fail "exec: $out"
[ "$out" = "exec-ok $(readlink /proc/$pid/ns/pid)" ] || fail "exec printed '$out'"
tn kill "$id" KILL || fail "kill"
# until the init is gone or a zombie (no tern call per poll)
for i in $(seq 400); do
	read -r st 2>/dev/null <"/proc/$pid/stat" || break
	st=${st##*) }
	[ "${st%% *}" = Z ] && break
	sleep 0.05
done
status_is stopped || fail "after kill: $out"
tn delete "$id" || fail "delete"
[ ! -e "$R/$id" ] || fail "state directory left"
rm -f "$R.err.$id"
echo "ok $id"
EOF
	chmod +x "$worker"
	export TERN_BIN ROOT BUNDLE
	# meanwhile, list keeps reading every container's state unlocked
	# (peek) while they are being created and removed
	(
		exec 3>&-
		n=0
		while [ ! -e "$BATS_TEST_TMPDIR/stop-list" ]; do
			out=$("$TERN_BIN" --root "$ROOT" list --format json 2>&1) &&
				jq -e 'all(.[]?; .status | IN("creating", "created", "running", "stopped"))' \
					<<<"$out" >/dev/null ||
				echo "list: $out" >>"$BATS_TEST_TMPDIR/list-bad"
			n=$((n + 1))
			# (pacing only: two cores are shared with the workers)
			sleep 0.2
		done
		echo "$n" >"$BATS_TEST_TMPDIR/list-count"
	) &
	local lister=$!
	EXTRA_PIDS=$lister
	# (bounded as a whole: a hung step fails the test, not the suite)
	seq -f "$ID-%g" 1 100 | timeout -s KILL 110 xargs -P 16 -n 1 "$worker" >"$results" 2>&1 3>&-
	touch "$BATS_TEST_TMPDIR/stop-list"
	wait "$lister"
	echo "lists read meanwhile: $(cat "$BATS_TEST_TMPDIR/list-count")"
	grep -v '^ok ' "$results" || true
	[ "$(grep -c '^ok ' "$results")" -eq 100 ]
	[ ! -e "$BATS_TEST_TMPDIR/list-bad" ] || {
		head -5 "$BATS_TEST_TMPDIR/list-bad"
		false
	}
	[ "$(cat "$BATS_TEST_TMPDIR/list-count")" -gt 0 ]
	[ "$("$TERN_BIN" --root "$ROOT" list -q)" = "" ]
	nothing_left_under_root
}

@test "concurrency: 16 creates of one id at once: exactly one wins, the rest say it already exists, the winner is whole" {
	local round i wins pids
	for round in 1 2 3; do
		rm -rf "$BATS_TEST_TMPDIR/c"
		mkdir "$BATS_TEST_TMPDIR/c"
		pids=()
		for i in $(seq 1 16); do
			(
				rc=0
				timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" create -b "$BUNDLE" "$ID" \
					</dev/null >"$BATS_TEST_TMPDIR/c/$i" 2>&1 || rc=$?
				echo "$rc" >"$BATS_TEST_TMPDIR/c/$i.rc"
			) 3>&- &
			pids+=($!)
		done
		# these, not every child: with BATS_TEST_TIMEOUT, bats's own
		# timer is one too, and a bare wait waits for it to fire
		wait "${pids[@]}"
		wins=$(grep -lx 0 "$BATS_TEST_TMPDIR"/c/*.rc | wc -l)
		echo "round $round: $wins won"
		[ "$wins" -eq 1 ]
		for i in $(seq 1 16); do
			[ "$(cat "$BATS_TEST_TMPDIR/c/$i.rc")" = 0 ] && continue
			grep -q "already exists" "$BATS_TEST_TMPDIR/c/$i" || {
				cat "$BATS_TEST_TMPDIR/c/$i"
				false
			}
		done
		# the winner is intact: created, startable, exec works in it
		[ "$(state_field "$ID" status)" = created ]
		truthful_state "$ID"
		tern start "$ID"
		[ "$(state_field "$ID" status)" = running ]
		run tern exec "$ID" echo inside
		[ "$status" -eq 0 ]
		[ "$output" = inside ]
		tern delete --force "$ID"
		nothing_left_under_root
	done
}

# race_round CMD...: every command at once, each as its own tern on $ID
# (bounded); then each failure must be a known one, the state true, and
# delete --force must leave nothing.
race_round() {
	local dir=$BATS_TEST_TMPDIR/race i=0 c cgroups pids=()
	rm -rf "$dir"
	mkdir "$dir"
	cgroups=$(cgroup_dirs)
	for c in "$@"; do
		i=$((i + 1))
		(
			SECONDS=0
			rc=0
			# shellcheck disable=SC2086
			timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" $c </dev/null >"$dir/$i" 2>&1 || rc=$?
			echo "$rc" >"$dir/$i.rc"
			[ "$SECONDS" -lt 60 ] || echo hung >"$dir/$i.hung"
		) 3>&- &
		pids+=($!)
	done
	wait "${pids[@]}" # (not bats's timer: see the 16 creates)
	i=0
	for c in "$@"; do
		i=$((i + 1))
		echo "  $c: exit $(cat "$dir/$i.rc"): $(head -c 300 "$dir/$i")"
	done
	i=0
	for c in "$@"; do
		i=$((i + 1))
		rc=$(cat "$dir/$i.rc")
		[ ! -e "$dir/$i.hung" ] || {
			echo "hung: $c" >&2
			return 1
		}
		# an exec whose process the container's end killed: 128+9
		[[ "$rc" = 0 || ("$c" == exec* && "$rc" = 137) ]] && continue
		known_failure "$(cat "$dir/$i")" || {
			echo "($c, exit $rc)" >&2
			return 1
		}
	done
	truthful_state "$ID"
	"$TERN_BIN" --root "$ROOT" delete --force "$ID"
	quickly_nothing_left "$cgroups"
}

@test "concurrency: delete, kill, pause, resume, start, exec and state racing on one container never leave a half state" {
	local round
	for round in $(seq 1 8); do
		tern run -d -b "$BUNDLE" "$ID"
		race_round "pause $ID" "resume $ID" "kill $ID KILL" "delete --force $ID" \
			"delete $ID" "exec $ID true" "start $ID" "state $ID" "pause $ID" \
			"update --memory 64m $ID" "kill $ID TERM"
	done
	# and the same ones on a container that was only created
	for round in $(seq 1 4); do
		tern create -b "$BUNDLE" "$ID"
		race_round "start $ID" "start $ID" "delete $ID" "kill $ID KILL" "pause $ID" \
			"exec $ID true" "state $ID"
	done
	nothing_left_under_root
}

@test "concurrency: checkpoint racing delete, kill, pause, resume and exec on one container never leaves a half state" {
	[ -x "$CRIU_BIN" ] || skip "!!! NO CRIU AT $CRIU_BIN (scripts/install-criu.sh) !!!"
	cd "$BATS_TEST_TMPDIR"
	local round
	for round in 1 2 3; do
		tern run -d -b "$BUNDLE" "$ID"
		wait_status "$ID" running
		race_round "checkpoint --image-path img$round $ID" "pause $ID" "resume $ID" \
			"exec $ID true" "kill $ID KILL" "delete --force $ID" "state $ID"
	done
	# two checkpoints of one container at once: one after the other
	tern run -d -b "$BUNDLE" "$ID"
	wait_status "$ID" running
	race_round "checkpoint --leave-running --image-path imgA $ID" \
		"checkpoint --leave-running --image-path imgB $ID"
	[ -f imgA/inventory.img ] && [ -f imgB/inventory.img ]
	nothing_left_under_root
}

@test "concurrency: the process exits while exec opens the container's namespaces: a clear error, nothing left" {
	require_strace
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(init_pid "$ID")
	hold_tern "/proc/$pid/ns/ipc" 1 exec "$ID" echo never
	kill -9 "$pid"
	wait_until 30 pid_gone "$pid"
	release_hold
	[ "$HOLD_RC" -ne 0 ]
	if is_tern; then
		[[ "$output" == *"cannot exec in container \`$ID\`: it stopped while the exec was being set up"* ]]
	fi
	[[ "$output" != *never* ]]
	[ "$(state_field "$ID" status)" = stopped ]
	tern delete "$ID"
	nothing_left_under_root
}

@test "concurrency: the process exits while exec joins the cgroup (its own process already in the namespaces): a clear error, nothing left" {
	require_strace
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(init_pid "$ID")
	# the first cgroup the exec process joins
	procs=$(jq -r '.cgroup_paths | to_entries[0] | .key + .value' "$ROOT/$ID/state.json")/cgroup.procs
	hold_tern "$procs" 1 exec "$ID" echo never
	child=$(pgrep -P "$HELD")
	kill -9 "$pid"
	# the end of the pid namespace kills the exec's child; the init then
	# waits in its exit for the held tern to reap that child
	wait_until 30 pid_gone "$child"
	release_hold
	[ "$HOLD_RC" -ne 0 ]
	[[ "$output" == *"cannot exec in container \`$ID\`: it stopped while the exec was being set up"* ]]
	[[ "$output" != *never* ]]
	wait_until 30 pid_gone "$pid"
	[ "$(state_field "$ID" status)" = stopped ]
	tern delete "$ID"
	nothing_left_under_root
}

@test "concurrency: the process exits while an exec'd process runs: exec ends with 137 (killed with the container), no hang" {
	exit_on_fifo
	tern run -d -b "$BUNDLE" "$ID"
	pid=$(init_pid "$ID")
	# the exec'd process itself makes the init exit, then waits forever:
	# the end of the container's pid namespace kills it
	run timeout -s KILL 60 "$TERN_BIN" --root "$ROOT" exec "$ID" sh -c "echo go > /tmp/go; exec sleep $MARK"
	[ "$status" -eq 137 ]
	pid_gone "$pid"
	[ "$(state_field "$ID" status)" = stopped ]
	tern delete "$ID"
	nothing_left_under_root
}

@test "concurrency: the process exits while pause looks at it or freezes it: success or a clear error, then stopped, nothing left" {
	require_strace
	local n
	# 1: the open that reads the status; 2: the one that freezes
	for n in 1 2; do
		exit_on_fifo
		tern run -d -b "$BUNDLE" "$ID"
		pid=$(init_pid "$ID")
		hold_tern "/sys/fs/cgroup/freezer/$ID/freezer.state" "$n" pause "$ID"
		end_init "$pid"
		release_hold
		[ "$HOLD_RC" -eq 0 ] || known_failure "$output"
		[ "$(state_field "$ID" status)" = stopped ]
		truthful_state "$ID"
		# a stopped container: delete needs no --force
		tern delete "$ID"
		nothing_left_under_root
		rm "$BUNDLE/rootfs/tmp/go"
	done
}

@test "concurrency: a paused container's process killed while frozen: paused until resumed (then stopped) or deleted with --force, nothing left" {
	local round
	for round in resume delete; do
		tern run -d -b "$BUNDLE" "$ID"
		pid=$(init_pid "$ID")
		tern pause "$ID"
		# SIGKILL to a frozen process waits for the thaw
		kill -9 "$pid"
		[ "$(state_field "$ID" status)" = paused ]
		truthful_state "$ID"
		if [ "$round" = resume ]; then
			tern resume "$ID"
			wait_until 30 pid_gone "$pid"
			[ "$(state_field "$ID" status)" = stopped ]
			tern delete "$ID"
		else
			run tern delete "$ID"
			[ "$status" -ne 0 ]
			[[ "$output" == *"cannot delete container"*paused* ]] || ! is_tern
			tern delete --force "$ID"
			pid_gone "$pid"
		fi
		nothing_left_under_root
	done
}

@test "concurrency: the process exits while update looks at it or writes a limit: success or a clear error, then stopped, nothing left" {
	require_strace
	local n target
	for n in 1 2; do
		exit_on_fifo
		tern run -d -b "$BUNDLE" "$ID"
		pid=$(init_pid "$ID")
		if [ "$n" = 1 ]; then
			# the status read
			target=/sys/fs/cgroup/freezer/$ID/freezer.state
		else
			# the memory limit it writes
			target=$(jq -r '.cgroup_paths | to_entries[] | select(.key | endswith("/memory")) | .key + .value' \
				"$ROOT/$ID/state.json")/memory.limit_in_bytes
		fi
		hold_tern "$target" 1 update --memory 64m "$ID"
		end_init "$pid"
		release_hold
		[ "$HOLD_RC" -eq 0 ] || known_failure "$output"
		[ "$(state_field "$ID" status)" = stopped ]
		tern delete "$ID"
		nothing_left_under_root
		rm "$BUNDLE/rootfs/tmp/go"
	done
}

@test "concurrency: the process dies while criu dumps it (held at pre-dump, network-lock, post-dump): success or a clear error, then stopped, nothing left" {
	[ -x "$CRIU_BIN" ] || skip "!!! NO CRIU AT $CRIU_BIN (scripts/install-criu.sh) !!!"
	cd "$BATS_TEST_TMPDIR"
	HOLD=$BATS_TEST_TMPDIR/hold
	# criu reads CRIU_CONFIG_FILE also when tern drives it over RPC
	cat >"$HOLD.sh" <<EOF
#!/bin/sh
[ "\$CRTOOLS_SCRIPT_ACTION" = "\$(cat $HOLD.action)" ] || exit 0
touch $HOLD.in
while [ ! -e $HOLD.go ] && kill -0 \$PPID 2>/dev/null; do sleep 0.05; done
EOF
	chmod 0755 "$HOLD.sh"
	echo "action-script $HOLD.sh" >"$HOLD.conf"
	local action ck rc
	for action in pre-dump network-lock post-dump; do
		rm -f "$HOLD.in" "$HOLD.go"
		echo "$action" >"$HOLD.action"
		tern run -d -b "$BUNDLE" "$ID"
		pid=$(init_pid "$ID")
		(
			exec 3>&-
			rc=0
			CRIU_CONFIG_FILE=$HOLD.conf timeout -s KILL 100 "$TERN_BIN" --root "$ROOT" \
				checkpoint --image-path "img-$action" "$ID" >ck.out 2>&1 || rc=$?
			echo "$rc" >ck.rc
		) &
		ck=$!
		wait_until 60 test -e "$HOLD.in"
		# at pre-dump the container is frozen: it dies once thawed
		kill -9 "$pid"
		touch "$HOLD.go"
		wait "$ck"
		rc=$(cat ck.rc)
		echo "$action: exit $rc: $(cat ck.out)"
		[ "$rc" -ne 137 ]
		[ "$rc" -eq 0 ] || known_failure "$(cat ck.out)"
		wait_until 30 pid_gone "$pid"
		if [ "$rc" -eq 0 ]; then
			# a checkpoint that stopped it deletes it, as runc does
			run tern state "$ID"
			[ "$status" -ne 0 ]
		else
			[ "$(state_field "$ID" status)" = stopped ]
			tern delete "$ID"
		fi
		nothing_left_under_root
	done
}

@test "concurrency: exec, pause, resume and update racing the process's own exit, 10 times: each ends, the state is true, nothing left" {
	local round
	for round in $(seq 1 10); do
		exit_on_fifo
		tern run -d -b "$BUNDLE" "$ID"
		pid=$(init_pid "$ID")
		# (a writer that the init's end left waiting is killed below)
		(echo go >"$BUNDLE/rootfs/tmp/go") 3>&- &
		writer=$!
		# (never exec and pause in one round: an exec whose process joins
		# a cgroup paused after the exec looked waits for a resume, and
		# the resume may have come first)
		if [ $((round % 2)) = 0 ]; then
			race_round "exec $ID true" "update --memory 64m $ID" "exec $ID true" "state $ID"
		else
			race_round "pause $ID" "update --memory 64m $ID" "resume $ID" "state $ID"
		fi
		kill "$writer" 2>/dev/null || true
		wait "$writer" || true
		rm "$BUNDLE/rootfs/tmp/go"
	done
	nothing_left_under_root
}
