/* The snapshot store's own helpers, shared by snapshot.c and
 * snapshot-clone.c (the layout is in snapshot.h). */
#pragma once

#include "checkpoint.h"
#include "error.h"
#include "snapshot.h"

#include <stdbool.h>

typedef struct {
	char *path;
	int fd; /* O_DIRECTORY, flock'ed */
} tern_snap_store;

/* Open (with `create`: make) and lock ROOT/@snapshots/ID: 0, -ENOENT
 * (no store and `create` false; *err untouched) or an error. */
int tern_snap_store_open(const char *root, const char *id, bool create, tern_snap_store *s,
			 tern_error **err);
void tern_snap_store_close(tern_snap_store *s);

/* A snapshot name: what a container id may be ([A-Za-z0-9_+.-]), not
 * starting with a dot (the store's own entries do). */
int tern_snap_check_name(const char *name, tern_error **err);

/* snapshot.txt of the snapshot at `snapfd`: its info (created, parent)
 * and the criu flags it was taken with (either may be NULL). */
int tern_snap_meta_read(int snapfd, tern_snapshot_info *info, tern_snapshot_opts *o);

/* tern_restore_filled (checkpoint.h) with criu's flags as the snapshot at
 * `images`/.. was taken with them. stats: criu_ns, fill_ns (0 when filled
 * behind). */
int tern_snap_restore(const tern_runtime *rt, const char *criu, const char *id,
		      const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
		      const char *work, void (*kill_it)(void *), void *data, bool fill_behind,
		      tern_snapshot_stats *stats, tern_error **err);

/* What the config.json of a bundle made from a snapshot changes from the
 * snapshot's own: root.path is "rootfs"; linux.cgroupsPath is
 * `cgroups_path` (NULL: none, the cgroup is named after the new id); the
 * network namespace's path is dropped (a new one) unless keep_netns_path;
 * the hooks go with drop_hooks. */
typedef struct {
	const char *cgroups_path;
	bool keep_netns_path;
	bool drop_hooks;
} tern_snap_config_opts;

int tern_snap_write_config(const char *images, const char *bundle, const tern_snap_config_opts *o,
			   tern_error **err);

/* In `bundle` (which exists): rootfs/, .upper/ and .work/, and on rootfs
 * an overlay of `lower` (read-only) below .upper. No ',' or ':' in the
 * paths (the caller checks). */
int tern_snap_overlay_mount(const char *lower, const char *bundle, tern_error **err);
/* Its unmount (lazy) and the bundle removed. */
void tern_snap_overlay_undo(const char *bundle);

/* The config gives the container a network namespace of its own (no
 * path): a snapshot leaves it out, a rollback joins the live one. */
bool tern_snap_own_netns(const oci_config *c);

/* Every process of the container of `st` killed (SIGKILL) and gone, its
 * cgroup kept. */
int tern_snap_kill_all(const oci_state *st, const char *id, tern_error **err);

/* ---- warm spares (snapshot-warm.c) ---- */

/* A spare (warm or clone spare) is a container of its own under a private
 * --root, SPARE/root, with its bundle in SPARE/bundle. */
tern_runtime tern_snap_spare_runtime(const tern_runtime *rt, const char *spare);
/* Its processes, cgroup, state, overlay and directory, gone. */
void tern_snap_spare_remove(const tern_runtime *rt, const char *id, const char *spare);

/* flock of the store's .warm.lock, waited for up to timeout_ms: the fd.
 * Without `create`, -ENOENT (*err untouched) where there is none: no spare
 * was ever made there. */
int tern_snap_warm_lock(const char *store, bool create, int timeout_ms, tern_error **err);
/* NULL (no spare of `name`), "building", "ready" or "failed". */
const char *tern_snap_warm_status(const char *store, const char *name);
bool tern_snap_warm_ready(const char *store, const char *name);
/* The snapshot whose tree the container runs on since a warm rollback
 * (*buf, malloc'd), or NULL. */
const char *tern_snap_warm_live_name(const char *store, char **buf);
/* The spare (of `name` only, unless NULL) killed and removed; 1 if there
 * was one. With the warm lock held. */
int tern_snap_warm_discard(const tern_runtime *rt, const char *store, const char *id,
			   const char *name);
/* What a swap left for the reap (ROOT/@snapshots/ID/.reap: the old
 * processes, killed and still frozen, and their cgroup; the old overlay):
 * thawed, so that they die, and removed. */
void tern_snap_warm_reap(const char *store);

/* A new spare of `name`, made by a child in the background that inherits
 * the warm lock (`lockfd`, held by the caller) and holds it until the spare
 * is ready or failed; it enters the mount namespace `mntns_fd` first (-1:
 * the caller's), the one its overlay must be seen in. It first finishes
 * what a swap left (the old processes' cgroup, the old overlay); with
 * `name` NULL, that is all it does. */
int tern_snap_warm_spawn(const tern_runtime *rt, const char *criu, const char *store,
			 const char *id, const char *name, int lockfd, int mntns_fd,
			 tern_error **err);
/* The rollback: the container's processes killed, the spare's moved into
 * its cgroup and thawed, its state and the host's view of its rootfs
 * switched to the spare. *killed: the container's processes were killed
 * (a failure before that leaves the container as it was). */
int tern_snap_warm_swap(const tern_runtime *rt, const char *store, const char *id,
			tern_container_dir *dir, oci_state *st, tern_snapshot_stats *stats,
			bool *killed, tern_error **err);

/* ---- clone spares (snapshot-spares.c) ---- */

/* A clone of snapshot `name` from a ready spare, under the store's lock:
 * its bundle becomes `bundle` (which must not exist, on the same file
 * system as the store), its state and cgroup those of `new_id`; then a
 * builder makes the next spare in the background. 1: claimed; 0: no
 * spare is ready (nothing changed: a cold clone instead); <0: the claim
 * failed and left nothing behind. */
int tern_snap_spares_claim(const tern_runtime *rt, const char *criu, const char *store,
			   const char *id, const char *name, const char *new_id, const char *bundle,
			   tern_error **err);
/* The spares of `name` (NULL: of every snapshot) killed and removed, the
 * builder stopped first. Under the store's lock. */
void tern_snap_spares_discard(const char *root, const char *store, const char *name);
/* spares_wanted, spares_ready and spares_failed of `i` */
void tern_snap_spares_info(const char *store, const char *name, tern_snapshot_info *i);
