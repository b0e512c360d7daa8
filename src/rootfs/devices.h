/* /dev inside the container: default devices, linux.devices, the standard
 * symlinks. Used by rootfs.c before pivot_root (a user-namespace bind needs
 * the host's /dev).
 *
 * - The defaults (null zero full random urandom tty, 0666 root:root) unless
 *   linux.devices has the same path; linux.devices with their fileMode
 *   (default 0666, umask not applied), uid and gid.
 * - mknod as real root; in a user namespace (or if mknod is EPERM) the
 *   host's node at the same path is bind-mounted onto an empty file, after
 *   checking it is the requested type and major:minor. Fifos are always
 *   mknod'ed.
 * - An existing entry that is not already the right node (an image's own
 *   /dev, a planted symlink) is unlinked and replaced, never followed.
 * - Links /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr, /dev/core (when the
 *   host has /proc/kcore), and /dev/ptmx -> pts/ptmx, which replaces any
 *   existing /dev/ptmx as runc does. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

int tern_devices_setup(int rootfd, const oci_config *config, bool in_user_ns, tern_error **err);

/* Whether `config` makes a node of `type` (S_IFCHR, S_IFBLK or S_IFIFO)
 * and major:minor at `path` (absolute, in the container): a default
 * device, or one of linux.devices. A checkpoint carries only such nodes
 * of a tmpfs, and a restore makes no other. */
bool tern_devices_allowed(const oci_config *config, const char *path, mode_t type,
			  unsigned int major, unsigned int minor);
