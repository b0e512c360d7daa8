/* The container's filesystem: runs in the child, inside its new mount
 * namespace, after the user-namespace maps are written.
 *
 * Order (runtime-spec "mounts", runc's behaviour where the spec is silent):
 *   tern_rootfs_setup():
 *     1. the mount tree is made rslave (or what linux.rootfsPropagation asks
 *        for, when that is stricter), so nothing propagates to the host;
 *     2. the rootfs is bind-mounted onto itself (pivot_root needs a mount);
 *     3. config.mounts in order, every destination resolved inside the
 *        rootfs without following symlinks out of it, created if missing;
 *     4. /dev: default devices (null zero full random urandom tty), the
 *        linux.devices, /dev/ptmx -> pts/ptmx, /dev/fd, /dev/std{in,out,err}
 *        links; mknod as real root, bind from the host in a user namespace;
 *     (ctx->before_pivot callback, if set)
 *     5. pivot_root (or MS_MOVE + chroot with --no-pivot); cwd is "/".
 *   (the caller then sets the hostname, writes sysctls, sets up the console)
 *   tern_rootfs_finalize():
 *     6. maskedPaths, readonlyPaths;
 *     7. root.readonly: remount / read-only;
 *     8. linux.rootfsPropagation applied to / when set.
 */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

typedef struct {
	const oci_config *config;
	const char *rootfs; /* absolute host path of the rootfs directory */
	bool no_pivot;
	bool in_user_ns; /* a new user namespace: devices are bind-mounted, not mknod'ed */

	/* Called by tern_rootfs_setup after step 4 (all mounts and /dev done)
	 * and before step 5 (pivot_root), when non-NULL: the lead uses it to let
	 * the parent run the prestart/createRuntime hooks and to run the
	 * createContainer hooks, which the spec places exactly there. A
	 * negative return aborts the setup with that error. */
	int (*before_pivot)(void *data, tern_error **err);
	void *before_pivot_data;
} tern_rootfs_ctx;

int tern_rootfs_setup(const tern_rootfs_ctx *ctx, tern_error **err);
int tern_rootfs_finalize(const tern_rootfs_ctx *ctx, tern_error **err);

/* After pivot_root: bind the pty slave `pts_path` (e.g. /dev/pts/0, inside
 * the container) on /dev/console, creating /dev/console as a regular file
 * first if needed, never following a symlink there. */
int tern_rootfs_bind_console(const char *pts_path, tern_error **err);
