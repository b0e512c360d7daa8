/* Idmapped mounts (runtime-spec 1.2: mounts[].uidMappings/gidMappings and
 * the `idmap` / `ridmap` options).
 *
 * Making a mount idmapped needs CAP_SYS_ADMIN over the user namespace that
 * owns the source's superblock (the host's), which a container child in its
 * own user namespace no longer has. So the parent does it, before the
 * clone:
 *
 *   open_tree(source, OPEN_TREE_CLONE [| AT_RECURSIVE for rbind])
 *       a detached copy of the source, in no mount namespace yet;
 *   mount_setattr(tree, MOUNT_ATTR_IDMAP, userns [, AT_RECURSIVE for ridmap])
 *       userns: a throwaway user namespace holding the mount's mappings
 *       (or linux.uidMappings/gidMappings when the mount has none; or the
 *       user namespace joined by path), made by a helper child that is
 *       killed as soon as its /proc/PID/ns/user is open.
 *
 * The child inherits the tree fds (the clone copies the fd table) and moves
 * each one onto its destination, resolved inside the rootfs like any other
 * mount (tern_idmap_take, mounts.c). Every fd is O_CLOEXEC: none reaches the
 * container process.
 *
 * A mapping {containerID C, hostID H, size N} makes a file that the
 * filesystem says is owned by C..C+N-1 appear owned by H..H+N-1 (as the
 * host sees ids; a container user namespace then maps those as usual), the
 * way runc reads the spec.
 */
#pragma once

#include "error.h"
#include "namespaces.h"
#include "oci-config.h"

#include <stdbool.h>

/* True when mount `m` asks for an idmapped mount (the option or mappings). */
bool tern_idmap_wanted(const oci_mount *m);

/* Parent side, before the clone: make the detached idmapped trees of every
 * mount that asks for one. `bundle` is where relative sources are found.
 * Errors name the mount: "mount `SRC` to `DST` (mounts[3]): make it
 * idmapped: Invalid argument (...)". On failure nothing stays open. */
int tern_idmap_prepare(const oci_config *config, const tern_ns_plan *plan, const char *bundle,
		       tern_error **err);

/* Close the prepared trees (the parent, once the child has its copies). */
void tern_idmap_release(void);

/* Child side: the prepared tree for mount `m` (a pointer into the config
 * that tern_idmap_prepare saw), or -1. Ownership moves to the caller. */
int tern_idmap_take(const oci_mount *m);
