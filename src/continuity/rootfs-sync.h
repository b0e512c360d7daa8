/* Moving a container's root filesystem with it (tern migrate).
 *
 * The model: the target node already has a copy of the bundle (the same
 * image, unpacked the same way); what must travel is what the container
 * changed in its rootfs. The target describes what its copy holds (a
 * manifest); the source compares its live rootfs with it and sends a
 * stream of changes: entries to create or replace (regular files with
 * their data, only where it differs; directories, symlinks, device nodes,
 * fifos, sockets are recreated), entries to delete, and metadata (owner,
 * mode, mtime, xattrs). Hard links stay hard links; sparse files stay
 * sparse (only the data extents are sent).
 *
 * Rounds: the first round runs while the container still runs and sends
 * nearly everything; the source remembers what it sent (its own snapshot:
 * inode, size, mtime, ctime of each entry), so the last round, with the
 * container frozen, only walks the tree and sends what changed since.
 *
 * A regular file the target holds another version of (the same inode in
 * the source's model) crosses as a delta (rootfs-delta.h): the manifest
 * has the SHA-256 of each 64 KiB block, the sender keeps the hashes of
 * what the target holds after each round, and sends only the blocks that
 * differ (of an append, the tail); the applier patches the file in place,
 * keeping the old size and bytes in its undo directory first.
 *
 * Security: the target applies the stream inside its rootfs only: every
 * path is resolved beneath it without following symlinks (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, or, without
 * openat2, an O_NOFOLLOW walk one component at a time; not path-resolve.h,
 * which follows symlinks inside the root), absolute paths and empty, "."
 * or ".." components are refused, and the stream cannot create a device
 * node the target's policy forbids (tern_rootfs_applier_set_device_filter).
 * A malformed stream is an error naming the entry; nothing outside the
 * rootfs is ever touched.
 *
 * The stream is transport-agnostic: the source writes it through a
 * callback (tern migrate sends each chunk as a TERN_MSG_ROOTFS_DATA
 * message); the target feeds the chunks it receives to an applier. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- target side ---- */

/* Serialize the manifest of the tree at `rootfd` (an O_PATH or O_DIRECTORY
 * fd of the rootfs): every entry's path, type, mode, owner, size, mtime,
 * device number, symlink target, xattrs (names and values), an id shared
 * by the names of one hard-linked inode, and the SHA-256 of each 64 KiB
 * block of each regular file. Entries on another device (mounts below the
 * rootfs) are left out. Malloc'd bytes; the format is private to the
 * rootfs sync (versioned, see rootfs-entry.h). */
int tern_rootfs_manifest(int rootfd, char **out, size_t *out_len, tern_error **err);

typedef struct tern_rootfs_applier tern_rootfs_applier;

/* An applier writing into the tree at `rootfd` (kept open, not owned). */
int tern_rootfs_applier_new(int rootfd, tern_rootfs_applier **out, tern_error **err);
/* Feed the next chunk of a stream (chunks may split records anywhere). */
int tern_rootfs_applier_feed(tern_rootfs_applier *a, const void *buf, size_t len,
			     tern_error **err);
/* End of one round: the stream must end on a record boundary; directory
 * mtimes are fixed up now. */
int tern_rootfs_applier_finish_round(tern_rootfs_applier *a, tern_error **err);
void tern_rootfs_applier_free(tern_rootfs_applier *a);

/* Keep what the rounds replace, delete or change in `undo_dirfd` (an empty
 * directory on the rootfs's file system; duplicated) and log it
 * there, so that tern_rootfs_undo can put the tree back as it was: contents,
 * owners, modes, xattrs, mtimes and hard links. Call before the first
 * round. The log is written before each change, so the undo works also
 * from the directory an applier left when it was killed. */
int tern_rootfs_applier_set_undo(tern_rootfs_applier *a, int undo_dirfd, tern_error **err);
/* Undo every change logged in `undo_dirfd` to the tree at `rootfd`, newest
 * first (no applier may be writing there any more). On an error it goes
 * on with the rest and returns the first. */
int tern_rootfs_undo(int rootfd, int undo_dirfd, tern_error **err);

/* Which device nodes the stream may create. Without a filter, only the
 * character devices every container gets anyway (null, zero, full, random,
 * urandom, tty, console, ptmx); `allow` is asked about any other and
 * returns true to let it be created (tern-migrate can answer from the
 * container's linux.devices). */
typedef bool (*tern_rootfs_device_fn)(void *data, const char *path, bool block, uint32_t major,
				      uint32_t minor);
void tern_rootfs_applier_set_device_filter(tern_rootfs_applier *a, tern_rootfs_device_fn allow,
					   void *data);

/* ---- source side ---- */

typedef struct tern_rootfs_sender tern_rootfs_sender;

/* Writes `len` bytes of the stream (e.g. as one message); -errno on failure
 * with *err set. */
typedef int (*tern_rootfs_write_fn)(void *data, const void *buf, size_t len, tern_error **err);

typedef struct {
	uint64_t entries_sent;	/* created, replaced or changed */
	uint64_t entries_deleted;
	uint64_t data_bytes;	/* file contents sent */
	uint64_t stream_bytes;	/* everything written through the callback */
} tern_rootfs_stats;

/* A sender for the live tree at `rootfd` (kept open, not owned), against
 * the target's `manifest`. */
int tern_rootfs_sender_new(int rootfd, const char *manifest, size_t manifest_len,
			   tern_rootfs_sender **out, tern_error **err);
/* One round: walk the tree, send what differs from what the target has
 * now (the manifest, updated by the rounds already sent). `stats` (may be
 * NULL) counts this round. */
int tern_rootfs_sender_round(tern_rootfs_sender *s, tern_rootfs_write_fn write, void *data,
			     tern_rootfs_stats *stats, tern_error **err);
void tern_rootfs_sender_free(tern_rootfs_sender *s);
