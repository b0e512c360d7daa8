#!/usr/bin/env bats
# linux.netDevices with a dummy device (netdev.bats has the rest). Its own
# file because this host's kernel has no dummy devices (CONFIG_DUMMY is
# off): here it says so loudly; scripts/test.sh runs it in the cgroup v2
# qemu guest, on Debian's kernel, which has them (without the whole of
# netdev.bats, which the host runs).

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load netdev-helpers

@test "netDevices: a dummy device moves in, and goes with the namespace" {
	if ! ip link add "${P}d" type dummy 2>/dev/null; then
		skip "!!! THIS KERNEL HAS NO DUMMY NETWORK DEVICES (CONFIG_DUMMY): run this file in the qemu guest (tests/vm/run-in-guest.sh) !!!"
	fi
	HOST_DEVS+=("${P}d")
	addressed "${P}d"
	set_netdevs "{\"${P}d\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	not_on_host "${P}d"
	run tern exec "$ID" cat /sys/class/net/ctr0/mtu /sys/class/net/ctr0/flags
	[ "${lines[0]}" = 1400 ]
	(("${lines[1]}" & 1))
	[ "$(ctr_ip -j addr show dev ctr0 | global_addrs)" = "$PERMANENT_GLOBAL" ]
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	tern delete "$ID"
	# a virtual device is destroyed with its namespace, not returned
	not_on_host "${P}d"
	not_on_host ctr0
	check_nothing_left "$ID"
}
