/* Undoing the rounds of a rootfs sync on the target (rootfs-undo.h).
 *
 * A migration that fails must leave the target's bundle as it found it,
 * also when the rounds were already applied. So, with an undo directory,
 * the applier never destroys anything: an entry that a round replaces or
 * deletes is renamed into the undo directory (one rename: its inode, and
 * so its owner, mode, xattrs, times, contents and hard links, stay as
 * they were), a name the round creates is logged as new, and before the
 * metadata of an existing entry changes (a directory's mtime included)
 * the old metadata is logged. Undoing walks the log newest first: new
 * names are removed, renamed entries go back, old metadata is set again;
 * a directory's metadata is logged before the first change in it, so it
 * is put back after its children.
 *
 * The log is written ahead of each change, one write(2) per record, so a
 * receiver killed with SIGKILL leaves a log that the next receiver can
 * replay (a record whose change never happened undoes to nothing). It is
 * not fsync'd: it guards against a dead process, not against a power
 * loss. The records use the framing of the stream (rootfs-entry.h):
 *
 *   H  magic, version, the pid of the applier (its temporary names are
 *      .tern-sync.PID.N: the replay removes those a killed applier left)
 *   A  path, number: the entry was renamed to UNDO/a<number>
 *   N  path: the entry did not exist
 *   M  attributes: the metadata the entry had */
#include "rootfs-undo.h"
#include "rootfs-entry.h"
#include "rootfs-sync.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define UNDO_LOG   "log"
#define UNDO_MAGIC "tern-rootfs-undo"

enum { UNDO_ASIDE = 'A', UNDO_NEW = 'N', UNDO_META = 'M' };

struct rs_undo {
	int dirfd;
	int logfd;
	uint64_t next;
	rs_map *seen; /* path -> (void *)1: its metadata is logged */
};

static int log_record(rs_undo *u, struct rs_buf *b, tern_error **err)
{
	ssize_t n = write(u->logfd, b->data, b->len);

	if (n != (ssize_t)b->len)
		return tern_error_make(err, n < 0 ? errno : EIO, "rootfs undo: write the log");
	return 0;
}

int rs_undo_new(int undo_dirfd, int rootfd, rs_undo **out, tern_error **err)
{
	struct stat us, rs;
	struct rs_buf b = {0};
	rs_undo *u;
	int ret;

	if (fstat(undo_dirfd, &us) < 0 || fstat(rootfd, &rs) < 0)
		return tern_error_make(err, errno, "rootfs undo: stat");
	/* entries are put aside by rename */
	if (us.st_dev != rs.st_dev)
		return tern_error_make_quiet(err, EXDEV,
					     "rootfs undo: the undo directory is not on the "
					     "rootfs's file system");
	u = tern_xmalloc0(sizeof(*u));
	u->dirfd = fcntl(undo_dirfd, F_DUPFD_CLOEXEC, 3);
	u->seen = rs_map_new();
	u->logfd =
	    openat(undo_dirfd, UNDO_LOG, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (u->dirfd < 0 || u->logfd < 0) {
		ret = tern_error_make(err, errno, "rootfs undo: create the log");
		rs_undo_free(u);
		return ret;
	}
	size_t start = rs_buf_begin_record(&b, RS_REC_HEADER_T);
	rs_buf_str(&b, UNDO_MAGIC, strlen(UNDO_MAGIC));
	rs_buf_u32(&b, RS_VERSION);
	rs_buf_u32(&b, (uint32_t)getpid());
	rs_buf_end_record(&b, start);
	ret = log_record(u, &b, err);
	rs_buf_free(&b);
	if (ret < 0) {
		rs_undo_free(u);
		return ret;
	}
	*out = u;
	return 0;
}

void rs_undo_free(rs_undo *u)
{
	if (u == NULL)
		return;
	tern_closep(&u->logfd);
	tern_closep(&u->dirfd);
	rs_map_free(u->seen, NULL);
	free(u);
}

int rs_undo_displace(rs_undo *u, int dirfd, const char *name, const char *path, tern_error **err)
{
	struct rs_buf b = {0};
	struct stat st;
	char aside[32];
	bool exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	int ret;

	if (!exists && errno != ENOENT)
		return tern_error_make(err, errno, "stat `%s`", path);
	size_t start = rs_buf_begin_record(&b, exists ? UNDO_ASIDE : UNDO_NEW);
	rs_buf_str(&b, path, strlen(path));
	if (exists)
		rs_buf_u64(&b, u->next);
	rs_buf_end_record(&b, start);
	ret = log_record(u, &b, err);
	rs_buf_free(&b);
	if (ret < 0 || !exists)
		return ret;
	snprintf(aside, sizeof(aside), "a%llu", (unsigned long long)u->next++);
	if (renameat(dirfd, name, u->dirfd, aside) < 0)
		return tern_error_make(err, errno, "put `%s` aside for the undo", path);
	return 0;
}

int rs_undo_meta(rs_undo *u, int fd, const char *path, tern_error **err)
{
	struct rs_attrs a = {0};
	struct rs_buf b = {0};
	struct stat st;
	int ret;

	if (rs_map_get(u->seen, path, strlen(path)) != NULL)
		return 0;
	ret = rs_read_attrs(fd, path, &a, &st, err);
	if (ret < 0)
		return ret;
	size_t start = rs_buf_begin_record(&b, UNDO_META);
	rs_buf_attrs(&b, &a);
	rs_buf_end_record(&b, start);
	ret = log_record(u, &b, err);
	rs_buf_free(&b);
	rs_attrs_clear(&a);
	if (ret == 0)
		rs_map_put(u->seen, path, strlen(path), (void *)1);
	return ret;
}

/* ---- setting metadata (the replay's, and the applier's) ---- */

static bool has_xattr(const struct rs_attrs *a, const char *name)
{
	for (size_t i = 0; i < a->nxattrs; i++)
		if (strcmp(a->xattrs[i].name, name) == 0)
			return true;
	return false;
}

/* Make the xattrs of the inode at `procpath` exactly those of `a`. */
static int sync_xattrs(const char *procpath, const struct rs_attrs *a, tern_error **err)
{
	cleanup_free char *names = NULL;
	ssize_t n = listxattr(procpath, NULL, 0);

	if (n < 0 && errno != ENOTSUP)
		return tern_error_make(err, errno, "list xattrs");
	if (n > 0) {
		names = tern_xmalloc0((size_t)n + 1);
		n = listxattr(procpath, names, (size_t)n);
		if (n < 0)
			return tern_error_make(err, errno, "list xattrs");
	}
	for (char *p = names; n > 0 && p < names + n; p += strlen(p) + 1) {
		if (*p && !rs_xattr_skipped(p) && !has_xattr(a, p) &&
		    removexattr(procpath, p) < 0 && errno != ENODATA)
			return tern_error_make(err, errno, "remove xattr `%s`", p);
	}
	for (size_t i = 0; i < a->nxattrs; i++) {
		const struct rs_xattr *x = &a->xattrs[i];
		if (rs_xattr_skipped(x->name))
			continue;
		if (setxattr(procpath, x->name, x->value, x->len, 0) < 0)
			return tern_error_make(err, errno, "set xattr `%s`", x->name);
	}
	return 0;
}

/* Owner, mode, xattrs and (unless a directory) mtime of the inode open as
 * `fd` (O_PATH or not). In this order: chown clears set-id bits and
 * security.capability, so mode and xattrs come after it, and setting them
 * does not move mtime, which comes last. */
int rs_set_meta(int fd, const struct rs_attrs *a, bool mtime, tern_error **err)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {a->mtime_sec, a->mtime_nsec}};
	char procpath[64];
	int ret;

	snprintf(procpath, sizeof(procpath), "/proc/self/fd/%d", fd);
	if (fchownat(fd, "", a->uid, a->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(err, errno, "chown to %u:%u", a->uid, a->gid);
	/* Symlinks have no mode of their own on Linux. */
	if (!S_ISLNK(a->mode) && chmod(procpath, a->mode & 07777) < 0)
		return tern_error_make(err, errno, "chmod %04o", a->mode & 07777);
	ret = sync_xattrs(procpath, a, err);
	if (ret < 0)
		return ret;
	if (mtime && utimensat(fd, "", ts, AT_EMPTY_PATH) < 0)
		return tern_error_make(err, errno, "set the mtime");
	return 0;
}

/* ---- the replay ---- */

/* Remove `name` in `dirfd` and everything below it, never following a
 * symlink. */
static int remove_all(int dirfd, const char *name)
{
	cleanup_strv char **names = NULL;
	cleanup_close int fd = -1;
	struct stat st;
	size_t n = 0;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int ret = rs_list_dir(fd, &names, &n);
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = remove_all(fd, names[i]);
	if (ret == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		ret = -errno;
	return ret;
}

/* A killed applier's temporary files in `dirfd`. */
static void remove_tmps(int dirfd, uint32_t pid)
{
	cleanup_strv char **names = NULL;
	char prefix[64];
	size_t n = 0;
	int len = snprintf(prefix, sizeof(prefix), ".tern-sync.%u.", pid);

	if (rs_list_dir(dirfd, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (strncmp(names[i], prefix, (size_t)len) == 0)
			unlinkat(dirfd, names[i], 0);
}

static int undo_name(int rootfd, int undo_dirfd, uint32_t pid, uint8_t type, const char *path,
		     uint64_t num, tern_error **err)
{
	const char *name;
	cleanup_free char *parent = rs_path_parent(path, &name);
	cleanup_close int dirfd = rs_open_beneath(rootfd, parent, true);
	char aside[32];
	struct stat st;
	int ret;

	snprintf(aside, sizeof(aside), "a%llu", (unsigned long long)num);
	if (dirfd < 0) {
		/* its directory went with a newer entry that was undone:
		 * nothing of ours left in it */
		if (dirfd == -ENOENT && type == UNDO_NEW)
			return 0;
		return tern_error_make(err, -dirfd, "`%s`: open its directory", path);
	}
	remove_tmps(dirfd, pid);
	/* the record is written before the rename: no entry aside, no
	 * change */
	if (type == UNDO_ASIDE && fstatat(undo_dirfd, aside, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	ret = remove_all(dirfd, name);
	if (ret < 0)
		return tern_error_make(err, -ret, "`%s`: remove what the migration put there",
				       path);
	if (type == UNDO_ASIDE && renameat(undo_dirfd, aside, dirfd, name) < 0)
		return tern_error_make(err, errno, "`%s`: put the original back", path);
	return 0;
}

static int undo_meta(int rootfd, const struct rs_attrs *a, tern_error **err)
{
	cleanup_close int fd = rs_open_beneath(rootfd, a->path, false);
	struct stat st;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, fd < 0 ? -fd : errno, "`%s`: open", a->path);
	if ((st.st_mode & S_IFMT) != (a->mode & S_IFMT))
		return 0;
	return rs_set_meta(fd, a, true, err) < 0 ? tern_error_wrap(err, "`%s`", a->path) : 0;
}

static int undo_one(int rootfd, int undo_dirfd, uint32_t pid, uint8_t type, struct rs_reader *r,
		    tern_error **err)
{
	struct rs_attrs a = {0};
	cleanup_free char *path = NULL;
	uint64_t num = 0;
	int ret;

	if (type == UNDO_META) {
		ret = rs_get_attrs(r, &a, true, err);
		if (ret == 0)
			ret = undo_meta(rootfd, &a, err);
		rs_attrs_clear(&a);
		return ret;
	}
	path = rs_get_str(r, PATH_MAX - 1);
	if (type == UNDO_ASIDE)
		num = rs_get_u64(r);
	if (r->bad || path == NULL || !rs_path_valid(path, false) ||
	    (type != UNDO_ASIDE && type != UNDO_NEW))
		return tern_error_make_quiet(err, EBADMSG, "rootfs undo: a malformed record");
	return undo_name(rootfd, undo_dirfd, pid, type, path, num, err);
}

int tern_rootfs_undo(int rootfd, int undo_dirfd, tern_error **err)
{
	cleanup_free char *data = NULL;
	cleanup_free size_t *offs = NULL;
	size_t len = 0, n = 0, cap = 0, off = 0;
	uint32_t pid = 0;
	tern_error *e = NULL;
	int ret, first = 0;

	cleanup_close int fd = openat(undo_dirfd, UNDO_LOG, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 && errno == ENOENT)
		return 0;
	ret = fd < 0 ? -errno : tern_read_fd_all(fd, &data, &len, 256u << 20);
	if (ret < 0)
		return tern_error_make(err, -ret, "rootfs undo: read the log");
	/* complete records only: a killed writer may have cut the last */
	while (len - off >= RS_REC_HEADER) {
		struct rs_reader h = {(unsigned char *)data + off, RS_REC_HEADER, false};
		rs_get_u8(&h);
		uint32_t blen = rs_get_u32(&h);
		if (len - off - RS_REC_HEADER < blen)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			size_t *more = realloc(offs, cap * sizeof(*offs));
			if (more == NULL)
				abort();
			offs = more;
		}
		offs[n++] = off;
		off += RS_REC_HEADER + blen;
	}
	if (n == 0 || data[offs[0]] != RS_REC_HEADER_T)
		return tern_error_make_quiet(err, EBADMSG, "rootfs undo: the log has no header");
	{
		struct rs_reader r = {(unsigned char *)data + RS_REC_HEADER,
				      offs[0] + (n > 1 ? offs[1] : off) - RS_REC_HEADER, false};
		cleanup_free char *magic = rs_get_str(&r, 64);
		uint32_t version = rs_get_u32(&r);
		pid = rs_get_u32(&r);
		if (r.bad || magic == NULL || strcmp(magic, UNDO_MAGIC) != 0 ||
		    version != RS_VERSION)
			return tern_error_make_quiet(err, EBADMSG,
						     "rootfs undo: not an undo log of this "
						     "version");
	}
	/* newest first; on an error, go on putting back what can be */
	for (size_t i = n; i-- > 1;) {
		size_t end = i + 1 < n ? offs[i + 1] : off;
		struct rs_reader r = {(unsigned char *)data + offs[i] + RS_REC_HEADER,
				      end - offs[i] - RS_REC_HEADER, false};
		ret = undo_one(rootfd, undo_dirfd, pid, (uint8_t)data[offs[i]], &r, &e);
		/* done with: an undo killed half way resumes here (a record
		 * undone twice could remove what an older one put back) */
		if (ftruncate(fd, (off_t)offs[i]) < 0 && ret == 0)
			ret = tern_error_make(&e, errno, "rootfs undo: truncate the log");
		if (ret < 0 && first == 0) {
			first = ret;
			*err = e;
			e = NULL;
		} else if (ret < 0) {
			tern_error_free(e);
			e = NULL;
		}
	}
	return first < 0 ? tern_error_wrap(err, "rootfs undo") : 0;
}
