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
# lets leave its namespace); dummy devices in netdev-dummy.bats. Device
# names are unique per test and per run; teardown deletes them whatever
# happened (netdev-helpers.bash).

load netdev-helpers

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

# run_in_path_netns: $ID runs in the network namespace /run/netns/$P
# (teardown removes it), with the veth end ${P}a moved in as ctr0.
run_in_path_netns() {
	NETNS=$P
	ip netns add "$NETNS"
	add_namespace network "/run/netns/$NETNS"
	veth "${P}a"
	addressed "${P}a"
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
}

@test "netDevices: into a namespace joined by path; delete leaves them there (runtime-spec)" {
	run_in_path_netns
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
	set_netdevs "{\"${P}a\": {\"name\": \"ctr0\"}}"
	run tern restore -d --image-path "$IMG" -b "$BUNDLE" "$ID"
	check_fails_cleanly "linux.netDevices" "restore" "joined by path"
	intact "${P}a"
}

@test "netDevices: checkpoint and restore in a namespace joined by path keep the devices" {
	"$CRIU_BIN" --version >/dev/null 2>&1 || skip "!!! NO CRIU AT $CRIU_BIN: see scripts/install-criu.sh !!!"
	run_in_path_netns
	tern checkpoint --image-path "$IMG" "$ID"
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
