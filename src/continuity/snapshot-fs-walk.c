/* The directory walk and the copies snapshot-fs.c's record and restore
 * share (declared in snapshot-fs-walk.h; the rules are at the top of
 * snapshot-fs.c).
 *
 * The lower of the two: it uses no other snapshot file (its stats type
 * is its own, snapshot-fs-stats.h); snapshot-fs.c uses it, never the
 * other way. */
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
/* ---- a growable byte buffer ---- */

static void buf_reserve(struct buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;

	if (b->len + n <= b->cap)
		return;
	while (cap < b->len + n)
		cap *= 2;
	b->data = realloc(b->data, cap);
	if (b->data == NULL)
		abort();
	b->cap = cap;
}

size_t sfs_buf_put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->len;

	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return at;
}

/* ---- identities and files.index ---- */

_Static_assert(sizeof(struct ident) == 48, "files.index record layout");

struct ident sfs_ident_of(const struct stat *st)
{
	return (struct ident){.ino = st->st_ino,
			      .size = (uint64_t)st->st_size,
			      .mtime_sec = st->st_mtim.tv_sec,
			      .ctime_sec = st->st_ctim.tv_sec,
			      .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
			      .ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
			      .mode = st->st_mode};
}

bool sfs_ident_matches(const struct ident *a, const struct stat *st)
{
	struct ident b = sfs_ident_of(st);

	return a->ino == b.ino && a->size == b.size && a->mtime_sec == b.mtime_sec &&
	       a->mtime_nsec == b.mtime_nsec && a->ctime_sec == b.ctime_sec &&
	       a->ctime_nsec == b.ctime_nsec && a->mode == b.mode;
}

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void index_free(struct index *ix)
{
	free(ix->data);
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}

/* The offset of the record after the one at `off`, or 0 if it is cut short. */
static size_t index_next(const struct index *ix, size_t off, struct ident *rec)
{
	if (ix->len - off < sizeof(*rec))
		return 0;
	memcpy(rec, ix->data + off, sizeof(*rec));
	if (ix->len - off - sizeof(*rec) < rec->path_len)
		return 0;
	return off + sizeof(*rec) + rec->path_len;
}

static bool index_build(struct index *ix)
{
	struct ident rec;
	size_t n = 0, nslots = 16;

	if (ix->len < INDEX_MAGIC_LEN || memcmp(ix->data, INDEX_MAGIC, INDEX_MAGIC_LEN) != 0)
		return false;
	for (size_t off = INDEX_MAGIC_LEN; off < ix->len; n++)
		if ((off = index_next(ix, off, &rec)) == 0)
			return false;
	while (nslots < 2 * n)
		nslots *= 2;
	ix->slots = tern_xmalloc0(nslots * sizeof(*ix->slots));
	ix->mask = nslots - 1;
	for (size_t off = INDEX_MAGIC_LEN, next; off < ix->len; off = next) {
		next = index_next(ix, off, &rec);
		size_t i = hash_bytes(ix->data + off + sizeof(rec), rec.path_len) & ix->mask;
		while (ix->slots[i])
			i = (i + 1) & ix->mask;
		ix->slots[i] = off + 1;
	}
	return true;
}

static int read_whole(int fd, char **out, size_t *len)
{
	struct stat st;
	size_t got = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	*out = tern_xmalloc0((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, *out + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	*len = got;
	return 0;
}

/* Load storefd's files.index; a missing one is empty, and so is one we
 * cannot parse (the index only spares copies: without it, all is copied). */
int sfs_index_load(int storefd, struct index *ix, tern_error **err)
{
	cleanup_close int fd = openat(storefd, INDEX_NAME, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : tern_error_make(err, errno, "open `%s`", INDEX_NAME);
	r = read_whole(fd, &ix->data, &ix->len);
	if (r < 0)
		return tern_error_make(err, -r, "read `%s`", INDEX_NAME);
	if (!index_build(ix)) {
		tern_warn("snapshot: `%s` is damaged; copying every file", INDEX_NAME);
		index_free(ix);
	}
	return 0;
}

bool sfs_index_find(const struct index *ix, const char *path, size_t len, struct ident *out)
{
	struct ident rec;

	if (ix->slots == NULL)
		return false;
	for (size_t i = hash_bytes(path, len) & ix->mask; ix->slots[i]; i = (i + 1) & ix->mask) {
		size_t off = ix->slots[i] - 1;
		memcpy(&rec, ix->data + off, sizeof(rec));
		if (rec.path_len == len && memcmp(ix->data + off + sizeof(rec), path, len) == 0) {
			*out = rec;
			return true;
		}
	}
	return false;
}

/* Append a record; returns its offset (for index_patch). */
size_t sfs_index_put(struct buf *out, const char *path, size_t len, const struct stat *st)
{
	struct ident rec = sfs_ident_of(st);
	size_t at;

	rec.path_len = (uint32_t)len;
	if (out->len == 0)
		sfs_buf_put(out, INDEX_MAGIC, INDEX_MAGIC_LEN);
	at = sfs_buf_put(out, &rec, sizeof(rec));
	sfs_buf_put(out, path, len);
	return at;
}

void sfs_index_patch(struct buf *out, size_t at, const struct ident *id)
{
	memcpy(out->data + at, id, offsetof(struct ident, path_len));
}

/* Write to a temporary name and rename: a reader sees the old index or
 * the new one. No fsync: after a crash the store is rebuilt anyway. */
int sfs_index_write(int storefd, struct buf *out, tern_error **err)
{
	cleanup_close int fd = -1;
	int r;

	if (out->len == 0)
		sfs_buf_put(out, INDEX_MAGIC, INDEX_MAGIC_LEN);
	fd = openat(storefd, INDEX_TMP_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "create `%s`", INDEX_TMP_NAME);
	r = tern_write_all(fd, out->data, out->len);
	if (r == 0 && close(steal_fd(&fd)) < 0)
		r = -errno;
	if (r == 0 && renameat(storefd, INDEX_TMP_NAME, storefd, INDEX_NAME) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(storefd, INDEX_TMP_NAME, 0);
		return tern_error_make(err, -r, "write `%s`", INDEX_NAME);
	}
	return 0;
}

/* ---- inode table: hard-link groups, and own_bytes's link counts ---- */

static size_t ino_slot(const struct itab *t, uint64_t ino)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h ^ (h >> 31)) & t->mask;
}

struct ient *sfs_itab_find(struct itab *t, uint64_t ino)
{
	if (t->n == 0)
		return NULL;
	for (size_t i = ino_slot(t, ino); t->slots[i]; i = (i + 1) & t->mask)
		if (t->v[t->slots[i] - 1].ino == ino)
			return &t->v[t->slots[i] - 1];
	return NULL;
}

static void itab_rehash(struct itab *t, size_t nslots)
{
	free(t->slots);
	t->slots = tern_xmalloc0(nslots * sizeof(*t->slots));
	t->mask = nslots - 1;
	for (size_t k = 0; k < t->n; k++) {
		size_t i = ino_slot(t, t->v[k].ino);
		while (t->slots[i])
			i = (i + 1) & t->mask;
		t->slots[i] = k + 1;
	}
}

/* The new entry is valid until the next itab_add. */
struct ient *sfs_itab_add(struct itab *t, uint64_t ino, const char *path)
{
	struct ient *e;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = realloc(t->v, t->cap * sizeof(*t->v));
		if (t->v == NULL)
			abort();
	}
	e = &t->v[t->n++];
	*e = (struct ient){
	    .ino = ino, .path = sfs_buf_put(&t->names, path, strlen(path) + 1), .rec = SIZE_MAX};
	if (2 * t->n > t->mask)
		itab_rehash(t, t->mask ? 2 * (t->mask + 1) : 128);
	else {
		size_t i = ino_slot(t, ino);
		while (t->slots[i])
			i = (i + 1) & t->mask;
		t->slots[i] = t->n;
	}
	return e;
}

void sfs_itab_free(struct itab *t)
{
	free(t->v);
	free(t->slots);
	free(t->names.data);
	memset(t, 0, sizeof(*t));
}

/* ---- directories ---- */

void sfs_dirbuf_free(struct dirbuf *b)
{
	free(b->data);
}

/* The next entry but . and ..; NULL at the end or on error (*error set). */
struct dirent64 *sfs_dir_next(int fd, struct dirbuf *b, int *error)
{
	for (;;) {
		struct dirent64 *d;
		if (b->pos >= b->len) {
			ssize_t n;
			if (b->data == NULL)
				b->data = tern_xmalloc0(DIRBUF_SIZE);
			n = getdents64(fd, b->data, DIRBUF_SIZE);
			if (n <= 0) {
				*error = n < 0 ? errno : 0;
				return NULL;
			}
			b->pos = 0;
			b->len = (size_t)n;
		}
		d = (struct dirent64 *)(b->data + b->pos);
		b->pos += d->d_reclen;
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			return d;
	}
}

/* The directory holding `path` (relative to root, walked one component at
 * a time without following symlinks), as an O_PATH fd; *base: the last
 * component. */
int sfs_open_parent(int root, const char *path, const char **base)
{
	char buf[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd = -1;

	*base = slash ? slash + 1 : path;
	if (slash == NULL)
		return openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if ((size_t)(slash - path) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, (size_t)(slash - path));
	buf[slash - path] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int next =
		    openat(fd >= 0 ? fd : root, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			int saved = errno;
			close(fd);
			errno = saved;
		}
		if (next < 0)
			return -1;
		fd = next;
	}
	return fd;
}

/* ---- the walk ---- */

void sfs_walk_init(struct walk *w, tern_error **err)
{
	w->err = err;
	w->root = -1;
}

void sfs_walk_free(struct walk *w, tern_snapfs_stats *stats)
{
	if (stats)
		*stats = w->st;
	index_free(&w->ix);
	sfs_itab_free(&w->links);
	free(w->out.data);
	free(w->patches.data);
	free(w->xa.data);
	free(w->xb.data);
	free(w->va.data);
	free(w->vb.data);
	free(w->chunk);
}

int sfs_path_push(struct walk *w, const char *name, size_t *saved)
{
	size_t n = strlen(name);

	*saved = w->len;
	if (w->len + n + 2 > sizeof(w->path))
		return tern_error_make(w->err, ENAMETOOLONG, "`/%s/%s`", w->path, name);
	if (w->len)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

void sfs_path_pop(struct walk *w, size_t saved)
{
	w->len = saved;
	w->path[saved] = '\0';
}

static struct timespec ts_of(const struct statx_timestamp *t)
{
	return (struct timespec){.tv_sec = t->tv_sec, .tv_nsec = t->tv_nsec};
}

/* lstat NAME in DIRFD (the fd itself for ""), and tell whether it is on
 * another mount than the rootfs: another st_dev, or, for a bind mount from
 * the rootfs's own file system, another mount id. */
int sfs_stat_entry(struct walk *w, int dirfd, const char *name, struct stat *st, bool *mounted)
{
	int flags = AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH);
	struct statx sx;

	if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
		return -1;
	*st = (struct stat){.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
			    .st_ino = sx.stx_ino,
			    .st_mode = sx.stx_mode,
			    .st_nlink = sx.stx_nlink,
			    .st_uid = sx.stx_uid,
			    .st_gid = sx.stx_gid,
			    .st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
			    .st_size = (off_t)sx.stx_size,
			    .st_blocks = (blkcnt_t)sx.stx_blocks,
			    .st_atim = ts_of(&sx.stx_atime),
			    .st_mtim = ts_of(&sx.stx_mtime),
			    .st_ctim = ts_of(&sx.stx_ctime)};
	if (!w->root_known) { /* the first call: the rootfs itself */
		w->root_known = true;
		w->dev = st->st_dev;
		w->mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0;
	}
	*mounted = st->st_dev != w->dev ||
		   (w->mnt_id && (sx.stx_mask & STATX_MNT_ID) && sx.stx_mnt_id != w->mnt_id);
	return 0;
}

void sfs_tmp_name(struct walk *w, char *name, size_t size)
{
	snprintf(name, size, ".tern-snap.%x.%x", (unsigned)getpid(), w->tmpseq++);
}

/* ---- xattrs ---- */

static void node_proc(const struct node *n, char *p, size_t size)
{
	snprintf(p, size, "/proc/self/fd/%d/%s", n->dirfd, n->name);
}

/* The name list (name == NULL) or one value into b; -errno. An entry or
 * a file system without xattrs has an empty list. */
static int xattr_read(const struct node *n, const char *name, struct buf *b)
{
	char p[64 + NAME_MAX];
	size_t size;

	if (n->fd < 0)
		node_proc(n, p, sizeof(p));
	b->len = 0;
	buf_reserve(b, XATTR_SCRATCH);
	for (size = b->cap;;) {
		ssize_t r;
		if (name)
			r = n->fd >= 0 ? fgetxattr(n->fd, name, b->data, size)
				       : lgetxattr(p, name, b->data, size);
		else
			r = n->fd >= 0 ? flistxattr(n->fd, b->data, size)
				       : llistxattr(p, b->data, size);
		if (r >= 0 && (size > 0 || r == 0)) {
			b->len = (size_t)r;
			return 0;
		}
		if (r >= 0) { /* the size we asked for: fetch again with room for it */
			buf_reserve(b, (size_t)r);
			size = b->cap;
			continue;
		}
		if (errno == EOPNOTSUPP && name == NULL)
			return 0;
		if (errno != ERANGE)
			return -errno;
		size = 0; /* grew meanwhile: ask for the size */
	}
}

static bool list_has(const struct buf *list, const char *name)
{
	for (size_t i = 0; i < list->len; i += strlen(list->data + i) + 1)
		if (strcmp(list->data + i, name) == 0)
			return true;
	return false;
}

/* EOPNOTSUPP: the target file system has no xattrs of that kind. An LSM
 * may refuse its own attributes (security.selinux under another policy). */
static bool xattr_error_ignored(const char *name, int e)
{
	if (e == EOPNOTSUPP)
		return true;
	return strncmp(name, "security.", 9) == 0 && (e == EPERM || e == EACCES || e == EINVAL);
}

static int xattr_set(struct walk *w, const struct node *n, const char *name, const struct buf *v)
{
	char p[64 + NAME_MAX];
	int r;

	if (n->fd >= 0)
		r = fsetxattr(n->fd, name, v->data, v->len, 0);
	else {
		node_proc(n, p, sizeof(p));
		r = lsetxattr(p, name, v->data, v->len, 0);
	}
	if (r < 0 && !xattr_error_ignored(name, errno))
		return tern_error_make(w->err, errno, "set xattr `%s` on `/%s`", name, w->path);
	return 0;
}

static int xattr_remove(struct walk *w, const struct node *n, const char *name)
{
	char p[64 + NAME_MAX];
	int r;

	if (n->fd >= 0)
		r = fremovexattr(n->fd, name);
	else {
		node_proc(n, p, sizeof(p));
		r = lremovexattr(p, name);
	}
	if (r < 0 && errno != ENODATA && !xattr_error_ignored(name, errno))
		return tern_error_make(w->err, errno, "remove xattr `%s` from `/%s`", name,
				       w->path);
	return 0;
}

/* Is value `name` of src (in w->va) also dst's? */
static int xattr_same(struct walk *w, const struct node *dst, const char *name)
{
	int r;

	if (!list_has(&w->xb, name))
		return 0;
	r = xattr_read(dst, name, &w->vb);
	if (r == -ENODATA)
		return 0;
	if (r < 0)
		return tern_error_make(w->err, -r, "read xattr `%s` of `/%s`", name, w->path);
	return w->va.len == w->vb.len && memcmp(w->va.data, w->vb.data, w->va.len) == 0;
}

/* Returns the number of changes (XA_CHECK: 1 if there would be any), or
 * -errno. */
int sfs_xattrs_sync(struct walk *w, const struct node *src, const struct node *dst,
		    enum xattr_mode mode)
{
	int r, changes = 0;

	if ((r = xattr_read(src, NULL, &w->xa)) < 0)
		return tern_error_make(w->err, -r, "list the xattrs of `/%s`", w->path);
	w->xb.len = 0;
	if (mode != XA_COPY && (r = xattr_read(dst, NULL, &w->xb)) < 0)
		return tern_error_make(w->err, -r, "list the xattrs of `/%s`", w->path);
	for (size_t i = 0; i < w->xa.len; i += strlen(w->xa.data + i) + 1) {
		const char *name = w->xa.data + i;
		r = xattr_read(src, name, &w->va);
		if (r == -ENODATA)
			continue;
		if (r < 0)
			return tern_error_make(w->err, -r, "read xattr `%s` of `/%s`", name,
					       w->path);
		if (mode != XA_COPY && (r = xattr_same(w, dst, name)) != 0) {
			if (r < 0)
				return r;
			continue;
		}
		if (mode == XA_CHECK)
			return 1;
		if ((r = xattr_set(w, dst, name, &w->va)) < 0)
			return r;
		changes++;
	}
	for (size_t i = 0; i < w->xb.len; i += strlen(w->xb.data + i) + 1) {
		const char *name = w->xb.data + i;
		if (list_has(&w->xa, name))
			continue;
		if (mode == XA_CHECK)
			return 1;
		if ((r = xattr_remove(w, dst, name)) < 0)
			return r;
		changes++;
	}
	return changes;
}

/* ---- data and metadata ---- */

static int pwrite_all(int fd, const char *p, size_t n, off_t off)
{
	while (n > 0) {
		ssize_t r = pwrite(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

/* Copy [off, end) of src to the same offsets of dst. */
static int copy_range(struct walk *w, int src, int dst, off_t off, off_t end)
{
	while (off < end) {
		size_t want = (size_t)(end - off);
		ssize_t n;
		if (!w->no_cfr) {
			off_t in = off, out = off;
			n = copy_file_range(src, &in, dst, &out, want, 0);
			/* across file systems, or not supported: plain I/O */
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP)) {
				w->no_cfr = true;
				continue;
			}
		} else {
			if (w->chunk == NULL)
				w->chunk = tern_xmalloc0(COPY_CHUNK);
			n = pread(src, w->chunk, want < COPY_CHUNK ? want : COPY_CHUNK, off);
			if (n > 0) {
				int r = pwrite_all(dst, w->chunk, (size_t)n, off);
				if (r < 0)
					return r;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* the file is shorter than it was */
		off += n;
		w->st.bytes_copied += (uint64_t)n;
	}
	return 0;
}

/* Copy `size` bytes of data, leaving holes where src has them. */
int sfs_copy_data(struct walk *w, int src, int dst, off_t size)
{
	off_t off = 0;

	while (off < size) {
		off_t data = lseek(src, off, SEEK_DATA), hole;
		int r;
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0)
			return -errno;
		if (data >= size)
			break;
		hole = lseek(src, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > size)
			hole = size;
		if ((r = copy_range(w, src, dst, data, hole)) < 0)
			return r;
		off = hole;
	}
	if (off < size && ftruncate(dst, size) < 0)
		return -errno;
	return 0;
}

/* Open a regular file to read it, and make sure it is the inode `st`
 * describes (a name can change between the stat and the open). */
int sfs_open_source(int dirfd, const char *name, const struct stat *st)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat now;
	int fd = openat(dirfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || now.st_ino != st->st_ino ||
	    now.st_dev != st->st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Give a new entry dst the owner, xattrs (from src), mode and times of st.
 * chown first: it drops setuid/setgid and file capabilities. */
int sfs_set_meta(struct walk *w, const struct node *dst, const struct node *src,
		 const struct stat *st, enum xattr_mode xmode)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	mode_t mode = st->st_mode & 07777;
	int r;

	if (dst->fd >= 0)
		r = fchown(dst->fd, st->st_uid, st->st_gid);
	else
		r = fchownat(dst->dirfd, dst->name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);
	if (r < 0)
		return tern_error_make(w->err, errno, "chown `/%s`", w->path);
	if ((r = sfs_xattrs_sync(w, src, dst, xmode)) < 0)
		return r;
	if (S_ISLNK(st->st_mode))
		r = 0;
	else if (dst->fd >= 0)
		r = fchmod(dst->fd, mode);
	else /* a node we just made, not a symlink: fchmodat does not follow */
		r = fchmodat(dst->dirfd, dst->name, mode, 0);
	if (r < 0)
		return tern_error_make(w->err, errno, "chmod `/%s`", w->path);
	if (dst->fd >= 0)
		r = futimens(dst->fd, ts);
	else
		r = utimensat(dst->dirfd, dst->name, ts, AT_SYMLINK_NOFOLLOW);
	if (r < 0)
		return tern_error_make(w->err, errno, "set the times of `/%s`", w->path);
	return 0;
}

int sfs_read_link(struct walk *w, int dirfd, const char *name, char *buf, const char *where)
{
	ssize_t n = readlinkat(dirfd, name, buf, PATH_MAX);

	if (n < 0)
		return tern_error_make(w->err, errno, "readlink `/%s`%s", w->path, where);
	if (n >= PATH_MAX)
		return tern_error_make(w->err, ENAMETOOLONG, "readlink `/%s`%s", w->path, where);
	buf[n] = '\0';
	return 0;
}
