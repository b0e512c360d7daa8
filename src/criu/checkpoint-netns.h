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
 * and nothing in the container could have changed it: CAP_NET_ADMIN and
 * CAP_SYS_ADMIN are neither in the config's process.capabilities nor in
 * any process's bounding or permitted set, and /proc/sys is read-only or
 * no process has uid 0, and no such process was ever exec'd (the mark
 * TERN_NETNS_EXEC_MARK of caps.h, in `state_dir`). *why (malloc'd) says
 * what made it not plain. */
bool tern_netns_is_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			 const char *state_dir, char **why);

/* The same of a network namespace that belongs to the container's own
 * user namespace (both made by the config, no path): only criu can make
 * its successor, and it can make it empty (--empty-ns network) where this
 * holds; tern_netns_setup_in then sets it up as create would. */
bool tern_netns_is_plain_in_userns(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
				   const char *state_dir, char **why);

/* The network namespace of `pid` (criu's restored root task, in a new
 * namespace of its own) set up as create sets up a new one: `lo` up, the
 * config's net.* sysctls written. The calling thread goes back to its own
 * namespace. */
int tern_netns_setup_in(const oci_config *config, pid_t pid, tern_error **err);

/* A new network namespace for a restored container, as create makes one:
 * `lo` up, the config's net.* sysctls written. *fd: O_CLOEXEC. The
 * calling thread stays in its own namespace. */
int tern_netns_new(const oci_config *config, int *fd, tern_error **err);
