#!/usr/bin/env bats
# The progress of tern migrate / migrate-receive (see migrate-helpers.bash
# for the two nodes): the pages and bytes of every phase, what post-copy
# fetched on demand, the dirty rate where it is known (null where this
# kernel tracks no dirty pages), and `--format json` as one JSON object per
# line. Pre-copy's dirty rate is tested in the qemu guest
# (tests/integration-criu-guest/migrate-precopy.bats).

load helpers
load migrate-helpers

# every_line_json FILE: each line of FILE is one JSON object with an event,
# a side and a time.
every_line_json() {
	local n=0 line
	while IFS= read -r line; do
		echo "$line" | jq -e 'type == "object" and (.event | type) == "string" and
			(.side | type) == "string" and (.t_ms | type) == "number"' >/dev/null ||
			{ echo "not an event: $line" >&2; return 1; }
		n=$((n + 1))
	done <"$1"
	[ "$n" -gt 0 ]
}

# phase_event FILE PHASE: the one "phase" event of PHASE in FILE.
phase_event() {
	jq -c --arg p "$2" 'select(.event == "phase" and .phase == $p)' "$1"
}

@test "migrate progress: post-copy shows the bytes fetched while it runs and the pages and bytes at the end, on both sides" {
	# criu's lazy page server needs 4 MiB pipes (no CAP_SYS_RESOURCE here)
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	# 128 MiB: long enough a transfer to be seen while it runs
	set_cmd "/bin/memhash 128 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode post-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" >src.out
	every_line_json src.out
	every_line_json recv.out
	grep -E '"event":"(progress|done)"|"phase":"(images|pages)"' src.out recv.out | sed 's/^/# /' >&3
	for f in src.out recv.out; do
		# the images hold no memory
		phase_event "$f" images | jq -e '.pages_bytes < 16 * 1048576 and
			.pages * 4096 == .pages_bytes and .bytes >= .pages_bytes'
		# the dump's pagemaps say what it left to fetch: at least the
		# 128 MiB memhash touched
		phase_event "$f" pages | jq -e '.bytes >= 128 * 1048576'
		lazy=$(phase_event "$f" pages | jq .bytes)
		# while it ran: samples of the page-server connection that never
		# go down, and never above what crossed it (the pages with criu's
		# TLS and headers: a few bytes in a thousand)
		grep '"event":"progress"' "$f" | jq -s -e --argjson lazy "$lazy" '
			length >= 1 and
			(.[0].rate == null) and all(.[1:][]; .rate >= 0) and
			all(.[]; .phase == "pages" and .bytes > 0 and
				.lazy_bytes == $lazy and .bytes <= $lazy * 1.01 + 1048576) and
			([.[].bytes] == ([.[].bytes] | sort))'
		# at the end: every page left behind was fetched
		phase_event "$f" pages | jq -e '.pages * 4096 == .bytes and .wire_bytes > 0'
		grep '"event":"done"' "$f" | jq -e --argjson lazy "$lazy" '.bytes_fetched == $lazy and
			.pages_fetched * 4096 == .bytes_fetched'
	done
	# both sides counted the same pages
	[ "$(grep '"event":"done"' src.out | jq .pages_fetched)" = \
		"$(grep '"event":"done"' recv.out | jq .pages_fetched)" ]
	[ "$(tern_b state "$ID" | jq -r .status)" = running ]
	source_gone
}

@test "migrate progress: post-copy in text: the bytes fetched so far, then the pages and bytes fetched" {
	PIPE_MAX_WAS=$(cat /proc/sys/fs/pipe-max-size)
	[ "$PIPE_MAX_WAS" -ge 4194304 ] || echo 4194304 >/proc/sys/fs/pipe-max-size
	set_cmd "/bin/memhash 128 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode post-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" | sed 's/^/# /' >&3
	echo "$output" | grep -E '^source \[ *[0-9.]+s\] post-copy: [0-9.]+ of [0-9.]+ MiB fetched by the target so far'
	line=$(echo "$output" | grep 'every page fetched by the target: ')
	pages=$(echo "$line" | sed -n 's/.*target: \([0-9]*\) pages, \([0-9]*\) bytes.*/\1/p')
	bytes=$(echo "$line" | sed -n 's/.*target: \([0-9]*\) pages, \([0-9]*\) bytes.*/\2/p')
	[ "$bytes" -ge $((128 << 20)) ]
	[ "$bytes" -eq $((pages * 4096)) ]
	# the target counted the same
	[ "$(jq -r 'select(.event == "done") | .pages_fetched' recv.out)" = "$pages" ]
	source_gone
}

@test "migrate progress: stop-and-copy counts the pages and bytes of the images, the dirty rate is null; text mode says the same" {
	set_cmd "/bin/memhash 16 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	# text on stderr (bats's run merges it into $output)
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" | sed 's/^/# /' >&3
	[[ "$output" == *"images sent: "*" bytes ("*" pages, "*" bytes of pages)"* ]]
	[[ "$output" == *"downtime "*" ms, total "*" ms"* ]]
	every_line_json recv.out
	# the 16 MiB travel in the page images, frozen
	phase_event recv.out images | jq -e '.pages >= 4096 and .pages_bytes == .pages * 4096 and
		.bytes >= .pages_bytes'
	grep '"event":"done"' recv.out | jq -e '.pages_fetched == null and .bytes_fetched == null'
	pages=$(echo "$output" | sed -n 's/.*images sent: [0-9]* bytes (\([0-9]*\) pages.*/\1/p')
	[ "$pages" = "$(phase_event recv.out images | jq .pages)" ]
	source_gone
}

@test "migrate progress: the JSON of stop-and-copy on the source: every phase with its counters, dirty_rate null" {
	set_cmd "/bin/memhash 16 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" >src.out
	every_line_json src.out
	phase_event src.out rootfs | jq -s -e 'length == 2 and
		all(.[]; (.bytes | type) == "number" and (.data_bytes | type) == "number")'
	phase_event src.out images | jq -e '.pages >= 4096 and .pages_bytes == .pages * 4096 and
		.bytes >= .pages_bytes and (has("dirty_rate")) and .dirty_rate == null'
	grep '"event":"done"' src.out | jq -e '.downtime_ms > 0 and .total_ms >= .downtime_ms and
		.image_bytes >= 16 * 1048576 and has("pages_fetched") and .pages_fetched == null'
	! grep -q '"event":"progress"' src.out || false
	source_gone
}
