/* The "cgroup" and "cgroup2" mounts: only the container's own cgroups are
 * visible, on v1, v2 and hybrid, with or without a cgroup namespace (see
 * cgroup-mount.c). Used by mounts.c. */
#pragma once

#include "error.h"
#include "mount-common.h"

#include <stdbool.h>

/* A "cgroup" mount at `dest` inside the rootfs open at `rootfd`: on a v1
 * or hybrid host one mount per hierarchy under a tmpfs, on a v2 host the
 * same as a "cgroup2" mount. `cgroupns`: the container has its own cgroup
 * namespace (fresh mounts) rather than the host's (binds of this process's
 * own cgroup directories). */
int tern_mount_cgroup(int rootfd, const char *rootfs_path, const char *dest,
		      const tern_mount_options *opts, bool cgroupns, tern_error **err);

/* A "cgroup2" mount at `dest`: a fresh cgroup2 in a cgroup namespace, else
 * a bind of this process's own cgroup2 directory. */
int tern_mount_cgroup2(int rootfd, const char *rootfs_path, const char *dest,
		       const tern_mount_options *opts, bool cgroupns, tern_error **err);
