# Shared by netdev.bats and netdev-dummy.bats: each test's bundle, its
# unique device-name prefix $P, the host devices it made (deleted in
# teardown whatever happened), and checks of a device's addresses.
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
