/* What every kind of mount in the rootfs shares (mount-common.c): the
 * parsed options, the destination resolved inside the rootfs, the bind
 * remount. Used by mounts.c (config.json mounts) and cgroup-mount.c; the
 * callers of mounts.h get it through that header. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

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

/* Parse a mount's options list. Unknown options are passed to the
 * filesystem as data (that is what runc does). */
int tern_mount_options_parse(char *const *options, tern_mount_options *out, tern_error **err);
void tern_mount_options_clear(tern_mount_options *opts);

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
