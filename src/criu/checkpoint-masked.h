/* The masked directories' tmpfs in a checkpoint.
 *
 * linux.maskedPaths covers every masked directory with one empty read-only
 * tmpfs (rootfs.c). criu would archive it with tar and gzip at the dump and
 * unpack it at the restore, 12-20 ms each way here and inside a
 * migration's downtime, for a filesystem that holds nothing. So a dump
 * names each such mount to criu as an external mount (key: its mount
 * point) and lists it in the checkpoint's descriptor ("masked PATH"); the
 * restore mounts a new empty read-only tmpfs in its own mount namespace
 * and gives it to criu for every key, and the masked directories come back
 * as one empty read-only tmpfs, as they were.
 *
 * Only a mount still as tern made it is left out: a tmpfs at its root,
 * read-only, nothing mounted on or below it, and empty as seen through the
 * container's root. Any other (a container that remounted one and wrote
 * in it) is left to criu, which saves what it holds.
 *
 * The same goes for the tmpfs mounts of config.json (/dev/shm, say) that
 * are empty at the dump, read-write or not ("tmpfs PATH" in the
 * descriptor): the restore mounts a new one as the new config.json's
 * mount on PATH says (size, mode, flags), each in its own directory. A
 * tmpfs that holds anything, or has something mounted on or below it, is
 * left to criu. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* where the restore mounts the new tmpfs, in the container's state
 * directory (and only in the restore's own mount namespace) */
#define TERN_CKPT_MASKED_DIR "masked-tmpfs"

/* The directories of `masked` (linux.maskedPaths) whose tmpfs criu may
 * leave out of a dump of the container whose init is `pid`: a
 * NULL-terminated list (free each and the list), or NULL for none. Never
 * an error: a mount that cannot be checked is left to criu. */
char **tern_ckpt_masked_empty(pid_t pid, char *const *masked);

/* For a restore, in its own mount namespace: a new empty read-only tmpfs
 * on the directory `name`, made in the directory `dirfd` (path `dir`);
 * its path in *path. */
int tern_ckpt_masked_source(int dirfd, const char *dir, const char *name, char **path,
			    tern_error **err);

/* where the restore mounts the config's empty tmpfs mounts, one directory
 * each (TERN_CKPT_TMPFS_PREFIX N) in the state directory */
#define TERN_CKPT_TMPFS_PREFIX "empty-tmpfs-"

/* The destinations of config.json's tmpfs mounts (`mounts`, n of them)
 * that are empty at the dump of the container whose init is `pid`: a
 * NULL-terminated list, or NULL. Never an error (as above). */
char **tern_ckpt_tmpfs_empty(pid_t pid, const oci_mount *mounts, size_t n);

/* For a restore, in its own mount namespace: a new tmpfs as `config`'s
 * tmpfs mount on `dest` gives it, on the directory `name` made in `dirfd`
 * (path `dir`); its path in *path. An error when the config has no tmpfs
 * mount on `dest`. */
int tern_ckpt_tmpfs_source(int dirfd, const char *dir, const char *name, const oci_config *config,
			   const char *dest, char **path, tern_error **err);

/* ---- a tmpfs as a tree: cgroup v1's, and /dev ----
 *
 * On cgroup v1 a "cgroup" mount of config.json is a tmpfs holding one
 * directory per hierarchy, a cgroup filesystem mounted on each, and
 * symlinks for co-mounted controllers (cgroup-mount.c); /dev is a tmpfs
 * holding the devices, links and mount points tern made (devices.c).
 * criu would archive each with tar and gzip (about 20 ms for /dev at the
 * dump and as much at the restore, here). So a dump records its tree
 * instead, when it holds nothing but
 *	tmpfs-tree DEST MODE UID GID RO		the tmpfs itself
 *	tmpfs-dir DEST NAME MODE UID GID	an empty directory, or one
 *						with a mount on it
 *	tmpfs-link DEST NAME TARGET		a symlink
 *	tmpfs-file DEST NAME MODE UID GID	an empty file (with a mount
 *						on it: a bound device, the
 *						console; made 0000)
 *	tmpfs-node DEST NAME MODE UID GID T MAJ MIN	a device (T c or b) or
 *						fifo (p) config.json makes at
 *						DEST/NAME (tern_devices_allowed)
 * one level deep (modes octal, ids as the host sees them, RO 1 or 0), and
 * the restore makes the same tree on a new tmpfs for criu, which mounts
 * what stood on it as it would on its own copy. Anything else (a file the
 * container wrote, a node it made itself, a deeper tree) leaves the tmpfs
 * to criu. A restore makes a node only when its own config.json makes the
 * same one there, and none for a container with a user namespace (whose
 * devices are bound from the host, never made). */
#define TERN_CKPT_TREE_PREFIX "tmpfs-tree-"

/* The descriptor lines for the tmpfs at `dest` of the container whose
 * init is `pid` and config `config`, appended to *lines; false (nothing
 * appended) when it is not such a tree. */
bool tern_ckpt_tmpfs_tree(pid_t pid, const char *dest, const oci_config *config, char ***lines);

/* For a restore, in its own mount namespace: the tree at `dest` that the
 * descriptor lines `lines` (every line of the descriptor; those of other
 * keys or destinations are skipped) describe, made on a new tmpfs on the
 * directory `name` in `dirfd` (path `dir`); its path in *path. A tmpfs
 * mount of `config` (the restore's) on `dest` gives the new tmpfs's size
 * and flags. */
int tern_ckpt_tmpfs_tree_source(int dirfd, const char *dir, const char *name, const char *dest,
				const oci_config *config, char *const *lines, char **path,
				tern_error **err);
