#!/usr/bin/env bats
# The progress of tern migrate / migrate-receive (see migrate-helpers.bash
# for the two nodes): the pages and bytes of every phase, what post-copy
# fetched on demand, the dirty rate where it is known (null where this
# kernel tracks no dirty pages), the frozen dump's progress (and tern
# snapshot's), why --mode auto did not choose post-copy, and `--format
# json` as one JSON object per line. Pre-copy's dirty rate is tested in the qemu guest
# (tests/integration-criu-guest/migrate-precopy.bats).

load helpers
load migrate-helpers

# every_line_json FILE: FILE has lines, each one JSON object with an event,
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
	# no page-server samples (the dump's own progress may come: it has
	# phase "dump", tested below); mode chosen, so no fallback to explain
	! grep '"event":"progress"' src.out | grep -v '"phase":"dump"' || false
	grep '"event":"accepted"' src.out | jq -e 'has("not_post_copy") and .not_post_copy == null'
	source_gone
}

# ---- the frozen dump's progress (stop-and-copy, and tern snapshot) ----

# dump_progress_ok FILE PAGES_BYTES DUMP_MS: the "progress" events of FILE
# are the dump's (phase "dump", bytes, rate and dump_ms numbers), their
# bytes and times never go down, only the last has `last` true, and it
# gives the size of the page images. Whether there must be any, by the
# tool's own timing of the dump (DUMP_MS): a dump of a tick (250 ms) or
# more ends with the total (tern looks at its clock once the dump is
# over); one of a second or more has had ticks while it ran.
dump_progress_ok() {
	jq -s -e --argjson pb "$2" --argjson dms "$3" '
		[.[] | select(.event == "progress")] as $p |
		($p | all(.[]; .phase == "dump" and (.bytes | type) == "number" and
			(.rate | type) == "number" and (.dump_ms | type) == "number")) and
		([$p[].bytes] == ([$p[].bytes] | sort)) and
		([$p[].dump_ms] == ([$p[].dump_ms] | sort)) and
		([$p[] | select(.last)] | length) == (if ($p | length) > 0 then 1 else 0 end) and
		(if ($p | length) > 0 then $p[-1].last and $p[-1].bytes == $pb else true end) and
		(if $dms >= 250 then ($p | length) >= 1 else true end) and
		(if $dms >= 1000 then ([$p[] | select(.last | not)] | length) >= 1 else true end)' "$1"
}

# A text line of the dump's progress, after "SIDE ".
DUMP_LINE='\[ *[0-9]+\.[0-9]{3}s\] dump: [0-9]+\.[0-9] MiB of pages written (so far|in all, in [0-9]+\.[0-9]{3} s) \([0-9]+\.[0-9] MiB/s\)$'

# dump_lines_ok FILE DUMP_MS: the text lines of FILE (each a DUMP_LINE)
# say the same as dump_progress_ok checks: MiB never down, the last (and
# only it) "in all"; by the dump's own time, at least that last line (a
# tick or longer) and a "so far" (a second or longer).
dump_lines_ok() {
	local n so_far
	n=$(wc -l <"$1")
	so_far=$(grep -c 'so far' "$1" || true)
	sed -n 's/.* dump: \([0-9.]*\) MiB.*/\1/p' "$1" | sort -c -n
	if [ "$n" -gt 0 ]; then
		[ "$(grep -c 'in all' "$1")" -eq 1 ]
		tail -n 1 "$1" | grep -q 'in all'
	fi
	[ "$2" -lt 250 ] || [ "$n" -ge 1 ]
	[ "$2" -lt 1000 ] || [ "$so_far" -ge 1 ]
}

@test "migrate progress: a stop-and-copy of 256 MiB says, between the freeze and dumped, how many bytes criu has written, up to the page images' size" {
	set_cmd "/bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 120 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" >src.out
	every_line_json src.out
	grep -E '"event":"progress"|"phase":"(freeze|dumped|images)"' src.out | sed 's/^/# /' >&3
	local images pb dms
	images=$(phase_event src.out images)
	pb=$(echo "$images" | jq .pages_bytes)
	dms=$(echo "$images" | jq .dump_ms)
	[[ "$dms" =~ ^[0-9]+$ ]]
	[ "$pb" -ge $((256 << 20)) ]
	dump_progress_ok src.out "$pb" "$dms"
	# every one of them while frozen: after the freeze, before dumped
	jq -s -e '(map(.event == "phase" and .phase == "freeze") | index(true)) as $f |
		(map(.event == "phase" and .phase == "dumped") | index(true)) as $d |
		$f != null and $d != null and
		([to_entries[] | select(.value.event == "progress") | .key] |
			all(.[]; . > $f and . < $d))' src.out
	# 256 MiB take criu longer than a second here (about 1.1 s on an idle
	# machine, more when loaded): this is the case that must show them
	[ "$dms" -ge 1000 ] || echo "# the dump took only $dms ms" >&3
	source_gone
}

@test "migrate progress: stop-and-copy in text: the dump's bytes so far and rate, between frozen and dump done" {
	set_cmd "/bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 120 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" | sed 's/^/# /' >&3
	local dms
	dms=$(echo "$output" | sed -n 's/.*images sent: .* while criu dumped (for \([0-9]*\) ms).*/\1/p')
	[ -n "$dms" ]
	# the lines between "frozen" and "criu dump done"
	echo "$output" | sed -n '/frozen `/,/criu dump done/p' >frozen.txt
	grep -E "^source $DUMP_LINE" frozen.txt >lines.txt || true
	# none outside, none malformed
	[ "$(echo "$output" | grep -c '\] dump: ')" -eq "$(wc -l <lines.txt)" ]
	dump_lines_ok lines.txt "$dms"
	source_gone
}

@test "snapshot progress: a snapshot of 256 MiB in JSON: progress events while criu dumps, then its figures, the last event the page images' size" {
	set_cmd "/bin/memhash 256 /tmp/hash & $(counter_cmd /tmp/count)"
	on A "$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
	wait_until 120 test -e "$BUNDLE/rootfs/tmp/hash"
	"$TERN_BIN" --root "$ROOT" snapshot --format json "$ID" s1 </dev/null >snap.out 2>snap.err 3>&- ||
		{ cat snap.out snap.err; false; }
	sed 's/^/# /' snap.out >&3
	# every line but the last is an event; there are none when the dump
	# was shorter than a tick (dump_progress_ok says when there must be)
	head -n -1 snap.out >events.out
	[ "$(grep -c '"event"' snap.out || true)" -eq "$(wc -l <events.out)" ]
	[ ! -s events.out ] || every_line_json events.out
	jq -e -s 'all(.[]; .side == "snapshot")' events.out
	# the last line is what the snapshot took
	tail -n 1 snap.out | jq -e '.name == "s1" and (.criu_ms | type) == "number" and (has("event") | not)'
	local pb dms
	pb=$(stat -c %s "$ROOT/@snapshots/$ID/s1/images"/pages-*.img | awk '{ s += $1 } END { print s }')
	dms=$(tail -n 1 snap.out | jq '.criu_ms | floor')
	[[ "$dms" =~ ^[0-9]+$ ]]
	[ "$pb" -ge $((256 << 20)) ]
	dump_progress_ok snap.out "$pb" "$dms"
	[ "$dms" -ge 1000 ] || echo "# the dump took only $dms ms" >&3
	[ ! -s snap.err ] || { cat snap.err; false; }
}

@test "snapshot progress: text on a terminal; nothing when stderr is no terminal" {
	# 512 MiB: criu writes about 1 GB/s here when the machine is idle, so
	# that the dump is longer than a tick (250 ms) and the test has lines
	# to look at; how long it was is criu's time in tern's log
	set_cmd "/bin/memhash 512 /tmp/hash & $(counter_cmd /tmp/count)"
	on A "$TERN_BIN" --root "$ROOT" run -d -b "$BUNDLE" "$ID" </dev/null >/dev/null 2>&1 3>&-
	wait_status "$ID" running
	wait_until 120 test -e "$BUNDLE/rootfs/tmp/hash"
	# script(1) gives it a terminal; criu's time goes to the log
	script -qec "$TERN_BIN --root $ROOT --log $BATS_TEST_TMPDIR/snap.log --log-format json --debug snapshot $ID s1" \
		/dev/null </dev/null >tty.out 2>&1 3>&- || { cat tty.out; false; }
	tr -d '\r' <tty.out >tty.txt
	sed 's/^/# /' tty.txt >&3
	[ -d "$ROOT/@snapshots/$ID/s1" ]
	grep -E "^snapshot $DUMP_LINE" tty.txt >lines.txt || true
	[ "$(grep -c . tty.txt)" -eq "$(wc -l <lines.txt)" ]
	local ms
	ms=$(jq -r '.msg' snap.log | sed -n 's/^criu dumped `.*` in \([0-9]*\) ms$/\1/p')
	[ -n "$ms" ] || { cat snap.log; false; }
	echo "# criu: $ms ms" >&3
	dump_lines_ok lines.txt "$ms"
	# the last says the page images' size
	local pb
	pb=$(stat -c %s "$ROOT/@snapshots/$ID/s1/images"/pages-*.img | awk '{ s += $1 } END { print s }')
	[ "$(wc -l <lines.txt)" -eq 0 ] ||
		tail -n 1 lines.txt | grep -F " dump: $(awk -v b="$pb" 'BEGIN { printf "%.1f", b / 1048576 }') MiB "
	# no terminal: a snapshot prints nothing, as before
	run tern snapshot "$ID" s2
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# ---- --mode auto without post-copy ----

# pipes_too_small: fs.pipe-max-size below the 4 MiB criu's lazy page server
# needs (this machine's default is 1 MiB; a test elsewhere may have raised
# it for a while: then it is lowered, and teardown puts it back).
pipes_too_small() {
	local now
	now=$(cat /proc/sys/fs/pipe-max-size)
	if [ "$now" -ge 4194304 ]; then
		PIPE_MAX_WAS=$now
		echo 1048576 >/proc/sys/fs/pipe-max-size
	fi
}

@test "migrate progress: --mode auto with fs.pipe-max-size too small for post-copy says why it fell back to stop-and-copy (JSON)" {
	set_cmd "/bin/memhash 16 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	receive --token-file "$TOKEN"
	pipes_too_small
	migrate --token-file "$TOKEN" --mode auto --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" >src.out
	every_line_json src.out
	grep '"event":"accepted"' src.out | sed 's/^/# /' >&3
	grep '"event":"accepted"' src.out | jq -e '.mode == "stop-and-copy" and
		(.not_post_copy | contains("fs.pipe-max-size is ")) and
		(.not_post_copy | contains("sysctl fs.pipe-max-size=4194304"))'
	# the target says why from its side: the source could not serve it
	grep '"event":"accepted"' recv.out | jq -e '.mode == "stop-and-copy" and
		.not_post_copy == "the source cannot serve memory lazily"'
	source_gone
}

@test "migrate progress: --mode auto with fs.pipe-max-size too small for post-copy says why it fell back to stop-and-copy (text, the words of --mode post-copy)" {
	set_cmd "/bin/memhash 16 /tmp/hash & $(counter_cmd /tmp/count)"
	start_source
	wait_until 60 test -e "$BUNDLE/rootfs/tmp/hash"
	pipes_too_small
	# what --mode post-copy says when it refuses
	run in_file on A "$TERN_BIN" --root "$ROOT" migrate --to "10.231.0.2:$PORT" \
		--token-file "$TOKEN" --mode post-copy "$ID"
	[ "$status" -ne 0 ]
	local why
	why=$(echo "$output" | sed -n 's/.*--mode post-copy: \(--lazy-pages: .*\)$/\1/p')
	[ -n "$why" ] || { echo "$output"; false; }
	[ "$(tern state "$ID" | jq -r .status)" = running ]
	receive --token-file "$TOKEN"
	# (again: a test elsewhere on this machine may have raised it since)
	pipes_too_small
	migrate --token-file "$TOKEN" --mode auto
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	receive_status
	echo "$output" | grep accepted | sed 's/^/# /' >&3
	echo "$output" | grep -F "mode stop-and-copy, not post-copy: $why"
	source_gone
}
