/* Where the container's memory and CPUs come from: linux.memoryPolicy
 * (set_mempolicy(2)) and process.execCPUAffinity (sched_setaffinity(2)).
 *
 * libocispec has checked the names, the list syntax and the combinations
 * that need no machine to judge. Here, in the parent before anything is
 * created: the nodes and CPUs against this machine (sysfs), the policy's
 * nodes against linux.resources.cpu.mems, and the policy against what this
 * kernel supports (tried in a throw-away child). The masks are built then,
 * so the child only makes the syscall.
 *
 * When, in the child:
 *  - the memory policy, in the init (init.c) and in every exec process
 *    (exec.c): inside the container's cgroup (joining a cpuset cgroup
 *    rebinds a policy's nodes to the new cpuset unless
 *    MPOL_F_STATIC_NODES), before any seccomp filter and before the
 *    process reports ready, so that a failure fails create or exec. The
 *    policy survives execve.
 *  - execCPUAffinity, in exec processes only (config.md: "not applicable
 *    to the container's init process"; config.json's value is the default
 *    of every `tern exec`). `initial`: set by the parent on the new
 *    process before it joins the container's cgroup, so that the
 *    runtime's work there runs on those CPUs. `final`: set by the process
 *    itself once in the cgroup, before any seccomp filter. Without `final`
 *    the affinity stays as the kernel left it when the process joined the
 *    cgroup (config.md: the runtime SHOULD NOT change it).
 */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The sysfs directory with node/ and cpu/, as tern reads it; unit tests
 * pass a directory of their own. */
#define TERN_SYSFS_SYSTEM "/sys/devices/system"

typedef struct {
	bool set;
	int mode;		 /* the kernel's MPOL_* | MPOL_F_* */
	unsigned long *nodemask; /* NULL: no nodes */
	unsigned long maxnode;	 /* set_mempolicy's maxnode for nodemask */
	char *what;		 /* "MPOL_BIND nodes 0-1", for messages */
} tern_mempolicy;

/* Check linux.memoryPolicy of `config` against this machine (`sysdir`,
 * NULL for TERN_SYSFS_SYSTEM) and build *out (out->set false when the
 * config has none). Errors name the field: "linux.memoryPolicy.nodes:
 * node 3 does not exist on this machine (its nodes: 0-1)". Reads files
 * only: the config fuzzer calls it. */
int tern_mempolicy_prepare(const oci_config *config, const char *sysdir, tern_mempolicy *out,
			   tern_error **err);

/* Whether this kernel takes the policy's mode and flags, asked in a forked
 * child so that tern keeps its own policy: "linux.memoryPolicy.mode: this
 * kernel (Linux 6.1.0) does not know MPOL_WEIGHTED_INTERLEAVE (new in
 * Linux 6.9)". */
int tern_mempolicy_probe(const tern_mempolicy *mp, tern_error **err);

/* set_mempolicy in the child. No allocation on success. */
int tern_mempolicy_apply(const tern_mempolicy *mp, tern_error **err);

void tern_mempolicy_clear(tern_mempolicy *mp);

typedef struct {
	cpu_set_t *initial; /* NULL: not given (or empty) */
	cpu_set_t *final;
	size_t size; /* bytes of each set, for sched_setaffinity */
	char *initial_list, *final_list;
} tern_cpu_affinity;

/* Check process.execCPUAffinity (`a` may be NULL) against this machine's
 * possible CPUs and build the sets. Errors name the field:
 * "process.execCPUAffinity.final: CPU 7 does not exist on this machine
 * (its CPUs: 0-1)". */
int tern_cpu_affinity_prepare(const oci_exec_cpu_affinity *a, const char *sysdir,
			      tern_cpu_affinity *out, tern_error **err);

/* In the parent: the new process `pid` to `initial` (nothing without it). */
int tern_cpu_affinity_set_initial(const tern_cpu_affinity *a, pid_t pid, tern_error **err);

/* In the process itself, once in the container's cgroup: to `final`.
 * With no execCPUAffinity at all: tern_cpu_affinity_reset. With only
 * `initial`: nothing, the kernel decides (config.md). */
int tern_cpu_affinity_apply_final(const tern_cpu_affinity *a, tern_error **err);

/* In the init, or an exec process without execCPUAffinity, once in the
 * container's cgroup: every CPU its cpuset allows. Since Linux 6.2 a task
 * keeps across a cpuset move the affinity it was given (commit "sched:
 * Enforce user requested affinity"), so a tern run pinned (taskset, a
 * systemd unit's CPUAffinity=, a kubelet's CPU manager) would pin the
 * container; older kernels reset it on the move. runc and crun reset it
 * too. Best effort, as theirs: if the kernel refuses, the process keeps
 * the affinity it inherited. */
void tern_cpu_affinity_reset(void);

void tern_cpu_affinity_clear(tern_cpu_affinity *a);
