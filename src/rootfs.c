/* The container's filesystem, in the order rootfs.h describes. Runs in the
 * child, single-threaded, inside its own mount namespace. */
#include "rootfs.h"
#include "devices.h"
#include "log.h"
#include "mount-source.h"
#include "mounts.h"
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static bool str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* linux.rootfsPropagation as mount(2) flags; 0 when absent. */
static int parse_propagation(const char *s, unsigned long *out, tern_error **err)
{
	static const struct {
		const char *name;
		unsigned long flags;
	} table[] = {
	    {"private", MS_PRIVATE},	   {"rprivate", MS_PRIVATE | MS_REC},
	    {"shared", MS_SHARED},	   {"rshared", MS_SHARED | MS_REC},
	    {"slave", MS_SLAVE},	   {"rslave", MS_SLAVE | MS_REC},
	    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
	};
	*out = 0;
	if (s == NULL || *s == '\0')
		return 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(s, table[i].name) == 0) {
			*out = table[i].flags;
			return 0;
		}
	}
	return tern_error_make(err, EINVAL, "linux.rootfsPropagation: unknown value `%s`", s);
}

static bool has_cgroupns(const oci_config *c)
{
	if (c->linux_ == NULL)
		return false;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == OCI_NS_CGROUP)
			return true;
	return false;
}

/* runc leaves /dev alone when the config bind-mounts it from elsewhere. */
static bool dev_is_bind_mounted(const oci_config *c)
{
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *d = m->destination;
		bool bind = str_eq(m->type, "bind") || str_eq(m->type, "rbind");

		for (size_t j = 0; !bind && m->options && m->options[j]; j++)
			bind = str_eq(m->options[j], "bind") || str_eq(m->options[j], "rbind");
		if (!bind || d == NULL)
			continue;
		while (*d == '/')
			d++;
		if (strncmp(d, "dev", 3) == 0 && strspn(d + 3, "/") == strlen(d + 3))
			return true;
	}
	return false;
}

/* pivot_root refuses a new root whose parent mount is shared
 * (IS_SHARED(new_mnt->mnt_parent)), and our bind of the rootfs onto itself
 * would otherwise propagate to the host: when the mount holding the rootfs
 * is shared (rootfsPropagation "shared"), make it private here. */
static int parent_mount_private(const char *rootfs, tern_error **err)
{
	cleanup_free char *info = NULL, *best = NULL;
	bool best_shared = false;
	size_t best_len = 0;
	int ret;

	ret = tern_read_file("/proc/self/mountinfo", &info, NULL, 0, err);
	if (ret < 0)
		return ret;
	for (char *line = info, *next; line && *line; line = next) {
		char *f[16] = {0}, *p = NULL, *sep;
		int n = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		sep = strstr(line, " - ");
		if (sep)
			*sep = '\0';
		for (char *t = strtok_r(line, " ", &p); t && n < 16; t = strtok_r(NULL, " ", &p))
			f[n++] = t;
		if (n < 6)
			continue;
		/* Mount points with spaces are escaped (\040): such a one
		 * simply never matches the rootfs path, which is harmless. */
		size_t len = strlen(f[4]);
		bool prefix =
		    strcmp(f[4], "/") == 0 || (strncmp(rootfs, f[4], len) == 0 &&
					       (rootfs[len] == '/' || rootfs[len] == '\0'));
		if (!prefix || len < best_len)
			continue;
		free(best);
		best = tern_xstrdup(f[4]);
		best_len = len;
		best_shared = false;
		/* The optional fields (shared:N, master:N) follow field 6. */
		for (int i = 6; i < n; i++)
			if (strncmp(f[i], "shared:", 7) == 0)
				best_shared = true;
	}
	if (best != NULL && best_shared && mount(NULL, best, NULL, MS_PRIVATE, NULL) < 0)
		return tern_error_make(err, errno, "make `%s` private", best);
	return 0;
}

static int do_pivot(int rootfd, bool no_pivot, tern_error **err)
{
	if (fchdir(rootfd) < 0)
		return tern_error_make(err, errno, "chdir to the rootfs");
	if (no_pivot) {
		/* --no-pivot (e.g. a rootfs on ramfs, where pivot_root is
		 * refused): move the rootfs over / and chroot into it. The old
		 * root stays reachable underneath, which is why it is not the
		 * default. */
		if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
			return tern_error_make(err, errno, "move the rootfs onto /");
		if (chroot(".") < 0)
			return tern_error_make(err, errno, "chroot");
	} else {
		/* pivot_root(".", "."): the old root ends up mounted on top of
		 * the new one at "/", so no directory is needed in the image
		 * for it; then unmount it from there. */
		cleanup_close int oldroot = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (oldroot < 0)
			return tern_error_make(err, errno, "open the old root");
		if (syscall(SYS_pivot_root, ".", ".") < 0)
			return tern_error_make(err, errno, "pivot_root");
		/* What "." is after pivot_root(".", ".") is not promised by the
		 * kernel: step onto the old root explicitly, or the recursive
		 * slave below would hit the new root's mounts (and undo a
		 * "shared" mount option). */
		if (fchdir(oldroot) < 0)
			return tern_error_make(err, errno, "chdir to the old root");
		/* Before the unmount: make it a slave, so the detach does not
		 * propagate back to the host (when rootfsPropagation made it
		 * shared). */
		if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
			return tern_error_make(err, errno, "make the old root a slave");
		if (umount2(".", MNT_DETACH) < 0)
			return tern_error_make(err, errno, "unmount the old root");
	}
	if (chdir("/") < 0)
		return tern_error_make(err, errno, "chdir to /");
	return 0;
}

int tern_rootfs_setup(const tern_rootfs_ctx *ctx, tern_error **err)
{
	const oci_config *c = ctx->config;
	unsigned long prop = 0;
	cleanup_close int rootfd = -1;
	bool cgroupns = has_cgroupns(c);
	int ret;

	if (ctx->rootfs == NULL || ctx->rootfs[0] != '/')
		return tern_error_make(err, EINVAL,
				       "root.path must be resolved to an absolute path");
	ret = parse_propagation(c->linux_ ? c->linux_->rootfs_propagation : NULL, &prop, err);
	if (ret < 0)
		return ret;

	/* 1. Cut propagation to the host. runc uses the rootfsPropagation
	 * value here when one is set (so "shared" keeps the host link, which
	 * is what asking for shared means), rslave otherwise. */
	if (mount(NULL, "/", NULL, prop ? prop : MS_SLAVE | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "set the propagation of /");
	ret = parent_mount_private(ctx->rootfs, err);
	if (ret < 0)
		return tern_error_wrap(err, "rootfs `%s`", ctx->rootfs);

	/* 2. pivot_root needs the new root to be a mount point. */
	if (mount(ctx->rootfs, ctx->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind mount the rootfs `%s` onto itself",
				       ctx->rootfs);
	/* Opened after the bind, so it is the new mount's root. */
	rootfd = open(ctx->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open the rootfs `%s`", ctx->rootfs);

	/* 3. The config's mounts, in order. */
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *src = m->source ? m->source : (m->type ? m->type : "none");

		ret = tern_mount_one_ex(rootfd, ctx->rootfs, m, tern_mount_source_take(m),
					ctx->in_user_ns, cgroupns, err);
		if (ret < 0)
			return tern_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", src,
					       m->destination ? m->destination : "", i);
	}

	/* 4. /dev, unless the config binds one in. */
	if (!dev_is_bind_mounted(c)) {
		ret = tern_devices_setup(rootfd, c, ctx->in_user_ns, err);
		if (ret < 0)
			return ret;
	}

	/* The spec's place for the prestart/createRuntime/createContainer hooks. */
	if (ctx->before_pivot) {
		ret = ctx->before_pivot(ctx->before_pivot_data, err);
		if (ret < 0)
			return ret;
	}

	/* 5. */
	return do_pivot(rootfd, ctx->no_pivot, err);
}

/* ---- after pivot_root: the new mount API, which needs no /proc ----
 *
 * The container's /proc may not be mounted (or not yet), so nothing here
 * goes through /proc/self/fd: open_tree/move_mount attach mounts to fds and
 * mount_setattr changes only the attributes named, leaving the ones the
 * kernel locked (nosuid, nodev, noexec from the host) as they are. */

/* Mount a clone of what `srcfd` points at on top of `dstfd`. Returns an fd
 * to the new mount (the caller closes it). */
static int bind_fd(int srcfd, int dstfd, bool recursive)
{
	cleanup_close int tree = -1;

	tree = (int)syscall(SYS_open_tree, srcfd, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
				(recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return -errno;
	if (syscall(SYS_move_mount, tree, "", dstfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return steal_fd(&tree);
}

static int set_readonly(int mntfd, bool recursive)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(mntfd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
			  sizeof(attr)) < 0)
		return -errno;
	return 0;
}

/* A fresh, empty, read-only tmpfs on `dstfd`. */
static int mount_empty_tmpfs(int dstfd)
{
	cleanup_close int fsfd = -1, mnt = -1;

	fsfd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return -errno;
	if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	mnt = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			       MOUNT_ATTR_NOEXEC);
	if (mnt < 0)
		return -errno;
	if (syscall(SYS_move_mount, mnt, "", dstfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

static int mask_paths(int rootfd, char *const *paths, tern_error **err)
{
	cleanup_close int devnull = -1;
	struct stat st;
	int ret;

	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int fd = -1;

		fd = tern_open_in_root(rootfd, paths[i], O_PATH, 0, NULL);
		if (fd == -ENOENT)
			continue; /* runc skips missing paths */
		if (fd < 0)
			return tern_error_make(err, -fd, "maskedPaths[%zu] `%s`", i, paths[i]);
		if (fstat(fd, &st) < 0)
			return tern_error_make(err, errno, "maskedPaths[%zu] `%s`", i, paths[i]);
		if (S_ISDIR(st.st_mode)) {
			ret = mount_empty_tmpfs(fd);
			if (ret < 0)
				return tern_error_make(err, -ret,
						       "maskedPaths[%zu] `%s`: mount a read-only "
						       "tmpfs",
						       i, paths[i]);
			continue;
		}
		if (devnull < 0) {
			/* The container's /dev/null is the image's to set up:
			 * make sure it is the real 1:3 before using it as a
			 * mask, or a file could be shown in place of secrets. */
			struct stat ns;
			devnull = tern_open_in_root(rootfd, "/dev/null", O_PATH, 0, err);
			if (devnull < 0)
				return tern_error_wrap(err, "maskedPaths");
			if (fstat(devnull, &ns) < 0 || !S_ISCHR(ns.st_mode) ||
			    ns.st_rdev != makedev(1, 3))
				return tern_error_make(err, ENODEV,
						       "maskedPaths: /dev/null is not the "
						       "character device 1:3");
		}
		ret = bind_fd(devnull, fd, false);
		if (ret < 0)
			return tern_error_make(err, -ret, "maskedPaths[%zu] `%s`: bind /dev/null",
					       i, paths[i]);
		close(ret);
	}
	return 0;
}

static int readonly_paths(int rootfd, char *const *paths, tern_error **err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int fd = -1, mnt = -1;
		int ret;

		fd = tern_open_in_root(rootfd, paths[i], O_PATH, 0, NULL);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return tern_error_make(err, -fd, "readonlyPaths[%zu] `%s`", i, paths[i]);
		/* Bind onto itself (with what is mounted below it), then
		 * read-only, recursively, keeping every other flag. */
		mnt = bind_fd(fd, fd, true);
		if (mnt < 0)
			return tern_error_make(err, -mnt, "readonlyPaths[%zu] `%s`: bind", i,
					       paths[i]);
		ret = set_readonly(mnt, true);
		if (ret < 0)
			return tern_error_make(
			    err, -ret, "readonlyPaths[%zu] `%s`: remount read-only", i, paths[i]);
	}
	return 0;
}

int tern_rootfs_finalize(const tern_rootfs_ctx *ctx, tern_error **err)
{
	const oci_config *c = ctx->config;
	const oci_linux *lx = c->linux_;
	cleanup_close int rootfd = -1;
	unsigned long prop = 0;
	int ret;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");

	/* 6. */
	if (lx != NULL) {
		ret = mask_paths(rootfd, lx->masked_paths, err);
		if (ret < 0)
			return ret;
		ret = readonly_paths(rootfd, lx->readonly_paths, err);
		if (ret < 0)
			return ret;
	}

	/* 7. Only the root mount itself, as runc: mounts below keep their
	 * own flags (a rw volume stays writable). */
	if (c->root != NULL && c->root->readonly) {
		if (mount(NULL, "/", NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | tern_mount_locked_flags(rootfd, NULL),
			  NULL) < 0)
			return tern_error_make(err, errno, "root.readonly: remount / read-only");
	}

	/* 8. Now that the rootfs is "/", apply rootfsPropagation to it (done
	 * before pivot it would have applied to the host's root mount). */
	ret = parse_propagation(lx ? lx->rootfs_propagation : NULL, &prop, err);
	if (ret < 0)
		return ret;
	if (prop != 0 && mount(NULL, "/", NULL, prop, NULL) < 0)
		return tern_error_make(err, errno, "linux.rootfsPropagation: set on /");
	return 0;
}

int tern_rootfs_bind_console(int slave, const char *pts_path, tern_error **err)
{
	cleanup_close int rootfd = -1, devfd = -1, console = -1, mnt = -1;
	struct stat st;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");
	/* The source is the slave fd itself, not its path: /dev/pts/N could
	 * be anything by now (CVE-2025-52565). */
	if (fstat(slave, &st) < 0 || !S_ISCHR(st.st_mode) || !isatty(slave))
		return tern_error_make(err, ENOTTY, "console: `%s` is not a terminal", pts_path);
	devfd = tern_mkdir_in_root(rootfd, "/dev", false, err);
	if (devfd < 0)
		return tern_error_wrap(err, "console");
	/* Never through a symlink: whatever is not a plain file goes. */
	if (fstatat(devfd, "console", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return tern_error_make(err, EISDIR, "console: /dev/console");
		if (unlinkat(devfd, "console", 0) < 0)
			return tern_error_make(err, errno, "console: remove /dev/console");
	}
	console = openat(devfd, "console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (console < 0)
		return tern_error_make(err, errno, "console: create /dev/console");
	tern_closep(&console);
	console = openat(devfd, "console", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (console < 0)
		return tern_error_make(err, errno, "console: open /dev/console");
	/* A regular file, on the container's /dev: not something mounted
	 * there in the meantime. */
	if (fstat(console, &st) < 0 || !S_ISREG(st.st_mode))
		return tern_error_make(err, EEXIST, "console: /dev/console changed under us");
	mnt = bind_fd(slave, console, false);
	if (mnt < 0)
		return tern_error_make(err, -mnt, "console: bind `%s` on /dev/console", pts_path);
	return 0;
}
