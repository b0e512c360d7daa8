/* config.json: the parser (libocispec, with its validation) and the checks
 * tern makes on a parsed config before it creates anything: rlimits,
 * process attributes (scheduler, ioPriority, personality), the schema
 * lines of intelRdt (without resctrl),
 * cgroup resources (both the v1 and the v2 rules), each mount's options,
 * the systemd form of linux.cgroupsPath and the device rules' eBPF
 * program, linux.memoryPolicy and process.execCPUAffinity against this
 * machine's nodes and CPUs (numa.c, which reads sysfs only). Nothing is
 * applied. Any input must parse or fail with a message, never crash or
 * leak. */
#include "cgroup-systemd.h"
#include "cgroup-v1.h"
#include "cgroup-v2.h"
#include "intel-rdt.h"
#include "mounts.h"
#include "numa.h"
#include "oci-config.h"
#include "proc-attrs.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oci_config *config = NULL;
	tern_error *err = NULL;
	char *msg = NULL;

	if (oci_config_parse_data((const char *)data, size, "config.json", &config, &msg) < 0) {
		if (msg == NULL)
			abort(); /* a failure always says why */
		free(msg);
		return 0;
	}
	if (config->process) {
		tern_rlimits_check(config->process->rlimits, config->process->rlimits_len, &err);
		tern_error_freep(&err);
	}
	tern_proc_attrs_check(config, &err);
	tern_error_freep(&err);
	if (config->linux_ && config->linux_->intel_rdt) {
		tern_rdt_check_config(config->linux_->intel_rdt, &err);
		tern_error_freep(&err);
	}
	{
		tern_mempolicy mp;
		tern_cpu_affinity aff;
		tern_mempolicy_prepare(config, NULL, &mp, &err);
		tern_error_freep(&err);
		tern_mempolicy_clear(&mp);
		tern_cpu_affinity_prepare(
		    config->process ? config->process->exec_cpu_affinity : NULL, NULL, &aff, &err);
		tern_error_freep(&err);
		tern_cpu_affinity_clear(&aff);
	}
	for (size_t i = 0; i < config->mounts_len; i++) {
		tern_mount_options o = {0};
		tern_mount_options_parse(config->mounts[i].options, &o, &err);
		tern_error_freep(&err);
		tern_mount_options_clear(&o);
	}
	if (config->linux_) {
		const oci_resources *r = config->linux_->resources;
		tern_systemd_unit u = {0};
		tern_systemd_unit_parse(config->linux_->cgroups_path, "fuzz", &u, &err);
		tern_error_freep(&err);
		tern_systemd_unit_clear(&u);
		if (r) {
			size_t len;
			tern_cgroup_v1_validate(r, &err);
			tern_error_freep(&err);
			tern_cgroup_v2_validate(r, &err);
			tern_error_freep(&err);
			tern_cgroup_v2_devices_program_len(r->devices, r->devices_len, &len, &err);
			tern_error_freep(&err);
		}
	}
	oci_config_free(config);
	return 0;
}
