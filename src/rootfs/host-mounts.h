/* Mounts tern makes in the caller's mount namespace.
 *
 * A container without a mount namespace (none in linux.namespaces: the
 * spec says it shares the caller's) gets its rootfs bind, config mounts,
 * /dev, masks and console mounted under the rootfs in the caller's
 * namespace, where nothing unmounts them when the container dies (runc and
 * crun leave them there). tern records them in the state directory and
 * unmounts exactly those at delete, when a create fails, and when a create
 * that was killed halfway is cleaned up.
 *
 * The record (TERN_HOST_MOUNTS_FILE, replaced atomically by rename) names
 * each mount by its mount id and mount point as /proc/self/mountinfo shows
 * them, so a mount id the kernel reuses elsewhere is never taken for ours:
 *   tern-host-mounts 1
 *   mntns INODE         the namespace they live in
 *   rootfs PATH         (escaped as in mountinfo)
 *   pending | made
 *   ID MOUNTPOINT       one line per mount
 * "pending" (written before the container process exists) lists what was
 * under the rootfs already, which is not tern's; "made" (written once the
 * container is set up) lists tern's mounts. */
#pragma once

#include "error.h"

#define TERN_HOST_MOUNTS_FILE "host-mounts"

/* Before the container process is spawned: record the mounts at or under
 * `rootfs` (canonical path) as not tern's. */
int tern_host_mounts_begin(int statedir, const char *rootfs, tern_error **err);

/* Once the container process has made its mounts (SYNC_READY): the mounts
 * under the rootfs that `begin` did not see are the container's; record
 * those. */
int tern_host_mounts_commit(int statedir, tern_error **err);

/* Unmount the recorded mounts (for a pending record: whatever is under the
 * rootfs now that was not there at `begin`), deepest first, and nothing
 * else, then remove the record. No record: nothing to do. A mount that a
 * process still uses is detached lazily, with a warning naming it; one that
 * something tern did not mount sits on is left in place, and then the
 * error names both and the record stays, for a later delete to finish. */
int tern_host_mounts_undo(int statedir, tern_error **err);
