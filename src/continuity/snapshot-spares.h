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

/* What a clone restored for nobody's stdio (a spare; a cold clone in a
 * user namespace of its own) gets for the init's stdio that was outside
 * the container, of the kind criu finds in the images (it checks a
 * file's mode): /dev/null for a device (or what is not recorded), else
 * BUNDLE/stdio.log, appended to, which takes what a pipe or a file took
 * before, and is the container root's where the images have a user
 * namespace of their own (criu reopens it from inside). One fd each:
 * criu closes an inherited fd once it has it. fds are -1 where not
 * opened; the caller closes them. */
int tern_snap_clone_stdio(const char *images, const char *bundle, int fds[3], tern_error **err);

/* 0, or why a snapshot of a container with a user namespace of its own
 * cannot be cloned: its network namespace was joined by path, left out
 * of the images, or has a veth to the host. */
int tern_snap_clone_check_userns(const char *images, const char *id, const char *name,
				 tern_error **err);
