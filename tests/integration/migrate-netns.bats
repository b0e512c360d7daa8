#!/usr/bin/env bats
# tern migrate and the container's network namespace. One that holds only
# `lo` and that nobody in the container could change (no CAP_NET_ADMIN or
# CAP_SYS_ADMIN, no user namespace, /proc/sys read-only) is left out of
# criu's images: the target makes a new one, as create does (lo up, the
# config's net.* sysctls). Any other travels in the images as before.

load helpers
load migrate-helpers

# lo_up: in node B's container, lo is up (the local table has 127.0.0.1,
# which the kernel adds only when lo comes up).
lo_up_b() {
	tern_b exec "$ID" grep -q '127.0.0.1' /proc/net/fib_trie
}

@test "migrate: a network namespace with only lo is made anew on the target: lo up, the config's net.* sysctl, a listener on 127.0.0.1 still serves" {
	update_config '.linux.sysctl = {"net.ipv4.ip_unprivileged_port_start": "1000"}'
	mkdir -p "$BUNDLE/rootfs/www"
	echo "served before and after" >"$BUNDLE/rootfs/www/index.html"
	set_cmd "httpd -p 127.0.0.1:8080 -h /www; $(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	[ "$(tern exec "$ID" wget -qO- http://127.0.0.1:8080/index.html)" = "served before and after" ]
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"phase":"dumped"' | jq -e '.netns_new == true'
	receive_status
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	# the restored httpd (the same process, its listening socket
	# restored by criu) serves in the new namespace
	[ "$(tern_b exec "$ID" wget -qO- http://127.0.0.1:8080/index.html)" = "served before and after" ]
	lo_up_b
	[ "$(tern_b exec "$ID" cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" = 1000 ]
	# a namespace of its own, not node B's
	[ "$(tern_b exec "$ID" readlink /proc/self/ns/net)" != "$(on B readlink /proc/self/ns/net)" ]
	source_gone
}

@test "migrate: a container that may change its network namespace (CAP_NET_ADMIN) has it dumped: an address it added travels" {
	update_config '.process.capabilities.bounding += ["CAP_NET_ADMIN"] |
		.process.capabilities.effective += ["CAP_NET_ADMIN"] |
		.process.capabilities.permitted += ["CAP_NET_ADMIN"]'
	set_cmd "ip addr add 10.77.0.1/32 dev lo && $(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"phase":"dumped"' | jq -e '.netns_new == false'
	receive_status
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	tern_b exec "$ID" ip addr show dev lo | grep -q '10.77.0.1/32'
	source_gone
}

@test "migrate: a network namespace with another device is dumped, not made anew" {
	# a device made from outside (as a CNI plugin adds one): a bridge
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	nsenter --net="/proc/$SRC_PID/ns/net" ip link add tmbr0 type bridge
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"phase":"dumped"' | jq -e '.netns_new == false'
	receive_status
	tern_b exec "$ID" cat /proc/net/dev | grep -q tmbr0
	source_gone
}

@test "migrate: a process exec'd with CAP_NET_ADMIN (alive at the freeze) keeps the network namespace in the images" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	# (exec -d returns once the process runs)
	tern exec -d --cap CAP_NET_ADMIN "$ID" sleep 1000
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"phase":"dumped"' | jq -e '.netns_new == false'
	receive_status
	last=$(cat "$BUNDLE/rootfs/tmp/count")
	went_on "$BUNDLE_B/rootfs/tmp/count" "$last"
	source_gone
}

@test "migrate: a process exec'd with CAP_NET_ADMIN that changed the namespace and exited: the change travels" {
	set_cmd "$(counter_cmd /tmp/count)"
	start_source
	wait_count_above "$BUNDLE/rootfs/tmp/count" 2
	tern exec --cap CAP_NET_ADMIN "$ID" ip addr add 10.77.0.3/32 dev lo
	receive --token-file "$TOKEN"
	migrate --token-file "$TOKEN" --mode stop-and-copy --format json
	[ "$status" -eq 0 ] || { echo "$output"; cat recv.err; false; }
	echo "$output" | grep '"phase":"dumped"' | jq -e '.netns_new == false'
	receive_status
	tern_b exec "$ID" ip addr show dev lo | grep -q '10.77.0.3/32'
	source_gone
}
