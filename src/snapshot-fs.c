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
 * component with O_NOFOLLOW (open_parent). */
#include "snapshot-fs.h"
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

#define TREE_NAME	"tree"
#define INDEX_NAME	"files.index"
#define INDEX_TMP_NAME	"files.index.tmp"
#define INDEX_MAGIC	"TSNAPIX1"
#define INDEX_MAGIC_LEN 8
#define DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define DIRBUF_SIZE	32768
#define COPY_CHUNK	(256 * 1024)
#define XATTR_SCRATCH	4096

/* ---- a growable byte buffer ---- */

struct buf {
	char *data;
	size_t len, cap;
};

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

static size_t buf_put(struct buf *b, const void *p, size_t n)
{
	size_t at = b->len;

	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return at;
}

/* ---- identities and files.index ---- */

/* What tells a changed entry from an unchanged one; in files.index, the
 * head of a record, followed by path_len bytes of path. */
struct ident {
	uint64_t ino, size;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint32_t mode;
	uint32_t path_len; /* files.index only; not part of the identity */
};
_Static_assert(sizeof(struct ident) == 48, "files.index record layout");

static struct ident ident_of(const struct stat *st)
{
	return (struct ident){.ino = st->st_ino,
			      .size = (uint64_t)st->st_size,
			      .mtime_sec = st->st_mtim.tv_sec,
			      .ctime_sec = st->st_ctim.tv_sec,
			      .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
			      .ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
			      .mode = st->st_mode};
}

static bool ident_matches(const struct ident *a, const struct stat *st)
{
	struct ident b = ident_of(st);

	return a->ino == b.ino && a->size == b.size && a->mtime_sec == b.mtime_sec &&
	       a->mtime_nsec == b.mtime_nsec && a->ctime_sec == b.ctime_sec &&
	       a->ctime_nsec == b.ctime_nsec && a->mode == b.mode;
}

/* A loaded files.index: slots hold a record's offset + 1, 0 when free. */
struct index {
	char *data;
	size_t len;
	size_t *slots;
	size_t mask;
};

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
static int index_load(int storefd, struct index *ix, tern_error **err)
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

static bool index_find(const struct index *ix, const char *path, size_t len, struct ident *out)
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
static size_t index_put(struct buf *out, const char *path, size_t len, const struct stat *st)
{
	struct ident rec = ident_of(st);
	size_t at;

	rec.path_len = (uint32_t)len;
	if (out->len == 0)
		buf_put(out, INDEX_MAGIC, INDEX_MAGIC_LEN);
	at = buf_put(out, &rec, sizeof(rec));
	buf_put(out, path, len);
	return at;
}

static void index_patch(struct buf *out, size_t at, const struct ident *id)
{
	memcpy(out->data + at, id, offsetof(struct ident, path_len));
}

/* Write to a temporary name and rename: a reader sees the old index or
 * the new one. No fsync: after a crash the store is rebuilt anyway. */
static int index_write(int storefd, struct buf *out, tern_error **err)
{
	cleanup_close int fd = -1;
	int r;

	if (out->len == 0)
		buf_put(out, INDEX_MAGIC, INDEX_MAGIC_LEN);
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

struct ient {
	uint64_t ino;
	size_t path; /* offset of the first name in itab.names */
	size_t rec;  /* restore: that name's files.index record, or SIZE_MAX */
	uint64_t names, bytes;
	nlink_t nlink;
	bool resolved; /* restore: id holds the live inode's identity now */
	struct ident id;
};

struct itab {
	struct ient *v;
	size_t n, cap;
	size_t *slots; /* index + 1, 0 when free */
	size_t mask;
	struct buf names;
};

static size_t ino_slot(const struct itab *t, uint64_t ino)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h ^ (h >> 31)) & t->mask;
}

static struct ient *itab_find(struct itab *t, uint64_t ino)
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
static struct ient *itab_add(struct itab *t, uint64_t ino, const char *path)
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
	    .ino = ino, .path = buf_put(&t->names, path, strlen(path) + 1), .rec = SIZE_MAX};
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

static void itab_free(struct itab *t)
{
	free(t->v);
	free(t->slots);
	free(t->names.data);
	memset(t, 0, sizeof(*t));
}

/* ---- directories ---- */

struct dirbuf {
	char *data;
	size_t pos, len;
};

static void dirbuf_free(struct dirbuf *b)
{
	free(b->data);
}
#define cleanup_dirbuf __attribute__((cleanup(dirbuf_free)))

/* The next entry but . and ..; NULL at the end or on error (*error set). */
static struct dirent64 *dir_next(int fd, struct dirbuf *b, int *error)
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
static int open_parent(int root, const char *path, const char **base)
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

struct walk {
	tern_error **err;
	tern_snapfs_stats st;
	dev_t dev;	 /* the rootfs's file system: other devices are mounts */
	uint64_t mnt_id; /* and its mount (0: unknown): bind mounts share st_dev */
	bool root_known; /* dev and mnt_id are set */
	int root;	 /* record: the new tree/; restore: the live rootfs */
	struct index ix; /* record: prev's files.index; restore: the store's */
	struct buf out;	 /* the files.index being written */
	struct itab links;
	struct buf patches;	   /* restore: struct patch, records to refresh */
	struct buf xa, xb, va, vb; /* xattr names and values */
	char *chunk;		   /* read/write copies */
	bool no_cfr;		   /* copy_file_range does not work here */
	unsigned tmpseq;
	size_t len;
	char path[PATH_MAX]; /* the current entry, relative to the root */
};

struct patch {
	size_t ient, rec;
};

static void walk_init(struct walk *w, tern_error **err)
{
	w->err = err;
	w->root = -1;
}

static void walk_free(struct walk *w, tern_snapfs_stats *stats)
{
	if (stats)
		*stats = w->st;
	index_free(&w->ix);
	itab_free(&w->links);
	free(w->out.data);
	free(w->patches.data);
	free(w->xa.data);
	free(w->xb.data);
	free(w->va.data);
	free(w->vb.data);
	free(w->chunk);
}

static int path_push(struct walk *w, const char *name, size_t *saved)
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

static void path_pop(struct walk *w, size_t saved)
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
static int stat_entry(struct walk *w, int dirfd, const char *name, struct stat *st, bool *mounted)
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

static void tmp_name(struct walk *w, char *name, size_t size)
{
	snprintf(name, size, ".tern-snap.%x.%x", (unsigned)getpid(), w->tmpseq++);
}

/* ---- xattrs ---- */

/* An entry: an open fd, or NAME in DIRFD (then through /proc, see top). */
struct node {
	int fd;
	int dirfd;
	const char *name;
};

#define NODE_FD(f)	 (&(struct node){.fd = (f), .dirfd = -1})
#define NODE_AT(dfd, nm) (&(struct node){.fd = -1, .dirfd = (dfd), .name = (nm)})

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

enum xattr_mode {
	XA_COPY,  /* dst is new: set what src has */
	XA_SYNC,  /* also remove what src lacks, skip equal values */
	XA_CHECK, /* change nothing: 1 when they differ */
};

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
static int xattrs_sync(struct walk *w, const struct node *src, const struct node *dst,
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
static int copy_data(struct walk *w, int src, int dst, off_t size)
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
static int open_source(int dirfd, const char *name, const struct stat *st)
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
static int set_meta(struct walk *w, const struct node *dst, const struct node *src,
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
	if ((r = xattrs_sync(w, src, dst, xmode)) < 0)
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

static int read_link(struct walk *w, int dirfd, const char *name, char *buf, const char *where)
{
	ssize_t n = readlinkat(dirfd, name, buf, PATH_MAX);

	if (n < 0)
		return tern_error_make(w->err, errno, "readlink `/%s`%s", w->path, where);
	if (n >= PATH_MAX)
		return tern_error_make(w->err, ENAMETOOLONG, "readlink `/%s`%s", w->path, where);
	buf[n] = '\0';
	return 0;
}

/* ---- record ---- */

static int record_children(struct walk *w, int live, int tree, int prev);

static int record_copy(struct walk *w, int live, int tree, const char *name, const struct stat *st)
{
	cleanup_close int src = open_source(live, name, st);
	cleanup_close int dst = -1;
	int r;

	if (src < 0)
		return tern_error_make(w->err, -src, "open `/%s`", w->path);
	dst = openat(tree, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (dst < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	if ((r = copy_data(w, src, dst, st->st_size)) < 0)
		return tern_error_make(w->err, -r, "copy `/%s` into the snapshot", w->path);
	if ((r = set_meta(w, NODE_FD(dst), NODE_FD(src), st, XA_COPY)) < 0)
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

	if (prev < 0 || !index_find(&w->ix, w->path, w->len, &was) || !ident_matches(&was, st))
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

	if ((r = read_link(w, live, name, target, "")) < 0)
		return r;
	if (symlinkat(target, tree, name) < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	return set_meta(w, NODE_AT(tree, name), NODE_AT(live, name), st, XA_COPY);
}

static int record_node(struct walk *w, int live, int tree, const char *name, const struct stat *st)
{
	if (mknodat(tree, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
		return tern_error_make(w->err, errno, "create `/%s` in the snapshot", w->path);
	return set_meta(w, NODE_AT(tree, name), NODE_AT(live, name), st, XA_COPY);
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
	return set_meta(w, NODE_FD(tfd), NODE_FD(lfd), st, XA_COPY);
}

/* A further name of an inode already recorded becomes a link in tree/.
 * Returns 1 when linked, 0 to record the entry as a first name. */
static int record_hardlink(struct walk *w, int tree, const char *name, const struct stat *st)
{
	struct ient *e = itab_find(&w->links, st->st_ino);
	cleanup_close int parent = -1;
	const char *first, *base;

	if (e == NULL) {
		itab_add(&w->links, st->st_ino, w->path);
		return 0;
	}
	first = w->links.names.data + e->path;
	parent = open_parent(w->root, first, &base);
	if (parent < 0 || linkat(parent, base, tree, name, 0) < 0) {
		if (errno == EMLINK)
			return 0; /* a copy keeps the data right, if not the link */
		return tern_error_make(w->err, errno, "link `/%s` to `/%s` in the snapshot",
				       w->path, first);
	}
	index_put(&w->out, w->path, w->len, st);
	return 1;
}

static int record_entry(struct walk *w, int live, int tree, int prev, const char *name)
{
	struct stat st;
	bool mounted;
	int r;

	if (stat_entry(w, live, name, &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	if (!S_ISDIR(st.st_mode) && mounted)
		return 0; /* a file mounted over: not the rootfs's, and left alone on restore */
	w->st.entries++;
	if (S_ISDIR(st.st_mode))
		return record_dir(w, live, tree, prev, name, &st, mounted);
	if (st.st_nlink > 1 && (r = record_hardlink(w, tree, name, &st)) != 0)
		return r < 0 ? r : 0;
	index_put(&w->out, w->path, w->len, &st);
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

	while ((d = dir_next(live, &b, &error))) {
		size_t saved;
		int r = path_push(w, d->d_name, &saved);
		if (r == 0)
			r = record_entry(w, live, tree, prev, d->d_name);
		path_pop(w, saved);
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

	if (lfd < 0 || stat_entry(w, lfd, "", &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "open the rootfs");
	if (prevfd >= 0) {
		if ((r = index_load(prevfd, &w->ix, w->err)) < 0)
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
	return set_meta(w, NODE_FD(tfd), NODE_FD(lfd), &st, XA_COPY);
}

int tern_snapfs_record(int rootfd, int prevfd, int storefd, tern_snapfs_stats *stats,
		       tern_error **err)
{
	struct walk *w = tern_xmalloc0(sizeof(*w));
	int r;

	walk_init(w, err);
	r = record_root(w, rootfd, prevfd, storefd);
	if (r == 0)
		r = index_write(storefd, &w->out, err);
	walk_free(w, stats);
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
			if (error == EBUSY && stat_entry(w, dirfd, name, &st, &mounted) == 0 &&
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
	if ((fd = openat(dirfd, name, DIR_FLAGS)) < 0 || stat_entry(w, fd, "", &st, &mounted) < 0)
		return tern_error_make(w->err, errno, "open `/%s`", w->path);
	if (mounted) {
		tern_warn("rollback: `/%s` is a mount point: left in place", w->path);
		return 1;
	}
	while ((d = dir_next(fd, &b, &error))) {
		size_t saved;
		int r = path_push(w, d->d_name, &saved);
		if (r == 0)
			r = remove_child(w, fd, d);
		path_pop(w, saved);
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

	while ((d = dir_next(fd, &b, &error))) {
		buf_put(&nm->data, &d->d_type, 1);
		buf_put(&nm->data, d->d_name, strlen(d->d_name) + 1);
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
	if (stat_entry(w, live, d->d_name, &ls, &mounted) < 0)
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

	while ((d = dir_next(live, &b, &error))) {
		size_t saved;
		int r = path_push(w, d->d_name, &saved);
		if (r == 0)
			r = remove_if_extra(w, live, tree, nm, d);
		path_pop(w, saved);
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
		tmp_name(w, tmp, size);
		fd = openat(live, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

static int fill_tmp_file(struct walk *w, int tree, const char *name, int dst, const struct stat *ts)
{
	cleanup_close int src = open_source(tree, name, ts);
	int r;

	if (src < 0)
		return tern_error_make(w->err, -src, "open `/%s` in the snapshot", w->path);
	if ((r = copy_data(w, src, dst, ts->st_size)) < 0)
		return tern_error_make(w->err, -r, "copy `/%s` back from the snapshot", w->path);
	return set_meta(w, NODE_FD(dst), NODE_FD(src), ts, XA_SYNC);
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
	*rec = index_put(&w->out, w->path, w->len, &now);
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
		if ((r = read_link(w, live, name, have, "")) < 0)
			return r;
		if (strcmp(want, have) != 0)
			return 0;
	}
	r = xattrs_sync(w, NODE_AT(tree, name), NODE_AT(live, name), XA_CHECK);
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

	if (lnk && (r = read_link(w, tree, name, want, " in the snapshot")) < 0)
		return r;
	if ((r = special_equal(w, live, tree, name, ts, ls, want)) != 0) {
		if (r > 0)
			*rec = index_put(&w->out, w->path, w->len, ls);
		return r < 0 ? r : 0;
	}
	for (int tries = 0; tries < 100; tries++) {
		tmp_name(w, tmp, sizeof(tmp));
		r = lnk ? symlinkat(want, live, tmp)
			: mknodat(live, tmp, (ts->st_mode & S_IFMT) | 0600, ts->st_rdev);
		if (r == 0 || errno != EEXIST)
			break;
	}
	if (r < 0)
		return tern_error_make(w->err, errno, "create a temporary entry for `/%s`",
				       w->path);
	r = set_meta(w, NODE_AT(live, tmp), NODE_AT(tree, name), ts, XA_SYNC);
	if ((r = place(w, live, tmp, name, r)) < 0)
		return r;
	if (fstatat(live, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", w->path);
	*rec = index_put(&w->out, w->path, w->len, &now);
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
	if ((r = xattrs_sync(w, NODE_FD(tfd), NODE_FD(lfd), XA_SYNC)) < 0)
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

	*parent = open_parent(w->root, first, base);
	if (*parent < 0 || fstatat(*parent, *base, st, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(w->err, errno, "stat `/%s`", first);
	return 0;
}

static int link_tmp(struct walk *w, int parent, const char *base, int live, const char *name)
{
	char tmp[64];
	int r = -1;

	for (int tries = 0; tries < 100; tries++) {
		tmp_name(w, tmp, sizeof(tmp));
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
	struct ient *e = itab_find(&w->links, ts->st_ino);
	cleanup_close int parent = -1;
	const char *base;
	struct stat fst;
	int r;

	if (e == NULL) {
		itab_add(&w->links, ts->st_ino, w->path);
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
	struct patch p = {*ei, index_put(&w->out, w->path, w->len, &fst)};
	buf_put(&w->patches, &p, sizeof(p));
	return 1;
}

/* Is the live entry at w->path the one files.index knows? */
static bool unchanged(struct walk *w, const struct stat *ls)
{
	struct ident was;

	return index_find(&w->ix, w->path, w->len, &was) && ident_matches(&was, ls);
}

static int restore_entry(struct walk *w, int live, int tree, const char *name)
{
	struct stat ts, ls;
	const struct stat *lsp = &ls;
	size_t ei = SIZE_MAX, rec = SIZE_MAX;
	bool mounted = false;
	int r = 0;

	if (stat_entry(w, live, name, &ls, &mounted) < 0) {
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
		index_put(&w->out, w->path, w->len, &ls);
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
		rec = index_put(&w->out, w->path, w->len, lsp);
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
		r = path_push(w, nm.v[i], &saved);
		if (r == 0)
			r = restore_entry(w, live, tree, nm.v[i]);
		path_pop(w, saved);
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
			e->id = ident_of(&st);
			e->resolved = true;
			if (e->rec != SIZE_MAX)
				index_patch(&w->out, e->rec, &e->id);
		}
		index_patch(&w->out, p[i].rec, &e->id);
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

	if (lfd < 0 || stat_entry(w, lfd, "", &ls, &mounted) < 0)
		return tern_error_make(w->err, errno, "open the rootfs");
	w->root = lfd;
	if ((tfd = openat(storefd, TREE_NAME, DIR_FLAGS)) < 0 || fstat(tfd, &ts) < 0)
		return tern_error_make(w->err, errno, "open `%s` in the snapshot store", TREE_NAME);
	if ((r = index_load(storefd, &w->ix, w->err)) < 0)
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

	walk_init(w, err);
	r = restore_root(w, rootfd, storefd);
	if (r == 0)
		r = index_write(storefd, &w->out, err);
	walk_free(w, stats);
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

	while ((d = dir_next(fd, &b, &error))) {
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
			struct ient *e = itab_find(t, st.st_ino);
			if (e == NULL) {
				e = itab_add(t, st.st_ino, "");
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
	itab_free(&t);
	return total;
}
