/* A procfs handle that the container cannot redirect (CVE-2025-52881).
 *
 * The container's config decides what is mounted where, also at /proc and
 * under it: a bind of a host file over /proc/sys/kernel/..., a host
 * directory bound on /proc, a symlink that makes a mount destination land
 * in /proc. Writes the runtime makes to /proc (sysctls, oom_score_adj,
 * LSM attributes) must reach the kernel, not such a file. So they go
 * through a private procfs mount, detached from every mount tree (a fresh
 * fsopen("proc"), or else a non-recursive clone of the /proc mount, which
 * leaves out whatever is mounted on top of files below it), checked to be
 * procfs, and every file is opened beneath it with RESOLVE_NO_XDEV |
 * RESOLVE_NO_MAGICLINKS and checked to be on procfs again. */
#pragma once

#include "error.h"

#include <stdbool.h>

/* An O_PATH|O_DIRECTORY|O_CLOEXEC fd on the root of a verified procfs of
 * the current pid namespace (the caller's own view of "/proc"), or a
 * negative errno. */
int tern_procfs_open(tern_error **err);

/* Open `path` (relative, e.g. "self/oom_score_adj", "sys/kernel/domainname")
 * beneath the procfs root `procfd`, never crossing a mount and never
 * following a magic link; with `no_symlinks` no symlink at all ("self" is a
 * symlink: pass false for paths through it). The result is checked to be a
 * procfs file. Returns an O_CLOEXEC fd or a negative errno; the message
 * names "/proc/PATH". */
int tern_procfs_openat(int procfd, const char *path, int flags, bool no_symlinks, tern_error **err);

/* Open, write all of `data`, close: one verified write to /proc/PATH. */
int tern_procfs_write(const char *path, const char *data, tern_error **err);

/* Reopen `fd` (typically O_PATH) with `flags` through our own
 * /proc/self/fd/N, found beneath a procfs from tern_procfs_open: the way to
 * get a readable or writable fd from an O_PATH one without holding, or
 * reaching through, the directory it is in. The new fd is checked to be
 * the same file as `fd`. Holds at most two fds of its own at a time before
 * the new one (none after). Returns an O_CLOEXEC fd or a negative errno. */
int tern_procfs_reopen(int fd, int flags, tern_error **err);
