/* Cgroup values: the resources object of `tern update --resources FILE`
 * (and of config.json's linux.resources) through its parser, then tern's
 * checks of every value for cgroup v1 and for v2, the device rules'
 * eBPF program, and the v2 value conversions (cpu.max, memory.swap.max,
 * io.max, weights). Nothing is written to a cgroup. */
#include "cgroup-v1.h"
#include "cgroup-v2.h"
#include "oci-config.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oci_resources *r = NULL;
	tern_error *err = NULL;
	char *msg = NULL;
	size_t len;

	if (oci_resources_parse_data((const char *)data, size, "resources.json", &r, &msg) < 0) {
		if (msg == NULL)
			abort();
		free(msg);
		return 0;
	}
	tern_cgroup_v1_validate(r, &err);
	tern_error_freep(&err);
	tern_cgroup_v2_validate(r, &err);
	tern_error_freep(&err);
	tern_cgroup_v2_devices_program_len(r->devices, r->devices_len, &len, &err);
	tern_error_freep(&err);
	if (r->cpu) {
		int64_t quota = r->cpu->quota.set ? r->cpu->quota.value : -1;
		uint64_t period = r->cpu->period.set ? r->cpu->period.value : 100000;
		free(tern_cgroup_v2_cpu_max_value(quota, period));
		if (r->cpu->shares.set)
			tern_cgroup_v2_shares_to_weight(r->cpu->shares.value);
	}
	if (r->memory && r->memory->swap.set) {
		int64_t out;
		tern_cgroup_v2_swap_max(r->memory->limit.set, r->memory->limit.value,
					r->memory->swap.value, &out);
	}
	if (r->block_io) {
		if (r->block_io->weight.set)
			tern_cgroup_v2_blkio_to_io_weight(r->block_io->weight.value);
		for (size_t i = 0; i < r->block_io->throttle_read_bps_device_len; i++) {
			const oci_blkio_throttle_device *d =
			    &r->block_io->throttle_read_bps_device[i];
			const bool set[4] = {true, false, false, false};
			const uint64_t rate[4] = {d->rate, 0, 0, 0};
			free(tern_cgroup_v2_io_max_line(d->major, d->minor, set, rate));
		}
	}
	oci_resources_free(r);
	return 0;
}
