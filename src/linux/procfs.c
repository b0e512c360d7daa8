/* The verified procfs handle described in procfs.h. */
#include "procfs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The inode number of every procfs root (fs/proc/root.c). */
#define PROC_ROOT_INO 1

static bool on_procfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* The root of a procfs: procfs, a directory, inode 1. A bind of some
 * other directory of procfs (or of a host directory) on /proc fails this. */
static bool is_procfs_root(int fd)
{
	struct stat st;

	return on_procfs(fd) && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_ino == PROC_ROOT_INO;
}

/* A new procfs instance for our pid namespace, attached to no mount tree:
 * nothing can be mounted over anything in it. Fails (EPERM) where mounting
 * proc is not allowed, e.g. when the kernel's "fully visible" rule for
 * proc in a user namespace is not met. */
static int fresh_procfs(void)
{
	cleanup_close int fsfd = -1;
	int mnt;

	fsfd = (int)syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return -errno;
	return mnt;
}

/* A clone of the mount on /proc alone (no AT_RECURSIVE): the mounts on top
 * of files under it (a bind over /proc/sys/...) are left behind. */
static int cloned_procfs(void)
{
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/proc",
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int tern_procfs_open(tern_error **err)
{
	cleanup_close int fd = -1;
	int first;

	fd = fresh_procfs();
	first = fd;
	if (fd >= 0 && !is_procfs_root(fd))
		tern_closep(&fd);
	if (fd < 0)
		fd = cloned_procfs();
	/* Both need CAP_SYS_ADMIN. Without it (a rootless parent writing its
	 * child's id maps) the caller's own /proc is the host's, which the
	 * container's config cannot mount over; it is still checked below.
	 * Other errors: an old kernel (ENOSYS), or a seccomp filter the init
	 * runs under until its execve (a profile may refuse the mount calls
	 * with any errno). The fallback is checked all the same. */
	if (fd < 0) {
		fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	if (fd < 0)
		return tern_error_make(err, -fd,
				       "open a private procfs (fsopen: %s; clone of /proc)",
				       strerror(first < 0 ? -first : EINVAL));
	if (!is_procfs_root(fd))
		return tern_error_make(err, EXDEV,
				       "/proc is not the root of a procfs mount (a bind mount or "
				       "another filesystem is there): refusing to write to it");
	return steal_fd(&fd);
}

int tern_procfs_openat(int procfd, const char *path, int flags, bool no_symlinks, tern_error **err)
{
	/* openat2 refuses O_NOCTTY beside O_PATH (EINVAL) */
	struct open_how how = {
	    .flags = (__u64)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY)),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS |
		       (no_symlinks ? RESOLVE_NO_SYMLINKS : 0),
	};
	cleanup_close int fd = -1;

	do
		fd = (int)syscall(SYS_openat2, procfd, path, &how, sizeof(how));
	while (fd < 0 && (errno == EAGAIN || errno == EINTR));
	if (fd < 0)
		return tern_error_make(err, errno, "open /proc/%s%s", path,
				       errno == EXDEV ? " (something is mounted over it)" : "");
	if (!on_procfs(fd))
		return tern_error_make(err, EXDEV, "/proc/%s is not on procfs", path);
	return steal_fd(&fd);
}

int tern_procfs_write(const char *path, const char *data, tern_error **err)
{
	cleanup_close int procfd = -1, fd = -1;
	int ret;

	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return procfd;
	fd = tern_procfs_openat(procfd, path, O_WRONLY, false, err);
	if (fd < 0)
		return fd;
	ret = tern_write_all(fd, data, strlen(data));
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s` to /proc/%s", data, path);
	return 0;
}

/* Our own "self/fd" directory beneath procfd. openat2 first; where it is
 * refused (ENOSYS from an old kernel, or any errno from a seccomp filter
 * the init runs under until its execve), a plain openat, checked to stay on
 * the same procfs: a bind of another part of that procfs over it is not
 * caught, but needs CAP_SYS_ADMIN over our mount namespace, and
 * tern_procfs_reopen checks what it opens through it anyway. What openat2
 * found mounted over it (EXDEV) or linked (ELOOP) stays an error. */
static int open_self_fd_dir(int procfd, tern_error **err)
{
	cleanup_close int fd = -1;
	struct stat root, st;
	int first = tern_procfs_openat(procfd, "self/fd", O_PATH | O_DIRECTORY, false, err);

	if (first >= 0 || first == -EXDEV || first == -ELOOP)
		return first;
	fd = openat(procfd, "self/fd", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open /proc/self/fd");
	if (fstat(procfd, &root) < 0 || fstat(fd, &st) < 0 || !on_procfs(fd) ||
	    st.st_dev != root.st_dev)
		return tern_error_make(err, EXDEV,
				       "/proc/self/fd is not on procfs (something is mounted "
				       "over it)");
	return steal_fd(&fd);
}

int tern_procfs_reopen(int fd, int flags, tern_error **err)
{
	cleanup_close int procfd = -1, fddir = -1, newfd = -1;
	struct stat want, got;
	char name[16];

	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return procfd;
	fddir = open_self_fd_dir(procfd, err);
	if (fddir < 0)
		return fddir;
	/* at most two fds of ours at a time: see tern_procfs_reopen in
	 * procfs.h */
	tern_closep(&procfd);
	snprintf(name, sizeof(name), "%d", fd);
	/* The one magic link we follow: our own fd's. */
	newfd = openat(fddir, name, flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY));
	if (newfd < 0)
		return tern_error_make(err, errno, "reopen through /proc/self/fd/%d", fd);
	if (fstat(fd, &want) < 0 || fstat(newfd, &got) < 0 || want.st_dev != got.st_dev ||
	    want.st_ino != got.st_ino)
		return tern_error_make(err, EXDEV,
				       "/proc/self/fd/%d led to another file than fd %d", fd, fd);
	return steal_fd(&newfd);
}
