/* One config.json mount: flag and propagation parsing, the mount itself
 * (bind/rbind with ro remount, proc, sysfs, tmpfs, devpts, mqueue, cgroup,
 * overlay, any fs type), tmpcopyup. Used by rootfs.c. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

typedef struct {
	unsigned long flags;	   /* MS_* to set */
	unsigned long clear_flags; /* MS_* explicitly cleared (rw, suid, dev, exec, ...) */
	unsigned long propagation; /* MS_PRIVATE/MS_SLAVE/MS_SHARED/MS_UNBINDABLE (| MS_REC) */
	unsigned long attr_set; /* MOUNT_ATTR_* for mount_setattr(AT_RECURSIVE): rro, rnosuid... */
	unsigned long attr_clr;
	bool recursive_bind; /* rbind */
	bool bind;	     /* bind or rbind */
	bool tmpcopyup;
	bool idmap;	      /* idmap or ridmap: see idmap.h */
	bool idmap_recursive; /* ridmap */
	bool ro_deferred;     /* "ro" left to the caller (tern_mount_one_ex's defer_ro) */
	char *data;	      /* the options the kernel filesystem gets, comma-separated */
} tern_mount_options;

/* A bind mount's source, opened by the parent (mount-source.h): a detached
 * tree (open_tree) to move into place, or an O_PATH fd to bind with
 * mount(2); fd -1 when there is none and the source path is opened here. */
typedef struct {
	int fd;
	bool tree;
} tern_bind_source;

/* Parse a mount's options list. Unknown options are passed to the
 * filesystem as data (that is what runc does). */
int tern_mount_options_parse(char *const *options, tern_mount_options *out, tern_error **err);
void tern_mount_options_clear(tern_mount_options *opts);

/* Mount `m` inside the rootfs open at `rootfd` (rootfs_path is its host
 * path, for messages). A bind mount attaches the source the parent opened
 * (mount-source.h) when there is one; else its path is opened here, a
 * relative one against the current directory, which must be the bundle
 * (runc resolves it against the bundle too). On failure the message does
 * not repeat the source and destination: the caller prefixes
 * "mount `SRC` to `DST` (mounts[N])". A mount with an idmap/ridmap option
 * or uid/gid mappings must come with its prepared (idmapped) tree.
 * A "cgroup" mount is done as if the container had no cgroup namespace. */
int tern_mount_one(int rootfd, const char *rootfs_path, const oci_mount *m, bool in_user_ns,
		   tern_error **err);

/* The same, with the bind source `src` (consumed: its fd is closed here,
 * {-1} for none), knowing whether the container has its own cgroup
 * namespace: then a "cgroup" mount is a fresh cgroup (v1) filesystem per
 * hierarchy instead of binds of the host's directories for this process's
 * cgroup. With `defer_ro`, a "ro" mount (not "rro", not cgroup) is made
 * read-write and the caller makes it read-only later, once the mounts and
 * files that go under it are in place (a sysfs that has to be a bind of
 * the host's /sys in a user namespace is still read-only at once). */
int tern_mount_one_ex(int rootfd, const char *rootfs_path, const oci_mount *m, tern_bind_source src,
		      bool in_user_ns, bool cgroupns, bool defer_ro, tern_error **err);

/* `dest` as "/" and its components, without ".", ".." or repeated "/"
 * (malloc'd): "/proc", "proc/" and "//proc/." all give "/proc". */
char *tern_mount_clean_dest(const char *dest);

/* The mount options tern understands (for `tern features`): fills up to
 * `max` names, returns how many there are. */
size_t tern_mount_option_names(const char **names, size_t max);

/* The flags a MS_REMOUNT|MS_BIND of the mount at `fd` must repeat, because
 * the kernel locks them (ro, nosuid, nodev, noexec, the atime mode), less
 * those `opts` explicitly clears (`opts` may be NULL). */
unsigned long tern_mount_locked_flags(int fd, const tern_mount_options *opts);

/* Remount the bind mount at `dest` in the rootfs (resolved again, inside
 * it) with the per-mount flags of `opts` and those the kernel locks. */
int tern_mount_bind_remount(int rootfd, const char *dest, const tern_mount_options *opts,
			    tern_error **err);

/* Resolve (creating what is missing, as tern_mkdir_in_root) the mount
 * destination `dest` inside the rootfs and return an O_PATH fd to mount
 * on. Unless `dest` itself names a path under /proc (allowed or refused by
 * name before), a destination that resolves onto procfs is refused: the
 * check is made on the returned fd, so mount on that fd, never on `dest`
 * looked up again. */
int tern_mount_target(int rootfd, const char *dest, bool last_is_file, tern_error **err);

/* Append `opt` to the comma-separated filesystem data `*data`. */
void tern_mount_data_append(char **data, const char *opt);
