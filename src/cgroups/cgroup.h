/* cgroups: where the container lives. This is the small core the lifecycle
 * needs (resolve, create, enter, freeze check, destroy) on v1, hybrid and
 * v2 hosts; resource limits build on it.
 *
 * The container's cgroup is one directory in every mounted hierarchy (each
 * cgroup v1 controller hierarchy and the v2 one, the unified one in hybrid
 * mode too, as runc does). Which directory is kept as a map from the
 * hierarchy's mount point to the cgroup path inside it, because a relative
 * linux.cgroupsPath (and the default) nests below tern's own cgroup, which
 * can differ per hierarchy: a runtime run from inside a memory-limited
 * cgroup must not place its containers outside that limit. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* linux.cgroupsPath -> the cgroup in every hierarchy. Absolute: that path
 * everywhere. Relative: below our own cgroup of each hierarchy. Empty:
 * "ID" relative, which is runc's default. `display` gets the path as
 * written in config (or "ID"), for messages. */
int tern_cgroup_resolve(const char *cgroups_path, const char *id, oci_map *paths, char **display,
			tern_error **err);

/* Whether a hierarchy lacks the cgroup: tern_cgroup_create would make
 * one (and set *created). */
bool tern_cgroup_missing(const oci_map *paths);
/* Create it in every hierarchy. *created tells whether tern made it (so
 * delete removes only what tern made). */
int tern_cgroup_create(const oci_map *paths, bool *created, tern_error **err);

/* Move `pid` into it in every hierarchy. */
int tern_cgroup_enter(const oci_map *paths, pid_t pid, tern_error **err);
/* A directory fd for clone3's CLONE_INTO_CGROUP, which starts a child in a
 * v2 cgroup without the attach a cgroup.procs write costs (the kernel
 * waits for an RCU grace period there, 1-2 ms): only when the container's
 * one cgroup is a v2 one (the flag covers a single hierarchy). -1
 * otherwise. */
int tern_cgroup_open_v2_only(const oci_map *paths);
/* Whether the container's one cgroup is a v2 one (a pure v2 host). */
bool tern_cgroup_is_v2_only(const oci_map *paths);
/* Move the calling process back to the cgroups it was in when tern first
 * looked at its hierarchies (errors only logged: best effort). */
void tern_cgroup_return_self(void);

/* Fails, saying why and what to do, when no cgroup hierarchy is mounted
 * in this mount namespace (`ip netns exec` hides them) or, with `paths`, when
 * one of the container's hierarchies is not: what needs a cgroup must not
 * go on without one (limits would silently vanish, a delete would leave
 * the cgroup behind). */
int tern_cgroup_require_mounts(const oci_map *paths, tern_error **err);

/* Thaw it and every cgroup below it (best effort): a task in a frozen v1
 * cgroup, or in a sub-cgroup frozen on its own, does not die of SIGKILL
 * until thawed. */
void tern_cgroup_thaw_all(const oci_map *paths);
/* After tern_cgroup_thaw_all, for a kill: tasks that stay frozen because
 * a v1 ancestor cgroup that is not ours is frozen get SIGKILL and are
 * moved to the hierarchy's root, where they are not frozen and so die
 * (best effort). */
void tern_cgroup_release_frozen(const oci_map *paths);

/* `exec --cgroup SPEC...`, runc's semantics: SPEC is PATH, a sub-cgroup
 * of the container's cgroup in every hierarchy (the only form on a cgroup
 * v2 host, and then the only SPEC), or CTRL[,CTRL...]:PATH for the v1
 * hierarchies carrying those controllers (repeatable; the other
 * hierarchies stay at the container's cgroup). `out` gets `paths` with
 * those entries moved down (free with oci_map_clear). PATH may not climb
 * out with `..`; every sub-cgroup must exist (exec never makes one), and
 * errors name the spec or the missing directory. */
int tern_cgroup_sub_paths(const oci_map *paths, char *const *specs, oci_map *out, tern_error **err);

/* Kill what is left in it and remove it from every hierarchy, with every
 * cgroup below it (thawed first, deepest first); a hierarchy that fails
 * does not stop the others, the first error is returned. */
int tern_cgroup_destroy(const oci_map *paths, tern_error **err);

/* destroy, and with the systemd driver (`systemd_unit` not NULL) stop the
 * container's scope as well. */
int tern_cgroup_remove(const oci_map *paths, const char *systemd_unit, tern_error **err);

/* v1 freezer.state FROZEN / v2 cgroup.freeze 1. */
bool tern_cgroup_is_frozen(const oci_map *paths);

/* Fails (EBUSY, naming the cgroup) when a process put in the container's
 * cgroup would be frozen there: the cgroup, or for one not made yet its
 * nearest existing ancestor, is frozen or freezing (v1 freezer.state, v2
 * cgroup.freeze or cgroup.events "frozen 1", inherited freezing included).
 * runc: "container's cgroup unexpectedly frozen". */
int tern_cgroup_check_unfrozen(const oci_map *paths, tern_error **err);

/* How many processes it holds already (first hierarchy that lists them;
 * 0 when it does not exist). */
size_t tern_cgroup_count_procs(const oci_map *paths);

/* SIGKILL `pid` and move it to the root cgroup of every hierarchy (best
 * effort): a task stuck in a frozen cgroup is thawed on the way out, so
 * that it can die. The processes of its pid namespace that are in `paths`
 * go the same way, when it has its own. */
void tern_cgroup_evict(const oci_map *paths, pid_t pid);

/* The pids in it (from the first hierarchy that lists them). */
int tern_cgroup_pids(const oci_map *paths, pid_t **pids, size_t *n, tern_error **err);

/* ---- resources (the per-version work is in cgroup-v1.c / cgroup-v2.c) ---- */

/* Reject nonsense before anything is created (cpus "abc", unified keys on a
 * host without a v2 controller hierarchy...). */
int tern_cgroup_validate_resources(const oci_resources *r, tern_error **err);

/* Write linux.resources into every hierarchy of the container's cgroup
 * (v1 controllers, or the v2 hierarchy when it has controllers). `update`:
 * only the fields that are set change. */
int tern_cgroup_apply_resources(const oci_map *paths, const oci_resources *r, bool update,
				tern_error **err);

/* Freeze (pause) or thaw (resume) every process of the container. */
int tern_cgroup_freeze(const oci_map *paths, bool freeze, tern_error **err);

/* Rootless mode (set by the container's cgroup set-up): device rules that
 * cannot be applied are skipped (an unprivileged user can neither write
 * v1 devices.deny nor load the v2 eBPF device program; runc ignores these
 * errors when rootless as well), and so is enabling a controller in an
 * ancestor's cgroup.subtree_control that the user may not write. */
void tern_cgroup_set_rootless(bool on);
bool tern_cgroup_rootless(void);

/* Does the hierarchy mounted at `mountpoint` carry `controller` (v1 name:
 * "memory", "cpuset", "blkio"...; NULL: any v2 key, linux.resources.unified)?
 * On a v2 host its one hierarchy carries them all. */
bool tern_cgroup_hierarchy_has(const char *mountpoint, const char *controller);

/* true when the host's cgroup v2 hierarchy has controllers (a pure v2
 * host), false on v1 and hybrid hosts. */
bool tern_cgroup_v2_has_controllers(void);

#include "cgroup-stats.h"

/* Usage counters of the container's cgroup (zero `stats` first; free with
 * tern_cgroup_stats_free). */
int tern_cgroup_stats_read(const oci_map *paths, tern_cgroup_stats *stats, tern_error **err);

/* Wait up to `timeout_ms` for an OOM kill in the container's memory
 * cgroup. 1: there was one, 0: timeout (or the cgroup went away). `state`
 * carries what the previous call saw (zero it before the first call; free
 * with tern_cgroup_oom_watch_close). */
typedef struct {
	int v1_eventfd; /* -1 until opened */
	uint64_t v2_oom_kills;
	bool started;
} tern_cgroup_oom_watch;
int tern_cgroup_oom_wait(const oci_map *paths, tern_cgroup_oom_watch *w, int timeout_ms,
			 tern_error **err);
void tern_cgroup_oom_watch_close(tern_cgroup_oom_watch *w);
