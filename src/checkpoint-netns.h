/* A container's own network namespace that need not travel in a
 * checkpoint: where nothing in it can differ from a new one, criu leaves
 * it out (as an external namespace) and restore gives the container a
 * new one. criu's dump and restore of a network namespace lock it with
 * iptables and run ip and iptables-save/restore several times: about a
 * quarter of a second of tern migrate's downtime here. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* Whether the network namespace of the container whose init is `pid`
 * (processes listed by its cgroups, `cgroup_paths`) holds nothing a new
 * namespace would not: the config creates it (no path), there is no user
 * namespace (a new one would be owned by the host's), it has only `lo`,
 * and no process in it could have changed it (no CAP_NET_ADMIN or
 * CAP_SYS_ADMIN in any bounding set, and /proc/sys read-only or no
 * process with uid 0). *why (malloc'd) says what made it not plain. */
bool tern_netns_is_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			 char **why);

/* A new network namespace for a restored container, as create makes one:
 * `lo` up, the config's net.* sysctls written. *fd: O_CLOEXEC. The
 * calling thread stays in its own namespace. */
int tern_netns_new(const oci_config *config, int *fd, tern_error **err);
