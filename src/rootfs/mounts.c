/* One config.json mount (runtime-spec config.md "mounts").
 *
 * Every destination is resolved inside the rootfs by tern_mount_target
 * (tern_mkdir_in_root, then the procfs check on the fd) and mounted through
 * the /proc/self/fd/N path of the O_PATH fd it returns (or move_mount onto
 * that fd), so the kernel never walks a path that the image controls and
 * the fd checked is the fd mounted on. After mount(2)
 * that fd still names the covered directory, not the new mount: whatever
 * must act on the new mount (remount, propagation, mount_setattr, copy-up)
 * opens the destination again. */
#include "mounts.h"
#include "cgroup-mount.h"
#include "idmap.h"
#include "path-resolve.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

static void opts_cleanup(tern_mount_options *opts)
{
	tern_mount_options_clear(opts);
}
#define cleanup_mount_options __attribute__((cleanup(opts_cleanup)))

/* Propagation and recursive attributes, on the mount now at `dest`. */
static int apply_mount_attrs(int rootfd, const char *dest, const tern_mount_options *opts,
			     tern_error **err)
{
	cleanup_close int fd = -1;
	char path[32];

	if (opts->propagation == 0 && opts->attr_set == 0 && opts->attr_clr == 0)
		return 0;
	fd = tern_open_in_root(rootfd, dest, O_PATH, 0, err);
	if (fd < 0)
		return fd;
	if (opts->propagation != 0 &&
	    mount(NULL, tern_fd_path(fd, path, sizeof(path)), NULL, opts->propagation, NULL) < 0)
		return tern_error_make(err, errno, "set the mount propagation");
	if (opts->attr_set != 0 || opts->attr_clr != 0) {
		struct mount_attr attr = {.attr_set = opts->attr_set, .attr_clr = opts->attr_clr};
		if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
			return tern_error_make(err, errno, "set recursive mount attributes");
	}
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Under /proc only a handful of files may be mounted over (the ones LXCFS
 * and friends emulate): anything else there would let a config shadow
 * /proc/self/attr or /proc/sys knobs that the runtime itself relies on. */
static int check_proc_dest(const char *clean, const char *type)
{
	static const char *const allowed[] = {
	    "/proc/cpuinfo", "/proc/diskstats",
	    "/proc/meminfo", "/proc/stat",
	    "/proc/swaps",   "/proc/uptime",
	    "/proc/loadavg", "/proc/slabinfo",
	    "/proc/net/dev", "/proc/sys/kernel/ns_last_pid",
	};
	if (strncmp(clean, "/proc", 5) != 0 || (clean[5] != '\0' && clean[5] != '/'))
		return 0;
	if (clean[5] == '\0')
		return str_eq(type, "proc") || str_eq(type, "bind") ? 0 : -EPERM;
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (strcmp(clean, allowed[i]) == 0)
			return 0;
	return -EPERM;
}

/* /proc and /sys must not be symlinks in the image: mounting through one
 * would put the kernel's view somewhere the image chose. */
static int refuse_symlink_dest(int rootfd, const char *dest, tern_error **err)
{
	cleanup_close int fd = -1;
	struct stat st;

	fd = tern_open_in_root(rootfd, dest, O_PATH | O_NOFOLLOW, 0, NULL);
	if (fd < 0)
		return 0; /* missing (created later) or an error reported later */
	if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode))
		return tern_error_make(
		    err, ELOOP,
		    "the destination is a symlink inside the rootfs, refusing to "
		    "mount there");
	return 0;
}

/* ---- tmpcopyup: fill a fresh tmpfs with what it covers ---- */

static int copy_tree(int srcdir, int dstdir, int depth);

static int copy_entry(int srcdir, int dstdir, const char *name, int depth)
{
	struct stat st;

	if (fstatat(srcdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode)) {
		cleanup_close int s = -1, d = -1;
		if (mkdirat(dstdir, name, st.st_mode & 07777) < 0 && errno != EEXIST)
			return -errno;
		s = openat(srcdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		d = openat(dstdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0 || d < 0)
			return -errno;
		int ret = copy_tree(s, d, depth + 1);
		if (ret < 0)
			return ret;
	} else if (S_ISREG(st.st_mode)) {
		cleanup_close int s = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		cleanup_close int d = -1;
		char buf[65536];
		ssize_t n;
		if (s < 0)
			return -errno;
		d = openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   st.st_mode & 07777);
		if (d < 0)
			return -errno;
		while ((n = read(s, buf, sizeof(buf))) > 0)
			if (tern_write_all(d, buf, (size_t)n) < 0)
				return -errno;
		if (n < 0)
			return -errno;
	} else if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = readlinkat(srcdir, name, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (symlinkat(target, dstdir, name) < 0)
			return -errno;
	} else {
		if (mknodat(dstdir, name, st.st_mode, st.st_rdev) < 0)
			return -errno;
	}
	if (fchownat(dstdir, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
	    errno != EINVAL)
		return -errno;
	if (!S_ISLNK(st.st_mode) && fchmodat(dstdir, name, st.st_mode & 07777, 0) < 0)
		return -errno;
	return 0;
}

static int copy_tree(int srcdir, int dstdir, int depth)
{
	DIR *d;
	struct dirent *de;
	int dupfd, ret = 0;

	if (depth > 64)
		return -ELOOP;
	dupfd = fcntl(srcdir, F_DUPFD_CLOEXEC, 3);
	if (dupfd < 0)
		return -errno;
	d = fdopendir(dupfd);
	if (d == NULL) {
		ret = -errno;
		close(dupfd);
		return ret;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		ret = copy_entry(srcdir, dstdir, de->d_name, depth);
		if (ret < 0)
			break;
	}
	closedir(d);
	return ret;
}

/* ---- the mount itself ---- */

/* Put the source on `dst`: move a prepared tree there, or bind an fd. */
static int attach_source(const tern_bind_source *src, int dst, bool recursive, tern_error **err)
{
	char sp[32], dp[32];

	if (src->tree) {
		/* The kernel lists a namespace's mounts (mountinfo) in the order
		 * they were made, and the tree was cloned by the parent before
		 * the rootfs was even bound: attached as is, it would be listed
		 * before the rootfs and before a tmpfs it sits on. A fresh clone
		 * of it, made now, takes its place in the config's order
		 * (runc and crun list mounts that way); it keeps what the tree
		 * has (id mapping, propagation, the flags and submounts the
		 * kernel locked). Where the kernel will not clone a detached
		 * tree (one made in another mount namespace: mount-source.c's
		 * non-recursive binds in a user namespace), the tree itself. */
		cleanup_close int fresh =
		    open_tree(src->fd, "",
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
				  (recursive ? AT_RECURSIVE : 0));
		if (move_mount(fresh >= 0 ? fresh : src->fd, "", dst, "",
			       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return tern_error_make(err, errno, "move the source's mount into place");
		return 0;
	}
	if (mount(tern_fd_path(src->fd, sp, sizeof(sp)), tern_fd_path(dst, dp, sizeof(dp)), NULL,
		  MS_BIND | (recursive ? MS_REC : 0), NULL) < 0)
		return tern_error_make(err, errno, "bind mount");
	return 0;
}

/* A bind mount of `prepared` (mount-source.h), or else of the path
 * `source`, opened here. */
static int do_bind(int rootfd, const oci_mount *m, const tern_mount_options *opts,
		   const char *source, const tern_bind_source *prepared, tern_error **err)
{
	cleanup_close int own = -1, dst = -1;
	tern_bind_source src = {.fd = -1};
	struct stat st;
	int ret;

	if (prepared != NULL && prepared->fd >= 0) {
		src = *prepared;
	} else {
		/* No prepared source (a rootless tern; /sys for sysfs): the
		 * bare strerror lets the caller say
		 * "mount `src` to `dst` (mounts[N]): No such file or directory". */
		own = open(source, O_PATH | O_CLOEXEC);
		if (own < 0)
			return tern_error_make_literal(err, errno, strerror(errno));
		src.fd = own;
	}
	if (fstat(src.fd, &st) < 0)
		return tern_error_make(err, errno, "stat the source");
	dst = tern_mount_target(rootfd, m->destination, !S_ISDIR(st.st_mode), err);
	if (dst < 0)
		return dst;
	ret = attach_source(&src, dst, opts->recursive_bind, err);
	if (ret < 0)
		return ret;
	/* A bind mount ignores every flag but MS_REC; the rest needs a
	 * second pass on the new mount. */
	if (opts->flags & ~(MS_REMOUNT | MS_BIND | MS_REC)) {
		ret = tern_mount_bind_remount(rootfd, m->destination, opts, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A "mode=" among the filesystem options `data`. */
static bool has_mode_option(const char *data)
{
	for (const char *p = data; p && *p;) {
		if (strncmp(p, "mode=", 5) == 0)
			return true;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return false;
}

/* A tmpfs without "mode=" takes the mode of the directory it covers, as
 * with runc (the tmpfs default, 1777, stays for a destination that did not
 * exist); an explicit "mode=" wins, as in runc >= 1.2 and crun (runc 1.1
 * overrode it with the directory's). Given at mount time, so a read-only
 * tmpfs gets it too. Returns the options to mount with (malloc'd), or NULL
 * to keep opts->data. */
static char *tmpfs_mode_data(int rootfd, const oci_mount *m, const tern_mount_options *opts)
{
	cleanup_close int fd = -1;
	struct stat st;

	if (!str_eq(m->type, "tmpfs") || has_mode_option(opts->data))
		return NULL;
	fd = tern_open_in_root(rootfd, m->destination, O_PATH, 0, NULL);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return NULL;
	if (opts->data == NULL || *opts->data == '\0')
		return tern_strdup_printf("mode=%04o", (unsigned)(st.st_mode & 07777));
	return tern_strdup_printf("mode=%04o,%s", (unsigned)(st.st_mode & 07777), opts->data);
}

static int do_mount(int rootfd, const oci_mount *m, const tern_mount_options *opts, bool in_user_ns,
		    tern_error **err)
{
	cleanup_close int dst = -1, olddir = -1;
	cleanup_free char *mode_data = tmpfs_mode_data(rootfd, m, opts);
	const char *type = m->type;
	const char *source = m->source ? m->source : type;
	const char *data = mode_data ? mode_data : opts->data;
	char dp[32];
	int ret;

	dst = tern_mount_target(rootfd, m->destination, false, err);
	if (dst < 0)
		return dst;
	if (opts->tmpcopyup && str_eq(type, "tmpfs")) {
		/* Still the covered directory once the tmpfs is on top. */
		olddir = openat(dst, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (olddir < 0)
			return tern_error_make(err, errno, "tmpcopyup: open the destination");
	}
	unsigned long flags = opts->flags & ~(unsigned long)(opts->tmpcopyup ? MS_RDONLY : 0);
	if (mount(source, tern_fd_path(dst, dp, sizeof(dp)), type, flags, data) < 0) {
		int e = errno;
		/* sysfs cannot be mounted from a user namespace that does not
		 * own the network namespace: show the host's, read-only
		 * where asked, as runc does. */
		if (str_eq(type, "sysfs") && in_user_ns && (e == EPERM || e == EBUSY)) {
			tern_mount_options o = *opts;
			o.recursive_bind = true;
			o.flags |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
			/* Never deferred (tern_mount_one_ex): the host's mounts
			 * under /sys must be read-only from the start. */
			if (opts->ro_deferred)
				o.flags |= MS_RDONLY;
			ret = do_bind(rootfd, m, &o, "/sys", NULL, err);
			if (ret < 0 || !(o.flags & MS_RDONLY))
				return ret;
			/* The bind also brings the host's mounts under /sys:
			 * read-only too, or "ro" would only cover the top. */
			cleanup_close int fd =
			    tern_open_in_root(rootfd, m->destination, O_PATH, 0, err);
			struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
			if (fd < 0)
				return fd;
			if (mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
					  sizeof(attr)) < 0)
				return tern_error_make(err, errno, "make the /sys bind read-only");
			return 0;
		}
		return tern_error_make(err, e, "mount %s", type ? type : "(no type)");
	}
	if (olddir >= 0) {
		cleanup_close int newdir =
		    tern_open_in_root(rootfd, m->destination, O_RDONLY | O_DIRECTORY, 0, err);
		if (newdir < 0)
			return newdir;
		ret = copy_tree(olddir, newdir, 0);
		if (ret < 0)
			return tern_error_make(err, -ret, "tmpcopyup");
		/* The tmpfs root stands for the directory it covers (its mode
		 * unless "mode=" says otherwise: see tmpfs_mode_data). */
		struct stat st;
		if (fstat(olddir, &st) < 0 || fchown(newdir, st.st_uid, st.st_gid) < 0 ||
		    (!has_mode_option(opts->data) && fchmod(newdir, st.st_mode & 07777) < 0))
			return tern_error_make(err, errno, "tmpcopyup: owner and mode of the root");
		if (opts->flags & MS_RDONLY) {
			/* Not a bind: a plain remount of the new tmpfs. */
			cleanup_close int fd =
			    tern_open_in_root(rootfd, m->destination, O_PATH, 0, err);
			if (fd < 0)
				return fd;
			if (mount(NULL, tern_fd_path(fd, dp, sizeof(dp)), NULL,
				  MS_REMOUNT | opts->flags, opts->data) < 0)
				return tern_error_make(err, errno, "tmpcopyup: remount read-only");
		}
	}
	return 0;
}

int tern_mount_one_ex(int rootfd, const char *rootfs_path, const oci_mount *m, tern_bind_source src,
		      bool in_user_ns, bool cgroupns, bool defer_ro, tern_error **err)
{
	cleanup_mount_options tern_mount_options opts = {0};
	cleanup_free char *clean = NULL;
	cleanup_close int srcfd = src.fd; /* closed once attached, or on failure */
	int ret;

	if (m->destination == NULL)
		return tern_error_make(err, EINVAL, "no destination");
	ret = tern_mount_options_parse(m->options, &opts, err);
	if (ret < 0)
		return ret;
	if (str_eq(m->type, "bind") || str_eq(m->type, "rbind")) {
		opts.bind = true;
		if (str_eq(m->type, "rbind"))
			opts.recursive_bind = true;
	}
	/* "ro" left for the caller to apply once what goes under this mount
	 * is there (cgroup mounts make their own tree read-only). */
	if (defer_ro && (opts.flags & MS_RDONLY) && !str_eq(m->type, "cgroup") &&
	    !str_eq(m->type, "cgroup2")) {
		opts.flags &= ~(unsigned long)MS_RDONLY;
		opts.ro_deferred = true;
	}

	clean = tern_mount_clean_dest(m->destination);
	if (check_proc_dest(clean, opts.bind ? "bind" : m->type) < 0)
		return tern_error_make(
		    err, EPERM,
		    "refusing to mount inside /proc (only proc on /proc and binds "
		    "over a few emulated files such as /proc/meminfo)");
	if (opts.bind && strcmp(clean, "/proc") == 0) {
		/* As runc: a bind on /proc must bring a procfs, not a directory
		 * that would stand in for it. */
		struct statfs sf;
		int r = srcfd >= 0	    ? fstatfs(srcfd, &sf)
			: m->source != NULL ? statfs(m->source, &sf)
					    : -1;
		if (r < 0 || sf.f_type != PROC_SUPER_MAGIC)
			return tern_error_make(err, EPERM,
					       "/proc can only be a proc mount or a bind of a "
					       "procfs, refusing to bind `%s` there",
					       m->source ? m->source : "");
	}
	if (str_eq(m->type, "proc") || str_eq(m->type, "sysfs") || strcmp(clean, "/proc") == 0 ||
	    strcmp(clean, "/sys") == 0) {
		ret = refuse_symlink_dest(rootfd, m->destination, err);
		if (ret < 0)
			return ret;
	}

	if (tern_idmap_wanted(m) && !src.tree) {
		return tern_error_make_quiet(err, EINVAL, "the idmapped tree was not prepared");
	} else if (opts.bind) {
		if (m->source == NULL)
			return tern_error_make(err, EINVAL, "a bind mount needs a source");
		ret = do_bind(rootfd, m, &opts, m->source, &src, err);
	} else if (str_eq(m->type, "cgroup")) {
		ret = tern_mount_cgroup(rootfd, rootfs_path ? rootfs_path : "", m->destination,
					&opts, cgroupns, err);
	} else if (str_eq(m->type, "cgroup2")) {
		ret = tern_mount_cgroup2(rootfd, rootfs_path ? rootfs_path : "", m->destination,
					 &opts, cgroupns, err);
	} else {
		ret = do_mount(rootfd, m, &opts, in_user_ns, err);
	}
	if (ret < 0)
		return ret;
	return apply_mount_attrs(rootfd, m->destination, &opts, err);
}

int tern_mount_one(int rootfd, const char *rootfs_path, const oci_mount *m, bool in_user_ns,
		   tern_error **err)
{
	tern_bind_source none = {.fd = -1};
	return tern_mount_one_ex(rootfd, rootfs_path, m, none, in_user_ns, false, false, err);
}
