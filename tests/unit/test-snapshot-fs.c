/* tern_snapfs_record / tern_snapfs_restore on a real tree under /tmp (as
 * root, in a private mount namespace): record, change, record with the
 * previous store, roll back and forth, and compare the live tree with the
 * store's tree/ entry by entry. Also a mount point inside the rootfs and a
 * store on a full file system. */
#include "tap.h"

#include "snapshot-fs.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static char base[64];

/* A path under base; eight buffers in turn. */
static const char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *P(const char *fmt, ...)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];
	int n = snprintf(b, PATH_MAX, "%s/", base);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, (size_t)(PATH_MAX - n), fmt, ap);
	va_end(ap);
	return b;
}

static int failures;
#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if ((x) < 0) {                                                                     \
			printf("#   setup failed: %s (%s:%d): %s\n", #x, __FILE__, __LINE__,       \
			       strerror(errno));                                                   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void put(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	CHECK(fd);
	if (fd >= 0) {
		CHECK(tern_write_all(fd, data, len) == 0 ? 0 : -1);
		close(fd);
	}
}

static void put_str(const char *path, const char *s)
{
	put(path, s, strlen(s), 0644);
}

static void append(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

	CHECK(fd);
	if (fd >= 0) {
		CHECK(tern_write_all(fd, s, strlen(s)) == 0 ? 0 : -1);
		close(fd);
	}
}

static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{sec, 0}, {sec, 123456789}};

	CHECK(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW));
}

static void mkdir_mode(const char *path, mode_t mode)
{
	CHECK(mkdir(path, 0700));
	CHECK(chmod(path, mode));
}

/* ---- comparing two trees ---- */

struct group {
	ino_t ino;
	char path[256];
};

struct side {
	const char *top;
	dev_t dev;
	struct group g[256];
	size_t n;
};

static int ndiff;
static bool diff_quiet; /* differences expected: count, do not print */
#define DIFF(...)                                                                                  \
	do {                                                                                       \
		if (ndiff++ < 20 && !diff_quiet) {                                                 \
			printf("#   differs: ");                                                   \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

static void join(char *out, const char *top, const char *rel)
{
	snprintf(out, PATH_MAX, "%s%s%s", top, *rel ? "/" : "", rel);
}

/* The first name (in sorted walk order) of the inode: equal on both sides
 * when the hard-link structure is. */
static const char *group_of(struct side *s, const struct stat *st, const char *rel)
{
	if (S_ISDIR(st->st_mode) || st->st_nlink == 1)
		return rel;
	for (size_t i = 0; i < s->n; i++)
		if (s->g[i].ino == st->st_ino)
			return s->g[i].path;
	if (s->n < 256) {
		s->g[s->n].ino = st->st_ino;
		snprintf(s->g[s->n].path, sizeof(s->g[0].path), "%s", rel);
		s->n++;
	}
	return rel;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of a directory (NULL-terminated); *n their number. */
static char **list_dir(const char *path, size_t *n)
{
	DIR *d = opendir(path);
	char **v = tern_xmalloc0(1024 * sizeof(*v));
	struct dirent *e;

	*n = 0;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && *n < 1023)
			v[(*n)++] = tern_xstrdup(e->d_name);
	if (d)
		closedir(d);
	qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* "name=value\n" lines, sorted by name. */
static char *xattrs_of(const char *path)
{
	char names[4096], *v[64], *out = tern_xmalloc0(8192);
	ssize_t len = llistxattr(path, names, sizeof(names));
	size_t n = 0, used = 0;

	for (ssize_t i = 0; len > 0 && i < len && n < 64; i += (ssize_t)strlen(names + i) + 1)
		v[n++] = names + i;
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char val[1024];
		ssize_t l = lgetxattr(path, v[i], val, sizeof(val) - 1);
		val[l < 0 ? 0 : l] = '\0';
		used += (size_t)snprintf(out + used, 8192 - used, "%s=%s\n", v[i], val);
	}
	return out;
}

static bool same_content(const char *a, const char *b)
{
	static char ba[65536], bb[65536];
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC);
	bool same = fa >= 0 && fb >= 0;

	while (same) {
		ssize_t na = read(fa, ba, sizeof(ba)), nb = read(fb, bb, sizeof(bb));
		same = na == nb && na >= 0 && memcmp(ba, bb, (size_t)na) == 0;
		if (na <= 0)
			break;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

static void cmp_tree(struct side *a, struct side *b, const char *rel);

static void cmp_node(struct side *a, struct side *b, const char *rel, const struct stat *sa,
		     const struct stat *sb, const char *pa, const char *pb)
{
	char ta[PATH_MAX], tb[PATH_MAX];
	char *xa = xattrs_of(pa), *xb = xattrs_of(pb);

	if (sa->st_mode != sb->st_mode || sa->st_uid != sb->st_uid || sa->st_gid != sb->st_gid)
		DIFF("/%s: mode %o/%o owner %u:%u/%u:%u", rel, sa->st_mode, sb->st_mode, sa->st_uid,
		     sa->st_gid, sb->st_uid, sb->st_gid);
	if (sa->st_mtim.tv_sec != sb->st_mtim.tv_sec || sa->st_mtim.tv_nsec != sb->st_mtim.tv_nsec)
		DIFF("/%s: mtime", rel);
	if (strcmp(xa, xb) != 0)
		DIFF("/%s: xattrs [%s] / [%s]", rel, xa, xb);
	free(xa);
	free(xb);
	if (S_ISREG(sa->st_mode) && (sa->st_size != sb->st_size || !same_content(pa, pb)))
		DIFF("/%s: content", rel);
	if ((S_ISCHR(sa->st_mode) || S_ISBLK(sa->st_mode)) && sa->st_rdev != sb->st_rdev)
		DIFF("/%s: rdev", rel);
	if (S_ISLNK(sa->st_mode)) {
		ssize_t la = readlink(pa, ta, sizeof(ta) - 1),
			lb = readlink(pb, tb, sizeof(tb) - 1);
		ta[la < 0 ? 0 : la] = tb[lb < 0 ? 0 : lb] = '\0';
		if (strcmp(ta, tb) != 0)
			DIFF("/%s: target %s / %s", rel, ta, tb);
	}
	if (!S_ISDIR(sa->st_mode) && strcmp(group_of(a, sa, rel), group_of(b, sb, rel)) != 0)
		DIFF("/%s: hard links", rel);
	if (S_ISDIR(sa->st_mode))
		cmp_tree(a, b, rel);
}

static void cmp_entry(struct side *a, struct side *b, const char *rel)
{
	char pa[PATH_MAX], pb[PATH_MAX];
	struct stat sa, sb;

	join(pa, a->top, rel);
	join(pb, b->top, rel);
	if (lstat(pa, &sa) < 0 || lstat(pb, &sb) < 0) {
		DIFF("/%s: stat: %s", rel, strerror(errno));
		return;
	}
	if (sa.st_dev != a->dev)
		return; /* a mount point */
	if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
		DIFF("/%s: type %o / %o", rel, sa.st_mode & S_IFMT, sb.st_mode & S_IFMT);
		return;
	}
	cmp_node(a, b, rel, &sa, &sb, pa, pb);
}

static void cmp_tree(struct side *a, struct side *b, const char *rel)
{
	char pa[PATH_MAX], pb[PATH_MAX], sub[PATH_MAX];
	size_t na, nb, i = 0, j = 0;
	char **va, **vb;

	join(pa, a->top, rel);
	join(pb, b->top, rel);
	va = list_dir(pa, &na);
	vb = list_dir(pb, &nb);
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(va[i], vb[j]);
		/* DIFF skips its arguments after 20: no side effects in them */
		if (c < 0) {
			DIFF("/%s%s%s only in %s", rel, *rel ? "/" : "", va[i], a->top);
			i++;
		} else if (c > 0) {
			DIFF("/%s%s%s only in %s", rel, *rel ? "/" : "", vb[j], b->top);
			j++;
		} else {
			snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", va[i]);
			cmp_entry(a, b, sub);
			i++, j++;
		}
	}
	free_list(va, na);
	free_list(vb, nb);
}

/* The number of differences between two trees (and their tops). */
static int compare(const char *live, const char *tree)
{
	struct side *a = tern_xmalloc0(sizeof(*a)), *b = tern_xmalloc0(sizeof(*b));
	struct stat st;

	ndiff = 0;
	a->top = live;
	b->top = tree;
	if (lstat(live, &st) == 0)
		a->dev = st.st_dev;
	cmp_entry(a, b, "");
	free(a);
	free(b);
	return ndiff;
}

static uint64_t count_entries(const char *path)
{
	size_t n;
	char **v = list_dir(path, &n);
	uint64_t total = n;
	struct stat st;

	for (size_t i = 0; i < n; i++) {
		char sub[PATH_MAX];
		snprintf(sub, sizeof(sub), "%s/%s", path, v[i]);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			total += count_entries(sub);
	}
	free_list(v, n);
	return total;
}

/* ---- the rootfs ---- */

static void build_root(void)
{
	static char big[100 * 1024];
	const char *dirs[] = {"root/bin",  "root/etc", "root/home",    "root/dev",	 "root/run",
			      "root/data", "root/var", "root/var/lib", "root/var/lib/db"};

	mkdir_mode(P("root"), 0755);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		mkdir_mode(P("%s", dirs[i]), 0755);
	mkdir_mode(P("root/tmp"), 01777);
	mkdir_mode(P("root/srv"), 02775);
	mkdir_mode(P("root/home/user"), 0700);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	put(P("root/bin/sh"), big, sizeof(big), 0755);
	put_str(P("root/bin/a"), "hard-linked\n");
	CHECK(link(P("root/bin/a"), P("root/bin/b")));
	put_str(P("root/bin/su"), "setuid\n");
	CHECK(chmod(P("root/bin/su"), 04755));
	CHECK(symlink("sh", P("root/bin/ls")));
	CHECK(lsetxattr(P("root/bin/ls"), "trusted.link", "L", 1, 0));
	put_str(P("root/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
	CHECK(setxattr(P("root/etc/passwd"), "user.test", "hello", 5, 0));
	put_str(P("root/etc/group"), "root:x:0:\n");
	put_str(P("root/etc/hosts"), "127.0.0.1 localhost\n");
	put_str(P("root/etc/motd"), "welcome\n");
	put_str(P("root/etc/shadow"), "secret1\n");
	put_str(P("root/home/user/file"), "mine\n");
	CHECK(chown(P("root/home/user/file"), 1000, 1000));
	CHECK(chmod(P("root/home/user/file"), 0640));
	CHECK(chown(P("root/home/user"), 1000, 1000));
	CHECK(chown(P("root/srv"), 1000, 1000));
	CHECK(chmod(P("root/srv"), 02775));
	CHECK(setxattr(P("root/srv"), "user.dir", "xyz", 3, 0));
	put_str(P("root/var/lib/db/data"), "db\n");
	CHECK(mkfifo(P("root/run/fifo"), 0620));
	CHECK(mknod(P("root/run/sock"), S_IFSOCK | 0755, 0));
	CHECK(mknod(P("root/dev/null"), S_IFCHR | 0666, makedev(1, 3)));
	CHECK(chmod(P("root/dev/null"), 0666));
	CHECK(lsetxattr(P("root/dev/null"), "trusted.dev", "D", 1, 0));

	/* a 16 MiB file with 8 KiB of data */
	int fd = open(P("root/data/sparse"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd);
	CHECK(pwrite(fd, big, 4096, 0));
	CHECK(pwrite(fd, big, 4096, 16 << 20));
	close(fd);

	const char *timed[] = {"bin/sh",    "bin/a",	"bin/ls",      "etc/passwd", "etc/shadow",
			       "run/fifo",  "dev/null", "data/sparse", "var/lib/db", "var/lib",
			       "var",	    "etc",	"bin",	       "srv",	     "tmp",
			       "home/user", "home",	"run",	       "dev",	     "data",
			       ""};
	for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++)
		set_mtime(P("root/%s", timed[i]), 1000000000 + (time_t)i * 1000);
}

static void change_root(void)
{
	struct stat st;

	/* same size, same mtime: only the ctime tells */
	lstat(P("root/etc/shadow"), &st);
	put_str(P("root/etc/shadow"), "secret2\n");
	set_mtime(P("root/etc/shadow"), st.st_mtim.tv_sec);
	append(P("root/etc/passwd"), "user:x:1000:1000::/home/user:/bin/sh\n");
	CHECK(unlink(P("root/etc/group")));
	put_str(P("root/etc/new"), "new\n");
	CHECK(unlink(P("root/var/lib/db/data")));
	CHECK(rmdir(P("root/var/lib/db")));
	CHECK(rmdir(P("root/var/lib")));
	CHECK(symlink(P("outside"), P("root/var/lib"))); /* a directory becomes a link out */
	CHECK(chmod(P("root/home/user/file"), 0600));
	CHECK(link(P("root/bin/a"), P("root/bin/c")));
	CHECK(setxattr(P("root/etc/hosts"), "user.new", "1", 1, 0));
	CHECK(unlink(P("root/etc/motd")));
	CHECK(mkdir(P("root/etc/motd"), 0755)); /* a file becomes a directory */
	put_str(P("root/etc/motd/inner"), "inner\n");
	put_str(P("root/tmp/x"), "x\n");
	CHECK(rename(P("root/bin/su"), P("root/bin/su2")));
	CHECK(unlink(P("root/bin/ls")));
	CHECK(symlink("busybox", P("root/bin/ls")));
	CHECK(lchown(P("root/run/fifo"), 1000, 1000));
	CHECK(chmod(P("root/srv"), 0755));
	CHECK(removexattr(P("root/srv"), "user.dir"));
}

/* ---- running the API ---- */

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int record(const char *root, const char *prev, const char *store, tern_snapfs_stats *st,
		  tern_error **err)
{
	int rfd = open_dir(P("%s", root)), pfd = prev ? open_dir(P("%s", prev)) : -1, sfd;
	struct timespec t0;
	int r;

	mkdir(P("%s", store), 0700);
	sfd = open_dir(P("%s", store));
	memset(st, 0, sizeof(*st));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = tern_snapfs_record(rfd, pfd, sfd, st, err);
	printf("# record %s (prev %s): %.2f ms, %llu entries, %llu copied, %llu linked, %llu "
	       "bytes\n",
	       store, prev ? prev : "-", ms_since(&t0), (unsigned long long)st->entries,
	       (unsigned long long)st->files_copied, (unsigned long long)st->files_linked,
	       (unsigned long long)st->bytes_copied);
	close(rfd);
	close(sfd);
	if (pfd >= 0)
		close(pfd);
	return r;
}

static int restore(const char *root, const char *store, tern_snapfs_stats *st, tern_error **err)
{
	int rfd = open_dir(P("%s", root)), sfd = open_dir(P("%s", store));
	struct timespec t0;
	int r;

	memset(st, 0, sizeof(*st));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = tern_snapfs_restore(rfd, sfd, st, err);
	printf("# restore %s: %.2f ms, %llu entries, %llu copied, %llu removed\n", store,
	       ms_since(&t0), (unsigned long long)st->entries, (unsigned long long)st->files_copied,
	       (unsigned long long)st->entries_removed);
	close(rfd);
	close(sfd);
	return r;
}

#define ERRMSG(e) ((e) ? (e)->msg : "")

static ino_t ino(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? st.st_ino : 0;
}

static void test_record_a(void)
{
	cleanup_error tern_error *err = NULL;
	tern_snapfs_stats st;
	struct stat s;
	int r = record("root", NULL, "A", &st, &err);

	ok(r == 0, "record A: %s", ERRMSG(err));
	is_int(compare(P("root"), P("A/tree")), 0, "A/tree is the rootfs");
	is_int(st.entries, count_entries(P("root")), "A: every entry counted");
	is_int(st.files_copied, 11, "A: eleven inodes copied");
	is_int(st.files_linked, 0, "A: nothing linked without prev");
	ok(stat(P("A/tree/data/sparse"), &s) == 0 && s.st_size == (16 << 20) + 4096 &&
	       s.st_blocks * 512 < (1 << 20),
	   "A: the sparse file keeps its holes (%lld blocks)", (long long)s.st_blocks);
	ok(st.bytes_copied < (1 << 20), "A: holes are not copied (%llu bytes)",
	   (unsigned long long)st.bytes_copied);
	ok(ino(P("A/tree/bin/a")) == ino(P("A/tree/bin/b")), "A: the hard-linked pair stays one");
	ok(lstat(P("A/tree/dev/null"), &s) == 0 && S_ISCHR(s.st_mode) && s.st_rdev == makedev(1, 3),
	   "A: char device 1:3");
	ok(lstat(P("A/tree/srv"), &s) == 0 && (s.st_mode & 07777) == 02775 && s.st_uid == 1000,
	   "A: setgid dir owned by 1000");
	ok(lstat(P("A/tree/run/sock"), &s) == 0 && S_ISSOCK(s.st_mode), "A: socket node");
	ok(lstat(P("A/tree/bin/su"), &s) == 0 && (s.st_mode & 07777) == 04755, "A: setuid kept");
	ok(faccessat(AT_FDCWD, P("A/files.index"), F_OK, 0) == 0 &&
	       faccessat(AT_FDCWD, P("A/files.index.tmp"), F_OK, 0) < 0,
	   "A: files.index in place");
}

static void test_record_b(void)
{
	cleanup_error tern_error *err = NULL;
	tern_snapfs_stats st;
	int r;

	change_root();
	diff_quiet = true;
	ok(compare(P("root"), P("A/tree")) >= 15, "the comparison sees the changes (%d)", ndiff);
	diff_quiet = false;
	r = record("root", "A", "B", &st, &err);
	ok(r == 0, "record B with prev A: %s", ERRMSG(err));
	is_int(compare(P("root"), P("B/tree")), 0, "B/tree is the changed rootfs");
	is_int(st.files_linked, 2, "B: the two unchanged files linked");
	is_int(st.files_copied, 9, "B: the nine changed inodes copied");
	ok(ino(P("A/tree/bin/sh")) == ino(P("B/tree/bin/sh")), "B: bin/sh shared with A");
	ok(ino(P("A/tree/data/sparse")) == ino(P("B/tree/data/sparse")),
	   "B: data/sparse shared with A");
	ok(ino(P("A/tree/etc/passwd")) != ino(P("B/tree/etc/passwd")), "B: etc/passwd copied");
	ok(ino(P("A/tree/etc/hosts")) != ino(P("B/tree/etc/hosts")), "B: etc/hosts copied");
	ok(ino(P("A/tree/bin/a")) != ino(P("B/tree/bin/a")), "B: bin/a (linked to) copied");
	ok(ino(P("B/tree/bin/a")) == ino(P("B/tree/bin/c")), "B: the new hard link kept");
	ok(ino(P("A/tree/etc/shadow")) != ino(P("B/tree/etc/shadow")),
	   "B: a rewrite with the same size and mtime copied");
	ok(ino(P("A/tree/run/sock")) == ino(P("B/tree/run/sock")) &&
	       ino(P("A/tree/dev/null")) == ino(P("B/tree/dev/null")),
	   "B: unchanged nodes shared with A");
	ok(ino(P("A/tree/bin/ls")) != ino(P("B/tree/bin/ls")) &&
	       ino(P("A/tree/run/fifo")) != ino(P("B/tree/run/fifo")),
	   "B: a changed symlink and a chowned fifo made anew");
}

static void test_restore(void)
{
	cleanup_error tern_error *err = NULL;
	tern_snapfs_stats st;
	struct stat before, after;
	int r;

	put_str(P("outside/keep"), "outside\n");
	set_mtime(P("outside"), 1500000000);
	lstat(P("outside"), &before);
	r = restore("root", "A", &st, &err);
	ok(r == 0, "restore A: %s", ERRMSG(err));
	is_int(compare(P("root"), P("A/tree")), 0, "after restore A the rootfs is A/tree");
	is_int(st.files_copied, 9, "restore A: nine files put back, the rest left");
	ok(st.entries_removed >= 5, "restore A: extra entries removed (%llu)",
	   (unsigned long long)st.entries_removed);
	lstat(P("outside"), &after);
	ok(after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	       after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
	       after.st_ctim.tv_nsec == before.st_ctim.tv_nsec && count_entries(P("outside")) == 1,
	   "restore A did not follow var/lib out of the rootfs");

	r = restore("root", "B", &st, &err);
	ok(r == 0, "restore B: %s", ERRMSG(err));
	is_int(compare(P("root"), P("B/tree")), 0, "after restore B the rootfs is B/tree");
	is_int(st.files_copied, 9, "restore B: nine files put back");

	r = record("root", "B", "C", &st, &err);
	ok(r == 0, "record C with prev B right after restore B: %s", ERRMSG(err));
	is_int(st.files_copied, 0, "C: nothing copied (restore rewrote B's index)");
	is_int(st.files_linked, 11, "C: every inode linked");
	is_int(compare(P("root"), P("C/tree")), 0, "C/tree is the rootfs");

	r = restore("root", "B", &st, &err);
	ok(r == 0 && st.entries == 0 && st.files_copied == 0 && st.entries_removed == 0,
	   "restore B onto an equal tree changes nothing: %s", ERRMSG(err));
	is_int(compare(P("root"), P("B/tree")), 0, "and the rootfs is still B/tree");

	ok(tern_snapfs_own_bytes(-1) == 0, "own_bytes of a bad fd is 0");
	int fd = open_dir(P("B"));
	uint64_t own = tern_snapfs_own_bytes(fd);
	ok(own > 0 && own < (1 << 20), "own_bytes of B: %llu", (unsigned long long)own);
	close(fd);
}

static void test_mount_point(void)
{
	cleanup_error tern_error *err = NULL;
	tern_snapfs_stats st;
	struct stat s;
	size_t n = 99;
	char **v;
	int r;

	mkdir_mode(P("root2"), 0755);
	mkdir_mode(P("root2/mnt"), 0755);
	put_str(P("root2/f"), "f\n");
	if (mount("tmpfs", P("root2/mnt"), "tmpfs", 0, "size=1m,mode=0751") < 0) {
		ok(0, "mount a tmpfs: %s", strerror(errno));
		return;
	}
	put_str(P("root2/mnt/inside"), "inside\n");
	/* bind mounts from the rootfs's own file system: same st_dev */
	mkdir_mode(P("bindsrc"), 0755);
	put_str(P("bindsrc/kept"), "kept\n");
	put_str(P("hostsfile"), "host's hosts\n");
	mkdir_mode(P("root2/bind"), 0700);
	put_str(P("root2/hosts"), "under the mount\n");
	CHECK(mount(P("bindsrc"), P("root2/bind"), NULL, MS_BIND, NULL));
	CHECK(mount(P("hostsfile"), P("root2/hosts"), NULL, MS_BIND, NULL));
	r = record("root2", NULL, "D", &st, &err);
	ok(r == 0, "record D with a mount point: %s", ERRMSG(err));
	v = list_dir(P("D/tree/mnt"), &n);
	free_list(v, n);
	ok(lstat(P("D/tree/mnt"), &s) == 0 && S_ISDIR(s.st_mode) && n == 0 &&
	       (s.st_mode & 07777) == 0751,
	   "D: the mount point is an empty directory with what it showed");
	v = list_dir(P("D/tree/bind"), &n);
	free_list(v, n);
	ok(n == 0 && lstat(P("D/tree/hosts"), &s) < 0,
	   "D: a bind-mounted directory recorded empty, a bind-mounted file left out");

	put_str(P("root2/extra"), "extra\n");
	put_str(P("root2/mnt/inside2"), "inside2\n");
	mkdir_mode(P("root2/gone"), 0755);
	mkdir_mode(P("root2/gone/m"), 0755);
	CHECK(mount("tmpfs", P("root2/gone/m"), "tmpfs", 0, "size=1m"));
	put_str(P("root2/gone/hosts"), "");
	CHECK(mount(P("hostsfile"), P("root2/gone/hosts"), NULL, MS_BIND, NULL));
	put_str(P("bindsrc/new"), "new\n");
	r = restore("root2", "D", &st, &err);
	ok(r == 0, "restore D: %s", ERRMSG(err));
	ok(lstat(P("root2/extra"), &s) < 0 && errno == ENOENT, "restore D removed the extra file");
	ok(lstat(P("root2/mnt/inside"), &s) == 0 && lstat(P("root2/mnt/inside2"), &s) == 0,
	   "restore D left the mount alone");
	ok(lstat(P("root2/gone/m"), &s) == 0 && lstat(P("root2/gone/hosts"), &s) == 0,
	   "restore D kept a directory holding mount points");
	v = list_dir(P("bindsrc"), &n);
	free_list(v, n);
	ok(n == 2 && lstat(P("root2/bind/new"), &s) == 0 &&
	       same_content(P("root2/hosts"), P("hostsfile")),
	   "restore D left the bind mounts alone");
	umount2(P("root2/gone/hosts"), MNT_DETACH);
	umount2(P("root2/hosts"), MNT_DETACH);
	umount2(P("root2/bind"), MNT_DETACH);
	umount2(P("root2/gone/m"), MNT_DETACH);
	umount2(P("root2/mnt"), MNT_DETACH);
}

static void test_enospc(void)
{
	cleanup_error tern_error *err = NULL;
	static char big[4 << 20];
	tern_snapfs_stats st;
	int r;

	mkdir_mode(P("root3"), 0755);
	memset(big, 'x', sizeof(big));
	put(P("root3/big"), big, sizeof(big), 0644);
	mkdir_mode(P("small"), 0755);
	if (mount("tmpfs", P("small"), "tmpfs", 0, "size=1m") < 0) {
		ok(0, "mount a small tmpfs: %s", strerror(errno));
		return;
	}
	r = record("root3", NULL, "small/E", &st, &err);
	is_int(r, -ENOSPC, "a full store: -ENOSPC");
	ok(err && strstr(err->msg, "`/big`") != NULL, "the message names the file: %s",
	   ERRMSG(err));
	umount2(P("small"), MNT_DETACH);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

int main(void)
{
	if (geteuid() != 0) {
		printf("ok 1 # SKIP needs root\n1..1\n");
		return 0;
	}
	/* mounts made here vanish with the process, even if it dies */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		printf("# no private mount namespace: %s\n", strerror(errno));
	umask(022);
	snprintf(base, sizeof(base), "/tmp/tern-snapfs.XXXXXX");
	if (mkdtemp(base) == NULL) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return done_testing();
	}
	mkdir_mode(P("outside"), 0755);
	build_root();
	ok(failures == 0, "the test rootfs is built");
	test_record_a();
	test_record_b();
	test_restore();
	test_mount_point();
	test_enospc();
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	ok(access(base, F_OK) < 0, "%s removed", base);
	return done_testing();
}
