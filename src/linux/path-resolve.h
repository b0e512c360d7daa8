/* Paths inside a container rootfs, resolved without ever leaving it: a
 * symlink in the rootfs (absolute or ../..) is resolved as if the rootfs
 * were "/" (openat2 RESOLVE_IN_ROOT), so a hostile image cannot point a mount
 * destination at the host. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* openat2(rootfd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS). */
int tern_open_in_root(int rootfd, const char *path, int flags, mode_t mode, tern_error **err);

/* Make sure `path` exists inside the root, creating missing parents as
 * directories (0755) and the last component as a directory, or, when
 * `last_is_file`, as an empty regular file. Returns an O_PATH|O_CLOEXEC fd to
 * it, or a negative errno. */
int tern_mkdir_in_root(int rootfd, const char *path, bool last_is_file, tern_error **err);

/* The "/proc/self/fd/N" path of an fd, for mount(2) and friends. buf must be
 * at least 32 bytes. */
const char *tern_fd_path(int fd, char *buf, size_t size);

/* chdir to `path` resolved inside the current root ("/"), the way
 * process.cwd must be: ".." stops at the root, symlinks are followed inside
 * it, and magic links (/proc/self/fd/N, /proc/self/cwd) are refused, so an
 * fd the runtime still holds cannot become the container's cwd
 * (CVE-2024-21626). */
int tern_chdir_in_root(const char *path, tern_error **err);
