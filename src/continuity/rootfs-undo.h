/* The undo log of the rootfs applier (rootfs-apply.c): what a failed
 * migration must put back in the target's rootfs. Private to the rootfs
 * sync; the public side is tern_rootfs_applier_set_undo and
 * tern_rootfs_undo in rootfs-sync.h. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct rs_undo rs_undo;
struct rs_attrs;

/* Start a log in the empty directory `undo_dirfd` (duplicated),
 * which must be on the file system of the rootfs at `rootfd`. */
int rs_undo_new(int undo_dirfd, int rootfd, rs_undo **out, tern_error **err);
void rs_undo_free(rs_undo *u);

/* `name` in `dirfd` (the entry `path` of the rootfs) is about to be
 * replaced or removed: an existing entry is renamed into the undo
 * directory (with its whole subtree, metadata and inode intact); an absent
 * one is logged as created by the stream. */
int rs_undo_displace(rs_undo *u, int dirfd, const char *name, const char *path, tern_error **err);

/* The metadata (owner, mode, xattrs, mtime) of the entry open as `fd`
 * (O_PATH), `path` in the rootfs, is about to change: logged once per
 * path. */
int rs_undo_meta(rs_undo *u, int fd, const char *path, tern_error **err);

/* The regular file open as `fd` (O_RDWR), `path` in the rootfs, whose
 * stat before this patch is `st`, is about to be patched in place to
 * `new_size` bytes: its size is logged (the first time this migration
 * patches the inode) and, if it shrinks, the bytes cut off are kept. */
int rs_undo_patch_begin(rs_undo *u, int fd, const char *path, const struct stat *st,
			uint64_t new_size, tern_error **err);
/* [off, off + len) of that file is about to be overwritten: the bytes it
 * had when the migration first patched it are kept (once per block). */
int rs_undo_patch_save(rs_undo *u, int fd, const char *path, const struct stat *st, uint64_t off,
		       uint64_t len, tern_error **err);

/* Owner, mode, xattrs and (if `mtime`) the mtime of the entry open as
 * `fd` (O_PATH or not) made those of `a`: what the replay puts back, and
 * what the applier (rootfs-apply.c) sets from the stream. */
int rs_set_meta(int fd, const struct rs_attrs *a, bool mtime, tern_error **err);
