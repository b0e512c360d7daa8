/* cgroup v1: linux.resources written into one controller hierarchy at a
 * time, the freezer, usage statistics and the OOM notification.
 *
 * The cgroup module (cgroup.h, cgroup-hierarchy.c) knows the hierarchies;
 * it calls these once per v1 hierarchy with the container's directory in it
 * and the mount's super options (e.g. "rw,relatime,cpu,cpuacct",
 * "rw,memory", "rw,name=systemd"), from which this module learns which
 * controllers that directory carries. A field of
 * linux.resources whose controller is not in `controllers` is left to the
 * call for the hierarchy that has it; a field whose controller is mounted
 * nowhere is silently not applied (as runc does). */
#pragma once

#include "cgroup-stats.h"
#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* Reject values that can never work, before any cgroup exists: `unified`
 * keys (they need cgroup v2), cpu lists that do not parse ("abc"), memory
 * swap below the limit, swappiness above 100, bad device rules, blkio
 * weights outside 10..1000, hugepage sizes that are not "<n>KB|MB|GB". */
int tern_cgroup_v1_validate(const oci_resources *r, tern_error **err);

/* Write every field of `r` that belongs to a controller in `controllers`
 * into the cgroup directory `dir`.
 *
 * update = false (create): the device rules are always written (deny all,
 * the rules of `r` in order, then the standard devices every container
 * gets, as runc does), also when `r` has none or is NULL (no
 * linux.resources): so call it on create for every v1 hierarchy even then.
 * update = true (tern update): only fields that are set are written, device
 * rules only when `r` has some, and memory.checkBeforeUpdate is honoured.
 *
 * Fields set to 0 that the kernel would take literally to the container's
 * harm (memory limit 0, cpu shares 0...) mean "unset", as in runc;
 * pids.limit <= 0 means "max". Errors name the config field and the file.
 * Kernel memory limits the kernel no longer has only warn (tern_warn). */
int tern_cgroup_v1_apply(const char *dir, const char *controllers, const oci_resources *r,
			 bool update, tern_error **err);

/* freezer.state of `dir` (a freezer hierarchy's directory): FROZEN and wait
 * (bounded, about 5 s) until the kernel reports every task frozen, or
 * THAWED. A freeze that does not complete is undone and reported. */
int tern_cgroup_v1_freeze(const char *dir, bool freeze, tern_error **err);

/* Add what the controllers in `controllers` know about `dir` to `s` (cpu
 * and cpuacct: cpu usage and throttling; memory; pids; blkio; hugetlb).
 * Call once per v1 hierarchy on the same zeroed `s`; free it with
 * tern_cgroup_stats_free. A counter file the kernel lacks is skipped. */
int tern_cgroup_v1_stats(const char *dir, const char *controllers, tern_cgroup_stats *s,
			 tern_error **err);

/* An eventfd (O_CLOEXEC, blocking) that the kernel signals when a process
 * of the memory cgroup `dir` hits OOM: registered on memory.oom_control
 * through cgroup.event_control. The caller owns and closes it. Each read
 * returns the number of events (8-byte counter). The kernel also signals
 * it once when the cgroup is removed: after a wakeup, a missing
 * `dir`/cgroup.event_control means "gone", not "oom". */
int tern_cgroup_v1_oom_eventfd(const char *dir, tern_error **err);
