#!/usr/bin/env bats
# Compatibility with runc: the same bundle through $TERN_BIN and runc.

load helpers

setup() {
	setup_bundle
	[ -x "$RUNC_BIN" ] || skip "LOUD: runc ($RUNC_BIN) is not installed: the compat tests need it"
}

# both_exit: "TERN_STATUS RUNC_STATUS" of a foreground run.
both_exit() {
	local a=0 b=0
	tern run -b "$BUNDLE" "$ID-t" >/dev/null || a=$?
	runc_ run -b "$BUNDLE" "$ID-r" >/dev/null || b=$?
	echo "$a $b"
}

@test "compat: exit status 0 and 3 match runc" {
	set_cmd 'exit 0'
	[ "$(both_exit)" = "0 0" ]
	set_cmd 'exit 3'
	run both_exit
	[ "$output" = "3 3" ]
}

# killed_exit RUNTIME-FN ID SIGNAL: exit status of a foreground run killed
# from the host side.
killed_exit() {
	local fn=$1 id=$2 sig=$3 rc=0 i
	$fn run -b "$BUNDLE" "$id" >/dev/null &
	local rpid=$!
	for i in $(seq 100); do
		[ "$($fn state "$id" 2>/dev/null | jq -r .status)" = running ] && break
		sleep 0.05
	done
	$fn kill "$id" "$sig"
	wait "$rpid" || rc=$?
	echo "$rc"
}

@test "compat: killed by SIGKILL / SIGTERM: same exit status as runc" {
	remove_namespace pid
	set_args /bin/sleep "$MARK"
	for sig in KILL TERM; do
		a=$(killed_exit tern "$ID-t$sig" "$sig")
		b=$(killed_exit runc_ "$ID-r$sig" "$sig")
		echo "$sig: $a $b"
		[ "$a" = "$b" ]
	done
	[ "$b" = 143 ]
}

# state_shape FN ID: the state JSON without the fields that must differ
# (also printed, so that a failure shows both sides).
state_shape() {
	$1 state "$2" | jq -S -c --arg id "$2" 'if .id == $id then .id = "ID" else . end
		| del(.pid, .created, .bundle, .rootfs)' | tee -a "$BATS_TEST_TMPDIR/shapes" >&2
}

@test "compat: state JSON keys and values match runc in created, running, stopped" {
	set_cmd 'while [ ! -e /tmp/go ]; do sleep 0.05; done'
	tern create -b "$BUNDLE" "$ID-t"
	runc_ create -b "$BUNDLE" "$ID-r"
	keys_t=$(tern state "$ID-t" | jq -S -c 'keys')
	keys_r=$(runc_ state "$ID-r" | jq -S -c 'keys')
	echo "keys: $keys_t vs $keys_r"
	[ "$keys_t" = "$keys_r" ]
	[ "$(state_shape tern "$ID-t")" = "$(state_shape runc_ "$ID-r")" ]
	tern start "$ID-t"
	runc_ start "$ID-r"
	[ "$(state_shape tern "$ID-t")" = "$(state_shape runc_ "$ID-r")" ]
	[ "$(tern state "$ID-t" | jq -S -c keys)" = "$(runc_ state "$ID-r" | jq -S -c keys)" ]
	# both containers share the rootfs: one file stops both
	touch "$BUNDLE/rootfs/tmp/go"
	wait_status "$ID-t" stopped
	for i in $(seq 100); do
		[ "$(runc_ state "$ID-r" | jq -r .status)" = stopped ] && break
		sleep 0.05
	done
	[ "$(state_shape tern "$ID-t")" = "$(state_shape runc_ "$ID-r")" ]
	[ "$(tern state "$ID-t" | jq -S -c keys)" = "$(runc_ state "$ID-r" | jq -S -c keys)" ]
	[ "$(tern state "$ID-t" | jq .pid)" = "$(runc_ state "$ID-r" | jq .pid)" ]
}

@test "compat: list --format json has the same keys as runc's" {
	set_args /bin/sleep "$MARK"
	tern run -d -b "$BUNDLE" "$ID-t"
	runc_ run -d -b "$BUNDLE" "$ID-r"
	[ "$(tern list --format json | jq -S -c '.[0] | keys')" = "$(runc_ list --format json | jq -S -c '.[0] | keys')" ]
}
