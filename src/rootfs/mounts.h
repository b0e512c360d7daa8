/* One config.json mount: the checks on its destination, the mount itself
 * (bind/rbind with ro remount, proc, sysfs, tmpfs, devpts, mqueue, cgroup
 * through cgroup-mount.h, overlay, any fs type), tmpcopyup. The option
 * parsing and the destination's resolution are in mount-common.h, included
 * here for the callers. Used by rootfs.c. */
#pragma once

#include "error.h"
#include "mount-common.h"
#include "oci-config.h"

#include <stdbool.h>

/* A bind mount's source, opened by the parent (mount-source.h): a detached
 * tree (open_tree) to move into place, or an O_PATH fd to bind with
 * mount(2); fd -1 when there is none and the source path is opened here. */
typedef struct {
	int fd;
	bool tree;
} tern_bind_source;

/* Mount `m` inside the rootfs open at `rootfd` (rootfs_path is its host
 * path, for messages). A bind mount attaches the source the parent opened
 * (mount-source.h) when there is one; else its path is opened here, a
 * relative one against the current directory, which must be the bundle
 * (runc resolves it against the bundle too). On failure the message does
 * not repeat the source and destination: the caller prefixes
 * "mount `SRC` to `DST` (mounts[N])". A mount with an idmap/ridmap option
 * or uid/gid mappings must come with its prepared (idmapped) tree.
 * A "cgroup" mount is done as if the container had no cgroup namespace. */
int tern_mount_one(int rootfd, const char *rootfs_path, const oci_mount *m, bool in_user_ns,
		   tern_error **err);

/* The same, with the bind source `src` (consumed: its fd is closed here,
 * {-1} for none), knowing whether the container has its own cgroup
 * namespace: then a "cgroup" mount is a fresh cgroup (v1) filesystem per
 * hierarchy instead of binds of the host's directories for this process's
 * cgroup. With `defer_ro`, a "ro" mount (not "rro", not cgroup) is made
 * read-write and the caller makes it read-only later, once the mounts and
 * files that go under it are in place (a sysfs that has to be a bind of
 * the host's /sys in a user namespace is still read-only at once). */
int tern_mount_one_ex(int rootfd, const char *rootfs_path, const oci_mount *m, tern_bind_source src,
		      bool in_user_ns, bool cgroupns, bool defer_ro, tern_error **err);
