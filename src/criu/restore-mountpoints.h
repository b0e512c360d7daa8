/* The mount points a restore needs in a fresh rootfs (see the .c file for
 * what is created and what is not). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* A bind mount: type "bind" (or "rbind"), or a bind/rbind option. */
bool tern_mount_is_bind(const oci_mount *m);

/* The path inside `rootfs` (a host path) that the mount destination
 * `dest` names once its symlinks are resolved inside the rootfs, as create
 * resolves it before it mounts there: "/real/conf" for "/conf" when the
 * image has /conf -> /real/conf. The kernel's mount table, and so CRIU,
 * knows the mount by that path. `dest` itself (a copy) when it cannot be
 * resolved (not there, or under a mount the host's view lacks). */
char *tern_mount_dest_resolved(const char *rootfs, const char *dest);

/* Whether process `pid` sees a mount at `path` (its own /proc/PID/mountinfo,
 * paths relative to its root). */
bool tern_mount_at(pid_t pid, const char *path);

/* Before CRIU restores into `rootfs` (a host path), make the mount points
 * of `config`'s mounts that are missing there. Relative bind sources are
 * relative to `bundle`. Mounts nothing that outlives the call. */
int tern_restore_make_mountpoints(const char *rootfs, const char *bundle, const oci_config *config,
				  tern_error **err);
