#!/usr/bin/env bats
# linux.netDevices (runtime-spec 1.3, config-linux.md "Network Devices"):
# host network devices moved into the container's network namespace,
# renamed, with their permanent global addresses, and up; bad configs
# refused before anything exists; a create that fails puts the devices back
# as they were. On delete the runtime MUST NOT move them out (the spec): the
# namespace's owner decides, and for a namespace tern made that is the
# kernel, which destroys virtual devices with it (a veth takes its peer).
#
# Real devices on the host: veth pairs, and a bridge (which the kernel never
# lets leave its namespace). This kernel has no dummy devices (CONFIG_DUMMY
# is off): the dummy test says so and runs in the qemu guest
# (tests/vm/run-in-guest.sh). Device names are unique per test and per run;
# teardown deletes them whatever happened.

load helpers

setup() {
	if is_runc; then
		skip "tern's own messages and rollback (runc leaves moved devices to the kernel)"
	fi
	setup_bundle
	set_args /bin/sleep "$MARK"
	# short (a device name has at most 15 bytes), unique in this run
	# (test number) and among concurrent runs (pid)
	P=n$(printf %x $$)t$BATS_TEST_NUMBER
	HOST_DEVS=()
	IMG=$BATS_TEST_TMPDIR/img
}

teardown() {
	teardown_bundle
	local d
	for d in "${HOST_DEVS[@]}"; do
		ip link del "$d" 2>/dev/null
	done
	return 0
}

CRIU_BIN=${TERN_CRIU:-/opt/tern-criu/bin/criu}

# veth NAME: a veth pair NAME <-> NAMEp on the host (teardown deletes it).
veth() {
	HOST_DEVS+=("$1" "${1}p")
	ip link add "$1" type veth peer name "${1}p"
}

# addressed NAME: NAME gets MTU 1400, two IPv4 addresses (a primary and a
# secondary) and an IPv6 one, all permanent and global; a link-scope and a
# dynamic (non-permanent) IPv4 address, which the spec does not carry; and
# is up.
addressed() {
	ip link set "$1" mtu 1400 up
	ip addr add 10.201.0.1/24 dev "$1"
	ip addr add 10.201.0.2/24 dev "$1"
	ip -6 addr add fd00:201::1/64 dev "$1" nodad
	ip addr add 169.254.20.1/16 scope link dev "$1"
	ip addr add 10.202.0.1/24 dev "$1" valid_lft 600 preferred_lft 600
}

# The permanent global addresses of `ip -j addr show` on stdin, one a
# line, sorted.
global_addrs() {
	jq -r '.[0].addr_info[] | select(.scope == "global" and (.dynamic | not)) | "\(.local)/\(.prefixlen)"' | sort
}

PERMANENT_GLOBAL='10.201.0.1/24
10.201.0.2/24
fd00:201::1/64'

# set_netdevs JSON: linux.netDevices = JSON.
set_netdevs() {
	update_config ".linux.netDevices = $1"
}

on_host() {
	ip link show dev "$1" >/dev/null 2>&1
}

not_on_host() {
	! on_host "$1"
}

# ctr_ip ARG...: the host's `ip ARG...` in the network namespace of $ID.
ctr_ip() {
	nsenter --net="/proc/$(state_field "$ID" pid)/ns/net" ip "$@"
}

# intact NAME: NAME is on the host under its own name, up, MTU 1400, and
# with the permanent addresses that `addressed` gave it (the dynamic one
# does not come back after a move: it belonged to where it was got, as a
# DHCP lease would).
intact() {
	local j
	j=$(ip -j addr show dev "$1") || {
		echo "$1 is not on the host" >&2
		return 1
	}
	echo "$j" | jq -e '.[0].flags | index("UP")' >/dev/null || {
		echo "$1 is not up: $j" >&2
		return 1
	}
	[ "$(echo "$j" | jq -r '.[0].mtu')" = 1400 ]
	[ "$(echo "$j" | global_addrs)" = "$PERMANENT_GLOBAL" ] &&
		echo "$j" | jq -e '.[0].addr_info[] | select(.local == "169.254.20.1" and .scope == "link")' >/dev/null || {
		echo "$1 lost addresses: $j" >&2
		return 1
	}
}

# ---- moving in ----

@test "netDevices: a veth end moves in renamed, keeps MAC, MTU and its permanent global addresses, and is up" {
	veth "${P}a"
	addressed "${P}a"
	mac=$(cat "/sys/class/net/${P}a/address")
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	not_on_host "${P}a"
	# seen from inside
	run tern exec "$ID" ls /sys/class/net
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | sort | tr '\n' ' ')" = "ctr0 lo " ]
	run tern exec "$ID" cat /sys/class/net/ctr0/address /sys/class/net/ctr0/mtu /sys/class/net/ctr0/flags
	[ "${lines[0]}" = "$mac" ]
	[ "${lines[1]}" = 1400 ]
	(("${lines[2]}" & 1)) # IFF_UP
	# the spec's addresses: permanent and global; not the link-scope one,
	# not the dynamic one
	[ "$(ctr_ip -j addr show dev ctr0 | global_addrs)" = "$PERMANENT_GLOBAL" ]
	! ctr_ip addr show dev ctr0 | grep -e 169.254.20.1 -e 10.202.0.1
	# delete leaves it to the kernel, which destroys a veth with the
	# namespace, and its peer with it: nothing of tern's holds it
	tern delete --force "$ID"
	wait_until 10 not_on_host "${P}ap"
	not_on_host "${P}a"
	check_nothing_left "$ID"
}

@test "netDevices: without a name the device keeps its host name; a \"%d\" name is numbered by the kernel" {
	veth "${P}a"
	veth "${P}b"
	veth "${P}c"
	set_netdevs "{\"${P}a\": {}, \"${P}b\": {\"name\": \"eth%d\"}, \"${P}c\": {\"name\": \"eth%d\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	run tern exec "$ID" ls /sys/class/net
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | sort)" = "$(printf '%s\n' eth0 eth1 lo "${P}a" | sort)" ]
	for d in eth0 eth1 "${P}a"; do
		run tern exec "$ID" cat "/sys/class/net/$d/flags"
		(("$output" & 1))
	done
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "netDevices: in place, up, before the createRuntime hooks" {
	veth "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	# a createRuntime hook runs on the host: it looks into the container's
	# namespace through the pid of the state on its stdin
	out=$BATS_TEST_TMPDIR/hook.out
	update_config ".hooks.createRuntime = [{\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"nsenter --net=/proc/\$(jq -r .pid)/ns/net ip -o link show ctr0 >$out\"]}]"
	tern create -b "$BUNDLE" "$ID"
	grep -q 'ctr0.*[<,]UP[,>]' "$out"
	tern delete "$ID"
	check_nothing_left "$ID"
}

@test "netDevices: in place before linux.sysctl applies (no hooks)" {
	veth "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	update_config '.linux.sysctl = {"net.ipv4.conf.ctr0.forwarding": "1", "net.ipv6.conf.ctr0.mtu": "1300"}'
	tern run -d -b "$BUNDLE" "$ID"
	run tern exec "$ID" cat /proc/sys/net/ipv4/conf/ctr0/forwarding /proc/sys/net/ipv6/conf/ctr0/mtu
	[ "${lines[0]}" = 1 ]
	[ "${lines[1]}" = 1300 ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "netDevices: into a network namespace that the container's user namespace owns" {
	add_namespace user
	update_config '.linux.uidMappings = [{"containerID": 0, "hostID": 100000, "size": 65536}]
		| .linux.gidMappings = .linux.uidMappings'
	chown -R 100000:100000 "$BUNDLE/rootfs"
	make_traversable "$BUNDLE"
	veth "${P}a"
	addressed "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	run tern exec "$ID" cat /sys/class/net/ctr0/flags
	[ "$status" -eq 0 ]
	(("$output" & 1))
	[ "$(ctr_ip -j addr show dev ctr0 | global_addrs)" = "$PERMANENT_GLOBAL" ]
	tern delete --force "$ID"
	wait_until 10 not_on_host "${P}ap"
	check_nothing_left "$ID"
}

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

@test "netDevices: when the init dies the namespace goes, with the devices; delete is clean" {
	veth "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	tern kill "$ID" KILL
	wait_status "$ID" stopped
	# nothing of tern's keeps the namespace: the kernel destroys the veth
	# (and its peer) as soon as the init is gone
	wait_until 10 not_on_host "${P}ap"
	tern delete "$ID"
	not_on_host "${P}a"
	check_nothing_left "$ID"
}

@test "netDevices: a foreground run: once the process exits, the namespace goes with the devices" {
	veth "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	set_cmd 'cat /sys/class/net/ctr0/flags'
	run tern run -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ]
	(("$output" & 1))
	wait_until 10 not_on_host "${P}ap"
	check_nothing_left "$ID"
}

@test "netDevices: into a namespace joined by path; delete leaves them there (runtime-spec)" {
	NETNS=$P
	ip netns add "$NETNS"
	add_namespace network "/run/netns/$NETNS"
	veth "${P}a"
	addressed "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	[ "$(ip netns exec "$NETNS" ip -j addr show dev ctr0 | global_addrs)" = "$PERMANENT_GLOBAL" ]
	tern delete --force "$ID"
	# the runtime MUST NOT move it out: the namespace's owner decides
	ip netns exec "$NETNS" ip -j link show dev ctr0 | jq -e '.[0].flags | index("UP")'
	not_on_host "${P}a"
	check_nothing_left "$ID"
}

@test "netDevices: features says so" {
	run "$TERN_BIN" features
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.linux.netDevices.enabled == true'
}

# ---- refused before anything exists ----

@test "netDevices: a host device that does not exist is refused" {
	set_netdevs "{\"${P}x\": {}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}x\"]: no such network device on the host"
}

@test "netDevices: a container without a network namespace of its own is refused" {
	veth "${P}a"
	addressed "${P}a"
	set_netdevs "{\"${P}a\": {}}"
	remove_namespace network
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices" "network namespace of its own" "no \"network\" entry"
	intact "${P}a"
	# joining tern's own by path is no better
	add_namespace network "/proc/$$/ns/net"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices" "/proc/$$/ns/net" "is tern's own"
	intact "${P}a"
}

@test "netDevices: a name that no device can have is refused, the field named" {
	veth "${P}a"
	addressed "${P}a"
	for name in a/b a:b "a b" $'a\tb' . .. "" abcdefghijklmnop "a%s" "a%d%d" "a%"; do
		set_netdevs "{\"${P}a\": {\"name\": $(jq -n --arg n "$name" '$n')}}"
		run tern create -b "$BUNDLE" "$ID"
		check_fails_cleanly "linux.netDevices[\"${P}a\"].name" "not a network device name"
		intact "${P}a"
	done
	# and a host name that no device has
	set_netdevs '{"a%d": {}}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly 'linux.netDevices["a%d"]: not a network device name'
}

@test "netDevices: two devices named alike inside, or one device twice, are refused" {
	veth "${P}a"
	veth "${P}b"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}, \"${P}b\": {\"name\": \"ctr0\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}a\"] and [\"${P}b\"]: both would be \`ctr0\`"
	# one keeps its host name, which the other asks for
	set_netdevs "{\"${P}a\": {}, \"${P}b\": {\"name\": \"${P}a\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "both would be \`${P}a\`"
	# the same device under its name and an alternative name
	ip link property add dev "${P}a" altname "${P}alt"
	set_netdevs "{\"${P}a\": {\"name\": \"x0\"}, \"${P}alt\": {\"name\": \"x1\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}a\"] and [\"${P}alt\"]: the same host device"
	on_host "${P}a"
	on_host "${P}b"
}

@test "netDevices: a name taken in the container's namespace is refused" {
	veth "${P}a"
	addressed "${P}a"
	# a new namespace has its loopback
	set_netdevs "{\"${P}a\": {\"name\": \"lo\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}a\"]" "named \`lo\` already"
	intact "${P}a"
	# the host's loopback cannot leave
	set_netdevs '{"lo": {"name": "lo0"}}'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly 'linux.netDevices["lo"]: the loopback device cannot leave'
	# a joined namespace with a device of that name
	NETNS=$P
	ip netns add "$NETNS"
	ip netns exec "$NETNS" ip link add taken0 type veth peer name taken1
	add_namespace network "/run/netns/$NETNS"
	set_netdevs "{\"${P}a\": {\"name\": \"taken0\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}a\"]" "/run/netns/$NETNS" "has a device named \`taken0\` already"
	intact "${P}a"
}

# ---- a create that fails puts them back ----

@test "netDevices: a device that cannot move half-way: those moved go back as they were" {
	veth "${P}a"
	addressed "${P}a"
	# a bridge never leaves its namespace (the kernel's netns-local)
	HOST_DEVS+=("${P}br")
	ip link add "${P}br" type bridge
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}, \"${P}br\": {\"name\": \"ctr1\"}}"
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices[\"${P}br\"]" "move it into the container's network namespace as \`ctr1\`"
	intact "${P}a"
	on_host "${P}ap"
	on_host "${P}br"
}

@test "netDevices: a create that fails after the move (a createRuntime hook) puts them back" {
	veth "${P}a"
	addressed "${P}a"
	veth "${P}b"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}, \"${P}b\": {\"name\": \"eth%d\"}}"
	update_config '.hooks.createRuntime = [{"path": "/bin/sh", "args": ["sh", "-c", "exit 3"]}]'
	run tern create -b "$BUNDLE" "$ID"
	check_fails_cleanly "createRuntime hook" "status 3"
	# a veth left to the dying namespace would be gone, with its peer
	intact "${P}a"
	on_host "${P}ap"
	on_host "${P}b"
	not_on_host ctr0
	# the same from a namespace joined by path, which outlives the create
	NETNS=$P
	ip netns add "$NETNS"
	add_namespace network "/run/netns/$NETNS"
	run tern run -d -b "$BUNDLE" "$ID"
	check_fails_cleanly "createRuntime hook" "status 3"
	intact "${P}a"
	on_host "${P}b"
	[ "$(ip netns exec "$NETNS" ls /sys/class/net)" = lo ]
}

# ---- checkpoint and restore ----

@test "netDevices: checkpoint refuses devices moved into the container's own namespace" {
	veth "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	run tern checkpoint --image-path "$IMG" "$ID"
	[ "$status" -ne 0 ]
	output_mentions "cannot checkpoint container \`$ID\`" "linux.netDevices" "joined by path"
	[ "$(state_field "$ID" status)" = running ]
	[ ! -e "$IMG/inventory.img" ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}

@test "netDevices: restore refuses to move devices into a namespace of the container's own" {
	"$CRIU_BIN" --version >/dev/null 2>&1 || skip "!!! NO CRIU AT $CRIU_BIN: see scripts/install-criu.sh !!!"
	veth "${P}a"
	addressed "${P}a"
	tern run -d -b "$BUNDLE" "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	tern delete "$ID"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices" "restore" "joined by path"
	intact "${P}a"
}

@test "netDevices: checkpoint and restore in a namespace joined by path keep the devices" {
	"$CRIU_BIN" --version >/dev/null 2>&1 || skip "!!! NO CRIU AT $CRIU_BIN: see scripts/install-criu.sh !!!"
	NETNS=$P
	ip netns add "$NETNS"
	add_namespace network "/run/netns/$NETNS"
	veth "${P}a"
	addressed "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	tern checkpoint --image-path "$IMG" "$ID"
	tern delete "$ID"
	# still in the namespace, which /run/netns keeps; restore moves nothing
	not_on_host "${P}a"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	[ "$status" -eq 0 ] || {
		echo "$output"
		false
	}
	[ "$(state_field "$ID" status)" = running ]
	[ "$(ctr_ip -j addr show dev ctr0 | global_addrs)" = "$PERMANENT_GLOBAL" ]
	run tern exec "$ID" ls /sys/class/net/ctr0
	[ "$status" -eq 0 ]
	tern delete --force "$ID"
	check_nothing_left "$ID"
}
