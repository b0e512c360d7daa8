/* The root filesystem side of `tern snapshot` and `tern rollback`.
 *
 * A snapshot of a rootfs is a directory (the "store") holding:
 *   tree/        a replica of the rootfs as it was: directories, symlinks,
 *                device nodes, fifos and sockets recreated with their
 *                owner, mode, mtime and xattrs; regular files copied, or,
 *                where the file is the same as in the previous snapshot,
 *                a hard link to that snapshot's copy (so a snapshot costs
 *                the disk of what changed, and removing one is rm -r)
 *   files.index  for each entry of the rootfs that is not a directory
 *                (regular files, and symlinks and nodes too; each name of a
 *                hard-linked one): its path and the identity the live entry
 *                had when it was known to equal the copy in tree/ (inode,
 *                size, mtime, ctime, mode). ctime changes on every write,
 *                chmod, chown, link, unlink, rename and xattr change and
 *                cannot be set from user space, so an equal identity means
 *                an unchanged entry. The format is described at the top of
 *                snapshot-fs.c.
 *
 * Only the rootfs's own file system is recorded: a directory on which
 * something else is mounted is recorded empty, as it shows (the mounted
 * root's owner, mode, mtime, xattrs), and a file mounted over is left out.
 * On restore, whatever is mounted in the live tree is left as it is: never
 * descended into, changed or removed (a directory holding a mount point
 * that the snapshot does not have stays, with a warning in the log).
 *
 * Security: the live rootfs is walked and written with openat(O_NOFOLLOW)
 * / *at(AT_SYMLINK_NOFOLLOW) from the rootfs fd only; no path from inside
 * it is ever resolved through a symlink, so a container cannot make tern
 * read or write outside its rootfs.
 *
 * The face of snapshot-fs.c (which uses snapshot-fs-walk, below it);
 * used by snapshot-store, snapshot-take and snapshot-rollback. */
#pragma once

#include "error.h"
#include "snapshot-fs-stats.h"

#include <stdint.h>

/* Record the tree at `rootfd` (an O_DIRECTORY fd of the live rootfs) into
 * `storefd`, an empty directory: makes tree/ and files.index there.
 * `prevfd` is the store of the snapshot the rootfs was last known to equal
 * (the last one taken or rolled back to), or -1: a regular file whose live
 * identity equals the one in prev's files.index at the same path is hard
 * linked from prev's tree/ instead of copied. The caller keeps the
 * container frozen meanwhile. `stats` may be NULL. On failure (-ENOSPC
 * for a full disk, the message naming the path) the store is left half
 * made: the caller removes it. */
int tern_snapfs_record(int rootfd, int prevfd, int storefd, tern_snapfs_stats *stats,
		       tern_error **err);

/* Make the tree at `rootfd` what the store `storefd` recorded: remove what
 * the snapshot did not have, put back what differs (a regular file whose
 * live identity still equals its files.index entry is left alone), fix
 * owners, modes, xattrs and mtimes. Nothing may run in the rootfs
 * meanwhile. Rewrites files.index (atomically) with the identities of the
 * live files now, so that the next tern_snapfs_record with this store as
 * prev links instead of copying. */
int tern_snapfs_restore(int rootfd, int storefd, tern_snapfs_stats *stats, tern_error **err);

/* Bytes the store takes on disk that no other snapshot shares: the blocks
 * of the entries of tree/ whose links are all in tree/, plus every
 * directory and files.index. For `tern snapshot --list`. Never fails: 0
 * when the store cannot be read. */
uint64_t tern_snapfs_own_bytes(int storefd);
