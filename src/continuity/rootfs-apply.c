/* The target side of the rootfs sync: applying a stream (rootfs-sync.h)
 * to the tree at rootfd.
 *
 * Every byte comes from the network, so: records are parsed with bounds
 * checks and a size limit before being buffered; every path is checked
 * lexically (relative, no "." / ".." / empty component, no NUL) and its
 * parent is opened beneath the rootfs by the kernel (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, or our own
 * O_NOFOLLOW walk); the last component is then only used with *at calls
 * that do not follow it. A symlink in the rootfs is an entry to replace or
 * delete, never a way through.
 *
 * Replacing: a new regular file, symlink or node is made under a temporary
 * name in the same directory, given its metadata, and renamed over the old
 * one, so an interrupted round leaves either version, never half of one.
 * That makes a new inode, also for a file with hard links: the sender
 * sends a LINK for each other name of the source inode, so the target's
 * link structure follows the source's exactly. Truncating in place would
 * instead keep whatever names the target's old inode had, including ones
 * the source has since split off onto another inode.
 *
 * Directory mtimes: creating, renaming and deleting children change them,
 * so they are set when the round ends: to the value of the directory's
 * own record if it had one, else to the one it had before this round
 * touched it.
 *
 * With an undo directory (tern_rootfs_applier_set_undo), nothing is
 * destroyed: what a round replaces or deletes is renamed aside first and
 * old metadata is logged, so that a failed migration can put the tree back
 * (rootfs-undo.c). */
#include "rootfs-sync.h"
#include "rootfs-delta.h"
#include "rootfs-entry.h"
#include "rootfs-undo.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct pending_file {
	bool active;
	bool patch; /* PATCH: fd is the file itself, changed in place */
	int fd;	    /* the temporary file (or the patched one), O_RDWR */
	int dirfd;  /* its directory */
	char *tmpname;
	struct rs_attrs a;
	struct stat st; /* of the patched file before the patch */
};

struct tern_rootfs_applier {
	int rootfd;
	dev_t rootdev;
	struct rs_buf in; /* bytes not parsed yet */
	bool in_round;	  /* the round's header was read */
	bool failed;
	struct pending_file file;
	rs_map *dirs; /* directory path -> struct timespec: its mtime at the end */
	unsigned tmp_counter;
	tern_rootfs_device_fn allow_device;
	void *allow_data;
	rs_undo *undo;
};

int tern_rootfs_applier_new(int rootfd, tern_rootfs_applier **out, tern_error **err)
{
	tern_rootfs_applier *a;
	struct stat st;

	if (fstat(rootfd, &st) < 0)
		return tern_error_make(err, errno, "rootfs sync: stat the rootfs");
	if (!S_ISDIR(st.st_mode))
		return tern_error_make(err, ENOTDIR, "rootfs sync: the rootfs");
	a = tern_xmalloc0(sizeof(*a));
	a->rootfd = rootfd;
	a->rootdev = st.st_dev;
	a->dirs = rs_map_new();
	a->file.fd = a->file.dirfd = -1;
	*out = a;
	return 0;
}

int tern_rootfs_applier_set_undo(tern_rootfs_applier *a, int undo_dirfd, tern_error **err)
{
	return rs_undo_new(undo_dirfd, a->rootfd, &a->undo, err);
}

void tern_rootfs_applier_set_device_filter(tern_rootfs_applier *a, tern_rootfs_device_fn allow,
					   void *data)
{
	a->allow_device = allow;
	a->allow_data = data;
}

static void pending_drop(struct pending_file *f)
{
	if (f->active && f->tmpname != NULL)
		unlinkat(f->dirfd, f->tmpname, 0);
	tern_closep(&f->fd);
	tern_closep(&f->dirfd);
	free(f->tmpname);
	f->tmpname = NULL;
	rs_attrs_clear(&f->a);
	f->active = false;
	f->patch = false;
}

void tern_rootfs_applier_free(tern_rootfs_applier *a)
{
	if (a == NULL)
		return;
	pending_drop(&a->file);
	rs_undo_free(a->undo);
	rs_map_free(a->dirs, free);
	rs_buf_free(&a->in);
	free(a);
}

/* ---- metadata ---- */

static void set_dir_mtime(tern_rootfs_applier *a, const char *path, int64_t sec, long nsec,
			  bool replace)
{
	struct timespec *ts = rs_map_get(a->dirs, path, strlen(path));

	if (ts != NULL && !replace)
		return;
	if (ts == NULL) {
		ts = tern_xmalloc0(sizeof(*ts));
		rs_map_put(a->dirs, path, strlen(path), ts);
	}
	ts->tv_sec = sec;
	ts->tv_nsec = nsec;
}

/* About to change the entries of directory `path`: remember its mtime as
 * it is, unless this round already did or its own record set one. */
static int touch_dir(tern_rootfs_applier *a, const char *path, int dirfd, tern_error **err)
{
	struct stat st;

	if (rs_map_get(a->dirs, path, strlen(path)) == NULL && fstat(dirfd, &st) == 0)
		set_dir_mtime(a, path, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, false);
	return a->undo ? rs_undo_meta(a->undo, dirfd, path, err) : 0;
}

/* `name` in `dirfd` is about to be replaced or removed. */
static int displace(tern_rootfs_applier *a, int dirfd, const char *name, const char *path,
		    tern_error **err)
{
	return a->undo ? rs_undo_displace(a->undo, dirfd, name, path, err) : 0;
}

/* ---- the tree ---- */

/* Remove `name` in `dirfd`, recursively for a directory, never following a
 * symlink and never into another mount. */
static int remove_tree(tern_rootfs_applier *a, int dirfd, const char *name, tern_error **err)
{
	cleanup_strv char **names = NULL;
	cleanup_close int fd = -1;
	struct stat st;
	size_t n = 0;
	int ret;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : tern_error_make(err, errno, "stat `%s`", name);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return tern_error_make(err, errno, "remove `%s`", name);
		return 0;
	}
	if (st.st_dev != a->rootdev)
		return tern_error_make(err, EXDEV, "remove `%s`", name);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open `%s`", name);
	ret = rs_list_dir(fd, &names, &n);
	if (ret < 0)
		return tern_error_make(err, -ret, "read the directory `%s`", name);
	for (size_t i = 0; i < n; i++) {
		ret = remove_tree(a, fd, names[i], err);
		if (ret < 0)
			return tern_error_wrap(err, "in `%s`", name);
	}
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return tern_error_make(err, errno, "remove the directory `%s`", name);
	return 0;
}

/* Rename the temporary `tmp` over `name` (a directory there is removed
 * first: rename cannot replace a directory by a non-directory). */
static int replace_with(tern_rootfs_applier *a, int dirfd, const char *tmp, const char *name,
			tern_error **err)
{
	struct stat st;
	int ret;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		ret = remove_tree(a, dirfd, name, err);
		if (ret < 0)
			return ret;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		return tern_error_make(err, errno, "rename into place");
	/* Two names of one inode: rename does nothing and tmp stays. */
	unlinkat(dirfd, tmp, 0);
	return 0;
}

static char *tmp_name(tern_rootfs_applier *a)
{
	return tern_strdup_printf(".tern-sync.%d.%u", (int)getpid(), a->tmp_counter++);
}

/* Call `make` until a temporary name is free; returns the name. */
static int make_tmp(tern_rootfs_applier *a, int dirfd, int (*make)(int, const char *, void *),
		    void *data, char **out)
{
	for (int tries = 0; tries < 100; tries++) {
		char *tmp = tmp_name(a);
		int ret = make(dirfd, tmp, data);
		if (ret >= 0) {
			*out = tmp;
			return ret;
		}
		free(tmp);
		if (ret != -EEXIST)
			return ret;
	}
	return -EEXIST;
}

static bool default_device(bool block, uint32_t major, uint32_t minor)
{
	static const uint32_t allowed[][2] = {{1, 3}, {1, 5}, {1, 7}, {1, 8},
					      {1, 9}, {5, 0}, {5, 1}, {5, 2}};

	for (size_t i = 0; !block && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (allowed[i][0] == major && allowed[i][1] == minor)
			return true;
	return false;
}

static int make_node_at(int dirfd, const char *tmp, void *data)
{
	const struct rs_attrs *at = data;
	int ret;

	if (S_ISLNK(at->mode))
		ret = symlinkat(at->link, dirfd, tmp);
	else
		ret = mknodat(dirfd, tmp, (at->mode & S_IFMT) | 0600,
			      makedev(at->rdev_major, at->rdev_minor));
	return ret < 0 ? -errno : 0;
}

/* A symlink, device node, fifo or socket. */
static int make_node(tern_rootfs_applier *a, int dirfd, const char *name, const struct rs_attrs *at,
		     tern_error **err)
{
	cleanup_free char *tmp = NULL;
	cleanup_close int fd = -1;
	bool block = S_ISBLK(at->mode);
	int ret;

	if ((block || S_ISCHR(at->mode)) &&
	    !default_device(block, at->rdev_major, at->rdev_minor) &&
	    (a->allow_device == NULL ||
	     !a->allow_device(a->allow_data, at->path, block, at->rdev_major, at->rdev_minor)))
		return tern_error_make_quiet(err, EPERM, "device %c %u:%u not allowed",
					     block ? 'b' : 'c', at->rdev_major, at->rdev_minor);
	ret = make_tmp(a, dirfd, make_node_at, (void *)at, &tmp);
	if (ret < 0)
		return tern_error_make(err, -ret, "create");
	fd = openat(dirfd, tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	ret = fd < 0 ? tern_error_make(err, errno, "open") : rs_set_meta(fd, at, true, err);
	if (ret == 0)
		ret = replace_with(a, dirfd, tmp, name, err);
	if (ret < 0)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

static int make_dir(tern_rootfs_applier *a, int dirfd, const char *name, const struct rs_attrs *at,
		    tern_error **err)
{
	cleanup_close int fd = -1;
	struct stat st;
	int ret;

	bool exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;

	if (!exists || !S_ISDIR(st.st_mode)) {
		ret = displace(a, dirfd, name, at->path, err);
		if (ret < 0)
			return ret;
	}
	if (exists && !S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return tern_error_make(err, errno, "remove the old entry");
	}
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return tern_error_make(err, errno, "mkdir");
	fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "open");
	if (st.st_dev != a->rootdev)
		return tern_error_make(err, EXDEV, "open");
	if (a->undo && (ret = rs_undo_meta(a->undo, fd, at->path, err)) < 0)
		return ret;
	ret = rs_set_meta(fd, at, false, err);
	set_dir_mtime(a, at->path, at->mtime_sec, at->mtime_nsec, true);
	return ret;
}

static int create_file_at(int dirfd, const char *tmp, void *data)
{
	int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* A regular file: created now, filled by DATA records, put in place by
 * COMMIT. */
static int begin_file(tern_rootfs_applier *a, int *dirfd, struct rs_attrs *at, tern_error **err)
{
	struct pending_file *f = &a->file;
	int fd = make_tmp(a, *dirfd, create_file_at, NULL, &f->tmpname);

	if (fd < 0)
		return tern_error_make(err, -fd, "create");
	f->fd = fd;
	f->dirfd = steal_fd(dirfd);
	f->a = *at;
	memset(at, 0, sizeof(*at));
	f->active = true;
	if (ftruncate(fd, (off_t)f->a.size) < 0)
		return tern_error_make(err, errno, "truncate to %llu bytes",
				       (unsigned long long)f->a.size);
	return 0;
}

static int apply_entry(tern_rootfs_applier *a, struct rs_attrs *at, tern_error **err)
{
	const char *name;
	cleanup_free char *parent = NULL;
	cleanup_close int dirfd = -1;
	int ret;

	if (at->path[0] == '\0') { /* the rootfs itself: only its metadata */
		dirfd = rs_open_beneath(a->rootfd, "", true);
		if (dirfd < 0)
			return tern_error_make(err, -dirfd, "open the rootfs");
		set_dir_mtime(a, "", at->mtime_sec, at->mtime_nsec, true);
		if (a->undo && (ret = rs_undo_meta(a->undo, dirfd, "", err)) < 0)
			return ret;
		return rs_set_meta(dirfd, at, false, err);
	}
	parent = rs_path_parent(at->path, &name);
	dirfd = rs_open_beneath(a->rootfd, parent, true);
	if (dirfd < 0)
		return tern_error_make(err, -dirfd, "open its directory");
	ret = touch_dir(a, parent, dirfd, err);
	if (ret < 0)
		return ret;
	if (S_ISDIR(at->mode))
		return make_dir(a, dirfd, name, at, err);
	ret = displace(a, dirfd, name, at->path, err);
	if (ret < 0)
		return ret;
	if (S_ISREG(at->mode))
		return begin_file(a, &dirfd, at, err);
	return make_node(a, dirfd, name, at, err);
}

static int apply_data(tern_rootfs_applier *a, struct rs_reader *r, tern_error **err)
{
	struct pending_file *f = &a->file;
	uint64_t off = rs_get_u64(r);
	size_t len = r->left;
	const char *p = rs_get_bytes(r, len);

	if (r->bad || !f->active)
		return tern_error_make_quiet(err, EBADMSG, "file data outside a file");
	if (len > f->a.size || off > f->a.size - len)
		return tern_error_make_quiet(err, EBADMSG, "`%s`: data past its size %llu",
					     f->a.path, (unsigned long long)f->a.size);
	if (f->patch && a->undo) {
		int ret = rs_undo_patch_save(a->undo, f->fd, f->a.path, &f->st, off, len, err);
		if (ret < 0)
			return ret;
	}
	while (len > 0) {
		ssize_t n = pwrite(f->fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return tern_error_make(err, n < 0 ? errno : EIO, "`%s`: write", f->a.path);
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int commit_file(tern_rootfs_applier *a, tern_error **err)
{
	struct pending_file *f = &a->file;
	const char *name;
	cleanup_free char *parent = NULL;
	int ret;

	if (!f->active)
		return tern_error_make_quiet(err, EBADMSG, "commit outside a file");
	parent = rs_path_parent(f->a.path, &name);
	ret = rs_set_meta(f->fd, &f->a, true, err);
	if (ret == 0 && !f->patch)
		ret = replace_with(a, f->dirfd, f->tmpname, name, err);
	if (ret < 0)
		ret = tern_error_wrap(err, "`%s`", f->a.path);
	else
		f->active = false; /* renamed: nothing to unlink */
	pending_drop(f);
	return ret;
}

static int apply_meta(tern_rootfs_applier *a, const struct rs_attrs *at, tern_error **err)
{
	cleanup_close int fd = rs_open_beneath(a->rootfd, at->path, false);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, fd < 0 ? -fd : errno, "open");
	if ((st.st_mode & S_IFMT) != (at->mode & S_IFMT))
		return tern_error_make_quiet(err, EBADMSG,
					     "metadata for another type of entry (%o, here %o)",
					     at->mode & S_IFMT, st.st_mode & S_IFMT);
	if (S_ISDIR(at->mode))
		set_dir_mtime(a, at->path, at->mtime_sec, at->mtime_nsec, true);
	if (a->undo) {
		int ret = rs_undo_meta(a->undo, fd, at->path, err);
		if (ret < 0)
			return ret;
	}
	return rs_set_meta(fd, at, !S_ISDIR(at->mode), err);
}

/* PATCH: the regular file at at->path changes in place (rootfs-delta.h):
 * truncated or extended to its new size now, then DATA, then COMMIT sets
 * its metadata. In place, not into a copy: a copy of a big file would
 * cost what the delta saves. So the undo keeps the old size and, before
 * they are overwritten or cut off, the old bytes (rs_undo_patch_save). */
static int apply_patch(tern_rootfs_applier *a, struct rs_attrs *at, tern_error **err)
{
	struct pending_file *f = &a->file;
	cleanup_close int fd = rs_open_beneath(a->rootfd, at->path, false);
	cleanup_close int rfd = -1;
	struct stat st;
	int ret;

	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, fd < 0 ? -fd : errno, "open");
	if (!S_ISREG(st.st_mode) || !S_ISREG(at->mode))
		return tern_error_make_quiet(err, EBADMSG,
					     "a patch for an entry that is not a "
					     "regular file");
	if (a->undo && (ret = rs_undo_meta(a->undo, fd, at->path, err)) < 0)
		return ret;
	rfd = rs_reopen_write(fd);
	if (rfd < 0)
		return tern_error_make(err, -rfd, "open for writing");
	if (a->undo && (ret = rs_undo_patch_begin(a->undo, rfd, at->path, &st, at->size, err)) < 0)
		return ret;
	if ((uint64_t)st.st_size != at->size && ftruncate(rfd, (off_t)at->size) < 0)
		return tern_error_make(err, errno, "truncate to %llu bytes",
				       (unsigned long long)at->size);
	f->fd = steal_fd(&rfd);
	f->dirfd = -1;
	f->st = st;
	f->a = *at;
	memset(at, 0, sizeof(*at));
	f->patch = true;
	f->active = true;
	return 0;
}

struct link_source {
	int dirfd;
	const char *name;
};

static int link_at(int dirfd, const char *tmp, void *data)
{
	const struct link_source *t = data;
	/* flags 0: a symlink is linked as itself, never followed. */
	return linkat(t->dirfd, t->name, dirfd, tmp, 0) < 0 ? -errno : 0;
}

/* `path` becomes another name of the inode at `target`. */
static int apply_link(tern_rootfs_applier *a, const char *path, const char *target,
		      tern_error **err)
{
	const char *name, *tname;
	cleanup_free char *parent = rs_path_parent(path, &name);
	cleanup_free char *tparent = rs_path_parent(target, &tname);
	cleanup_free char *tmp = NULL;
	cleanup_close int dirfd = rs_open_beneath(a->rootfd, parent, true);
	cleanup_close int tdirfd = rs_open_beneath(a->rootfd, tparent, true);
	struct link_source t = {tdirfd, tname};
	struct stat st, tst;
	int ret;

	if (dirfd < 0 || tdirfd < 0)
		return tern_error_make(err, dirfd < 0 ? -dirfd : -tdirfd, "open the directory");
	if (fstatat(tdirfd, tname, &tst, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(err, errno, "the link target `%s`", target);
	if (S_ISDIR(tst.st_mode))
		return tern_error_make(err, EPERM, "the link target `%s`", target);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == tst.st_dev &&
	    st.st_ino == tst.st_ino)
		return 0;
	ret = touch_dir(a, parent, dirfd, err);
	if (ret == 0)
		ret = displace(a, dirfd, name, path, err);
	if (ret < 0)
		return ret;
	ret = make_tmp(a, dirfd, link_at, &t, &tmp);
	if (ret < 0)
		return tern_error_make(err, -ret, "link to `%s`", target);
	ret = replace_with(a, dirfd, tmp, name, err);
	if (ret < 0)
		unlinkat(dirfd, tmp, 0);
	return ret;
}

static int apply_delete(tern_rootfs_applier *a, const char *path, tern_error **err)
{
	const char *name;
	cleanup_free char *parent = rs_path_parent(path, &name);
	cleanup_close int dirfd = rs_open_beneath(a->rootfd, parent, true);

	/* Already gone is fine: deleting is idempotent. */
	if (dirfd == -ENOENT)
		return 0;
	if (dirfd < 0)
		return tern_error_make(err, -dirfd, "open its directory");
	int ret = touch_dir(a, parent, dirfd, err);

	if (ret < 0)
		return ret;
	if (a->undo) {
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0;
		return displace(a, dirfd, name, path, err);
	}
	return remove_tree(a, dirfd, name, err);
}

/* ---- records ---- */

static int get_path(struct rs_reader *r, char **out, tern_error **err)
{
	*out = rs_get_str(r, PATH_MAX - 1);
	if (*out == NULL)
		return tern_error_make_quiet(err, EBADMSG, "malformed path");
	if (!rs_path_valid(*out, false))
		return tern_error_make_quiet(err, EBADMSG, "`%s`: path not allowed", *out);
	return 0;
}

static int record_paths(tern_rootfs_applier *a, uint8_t type, struct rs_reader *r, tern_error **err)
{
	cleanup_free char *path = NULL;
	cleanup_free char *target = NULL;
	int ret = get_path(r, &path, err);

	if (ret == 0 && type == RS_REC_LINK && get_path(r, &target, err) < 0)
		ret = tern_error_wrap(err, "`%s`: link target", path);
	if (ret == 0 && r->left != 0)
		ret = tern_error_make_quiet(err, EBADMSG, "`%s`: trailing bytes", path);
	if (ret < 0)
		return ret;
	ret = type == RS_REC_LINK ? apply_link(a, path, target, err) : apply_delete(a, path, err);
	return ret < 0 ? tern_error_wrap(err, "`%s`", path) : 0;
}

static int record_attrs(tern_rootfs_applier *a, uint8_t type, struct rs_reader *r, tern_error **err)
{
	struct rs_attrs at = {0};
	int ret = rs_get_attrs(r, &at, true, err);

	if (ret == 0 && r->left != 0)
		ret = tern_error_make_quiet(err, EBADMSG, "`%s`: trailing bytes", at.path);
	if (ret == 0) {
		ret = type == RS_REC_ENTRY   ? apply_entry(a, &at, err)
		      : type == RS_REC_PATCH ? apply_patch(a, &at, err)
					     : apply_meta(a, &at, err);
		if (ret < 0 && a->file.active) /* begin_file took at over */
			ret = tern_error_wrap(err, "`%s`", a->file.a.path);
		else if (ret < 0)
			ret = tern_error_wrap(err, "`%s`", at.path);
	}
	rs_attrs_clear(&at);
	return ret;
}

static int apply_record(tern_rootfs_applier *a, uint8_t type, struct rs_reader *r, tern_error **err)
{
	if (!a->in_round) {
		if (type != RS_REC_HEADER_T)
			return tern_error_make_quiet(err, EBADMSG, "no stream header");
		a->in_round = true;
		return rs_check_header(r, RS_STREAM_MAGIC, "rootfs sync stream", err);
	}
	if (a->file.active && type != RS_REC_DATA && type != RS_REC_COMMIT)
		return tern_error_make_quiet(err, EBADMSG, "`%s`: the file data ends early",
					     a->file.a.path);
	switch (type) {
	case RS_REC_ENTRY:
	case RS_REC_META:
	case RS_REC_PATCH:
		return record_attrs(a, type, r, err);
	case RS_REC_DATA:
		return apply_data(a, r, err);
	case RS_REC_COMMIT:
		return r->left ? tern_error_make_quiet(err, EBADMSG, "malformed commit")
			       : commit_file(a, err);
	case RS_REC_LINK:
	case RS_REC_DELETE:
		return record_paths(a, type, r, err);
	}
	return tern_error_make_quiet(err, EBADMSG, "unknown record type %u", type);
}

int tern_rootfs_applier_feed(tern_rootfs_applier *a, const void *buf, size_t len, tern_error **err)
{
	size_t off = 0;
	int ret = 0;

	if (a->failed)
		return tern_error_make_quiet(err, EIO, "rootfs sync: the stream already failed");
	rs_buf_put(&a->in, buf, len);
	while (a->in.len - off >= RS_REC_HEADER) {
		struct rs_reader h = {(unsigned char *)a->in.data + off, RS_REC_HEADER, false};
		uint8_t type = rs_get_u8(&h);
		uint32_t blen = rs_get_u32(&h);
		struct rs_reader body = {h.p, blen, false};

		if (blen > RS_REC_MAX_BODY) {
			ret = tern_error_make_quiet(err, EMSGSIZE, "a record of %u bytes", blen);
			break;
		}
		if (a->in.len - off - RS_REC_HEADER < blen)
			break;
		ret = apply_record(a, type, &body, err);
		if (ret < 0)
			break;
		off += RS_REC_HEADER + blen;
	}
	/* nothing consumed (an empty first chunk: no buffer yet) moves nothing */
	if (off > 0) {
		memmove(a->in.data, a->in.data + off, a->in.len - off);
		a->in.len -= off;
	}
	if (ret < 0) {
		a->failed = true;
		pending_drop(&a->file);
		return tern_error_wrap(err, "rootfs sync");
	}
	return 0;
}

struct finish_ctx {
	tern_rootfs_applier *a;
	tern_error **err;
	int ret;
};

static void finish_dir(void *data, const void *key, size_t klen, void *value)
{
	struct finish_ctx *c = data;
	const struct timespec *mt = value;
	struct timespec ts[2] = {{0, UTIME_OMIT}, *mt};
	cleanup_free char *path = tern_xmalloc0(klen + 1);
	cleanup_close int fd = -1;

	memcpy(path, key, klen);
	fd = rs_open_beneath(c->a->rootfd, path, true);
	/* Deleted or replaced by a non-directory later in the round. */
	if (fd == -ENOENT || fd == -ENOTDIR || c->ret < 0)
		return;
	if (fd < 0 || utimensat(fd, "", ts, AT_EMPTY_PATH) < 0)
		c->ret = tern_error_make(c->err, fd < 0 ? -fd : errno,
					 "rootfs sync: `%s`: set the mtime", path);
}

int tern_rootfs_applier_finish_round(tern_rootfs_applier *a, tern_error **err)
{
	struct finish_ctx c = {a, err, 0};

	if (a->failed)
		return tern_error_make_quiet(err, EIO, "rootfs sync: the stream already failed");
	if (a->file.active || a->in.len != 0) {
		a->failed = true;
		return tern_error_make_quiet(
		    err, EBADMSG, "rootfs sync: the round ends inside %s%s%s",
		    a->file.active ? "the file `" : "a record",
		    a->file.active ? a->file.a.path : "", a->file.active ? "`" : "");
	}
	rs_map_each(a->dirs, finish_dir, &c);
	rs_map_free(a->dirs, free);
	a->dirs = rs_map_new();
	a->in_round = false;
	return c.ret;
}
