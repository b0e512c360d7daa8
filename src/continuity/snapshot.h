/* tern snapshot / rollback: a running container's whole state, kept under
 * a name, and the container put back to it.
 *
 * The store, one per container, beside the state directories (a name with
 * '@' is never a container id, so `list` passes it by):
 *
 *   ROOT/@snapshots/ID/         0700, flock'ed by every command using it
 *     head                      the name of the snapshot the rootfs was last
 *                               made from or recorded to: the next snapshot
 *                               shares its unchanged files (snapshot-fs.h)
 *     NAME/
 *       snapshot.txt            "key value" lines: created, parent, memory
 *       images/                 criu's dump (leave-running) with tern's
 *                               descriptor and the config (checkpoint.h);
 *                               the network namespace is left out of it
 *       tree/  files.index      the rootfs as it was (snapshot-fs.h)
 *       clones/NEW-ID           while the clone NEW-ID uses tree/ (as its
 *                               overlay's lower layer): the snapshot
 *                               cannot be deleted (snapshot-clone.c)
 *     .tmp-NAME-XXXXXX/         a snapshot being taken; renamed to NAME
 *                               when complete, removed if left by a killed
 *                               tern
 *     .warm.lock .spare/ .live/ .under/ .under-path .live-old/ .reap
 *                               a warm spare and what a warm rollback left
 *                               (snapshot-warm.c)
 *
 * A snapshot is consistent: the container is frozen (its cgroup) while the
 * rootfs is recorded and criu dumps it, and thawed right after.
 *
 * Rollback keeps what the container is to the outside: its id, its state
 * directory (the lock held throughout), its cgroup and limits, its network
 * namespace (held by an fd while the processes are replaced), its stdio
 * (the init's fds 0-2 that came from outside are taken from the old init
 * with pidfd_getfd and given to the restored one). The old processes are
 * killed, the rootfs is made the snapshot's, and criu restores the images
 * into the same cgroup and network namespace. A container with a terminal
 * gets a new pty, whose master goes to --console-socket (as with restore).
 *
 * This header is the face of the snapshot files (each says at its top
 * what it owns and which of the others it may use; the order is in
 * snapshot-store.h): take (snapshot-take.c), rollback
 * (snapshot-rollback.c), list and delete (snapshot.c), clone
 * (snapshot-clone.c); the entry points of warm spares and clone spares
 * are declared with them (snapshot-warm.h, snapshot-spares.h). */
#pragma once

#include "container.h"
#include "error.h"
#include "snapshot-container.h"
#include "snapshot-spares.h"
#include "snapshot-store.h"
#include "snapshot-warm.h"

#include <stdbool.h>
#include <stdint.h>

/* --format json of snapshot and rollback (cmd-snapshot.c): one line. */
void tern_snapshot_stats_json(const char *id, const char *name, const tern_snapshot_stats *s);

int tern_snapshot_take(const tern_runtime *rt, const char *criu, const char *id, const char *name,
		       const tern_snapshot_opts *o, tern_snapshot_stats *stats, tern_error **err);

typedef struct {
	const char *console_socket;
	bool tcp_established;
	bool ext_unix_sk;
	bool shell_job;
	bool file_locks;
	/* afterwards, a warm spare of the snapshot rolled back to is made in
	 * the background, for the next rollback to it */
	bool keep_warm;
} tern_rollback_opts;

int tern_snapshot_rollback(const tern_runtime *rt, const char *criu, const char *id,
			   const char *name, const tern_rollback_opts *o,
			   tern_snapshot_stats *stats, tern_error **err);

typedef struct {
	const char *bundle; /* --bundle: made by clone, must not exist */
	const char *console_socket;
	bool share_memory; /* --share-memory: KSM (memory-merge.h) */
	bool wait_fill;	   /* --wait-fill: return once every page is in */
} tern_clone_opts;

/* A new container `new_id` from snapshot `name` of `id` (snapshot-clone.c). */
int tern_snapshot_clone(const tern_runtime *rt, const char *criu, const char *id, const char *name,
			const char *new_id, const tern_clone_opts *o, tern_snapshot_stats *stats,
			tern_error **err);

/* After `delete` of a container that was a clone: its overlay, bundle and
 * record go, and the snapshot it came from no longer counts it. Nothing
 * to do for any other container. */
int tern_snapshot_clone_cleanup(const char *root, const char *id, tern_error **err);

/* The snapshots of `id` (also of a deleted container whose snapshots were
 * kept), oldest first. */
int tern_snapshot_list(const char *root, const char *id, tern_snapshot_info **out, size_t *n,
		       tern_error **err);

int tern_snapshot_delete(const char *root, const char *id, const char *name, tern_error **err);

/* Every snapshot of `id` (delete of the container); none is fine. */
int tern_snapshot_delete_all(const char *root, const char *id, tern_error **err);

/* `tern delete`: the container, then its warm spare, its snapshots (unless
 * `keep_snapshots`) and, for a clone, its bundle. */
int tern_snapshot_container_delete(const tern_runtime *rt, const char *id, bool force,
				   bool keep_snapshots, tern_error **err);
