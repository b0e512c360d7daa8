/* The container's filesystem: runs in the child, inside its new mount
 * namespace (or the caller's, without one: host_mount_ns below), after the
 * user-namespace maps are written.
 *
 * Order (runtime-spec "mounts", runc's behaviour where the spec is silent):
 *   tern_rootfs_setup():
 *     1. the mount tree is made rslave, or given the linux.rootfsPropagation
 *        value when one is set (as runc does: "rshared" keeps receiving and
 *        sending host mount events, which bidirectional volumes need;
 *        "unbindable" is private until step 8, or nothing could be bound);
 *        the mount holding the rootfs is made a slave (default, slave,
 *        rslave) or private (other values) if it is shared, and private if
 *        it is unbindable, so the bind below does not propagate, can be
 *        made, and pivot_root accepts it;
 *     2. the rootfs is bind-mounted onto itself (pivot_root needs a mount);
 *        without a mount namespace (host_mount_ns) step 1 is skipped, the
 *        host's mounts keep their propagation, and only this bind gets the
 *        rootfsPropagation value (default rslave; "shared" a new peer
 *        group);
 *     3. config.mounts in order, every destination resolved inside the
 *        rootfs without following symlinks out of it, created if missing;
 *        a "ro" mount that has something under it (a later mount of the
 *        config below its destination; for /dev, the devices and links
 *        too) is mounted read-write, made read-only at tern_rootfs_finalize
 *        (runc does so for /dev);
 *     4. /dev (skipped, like runc, when a config mount binds /dev): default
 *        devices (null zero full random urandom tty), the linux.devices,
 *        /dev/ptmx -> pts/ptmx, /dev/fd, /dev/std{in,out,err}, /dev/core
 *        links; mknod as real root, bind from the host in a user namespace;
 *     (ctx->before_pivot callback, if set)
 *     5. pivot_root (or MS_MOVE + chroot with --no-pivot, once every
 *        mount that neither holds the rootfs nor is under it is detached,
 *        or covered with an empty tmpfs where the kernel keeps it locked;
 *        a plain chroot without a mount namespace); cwd is "/".
 *   (the caller then sets the hostname, writes sysctls, sets up the console)
 *   tern_rootfs_finalize():
 *        the "ro" held back at step 3 (that mount only, with
 *        mount_setattr: the mounts under it keep their flags);
 *     6. maskedPaths (a /dev/null bind over files, checked to be 1:3; an
 *        empty read-only tmpfs over directories), readonlyPaths (bind onto
 *        itself, then read-only recursively, other flags untouched);
 *        missing paths are skipped;
 *     7. root.readonly: remount / read-only (the root mount only, keeping
 *        its locked flags; mounts below keep their own);
 *     8. linux.rootfsPropagation applied to / when set (shared: a new peer
 *        group, slave: receives from the host's, unbindable: unbindable).
 */
#pragma once

#include "error.h"
#include "mounts.h"
#include "oci-config.h"

#include <stdbool.h>

/* Contract for the caller:
 *  - `rootfs` is absolute and canonical (realpath of root.path, which is
 *    relative to the bundle);
 *  - the current directory is the bundle: a relative bind-mount source is
 *    relative to it, as with runc;
 *  - the process is single-threaded (umask is changed briefly for mknod);
 *  - a cgroup namespace listed in linux.namespaces (new or joined) is
 *    already entered: "cgroup" mounts are then fresh mounts, otherwise
 *    binds of this process's cgroup directories, so the process must be
 *    in the container's cgroup by the first such mount (see
 *    before_cgroup_mount);
 *  - errors come back as one chain, e.g. "mount `/nonexistent` to `/mnt`
 *    (mounts[7]): No such file or directory", "maskedPaths[2] `/proc/x`:
 *    ...", "linux.devices[0] `/dev/fuse`: ...".
 * tern_rootfs_finalize and tern_rootfs_bind_console do not need /proc in
 * the container: they use open_tree/move_mount/mount_setattr on fds. */
typedef struct {
	const oci_config *config;
	const char *rootfs; /* absolute, canonical host path of the rootfs directory */
	bool no_pivot;
	/* No mount namespace (none in linux.namespaces): the mounts are made
	 * in the caller's namespace, under the rootfs, the host's "/" keeps
	 * its propagation, and the process is chrooted into the rootfs. */
	bool host_mount_ns;
	bool in_user_ns; /* a new user namespace: devices are bind-mounted, not mknod'ed */
	/* The sources of config.mounts opened for us (mounts.h), one per mount
	 * by index, or NULL: each fd is taken (the slot set to -1) as its
	 * mount is made; a mount without one opens its source path itself. */
	tern_bind_source *bind_sources;

	/* Called by tern_rootfs_setup after step 4 (all mounts and /dev done)
	 * and before step 5 (pivot_root), when non-NULL: the lead uses it to let
	 * the parent run the prestart/createRuntime hooks and to run the
	 * createContainer hooks, which the spec places exactly there. A
	 * negative return aborts the setup with that error. */
	int (*before_pivot)(void *data, tern_error **err);
	void *before_pivot_data;

	/* Called by tern_rootfs_setup before each "cgroup" or "cgroup2" mount
	 * of config.mounts, when non-NULL. Such a mount shows the cgroups this
	 * process is in (read from /proc/self/cgroup): the lead waits here
	 * until the parent has moved it into the container's cgroup, which it
	 * otherwise does while the other mounts are made. A negative return
	 * aborts the setup with that error. */
	int (*before_cgroup_mount)(void *data, tern_error **err);
	void *before_cgroup_mount_data;
} tern_rootfs_ctx;

int tern_rootfs_setup(const tern_rootfs_ctx *ctx, tern_error **err);
int tern_rootfs_finalize(const tern_rootfs_ctx *ctx, tern_error **err);

/* After pivot_root: bind the pty slave `slave` (an fd; `pts_path`, e.g.
 * /dev/pts/0, is for messages) on /dev/console, creating /dev/console as a
 * regular file first if needed, never following a symlink there. */
/* An empty, read-only tmpfs (nosuid, nodev, noexec) on the directory
 * `dstfd`: a new one while *shared is -1, which then holds it; else a
 * clone of *shared (the masked directories all show one). -errno. */
int tern_rootfs_mount_empty_tmpfs(int dstfd, int *shared);

int tern_rootfs_bind_console(int slave, const char *pts_path, tern_error **err);
