/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.json: the field tables that map runtime-spec 1.3 (config.md,
 * config-linux.md) onto oci-config.h, then the semantic checks.
 *
 * Windows, Solaris, VM and z/OS sections, and Windows-only fields such as
 * process.user.username or process.commandLine, are ignored like any other
 * unknown field. */
#include "oci-config.h"
#include "oci-json.h"
#include "oci-state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- process ---- */

/* consoleSize is flattened into oci_process, so its rows are relative to
 * oci_process and the table is used inline at offset 0. */
static const ojson_field console_size_fields[] = {
    OJF_OU64("height", oci_process, console_height, UINT32_MAX),
    OJF_OU64("width", oci_process, console_width, UINT32_MAX),
    OJF_END,
};

static const ojson_field user_fields[] = {
    OJF_U32("uid", oci_user, uid),
    OJF_U32("gid", oci_user, gid),
    OJF_OU64("umask", oci_user, umask, UINT32_MAX),
    {OJF("additionalGids", OJ_U32_ARRAY, oci_user, additional_gids),
     .len_offset = offsetof(oci_user, additional_gids_len)},
    OJF_END,
};

static const ojson_field capabilities_fields[] = {
    OJF_STRV("bounding", oci_capabilities, bounding),
    OJF_STRV("effective", oci_capabilities, effective),
    OJF_STRV("inheritable", oci_capabilities, inheritable),
    OJF_STRV("permitted", oci_capabilities, permitted),
    OJF_STRV("ambient", oci_capabilities, ambient),
    OJF_END,
};

static const ojson_field rlimit_fields[] = {
    OJF_STR("type", oci_rlimit, type),
    /* Both REQUIRED (config.md): a missing soft limit read as 0 would
     * leave RLIMIT_NOFILE no fd at all. */
    {OJF("hard", OJ_U64, oci_rlimit, hard), .required = true},
    {OJF("soft", OJ_U64, oci_rlimit, soft), .required = true},
    OJF_END,
};

static const ojson_field scheduler_fields[] = {
    OJF_STR("policy", oci_scheduler, policy),
    OJF_OI64("nice", oci_scheduler, nice, INT32_MIN, INT32_MAX),
    OJF_OI64("priority", oci_scheduler, priority, INT32_MIN, INT32_MAX),
    OJF_STRV("flags", oci_scheduler, flags),
    OJF_OU64("runtime", oci_scheduler, runtime, 0),
    OJF_OU64("deadline", oci_scheduler, deadline, 0),
    OJF_OU64("period", oci_scheduler, period, 0),
    OJF_END,
};

static const ojson_field io_priority_fields[] = {
    OJF_STR("class", oci_io_priority, class_),
    OJF_I64("priority", oci_io_priority, priority),
    OJF_END,
};

static const ojson_field exec_cpu_affinity_fields[] = {
    OJF_STR("initial", oci_exec_cpu_affinity, initial),
    OJF_STR("final", oci_exec_cpu_affinity, final),
    OJF_END,
};

static const ojson_field process_fields[] = {
    OJF_BOOL("terminal", oci_process, terminal),
    OJF_FLAT("consoleSize", console_size_fields),
    OJF_INLINE("user", oci_process, user, user_fields),
    {OJF("args", OJ_STRV, oci_process, args), .nonempty = true},
    OJF_STRV("env", oci_process, env),
    OJF_STR("cwd", oci_process, cwd),
    OJF_OBJECT("capabilities", oci_process, capabilities, oci_capabilities, capabilities_fields),
    OJF_ARRAY("rlimits", oci_process, rlimits, oci_rlimit, rlimit_fields),
    OJF_BOOL("noNewPrivileges", oci_process, no_new_privileges),
    OJF_STR("apparmorProfile", oci_process, apparmor_profile),
    /* The kernel's range for /proc/PID/oom_score_adj. */
    OJF_OI64("oomScoreAdj", oci_process, oom_score_adj, -1000, 1000),
    OJF_STR("selinuxLabel", oci_process, selinux_label),
    OJF_OBJECT("scheduler", oci_process, scheduler, oci_scheduler, scheduler_fields),
    OJF_OBJECT("ioPriority", oci_process, io_priority, oci_io_priority, io_priority_fields),
    OJF_OBJECT("execCPUAffinity", oci_process, exec_cpu_affinity, oci_exec_cpu_affinity,
	       exec_cpu_affinity_fields),
    OJF_END,
};

/* ---- root, mounts, hooks ---- */

static const ojson_field root_fields[] = {
    OJF_STR("path", oci_root, path),
    OJF_BOOL("readonly", oci_root, readonly),
    OJF_END,
};

static const ojson_field id_mapping_fields[] = {
    OJF_U32("containerID", oci_id_mapping, container_id),
    OJF_U32("hostID", oci_id_mapping, host_id),
    OJF_U32("size", oci_id_mapping, size),
    OJF_END,
};

static const ojson_field mount_fields[] = {
    OJF_STR("destination", oci_mount, destination),
    OJF_STR("type", oci_mount, type),
    OJF_STR("source", oci_mount, source),
    OJF_STRV("options", oci_mount, options),
    OJF_ARRAY("uidMappings", oci_mount, uid_mappings, oci_id_mapping, id_mapping_fields),
    OJF_ARRAY("gidMappings", oci_mount, gid_mappings, oci_id_mapping, id_mapping_fields),
    OJF_END,
};

static const ojson_field hook_fields[] = {
    OJF_STR("path", oci_hook, path),
    OJF_STRV("args", oci_hook, args),
    OJF_STRV("env", oci_hook, env),
    OJF_OI64("timeout", oci_hook, timeout, INT32_MIN, INT32_MAX),
    OJF_END,
};

#define HOOK_LIST(k, m)                                                                            \
	{                                                                                          \
		OJF(k, OJ_ARRAY, oci_hooks, m.items), .len_offset = offsetof(oci_hooks, m.len),    \
						      .size = sizeof(oci_hook), .sub = hook_fields \
	}

static const ojson_field hooks_fields[] = {
    HOOK_LIST("prestart", prestart),
    HOOK_LIST("createRuntime", create_runtime),
    HOOK_LIST("createContainer", create_container),
    HOOK_LIST("startContainer", start_container),
    HOOK_LIST("poststart", poststart),
    HOOK_LIST("poststop", poststop),
    OJF_END,
};

/* ---- linux.resources ---- */

static const ojson_field device_rule_fields[] = {
    OJF_BOOL("allow", oci_device_cgroup_rule, allow),
    OJF_STR("type", oci_device_cgroup_rule, type),
    OJF_OI64("major", oci_device_cgroup_rule, major, 0, 0),
    OJF_OI64("minor", oci_device_cgroup_rule, minor, 0, 0),
    OJF_STR("access", oci_device_cgroup_rule, access),
    OJF_END,
};

static const ojson_field memory_fields[] = {
    OJF_OI64("limit", oci_memory, limit, 0, 0),
    OJF_OI64("reservation", oci_memory, reservation, 0, 0),
    OJF_OI64("swap", oci_memory, swap, 0, 0),
    OJF_OI64("kernel", oci_memory, kernel, 0, 0),
    OJF_OI64("kernelTCP", oci_memory, kernel_tcp, 0, 0),
    OJF_OU64("swappiness", oci_memory, swappiness, 0),
    OJF_OBOOL("disableOOMKiller", oci_memory, disable_oom_killer),
    OJF_OBOOL("useHierarchy", oci_memory, use_hierarchy),
    OJF_OBOOL("checkBeforeUpdate", oci_memory, check_before_update),
    OJF_END,
};

static const ojson_field cpu_fields[] = {
    OJF_OU64("shares", oci_cpu, shares, 0),
    OJF_OI64("quota", oci_cpu, quota, 0, 0),
    OJF_OU64("burst", oci_cpu, burst, 0),
    OJF_OU64("period", oci_cpu, period, 0),
    OJF_OI64("realtimeRuntime", oci_cpu, realtime_runtime, 0, 0),
    OJF_OU64("realtimePeriod", oci_cpu, realtime_period, 0),
    OJF_STR("cpus", oci_cpu, cpus),
    OJF_STR("mems", oci_cpu, mems),
    OJF_OI64("idle", oci_cpu, idle, 0, 0),
    OJF_END,
};

/* pids.limit is flattened into oci_resources (used inline at offset 0). */
static const ojson_field pids_fields[] = {
    OJF_OI64("limit", oci_resources, pids_limit, 0, 0),
    OJF_END,
};

static const ojson_field weight_device_fields[] = {
    OJF_I64("major", oci_blkio_weight_device, major),
    OJF_I64("minor", oci_blkio_weight_device, minor),
    OJF_OU64("weight", oci_blkio_weight_device, weight, UINT16_MAX),
    OJF_OU64("leafWeight", oci_blkio_weight_device, leaf_weight, UINT16_MAX),
    OJF_END,
};

static const ojson_field throttle_device_fields[] = {
    OJF_I64("major", oci_blkio_throttle_device, major),
    OJF_I64("minor", oci_blkio_throttle_device, minor),
    OJF_U64("rate", oci_blkio_throttle_device, rate),
    OJF_END,
};

static const ojson_field blkio_fields[] = {
    OJF_OU64("weight", oci_blkio, weight, UINT16_MAX),
    OJF_OU64("leafWeight", oci_blkio, leaf_weight, UINT16_MAX),
    OJF_ARRAY("weightDevice", oci_blkio, weight_device, oci_blkio_weight_device,
	      weight_device_fields),
    OJF_ARRAY("throttleReadBpsDevice", oci_blkio, throttle_read_bps_device,
	      oci_blkio_throttle_device, throttle_device_fields),
    OJF_ARRAY("throttleWriteBpsDevice", oci_blkio, throttle_write_bps_device,
	      oci_blkio_throttle_device, throttle_device_fields),
    OJF_ARRAY("throttleReadIOPSDevice", oci_blkio, throttle_read_iops_device,
	      oci_blkio_throttle_device, throttle_device_fields),
    OJF_ARRAY("throttleWriteIOPSDevice", oci_blkio, throttle_write_iops_device,
	      oci_blkio_throttle_device, throttle_device_fields),
    OJF_END,
};

static const ojson_field hugepage_fields[] = {
    OJF_STR("pageSize", oci_hugepage_limit, page_size),
    OJF_U64("limit", oci_hugepage_limit, limit),
    OJF_END,
};

static const ojson_field net_priority_fields[] = {
    OJF_STR("name", oci_net_priority, name),
    OJF_U32("priority", oci_net_priority, priority),
    OJF_END,
};

static const ojson_field network_fields[] = {
    OJF_OU64("classID", oci_network, class_id, UINT32_MAX),
    OJF_ARRAY("priorities", oci_network, priorities, oci_net_priority, net_priority_fields),
    OJF_END,
};

static const ojson_field rdma_fields[] = {
    OJF_OU64("hcaHandles", oci_rdma, hca_handles, UINT32_MAX),
    OJF_OU64("hcaObjects", oci_rdma, hca_objects, UINT32_MAX),
    OJF_END,
};

static const ojson_field resources_fields[] = {
    OJF_ARRAY("devices", oci_resources, devices, oci_device_cgroup_rule, device_rule_fields),
    OJF_OBJECT("memory", oci_resources, memory, oci_memory, memory_fields),
    OJF_OBJECT("cpu", oci_resources, cpu, oci_cpu, cpu_fields),
    OJF_FLAT("pids", pids_fields),
    OJF_OBJECT("blockIO", oci_resources, block_io, oci_blkio, blkio_fields),
    OJF_ARRAY("hugepageLimits", oci_resources, hugepage_limits, oci_hugepage_limit,
	      hugepage_fields),
    OJF_OBJECT("network", oci_resources, network, oci_network, network_fields),
    OJF_KEYED("rdma", oci_resources, rdma, oci_rdma, rdma_fields, name),
    OJF_MAP("unified", oci_resources, unified),
    OJF_END,
};

/* ---- the rest of linux ---- */

static int parse_namespace_type(ojson_ctx *c, yajl_val v, const ojson_path *p, void *field)
{
	int type;

	if (!YAJL_IS_STRING(v))
		return ojson_fail(c, p, "expected a string");
	type = oci_namespace_type_from_name(v->u.string);
	if (type < 0)
		return ojson_fail(c, p, "unknown namespace type \"%s\"", v->u.string);
	*(oci_namespace_type *)field = type;
	return 0;
}

static const ojson_field namespace_fields[] = {
    /* Required: a missing type must not default to the first enum value. */
    {OJF("type", OJ_CUSTOM, oci_namespace, type), .parse = parse_namespace_type, .required = true},
    OJF_STR("path", oci_namespace, path),
    OJF_END,
};

static const ojson_field time_offset_fields[] = {
    OJF_OI64("secs", oci_time_offset, secs, 0, 0),
    OJF_OU64("nanosecs", oci_time_offset, nanosecs, UINT32_MAX),
    OJF_END,
};

/* Inline at offset 0 of oci_linux. */
static const ojson_field time_offsets_fields[] = {
    OJF_INLINE("monotonic", oci_linux, time_offset_monotonic, time_offset_fields),
    OJF_INLINE("boottime", oci_linux, time_offset_boottime, time_offset_fields),
    OJF_END,
};

static const ojson_field device_fields[] = {
    OJF_STR("type", oci_device, type),
    OJF_STR("path", oci_device, path),
    OJF_OI64("major", oci_device, major, 0, 0),
    OJF_OI64("minor", oci_device, minor, 0, 0),
    OJF_OU64("fileMode", oci_device, file_mode, UINT32_MAX),
    OJF_OU64("uid", oci_device, uid, UINT32_MAX),
    OJF_OU64("gid", oci_device, gid, UINT32_MAX),
    OJF_END,
};

static const ojson_field seccomp_arg_fields[] = {
    OJF_U32("index", oci_seccomp_arg, index),
    OJF_U64("value", oci_seccomp_arg, value),
    OJF_OU64("valueTwo", oci_seccomp_arg, value_two, 0),
    OJF_STR("op", oci_seccomp_arg, op),
    OJF_END,
};

static const ojson_field seccomp_syscall_fields[] = {
    OJF_STRV("names", oci_seccomp_syscall, names),
    OJF_STR("action", oci_seccomp_syscall, action),
    OJF_OU64("errnoRet", oci_seccomp_syscall, errno_ret, UINT32_MAX),
    OJF_ARRAY("args", oci_seccomp_syscall, args, oci_seccomp_arg, seccomp_arg_fields),
    OJF_END,
};

static const ojson_field seccomp_fields[] = {
    OJF_STR("defaultAction", oci_seccomp, default_action),
    OJF_OU64("defaultErrnoRet", oci_seccomp, default_errno_ret, UINT32_MAX),
    OJF_STRV("architectures", oci_seccomp, architectures),
    OJF_STRV("flags", oci_seccomp, flags),
    OJF_STR("listenerPath", oci_seccomp, listener_path),
    OJF_STR("listenerMetadata", oci_seccomp, listener_metadata),
    OJF_ARRAY("syscalls", oci_seccomp, syscalls, oci_seccomp_syscall, seccomp_syscall_fields),
    OJF_END,
};

static const ojson_field personality_fields[] = {
    OJF_STR("domain", oci_personality, domain),
    OJF_STRV("flags", oci_personality, flags),
    OJF_END,
};

static const ojson_field intel_rdt_fields[] = {
    OJF_STR("closID", oci_intel_rdt, clos_id),
    OJF_STR("l3CacheSchema", oci_intel_rdt, l3_cache_schema),
    OJF_STR("memBwSchema", oci_intel_rdt, mem_bw_schema),
    OJF_STRV("schemata", oci_intel_rdt, schemata),
    OJF_OBOOL("enableMonitoring", oci_intel_rdt, enable_monitoring),
    OJF_OBOOL("enableCMT", oci_intel_rdt, enable_cmt),
    OJF_OBOOL("enableMBM", oci_intel_rdt, enable_mbm),
    OJF_END,
};

/* linux.memoryPolicy: the names, in the spec's order (config-linux.md). */
static const char *const mpol_mode_names[OCI_MPOL_MODE_COUNT] = {
    [OCI_MPOL_DEFAULT] = "MPOL_DEFAULT",
    [OCI_MPOL_BIND] = "MPOL_BIND",
    [OCI_MPOL_INTERLEAVE] = "MPOL_INTERLEAVE",
    [OCI_MPOL_WEIGHTED_INTERLEAVE] = "MPOL_WEIGHTED_INTERLEAVE",
    [OCI_MPOL_PREFERRED] = "MPOL_PREFERRED",
    [OCI_MPOL_PREFERRED_MANY] = "MPOL_PREFERRED_MANY",
    [OCI_MPOL_LOCAL] = "MPOL_LOCAL",
};

static const char *const mpol_flag_names[OCI_MPOL_FLAG_COUNT] = {
    [OCI_MPOL_F_NUMA_BALANCING] = "MPOL_F_NUMA_BALANCING",
    [OCI_MPOL_F_RELATIVE_NODES] = "MPOL_F_RELATIVE_NODES",
    [OCI_MPOL_F_STATIC_NODES] = "MPOL_F_STATIC_NODES",
};

/* "A, B or C", malloc'd, for the messages that list the known names. */
static char *join_names(const char *const *names, size_t n)
{
	size_t len = 1;
	char *out;

	for (size_t i = 0; i < n; i++)
		len += strlen(names[i]) + 4;
	out = ojson_xmalloc0(len);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			strcat(out, i + 1 == n ? " or " : ", ");
		strcat(out, names[i]);
	}
	return out;
}

static int name_index(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

static int parse_mpol_mode(ojson_ctx *c, yajl_val v, const ojson_path *p, void *field)
{
	int mode;

	if (!YAJL_IS_STRING(v))
		return ojson_fail(c, p, "expected a string");
	mode = name_index(v->u.string, mpol_mode_names, OCI_MPOL_MODE_COUNT);
	if (mode < 0) {
		char *known = join_names(mpol_mode_names, OCI_MPOL_MODE_COUNT);
		int ret =
		    ojson_fail(c, p, "unknown mode \"%s\" (the modes are %s)", v->u.string, known);
		free(known);
		return ret;
	}
	*(oci_mpol_mode *)field = (oci_mpol_mode)mode;
	return 0;
}

/* flags: an array of flag names, kept as a bit set; a flag given twice is
 * refused as the typo it most likely is. */
static int parse_mpol_flags(ojson_ctx *c, yajl_val v, const ojson_path *p, void *field)
{
	unsigned *flags = field;

	if (!YAJL_IS_ARRAY(v))
		return ojson_fail(c, p, "expected an array of strings");
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val s = v->u.array.values[i];
		ojson_path ip = {p, NULL, i};
		int f;

		if (!YAJL_IS_STRING(s))
			return ojson_fail(c, &ip, "expected a string");
		f = name_index(s->u.string, mpol_flag_names, OCI_MPOL_FLAG_COUNT);
		if (f < 0) {
			char *known = join_names(mpol_flag_names, OCI_MPOL_FLAG_COUNT);
			int ret = ojson_fail(c, &ip, "unknown flag \"%s\" (the flags are %s)",
					     s->u.string, known);
			free(known);
			return ret;
		}
		if (*flags & (1u << f))
			return ojson_fail(c, &ip, "%s is given twice", mpol_flag_names[f]);
		*flags |= 1u << f;
	}
	return 0;
}

static const ojson_field memory_policy_fields[] = {
    {OJF("mode", OJ_CUSTOM, oci_memory_policy, mode), .parse = parse_mpol_mode, .required = true},
    OJF_STR("nodes", oci_memory_policy, nodes),
    {OJF("flags", OJ_CUSTOM, oci_memory_policy, flags), .parse = parse_mpol_flags},
    OJF_END,
};

static const ojson_field net_device_fields[] = {
    OJF_STR("name", oci_net_device, new_name),
    OJF_END,
};

static const ojson_field linux_fields[] = {
    OJF_ARRAY("namespaces", oci_linux, namespaces, oci_namespace, namespace_fields),
    OJF_ARRAY("uidMappings", oci_linux, uid_mappings, oci_id_mapping, id_mapping_fields),
    OJF_ARRAY("gidMappings", oci_linux, gid_mappings, oci_id_mapping, id_mapping_fields),
    OJF_FLAT("timeOffsets", time_offsets_fields),
    OJF_ARRAY("devices", oci_linux, devices, oci_device, device_fields),
    OJF_STR("cgroupsPath", oci_linux, cgroups_path),
    OJF_OBJECT("resources", oci_linux, resources, oci_resources, resources_fields),
    OJF_STR("rootfsPropagation", oci_linux, rootfs_propagation),
    OJF_STRV("maskedPaths", oci_linux, masked_paths),
    OJF_STRV("readonlyPaths", oci_linux, readonly_paths),
    OJF_STR("mountLabel", oci_linux, mount_label),
    OJF_MAP("sysctl", oci_linux, sysctl),
    OJF_OBJECT("seccomp", oci_linux, seccomp, oci_seccomp, seccomp_fields),
    OJF_OBJECT("personality", oci_linux, personality, oci_personality, personality_fields),
    OJF_OBJECT("intelRdt", oci_linux, intel_rdt, oci_intel_rdt, intel_rdt_fields),
    OJF_KEYED("netDevices", oci_linux, net_devices, oci_net_device, net_device_fields, name),
    OJF_OBJECT("memoryPolicy", oci_linux, memory_policy, oci_memory_policy, memory_policy_fields),
    OJF_END,
};

static const ojson_field config_fields[] = {
    OJF_STR("ociVersion", oci_config, oci_version),
    OJF_OBJECT("process", oci_config, process, oci_process, process_fields),
    OJF_OBJECT("root", oci_config, root, oci_root, root_fields),
    OJF_STR("hostname", oci_config, hostname),
    OJF_STR("domainname", oci_config, domainname),
    OJF_ARRAY("mounts", oci_config, mounts, oci_mount, mount_fields),
    OJF_OBJECT("hooks", oci_config, hooks, oci_hooks, hooks_fields),
    OJF_MAP("annotations", oci_config, annotations),
    OJF_OBJECT("linux", oci_config, linux_, oci_linux, linux_fields),
    OJF_END,
};

/* ---- names ---- */

static const char *const namespace_names[OCI_NS_COUNT] = {
    [OCI_NS_PID] = "pid",	[OCI_NS_NETWORK] = "network", [OCI_NS_MOUNT] = "mount",
    [OCI_NS_IPC] = "ipc",	[OCI_NS_UTS] = "uts",	      [OCI_NS_USER] = "user",
    [OCI_NS_CGROUP] = "cgroup", [OCI_NS_TIME] = "time",
};

const char *oci_namespace_type_name(oci_namespace_type type)
{
	if ((unsigned)type >= OCI_NS_COUNT)
		return NULL;
	return namespace_names[type];
}

int oci_namespace_type_from_name(const char *name)
{
	for (int i = 0; name && i < OCI_NS_COUNT; i++)
		if (strcmp(name, namespace_names[i]) == 0)
			return i;
	return -1;
}

const char *oci_mpol_mode_name(oci_mpol_mode mode)
{
	return (unsigned)mode < OCI_MPOL_MODE_COUNT ? mpol_mode_names[mode] : NULL;
}

const char *oci_mpol_flag_name(oci_mpol_flag flag)
{
	return (unsigned)flag < OCI_MPOL_FLAG_COUNT ? mpol_flag_names[flag] : NULL;
}

/* One decimal number at *p, moving *p past it. */
static int parse_list_id(const char **p, uint32_t *out, const char **why)
{
	const char *q = *p;
	uint32_t v = 0;

	if (*q < '0' || *q > '9') {
		*why = *q ? "expected a number" : "the list ends where a number should be";
		return -EINVAL;
	}
	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (uint32_t)(*q - '0');
		if (v > OCI_ID_LIST_MAX) {
			*why = "a number is above 65535";
			return -EINVAL;
		}
	}
	*p = q;
	*out = v;
	return 0;
}

int oci_id_list_parse(const char *s, oci_id_range **ranges, size_t *n, const char **why)
{
	oci_id_range *r = NULL;
	size_t count = 0;
	const char *p = s;

	*ranges = NULL;
	*n = 0;
	*why = NULL;
	if (*p == '\0')
		return 0;
	for (;;) {
		oci_id_range item;
		oci_id_range *grown;

		if (parse_list_id(&p, &item.first, why) < 0)
			goto bad;
		item.last = item.first;
		if (*p == '-') {
			p++;
			if (parse_list_id(&p, &item.last, why) < 0)
				goto bad;
			if (item.last < item.first) {
				*why = "a range runs backwards";
				goto bad;
			}
		}
		grown = realloc(r, (count + 1) * sizeof(*r));
		if (grown == NULL)
			abort();
		r = grown;
		r[count++] = item;
		if (*p == '\0')
			break;
		if (*p != ',') {
			*why = "expected a comma or a dash after a number";
			goto bad;
		}
		p++;
	}
	*ranges = r;
	*n = count;
	return 0;
bad:
	free(r);
	return -EINVAL;
}

/* The resource names Linux has (getrlimit(2)), spelled as config.json does. */
static const char *const rlimit_names[] = {
    "RLIMIT_AS",     "RLIMIT_CORE",   "RLIMIT_CPU",	   "RLIMIT_DATA",
    "RLIMIT_FSIZE",  "RLIMIT_LOCKS",  "RLIMIT_MEMLOCK",	   "RLIMIT_MSGQUEUE",
    "RLIMIT_NICE",   "RLIMIT_NOFILE", "RLIMIT_NPROC",	   "RLIMIT_RSS",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK",
};

static bool name_in(const char *name, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* ---- validation ---- */

static bool is_absolute(const char *path)
{
	return path != NULL && path[0] == '/';
}

/* "Looks like CAP_*": the prefix and then upper-case letters, digits and
 * underscores. Whether the running kernel knows the capability is for the
 * caps stage to decide (runc warns and skips unknown ones). */
static bool looks_like_capability(const char *name)
{
	if (strncmp(name, "CAP_", 4) != 0 || name[4] == '\0')
		return false;
	for (const char *s = name + 4; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int validate_capabilities(ojson_ctx *c, const oci_capabilities *caps, const ojson_path *p)
{
	struct {
		const char *key;
		char **list;
	} sets[] = {
	    {"bounding", caps->bounding},	{"effective", caps->effective},
	    {"inheritable", caps->inheritable}, {"permitted", caps->permitted},
	    {"ambient", caps->ambient},
	};

	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		ojson_path sp = {p, sets[s].key, 0};
		for (size_t i = 0; sets[s].list && sets[s].list[i]; i++) {
			ojson_path ip = {&sp, NULL, i};
			if (!looks_like_capability(sets[s].list[i]))
				return ojson_fail(c, &ip, "\"%s\" is not a capability name (CAP_*)",
						  sets[s].list[i]);
		}
	}
	return 0;
}

static int validate_rlimits(ojson_ctx *c, const oci_process *process, const ojson_path *p)
{
	ojson_path rp = {p, "rlimits", 0};

	for (size_t i = 0; i < process->rlimits_len; i++) {
		const oci_rlimit *r = &process->rlimits[i];
		ojson_path ip = {&rp, NULL, i};
		ojson_path tp = {&ip, "type", 0};

		if (r->type == NULL)
			return ojson_fail(c, &tp, "is required");
		if (!name_in(r->type, rlimit_names, sizeof(rlimit_names) / sizeof(rlimit_names[0])))
			return ojson_fail(c, &tp, "unknown rlimit \"%s\"", r->type);
		for (size_t j = 0; j < i; j++)
			if (strcmp(process->rlimits[j].type, r->type) == 0)
				return ojson_fail(c, &tp, "duplicate %s (also in rlimits[%zu])",
						  r->type, j);
		if (r->soft > r->hard)
			return ojson_fail(
			    c, &ip, "%s soft limit %" PRIu64 " is above the hard limit %" PRIu64,
			    r->type, r->soft, r->hard);
	}
	return 0;
}

/* A CPU or node list (oci_id_list_parse); NULL (absent) is fine. */
static int validate_id_list(ojson_ctx *c, const char *list, const char *what, const ojson_path *p)
{
	oci_id_range *r = NULL;
	const char *why;
	size_t n;

	if (list == NULL)
		return 0;
	if (oci_id_list_parse(list, &r, &n, &why) < 0)
		return ojson_fail(c, p, "\"%s\" is not a list of %s numbers such as \"0-3,7\": %s",
				  list, what, why);
	free(r);
	return 0;
}

/* A uid or gid within 0..OCI_ID_MAX (see oci-config.h). */
static int validate_id(ojson_ctx *c, uint32_t id, const ojson_path *p)
{
	if (id > OCI_ID_MAX)
		return ojson_fail(c, p, "%u is out of range (0-%u)", id, OCI_ID_MAX);
	return 0;
}

/* process.user: uid, gid and additionalGids[N], each named. */
static int validate_user(ojson_ctx *c, const oci_user *u, const ojson_path *p)
{
	ojson_path up = {p, "uid", 0}, gp = {p, "gid", 0}, ap = {p, "additionalGids", 0};
	int ret;

	ret = validate_id(c, u->uid, &up);
	if (ret < 0)
		return ret;
	ret = validate_id(c, u->gid, &gp);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < u->additional_gids_len; i++) {
		ojson_path ip = {&ap, NULL, i};
		ret = validate_id(c, u->additional_gids[i], &ip);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* process.* checks; `p` is "process" inside config.json, the root for a
 * process.json on its own. */
static int validate_process(ojson_ctx *c, const oci_process *process, const ojson_path *p)
{
	ojson_path args = {p, "args", 0}, cwd = {p, "cwd", 0};
	int ret;

	if (process->args == NULL || process->args[0] == NULL)
		return ojson_fail(c, &args, "expected a non-empty array of strings");
	if (process->args[0][0] == '\0') {
		ojson_path a0 = {&args, NULL, 0};
		return ojson_fail(c, &a0, "the program to run is the empty string");
	}
	if (process->cwd == NULL)
		return ojson_fail(c, &cwd, "is required");
	if (!is_absolute(process->cwd))
		return ojson_fail(c, &cwd, "must be an absolute path");
	{
		ojson_path up = {p, "user", 0};
		ret = validate_user(c, &process->user, &up);
		if (ret < 0)
			return ret;
	}
	for (size_t i = 0; process->env && process->env[i]; i++) {
		/* POSIX environ: NAME=value. An entry without `=` (runc refuses
		 * it too) is no variable to the program, only a typo. */
		ojson_path ep = {p, "env", 0};
		ojson_path ip = {&ep, NULL, i};
		const char *eq = strchr(process->env[i], '=');
		if (eq == NULL || eq == process->env[i])
			return ojson_fail(c, &ip, "`%s` is not NAME=VALUE", process->env[i]);
	}
	if (process->capabilities) {
		ojson_path cp = {p, "capabilities", 0};
		ret = validate_capabilities(c, process->capabilities, &cp);
		if (ret < 0)
			return ret;
	}
	ret = validate_rlimits(c, process, p);
	if (ret < 0)
		return ret;
	if (process->io_priority) {
		static const char *const classes[] = {"IOPRIO_CLASS_RT", "IOPRIO_CLASS_BE",
						      "IOPRIO_CLASS_IDLE"};
		ojson_path io = {p, "ioPriority", 0};
		ojson_path cl = {&io, "class", 0}, pr = {&io, "priority", 0};
		const oci_io_priority *iop = process->io_priority;

		if (iop->class_ == NULL || !name_in(iop->class_, classes, 3))
			return ojson_fail(c, &cl,
					  "must be IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or "
					  "IOPRIO_CLASS_IDLE%s",
					  iop->class_ &&
						  strcmp(iop->class_, "IOPRIO_CLASS_NONE") == 0
					      ? " (the kernel's IOPRIO_CLASS_NONE, its default, is "
						"what leaving ioPriority out gives)"
					      : "");
		/* ioprio_set(2): eight levels, 0 (highest) to 7. */
		if (iop->priority < 0 || iop->priority > 7)
			return ojson_fail(c, &pr, "must be between 0 and 7");
	}
	if (process->exec_cpu_affinity) {
		ojson_path ap = {p, "execCPUAffinity", 0};
		ojson_path ip = {&ap, "initial", 0}, fp = {&ap, "final", 0};
		ret = validate_id_list(c, process->exec_cpu_affinity->initial, "CPU", &ip);
		if (ret < 0)
			return ret;
		ret = validate_id_list(c, process->exec_cpu_affinity->final, "CPU", &fp);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int validate_hooks(ojson_ctx *c, const oci_hooks *hooks, const ojson_path *p)
{
	const struct {
		const char *key;
		const oci_hook_list *list;
	} stages[] = {
	    {"prestart", &hooks->prestart},
	    {"createRuntime", &hooks->create_runtime},
	    {"createContainer", &hooks->create_container},
	    {"startContainer", &hooks->start_container},
	    {"poststart", &hooks->poststart},
	    {"poststop", &hooks->poststop},
	};

	for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
		ojson_path sp = {p, stages[s].key, 0};
		for (size_t i = 0; i < stages[s].list->len; i++) {
			const oci_hook *h = &stages[s].list->items[i];
			ojson_path ip = {&sp, NULL, i};
			ojson_path pp = {&ip, "path", 0}, tp = {&ip, "timeout", 0};

			if (h->path == NULL)
				return ojson_fail(c, &pp, "is required");
			if (!is_absolute(h->path))
				return ojson_fail(c, &pp, "must be an absolute path");
			if (h->timeout.set && h->timeout.value <= 0)
				return ojson_fail(c, &tp, "must be greater than zero");
		}
	}
	return 0;
}

static int validate_resources(ojson_ctx *c, const oci_resources *res, const ojson_path *p)
{
	ojson_path dp = {p, "devices", 0};

	for (size_t i = 0; i < res->devices_len; i++) {
		const oci_device_cgroup_rule *d = &res->devices[i];
		ojson_path ip = {&dp, NULL, i};
		ojson_path tp = {&ip, "type", 0}, ap = {&ip, "access", 0};

		if (d->type && strcmp(d->type, "a") != 0 && strcmp(d->type, "c") != 0 &&
		    strcmp(d->type, "b") != 0)
			return ojson_fail(c, &tp, "must be \"a\", \"c\" or \"b\"");
		if (d->access && (d->access[strspn(d->access, "rwm")] != '\0'))
			return ojson_fail(c, &ap, "must be made of the letters r, w and m");
	}
	return 0;
}

static bool has_namespace(const oci_linux *linux_, oci_namespace_type type)
{
	for (size_t i = 0; i < linux_->namespaces_len; i++)
		if (linux_->namespaces[i].type == type)
			return true;
	return false;
}

static int validate_devices(ojson_ctx *c, const oci_linux *linux_, const ojson_path *p)
{
	ojson_path dp = {p, "devices", 0};

	for (size_t i = 0; i < linux_->devices_len; i++) {
		const oci_device *d = &linux_->devices[i];
		ojson_path ip = {&dp, NULL, i};
		ojson_path tp = {&ip, "type", 0}, pp = {&ip, "path", 0};
		ojson_path maj = {&ip, "major", 0}, min = {&ip, "minor", 0};

		if (d->type == NULL)
			return ojson_fail(c, &tp, "is required");
		if (strcmp(d->type, "c") != 0 && strcmp(d->type, "b") != 0 &&
		    strcmp(d->type, "u") != 0 && strcmp(d->type, "p") != 0)
			return ojson_fail(c, &tp, "must be one of \"c\", \"b\", \"u\", \"p\"");
		if (d->path == NULL)
			return ojson_fail(c, &pp, "is required");
		if (!is_absolute(d->path))
			return ojson_fail(c, &pp, "must be an absolute path");
		/* A FIFO has no device number; the others need both halves. */
		if (strcmp(d->type, "p") != 0 && !d->major.set)
			return ojson_fail(c, &maj, "is required for a \"%s\" device", d->type);
		if (strcmp(d->type, "p") != 0 && !d->minor.set)
			return ojson_fail(c, &min, "is required for a \"%s\" device", d->type);
	}
	return 0;
}

/* The kernel's limit on lines in one uid_map/gid_map (since Linux 4.15). */
#define OCI_MAX_ID_RANGES 340
/* ... and on the size of that file's one write (less than a 4 KiB page). */
#define OCI_MAX_MAP_BYTES 4096

static bool ranges_overlap(uint32_t a, uint32_t an, uint32_t b, uint32_t bn)
{
	return (uint64_t)a < (uint64_t)b + bn && (uint64_t)b < (uint64_t)a + an;
}

/* uidMappings/gidMappings (linux. or mounts[N].): what the kernel would
 * refuse with a bare EINVAL when the map is written, named here. */
static int validate_id_mappings(ojson_ctx *c, const oci_id_mapping *maps, size_t n,
				const ojson_path *p)
{
	size_t bytes = 0;

	if (n > OCI_MAX_ID_RANGES)
		return ojson_fail(c, p, "at most %d ranges (the kernel's limit), got %zu",
				  OCI_MAX_ID_RANGES, n);
	/* The map is written in one write(2), which the kernel limits to less
	 * than a page. */
	for (size_t i = 0; i < n; i++)
		bytes += (size_t)snprintf(NULL, 0, "%u %u %u\n", maps[i].container_id,
					  maps[i].host_id, maps[i].size);
	if (bytes >= OCI_MAX_MAP_BYTES)
		return ojson_fail(c, p,
				  "the %zu ranges take %zu bytes written out, the kernel takes at "
				  "most %d",
				  n, bytes, OCI_MAX_MAP_BYTES - 1);
	for (size_t i = 0; i < n; i++) {
		const oci_id_mapping *m = &maps[i];
		ojson_path ip = {p, NULL, i};
		ojson_path sp = {&ip, "size", 0};

		ojson_path cp = {&ip, "containerID", 0}, hp = {&ip, "hostID", 0};
		int ret;

		ret = validate_id(c, m->container_id, &cp);
		if (ret < 0)
			return ret;
		ret = validate_id(c, m->host_id, &hp);
		if (ret < 0)
			return ret;
		if (m->size == 0)
			return ojson_fail(c, &sp, "must be greater than 0");
		/* The kernel keeps id + size within 32 bits, (uid_t)-1 excluded. */
		if ((uint64_t)m->container_id + m->size > UINT32_MAX)
			return ojson_fail(c, &ip, "containerID %u + size %u is past the last id %u",
					  m->container_id, m->size, UINT32_MAX - 1);
		if ((uint64_t)m->host_id + m->size > UINT32_MAX)
			return ojson_fail(c, &ip, "hostID %u + size %u is past the last id %u",
					  m->host_id, m->size, UINT32_MAX - 1);
		for (size_t j = 0; j < i; j++) {
			const oci_id_mapping *o = &maps[j];
			if (ranges_overlap(m->container_id, m->size, o->container_id, o->size))
				return ojson_fail(c, &ip,
						  "containerID range %u-%u overlaps entry [%zu] "
						  "(%u-%u)",
						  m->container_id, m->container_id + m->size - 1, j,
						  o->container_id, o->container_id + o->size - 1);
			if (ranges_overlap(m->host_id, m->size, o->host_id, o->size))
				return ojson_fail(c, &ip,
						  "hostID range %u-%u overlaps entry [%zu] (%u-%u)",
						  m->host_id, m->host_id + m->size - 1, j,
						  o->host_id, o->host_id + o->size - 1);
		}
	}
	return 0;
}

static bool has_option(char *const *options, const char *name)
{
	for (size_t i = 0; options && options[i]; i++)
		if (strcmp(options[i], name) == 0)
			return true;
	return false;
}

/* Idmapped mounts (config.md, `idmap`/`ridmap` and mounts[].uidMappings):
 * both maps or neither; a bind mount; without maps of its own the mount
 * takes the container's, so then there must be a user namespace. A mount
 * with maps but neither option is idmapped too (non-recursively), as runc
 * does: the options are there so older runtimes do not ignore the maps. */
static int validate_mount_idmap(ojson_ctx *c, const oci_config *config, const oci_mount *m,
				const ojson_path *p)
{
	ojson_path up = {p, "uidMappings", 0}, gp = {p, "gidMappings", 0};
	ojson_path op = {p, "options", 0};
	bool option = has_option(m->options, "idmap") || has_option(m->options, "ridmap");
	bool maps = m->uid_mappings_len > 0 || m->gid_mappings_len > 0;
	bool bind = has_option(m->options, "bind") || has_option(m->options, "rbind") ||
		    (m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0));
	int ret;

	if (!option && !maps)
		return 0;
	if (m->uid_mappings_len > 0 && m->gid_mappings_len == 0)
		return ojson_fail(c, &up, "must be given together with gidMappings");
	if (m->gid_mappings_len > 0 && m->uid_mappings_len == 0)
		return ojson_fail(c, &gp, "must be given together with uidMappings");
	ret = validate_id_mappings(c, m->uid_mappings, m->uid_mappings_len, &up);
	if (ret < 0)
		return ret;
	ret = validate_id_mappings(c, m->gid_mappings, m->gid_mappings_len, &gp);
	if (ret < 0)
		return ret;
	if (!bind)
		return ojson_fail(c, maps ? &up : &op,
				  "idmapped mounts are only supported for bind mounts (`bind` or "
				  "`rbind` in options)");
	if (!maps) {
		const oci_linux *lx = config->linux_;
		if (lx == NULL || !has_namespace(lx, OCI_NS_USER))
			return ojson_fail(
			    c, &op,
			    "`idmap`/`ridmap` without uidMappings/gidMappings uses the "
			    "container's user namespace mappings, but linux.namespaces "
			    "has no user namespace");
		bool joined = false;
		for (size_t i = 0; i < lx->namespaces_len; i++)
			if (lx->namespaces[i].type == OCI_NS_USER && lx->namespaces[i].path &&
			    lx->namespaces[i].path[0])
				joined = true;
		if (!joined && lx->uid_mappings_len == 0 && lx->gid_mappings_len == 0)
			return ojson_fail(c, &op,
					  "`idmap`/`ridmap` without uidMappings/gidMappings uses "
					  "linux.uidMappings/gidMappings, and there are none");
	}
	return 0;
}

/* linux.namespaces joins an existing user namespace by path. */
static bool has_user_namespace_path(const oci_linux *lx)
{
	for (size_t i = 0; i < lx->namespaces_len; i++)
		if (lx->namespaces[i].type == OCI_NS_USER && lx->namespaces[i].path &&
		    lx->namespaces[i].path[0])
			return true;
	return false;
}

/* linux.intelRdt, the rules of config-linux.md that need no resctrl: the
 * schema lines themselves are checked by the runtime, which knows the
 * resources. */
static int validate_intel_rdt(ojson_ctx *c, const oci_intel_rdt *rdt, const ojson_path *p)
{
	ojson_path cp = {p, "closID", 0}, lp = {p, "l3CacheSchema", 0};
	ojson_path mp = {p, "memBwSchema", 0}, sp = {p, "schemata", 0};
	const char *id = rdt->clos_id;

	/* A directory at the top of the resctrl mount, or "/" for the root
	 * group itself: anything else would name a path elsewhere. */
	if (id && id[0] == '\0')
		return ojson_fail(c, &cp,
				  "must not be empty (leave it out for a group named after the "
				  "container, or \"/\" for the default group)");
	if (id && strcmp(id, "/") != 0) {
		if (strchr(id, '/'))
			return ojson_fail(
			    c, &cp,
			    "\"%s\" is not a group name: no `/` in it (\"/\" alone is "
			    "the default group)",
			    id);
		if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
			return ojson_fail(c, &cp, "\"%s\" is not a group name", id);
		if (strchr(id, '\n'))
			return ojson_fail(c, &cp, "must not contain a newline");
		if (strlen(id) > 255)
			return ojson_fail(c, &cp, "is longer than a file name can be (255 bytes)");
	}
	if (rdt->l3_cache_schema && rdt->l3_cache_schema[0] == '\0')
		return ojson_fail(c, &lp, "must not be empty (leave it out)");
	if (rdt->mem_bw_schema) {
		if (strncmp(rdt->mem_bw_schema, "MB:", 3) != 0)
			return ojson_fail(c, &mp, "must start with \"MB:\"");
		if (strchr(rdt->mem_bw_schema, '\n'))
			return ojson_fail(c, &mp, "must not contain a newline");
	}
	for (size_t i = 0; rdt->schemata && rdt->schemata[i]; i++) {
		ojson_path ip = {&sp, NULL, i};
		if (rdt->schemata[i][0] == '\0')
			return ojson_fail(c, &ip, "is empty");
		if (strchr(rdt->schemata[i], '\n'))
			return ojson_fail(c, &ip,
					  "must not contain a newline (one line per element)");
	}
	return 0;
}

/* linux.memoryPolicy: what set_mempolicy(2) would refuse with a bare
 * EINVAL, said here with the field. Whether the nodes exist on this
 * machine and whether its kernel knows the mode is for the runtime to
 * check (src/linux/numa.c). */
static int validate_memory_policy(ojson_ctx *c, const oci_memory_policy *mp, const ojson_path *p)
{
	ojson_path np = {p, "nodes", 0}, fp = {p, "flags", 0}, mdp = {p, "mode", 0};
	const char *mode = oci_mpol_mode_name(mp->mode);
	bool fstatic = mp->flags & (1u << OCI_MPOL_F_STATIC_NODES);
	bool frelative = mp->flags & (1u << OCI_MPOL_F_RELATIVE_NODES);
	bool fbalancing = mp->flags & (1u << OCI_MPOL_F_NUMA_BALANCING);
	oci_id_range *r = NULL;
	size_t nranges = 0;
	const char *why;
	int ret;

	if (mode == NULL)
		return ojson_fail(c, &mdp, "unknown mode");
	ret = validate_id_list(c, mp->nodes, "node", &np);
	if (ret < 0)
		return ret;
	if (mp->nodes) {
		oci_id_list_parse(mp->nodes, &r, &nranges, &why);
		free(r);
	}
	switch (mp->mode) {
	case OCI_MPOL_DEFAULT:
	case OCI_MPOL_LOCAL:
		/* The kernel takes no nodes with either; it ignores the
		 * node flags with MPOL_DEFAULT (and refuses them with
		 * MPOL_LOCAL), so they can only be a mistake. */
		if (nranges > 0)
			return ojson_fail(c, &np, "must be empty: %s takes no nodes", mode);
		if (mp->flags != 0)
			return ojson_fail(c, &fp, "must be empty: %s takes no flags", mode);
		return 0;
	case OCI_MPOL_PREFERRED:
		/* Without nodes it means local allocation, for which the
		 * kernel refuses the node flags. */
		if (nranges == 0 && (fstatic || frelative))
			return ojson_fail(c, &fp,
					  "%s needs nodes: MPOL_PREFERRED without nodes means "
					  "local allocation",
					  mpol_flag_names[fstatic ? OCI_MPOL_F_STATIC_NODES
								  : OCI_MPOL_F_RELATIVE_NODES]);
		break;
	default:
		if (nranges == 0)
			return ojson_fail(c, &np, "%s needs at least one node", mode);
		break;
	}
	if (fstatic && frelative)
		return ojson_fail(
		    c, &fp, "MPOL_F_STATIC_NODES and MPOL_F_RELATIVE_NODES exclude each other");
	/* set_mempolicy(2): NUMA balancing is for MPOL_BIND; newer kernels
	 * also take it with MPOL_PREFERRED_MANY (the runtime asks the
	 * kernel). */
	if (fbalancing && mp->mode != OCI_MPOL_BIND && mp->mode != OCI_MPOL_PREFERRED_MANY)
		return ojson_fail(c, &fp,
				  "MPOL_F_NUMA_BALANCING works only with MPOL_BIND and "
				  "MPOL_PREFERRED_MANY, not %s",
				  mode);
	return 0;
}

static int validate_linux(ojson_ctx *c, const oci_linux *linux_, const ojson_path *p)
{
	ojson_path nsp = {p, "namespaces", 0};
	bool seen[OCI_NS_COUNT] = {false};
	int ret;

	for (size_t i = 0; i < linux_->namespaces_len; i++) {
		oci_namespace_type t = linux_->namespaces[i].type;
		ojson_path ip = {&nsp, NULL, i};
		ojson_path tp = {&ip, "type", 0};

		if ((unsigned)t >= OCI_NS_COUNT)
			return ojson_fail(c, &tp, "unknown namespace type");
		if (seen[t])
			return ojson_fail(c, &tp, "duplicate namespace type \"%s\"",
					  oci_namespace_type_name(t));
		seen[t] = true;
		/* config-linux.md: the path "MUST be an absolute path in the
		 * runtime mount namespace"; a relative one would depend on
		 * tern's cwd. */
		if (linux_->namespaces[i].path && !is_absolute(linux_->namespaces[i].path)) {
			ojson_path pp = {&ip, "path", 0};
			return ojson_fail(c, &pp, "must be an absolute path");
		}
	}
	/* Writing uid_map needs a user namespace to write it for; without one
	 * the mappings could only be silently ignored. */
	if (linux_->uid_mappings_len > 0 && !seen[OCI_NS_USER]) {
		ojson_path up = {p, "uidMappings", 0};
		return ojson_fail(c, &up, "requires a user namespace in linux.namespaces");
	}
	if (linux_->gid_mappings_len > 0 && !seen[OCI_NS_USER]) {
		ojson_path gp = {p, "gidMappings", 0};
		return ojson_fail(c, &gp, "requires a user namespace in linux.namespaces");
	}
	{
		ojson_path up = {p, "uidMappings", 0}, gp = {p, "gidMappings", 0};
		ret = validate_id_mappings(c, linux_->uid_mappings, linux_->uid_mappings_len, &up);
		if (ret < 0)
			return ret;
		ret = validate_id_mappings(c, linux_->gid_mappings, linux_->gid_mappings_len, &gp);
		if (ret < 0)
			return ret;
	}
	/* A new user namespace with no mapping has no root and no owner of
	 * the files: setresuid(0) there fails with a message about ids. Say
	 * which mappings are missing instead, as runc does. */
	if (seen[OCI_NS_USER] && !has_user_namespace_path(linux_)) {
		if (linux_->uid_mappings_len == 0) {
			ojson_path up = {p, "uidMappings", 0};
			return ojson_fail(c, &up,
					  "a new user namespace needs at least one mapping");
		}
		if (linux_->gid_mappings_len == 0) {
			ojson_path gp = {p, "gidMappings", 0};
			return ojson_fail(c, &gp,
					  "a new user namespace needs at least one mapping");
		}
	}
	if ((linux_->time_offset_monotonic.secs.set || linux_->time_offset_monotonic.nanosecs.set ||
	     linux_->time_offset_boottime.secs.set || linux_->time_offset_boottime.nanosecs.set) &&
	    !has_namespace(linux_, OCI_NS_TIME)) {
		ojson_path tp = {p, "timeOffsets", 0};
		return ojson_fail(c, &tp, "requires a time namespace in linux.namespaces");
	}
	ret = validate_devices(c, linux_, p);
	if (ret < 0)
		return ret;
	if (linux_->resources) {
		ojson_path rp = {p, "resources", 0};
		ret = validate_resources(c, linux_->resources, &rp);
		if (ret < 0)
			return ret;
	}
	if (linux_->intel_rdt) {
		ojson_path ip = {p, "intelRdt", 0};
		ret = validate_intel_rdt(c, linux_->intel_rdt, &ip);
		if (ret < 0)
			return ret;
	}
	if (linux_->memory_policy) {
		ojson_path mp = {p, "memoryPolicy", 0};
		ret = validate_memory_policy(c, linux_->memory_policy, &mp);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int validate_config(ojson_ctx *c, const oci_config *config)
{
	ojson_path root = {NULL, NULL, 0};
	ojson_path version = {&root, "ociVersion", 0}, process = {&root, "process", 0};
	ojson_path rootp = {&root, "root", 0}, rootpath = {&rootp, "path", 0};
	ojson_path mounts = {&root, "mounts", 0};
	int ret;

	if (config->oci_version == NULL)
		return ojson_fail(c, &version, "is required");
	/* The spec lets a bundle omit process for a create-only use; tern's
	 * create runs it, so it is required here. */
	if (config->process == NULL)
		return ojson_fail(c, &process, "is required");
	ret = validate_process(c, config->process, &process);
	if (ret < 0)
		return ret;
	if (config->root == NULL)
		return ojson_fail(c, &rootp, "is required");
	if (config->root->path == NULL || config->root->path[0] == '\0')
		return ojson_fail(c, &rootpath, "is required");
	for (size_t i = 0; i < config->mounts_len; i++) {
		ojson_path ip = {&mounts, NULL, i};
		ojson_path dp = {&ip, "destination", 0};
		/* The spec says absolute; runc resolves relative destinations
		 * against "/" for old bundles, and so will tern. */
		if (config->mounts[i].destination == NULL ||
		    config->mounts[i].destination[0] == '\0')
			return ojson_fail(c, &dp, "is required");
		ret = validate_mount_idmap(c, config, &config->mounts[i], &ip);
		if (ret < 0)
			return ret;
	}
	if (config->hooks) {
		ojson_path hp = {&root, "hooks", 0};
		ret = validate_hooks(c, config->hooks, &hp);
		if (ret < 0)
			return ret;
	}
	/* Without a UTS namespace (new, or joined by path) setting the
	 * hostname would rename the host. runc refuses this too. */
	if ((config->hostname && config->hostname[0]) ||
	    (config->domainname && config->domainname[0])) {
		bool uts = config->linux_ && has_namespace(config->linux_, OCI_NS_UTS);
		ojson_path hp = {
		    &root, config->hostname && config->hostname[0] ? "hostname" : "domainname", 0};
		if (!uts)
			return ojson_fail(c, &hp, "requires a uts namespace in linux.namespaces");
	}
	if (config->linux_) {
		ojson_path lp = {&root, "linux", 0};
		ret = validate_linux(c, config->linux_, &lp);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int oci_config_validate(const oci_config *config, const char *name, char **err)
{
	ojson_ctx c = {.name = name ? name : "config.json"};
	int ret = validate_config(&c, config);
	if (ret < 0) {
		if (err)
			*err = c.err;
		else
			free(c.err);
	}
	return ret;
}

/* ---- parsing ---- */

/* 1.0.0 up to any 1.3.x, with or without a suffix ("1.0.2-dev"). */
static bool version_supported(const char *v)
{
	char *end;
	unsigned long major, minor;

	if (*v < '0' || *v > '9')
		return false;
	major = strtoul(v, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	minor = strtoul(end + 1, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	return major == 1 && minor <= 3;
}

static void add_warning(oci_config *config, char *msg)
{
	size_t n = oci_strv_len(config->warnings);
	char **w = realloc(config->warnings, (n + 2) * sizeof(char *));
	if (w == NULL)
		abort();
	w[n] = msg;
	w[n + 1] = NULL;
	config->warnings = w;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* Parse `data` with a table into a fresh object of `size` bytes. */
static int parse_with(const char *data, size_t len, const char *name, const ojson_field *fields,
		      size_t size, void **out, char **err)
{
	ojson_path root = {NULL, NULL, 0};
	ojson_ctx c = {.name = name};
	yajl_val tree = NULL;
	void *obj;
	int ret;

	ret = ojson_parse_tree(data, len, name, &tree, err);
	if (ret < 0)
		return ret;
	obj = ojson_xmalloc0(size);
	ret = ojson_parse_object(&c, tree, &root, fields, obj);
	yajl_tree_free(tree);
	if (ret < 0) {
		ojson_free_object(fields, obj);
		free(obj);
		*err = c.err;
		return ret;
	}
	*out = obj;
	return 0;
}

int oci_config_parse_data(const char *data, size_t len, const char *name, oci_config **out,
			  char **err)
{
	oci_config *config = NULL;
	int ret;

	if (name == NULL)
		name = "config.json";
	ret = parse_with(data, len, name, config_fields, sizeof(oci_config), (void **)&config, err);
	if (ret < 0)
		return ret;
	if (config->oci_version && !version_supported(config->oci_version))
		add_warning(config,
			    ojson_strdup_printf("%s: ociVersion %s is outside the supported "
						"range 1.0.0 to 1.3.x; continuing",
						name, config->oci_version));
	ret = oci_config_validate(config, name, err);
	if (ret < 0) {
		oci_config_free(config);
		return ret;
	}
	*out = config;
	return 0;
}

int oci_config_parse_file(const char *path, oci_config **out, char **err)
{
	char *data = NULL;
	size_t len = 0;
	int ret;

	ret = ojson_read_file(path, &data, &len, err);
	if (ret < 0)
		return ret;
	ret = oci_config_parse_data(data, len, base_name(path), out, err);
	free(data);
	return ret;
}

void oci_config_free(oci_config *config)
{
	if (config == NULL)
		return;
	ojson_free_object(config_fields, config);
	ojson_strv_free(config->warnings);
	free(config);
}

int oci_process_parse_file(const char *path, oci_process **out, char **err)
{
	ojson_path root = {NULL, NULL, 0};
	const char *name = base_name(path);
	oci_process *process = NULL;
	ojson_ctx c = {.name = name};
	char *data = NULL;
	size_t len = 0;
	int ret;

	ret = ojson_read_file_or_pipe(path, &data, &len, err);
	if (ret < 0)
		return ret;
	ret = parse_with(data, len, name, process_fields, sizeof(oci_process), (void **)&process,
			 err);
	free(data);
	if (ret < 0)
		return ret;
	ret = validate_process(&c, process, &root);
	if (ret < 0) {
		oci_process_free(process);
		*err = c.err;
		return ret;
	}
	*out = process;
	return 0;
}

void oci_process_free(oci_process *process)
{
	if (process == NULL)
		return;
	ojson_free_object(process_fields, process);
	free(process);
}

int oci_resources_parse_data(const char *data, size_t len, const char *name, oci_resources **out,
			     char **err)
{
	ojson_path root = {NULL, NULL, 0};
	oci_resources *res = NULL;
	ojson_ctx c;
	int ret;

	if (name == NULL)
		name = "resources.json";
	c = (ojson_ctx){.name = name};
	ret = parse_with(data, len, name, resources_fields, sizeof(oci_resources), (void **)&res,
			 err);
	if (ret < 0)
		return ret;
	ret = validate_resources(&c, res, &root);
	if (ret < 0) {
		oci_resources_free(res);
		*err = c.err;
		return ret;
	}
	*out = res;
	return 0;
}

void oci_resources_free(oci_resources *resources)
{
	if (resources == NULL)
		return;
	ojson_free_object(resources_fields, resources);
	free(resources);
}
