/* What a walk of snapshot-fs-walk.c counts, and what tern_snapfs_record
 * and tern_snapfs_restore (snapshot-fs.h) report: owned by the walk, which
 * fills it, so that the walk needs nothing of snapshot-fs.h (snapshot-fs
 * uses the walk, never the other way). */
#pragma once

#include <stdint.h>

/* Regular files are counted once per inode (the further names of a
 * hard-linked file are entries, not copies). */
typedef struct {
	uint64_t entries;	  /* record: entries in tree/ (the root not counted);
				     restore: entries made, replaced or fixed */
	uint64_t files_copied;	  /* regular files whose data was copied */
	uint64_t files_linked;	  /* record: regular files shared with the previous
				     snapshot (symlinks and nodes are shared too,
				     but not counted here) */
	uint64_t bytes_copied;	  /* data bytes copied; holes are not copied */
	uint64_t entries_removed; /* rollback: entries that were not in the snapshot */
} tern_snapfs_stats;
