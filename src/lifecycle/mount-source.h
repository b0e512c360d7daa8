/* Bind-mount sources, opened by the parent for the child (sync.h, (0)).
 *
 * A bind source is a host path chosen by whoever wrote config.json. The
 * child, root of a user namespace that maps it to an unprivileged host uid,
 * may not be allowed to reach it (a source under a host directory of mode
 * 0700), so the parent opens every one, with the host's credentials, and
 * hands the fds over; the child only attaches them (mounts.c). As runc does,
 * the parent opens them *inside the container's mount namespace* (setns
 * there, and back): what it gets are copies of the child's own mounts, so
 * the flags and submounts that the kernel locked when that namespace was
 * made for the user namespace (a read-only host mount, a mount hiding a
 * directory) stay locked in the container. A detached copy made in the
 * host's own namespace would not be: the container's root could remount it
 * read-write, or unmount a submount of an rbind. One exception: a plain
 * (non-recursive) bind of a directory with mounts under it, which the
 * kernel refuses to copy there (EINVAL: the submounts are locked) is
 * copied in tern's own namespace, as crun does; the flags of the host's
 * mount are then not locked in the container.
 *
 * Each source is a detached tree, open_tree(OPEN_TREE_CLONE [| AT_RECURSIVE
 * for rbind]), with the propagation the rootfs would have given it (a slave
 * of the host's mount unless linux.rootfsPropagation asks for shared or
 * private) and, for an idmapped mount, the id mapping (idmap.h). On a kernel
 * without open_tree or mount_setattr it is an O_PATH fd, which the child
 * binds with mount(2) through /proc/self/fd, as runc 1.1 does (no idmapped
 * mounts then). Where the parent may not enter the namespace (rootless) no
 * source is sent and the child opens them itself.
 *
 * A missing source fails here, before the child has done anything:
 * "mount `SRC` to `DST` (mounts[3]): No such file or directory". Every fd is
 * O_CLOEXEC; the child closes each as soon as it is attached.
 */
#pragma once

#include "error.h"
#include "mounts.h"
#include "oci-config.h"

#include <sys/types.h>

typedef struct tern_mount_sources tern_mount_sources;

/* Parent: open the sources of every bind mount of `config` inside the
 * mount namespace of process `pid` (the container's init, or its first
 * stage), with `bundle` for relative sources. *out is NULL when there is
 * nothing to send. */
int tern_mount_sources_prepare(const oci_config *config, pid_t pid, const char *bundle,
			       tern_mount_sources **out, tern_error **err);

/* Parent: send them to the child (SYNC_MOUNT_SOURCES, then one
 * SYNC_MOUNT_SOURCE each); `sources` may be NULL (sends n = 0). */
int tern_mount_sources_send(int sync_fd, const tern_mount_sources *sources, tern_error **err);

void tern_mount_sources_free(tern_mount_sources *sources);

/* Child: receive what the parent sent, for the mounts of `config`: *out
 * is one source per mount of config.mounts, by index ({-1, false} where
 * none came), for tern_rootfs_ctx.bind_sources (rootfs.h). */
int tern_mount_sources_receive(int sync_fd, const oci_config *config, tern_bind_source **out,
			       tern_error **err);
