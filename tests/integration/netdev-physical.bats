#!/usr/bin/env bats
# linux.netDevices with a physical device. tern never moves a device out of
# the container's namespace (runtime-spec 1.3: the runtime MUST NOT); when
# a namespace tern made goes with the container, the kernel gives a
# physical device back to the host's namespace (a virtual one is destroyed:
# netdev.bats). This checks that a user gets the NIC back after delete.
#
# A host's NICs are its network: this file takes only the NIC it is handed,
# by MAC address in TERN_TEST_SPARE_NIC_MAC. scripts/test.sh hands it the
# spare virtio NIC of the cgroup v2 qemu guest (run-in-guest.sh with
# TERN_VM_SPARE_NIC); without one it skips, loudly.

# Every test here also runs on pure cgroup v2 in scripts/test.sh's qemu
# guests (they run the tests tagged vm:v2).
# bats file_tags=vm:v2

load netdev-helpers

# nic_by_mac MAC: the name of the host's network device with address MAC.
nic_by_mac() {
	local d
	for d in /sys/class/net/*; do
		if [ "$(cat "$d/address" 2>/dev/null)" = "$1" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

# teardown: the helpers', and the spare NIC under its own name again
teardown() {
	teardown_bundle
	local now
	if [ -n "${NIC:-}" ] && now=$(nic_by_mac "$TERN_TEST_SPARE_NIC_MAC") && [ "$now" != "$NIC" ]; then
		ip link set "$now" name "$NIC"
	fi
	return 0
}

@test "netDevices: a physical NIC moves in renamed, and is back on the host once the container is deleted" {
	if [ -z "${TERN_TEST_SPARE_NIC_MAC:-}" ]; then
		skip "!!! NO SPARE NIC HANDED TO THIS TEST (TERN_TEST_SPARE_NIC_MAC): it runs in the qemu guest, see scripts/test.sh !!!"
	fi
	# no udev in the guest to load the driver of the NIC qemu plugged in
	modprobe virtio_net 2>/dev/null || true
	wait_until 30 nic_by_mac "$TERN_TEST_SPARE_NIC_MAC"
	NIC=$(nic_by_mac "$TERN_TEST_SPARE_NIC_MAC")
	# physical: a device of a bus, not one made with `ip link add`
	[ -e "/sys/class/net/$NIC/device" ]
	ip link set "$NIC" up
	set_netdevs "{\"$NIC\": {\"name\": \"phys0\"}}"
	tern run -d -b "$BUNDLE" "$ID"
	not_on_host "$NIC"
	run tern exec "$ID" cat /sys/class/net/phys0/address /sys/class/net/phys0/flags
	[ "${lines[0]}" = "$TERN_TEST_SPARE_NIC_MAC" ]
	(("${lines[1]}" & 1)) # up inside, as it was on the host
	tern delete --force "$ID"
	# the kernel's clean-up of the namespace runs after the last process
	# is gone: wait for the NIC to show up on the host again
	wait_until 30 nic_by_mac "$TERN_TEST_SPARE_NIC_MAC"
	echo "back on the host as $(nic_by_mac "$TERN_TEST_SPARE_NIC_MAC")"
	check_nothing_left "$ID"
}
