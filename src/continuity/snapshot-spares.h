/* Clone spares (snapshot-spares.c, whose top says how they work): `tern
 * clone --spares N`, the builder that keeps N ready, the claim that makes
 * one a clone, and what list and delete see of them.
 *
 * Uses snapshot-store, snapshot-container and snapshot-warm (a spare's
 * runtime and removal) only (the order is in snapshot-store.h); clone
 * (snapshot-clone.c) and list and delete (snapshot.c) use it. */
#pragma once

#include "container.h"
#include "error.h"
#include "snapshot-store.h"

#include <stdbool.h>

/* `tern clone --spares N ID NAME`: keep N clones of snapshot NAME restored
 * and frozen, ready for `tern clone` to claim; 0 removes them. Returns
 * once the builder runs in the background. */
int tern_snapshot_clone_spares(const tern_runtime *rt, const char *criu, const char *id,
			       const char *name, unsigned want, tern_error **err);

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
