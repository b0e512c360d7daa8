/* cgroup v2 (the unified hierarchy): linux.resources written as v2 files,
 * controller delegation down to the container, the eBPF device program,
 * the freezer and statistics.
 *
 * Every function takes the container's cgroup directory (hierarchy mount
 * point + cgroup path, e.g. "/sys/fs/cgroup/process_api/ID") and is
 * self-contained: the cgroup module (cgroup.h) decides which hierarchy is
 * v2 and calls these. */
#pragma once

#include "cgroup-stats.h"
#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reject nonsense in linux.resources before anything is created: shares
 * outside 2..262144, cpus/mems that are not lists of ranges, swap below the
 * memory limit, blkio weights outside 10..1000, unified keys with "/" or
 * "..", hugepage sizes with "/", malformed device rules. Needs no cgroup. */
int tern_cgroup_v2_validate(const oci_resources *r, tern_error **err);

/* Delegation: enable, in cgroup.subtree_control of every cgroup from the
 * hierarchy root `root` down to the parent of `path` (the container's cgroup
 * inside that hierarchy), each controller of "cpu memory pids io cpuset
 * hugetlb rdma misc" that the level offers in cgroup.controllers. A
 * non-root cgroup that has processes of its own cannot do that (the v2 "no
 * internal processes" rule): the error then names that directory (EBUSY).
 * Call it after the container's directory exists and before apply. */
int tern_cgroup_v2_prepare(const char *root, const char *path, tern_error **err);

/* Rootless (tern_cgroup_set_rootless): prepare skips the levels whose
 * cgroup.subtree_control the user may not write. */
void tern_cgroup_v2_set_rootless(bool on);

/* Write every set field of `r` into the cgroup directory `dir`. `update`
 * only changes what memory.checkBeforeUpdate does (refuse a limit below
 * memory.current). Fields v2 lacks (kernel memory, swappiness,
 * disableOOMKiller, network, blkio leafWeight) give a warning and are
 * skipped, as runc does; realtime cpu settings are an error. Devices are
 * not handled here: see tern_cgroup_v2_devices_apply. */
int tern_cgroup_v2_apply(const char *dir, const oci_resources *r, bool update, tern_error **err);

/* Build an eBPF BPF_PROG_TYPE_CGROUP_DEVICE program from `rules` (the
 * linux.resources.devices list, n entries, may be NULL/0) followed by
 * runc's default rules (mknod of any device; rwm on /dev/null, zero, full,
 * random, urandom, tty, ptmx, any pts, net/tun), deny by default, the last
 * matching rule wins; attach it to `dir` with BPF_F_ALLOW_MULTI and then
 * detach the programs that were attached to `dir` before (so an update
 * replaces the old rules; between the two steps both apply, which can only
 * deny more). No fd stays open on return: the kernel keeps the attached
 * program alive. Rules for linux.devices entries are the caller's to add. */
int tern_cgroup_v2_devices_apply(const char *dir, const oci_device_cgroup_rule *rules, size_t n,
				 tern_error **err);
/* Only build that program (its rules checked, the same errors) and tell its
 * length in instructions; for the fuzz tests. */
int tern_cgroup_v2_devices_program_len(const oci_device_cgroup_rule *rules, size_t n, size_t *len,
				       tern_error **err);

/* Write cgroup.freeze (1 or 0) and wait, at most about 10 s, until
 * cgroup.events reports "frozen 1" (or "frozen 0" when thawing). */
int tern_cgroup_v2_freeze(const char *dir, bool freeze, tern_error **err);

/* ---- statistics ---- */

/* Add what `dir` knows to `s` (zeroed by the caller; free it with
 * tern_cgroup_stats_free): cpu.stat (usec converted to ns), memory.current,
 * max, peak, memory.events "max" as failcnt, swap reported as memory+swap
 * like v1 (and runc on v2), memory.stat as raw with "file" as cache,
 * pids.current/max ("max" -> 0), io.stat into io_service_bytes (rbytes,
 * wbytes, dbytes as Read/Write/Discard) and io_serviced (rios, wios, dios),
 * hugetlb.SIZE.current and events "max". A controller that is not enabled
 * leaves its part out (has_* false); only an unopenable `dir` is an error. */
int tern_cgroup_v2_stats(const char *dir, tern_cgroup_stats *s, tern_error **err);

/* Only the hugetlb part (a hybrid host whose hugetlb is on the unified
 * hierarchy). */
int tern_cgroup_v2_hugetlb_stats(const char *dir, tern_cgroup_stats *s, tern_error **err);

/* Wait until memory.events of `dir` reports more OOM kills than
 * `*oom_kill` (which is then updated), or `timeout_ms` passes (-1: no
 * limit). Returns 1 when an OOM kill happened, 0 on timeout, -errno on
 * error; also returns 0 when the cgroup goes away (inotify IN_IGNORED). */
int tern_cgroup_v2_oom_wait(const char *dir, uint64_t *oom_kill, int timeout_ms, tern_error **err);

/* ---- pure conversions, exported for the unit tests ---- */

/* cpu.shares (v1, 2..262144) -> cpu.weight (v2, 1..10000), runc/crun's
 * linear map. 0 (unset) -> 0. */
uint64_t tern_cgroup_v2_shares_to_weight(uint64_t shares);

/* blkio.weight (10..1000) -> io.weight (1..10000). 0 -> 0. */
uint64_t tern_cgroup_v2_blkio_to_io_weight(uint64_t weight);

/* OCI memory.swap is memory+swap; v2 memory.swap.max is swap alone.
 * limit: memory.limit (limit_set false when absent). Returns 0 and sets
 * *out to the swap.max value (-1 for "max"), 1 when nothing must be
 * written, or -EINVAL when the pair makes no sense (swap < limit, or a
 * finite swap without a memory limit). */
int tern_cgroup_v2_swap_max(bool limit_set, int64_t limit, int64_t swap, int64_t *out);

/* The io.max line for one device: "MAJ:MIN rbps=X wbps=Y riops=Z wiops=W",
 * only the keys whose set[] flag is true, in that order; a rate of 0 is
 * written "max" (no limit), as with v1 where 0 removes a throttle.
 * Caller frees. */
char *tern_cgroup_v2_io_max_line(int64_t major, int64_t minor, const bool set[4],
				 const uint64_t rate[4]);

/* cpu.max: "QUOTA PERIOD"; quota < 0 -> "max". Caller frees. */
char *tern_cgroup_v2_cpu_max_value(int64_t quota, uint64_t period);
