/* Unit tests for libocispec's config.json reader: every field family, every
 * class of error with its exact message, and the default spec.
 *
 * To keep the JSON readable, test inputs are written with single quotes
 * and turned into double quotes before parsing (no input needs a literal
 * single quote). */
#include "tap.h"

#include "oci-config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dq(const char *s)
{
	char *r = strdup(s);
	for (char *p = r; *p; p++)
		if (*p == '\'')
			*p = '"';
	return r;
}

static oci_config *parse_ok(const char *text, const char *what)
{
	char *json = dq(text), *err = NULL;
	oci_config *config = NULL;
	int ret = oci_config_parse_data(json, strlen(json), "config.json", &config, &err);

	is_int(ret, 0, "%s: parses", what);
	if (ret < 0)
		printf("#   error: %s\n", err);
	free(err);
	free(json);
	return config;
}

static void parse_err(const char *text, const char *want, const char *what)
{
	char *json = dq(text), *err = NULL;
	oci_config *config = NULL;
	int ret = oci_config_parse_data(json, strlen(json), "config.json", &config, &err);

	is_int(ret, -EINVAL, "%s: fails with EINVAL", what);
	is_str(err, want, "%s: message", what);
	ok(config == NULL, "%s: no config returned", what);
	oci_config_free(config);
	free(err);
	free(json);
}

#define HEAD "{'ociVersion': '1.2.0', 'root': {'path': 'rootfs'}, "
#define PROC "'process': {'args': ['sh'], 'cwd': '/'}"
/* A valid config plus `x` (a JSON member list). */
#define CFG(x) HEAD PROC ", " x "}"
/* A config whose process object is `p`. */
#define CFGP(p) HEAD "'process': " p "}"
#define UTS	"'linux': {'namespaces': [{'type': 'uts'}]}"

static const char full_config[] =
    "{"
    " 'ociVersion': '1.2.0',"
    " 'process': {"
    "  'terminal': true,"
    "  'consoleSize': {'height': 25, 'width': 80},"
    "  'user': {'uid': 1000, 'gid': 1001, 'umask': 18, 'additionalGids': [5, 6, 2147483647],"
    "           'username': 'ignored'},"
    "  'args': ['/bin/sh', '-c', 'echo hi'],"
    "  'commandLine': 'ignored on linux',"
    "  'env': ['PATH=/bin', 'TERM=xterm'],"
    "  'cwd': '/work',"
    "  'capabilities': {'bounding': ['CAP_KILL', 'CAP_CHOWN'], 'effective': ['CAP_KILL'],"
    "                   'inheritable': [], 'permitted': ['CAP_KILL'],"
    "                   'ambient': ['CAP_NET_BIND_SERVICE']},"
    "  'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': 1024, 'soft': 512},"
    "              {'type': 'RLIMIT_CORE', 'hard': 18446744073709551615,"
    "               'soft': 18446744073709551615}],"
    "  'noNewPrivileges': true,"
    "  'apparmorProfile': 'tern-default',"
    "  'oomScoreAdj': -500,"
    "  'selinuxLabel': 'system_u:system_r:container_t:s0',"
    "  'scheduler': {'policy': 'SCHED_DEADLINE', 'nice': -5, 'priority': 0,"
    "                'flags': ['SCHED_FLAG_RESET_ON_FORK'], 'runtime': 10000000,"
    "                'deadline': 20000000, 'period': 30000000},"
    "  'ioPriority': {'class': 'IOPRIO_CLASS_BE', 'priority': 4},"
    "  'execCPUAffinity': {'initial': '0-1', 'final': '1'}"
    " },"
    " 'root': {'path': 'rootfs', 'readonly': true},"
    " 'hostname': 'box',"
    " 'domainname': 'example.org',"
    " 'mounts': ["
    "  {'destination': '/proc', 'type': 'proc', 'source': 'proc'},"
    "  {'destination': '/data', 'type': 'bind', 'source': '/srv/data', 'options': ['rbind', 'ro'],"
    "   'uidMappings': [{'containerID': 0, 'hostID': 100000, 'size': 65536}],"
    "   'gidMappings': [{'containerID': 0, 'hostID': 200000, 'size': 1000}]},"
    "  {'destination': 'relative/dir', 'type': 'tmpfs', 'source': 'tmpfs', 'options': []}"
    " ],"
    " 'hooks': {"
    "  'prestart': [{'path': '/bin/pre', 'args': ['pre', 'x'], 'env': ['A=1'], 'timeout': 5}],"
    "  'createRuntime': [{'path': '/bin/cr'}, {'path': '/bin/cr2'}],"
    "  'createContainer': [{'path': '/bin/cc'}],"
    "  'startContainer': [{'path': '/bin/sc'}],"
    "  'poststart': [{'path': '/bin/ps'}],"
    "  'poststop': [{'path': '/bin/pst', 'timeout': 1}]"
    " },"
    " 'annotations': {'org.example.a': 'one', 'org.example.b': ''},"
    " 'linux': {"
    "  'namespaces': [{'type': 'pid'}, {'type': 'network', 'path': '/var/run/netns/x'},"
    "                 {'type': 'mount'}, {'type': 'ipc'}, {'type': 'uts'}, {'type': 'user'},"
    "                 {'type': 'cgroup'}, {'type': 'time'}],"
    "  'uidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1}],"
    "  'gidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1},"
    "                  {'containerID': 1, 'hostID': 100000, 'size': 65536}],"
    "  'timeOffsets': {'monotonic': {'secs': -86400, 'nanosecs': 500},"
    "                  'boottime': {'secs': 3600}},"
    "  'devices': [{'type': 'c', 'path': '/dev/fuse', 'major': 10, 'minor': 229,"
    "               'fileMode': 438, 'uid': 0, 'gid': 5},"
    "              {'type': 'p', 'path': '/dev/fifo'}],"
    "  'cgroupsPath': '/tern/box',"
    "  'resources': {"
    "   'devices': [{'allow': false, 'access': 'rwm'},"
    "               {'allow': true, 'type': 'c', 'major': 10, 'minor': 229, 'access': 'rw'}],"
    "   'memory': {'limit': 536870912, 'reservation': 268435456, 'swap': -1, 'kernel': 0,"
    "              'kernelTCP': 1024, 'swappiness': 60, 'disableOOMKiller': true,"
    "              'useHierarchy': false, 'checkBeforeUpdate': true},"
    "   'cpu': {'shares': 1024, 'quota': 50000, 'burst': 1000, 'period': 100000,"
    "           'realtimeRuntime': -1, 'realtimePeriod': 1000000, 'cpus': '0-1', 'mems': '0',"
    "           'idle': 1},"
    "   'pids': {'limit': 100},"
    "   'blockIO': {'weight': 500, 'leafWeight': 300,"
    "               'weightDevice': [{'major': 8, 'minor': 0, 'weight': 600, 'leafWeight': 200}],"
    "               'throttleReadBpsDevice': [{'major': 8, 'minor': 0, 'rate': 1048576}],"
    "               'throttleWriteBpsDevice': [{'major': 8, 'minor': 16, 'rate': 2097152}],"
    "               'throttleReadIOPSDevice': [{'major': 8, 'minor': 32, 'rate': 100}],"
    "               'throttleWriteIOPSDevice': [{'major': 8, 'minor': 48, 'rate': 200}]},"
    "   'hugepageLimits': [{'pageSize': '2MB', 'limit': 209715200}],"
    "   'network': {'classID': 1048577, 'priorities': [{'name': 'eth0', 'priority': 500}]},"
    "   'rdma': {'mlx5_1': {'hcaHandles': 3, 'hcaObjects': 10000}},"
    "   'unified': {'memory.high': '1G', 'io.weight': 'default 100'}"
    "  },"
    "  'rootfsPropagation': 'rslave',"
    "  'maskedPaths': ['/proc/kcore'],"
    "  'readonlyPaths': ['/proc/sys', '/proc/bus'],"
    "  'mountLabel': 'system_u:object_r:container_file_t:s0',"
    "  'sysctl': {'net.ipv4.ip_forward': '1'},"
    "  'seccomp': {'defaultAction': 'SCMP_ACT_ERRNO', 'defaultErrnoRet': 38,"
    "              'architectures': ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86'],"
    "              'flags': ['SECCOMP_FILTER_FLAG_LOG'], 'listenerPath': '/run/seccomp.sock',"
    "              'listenerMetadata': 'meta',"
    "              'syscalls': [{'names': ['read', 'write'], 'action': 'SCMP_ACT_ALLOW'},"
    "                           {'names': ['personality'], 'action': 'SCMP_ACT_ERRNO',"
    "                            'errnoRet': 1,"
    "                            'args': [{'index': 0, 'value': 8, 'valueTwo': 0,"
    "                                      'op': 'SCMP_CMP_EQ'},"
    "                                     {'index': 1, 'value': 18446744073709551615,"
    "                                      'op': 'SCMP_CMP_MASKED_EQ'}]}]},"
    "  'personality': {'domain': 'LINUX32', 'flags': []},"
    "  'intelRdt': {'closID': 'guaranteed', 'l3CacheSchema': 'L3:0=7f',"
    "               'memBwSchema': 'MB:0=20', 'schemata': ['L2:0=f;1=f', 'MB:1=70'],"
    "               'enableMonitoring': true, 'enableCMT': true, 'enableMBM': false},"
    "  'netDevices': {'eth1': {'name': 'ceth1'}, 'ib0': {}}"
    " },"
    " 'windows': {'ignored': true},"
    " 'unknownTopLevel': [1, 2, {'x': null}]"
    "}";

static void test_full_process(const oci_process *p)
{
	ok(p != NULL, "process parsed");
	ok(p->terminal, "process.terminal");
	ok(p->console_height.set && p->console_height.value == 25, "consoleSize.height");
	ok(p->console_width.set && p->console_width.value == 80, "consoleSize.width");
	is_int(p->user.uid, 1000, "user.uid");
	is_int(p->user.gid, 1001, "user.gid");
	ok(p->user.umask.set && p->user.umask.value == 18, "user.umask");
	is_int(p->user.additional_gids_len, 3, "user.additionalGids count");
	ok(p->user.additional_gids[2] == OCI_ID_MAX,
	   "user.additionalGids takes 2^31-1, the largest id");
	is_int(oci_strv_len(p->args), 3, "args count");
	is_str(p->args[2], "echo hi", "args[2]");
	is_str(p->env[1], "TERM=xterm", "env[1]");
	is_str(p->cwd, "/work", "cwd");
	ok(p->capabilities != NULL, "capabilities present");
	is_str(p->capabilities->bounding[1], "CAP_CHOWN", "capabilities.bounding");
	is_str(p->capabilities->effective[0], "CAP_KILL", "capabilities.effective");
	ok(p->capabilities->inheritable && p->capabilities->inheritable[0] == NULL,
	   "empty inheritable is {NULL}, not NULL");
	is_str(p->capabilities->permitted[0], "CAP_KILL", "capabilities.permitted");
	is_str(p->capabilities->ambient[0], "CAP_NET_BIND_SERVICE", "capabilities.ambient");
	is_int(p->rlimits_len, 2, "rlimits count");
	is_str(p->rlimits[0].type, "RLIMIT_NOFILE", "rlimits[0].type");
	is_int(p->rlimits[0].hard, 1024, "rlimits[0].hard");
	is_int(p->rlimits[0].soft, 512, "rlimits[0].soft");
	ok(p->rlimits[1].hard == UINT64_MAX && p->rlimits[1].soft == UINT64_MAX,
	   "rlimit of 18446744073709551615 (unlimited) is uint64 max");
	ok(p->no_new_privileges, "noNewPrivileges");
	is_str(p->apparmor_profile, "tern-default", "apparmorProfile");
	ok(p->oom_score_adj.set && p->oom_score_adj.value == -500, "oomScoreAdj negative");
	is_str(p->selinux_label, "system_u:system_r:container_t:s0", "selinuxLabel");
	ok(p->scheduler != NULL, "scheduler present");
	is_str(p->scheduler->policy, "SCHED_DEADLINE", "scheduler.policy");
	ok(p->scheduler->nice.set && p->scheduler->nice.value == -5, "scheduler.nice");
	ok(p->scheduler->priority.set && p->scheduler->priority.value == 0,
	   "scheduler.priority 0 set");
	is_str(p->scheduler->flags[0], "SCHED_FLAG_RESET_ON_FORK", "scheduler.flags");
	ok(p->scheduler->runtime.value == 10000000 && p->scheduler->deadline.value == 20000000 &&
	       p->scheduler->period.value == 30000000,
	   "scheduler runtime/deadline/period");
	ok(p->io_priority != NULL, "ioPriority present");
	is_str(p->io_priority->class_, "IOPRIO_CLASS_BE", "ioPriority.class");
	is_int(p->io_priority->priority, 4, "ioPriority.priority");
	ok(p->exec_cpu_affinity != NULL, "execCPUAffinity present");
	is_str(p->exec_cpu_affinity->initial, "0-1", "execCPUAffinity.initial");
	is_str(p->exec_cpu_affinity->final, "1", "execCPUAffinity.final");
}

static void test_full_mounts_hooks(const oci_config *c)
{
	ok(c->root != NULL, "root present");
	is_str(c->root->path, "rootfs", "root.path");
	ok(c->root->readonly, "root.readonly");
	is_str(c->hostname, "box", "hostname");
	is_str(c->domainname, "example.org", "domainname");
	is_int(c->mounts_len, 3, "mounts count");
	is_str(c->mounts[0].destination, "/proc", "mounts[0].destination");
	ok(c->mounts[0].options == NULL, "mounts[0].options absent is NULL");
	is_str(c->mounts[1].type, "bind", "mounts[1].type");
	is_str(c->mounts[1].source, "/srv/data", "mounts[1].source");
	is_str(c->mounts[1].options[1], "ro", "mounts[1].options");
	is_int(c->mounts[1].uid_mappings_len, 1, "mounts[1].uidMappings count");
	is_int(c->mounts[1].uid_mappings[0].host_id, 100000, "mounts[1].uidMappings hostID");
	is_int(c->mounts[1].uid_mappings[0].size, 65536, "mounts[1].uidMappings size");
	is_int(c->mounts[1].gid_mappings[0].host_id, 200000, "mounts[1].gidMappings hostID");
	is_str(c->mounts[2].destination, "relative/dir", "relative mount destination accepted");
	ok(c->mounts[2].options && c->mounts[2].options[0] == NULL, "empty options is {NULL}");

	ok(c->hooks != NULL, "hooks present");
	is_int(c->hooks->prestart.len, 1, "hooks.prestart count");
	is_str(c->hooks->prestart.items[0].path, "/bin/pre", "hooks.prestart path");
	is_str(c->hooks->prestart.items[0].args[1], "x", "hooks.prestart args");
	is_str(c->hooks->prestart.items[0].env[0], "A=1", "hooks.prestart env");
	ok(c->hooks->prestart.items[0].timeout.set &&
	       c->hooks->prestart.items[0].timeout.value == 5,
	   "hooks.prestart timeout");
	is_int(c->hooks->create_runtime.len, 2, "hooks.createRuntime count");
	is_str(c->hooks->create_runtime.items[1].path, "/bin/cr2", "hooks.createRuntime[1]");
	ok(!c->hooks->create_runtime.items[1].timeout.set, "timeout unset when absent");
	is_str(c->hooks->create_container.items[0].path, "/bin/cc", "hooks.createContainer");
	is_str(c->hooks->start_container.items[0].path, "/bin/sc", "hooks.startContainer");
	is_str(c->hooks->poststart.items[0].path, "/bin/ps", "hooks.poststart");
	is_str(c->hooks->poststop.items[0].path, "/bin/pst", "hooks.poststop");

	is_int(c->annotations.len, 2, "annotations count");
	is_str(c->annotations.items[0].key, "org.example.a", "annotations key");
	is_str(c->annotations.items[0].value, "one", "annotations value");
	is_str(c->annotations.items[1].value, "", "annotations empty value");
}

static void test_full_resources(const oci_resources *r)
{
	ok(r != NULL, "resources present");
	is_int(r->devices_len, 2, "resources.devices count");
	ok(!r->devices[0].allow && r->devices[0].type == NULL, "deny-all rule");
	is_str(r->devices[0].access, "rwm", "devices[0].access");
	ok(r->devices[1].allow && r->devices[1].major.value == 10 &&
	       r->devices[1].minor.value == 229,
	   "devices[1] allow c 10:229");
	ok(!r->devices[0].major.set, "devices[0].major unset");

	ok(r->memory != NULL, "memory present");
	ok(r->memory->limit.set && r->memory->limit.value == 536870912, "memory.limit");
	ok(r->memory->reservation.value == 268435456, "memory.reservation");
	ok(r->memory->swap.set && r->memory->swap.value == -1, "memory.swap -1");
	ok(r->memory->kernel.set && r->memory->kernel.value == 0, "memory.kernel");
	ok(r->memory->kernel_tcp.value == 1024, "memory.kernelTCP");
	ok(r->memory->swappiness.set && r->memory->swappiness.value == 60, "memory.swappiness");
	ok(r->memory->disable_oom_killer.set && r->memory->disable_oom_killer.value,
	   "memory.disableOOMKiller");
	ok(r->memory->use_hierarchy.set && !r->memory->use_hierarchy.value, "memory.useHierarchy");
	ok(r->memory->check_before_update.value, "memory.checkBeforeUpdate");

	ok(r->cpu != NULL, "cpu present");
	ok(r->cpu->shares.value == 1024 && r->cpu->quota.value == 50000 &&
	       r->cpu->burst.value == 1000 && r->cpu->period.value == 100000,
	   "cpu shares/quota/burst/period");
	ok(r->cpu->realtime_runtime.value == -1 && r->cpu->realtime_period.value == 1000000,
	   "cpu realtime");
	is_str(r->cpu->cpus, "0-1", "cpu.cpus");
	is_str(r->cpu->mems, "0", "cpu.mems");
	ok(r->cpu->idle.set && r->cpu->idle.value == 1, "cpu.idle");

	ok(r->pids_limit.set && r->pids_limit.value == 100, "pids.limit");

	ok(r->block_io != NULL, "blockIO present");
	ok(r->block_io->weight.value == 500 && r->block_io->leaf_weight.value == 300,
	   "blockIO weight");
	ok(r->block_io->weight_device_len == 1 && r->block_io->weight_device[0].major == 8 &&
	       r->block_io->weight_device[0].weight.value == 600 &&
	       r->block_io->weight_device[0].leaf_weight.value == 200,
	   "blockIO.weightDevice");
	ok(r->block_io->throttle_read_bps_device[0].rate == 1048576, "throttleReadBpsDevice");
	ok(r->block_io->throttle_write_bps_device[0].minor == 16 &&
	       r->block_io->throttle_write_bps_device[0].rate == 2097152,
	   "throttleWriteBpsDevice");
	ok(r->block_io->throttle_read_iops_device[0].rate == 100, "throttleReadIOPSDevice");
	ok(r->block_io->throttle_write_iops_device_len == 1 &&
	       r->block_io->throttle_write_iops_device[0].rate == 200,
	   "throttleWriteIOPSDevice");

	is_int(r->hugepage_limits_len, 1, "hugepageLimits count");
	is_str(r->hugepage_limits[0].page_size, "2MB", "hugepageLimits.pageSize");
	is_int(r->hugepage_limits[0].limit, 209715200, "hugepageLimits.limit");

	ok(r->network != NULL && r->network->class_id.value == 1048577, "network.classID");
	is_str(r->network->priorities[0].name, "eth0", "network.priorities name");
	is_int(r->network->priorities[0].priority, 500, "network.priorities priority");

	is_int(r->rdma_len, 1, "rdma count");
	is_str(r->rdma[0].name, "mlx5_1", "rdma device name from the key");
	ok(r->rdma[0].hca_handles.value == 3 && r->rdma[0].hca_objects.value == 10000,
	   "rdma limits");

	is_int(r->unified.len, 2, "unified count");
	is_str(r->unified.items[1].key, "io.weight", "unified key");
	is_str(r->unified.items[1].value, "default 100", "unified value");
}

static void test_full_linux(const oci_linux *l)
{
	ok(l != NULL, "linux present");
	is_int(l->namespaces_len, 8, "namespaces count");
	is_int(l->namespaces[1].type, OCI_NS_NETWORK, "namespaces[1] network");
	is_str(l->namespaces[1].path, "/var/run/netns/x", "namespaces[1].path");
	ok(l->namespaces[0].path == NULL, "namespaces[0].path absent");
	is_int(l->namespaces[7].type, OCI_NS_TIME, "namespaces[7] time");
	is_int(l->uid_mappings_len, 1, "uidMappings count");
	is_int(l->uid_mappings[0].host_id, 1000, "uidMappings hostID");
	is_int(l->gid_mappings_len, 2, "gidMappings count");
	is_int(l->gid_mappings[1].container_id, 1, "gidMappings[1].containerID");
	ok(l->time_offset_monotonic.secs.set && l->time_offset_monotonic.secs.value == -86400,
	   "timeOffsets.monotonic.secs");
	ok(l->time_offset_monotonic.nanosecs.value == 500, "timeOffsets.monotonic.nanosecs");
	ok(l->time_offset_boottime.secs.value == 3600 && !l->time_offset_boottime.nanosecs.set,
	   "timeOffsets.boottime");
	is_int(l->devices_len, 2, "devices count");
	is_str(l->devices[0].type, "c", "devices[0].type");
	is_str(l->devices[0].path, "/dev/fuse", "devices[0].path");
	ok(l->devices[0].major.value == 10 && l->devices[0].minor.value == 229,
	   "devices[0] 10:229");
	ok(l->devices[0].file_mode.set && l->devices[0].file_mode.value == 0666,
	   "devices[0].fileMode");
	ok(l->devices[0].uid.set && l->devices[0].uid.value == 0 && l->devices[0].gid.value == 5,
	   "devices[0] uid/gid");
	ok(!l->devices[1].major.set, "fifo without major");
	is_str(l->cgroups_path, "/tern/box", "cgroupsPath");
	test_full_resources(l->resources);
	is_str(l->rootfs_propagation, "rslave", "rootfsPropagation");
	is_str(l->masked_paths[0], "/proc/kcore", "maskedPaths");
	is_int(oci_strv_len(l->readonly_paths), 2, "readonlyPaths");
	is_str(l->mount_label, "system_u:object_r:container_file_t:s0", "mountLabel");
	is_str(l->sysctl.items[0].key, "net.ipv4.ip_forward", "sysctl key");
	is_str(l->sysctl.items[0].value, "1", "sysctl value");

	ok(l->seccomp != NULL, "seccomp present");
	is_str(l->seccomp->default_action, "SCMP_ACT_ERRNO", "seccomp.defaultAction");
	ok(l->seccomp->default_errno_ret.value == 38, "seccomp.defaultErrnoRet");
	is_str(l->seccomp->architectures[1], "SCMP_ARCH_X86", "seccomp.architectures");
	is_str(l->seccomp->flags[0], "SECCOMP_FILTER_FLAG_LOG", "seccomp.flags");
	is_str(l->seccomp->listener_path, "/run/seccomp.sock", "seccomp.listenerPath");
	is_str(l->seccomp->listener_metadata, "meta", "seccomp.listenerMetadata");
	is_int(l->seccomp->syscalls_len, 2, "seccomp.syscalls count");
	is_str(l->seccomp->syscalls[0].names[1], "write", "syscalls[0].names");
	ok(!l->seccomp->syscalls[0].errno_ret.set, "syscalls[0].errnoRet unset");
	ok(l->seccomp->syscalls[1].errno_ret.value == 1, "syscalls[1].errnoRet");
	is_int(l->seccomp->syscalls[1].args_len, 2, "syscalls[1].args count");
	ok(l->seccomp->syscalls[1].args[0].value == 8 &&
	       l->seccomp->syscalls[1].args[0].value_two.set,
	   "args[0] value/valueTwo");
	ok(l->seccomp->syscalls[1].args[1].index == 1 &&
	       l->seccomp->syscalls[1].args[1].value == UINT64_MAX &&
	       !l->seccomp->syscalls[1].args[1].value_two.set,
	   "args[1] uint64 max value");
	is_str(l->seccomp->syscalls[1].args[1].op, "SCMP_CMP_MASKED_EQ", "args[1].op");

	ok(l->personality != NULL, "personality present");
	is_str(l->personality->domain, "LINUX32", "personality.domain");
	ok(l->personality->flags && !l->personality->flags[0], "personality.flags empty");

	ok(l->intel_rdt != NULL, "intelRdt present");
	is_str(l->intel_rdt->clos_id, "guaranteed", "intelRdt.closID");
	is_str(l->intel_rdt->l3_cache_schema, "L3:0=7f", "intelRdt.l3CacheSchema");
	is_str(l->intel_rdt->mem_bw_schema, "MB:0=20", "intelRdt.memBwSchema");
	ok(l->intel_rdt->enable_cmt.set && l->intel_rdt->enable_cmt.value, "intelRdt.enableCMT");
	ok(l->intel_rdt->enable_mbm.set && !l->intel_rdt->enable_mbm.value, "intelRdt.enableMBM");
	ok(l->intel_rdt->schemata && l->intel_rdt->schemata[0] && l->intel_rdt->schemata[1] &&
	       !l->intel_rdt->schemata[2],
	   "intelRdt.schemata has two lines");
	is_str(l->intel_rdt->schemata ? l->intel_rdt->schemata[0] : NULL, "L2:0=f;1=f",
	       "intelRdt.schemata[0]");
	is_str(l->intel_rdt->schemata ? l->intel_rdt->schemata[1] : NULL, "MB:1=70",
	       "intelRdt.schemata[1]");
	ok(l->intel_rdt->enable_monitoring.set && l->intel_rdt->enable_monitoring.value,
	   "intelRdt.enableMonitoring");

	is_int(l->net_devices_len, 2, "netDevices count");
	is_str(l->net_devices[0].name, "eth1", "netDevices key");
	is_str(l->net_devices[0].new_name, "ceth1", "netDevices name");
	is_str(l->net_devices[1].name, "ib0", "netDevices[1] key");
	ok(l->net_devices[1].new_name == NULL, "netDevices[1] without name");
}

static void test_full(void)
{
	oci_config *c = parse_ok(full_config, "full config");
	if (c == NULL)
		return;
	is_str(c->oci_version, "1.2.0", "ociVersion");
	ok(c->warnings == NULL, "no warnings for 1.2.0");
	test_full_process(c->process);
	test_full_mounts_hooks(c);
	test_full_linux(c->linux_);
	oci_config_free(c);
}

static void test_minimal(void)
{
	oci_config *c =
	    parse_ok(CFG("'hostname': null, 'annotations': null, 'linux': {}"), "minimal config");
	if (c == NULL)
		return;
	ok(c->hostname == NULL, "null is taken as absent");
	ok(c->annotations.len == 0 && c->annotations.items == NULL, "no annotations");
	ok(c->hooks == NULL && c->mounts == NULL && c->mounts_len == 0, "no hooks, no mounts");
	ok(c->process->capabilities == NULL && c->process->env == NULL, "no caps, no env");
	ok(!c->process->terminal && !c->process->oom_score_adj.set, "defaults");
	ok(c->linux_ != NULL && c->linux_->resources == NULL && c->linux_->seccomp == NULL,
	   "empty linux");
	oci_config_free(c);

	/* Duplicate keys: the last wins, as in Go's decoder. */
	c = parse_ok(CFG(UTS
			 ", 'hostname': 'a', 'hostname': 'b', 'annotations': {'k': '1', 'j': '2', "
			 "'k': '3'}"),
		     "duplicate keys");
	if (c) {
		is_str(c->hostname, "b", "last hostname wins");
		is_int(c->annotations.len, 2, "duplicate annotation kept once");
		is_str(c->annotations.items[0].key, "j",
		       "annotation order follows the last copies");
		is_str(c->annotations.items[1].value, "3", "last annotation value wins");
	}
	oci_config_free(c);
}

static void test_versions(void)
{
	struct {
		const char *v;
		bool warn;
	} cases[] = {
	    {"1.0.0", false},	{"1.0.2-dev", false}, {"1.1.0", false},	    {"1.2.0", false},
	    {"1.2.1+x", false}, {"1.3.0", false},     {"1.3.1-dev", false}, {"1.3.2-rc1", false},
	    {"2.0.0", true},	{"1.4.0", true},      {"0.9.0", true},	    {"1.0", true},
	    {"banana", true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[256];
		oci_config *c;
		snprintf(json, sizeof(json),
			 "{'ociVersion': '%s', 'root': {'path': 'r'}, " PROC "}", cases[i].v);
		c = parse_ok(json, cases[i].v);
		if (c == NULL)
			continue;
		ok((c->warnings != NULL) == cases[i].warn, "ociVersion %s: warning %s", cases[i].v,
		   cases[i].warn ? "given" : "not given");
		oci_config_free(c);
	}
	oci_config *c =
	    parse_ok("{'ociVersion': '2.0.0', 'root': {'path': 'r'}, " PROC "}", "2.0.0");
	if (c) {
		is_str(
		    c->warnings ? c->warnings[0] : NULL,
		    "config.json: ociVersion 2.0.0 is outside the supported range 1.0.0 to 1.3.x; "
		    "continuing",
		    "ociVersion warning text");
		ok(c->warnings && c->warnings[1] == NULL, "one warning");
	}
	oci_config_free(c);
	parse_err("{'root': {'path': 'r'}, " PROC "}", "config.json: ociVersion: is required",
		  "missing ociVersion");
	parse_err("{'ociVersion': 1, 'root': {'path': 'r'}, " PROC "}",
		  "config.json: ociVersion: expected a string", "numeric ociVersion");
}

static void test_type_errors(void)
{
	parse_err(CFGP("{'args': 'sh', 'cwd': '/'}"),
		  "config.json: process.args: expected a non-empty array of strings",
		  "args a string");
	parse_err(CFGP("{'args': [], 'cwd': '/'}"),
		  "config.json: process.args: expected a non-empty array of strings", "args empty");
	parse_err(CFGP("{'cwd': '/'}"),
		  "config.json: process.args: expected a non-empty array of strings",
		  "args missing");
	parse_err(CFGP("{'args': ['a', 1], 'cwd': '/'}"),
		  "config.json: process.args[1]: expected a string", "args element a number");
	parse_err(CFG("'mounts': [{'destination': '/a'}, {'destination': '/b'}, "
		      "{'destination': 5}]"),
		  "config.json: mounts[2].destination: expected a string",
		  "mount destination number");
	parse_err(CFG("'mounts': {}"), "config.json: mounts: expected an array",
		  "mounts an object");
	parse_err(CFG("'mounts': ['x']"), "config.json: mounts[0]: expected an object",
		  "mount a string");
	parse_err(CFG("'root': 'rootfs'"), "config.json: root: expected an object",
		  "root a string");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'terminal': 'yes'}"),
		  "config.json: process.terminal: expected a boolean", "terminal a string");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_CPU', "
		       "'hard': 'x', 'soft': 1}]}"),
		  "config.json: process.rlimits[0].hard: expected an unsigned integer",
		  "rlimit hard a string");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_CPU', "
		       "'hard': -1, 'soft': 1}]}"),
		  "config.json: process.rlimits[0].hard: expected an unsigned integer",
		  "negative where unsigned expected");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_CPU', "
		       "'hard': 1.5, 'soft': 1}]}"),
		  "config.json: process.rlimits[0].hard: expected an unsigned integer",
		  "fraction where integer expected");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_NOFILE', "
		       "'hard': 10}]}"),
		  "config.json: process.rlimits[0].soft: is required", "rlimit without soft");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_NOFILE', "
		       "'soft': 10}]}"),
		  "config.json: process.rlimits[0].hard: is required", "rlimit without hard");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'env': ['A=1', 'NOEQUALS']}"),
		  "config.json: process.env[1]: `NOEQUALS` is not NAME=VALUE", "env without =");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'env': ['=x']}"),
		  "config.json: process.env[0]: `=x` is not NAME=VALUE", "env with an empty name");
	parse_err(CFGP("{'args': [''], 'cwd': '/'}"),
		  "config.json: process.args[0]: the program to run is the empty string",
		  "args[0] empty");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_CPU', "
		       "'hard': 1e3, 'soft': 1}]}"),
		  "config.json: process.rlimits[0].hard: expected an unsigned integer",
		  "exponent where integer expected");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_CPU', "
		       "'hard': 18446744073709551616, 'soft': 1}]}"),
		  "config.json: process.rlimits[0].hard: 18446744073709551616 is out of range (at "
		  "most 18446744073709551615)",
		  "rlimit above uint64 max");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'user': {'uid': 4294967296}}"),
		  "config.json: process.user.uid: 4294967296 is out of range (at most 4294967295)",
		  "uid above uint32 max");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'user': {'additionalGids': [1, -2]}}"),
		  "config.json: process.user.additionalGids[1]: expected an unsigned integer",
		  "negative additional gid");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'oomScoreAdj': 1001}"),
		  "config.json: process.oomScoreAdj: 1001 is out of range (-1000 to 1000)",
		  "oomScoreAdj out of range");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'oomScoreAdj': '5'}"),
		  "config.json: process.oomScoreAdj: expected an integer", "oomScoreAdj a string");
	parse_err(CFG("'linux': {'resources': {'memory': {'limit': 9223372036854775808}}}"),
		  "config.json: linux.resources.memory.limit: 9223372036854775808 is out of range "
		  "(-9223372036854775808 to 9223372036854775807)",
		  "int64 overflow");
	parse_err(CFG("'linux': {'resources': {'memory': {'limit': 1.0}}}"),
		  "config.json: linux.resources.memory.limit: expected an integer",
		  "1.0 where integer expected");
	parse_err(CFG("'linux': {'resources': {'pids': {'limit': true}}}"),
		  "config.json: linux.resources.pids.limit: expected an integer",
		  "pids.limit bool");
	parse_err(CFG("'linux': {'resources': {'rdma': {'mlx': {'hcaHandles': -1}}}}"),
		  "config.json: linux.resources.rdma.mlx.hcaHandles: expected an unsigned integer",
		  "rdma path uses the key");
	parse_err(CFG("'linux': {'netDevices': {'eth0': 'x'}}"),
		  "config.json: linux.netDevices.eth0: expected an object", "netDevices value");
	parse_err(CFG("'linux': {'uidMappings': [{'containerID': 0, 'hostID': 0, 'size': 'x'}]}"),
		  "config.json: linux.uidMappings[0].size: expected an unsigned integer",
		  "idmap size a string");
	parse_err(
	    CFG("'linux': {'seccomp': {'syscalls': [{'names': ['a'], 'args': [{'index': 0, "
		"'value': -1}]}]}}"),
	    "config.json: linux.seccomp.syscalls[0].args[0].value: expected an unsigned integer",
	    "deep path");
	parse_err(CFG("'annotations': {'a': 1}"), "config.json: annotations.a: expected a string",
		  "annotation value a number");
	parse_err(CFG("'annotations': ['a']"), "config.json: annotations: expected an object",
		  "annotations an array");
	parse_err(CFG("'linux': {'sysctl': {'kernel.x': true}}"),
		  "config.json: linux.sysctl.kernel.x: expected a string", "sysctl value");
	parse_err(CFG("'hooks': {'poststop': [{'path': ['x']}]}"),
		  "config.json: hooks.poststop[0].path: expected a string", "hook path an array");
	parse_err("['not', 'an', 'object']", "config.json: expected an object", "top-level array");
}

static void test_json_errors(void)
{
	const char *bad = "{\"ociVersion\": \"1.2.0\",\n \"process\": {\"args\": [1,2,}";
	oci_config *c = NULL;
	char *err = NULL;
	int ret;

	ret = oci_config_parse_data(bad, strlen(bad), "config.json", &c, &err);
	is_int(ret, -EINVAL, "malformed JSON fails");
	ok(err && strncmp(err, "config.json: invalid JSON: parse error: ", 40) == 0,
	   "malformed JSON message names the file: %s", err ? err : "(null)");
	ok(err && strchr(err, '\n') == NULL, "malformed JSON message is one line");
	free(err);
	err = NULL;

	ret = oci_config_parse_data("", 0, "config.json", &c, &err);
	is_int(ret, -EINVAL, "empty text fails");
	is_str(err, "config.json: invalid JSON: parse error: premature EOF", "empty text message");
	free(err);
	err = NULL;

	ret = oci_config_parse_data("{\"a\":1}\0{}", 10, "config.json", &c, &err);
	is_int(ret, -EINVAL, "NUL byte fails");
	is_str(err, "config.json: invalid JSON: the text contains a NUL byte", "NUL byte message");
	free(err);
	err = NULL;

	parse_err(CFG("'hostname': 'a\\u0000b'"),
		  "config.json: invalid JSON: strings must not contain \\u0000", "\\u0000 refused");
	c = parse_ok(CFG(UTS ", 'hostname': 'a\\\\u0000b'"),
		     "escaped backslash before u0000 is fine");
	if (c)
		is_str(c->hostname, "a\\u0000b", "escaped backslash kept");
	oci_config_free(c);

	char deep[600];
	memset(deep, '[', 300);
	memset(deep + 300, ']', 300);
	ret = oci_config_parse_data(deep, 600, "config.json", &c, &err);
	is_int(ret, -EINVAL, "deep nesting fails");
	is_str(err, "config.json: invalid JSON: nested too deeply", "deep nesting message");
	free(err);
	err = NULL;

	/* brackets inside a comment (yajl allows comments) do not hide depth */
	char hidden[1000];
	size_t n = 0;
	memset(hidden + n, '[', 100), n += 100;
	memcpy(hidden + n, "/*", 2), n += 2;
	memset(hidden + n, ']', 100), n += 100;
	memcpy(hidden + n, "*/", 2), n += 2;
	memset(hidden + n, '[', 100), n += 100;
	memset(hidden + n, ']', 200), n += 200;
	ret = oci_config_parse_data(hidden, n, "config.json", &c, &err);
	is_int(ret, -EINVAL, "depth hidden by a comment fails");
	is_str(err, "config.json: invalid JSON: nested too deeply", "hidden depth message");
	free(err);
	err = NULL;

	/* 100000 elements: the tree grows by doubling (a copy per element
	 * took minutes under ASan); the content is what was written */
	size_t big_n = 100000, at = 0;
	char *big = malloc(big_n * 4 + 256);
	at += (size_t)sprintf(big + at, "{\"ociVersion\": \"1.2.0\", \"root\": {\"path\": \"r\"}, "
					"\"process\": {\"cwd\": \"/\", \"args\": [");
	for (size_t i = 0; i < big_n; i++)
		at +=
		    (size_t)sprintf(big + at, "%s\"%c\"", i ? "," : "", i == big_n - 1 ? 'z' : 'a');
	at += (size_t)sprintf(big + at, "]}}");
	ret = oci_config_parse_data(big, at, "config.json", &c, &err);
	is_int(ret, 0, "100000 args parse");
	if (ret == 0) {
		size_t count = 0;
		while (c->process->args[count])
			count++;
		ok(count == big_n && strcmp(c->process->args[big_n - 1], "z") == 0,
		   "all 100000 args, in order (%zu)", count);
		oci_config_free(c);
	}
	free(err);
	err = NULL;
	free(big);

	ret = oci_config_parse_data("{}", 2, "other.json", &c, &err);
	is_int(ret, -EINVAL, "empty object fails");
	is_str(err, "other.json: ociVersion: is required", "name given is used in messages");
	free(err);
}

static void test_validation(void)
{
	parse_err(HEAD "'hostname': 'x'}", "config.json: process: is required", "process missing");
	parse_err(CFGP("{'args': ['sh']}"), "config.json: process.cwd: is required", "cwd missing");
	parse_err(CFGP("{'args': ['sh'], 'cwd': 'work'}"),
		  "config.json: process.cwd: must be an absolute path", "cwd relative");
	parse_err("{'ociVersion': '1.2.0', " PROC "}", "config.json: root: is required",
		  "root missing");
	parse_err("{'ociVersion': '1.2.0', 'root': {'path': ''}, " PROC "}",
		  "config.json: root.path: is required", "root.path empty");
	parse_err("{'ociVersion': '1.2.0', 'root': {'readonly': true}, " PROC "}",
		  "config.json: root.path: is required", "root.path missing");

	parse_err(CFG("'linux': {'namespaces': [{'type': 'pid'}, {'type': 'foo'}]}"),
		  "config.json: linux.namespaces[1].type: unknown namespace type \"foo\"",
		  "unknown namespace");
	parse_err(
	    CFG("'linux': {'namespaces': [{'type': 'pid'}, {'type': 'ipc'}, {'type': 'pid'}]}"),
	    "config.json: linux.namespaces[2].type: duplicate namespace type \"pid\"",
	    "repeated namespace");
	parse_err(CFG("'linux': {'namespaces': [{'type': 'net', 'path': 'proc/1/ns/net'}]}"),
		  "config.json: linux.namespaces[0].type: unknown namespace type \"net\"",
		  "namespace type net is not a name");
	parse_err(CFG("'linux': {'namespaces': [{'type': 'network', 'path': 'proc/1/ns/net'}]}"),
		  "config.json: linux.namespaces[0].path: must be an absolute path",
		  "namespace path relative");
	parse_err(CFG("'hostname': 'box'"),
		  "config.json: hostname: requires a uts namespace in linux.namespaces",
		  "hostname without uts namespace");
	parse_err(CFG("'domainname': 'x.org', 'linux': {'namespaces': [{'type': 'pid'}]}"),
		  "config.json: domainname: requires a uts namespace in linux.namespaces",
		  "domainname without uts namespace");
	oci_config *h = parse_ok(CFG("'hostname': '', 'linux': {'namespaces': [{'type': 'uts', "
				     "'path': '/proc/1/ns/uts'}]}"),
				 "empty hostname, joined uts namespace");
	oci_config_free(h);
	h = parse_ok(CFG("'hostname': 'h', 'linux': {'namespaces': [{'type': 'uts', 'path': "
			 "'/proc/1/ns/uts'}]}"),
		     "hostname with a joined uts namespace");
	oci_config_free(h);
	parse_err(CFG("'linux': {'namespaces': [{'path': '/proc/1/ns/net'}]}"),
		  "config.json: linux.namespaces[0].type: is required", "namespace without type");

	parse_err(CFG("'mounts': [{'type': 'tmpfs', 'source': 'tmpfs'}]"),
		  "config.json: mounts[0].destination: is required", "mount without destination");

	parse_err(CFG("'hooks': {'poststop': [{'path': 'bin/x'}]}"),
		  "config.json: hooks.poststop[0].path: must be an absolute path", "relative hook");
	parse_err(CFG("'hooks': {'prestart': [{'args': ['x']}]}"),
		  "config.json: hooks.prestart[0].path: is required", "hook without path");
	parse_err(CFG("'hooks': {'createRuntime': [{'path': '/a'}, {'path': '/b', 'timeout': 0}]}"),
		  "config.json: hooks.createRuntime[1].timeout: must be greater than zero",
		  "hook timeout 0");
	parse_err(CFG("'hooks': {'startContainer': [{'path': '/b', 'timeout': -3}]}"),
		  "config.json: hooks.startContainer[0].timeout: must be greater than zero",
		  "hook timeout negative");

#define RL(x) CFGP("{'args': ['sh'], 'cwd': '/', 'rlimits': [" x "]}")
	parse_err(RL("{'type': 'RLIMIT_FOO', 'hard': 1, 'soft': 1}"),
		  "config.json: process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\"",
		  "unknown rlimit");
	parse_err(RL("{'hard': 1, 'soft': 1}"), "config.json: process.rlimits[0].type: is required",
		  "rlimit without type");
	parse_err(RL("{'type': 'RLIMIT_NOFILE', 'hard': 1, 'soft': 2}"),
		  "config.json: process.rlimits[0]: RLIMIT_NOFILE soft limit 2 is above the hard "
		  "limit 1",
		  "soft above hard");
	parse_err(RL("{'type': 'RLIMIT_NOFILE', 'hard': 2, 'soft': 1}, "
		     "{'type': 'RLIMIT_NPROC', 'hard': 2, 'soft': 1}, "
		     "{'type': 'RLIMIT_NOFILE', 'hard': 3, 'soft': 1}"),
		  "config.json: process.rlimits[2].type: duplicate RLIMIT_NOFILE (also in "
		  "rlimits[0])",
		  "duplicate rlimit");
	oci_config *c = parse_ok(
	    RL("{'type': 'RLIMIT_AS', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_CORE', 'hard': 1, "
	       "'soft': 1}, {'type': 'RLIMIT_CPU', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_DATA', "
	       "'hard': 1, 'soft': 1}, {'type': 'RLIMIT_FSIZE', 'hard': 1, 'soft': 1}, {'type': "
	       "'RLIMIT_LOCKS', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_MEMLOCK', 'hard': 1, "
	       "'soft': 1}, {'type': 'RLIMIT_MSGQUEUE', 'hard': 1, 'soft': 1}, {'type': "
	       "'RLIMIT_NICE', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_NOFILE', 'hard': 1, "
	       "'soft': 1}, {'type': 'RLIMIT_NPROC', 'hard': 1, 'soft': 1}, {'type': "
	       "'RLIMIT_RSS', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_RTPRIO', 'hard': 1, "
	       "'soft': 1}, {'type': 'RLIMIT_RTTIME', 'hard': 1, 'soft': 1}, {'type': "
	       "'RLIMIT_SIGPENDING', 'hard': 1, 'soft': 1}, {'type': 'RLIMIT_STACK', 'hard': 1, "
	       "'soft': 1}"),
	    "all sixteen rlimits");
	if (c)
		is_int(c->process->rlimits_len, 16, "sixteen rlimits");
	oci_config_free(c);
#undef RL

	parse_err(CFG("'linux': {'uidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1}]}"),
		  "config.json: linux.uidMappings: requires a user namespace in linux.namespaces",
		  "uidMappings without user namespace");
	parse_err(CFG("'linux': {'namespaces': [{'type': 'pid'}], 'gidMappings': [{'containerID': "
		      "0, 'hostID': 1000, 'size': 1}]}"),
		  "config.json: linux.gidMappings: requires a user namespace in linux.namespaces",
		  "gidMappings without user namespace");
	parse_err(CFG("'linux': {'namespaces': [{'type': 'user'}, {'type': 'mount'}]}"),
		  "config.json: linux.uidMappings: a new user namespace needs at least one mapping",
		  "user namespace without mappings");
	parse_err(CFG("'linux': {'namespaces': [{'type': 'user'}, {'type': 'mount'}], "
		      "'uidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1}]}"),
		  "config.json: linux.gidMappings: a new user namespace needs at least one mapping",
		  "user namespace without gid mappings");
	oci_config_free(
	    parse_ok(CFG("'linux': {'namespaces': [{'type': 'user', 'path': '/proc/1/ns/user'}, "
			 "{'type': 'mount'}]}"),
		     "a user namespace joined by path needs no mappings"));
	/* user namespace maps: what the kernel would refuse, named */
#define USERNS "'namespaces': [{'type': 'user'}, {'type': 'mount'}]"
	parse_err(CFG("'linux': {" USERNS ", 'uidMappings': [{'containerID': 0, 'hostID': 1000, "
		      "'size': 0}]}"),
		  "config.json: linux.uidMappings[0].size: must be greater than 0",
		  "uidMappings size 0");
	parse_err(
	    CFG("'linux': {" USERNS ", 'gidMappings': [{'containerID': 0, 'hostID': 1000, "
		"'size': 10}, {'containerID': 5, 'hostID': 5000, 'size': 1}]}"),
	    "config.json: linux.gidMappings[1]: containerID range 5-5 overlaps entry [0] (0-9)",
	    "gidMappings containerID overlap");
	parse_err(CFG("'linux': {" USERNS ", 'uidMappings': [{'containerID': 0, 'hostID': 1000, "
		      "'size': 10}, {'containerID': 100, 'hostID': 1009, 'size': 1}]}"),
		  "config.json: linux.uidMappings[1]: hostID range 1009-1009 overlaps entry [0] "
		  "(1000-1009)",
		  "uidMappings hostID overlap");
	parse_err(CFG("'linux': {" USERNS ", 'uidMappings': [{'containerID': 2147483647, "
		      "'hostID': 1000, 'size': 2147483649}]}"),
		  "config.json: linux.uidMappings[0]: containerID 2147483647 + size 2147483649 is "
		  "past the last id 4294967294",
		  "uidMappings past the last id");
	/* (uid_t)-1 is "unchanged" to setresuid: an id above runc's range
	 * is refused wherever a config names one, the field named. */
	parse_err(CFG("'linux': {" USERNS ", 'uidMappings': [{'containerID': 4294967295, "
		      "'hostID': 1000, 'size': 1}]}"),
		  "config.json: linux.uidMappings[0].containerID: 4294967295 is out of range "
		  "(0-2147483647)",
		  "uidMappings containerID above 2^31-1");
	parse_err(CFG("'linux': {" USERNS ", 'uidMappings': [{'containerID': 0, 'hostID': 1000, "
		      "'size': 1}], 'gidMappings': [{'containerID': 0, 'hostID': 2147483648, "
		      "'size': 1}]}"),
		  "config.json: linux.gidMappings[0].hostID: 2147483648 is out of range "
		  "(0-2147483647)",
		  "gidMappings hostID above 2^31-1");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'user': {'uid': 4294967295, 'gid': 0}}"),
		  "config.json: process.user.uid: 4294967295 is out of range (0-2147483647)",
		  "process.user.uid (uid_t)-1");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'user': {'uid': 0, 'gid': 2147483648}}"),
		  "config.json: process.user.gid: 2147483648 is out of range (0-2147483647)",
		  "process.user.gid 2^31");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'user': {'uid': 0, 'gid': 0, "
		       "'additionalGids': [5, 4294967295]}}"),
		  "config.json: process.user.additionalGids[1]: 4294967295 is out of range "
		  "(0-2147483647)",
		  "process.user.additionalGids (gid_t)-1");
	{
		/* 341 one-id ranges: one more than the kernel takes */
		size_t cap = 341 * 64 + 512, used = 0;
		char *cfg = malloc(cap);
		used += (size_t)snprintf(cfg + used, cap - used, "%s",
					 HEAD PROC ", 'linux': {" USERNS ", 'uidMappings': [");
		for (int i = 0; i < 341; i++)
			used += (size_t)snprintf(cfg + used, cap - used,
						 "%s{'containerID': %d, 'hostID': %d, 'size': 1}",
						 i ? ", " : "", i, 100000 + i);
		snprintf(cfg + used, cap - used, "]}}");
		parse_err(
		    cfg,
		    "config.json: linux.uidMappings: at most 340 ranges (the kernel's limit), "
		    "got 341",
		    "341 uid ranges");
		free(cfg);
	}
	/* idmapped mounts */
#define IDM(opts, maps)                                                                            \
	"'mounts': [{'destination': '/m', 'source': '/tmp', 'options': " opts maps "}]"
#define UMAP ", 'uidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1}]"
#define GMAP ", 'gidMappings': [{'containerID': 0, 'hostID': 1000, 'size': 1}]"
	parse_err(CFG(IDM("['bind', 'idmap']", UMAP)),
		  "config.json: mounts[0].uidMappings: must be given together with gidMappings",
		  "mount uidMappings without gidMappings");
	parse_err(CFG(IDM("['bind', 'idmap']", GMAP)),
		  "config.json: mounts[0].gidMappings: must be given together with uidMappings",
		  "mount gidMappings without uidMappings");
	parse_err(CFG(IDM("['idmap']", UMAP GMAP)),
		  "config.json: mounts[0].uidMappings: idmapped mounts are only supported for bind "
		  "mounts (`bind` or `rbind` in options)",
		  "idmapped mount without bind");
	parse_err(
	    CFG(IDM("['rbind', 'ridmap']", "")),
	    "config.json: mounts[0].options: `idmap`/`ridmap` without uidMappings/gidMappings "
	    "uses the container's user namespace mappings, but linux.namespaces has no user "
	    "namespace",
	    "idmap option without maps or user namespace");
	parse_err(CFG(IDM("['bind', 'idmap']", UMAP ", 'gidMappings': [{'containerID': 0, "
						    "'hostID': 1000, 'size': 0}]")),
		  "config.json: mounts[0].gidMappings[0].size: must be greater than 0",
		  "mount gidMappings size 0");
	{
		oci_config *c = NULL;
		char *err = NULL, *json = dq(CFG(IDM("['bind', 'idmap']", UMAP GMAP)));
		ok(oci_config_parse_data(json, strlen(json), "config.json", &c, &err) == 0,
		   "idmap bind mount with maps parses: %s", err ? err : "");
		oci_config_free(c);
		free(json);
		free(err);
		err = NULL;
		c = NULL;
		/* maps without the option: idmapped anyway, as runc does */
		json = dq(CFG(IDM("['rbind']", UMAP GMAP)));
		ok(oci_config_parse_data(json, strlen(json), "config.json", &c, &err) == 0,
		   "mount maps without idmap option parse: %s", err ? err : "");
		oci_config_free(c);
		free(json);
		free(err);
	}
#undef IDM
#undef UMAP
#undef GMAP
#undef USERNS

	parse_err(CFG("'linux': {'timeOffsets': {'boottime': {'secs': 1}}}"),
		  "config.json: linux.timeOffsets: requires a time namespace in linux.namespaces",
		  "timeOffsets without time namespace");

	parse_err(CFG("'linux': {'devices': [{'type': 'x', 'path': '/dev/x'}]}"),
		  "config.json: linux.devices[0].type: must be one of \"c\", \"b\", \"u\", \"p\"",
		  "device type unknown");
	parse_err(CFG("'linux': {'devices': [{'type': 'p', 'path': '/dev/p'}, {'type': 'b', "
		      "'path': '/dev/sda', 'minor': 0}]}"),
		  "config.json: linux.devices[1].major: is required for a \"b\" device",
		  "block device without major");
	parse_err(CFG("'linux': {'devices': [{'type': 'u', 'path': '/dev/u', 'major': 1}]}"),
		  "config.json: linux.devices[0].minor: is required for a \"u\" device",
		  "device without minor");
	parse_err(CFG("'linux': {'devices': [{'type': 'c', 'path': 'dev/null', 'major': 1, "
		      "'minor': 3}]}"),
		  "config.json: linux.devices[0].path: must be an absolute path",
		  "device path relative");
	parse_err(CFG("'linux': {'devices': [{'path': '/dev/null'}]}"),
		  "config.json: linux.devices[0].type: is required", "device without type");

	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'capabilities': {'bounding': ['CAP_KILL', "
		       "'FOO']}}"),
		  "config.json: process.capabilities.bounding[1]: \"FOO\" is not a capability name "
		  "(CAP_*)",
		  "capability not CAP_*");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'capabilities': {'ambient': ['CAP_']}}"),
		  "config.json: process.capabilities.ambient[0]: \"CAP_\" is not a capability name "
		  "(CAP_*)",
		  "bare CAP_");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'ioPriority': {'class': 'RT', 'priority': "
		       "0}}"),
		  "config.json: process.ioPriority.class: must be IOPRIO_CLASS_RT, IOPRIO_CLASS_BE "
		  "or IOPRIO_CLASS_IDLE",
		  "ioPriority class");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'ioPriority': {'class': "
		       "'IOPRIO_CLASS_NONE', 'priority': 0}}"),
		  "config.json: process.ioPriority.class: must be IOPRIO_CLASS_RT, IOPRIO_CLASS_BE "
		  "or IOPRIO_CLASS_IDLE (the kernel's IOPRIO_CLASS_NONE, its default, is what "
		  "leaving ioPriority out gives)",
		  "ioPriority class NONE");
	parse_err(CFGP("{'args': ['sh'], 'cwd': '/', 'ioPriority': {'class': 'IOPRIO_CLASS_RT', "
		       "'priority': 8}}"),
		  "config.json: process.ioPriority.priority: must be between 0 and 7",
		  "ioPriority priority");
	parse_err(
	    CFG("'linux': {'resources': {'devices': [{'allow': true, 'access': 'rwx'}]}}"),
	    "config.json: linux.resources.devices[0].access: must be made of the letters r, w "
	    "and m",
	    "device rule access");
	parse_err(CFG("'linux': {'resources': {'devices': [{'allow': true, 'type': 'p'}]}}"),
		  "config.json: linux.resources.devices[0].type: must be \"a\", \"c\" or \"b\"",
		  "device rule type");
}

/* linux.intelRdt: what config-linux.md says of each field, before any
 * resctrl is looked at. */
static void test_intel_rdt(void)
{
	static const struct {
		const char *rdt, *want, *what;
	} bad[] = {
	    {"{'closID': ''}",
	     "config.json: linux.intelRdt.closID: must not be empty (leave it out for a group "
	     "named after the container, or \"/\" for the default group)",
	     "empty closID"},
	    {"{'closID': 'a/b'}",
	     "config.json: linux.intelRdt.closID: \"a/b\" is not a group name: no `/` in it "
	     "(\"/\" alone is the default group)",
	     "closID with a slash"},
	    {"{'closID': '/x'}",
	     "config.json: linux.intelRdt.closID: \"/x\" is not a group name: no `/` in it "
	     "(\"/\" alone is the default group)",
	     "closID an absolute path"},
	    {"{'closID': '..'}", "config.json: linux.intelRdt.closID: \"..\" is not a group name",
	     "closID .."},
	    {"{'closID': 'a\\nb'}",
	     "config.json: linux.intelRdt.closID: must not contain a newline",
	     "closID with a newline"},
	    {"{'l3CacheSchema': ''}",
	     "config.json: linux.intelRdt.l3CacheSchema: must not be empty (leave it out)",
	     "empty l3CacheSchema"},
	    {"{'memBwSchema': 'L3:0=f'}",
	     "config.json: linux.intelRdt.memBwSchema: must start with \"MB:\"",
	     "memBwSchema of another resource"},
	    {"{'memBwSchema': 'MB:0=20\\nL3:0=f'}",
	     "config.json: linux.intelRdt.memBwSchema: must not contain a newline",
	     "memBwSchema of two lines"},
	    {"{'schemata': ['L3:0=f', '']}", "config.json: linux.intelRdt.schemata[1]: is empty",
	     "an empty schemata line"},
	    {"{'schemata': ['L3:0=f\\nMB:0=10']}",
	     "config.json: linux.intelRdt.schemata[0]: must not contain a newline (one line per "
	     "element)",
	     "two lines in one schemata element"},
	    {"{'schemata': 'L3:0=f'}",
	     "config.json: linux.intelRdt.schemata: expected an array of strings",
	     "schemata a string"},
	    {"{'enableMonitoring': 'yes'}",
	     "config.json: linux.intelRdt.enableMonitoring: expected a boolean",
	     "enableMonitoring a string"},
	};
	char json[512];
	oci_config *c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), CFG("'linux': {'intelRdt': %s}"), bad[i].rdt);
		parse_err(json, bad[i].want, bad[i].what);
	}
	c = parse_ok(CFG("'linux': {'intelRdt': {'closID': '/', 'enableMonitoring': false}}"),
		     "closID / (the default group)");
	if (c) {
		is_str(c->linux_->intel_rdt->clos_id, "/", "closID / kept");
		ok(c->linux_->intel_rdt->enable_monitoring.set &&
		       !c->linux_->intel_rdt->enable_monitoring.value,
		   "enableMonitoring false is set");
		oci_config_free(c);
	}
	c = parse_ok(CFG("'linux': {'intelRdt': {}}"), "an empty intelRdt");
	if (c) {
		const oci_intel_rdt *r = c->linux_->intel_rdt;
		ok(r && !r->clos_id && !r->schemata && !r->enable_monitoring.set,
		   "every field absent");
		oci_config_free(c);
	}
	/* the SHOULDs of l3CacheSchema are the runtime's to judge */
	c = parse_ok(CFG("'linux': {'intelRdt': {'l3CacheSchema': 'L3CODE:0=f\\nL3DATA:0=3'}}"),
		     "an l3CacheSchema of two CDP lines");
	oci_config_free(c);
}

static void test_validate_direct(void)
{
	oci_config *c = parse_ok(full_config, "full config again");
	char *err = NULL;

	if (c == NULL)
		return;
	is_int(oci_config_validate(c, "config.json", &err), 0, "validate accepts a parsed config");
	free(c->process->cwd);
	c->process->cwd = strdup("rel");
	is_int(oci_config_validate(c, "bundle.json", &err), -EINVAL, "validate after a change");
	is_str(err, "bundle.json: process.cwd: must be an absolute path", "validate message");
	free(err);
	oci_config_free(c);
}

static char tmpdir[] = "/tmp/test-config-XXXXXX";

static char *write_tmp(const char *name, const char *text)
{
	char *path, *json = dq(text);
	FILE *f;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
		abort();
	f = fopen(path, "we");
	fputs(json, f);
	fclose(f);
	free(json);
	return path;
}

static void test_files(void)
{
	char *path, *err = NULL, *missing;
	oci_process *p = NULL;
	oci_config *c = NULL;
	int ret;

	if (mkdtemp(tmpdir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	if (asprintf(&missing, "%s/nope/config.json", tmpdir) < 0)
		abort();
	ret = oci_config_parse_file(missing, &c, &err);
	is_int(ret, -ENOENT, "missing file: -ENOENT");
	{
		char *want;
		if (asprintf(&want, "open %s: No such file or directory", missing) < 0)
			abort();
		is_str(err, want, "missing file message names the path");
		free(want);
	}
	free(err);
	err = NULL;
	free(missing);

	path = write_tmp("config.json", CFG(UTS ", 'hostname': 'f'"));
	ret = oci_config_parse_file(path, &c, &err);
	is_int(ret, 0, "config file parses");
	if (ret == 0)
		is_str(c->hostname, "f", "config file content");
	oci_config_free(c);
	c = NULL;
	unlink(path);
	free(path);

	path = write_tmp("config.json", CFGP("{'args': ['sh'], 'cwd': 'x'}"));
	ret = oci_config_parse_file(path, &c, &err);
	is_int(ret, -EINVAL, "bad config file fails");
	is_str(err, "config.json: process.cwd: must be an absolute path",
	       "config file messages use the base name");
	free(err);
	err = NULL;
	unlink(path);
	free(path);

	ret = oci_config_parse_file(tmpdir, &c, &err);
	is_int(ret, -EINVAL, "a directory is refused");
	free(err);
	err = NULL;

	path =
	    write_tmp("process.json",
		      "{'terminal': true, 'user': {'uid': 5, 'gid': 6}, 'args': ['top', '-b'], "
		      "'env': ['A=b'], 'cwd': '/tmp', 'capabilities': {'bounding': ['CAP_KILL']}, "
		      "'rlimits': [{'type': 'RLIMIT_NOFILE', 'hard': 10, 'soft': 10}], "
		      "'noNewPrivileges': true, 'oomScoreAdj': 10}");
	ret = oci_process_parse_file(path, &p, &err);
	is_int(ret, 0, "process file parses");
	if (ret == 0) {
		ok(p->terminal && p->user.uid == 5 && p->user.gid == 6, "process file user");
		is_str(p->args[1], "-b", "process file args");
		is_str(p->capabilities->bounding[0], "CAP_KILL", "process file capabilities");
		is_int(p->rlimits[0].hard, 10, "process file rlimits");
		ok(p->oom_score_adj.value == 10 && p->no_new_privileges, "process file flags");
	}
	oci_process_free(p);
	p = NULL;
	unlink(path);
	free(path);

	struct {
		const char *json, *want;
	} bad[] = {
	    {"{'args': [], 'cwd': '/'}",
	     "process.json: args: expected a non-empty array of strings"},
	    {"{'args': ['a'], 'cwd': 'tmp'}", "process.json: cwd: must be an absolute path"},
	    {"{'args': ['a'], 'cwd': '/', 'rlimits': [{'type': 'RLIMIT_X', 'hard': 1, 'soft': 1}]}",
	     "process.json: rlimits[0].type: unknown rlimit \"RLIMIT_X\""},
	    {"{'args': ['a'], 'cwd': '/', 'user': {'uid': -1}}",
	     "process.json: user.uid: expected an unsigned integer"},
	    {"{'args': ['a'], 'cwd': '/', 'capabilities': {'effective': ['kill']}}",
	     "process.json: capabilities.effective[0]: \"kill\" is not a capability name (CAP_*)"},
	    {"[]", "process.json: expected an object"},
	    {"{", "process.json: invalid JSON: parse error: premature EOF"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = write_tmp("process.json", bad[i].json);
		ret = oci_process_parse_file(path, &p, &err);
		is_int(ret, -EINVAL, "bad process file %zu fails", i);
		is_str(err, bad[i].want, "bad process file %zu message", i);
		ok(p == NULL, "bad process file %zu: nothing returned", i);
		free(err);
		err = NULL;
		unlink(path);
		free(path);
	}
	if (asprintf(&path, "%s/none.json", tmpdir) < 0)
		abort();
	is_int(oci_process_parse_file(path, &p, &err), -ENOENT, "missing process file");
	free(err);
	free(path);
	rmdir(tmpdir);
}

static void test_resources(void)
{
	char *json = dq("{'memory': {'limit': 1048576, 'swap': 2097152}, 'cpu': {'shares': 512},"
			" 'pids': {'limit': -1}, 'blockIO': {'weight': 100},"
			" 'unified': {'cpu.max': '50000 100000'}}");
	oci_resources *r = NULL;
	char *err = NULL;
	int ret;

	ret = oci_resources_parse_data(json, strlen(json), "resources.json", &r, &err);
	is_int(ret, 0, "resources parse");
	if (ret == 0) {
		ok(r->memory->limit.value == 1048576 && r->memory->swap.value == 2097152,
		   "resources memory");
		ok(r->cpu->shares.value == 512 && !r->cpu->quota.set, "resources cpu");
		ok(r->pids_limit.set && r->pids_limit.value == -1, "resources pids -1");
		ok(r->block_io->weight.value == 100, "resources blockIO");
		is_str(r->unified.items[0].value, "50000 100000", "resources unified");
	}
	oci_resources_free(r);
	r = NULL;
	free(json);

	json = dq("{'blockIO': {'weight': 70000}}");
	ret = oci_resources_parse_data(json, strlen(json), "update.json", &r, &err);
	is_int(ret, -EINVAL, "bad resources fail");
	is_str(err, "update.json: blockIO.weight: 70000 is out of range (at most 65535)",
	       "resources message");
	free(err);
	err = NULL;
	free(json);

	json = dq("{'devices': [{'allow': true, 'access': 'z'}]}");
	ret = oci_resources_parse_data(json, strlen(json), "update.json", &r, &err);
	is_int(ret, -EINVAL, "resources are validated");
	is_str(err, "update.json: devices[0].access: must be made of the letters r, w and m",
	       "resources validation message");
	free(err);
	free(json);
}

static void test_names(void)
{
	const char *names[] = {"pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time"};
	for (int i = 0; i < OCI_NS_COUNT; i++) {
		is_str(oci_namespace_type_name(i), names[i], "namespace name %d", i);
		is_int(oci_namespace_type_from_name(names[i]), i, "namespace from name %s",
		       names[i]);
	}
	ok(oci_namespace_type_name(OCI_NS_COUNT) == NULL, "no name past the end");
	is_int(oci_namespace_type_from_name("net"), -1, "unknown name");
	is_int(oci_namespace_type_from_name(NULL), -1, "NULL name");

	char *strv[] = {"a", "b", NULL};
	is_int(oci_strv_len(strv), 2, "oci_strv_len");
	is_int(oci_strv_len(NULL), 0, "oci_strv_len(NULL)");
}

static void test_default_spec(void)
{
	for (int rootless = 0; rootless <= 1; rootless++) {
		char *json = oci_default_spec_json(rootless);
		oci_config *c = NULL;
		char *err = NULL;
		int ret;

		ok(json != NULL, "default spec (rootless=%d) generated", rootless);
		if (json == NULL)
			continue;
		ok(json[strlen(json) - 1] == '}', "no trailing newline, like runc spec");
		ok(strncmp(json, "{\n\t\"ociVersion\": \"1.3.0\",\n\t\"process\": {\n\t\t", 41) ==
		       0,
		   "tab-indented like runc spec");
		ret = oci_config_parse_data(json, strlen(json), "config.json", &c, &err);
		is_int(ret, 0, "default spec (rootless=%d) parses and validates", rootless);
		if (ret < 0) {
			printf("#   %s\n", err);
			free(err);
			free(json);
			continue;
		}
		ok(c->warnings == NULL, "no warnings");
		is_str(c->hostname, "tern", "hostname tern");
		is_str(c->process->args[0], "sh", "args sh");
		ok(c->process->terminal, "terminal");
		is_int(c->process->rlimits[0].hard, 1024, "RLIMIT_NOFILE 1024");
		ok(c->process->capabilities->inheritable == NULL, "no inheritable set");
		is_int(oci_strv_len(c->process->capabilities->bounding), 3, "three capabilities");
		ok(c->root->readonly, "readonly root");
		is_int(c->mounts_len, 7, "seven mounts");
		is_int(oci_strv_len(c->linux_->masked_paths), 10, "ten masked paths");
		is_int(oci_strv_len(c->linux_->readonly_paths), 5, "five readonly paths");
		if (rootless) {
			is_int(c->linux_->namespaces_len, 5, "rootless: five namespaces");
			is_int(c->linux_->namespaces[4].type, OCI_NS_USER, "rootless: user last");
			is_int(c->linux_->uid_mappings[0].host_id, geteuid(), "rootless: uid map");
			is_int(c->linux_->gid_mappings[0].host_id, getegid(), "rootless: gid map");
			ok(c->linux_->resources == NULL, "rootless: no resources");
			is_str(c->mounts[5].type, "none", "rootless: /sys bind");
			is_int(oci_strv_len(c->mounts[2].options), 5,
			       "rootless: devpts without gid=5");
		} else {
			is_int(c->linux_->namespaces_len, 5, "five namespaces");
			is_int(c->linux_->namespaces[1].type, OCI_NS_NETWORK, "network namespace");
			ok(c->linux_->uid_mappings_len == 0, "no uid mappings");
			ok(c->linux_->resources && c->linux_->resources->devices_len == 1 &&
			       !c->linux_->resources->devices[0].allow,
			   "deny all devices");
			is_str(c->mounts[5].type, "sysfs", "sysfs mount");
			is_str(c->mounts[2].options[5], "gid=5", "devpts gid=5");
		}
		oci_config_free(c);
		free(json);
	}
}

int main(void)
{
	test_full();
	test_minimal();
	test_versions();
	test_type_errors();
	test_json_errors();
	test_validation();
	test_intel_rdt();
	test_validate_direct();
	test_files();
	test_resources();
	test_names();
	test_default_spec();
	return done_testing();
}
