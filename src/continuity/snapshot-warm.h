/* Warm spares (snapshot-warm.c, whose top says how they work): their
 * place in the store (.warm.lock, .spare/, .live/, .reap), the builder
 * that makes one in the background, the swap that is a warm rollback, and
 * what `delete` undoes. Also the runtime of a spare, warm or clone spare
 * alike (snapshot-spares.c uses it).
 *
 * Uses snapshot-store and snapshot-container only (the order is in
 * snapshot-store.h); take and rollback (snapshot-take.c,
 * snapshot-rollback.c) and list and delete (snapshot.c) use it. */
#pragma once

#include "container.h"
#include "error.h"
#include "snapshot-container.h"
#include "state.h"

#include <stdbool.h>

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

/* After `delete` (or a migration away): a warm spare of the container is
 * killed and removed; if the container ran on a spare's overlay since a
 * warm rollback, what it holds is copied down into the bundle's own rootfs
 * and the overlay unmounted. */
int tern_snapshot_warm_cleanup(const tern_runtime *rt, const char *id, tern_error **err);
