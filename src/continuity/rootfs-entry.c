/* The rootfs sync's view of one entry, its wire encoding, and the tree
 * primitives the manifest, sender and applier share (rootfs-entry.h).
 *
 * Xattrs are read and written through "/proc/self/fd/N" of an O_PATH |
 * O_NOFOLLOW fd with the *following* calls (getxattr, not lgetxattr): the
 * magic link jumps to the inode the fd holds, symlinks included, and does
 * not follow it further, while lgetxattr would act on procfs's own link.
 * One code path for every file type, and no open(2) of a fifo or device
 * (which could block or have side effects). */
#include "rootfs-entry.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

bool rs_no_openat2;

/* ---- attributes ---- */

void rs_attrs_clear(struct rs_attrs *a)
{
	free(a->path);
	free(a->link);
	for (size_t i = 0; i < a->nxattrs; i++) {
		free(a->xattrs[i].name);
		free(a->xattrs[i].value);
	}
	free(a->xattrs);
	memset(a, 0, sizeof(*a));
}

static char *memdup0(const void *p, size_t n)
{
	char *s = tern_xmalloc0(n + 1);
	if (n)
		memcpy(s, p, n);
	return s;
}

void rs_attrs_copy(struct rs_attrs *dst, const struct rs_attrs *src)
{
	*dst = *src;
	dst->path = tern_xstrdup(src->path);
	dst->link = src->link ? tern_xstrdup(src->link) : NULL;
	dst->xattrs = src->nxattrs ? tern_xmalloc0(src->nxattrs * sizeof(*src->xattrs)) : NULL;
	for (size_t i = 0; i < src->nxattrs; i++) {
		dst->xattrs[i].name = tern_xstrdup(src->xattrs[i].name);
		dst->xattrs[i].value = memdup0(src->xattrs[i].value, src->xattrs[i].len);
		dst->xattrs[i].len = src->xattrs[i].len;
	}
}

bool rs_attrs_meta_equal(const struct rs_attrs *a, const struct rs_attrs *b)
{
	if (a->mode != b->mode || a->uid != b->uid || a->gid != b->gid ||
	    a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec ||
	    a->nxattrs != b->nxattrs)
		return false;
	for (size_t i = 0; i < a->nxattrs; i++) {
		const struct rs_xattr *x = &a->xattrs[i], *y = &b->xattrs[i];
		if (strcmp(x->name, y->name) != 0 || x->len != y->len ||
		    memcmp(x->value, y->value, x->len) != 0)
			return false;
	}
	return true;
}

bool rs_attrs_node_equal(const struct rs_attrs *a, const struct rs_attrs *b)
{
	if ((a->mode & S_IFMT) != (b->mode & S_IFMT))
		return false;
	if (S_ISLNK(a->mode))
		return strcmp(a->link, b->link) == 0;
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		return a->rdev_major == b->rdev_major && a->rdev_minor == b->rdev_minor;
	return true;
}

bool rs_xattr_skipped(const char *name)
{
	return strcmp(name, "security.selinux") == 0 ||
	       strncmp(name, "trusted.overlay.", 16) == 0 ||
	       strncmp(name, "user.overlay.", 13) == 0;
}

static int xattr_cmp(const void *x, const void *y)
{
	return strcmp(((const struct rs_xattr *)x)->name, ((const struct rs_xattr *)y)->name);
}

/* ---- encoding ---- */

void rs_buf_put(struct rs_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (b->data == NULL)
			abort();
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void rs_buf_u8(struct rs_buf *b, uint8_t v)
{
	rs_buf_put(b, &v, 1);
}

void rs_buf_u32(struct rs_buf *b, uint32_t v)
{
	unsigned char c[4] = {v >> 24, v >> 16, v >> 8, v};
	rs_buf_put(b, c, 4);
}

void rs_buf_u64(struct rs_buf *b, uint64_t v)
{
	rs_buf_u32(b, (uint32_t)(v >> 32));
	rs_buf_u32(b, (uint32_t)v);
}

void rs_buf_str(struct rs_buf *b, const char *s, size_t n)
{
	rs_buf_u32(b, (uint32_t)n);
	rs_buf_put(b, s, n);
}

void rs_buf_attrs(struct rs_buf *b, const struct rs_attrs *a)
{
	rs_buf_str(b, a->path, strlen(a->path));
	rs_buf_u32(b, a->mode);
	rs_buf_u32(b, a->uid);
	rs_buf_u32(b, a->gid);
	rs_buf_u64(b, a->size);
	rs_buf_u64(b, (uint64_t)a->mtime_sec);
	rs_buf_u32(b, a->mtime_nsec);
	rs_buf_u32(b, a->rdev_major);
	rs_buf_u32(b, a->rdev_minor);
	rs_buf_str(b, a->link ? a->link : "", a->link ? strlen(a->link) : 0);
	rs_buf_u32(b, (uint32_t)a->nxattrs);
	for (size_t i = 0; i < a->nxattrs; i++) {
		rs_buf_str(b, a->xattrs[i].name, strlen(a->xattrs[i].name));
		rs_buf_str(b, a->xattrs[i].value, a->xattrs[i].len);
	}
}

size_t rs_buf_begin_record(struct rs_buf *b, uint8_t type)
{
	size_t start = b->len;
	rs_buf_u8(b, type);
	rs_buf_u32(b, 0);
	return start;
}

void rs_buf_end_record(struct rs_buf *b, size_t start)
{
	uint32_t n = (uint32_t)(b->len - start - RS_REC_HEADER);
	unsigned char *p = (unsigned char *)b->data + start + 1;
	p[0] = n >> 24;
	p[1] = n >> 16;
	p[2] = n >> 8;
	p[3] = n;
}

void rs_buf_free(struct rs_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

const void *rs_get_bytes(struct rs_reader *r, size_t n)
{
	const void *p = r->p;
	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

uint8_t rs_get_u8(struct rs_reader *r)
{
	const unsigned char *p = rs_get_bytes(r, 1);
	return p ? p[0] : 0;
}

uint32_t rs_get_u32(struct rs_reader *r)
{
	const unsigned char *p = rs_get_bytes(r, 4);
	if (p == NULL)
		return 0;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t rs_get_u64(struct rs_reader *r)
{
	uint64_t hi = rs_get_u32(r);
	return hi << 32 | rs_get_u32(r);
}

char *rs_get_str(struct rs_reader *r, size_t max)
{
	uint32_t n = rs_get_u32(r);
	const char *p;

	if (n > max) {
		r->bad = true;
		return NULL;
	}
	p = rs_get_bytes(r, n);
	if (p == NULL || memchr(p, '\0', n) != NULL) {
		r->bad = true;
		return NULL;
	}
	return memdup0(p, n);
}

static bool valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return true;
	}
	return false;
}

static int get_xattrs(struct rs_reader *r, struct rs_attrs *a)
{
	uint32_t n = rs_get_u32(r);

	/* Each takes at least 8 bytes: a bound before allocating. */
	if (r->bad || n > r->left / 8)
		return -EBADMSG;
	a->xattrs = n ? tern_xmalloc0(n * sizeof(*a->xattrs)) : NULL;
	for (uint32_t i = 0; i < n; i++) {
		struct rs_xattr *x = &a->xattrs[i];
		uint32_t len;
		const void *v;

		a->nxattrs++; /* counted now, so rs_attrs_clear frees a half-read one */
		x->name = rs_get_str(r, XATTR_NAME_MAX);
		len = rs_get_u32(r);
		v = len <= XATTR_SIZE_MAX ? rs_get_bytes(r, len) : NULL;
		if (x->name == NULL || x->name[0] == '\0' || v == NULL)
			return -EBADMSG;
		x->value = memdup0(v, len);
		x->len = len;
	}
	if (a->nxattrs > 1)
		qsort(a->xattrs, a->nxattrs, sizeof(*a->xattrs), xattr_cmp);
	return 0;
}

int rs_get_attrs(struct rs_reader *r, struct rs_attrs *a, bool allow_root, tern_error **err)
{
	memset(a, 0, sizeof(*a));
	a->path = rs_get_str(r, PATH_MAX - 1);
	if (a->path == NULL)
		return tern_error_make_quiet(err, EBADMSG, "malformed entry: bad path");
	if (!rs_path_valid(a->path, allow_root))
		return tern_error_make_quiet(err, EBADMSG, "`%s`: path not allowed", a->path);
	a->mode = rs_get_u32(r);
	a->uid = rs_get_u32(r);
	a->gid = rs_get_u32(r);
	a->size = rs_get_u64(r);
	a->mtime_sec = (int64_t)rs_get_u64(r);
	a->mtime_nsec = rs_get_u32(r);
	a->rdev_major = rs_get_u32(r);
	a->rdev_minor = rs_get_u32(r);
	a->link = rs_get_str(r, PATH_MAX - 1);
	if (r->bad || get_xattrs(r, a) < 0 || r->bad)
		return tern_error_make_quiet(err, EBADMSG, "`%s`: malformed entry", a->path);
	if (!valid_type(a->mode) || a->mtime_nsec >= 1000000000u ||
	    (a->size != 0 && !S_ISREG(a->mode)) || (a->size > INT64_MAX))
		return tern_error_make_quiet(err, EBADMSG, "`%s`: invalid type, size or mtime",
					     a->path);
	if (S_ISLNK(a->mode) != (a->link[0] != '\0'))
		return tern_error_make_quiet(err, EBADMSG, "`%s`: symlink target", a->path);
	if (!S_ISLNK(a->mode)) {
		free(a->link);
		a->link = NULL;
	}
	if (a->path[0] == '\0' && !S_ISDIR(a->mode))
		return tern_error_make_quiet(err, EBADMSG, "the rootfs must be a directory");
	return 0;
}

int rs_check_header(struct rs_reader *r, const char *magic, const char *what, tern_error **err)
{
	size_t mlen = strlen(magic);
	const char *m = rs_get_bytes(r, mlen);
	uint32_t version = rs_get_u32(r);

	if (m == NULL || memcmp(m, magic, mlen) != 0 || r->bad || r->left != 0)
		return tern_error_make_quiet(err, EBADMSG, "not a %s", what);
	if (version != RS_VERSION)
		return tern_error_make_quiet(err, EPROTO, "%s version %u, this side speaks %u",
					     what, version, RS_VERSION);
	return 0;
}

/* ---- paths ---- */

bool rs_path_valid(const char *path, bool allow_root)
{
	const char *p = path;
	size_t len = strlen(path);

	if (len == 0)
		return allow_root;
	if (len >= PATH_MAX)
		return false;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (slash == NULL)
			return true;
		p = slash + 1;
	}
}

char *rs_path_parent(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		*name = path;
		return tern_xstrdup("");
	}
	*name = slash + 1;
	return memdup0(path, (size_t)(slash - path));
}

/* Without openat2: one component at a time, O_PATH|O_NOFOLLOW, each
 * but the last checked to be a directory (a symlink opens as itself and
 * fails that), all on the rootfs's device. rs_path_valid already ruled out
 * "." and "..". */
static int open_beneath_walk(int rootfd, const char *path, bool dir)
{
	cleanup_free char *copy = tern_xstrdup(path);
	cleanup_close int cur = -1;
	struct stat root_st, st;
	char *save = NULL, *name;

	if (fstat(rootfd, &root_st) < 0)
		return -errno;
	cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	name = strtok_r(copy, "/", &save);
	while (name != NULL) {
		char *next = strtok_r(NULL, "/", &save);
		int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0)
			return -errno;
		tern_closep(&cur);
		cur = fd;
		if (fstat(cur, &st) < 0)
			return -errno;
		if (st.st_dev != root_st.st_dev)
			return -EXDEV;
		if ((next != NULL || dir) && !S_ISDIR(st.st_mode))
			return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
		name = next;
	}
	return steal_fd(&cur);
}

int rs_open_beneath(int rootfd, const char *path, bool dir)
{
	int flags = O_PATH | O_NOFOLLOW | O_CLOEXEC | (dir ? O_DIRECTORY : 0);
	struct open_how how = {
	    .flags = (uint64_t)flags,
	    .resolve =
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	if (!rs_path_valid(path, true))
		return -EINVAL;
	if (path[0] == '\0') {
		int fd = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	for (int tries = 0; !rs_no_openat2 && tries < 64; tries++) {
		int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		/* EAGAIN: a concurrent rename; the kernel asks us to retry. */
		if (errno == ENOSYS)
			break;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return open_beneath_walk(rootfd, path, dir);
}

/* ---- reading an entry ---- */

static int read_xattr_value(const char *procpath, const char *name, struct rs_xattr *x)
{
	for (;;) {
		ssize_t n = getxattr(procpath, name, NULL, 0);
		char *v;

		if (n < 0)
			return -errno;
		v = tern_xmalloc0((size_t)n + 1);
		n = getxattr(procpath, name, v, (size_t)n);
		if (n < 0) {
			int e = errno;
			free(v);
			if (e == ERANGE) /* grew in between: again */
				continue;
			return -e;
		}
		x->name = tern_xstrdup(name);
		x->value = v;
		x->len = (size_t)n;
		return 0;
	}
}

static int read_xattrs(int fd, struct rs_attrs *a)
{
	cleanup_free char *names = NULL;
	char procpath[64];
	ssize_t n;

	snprintf(procpath, sizeof(procpath), "/proc/self/fd/%d", fd);
	for (;;) {
		n = listxattr(procpath, NULL, 0);
		if (n < 0)
			return errno == ENOTSUP ? 0 : -errno;
		if (n == 0)
			return 0;
		free(names);
		names = tern_xmalloc0((size_t)n + 1);
		n = listxattr(procpath, names, (size_t)n);
		if (n >= 0)
			break;
		if (errno != ERANGE)
			return -errno;
	}
	for (char *p = names; p < names + n; p += strlen(p) + 1) {
		int ret;

		if (*p == '\0' || rs_xattr_skipped(p))
			continue;
		a->xattrs = realloc(a->xattrs, (a->nxattrs + 1) * sizeof(*a->xattrs));
		if (a->xattrs == NULL)
			abort();
		ret = read_xattr_value(procpath, p, &a->xattrs[a->nxattrs]);
		if (ret == -ENODATA) /* removed in between */
			continue;
		if (ret < 0)
			return ret;
		a->nxattrs++;
	}
	if (a->nxattrs > 1)
		qsort(a->xattrs, a->nxattrs, sizeof(*a->xattrs), xattr_cmp);
	return 0;
}

int rs_read_attrs(int fd, const char *path, struct rs_attrs *a, struct stat *st, tern_error **err)
{
	int ret;

	memset(a, 0, sizeof(*a));
	a->path = tern_xstrdup(path);
	if (fstat(fd, st) < 0)
		return tern_error_make(err, errno, "stat `%s`", path);
	a->mode = st->st_mode;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
	a->mtime_sec = st->st_mtim.tv_sec;
	a->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		a->rdev_major = major(st->st_rdev);
		a->rdev_minor = minor(st->st_rdev);
	}
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(fd, "", target, sizeof(target));
		if (n < 0)
			return tern_error_make(err, errno, "read the symlink `%s`", path);
		if (n == 0 || n >= (ssize_t)sizeof(target))
			return tern_error_make(err, ENAMETOOLONG, "read the symlink `%s`", path);
		a->link = memdup0(target, (size_t)n);
	}
	ret = read_xattrs(fd, a);
	if (ret < 0)
		return tern_error_make(err, -ret, "read the xattrs of `%s`", path);
	return 0;
}

int rs_reopen_read(int fd)
{
	char procpath[64];
	int r;

	snprintf(procpath, sizeof(procpath), "/proc/self/fd/%d", fd);
	/* O_NOATIME: reading a tree must not change it (it would not change
	 * ctime either way, but atime is part of what the user sees). */
	r = open(procpath, O_RDONLY | O_NOATIME | O_CLOEXEC);
	if (r < 0 && errno == EPERM)
		r = open(procpath, O_RDONLY | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/* ---- file contents ---- */

static int read_range(int fd, uint64_t off, uint64_t end, char *buf, rs_extent_fn fn, void *data,
		      bool *eof, tern_error **err)
{
	while (off < end) {
		size_t want = end - off < RS_DATA_CHUNK ? (size_t)(end - off) : RS_DATA_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tern_error_make(err, errno, "read at offset %llu",
					       (unsigned long long)off);
		if (n == 0) {
			*eof = true; /* shrank under us: the rest is a hole */
			return 0;
		}
		ret = fn(data, off, buf, (size_t)n, err);
		if (ret < 0)
			return ret;
		off += (uint64_t)n;
	}
	return 0;
}

int rs_file_extents(int fd, uint64_t size, rs_extent_fn fn, void *data, tern_error **err)
{
	cleanup_free char *buf = tern_xmalloc0(RS_DATA_CHUNK);
	uint64_t pos = 0;
	bool eof = false;

	while (pos < size && !eof) {
		off_t start = lseek(fd, (off_t)pos, SEEK_DATA), end;
		int ret;

		if (start < 0 && errno == ENXIO) /* only a hole is left */
			return 0;
		if (start < 0 && errno == EINVAL) { /* no SEEK_DATA here: all data */
			start = (off_t)pos;
			end = (off_t)size;
		} else if (start < 0) {
			return tern_error_make(err, errno, "lseek SEEK_DATA");
		} else {
			end = lseek(fd, start, SEEK_HOLE);
			if (end < 0)
				return tern_error_make(err, errno, "lseek SEEK_HOLE");
		}
		if ((uint64_t)start >= size)
			return 0;
		if ((uint64_t)end > size)
			end = (off_t)size;
		ret = read_range(fd, (uint64_t)start, (uint64_t)end, buf, fn, data, &eof, err);
		if (ret < 0)
			return ret;
		pos = (uint64_t)end;
	}
	return 0;
}

struct rs_hasher {
	EVP_MD_CTX *ctx;
	uint64_t pos;
};

rs_hasher *rs_hasher_new(void)
{
	rs_hasher *h = tern_xmalloc0(sizeof(*h));

	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		abort();
	return h;
}

static void hash_zeros(rs_hasher *h, uint64_t n)
{
	static const char zeros[64 << 10];

	while (n > 0) {
		size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);
		EVP_DigestUpdate(h->ctx, zeros, k);
		n -= k;
	}
}

void rs_hasher_data(rs_hasher *h, uint64_t off, const void *buf, size_t len)
{
	if (off > h->pos)
		hash_zeros(h, off - h->pos);
	EVP_DigestUpdate(h->ctx, buf, len);
	h->pos = off + len;
}

void rs_hasher_finish(rs_hasher *h, uint64_t size, unsigned char out[RS_HASH_LEN])
{
	unsigned int n = RS_HASH_LEN;

	if (size > h->pos)
		hash_zeros(h, size - h->pos);
	EVP_DigestFinal_ex(h->ctx, out, &n);
}

void rs_hasher_free(rs_hasher *h)
{
	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

static int hash_extent(void *data, uint64_t off, const void *buf, size_t len, tern_error **err)
{
	rs_hasher_data(data, off, buf, len);
	return 0;
}

int rs_hash_file(int fd, uint64_t size, unsigned char out[RS_HASH_LEN], tern_error **err)
{
	cleanup_close int rfd = rs_reopen_read(fd);
	rs_hasher *h;
	int ret;

	if (rfd < 0)
		return tern_error_make(err, -rfd, "open");
	h = rs_hasher_new();
	ret = rs_file_extents(rfd, size, hash_extent, h, err);
	if (ret == 0)
		rs_hasher_finish(h, size, out);
	rs_hasher_free(h);
	return ret;
}

/* ---- walking ---- */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rs_list_dir(int dirfd, char ***out, size_t *count)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -errno;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		names = realloc(names, (n + 2) * sizeof(*names));
		if (names == NULL)
			abort();
		names[n++] = tern_xstrdup(de->d_name);
		names[n] = NULL;
	}
	if (errno != 0) {
		int e = errno;
		closedir(d);
		tern_strv_freep(&names);
		return -e;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	*out = names;
	*count = n;
	return 0;
}

static int walk_dir(int dirfd, const char *path, dev_t dev, rs_walk_fn fn, void *data,
		    tern_error **err)
{
	cleanup_strv char **names = NULL;
	size_t n = 0;
	int ret = rs_list_dir(dirfd, &names, &n);

	if (ret < 0)
		return tern_error_make(err, -ret, "read the directory `%s`", path);
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *child =
		    path[0] ? tern_strdup_printf("%s/%s", path, names[i]) : tern_xstrdup(names[i]);
		cleanup_close int fd = -1;
		struct stat st;
		bool foreign;

		if (strlen(child) >= PATH_MAX)
			return tern_error_make(err, ENAMETOOLONG, "`%s`", child);
		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return tern_error_make(err, errno, "stat `%s`", child);
		}
		foreign = st.st_dev != dev;
		ret = fn(data, dirfd, names[i], child, &st, foreign, err);
		if (ret < 0)
			return ret;
		if (!S_ISDIR(st.st_mode) || foreign)
			continue;
		fd = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* Gone or replaced since the stat: the next round sees it. */
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
			continue;
		if (fd < 0)
			return tern_error_make(err, errno, "open the directory `%s`", child);
		ret = walk_dir(fd, child, dev, fn, data, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int rs_walk(int rootfd, rs_walk_fn fn, void *data, tern_error **err)
{
	cleanup_close int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	int ret;

	if (fd < 0 || fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "open the rootfs");
	ret = fn(data, fd, ".", "", &st, false, err);
	if (ret < 0)
		return ret;
	return walk_dir(fd, "", st.st_dev, fn, data, err);
}

/* ---- map ---- */

struct rs_map_item {
	struct rs_map_item *next;
	uint64_t hash;
	size_t klen;
	void *value;
	char key[];
};

struct rs_map {
	struct rs_map_item **buckets;
	size_t nbuckets, count;
};

static uint64_t fnv1a(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

rs_map *rs_map_new(void)
{
	rs_map *m = tern_xmalloc0(sizeof(*m));

	m->nbuckets = 256;
	m->buckets = tern_xmalloc0(m->nbuckets * sizeof(*m->buckets));
	return m;
}

static struct rs_map_item **map_slot(const rs_map *m, const void *key, size_t klen, uint64_t h)
{
	struct rs_map_item **p = &m->buckets[h & (m->nbuckets - 1)];

	while (*p && ((*p)->hash != h || (*p)->klen != klen || memcmp((*p)->key, key, klen) != 0))
		p = &(*p)->next;
	return p;
}

static void map_grow(rs_map *m)
{
	size_t nb = m->nbuckets * 2;
	struct rs_map_item **b = tern_xmalloc0(nb * sizeof(*b));

	for (size_t i = 0; i < m->nbuckets; i++) {
		struct rs_map_item *it = m->buckets[i], *next;
		for (; it; it = next) {
			next = it->next;
			it->next = b[it->hash & (nb - 1)];
			b[it->hash & (nb - 1)] = it;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
}

void *rs_map_get(const rs_map *m, const void *key, size_t klen)
{
	struct rs_map_item *it = *map_slot(m, key, klen, fnv1a(key, klen));
	return it ? it->value : NULL;
}

void *rs_map_put(rs_map *m, const void *key, size_t klen, void *value)
{
	uint64_t h = fnv1a(key, klen);
	struct rs_map_item **p = map_slot(m, key, klen, h), *it;

	if (*p) {
		void *old = (*p)->value;
		(*p)->value = value;
		return old;
	}
	it = tern_xmalloc0(sizeof(*it) + klen);
	it->hash = h;
	it->klen = klen;
	it->value = value;
	memcpy(it->key, key, klen);
	*p = it;
	if (++m->count > m->nbuckets)
		map_grow(m);
	return NULL;
}

void *rs_map_del(rs_map *m, const void *key, size_t klen)
{
	struct rs_map_item **p = map_slot(m, key, klen, fnv1a(key, klen)), *it = *p;
	void *v;

	if (it == NULL)
		return NULL;
	*p = it->next;
	v = it->value;
	free(it);
	m->count--;
	return v;
}

size_t rs_map_count(const rs_map *m)
{
	return m->count;
}

void rs_map_each(rs_map *m, void (*fn)(void *data, const void *key, size_t klen, void *value),
		 void *data)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct rs_map_item *it = m->buckets[i]; it; it = it->next)
			fn(data, it->key, it->klen, it->value);
}

void rs_map_free(rs_map *m, void (*free_value)(void *value))
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct rs_map_item *it = m->buckets[i], *next;
		for (; it; it = next) {
			next = it->next;
			if (free_value)
				free_value(it->value);
			free(it);
		}
	}
	free(m->buckets);
	free(m);
}
