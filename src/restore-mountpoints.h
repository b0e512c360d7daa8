/* The mount points a restore needs in a fresh rootfs (see the .c file for
 * what is created and what is not). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* A bind mount: type "bind" (or "rbind"), or a bind/rbind option. */
bool tern_mount_is_bind(const oci_mount *m);

/* Before CRIU restores into `rootfs` (a host path), make the mount points
 * of `config`'s mounts that are missing there. Relative bind sources are
 * relative to `bundle`. Mounts nothing that outlives the call. */
int tern_restore_make_mountpoints(const char *rootfs, const char *bundle, const oci_config *config,
				  tern_error **err);
