/* Idmapped mounts (runtime-spec 1.2: mounts[].uidMappings/gidMappings and
 * the `idmap` / `ridmap` options).
 *
 * Making a mount idmapped needs CAP_SYS_ADMIN over the user namespace that
 * owns the source's superblock (the host's), which a container child in its
 * own user namespace no longer has. So the parent does it, on the detached
 * copy of the source that it makes for every bind mount (mount-source.h):
 *
 *   mount_setattr(tree, MOUNT_ATTR_IDMAP, userns [, AT_RECURSIVE for ridmap])
 *       userns: a throwaway user namespace holding the mount's own mappings
 *       (made by a helper child that is killed as soon as its
 *       /proc/PID/ns/user is open), or else the container's user namespace
 *       (new or joined by path), whose maps are linux.uidMappings/gidMappings.
 *
 * The child moves the tree onto its destination like any other bind source.
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

/* Make the detached tree `tree` (mount `m`, mounts[index]) idmapped; only
 * its top mount unless `recursive` (ridmap). `container_userns` is the
 * container's user namespace (an nsfs fd) or -1 when it has none. Errors
 * say "make it idmapped: Invalid argument (...)"; the caller names the
 * mount. */
int tern_idmap_apply(int tree, const oci_mount *m, size_t index, bool recursive,
		     int container_userns, tern_error **err);
