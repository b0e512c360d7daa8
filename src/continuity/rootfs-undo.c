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
 *   M  attributes: the metadata the entry had
 *   S  path, size: the regular file had this size before a patch in place
 *      changed it (logged the first time the migration patches the inode)
 *   B  path, offset, length, where: the bytes the file had there, before
 *      a patch overwrote or cut them off, are in UNDO/blocks at `where`
 *      (written there before the record; once per block of the file's
 *      first size: a block written again has its original kept already,
 *      and what lies past that size goes with the S record) */
#include "rootfs-undo.h"
#include "rootfs-delta.h"
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

#define UNDO_LOG    "log"
#define UNDO_BLOCKS "blocks"
#define UNDO_MAGIC "tern-rootfs-undo"

enum { UNDO_ASIDE = 'A', UNDO_NEW = 'N', UNDO_META = 'M', UNDO_SIZE = 'S', UNDO_BYTES = 'B' };

struct rs_undo {
	int dirfd;
	int logfd;
	uint64_t next;
	rs_map *seen; /* path -> (void *)1: its metadata is logged */
	rs_map *patched; /* (dev, ino) -> struct patch_state */
	int blobfd;	 /* UNDO_BLOCKS, once a patch needs it */
	uint64_t blob_len;
};

/* A file patched in place: its size before the first patch, and which of
 * its blocks (below that size) have their original bytes kept. */
struct patch_state {
	uint64_t orig;
	unsigned char *saved; /* a bit per block */
};

struct inode_key {
	dev_t dev;
	ino_t ino;
};

static void patch_state_free(void *p)
{
	struct patch_state *ps = p;
	if (ps)
		free(ps->saved);
	free(ps);
}

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
	u->patched = rs_map_new();
	u->blobfd = -1;
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
	tern_closep(&u->blobfd);
	rs_map_free(u->seen, NULL);
	rs_map_free(u->patched, patch_state_free);
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

/* ---- patches in place ---- */

static struct patch_state *patch_get(rs_undo *u, const struct stat *st)
{
	struct inode_key k = {st->st_dev, st->st_ino};
	return rs_map_get(u->patched, &k, sizeof(k));
}

int rs_undo_patch_begin(rs_undo *u, int fd, const char *path, const struct stat *st,
			uint64_t new_size, tern_error **err)
{
	struct inode_key k = {st->st_dev, st->st_ino};
	struct patch_state *ps = patch_get(u, st);

	if (ps == NULL) {
		struct rs_buf b = {0};
		size_t start = rs_buf_begin_record(&b, UNDO_SIZE);
		int ret;

		rs_buf_str(&b, path, strlen(path));
		rs_buf_u64(&b, (uint64_t)st->st_size);
		rs_buf_end_record(&b, start);
		ret = log_record(u, &b, err);
		rs_buf_free(&b);
		if (ret < 0)
			return ret;
		ps = tern_xmalloc0(sizeof(*ps));
		ps->orig = (uint64_t)st->st_size;
		ps->saved = tern_xmalloc0(rs_blocks_count(ps->orig) / 8 + 1);
		rs_map_put(u->patched, &k, sizeof(k), ps);
	}
	if (new_size < (uint64_t)st->st_size)
		return rs_undo_patch_save(u, fd, path, st, new_size,
					  (uint64_t)st->st_size - new_size, err);
	return 0;
}

/* Keep [off, off + len) of the file open as `fd` in UNDO_BLOCKS, logged. */
static int keep_bytes(rs_undo *u, int fd, const char *path, uint64_t off, size_t len,
		      tern_error **err)
{
	cleanup_free char *buf = tern_xmalloc0(len ? len : 1);
	struct rs_buf b = {0};
	size_t got = 0;
	int ret;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tern_error_make(err, errno, "rootfs undo: read `%s`", path);
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (u->blobfd < 0) {
		u->blobfd = openat(u->dirfd, UNDO_BLOCKS, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (u->blobfd < 0)
			return tern_error_make(err, errno, "rootfs undo: create `%s`", UNDO_BLOCKS);
	}
	for (size_t done = 0; done < got;) {
		ssize_t n = pwrite(u->blobfd, buf + done, got - done, (off_t)(u->blob_len + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return tern_error_make(err, n < 0 ? errno : EIO,
					       "rootfs undo: keep the old bytes of `%s`", path);
		done += (size_t)n;
	}
	size_t start = rs_buf_begin_record(&b, UNDO_BYTES);
	rs_buf_str(&b, path, strlen(path));
	rs_buf_u64(&b, off);
	rs_buf_u64(&b, got);
	rs_buf_u64(&b, u->blob_len);
	rs_buf_end_record(&b, start);
	ret = log_record(u, &b, err);
	rs_buf_free(&b);
	if (ret == 0)
		u->blob_len += got;
	return ret;
}

int rs_undo_patch_save(rs_undo *u, int fd, const char *path, const struct stat *st, uint64_t off,
		       uint64_t len, tern_error **err)
{
	struct patch_state *ps = patch_get(u, st);
	uint64_t end = off + len;

	if (ps == NULL)
		return tern_error_make_quiet(err, EINVAL, "rootfs undo: `%s` is not being patched",
					     path);
	if (end > ps->orig)
		end = ps->orig;
	for (uint64_t blk = off / RS_BLOCK; blk * RS_BLOCK < end; blk++) {
		uint64_t bs = blk * RS_BLOCK;
		uint64_t be = bs + RS_BLOCK < ps->orig ? bs + RS_BLOCK : ps->orig;
		int ret;

		if (ps->saved[blk / 8] & (1u << (blk % 8)))
			continue;
		ret = keep_bytes(u, fd, path, bs, (size_t)(be - bs), err);
		if (ret < 0)
			return ret;
		ps->saved[blk / 8] |= (unsigned char)(1u << (blk % 8));
	}
	return 0;
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

/* S and B: put the size, or the bytes, back into the file at `path`. */
static int undo_patch(int rootfd, int undo_dirfd, uint8_t type, const char *path, uint64_t size,
		      uint64_t off, uint64_t len, uint64_t where, tern_error **err)
{
	cleanup_close int fd = rs_open_beneath(rootfd, path, false);
	cleanup_close int wfd = -1, bfd = -1;
	cleanup_free char *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, fd < 0 ? -fd : errno, "`%s`: open", path);
	if (!S_ISREG(st.st_mode))
		return 0;
	wfd = rs_reopen_write(fd);
	if (wfd < 0)
		return tern_error_make(err, -wfd, "`%s`: open for writing", path);
	if (type == UNDO_SIZE) {
		if (ftruncate(wfd, (off_t)size) < 0)
			return tern_error_make(err, errno, "`%s`: truncate back to %llu bytes",
					       path, (unsigned long long)size);
		return 0;
	}
	if (len > RS_BLOCK)
		return tern_error_make_quiet(err, EBADMSG, "rootfs undo: a malformed record");
	bfd = openat(undo_dirfd, UNDO_BLOCKS, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return tern_error_make(err, errno, "`%s`: the kept bytes", path);
	buf = tern_xmalloc0(len ? (size_t)len : 1);
	n = pread(bfd, buf, (size_t)len, (off_t)where);
	if (n != (ssize_t)len)
		return tern_error_make(err, n < 0 ? errno : EIO, "`%s`: read the kept bytes", path);
	n = pwrite(wfd, buf, (size_t)len, (off_t)off);
	if (n != (ssize_t)len)
		return tern_error_make(err, n < 0 ? errno : EIO, "`%s`: put the old bytes back",
				       path);
	return 0;
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
	if (type == UNDO_SIZE || type == UNDO_BYTES) {
		uint64_t a = rs_get_u64(r), len = 0, where = 0;
		if (type == UNDO_BYTES) {
			len = rs_get_u64(r);
			where = rs_get_u64(r);
		}
		if (r->bad || path == NULL || !rs_path_valid(path, false))
			return tern_error_make_quiet(err, EBADMSG,
						     "rootfs undo: a malformed record");
		return undo_patch(rootfd, undo_dirfd, type, path, a, a, len, where, err);
	}
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
		    (version != RS_VERSION && version != 1))
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
	/* every record undone: the kept bytes are of no use any more */
	if (first == 0 && unlinkat(undo_dirfd, UNDO_BLOCKS, 0) < 0 && errno != ENOENT)
		first = tern_error_make(err, errno, "rootfs undo: remove `%s`", UNDO_BLOCKS);
	return first < 0 ? tern_error_wrap(err, "rootfs undo") : 0;
}
