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

/* rm -r of tern's own files (never a container's rootfs) */
void tern_snap_remove_tree(const char *path);

/* tern_container_restore of `images` (co->work_path becomes `work`), the
 * memory filled through `criu lazy-pages` where the kernel can, which is
 * much faster than criu's own reading; returns once every page is in. A
 * fill that fails after the restore calls kill_it(data) (the container
 * runs with memory missing). stats: criu_ns, fill_ns. */
int tern_snap_restore(const tern_global_opts *g, const char *criu, const char *id,
		      const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
		      const char *work, void (*kill_it)(void *), void *data,
		      tern_snapshot_stats *stats, tern_error **err);
