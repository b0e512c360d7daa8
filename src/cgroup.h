/* cgroups: where the container lives. This is the small core the lifecycle
 * needs (create, enter, freeze check, destroy) on v1, hybrid and v2 hosts;
 * resource limits build on it.
 *
 * A container's cgroup has one path (e.g. "/tern/ID"), created in every
 * mounted hierarchy: each cgroup v1 controller hierarchy and the v2 one
 * (the unified one in hybrid mode too, as runc does). */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* The cgroup path for linux.cgroupsPath (NULL or "" -> "/ID", as runc does; a
 * relative path is taken below the hierarchy roots). */
char *tern_cgroup_path_for(const char *cgroups_path, const char *id);

/* Create the cgroup in every hierarchy. *created tells whether tern made it
 * (so delete removes only what tern made). */
int tern_cgroup_create(const char *path, bool *created, tern_error **err);

/* Move `pid` into the cgroup in every hierarchy. */
int tern_cgroup_enter(const char *path, pid_t pid, tern_error **err);

/* Kill what is left in it and remove it from every hierarchy. */
int tern_cgroup_destroy(const char *path, tern_error **err);

/* v1 freezer.state FROZEN / v2 cgroup.freeze 1. */
bool tern_cgroup_is_frozen(const char *path);

/* The pids in the cgroup (any hierarchy that has them). */
int tern_cgroup_pids(const char *path, pid_t **pids, size_t *n, tern_error **err);
