/* Capabilities with libcap. The bounding set is dropped while the process
 * still has CAP_SETPCAP (before the uid changes); the other sets are applied
 * after the uid change, with ambient last (it needs permitted and
 * inheritable).
 *
 * Names must be upper-case "CAP_..." as in runc. Like runc 1.1 (checked:
 * `runc run` with "CAP_BOGUS" and "cap_kill" in a set warns "ignoring
 * unknown or unavailable capabilities" and runs), an unknown name is skipped
 * with a warning naming the set, not an error; a capability newer than the
 * running kernel (above /proc/sys/kernel/cap_last_cap) is skipped with a
 * debug log. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* PR_CAPBSET_DROP every capability not in caps->bounding. Needs
 * CAP_SETPCAP, so call it before tern_user_apply. caps == NULL or an absent
 * bounding list is the empty set: everything is dropped (runc, crun). */
int tern_caps_drop_bounding(const oci_capabilities *caps, tern_error **err);

/* After tern_user_apply: set effective, permitted and inheritable to
 * exactly the lists (an absent list is the empty set), then clear the
 * ambient set and raise each ambient capability. caps == NULL: every set
 * empty. */
int tern_caps_apply(const oci_capabilities *caps, tern_error **err);

/* "CAP_SYS_ADMIN" -> 21, -1 when unknown or not upper case. */
int tern_cap_from_name(const char *name);

/* Whether a process with these capabilities could change its network
 * namespace (CAP_NET_ADMIN or CAP_SYS_ADMIN in a set it can use). */
bool tern_caps_may_change_netns(const oci_capabilities *c);

/* `tern exec` of such a process leaves this mark in the container's state
 * directory: the process may change the namespace and exit before a
 * migration looks. */
#define TERN_NETNS_EXEC_MARK "exec-net-caps"
