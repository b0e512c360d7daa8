/* Lifecycle operations that act on the container's cgroup: placing a new
 * container in it (cgroupfs or systemd driver), pause, resume, update, the
 * list of its processes (ps, kill --all), and removing it. */
#pragma once

#include "container-shared.h"

/* Before the container process exists. cgroupfs driver: create the cgroup
 * and write the limits now, so the process is constrained from the moment
 * it is moved in. systemd driver: only work out the scope and its paths;
 * systemd creates a scope only with a process in it. */
int tern_container_cgroup_prepare(tern_container *c, tern_error **err);
/* The two halves of prepare: work out the paths (and the systemd scope),
 * then make the cgroup with its limits (cgroupfs; rootless: what can be). */
int tern_container_cgroup_resolve(tern_container *c, tern_error **err);
int tern_container_cgroup_make(tern_container *c, tern_error **err);
/* Whether create makes the cgroup after the clone, while the child sets up
 * its first mounts (it waits for the cgroup before anything that needs it,
 * and before it can exec: see spawn.c), rather than before: the cgroupfs
 * driver on cgroup v1 or hybrid, as root, with a one-stage spawn. On a v2
 * host the child is cloned straight into the cgroup, which must exist
 * first; rootless and the slow path keep the older order. */
bool tern_container_cgroup_make_after_clone(const tern_container *c);

/* Move the (not yet exec'd) container process into its cgroup; with the
 * systemd driver, start the scope around it and write the limits. */
int tern_container_cgroup_join(tern_container *c, pid_t pid, tern_error **err);

int tern_container_pause(const tern_runtime *rt, const char *id, tern_error **err);
/* A migrated container (status "migrated": tern migrate handed it over)
 * is refused, naming where it went; tern_container_resume_forced
 * (`resume --force`) takes its mark away and thaws it, while its process
 * lives. */
int tern_container_resume(const tern_runtime *rt, const char *id, tern_error **err);
int tern_container_resume_forced(const tern_runtime *rt, const char *id, tern_error **err);

/* Apply `r` to a created, running or paused container. */
int tern_container_update(const tern_runtime *rt, const char *id, const oci_resources *r,
			  tern_error **err);

/* The container's processes, as host pids. */
int tern_container_pids(const tern_runtime *rt, const char *id, pid_t **pids, size_t *n,
			tern_error **err);
