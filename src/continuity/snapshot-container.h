/* What the snapshot commands do to a container, shared by take, rollback,
 * warm spares, clone spares and clones (snapshot-container.c): check it
 * runs, kill its processes, restore one from a snapshot's images with the
 * criu flags the snapshot was taken with, and make a bundle from a
 * snapshot (its config.json, an overlay on its tree/).
 *
 * Uses snapshot-store (snapshot.txt) and none of the snapshot files above
 * it (the order is in snapshot-store.h). */
#pragma once

#include "checkpoint.h"
#include "error.h"
#include "snapshot-store.h"

#include <stdbool.h>
#include <stdint.h>

/* What a snapshot or a rollback took, for --format json and the bench. */
typedef struct {
	uint64_t total_ns;  /* the command's work, from loading the container */
	uint64_t frozen_ns; /* snapshot: the container frozen; rollback: not running */
	uint64_t fs_ns;	    /* the rootfs recorded or put back */
	uint64_t criu_ns;   /* criu's dump or restore */
	uint64_t fill_ns;   /* rollback: the memory filled after the restore returned */
	uint64_t files_copied, files_linked, bytes_copied, entries_removed;
	uint64_t bytes; /* snapshot: its own size on disk */
	bool warm;	/* rollback: a warm spare was swapped in (snapshot-warm.c) */
	bool spare;	/* clone: a clone spare was claimed (snapshot-spares.c) */
} tern_snapshot_stats;

/* 0 when the container of `st` runs; else an error that says why `what`
 * (snapshot, roll back) cannot be done. */
int tern_snap_check_running(const oci_state *st, const char *what, const char *id,
			    tern_error **err);

/* Every process of the container of `st` killed (SIGKILL) and gone, its
 * cgroup kept. */
int tern_snap_kill_all(const oci_state *st, const char *id, tern_error **err);

/* The config makes a namespace of type `t` of its own (no path). */
bool tern_snap_own_ns(const oci_config *c, oci_namespace_type t);

/* The config gives the container a network namespace of its own (no
 * path): a snapshot leaves it out, a rollback joins the live one. */
bool tern_snap_own_netns(const oci_config *c);

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
