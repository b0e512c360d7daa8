/* Lifecycle operations that act on the container's cgroup: pause, resume,
 * update, and the list of its processes (ps, kill --all). */
#pragma once

#include "container.h"

int tern_container_pause(const tern_runtime *rt, const char *id, tern_error **err);
int tern_container_resume(const tern_runtime *rt, const char *id, tern_error **err);

/* Apply `r` to a created, running or paused container. */
int tern_container_update(const tern_runtime *rt, const char *id, const oci_resources *r,
			  tern_error **err);

/* The container's processes, as host pids. */
int tern_container_pids(const tern_runtime *rt, const char *id, pid_t **pids, size_t *n,
			tern_error **err);
