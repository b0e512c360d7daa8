/* The systemd cgroup driver (--systemd-cgroup): the container's cgroup is a
 * transient scope unit that systemd (PID 1) creates for us over D-Bus, so
 * that systemd knows about it and does not fight over it. The scope is
 * started with the container process already in it (PIDs=), delegated to us
 * (Delegate=yes), and tern then writes linux.resources into its cgroup
 * files itself, exactly as with cgroupfs paths. The main limits also go to
 * systemd as unit properties, so that a `systemctl daemon-reload`, which
 * makes systemd rewrite the cgroup attributes it manages, keeps them.
 *
 * linux.cgroupsPath has the form "slice:prefix:name": the scope is
 * "prefix-name.scope" in "slice" (default system.slice), whose cgroup is
 * the slice's path with "-" expanded into levels:
 *   "machine-tern.slice:tern:c1" -> /machine.slice/machine-tern.slice/tern-c1.scope */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
	char *slice;  /* "system.slice" */
	char *unit;   /* "tern-c1.scope" */
	char *cgroup; /* "/system.slice/tern-c1.scope" */
} tern_systemd_unit;

/* Is systemd running as PID 1 (sd_booted's test)? */
bool tern_systemd_booted(void);

/* Parse "slice:prefix:name" (empty: "system.slice:tern:ID"). The error
 * names linux.cgroupsPath. */
int tern_systemd_unit_parse(const char *cgroups_path, const char *id, tern_systemd_unit *u,
			    tern_error **err);
void tern_systemd_unit_clear(tern_systemd_unit *u);

/* The cgroup path of a slice name: "a-b.slice" -> "/a.slice/a-b.slice",
 * "-.slice" -> "". NULL when it is not a valid slice name. Exported for
 * the unit tests. */
char *tern_systemd_slice_path(const char *slice);

/* Start the scope with `pid` in it and the limits of `r` (may be NULL) as
 * properties; waits until systemd's job is done. `v2`: the host is a pure
 * cgroup v2 host (the property names differ). */
int tern_systemd_start_scope(const tern_systemd_unit *u, pid_t pid, const oci_resources *r, bool v2,
			     tern_error **err);

/* Change the scope's properties for `tern update` (only what `r` sets). */
int tern_systemd_update_scope(const char *unit, const oci_resources *r, bool v2, tern_error **err);

/* Stop the scope and wait; a unit that is already gone is fine. */
int tern_systemd_stop_scope(const char *unit, tern_error **err);

/* The state records a systemd container's cgroup as "SLICE:UNIT"
 * ("system.slice:tern-c1.scope"): the unit part of it. */
const char *tern_systemd_state_unit(const char *cgroup_path);
