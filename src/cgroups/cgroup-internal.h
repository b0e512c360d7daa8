/* What the parts of the cgroup module share, and nothing outside them
 * uses: the table of hierarchies and the lookups on it. The parts:
 *   cgroup-hierarchy.c  the hierarchies (mountinfo), resolve, controllers
 *   cgroup-enter.c      create, enter, exec --cgroup, pids
 *   cgroup-remove.c     thaw, frozen checks, evict, destroy
 *   cgroup-resources.c  linux.resources, freeze, stats, OOM watch
 * cgroup.h stays the module's face. */
#pragma once

#include "cgroup.h"
#include "oci-config.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The mount points of the cgroup hierarchies, read once from mountinfo. */
typedef struct {
	char *dev; /* major:minor of the hierarchy's superblock: one per hierarchy */
	char *mountpoint;
	char *mount_root;  /* the cgroup the mount shows as its root */
	char *own;	   /* our own cgroup in it, relative to mount_root */
	char *controllers; /* v1: the super options naming the controllers */
	bool v2;
	bool freezer;
	bool cpuset; /* v1 cpuset: a new cgroup starts with no cpus or mems */
} hierarchy;

/* The table (cgroup-hierarchy.c), filled by tern_cg_load_hierarchies. */
extern hierarchy *tern_cg_hierarchies;
extern size_t tern_cg_n_hierarchies;
/* A pure v2 host (see cgroup-hierarchy.c). Read once. */
extern bool tern_cg_v2_host;
/* tern_cgroup_set_rootless's flag. */
extern bool tern_cg_rootless_mode;

/* Read the hierarchies from mountinfo, the first time only. */
void tern_cg_load_hierarchies(void);
/* Does the v1 mount with super options `opts` carry every controller of
 * the comma-separated list `ctrls`? */
bool tern_cg_has_controllers(const char *opts, const char *ctrls);
/* The directory of one entry of the container's paths (malloc'd). */
char *tern_cg_dir_of(const oci_kv *kv);
/* The hierarchy mounted at `mountpoint`, NULL when none is. */
const hierarchy *tern_cg_hierarchy_at(const char *mountpoint);
/* A v2 hierarchy on a pure v2 host: the v2 code does the work. */
bool tern_cg_v2_active(const hierarchy *h);
/* Whether a v1 hierarchy carries `ctrl`. */
bool tern_cg_v1_has(const char *ctrl);
/* A hybrid host with hugetlb only on the unified hierarchy `h`. */
bool tern_cg_hybrid_hugetlb_on_unified(const hierarchy *h);

/* The pids listed in `dir`'s cgroup.procs (cgroup-enter.c). */
int tern_cg_read_pids(const char *dir, pid_t **pids, size_t *n);
