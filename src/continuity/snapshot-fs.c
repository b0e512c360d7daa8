/* The rootfs side of snapshots: record a tree into a store, put it back.
 * The store's layout and the rules are in snapshot-fs.h; this file owns
 * them and nothing else (no CRIU, no container state).
 *
 * files.index, in host byte order (a store never leaves its host):
 *   "TSNAPIX1", then per regular file of the rootfs, in walk order, a
 *   48-byte struct ident (inode, size, mtime, ctime, path length) and
 *   the path relative to the rootfs ("bin/sh": no leading slash, no NUL).
 *   It is read whole and looked up by path through an open-addressing
 *   hash table over the record offsets.
 *
 * ctime granularity: without multigrain timestamps (kernels before 6.13)
 * ctime is as coarse as a jiffy, so a write in the tick of the recorded
 * ctime would keep the identity. The container is frozen from before the
 * record to after the CRIU dump, and not yet running between the restore
 * and CRIU's restore, both far longer than a tick, so no such write can
 * follow an identity we took.
 *
 * Walking: every directory is opened from its parent's fd with O_NOFOLLOW
 * and read with getdents64; entries are handled with *at(name) calls and
 * AT_SYMLINK_NOFOLLOW. Regular files are read only after fstat showed the
 * opened fd is the inode we stat'ed. The xattrs of entries we do not open
 * (symlinks, devices, fifos, sockets: opening could block or have side
 * effects) go through "/proc/self/fd/DIRFD/NAME" with the l*xattr calls:
 * the magic link lands on the directory the fd holds and NAME, one
 * component, is not followed. The only paths resolved in more than one
 * component are the first names of hard-link groups, walked component by
 * component with O_NOFOLLOW (open_parent).
 *
 * Owns the record and the restore of a rootfs and the files.index format.
 * Uses snapshot-fs-walk (the walk, the index, the copies) and no other
 * snapshot file; snapshot-store, snapshot-take and snapshot-rollback use
 * it. */
#include "snapshot-fs.h"
#include "snapshot-fs-walk.h"
#include "log.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- record ---- */

static int record_children(struct walk *w, int live, int tree, int prev);

static int record_copy(struct walk *w, int live, int tree, const char *name, const struct stat *st)
{
	cleanup_close int src = sfs_open_source(live, name, st);
	cleanup_close int dst = -1;
	int r;

	if (src < 0)
		return tern_error_make(w->err, -src, "open `/%s`", w->path);
	dst = openat(tree, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (dst < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	if ((r = sfs_copy_data(w, src, dst, st->st_size)) < 0)
		return tern_error_make(w->err, -r, "copy `/%s` into the snapshot", w->path);
	if ((r = sfs_set_meta(w, NODE_FD(dst), NODE_FD(src), st, XA_COPY)) < 0)
		return r;
	w->st.files_copied++;
	return 0;
}

/* A non-directory whose identity is the one prev's files.index holds for
 * its path is what prev's tree/ has there: link that instead of making a
 * new inode (which costs far more than a link). Returns 1 when linked. */
static int record_from_prev(struct walk *w, int tree, int prev, const char *name,
			    const struct stat *st)
{
	struct ident was;

	if (prev < 0 || !sfs_index_find(&w->ix, w->path, w->len, &was) ||
	    !sfs_ident_matches(&was, st))
		return 0;
	if (linkat(prev, name, tree, name, 0) == 0) {
		if (S_ISREG(st->st_mode))
			w->st.files_linked++;
		return 1;
	}
	/* gone, too many links, or elsewhere: make a copy */
	if (errno == ENOENT || errno == EMLINK || errno == EXDEV || errno == EPERM)
		return 0;
	return tern_error_make(w->err, errno, "link `/%s` from the previous snapshot", w->path);
}

static int record_symlink(struct walk *w, int live, int tree, const char *name,
			  const struct stat *st)
{
	char target[PATH_MAX + 1];
	int r;

	if ((r = sfs_read_link(w, live, name, target, "")) < 0)
		return r;
	if (symlinkat(target, tree, name) < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	return sfs_set_meta(w, NODE_AT(tree, name), NODE_AT(live, name), st, XA_COPY);
}

static int record_node(struct walk *w, int live, int tree, const char *name, const struct stat *st)
{
	if (mknodat(tree, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	return sfs_set_meta(w, NODE_AT(tree, name), NODE_AT(live, name), st, XA_COPY);
}

/* A mount point is recorded as an empty directory with
 * what it shows; the metadata goes on after the children, which change
 * the mtime and could inherit a default ACL. */
static int record_dir(struct walk *w, int live, int tree, int prev, const char *name,
		      const struct stat *st, bool mounted)
{
	cleanup_close int lfd = -1, tfd = -1, pfd = -1;
	int r;

	if (mkdirat(tree, name, 0700) < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	if ((lfd = openat(live, name, DIR_FLAGS)) < 0)
		return tern_error_make(w->err, errno, "open `/%s`", w->path);
	if ((tfd = openat(tree, name, DIR_FLAGS)) < 0)
		return tern_error_make(w->err, errno, "open `/%s` in the snapshot", w->path);
	if (!mounted) {
		if (prev >= 0)
			pfd = openat(prev, name, DIR_FLAGS);
		if ((r = record_children(w, lfd, tfd, pfd)) < 0)
			return r;
	}
	return sfs_set_meta(w, NODE_FD(tfd), NODE_FD(lfd), st, XA_COPY);
}

/* A further name of an inode already recorded becomes a link in tree/.
 * Returns 1 when linked, 0 to record the entry as a first name. */
static int record_hardlink(struct walk *w, int tree, const char *name, const struct stat *st)
{
	struct ient *e = sfs_itab_find(&w->links, st->st_ino);
	cleanup_close int parent = -1;
	const char *first, *base;

	if (e == NULL) {
		sfs_itab_add(&w->links, st->st_ino, w->path);
		return 0;
	}
	first = w->links.names.data + e->path;
	parent = sfs_open_parent(w->root, first, &base);
	if (parent < 0 || linkat(parent, base, tree, name, 0) < 0) {
		if (errno == EMLINK)
			return 0; /* a copy keeps the data right, if not the link */
		return tern_error_make(w->err, errno, "link `/%s` to `/%s` in the snapshot",
				       w->path, first);
	}
	sfs_index_put(&w->out, w->path, w->len, st);
	return 1;
}

static int record_entry(struct walk *w, int live, int tree, int prev, const char *name)
{
	struct stat st;
	bool mounted;
	int r;

	if (sfs_stat_entry(w, live, name, &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	if (!S_ISDIR(st.st_mode) && mounted)
		return 0; /* a file mounted over: not the rootfs's, and left alone on restore */
	w->st.entries++;
	if (S_ISDIR(st.st_mode))
		return record_dir(w, live, tree, prev, name, &st, mounted);
	if (st.st_nlink > 1 && (r = record_hardlink(w, tree, name, &st)) != 0)
		return r < 0 ? r : 0;
	sfs_index_put(&w->out, w->path, w->len, &st);
	if ((r = record_from_prev(w, tree, prev, name, &st)) != 0)
		return r < 0 ? r : 0;
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		return record_copy(w, live, tree, name, &st);
	case S_IFLNK:
		return record_symlink(w, live, tree, name, &st);
	default:
		return record_node(w, live, tree, name, &st);
	}
}

static int record_children(struct walk *w, int live, int tree, int prev)
{
	cleanup_dirbuf struct dirbuf b = {0};
	struct dirent64 *d;
	int error = 0;

	while ((d = sfs_dir_next(live, &b, &error))) {
		size_t saved;
		int r = sfs_path_push(w, d->d_name, &saved);
		if (r == 0)
			r = record_entry(w, live, tree, prev, d->d_name);
		sfs_path_pop(w, saved);
		if (r < 0)
			return r;
	}
	if (error)
		return tern_error_make(w->err, error, "read the directory `/%s`", w->path);
	return 0;
}

static int record_root(struct walk *w, int rootfd, int prevfd, int storefd)
{
	cleanup_close int lfd = openat(rootfd, ".", DIR_FLAGS);
	cleanup_close int tfd = -1, pfd = -1;
	struct stat st;
	bool mounted;
	int r;

	if (lfd < 0 || sfs_stat_entry(w, lfd, "", &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "open the rootfs");
	if (prevfd >= 0) {
		if ((r = sfs_index_load(prevfd, &w->ix, w->err)) < 0)
			return tern_error_wrap(w->err, "the previous snapshot");
		pfd = openat(prevfd, TREE_NAME, DIR_FLAGS);
	}
	if (mkdirat(storefd, TREE_NAME, 0700) < 0 ||
	    (tfd = openat(storefd, TREE_NAME, DIR_FLAGS)) < 0)
		return tern_error_make(w->err, errno, "create `%s` in the snapshot store",
				       TREE_NAME);
	w->root = tfd;
	if ((r = record_children(w, lfd, tfd, pfd)) < 0)
		return r;
	return sfs_set_meta(w, NODE_FD(tfd), NODE_FD(lfd), &st, XA_COPY);
}

int tern_snapfs_record(int rootfd, int prevfd, int storefd, tern_snapfs_stats *stats,
		       tern_error **err)
{
	struct walk *w = tern_xmalloc0(sizeof(*w));
	int r;

	sfs_walk_init(w, err);
	r = record_root(w, rootfd, prevfd, storefd);
	if (r == 0)
		r = sfs_index_write(storefd, &w->out, err);
	sfs_walk_free(w, stats);
	free(w);
	return r;
}

/* ---- restore: removing what the snapshot does not have ---- */

static int remove_live(struct walk *w, int dirfd, const char *name, mode_t type);

static int remove_child(struct walk *w, int fd, const struct dirent64 *d)
{
	struct stat st;

	if (d->d_type != DT_UNKNOWN)
		return remove_live(w, fd, d->d_name, DTTOIF(d->d_type));
	if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	return remove_live(w, fd, d->d_name, st.st_mode & S_IFMT);
}

/* Remove an entry of the live tree, a directory with all it holds. A mount
 * point, and so the directories holding one, stay: returns 1 then. */
static int remove_live(struct walk *w, int dirfd, const char *name, mode_t type)
{
	cleanup_dirbuf struct dirbuf b = {0};
	cleanup_close int fd = -1;
	struct dirent64 *d;
	struct stat st;
	bool mounted;
	int error = 0, kept = 0;

	if (type != S_IFDIR) {
		if (unlinkat(dirfd, name, 0) < 0) {
			error = errno;
			/* a file mounted over, from the rootfs's own file system */
			if (error == EBUSY && sfs_stat_entry(w, dirfd, name, &st, &mounted) == 0 &&
			    mounted) {
				tern_warn("rollback: `/%s` is a mount point: left in place",
					  w->path);
				return 1;
			}
			return tern_error_make(w->err, error, "remove `/%s`", w->path);
		}
		w->st.entries_removed++;
		return 0;
	}
	if ((fd = openat(dirfd, name, DIR_FLAGS)) < 0 ||
	    sfs_stat_entry(w, fd, "", &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "open `/%s`", w->path);
	if (mounted) {
		tern_warn("rollback: `/%s` is a mount point: left in place", w->path);
		return 1;
	}
	while ((d = sfs_dir_next(fd, &b, &error))) {
		size_t saved;
		int r = sfs_path_push(w, d->d_name, &saved);
		if (r == 0)
			r = remove_child(w, fd, d);
		sfs_path_pop(w, saved);
		if (r < 0)
			return r;
		kept |= r;
	}
	if (error)
		return tern_error_make(w->err, error, "read the directory `/%s`", w->path);
	if (kept)
		return 1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return tern_error_make(w->err, errno, "remove `/%s`", w->path);
	w->st.entries_removed++;
	return 0;
}

/* The entries of a tree/ directory, sorted, each name preceded by its
 * d_type byte. */
struct names {
	struct buf data;
	char **v;
	size_t n;
};

static void names_free(struct names *nm)
{
	free(nm->data.data);
	free(nm->v);
}
#define cleanup_names __attribute__((cleanup(names_free)))

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_names(int fd, struct names *nm)
{
	cleanup_dirbuf struct dirbuf b = {0};
	struct dirent64 *d;
	int error = 0;
	size_t i = 0;

	while ((d = sfs_dir_next(fd, &b, &error))) {
		sfs_buf_put(&nm->data, &d->d_type, 1);
		sfs_buf_put(&nm->data, d->d_name, strlen(d->d_name) + 1);
		nm->n++;
	}
	if (error)
		return -error;
	nm->v = tern_xmalloc0((nm->n + 1) * sizeof(*nm->v));
	for (size_t off = 0; off < nm->data.len; off += strlen(nm->data.data + off + 1) + 2)
		nm->v[i++] = nm->data.data + off + 1;
	qsort(nm->v, nm->n, sizeof(*nm->v), cmp_names);
	return 0;
}

/* A live entry the snapshot has as the same type stays for the second
 * pass; a mount point stays whatever it is; the rest goes. */
static int remove_if_extra(struct walk *w, int live, int tree, const struct names *nm,
			   const struct dirent64 *d)
{
	const char *key = d->d_name;
	char **hit = bsearch(&key, nm->v, nm->n, sizeof(*nm->v), cmp_names);
	unsigned char ttype = hit ? (unsigned char)(*hit)[-1] : DT_UNKNOWN;
	struct stat ls, ts;
	bool mounted;

	if (hit && ttype != DT_UNKNOWN && ttype == d->d_type)
		return 0;
	if (sfs_stat_entry(w, live, d->d_name, &ls, &mounted) < 0)
		return errno == ENOENT ? 0 : tern_error_make(w->err, errno, "stat `/%s`", w->path);
	if (mounted)
		return 0;
	if (hit && fstatat(tree, d->d_name, &ts, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s` in the snapshot", w->path);
	if (hit && (ts.st_mode & S_IFMT) == (ls.st_mode & S_IFMT))
		return 0;
	return remove_live(w, live, d->d_name, ls.st_mode & S_IFMT);
}

static int remove_extras(struct walk *w, int live, int tree, const struct names *nm)
{
	cleanup_dirbuf struct dirbuf b = {0};
	struct dirent64 *d;
	int error = 0;

	while ((d = sfs_dir_next(live, &b, &error))) {
		size_t saved;
		int r = sfs_path_push(w, d->d_name, &saved);
		if (r == 0)
			r = remove_if_extra(w, live, tree, nm, d);
		sfs_path_pop(w, saved);
		if (r < 0)
			return r;
	}
	if (error)
		return tern_error_make(w->err, error, "read the directory `/%s`", w->path);
	return 0;
}

/* ---- restore: putting back what differs ---- */

static int restore_children(struct walk *w, int live, int tree);

/* Put the entry made at tmp in place of name; on failure, remove it. */
static int place(struct walk *w, int live, const char *tmp, const char *name, int r)
{
	if (r == 0 && renameat(live, tmp, live, name) < 0)
		r = tern_error_make(w->err, errno, "rename over `/%s`", w->path);
	if (r < 0)
		unlinkat(live, tmp, 0);
	else
		w->st.entries++;
	return r;
}

static int create_tmp_file(struct walk *w, int live, char *tmp, size_t size)
{
	for (int tries = 0; tries < 100; tries++) {
		int fd;
		sfs_tmp_name(w, tmp, size);
		fd = openat(live, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

static int fill_tmp_file(struct walk *w, int tree, const char *name, int dst, const struct stat *ts)
{
	cleanup_close int src = sfs_open_source(tree, name, ts);
	int r;

	if (src < 0)
		return tern_error_make(w->err, -src, "open `/%s` in the snapshot", w->path);
	if ((r = sfs_copy_data(w, src, dst, ts->st_size)) < 0)
		return tern_error_make(w->err, -r, "copy `/%s` back from the snapshot", w->path);
	return sfs_set_meta(w, NODE_FD(dst), NODE_FD(src), ts, XA_SYNC);
}

/* Copy the file to a temporary name and rename it over the live one.
 * *rec: its new files.index record. */
static int restore_file(struct walk *w, int live, int tree, const char *name, const struct stat *ts,
			size_t *rec)
{
	cleanup_close int dst = -1;
	struct stat now;
	char tmp[64];
	int r;

	if ((dst = create_tmp_file(w, live, tmp, sizeof(tmp))) < 0)
		return tern_error_make(w->err, -dst, "create a temporary file for `/%s`", w->path);
	r = place(w, live, tmp, name, fill_tmp_file(w, tree, name, dst, ts));
	if (r < 0)
		return r;
	/* the rename changed the ctime: take the identity after it */
	if (fstat(dst, &now) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	*rec = sfs_index_put(&w->out, w->path, w->len, &now);
	w->st.files_copied++;
	return 0;
}

static bool same_node(const struct stat *a, const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
	       a->st_rdev == b->st_rdev && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Do a live symlink, device, fifo or socket and tree/'s agree? 1 yes. */
static int special_equal(struct walk *w, int live, int tree, const char *name,
			 const struct stat *ts, const struct stat *ls, const char *want)
{
	char have[PATH_MAX + 1];
	int r;

	if (ls == NULL || !same_node(ls, ts))
		return 0;
	if (S_ISLNK(ts->st_mode)) {
		if ((r = sfs_read_link(w, live, name, have, "")) < 0)
			return r;
		if (strcmp(want, have) != 0)
			return 0;
	}
	r = sfs_xattrs_sync(w, NODE_AT(tree, name), NODE_AT(live, name), XA_CHECK);
	return r < 0 ? r : !r;
}

/* Symlinks, devices, fifos, sockets: equal, or made again under a
 * temporary name and renamed over the live one. *rec: as restore_file. */
static int restore_special(struct walk *w, int live, int tree, const char *name,
			   const struct stat *ts, const struct stat *ls, size_t *rec)
{
	char want[PATH_MAX + 1], tmp[64];
	bool lnk = S_ISLNK(ts->st_mode);
	struct stat now;
	int r = 0;

	if (lnk && (r = sfs_read_link(w, tree, name, want, " in the snapshot")) < 0)
		return r;
	if ((r = special_equal(w, live, tree, name, ts, ls, want)) != 0) {
		if (r > 0)
			*rec = sfs_index_put(&w->out, w->path, w->len, ls);
		return r < 0 ? r : 0;
	}
	for (int tries = 0; tries < 100; tries++) {
		sfs_tmp_name(w, tmp, sizeof(tmp));
		r = lnk ? symlinkat(want, live, tmp)
			: mknodat(live, tmp, (ts->st_mode & S_IFMT) | 0600, ts->st_rdev);
		if (r == 0 || errno != EEXIST)
			break;
	}
	if (r < 0)
		return tern_error_make(w->err, errno, "create a temporary entry for `/%s`",
				       w->path);
	r = sfs_set_meta(w, NODE_AT(live, tmp), NODE_AT(tree, name), ts, XA_SYNC);
	if ((r = place(w, live, tmp, name, r)) < 0)
		return r;
	if (fstatat(live, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	*rec = sfs_index_put(&w->out, w->path, w->len, &now);
	return 0;
}

/* After the children (they change the mtime): owner, xattrs, mode, mtime. */
static int fix_dir(struct walk *w, int lfd, int tfd, const struct stat *ts)
{
	struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, ts->st_mtim};
	struct stat now;
	int r, changes;

	if (fstat(lfd, &now) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	changes = now.st_uid != ts->st_uid || now.st_gid != ts->st_gid;
	if (changes && fchown(lfd, ts->st_uid, ts->st_gid) < 0)
		return tern_error_make(w->err, errno, "chown `/%s`", w->path);
	if ((r = sfs_xattrs_sync(w, NODE_FD(tfd), NODE_FD(lfd), XA_SYNC)) < 0)
		return r;
	changes += r;
	if ((changes || (now.st_mode & 07777) != (ts->st_mode & 07777)) &&
	    fchmod(lfd, ts->st_mode & 07777) < 0)
		return tern_error_make(w->err, errno, "chmod `/%s`", w->path);
	if ((now.st_mode & 07777) != (ts->st_mode & 07777))
		changes++;
	if (now.st_mtim.tv_sec != ts->st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != ts->st_mtim.tv_nsec) {
		if (futimens(lfd, times) < 0)
			return tern_error_make(w->err, errno, "set the times of `/%s`", w->path);
		changes++;
	}
	if (changes)
		w->st.entries++;
	return 0;
}

static int restore_dir(struct walk *w, int live, int tree, const char *name, const struct stat *ts,
		       const struct stat *ls)
{
	cleanup_close int lfd = -1, tfd = -1;
	int r;

	if (ls == NULL && mkdirat(live, name, 0700) < 0)
		return tern_error_make(w->err, errno, "create `/%s`", w->path);
	if ((lfd = openat(live, name, DIR_FLAGS)) < 0)
		return tern_error_make(w->err, errno, "open `/%s`", w->path);
	if ((tfd = openat(tree, name, DIR_FLAGS)) < 0)
		return tern_error_make(w->err, errno, "open `/%s` in the snapshot", w->path);
	if ((r = restore_children(w, lfd, tfd)) < 0)
		return r;
	return fix_dir(w, lfd, tfd, ts);
}

/* The live inode now at the first name of a hard-link group. */
static int first_name_stat(struct walk *w, const struct ient *e, struct stat *st, int *parent,
			   const char **base)
{
	const char *first = w->links.names.data + e->path;

	*parent = sfs_open_parent(w->root, first, base);
	if (*parent < 0 || fstatat(*parent, *base, st, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", first);
	return 0;
}

static int link_tmp(struct walk *w, int parent, const char *base, int live, const char *name)
{
	char tmp[64];
	int r = -1;

	for (int tries = 0; tries < 100; tries++) {
		sfs_tmp_name(w, tmp, sizeof(tmp));
		if ((r = linkat(parent, base, live, tmp, 0)) == 0 || errno != EEXIST)
			break;
	}
	if (r < 0)
		return tern_error_make(w->err, errno, "link `/%s`", w->path);
	return place(w, live, tmp, name, 0);
}

/* A further name of an inode of tree/ (nlink > 1 there) links to the live
 * inode of its first name. *ei: the group's entry. Returns 1 when done, 0
 * when this is the first name. Most such inodes are files tree/ shares
 * with other snapshots: groups of one name. */
static int restore_hardlink(struct walk *w, int live, const char *name, const struct stat *ts,
			    const struct stat *ls, size_t *ei)
{
	struct ient *e = sfs_itab_find(&w->links, ts->st_ino);
	cleanup_close int parent = -1;
	const char *base;
	struct stat fst;
	int r;

	if (e == NULL) {
		sfs_itab_add(&w->links, ts->st_ino, w->path);
		*ei = w->links.n - 1;
		return 0;
	}
	*ei = (size_t)(e - w->links.v);
	if ((r = first_name_stat(w, e, &fst, &parent, &base)) < 0)
		return r;
	if (ls == NULL || ls->st_ino != fst.st_ino) {
		if ((r = link_tmp(w, parent, base, live, name)) < 0)
			return r;
	}
	struct patch p = {*ei, sfs_index_put(&w->out, w->path, w->len, &fst)};
	sfs_buf_put(&w->patches, &p, sizeof(p));
	return 1;
}

/* Is the live entry at w->path the one files.index knows? */
static bool unchanged(struct walk *w, const struct stat *ls)
{
	struct ident was;

	return sfs_index_find(&w->ix, w->path, w->len, &was) && sfs_ident_matches(&was, ls);
}

static int restore_entry(struct walk *w, int live, int tree, const char *name)
{
	struct stat ts, ls;
	const struct stat *lsp = &ls;
	size_t ei = SIZE_MAX, rec = SIZE_MAX;
	bool mounted = false;
	int r = 0;

	if (sfs_stat_entry(w, live, name, &ls, &mounted) < 0) {
		if (errno != ENOENT)
			return tern_error_make(w->err, errno, "stat `/%s`", w->path);
		lsp = NULL;
	}
	if (lsp && mounted)
		return 0; /* a mount point: left as it is */
	/* The common case, without a look at tree/: an unchanged identity
	 * means the entry is what the snapshot has. With one link only: the
	 * other names of a group must be seen to keep the group together. */
	if (lsp && !S_ISDIR(ls.st_mode) && ls.st_nlink == 1 && unchanged(w, &ls)) {
		sfs_index_put(&w->out, w->path, w->len, &ls);
		return 0;
	}
	if (fstatat(tree, name, &ts, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s` in the snapshot", w->path);
	if (lsp && (ls.st_mode & S_IFMT) != (ts.st_mode & S_IFMT))
		return tern_error_make_quiet(
		    w->err, EBUSY, "`/%s` holds a mount point and cannot be replaced", w->path);
	if (!S_ISDIR(ts.st_mode) && ts.st_nlink > 1 &&
	    (r = restore_hardlink(w, live, name, &ts, lsp, &ei)) != 0)
		return r < 0 ? r : 0;
	if (S_ISDIR(ts.st_mode))
		return restore_dir(w, live, tree, name, &ts, lsp);
	/* an unchanged identity: the entry is what the snapshot has */
	if (lsp && unchanged(w, lsp))
		rec = sfs_index_put(&w->out, w->path, w->len, lsp);
	else if (S_ISREG(ts.st_mode))
		r = restore_file(w, live, tree, name, &ts, &rec);
	else
		r = restore_special(w, live, tree, name, &ts, lsp, &rec);
	if (r == 0 && ei != SIZE_MAX)
		w->links.v[ei].rec = rec;
	return r;
}

/* Two passes: remove what tree/ lacks (a container's rename moves a name
 * out of the way before it is put back), then put back tree/'s entries. */
static int restore_children(struct walk *w, int live, int tree)
{
	cleanup_names struct names nm = {0};
	int r;

	if ((r = read_names(tree, &nm)) < 0)
		return tern_error_make(w->err, -r, "read the directory `/%s` in the snapshot",
				       w->path);
	if ((r = remove_extras(w, live, tree, &nm)) < 0)
		return r;
	for (size_t i = 0; i < nm.n; i++) {
		size_t saved;
		r = sfs_path_push(w, nm.v[i], &saved);
		if (r == 0)
			r = restore_entry(w, live, tree, nm.v[i]);
		sfs_path_pop(w, saved);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A link made to a hard-link group changed its inode's ctime: give all
 * the group's records the identity it has in the end. */
static int refresh_links(struct walk *w)
{
	const struct patch *p = (const struct patch *)w->patches.data;

	for (size_t i = 0; i < w->patches.len / sizeof(*p); i++) {
		struct ient *e = &w->links.v[p[i].ient];
		if (!e->resolved) {
			cleanup_close int parent = -1;
			const char *base;
			struct stat st;
			int r = first_name_stat(w, e, &st, &parent, &base);
			if (r < 0)
				return r;
			e->id = sfs_ident_of(&st);
			e->resolved = true;
			if (e->rec != SIZE_MAX)
				sfs_index_patch(&w->out, e->rec, &e->id);
		}
		sfs_index_patch(&w->out, p[i].rec, &e->id);
	}
	return 0;
}

static int restore_root(struct walk *w, int rootfd, int storefd)
{
	cleanup_close int lfd = openat(rootfd, ".", DIR_FLAGS);
	cleanup_close int tfd = -1;
	struct stat ls, ts;
	bool mounted;
	int r;

	if (lfd < 0 || sfs_stat_entry(w, lfd, "", &ls, &mounted) < 0)
		return tern_error_make(w->err, errno, "open the rootfs");
	w->root = lfd;
	if ((tfd = openat(storefd, TREE_NAME, DIR_FLAGS)) < 0 || fstat(tfd, &ts) < 0)
		return tern_error_make(w->err, errno, "open `%s` in the snapshot store", TREE_NAME);
	if ((r = sfs_index_load(storefd, &w->ix, w->err)) < 0)
		return r;
	if ((r = restore_children(w, lfd, tfd)) < 0)
		return r;
	if ((r = fix_dir(w, lfd, tfd, &ts)) < 0)
		return r;
	return refresh_links(w);
}

int tern_snapfs_restore(int rootfd, int storefd, tern_snapfs_stats *stats, tern_error **err)
{
	struct walk *w = tern_xmalloc0(sizeof(*w));
	int r;

	sfs_walk_init(w, err);
	r = restore_root(w, rootfd, storefd);
	if (r == 0)
		r = sfs_index_write(storefd, &w->out, err);
	sfs_walk_free(w, stats);
	free(w);
	return r;
}

/* ---- own bytes ---- */

/* Directories count whole; a file counts when all its links are in this
 * tree (the other snapshots share the rest). */
static uint64_t own_walk(int fd, struct itab *t)
{
	cleanup_dirbuf struct dirbuf b = {0};
	struct dirent64 *d;
	uint64_t total = 0;
	int error = 0;

	while ((d = sfs_dir_next(fd, &b, &error))) {
		struct stat st;
		if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(fd, d->d_name, DIR_FLAGS);
			total += (uint64_t)st.st_blocks * 512;
			if (sub >= 0) {
				total += own_walk(sub, t);
				close(sub);
			}
		} else if (st.st_nlink == 1) {
			total += (uint64_t)st.st_blocks * 512;
		} else {
			struct ient *e = sfs_itab_find(t, st.st_ino);
			if (e == NULL) {
				e = sfs_itab_add(t, st.st_ino, "");
				e->nlink = st.st_nlink;
				e->bytes = (uint64_t)st.st_blocks * 512;
			}
			e->names++;
		}
	}
	return total;
}

uint64_t tern_snapfs_own_bytes(int storefd)
{
	cleanup_close int fd = openat(storefd, TREE_NAME, DIR_FLAGS);
	struct itab t = {0};
	struct stat st;
	uint64_t total = 0;

	if (fstatat(storefd, INDEX_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0)
		total += (uint64_t)st.st_blocks * 512;
	if (fd < 0 || fstat(fd, &st) < 0)
		return total;
	total += (uint64_t)st.st_blocks * 512 + own_walk(fd, &t);
	for (size_t i = 0; i < t.n; i++)
		if (t.v[i].names >= t.v[i].nlink)
			total += t.v[i].bytes;
	sfs_itab_free(&t);
	return total;
}
