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
 */
#pragma once

#include "container.h"

#include <stdbool.h>
#include <stdint.h>

#define TERN_SNAPSHOT_DIR "@snapshots"

typedef struct {
	char *name;
	char *created; /* RFC 3339 */
	char *parent;  /* the snapshot its files are shared with, or "" */
	uint64_t bytes; /* on disk, not shared with another snapshot */
	/* its memory: 0, all in its images; N, pages unchanged since its
	 * parent are in the parent's (images/parent, N levels) */
	int mem_depth;
	/* its warm spare: NULL (none), "building", "ready" or "failed" */
	const char *warm;
	/* its clone spares (snapshot-spares.c): as many as `clone --spares`
	 * wants, how many are ready, whether the last could not be made */
	unsigned spares_wanted, spares_ready;
	bool spares_failed;
} tern_snapshot_info;

void tern_snapshot_info_clear(tern_snapshot_info *i);

typedef struct {
	bool tcp_established;
	bool ext_unix_sk;
	bool shell_job;
	bool file_locks;
	bool link_remap;
	/* afterwards, a warm spare of this snapshot is made in the background
	 * (snapshot-warm.c): a rollback to it is then a swap */
	bool keep_warm;
} tern_snapshot_opts;

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

/* --format json of snapshot and rollback (cmd-snapshot.c): one line. */
void tern_snapshot_stats_json(const char *id, const char *name, const tern_snapshot_stats *s);

int tern_snapshot_take(const tern_runtime *rt, const char *criu, const char *id,
		       const char *name, const tern_snapshot_opts *o, tern_snapshot_stats *stats,
		       tern_error **err);

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

/* `tern clone --spares N ID NAME`: keep N clones of snapshot NAME restored
 * and frozen, ready for `tern clone` to claim (snapshot-spares.c); 0
 * removes them. Returns once the builder runs in the background. */
int tern_snapshot_clone_spares(const tern_runtime *rt, const char *criu, const char *id,
			       const char *name, unsigned want, tern_error **err);

/* A new container `new_id` from snapshot `name` of `id` (snapshot-clone.c). */
int tern_snapshot_clone(const tern_runtime *rt, const char *criu, const char *id,
			const char *name, const char *new_id, const tern_clone_opts *o,
			tern_snapshot_stats *stats, tern_error **err);

/* After `delete` of a container that was a clone: its overlay, bundle and
 * record go, and the snapshot it came from no longer counts it. Nothing
 * to do for any other container. */
int tern_snapshot_clone_cleanup(const char *root, const char *id, tern_error **err);

/* After `delete` (or a migration away): a warm spare of the container is
 * killed and removed; if the container ran on a spare's overlay since a
 * warm rollback, what it holds is copied down into the bundle's own rootfs
 * and the overlay unmounted (snapshot-warm.c). */
int tern_snapshot_warm_cleanup(const tern_runtime *rt, const char *id, tern_error **err);

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
