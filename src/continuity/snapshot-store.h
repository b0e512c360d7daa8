/* The snapshot store: ROOT/@snapshots/ID, its layout (snapshot.h draws
 * it), its lock and its records (snapshot.txt, head, the clones/ marks,
 * ROOT/@clones/ID). Owned by snapshot-store.c and by no one else: every
 * other snapshot file opens, locks and reads the store through it.
 *
 * The lowest of the snapshot files: it uses snapshot-fs (the size of a
 * tree/) and none of the others. The order, lowest first, each using only
 * those before it:
 *   snapshot-store < snapshot-container < snapshot-warm < snapshot-spares
 *   < snapshot-take, snapshot-rollback, snapshot (list, delete)
 *   < snapshot-clone */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>

#define TERN_SNAPSHOT_DIR "@snapshots"
/* ROOT/@clones/NEW-ID: a clone's record (snapshot-clone.c writes it,
 * tern_snapshot_clone_cleanup reads it) and its default bundle */
#define TERN_CLONES_DIR	    "@clones"
#define TERN_SNAP_META_FILE "snapshot.txt"
#define TERN_SNAP_HEAD_FILE "head"
/* a snapshot being taken: .tmp-NAME-XXXXXX */
#define TERN_SNAP_TMP_PREFIX ".tmp-"

typedef struct {
	char *name;
	char *created;	/* RFC 3339 */
	char *parent;	/* the snapshot its files are shared with, or "" */
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
	/* while criu dumps: a progress event every 250 ms
	 * (dump-progress.h), as text on stderr or (progress_json) a JSON
	 * line on stdout */
	bool progress;
	bool progress_json;
} tern_snapshot_opts;

typedef struct {
	char *path;
	int fd; /* O_DIRECTORY, flock'ed */
} tern_snap_store;

/* Open (with `create`: make) and lock ROOT/@snapshots/ID: 0, -ENOENT
 * (no store and `create` false; *err untouched) or an error. */
int tern_snap_store_open(const char *root, const char *id, bool create, tern_snap_store *s,
			 tern_error **err);
void tern_snap_store_close(tern_snap_store *s);

/* Remove the store, locked, if it holds nothing (a first snapshot that
 * failed); tern_snap_store_open opens a removed one anew. */
void tern_snap_store_remove_empty(tern_snap_store *s);

/* What a tern killed half-way left: .tmp-* directories, removed. The
 * store is locked, so none is in use. */
void tern_snap_store_sweep(tern_snap_store *s);

/* A snapshot name: what a container id may be ([A-Za-z0-9_+.-]), not
 * starting with a dot (the store's own entries do). */
int tern_snap_check_name(const char *name, tern_error **err);

/* The snapshot `head` names (malloc'd), if it is one of the store's; NULL
 * otherwise. */
char *tern_snap_head_read(tern_snap_store *s);

/* `data` written to NAME in `dirfd` (through NAME.new, renamed). */
int tern_snap_write_at(int dirfd, const char *name, const char *data, tern_error **err);

/* snapshot.txt's text: created, parent, the criu flags and mem-depth. */
char *tern_snap_meta_format(const char *created, const char *parent, const tern_snapshot_opts *o,
			    int mem_depth);

/* snapshot.txt of the snapshot at `snapfd`: its info (created, parent)
 * and the criu flags it was taken with (either may be NULL). */
int tern_snap_meta_read(int snapfd, tern_snapshot_info *info, tern_snapshot_opts *o);

/* What a snapshot takes on disk and shares with no other. */
uint64_t tern_snap_own_bytes(int snapfd);

/* The first clone (still a container) whose overlay has the tree of the
 * snapshot at `snapfd` below it (malloc'd), or NULL. */
char *tern_snap_live_clone(const char *root, int snapfd);
