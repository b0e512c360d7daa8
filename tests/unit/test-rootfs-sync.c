/* The rootfs sync (rootfs-sync.h) on real trees, as root: a base tree
 * copied to A (the source) and B (the target); A changes; manifest(B) ->
 * sender(A) -> applier(B), twice, and then the trees must be equal entry by
 * entry. Then hand-made hostile streams against a target with symlinks
 * pointing out of it: refused, naming the entry, nothing outside touched. */
#include "rootfs-sync.h"
#include "rootfs-entry.h"
#include "utils.h"

#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static char top[256];

/* top/rel, in one of a few rotating buffers. */
static const char *at(const char *fmt, ...)
{
	static char buf[8][PATH_MAX + 512];
	static int n;
	char rel[PATH_MAX];
	char *b = buf[n++ % 8];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(b, sizeof(buf[0]), "%s/%s", top, rel);
	return b;
}

static void sh(const char *fmt, ...)
{
	char cmd[PATH_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		printf("# command failed: %s\n", cmd);
}

static void put(const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || tern_write_all(fd, data, len) < 0)
		printf("# write %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void put_str(const char *path, const char *s)
{
	put(path, s, strlen(s), 0644);
}

/* `len` bytes of deterministic noise. */
static void put_noise(const char *path, size_t len, unsigned seed)
{
	char *b = malloc(len);
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (char)(seed >> 16);
	}
	put(path, b, len, 0755);
	free(b);
}

static int open_dir(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* ---- running the sync ---- */

struct pipe_ctx {
	tern_rootfs_applier *ap;
	size_t max_chunk;
};

/* Round 1's stream, kept for the corruption test. */
static struct rs_buf captured;
static bool capturing;

/* The transport: hands the chunk to the applier in awkward pieces, so
 * records are split at every kind of boundary. */
static int to_applier(void *data, const void *buf, size_t len, tern_error **err)
{
	static const size_t pieces[] = {1, 7, 4093, 70001, 3};
	struct pipe_ctx *c = data;
	const char *p = buf;
	static unsigned k;

	if (len > c->max_chunk)
		c->max_chunk = len;
	if (capturing)
		rs_buf_put(&captured, buf, len);
	while (len > 0) {
		size_t n = pieces[k++ % 5];
		int ret;
		if (n > len)
			n = len;
		ret = tern_rootfs_applier_feed(c->ap, p, n, err);
		if (ret < 0)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

static int round_trip(tern_rootfs_sender *s, tern_rootfs_applier *ap, tern_rootfs_stats *st,
		      size_t *max_chunk, tern_error **err)
{
	struct pipe_ctx c = {ap, 0};
	int ret = tern_rootfs_sender_round(s, to_applier, &c, st, err);

	if (ret == 0)
		ret = tern_rootfs_applier_finish_round(ap, err);
	if (max_chunk)
		*max_chunk = c.max_chunk;
	return ret;
}

/* ---- comparing trees ---- */

static char *cmp_root;
static char **cmp_paths;
static size_t cmp_n;

static int collect_path(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	cmp_paths = realloc(cmp_paths, (cmp_n + 1) * sizeof(*cmp_paths));
	cmp_paths[cmp_n++] = strdup(fpath + strlen(cmp_root));
	return 0;
}

static void list_tree(const char *root, char ***out, size_t *n)
{
	cmp_root = (char *)root;
	cmp_paths = NULL;
	cmp_n = 0;
	nftw(root, collect_path, 32, FTW_PHYS);
	*out = cmp_paths;
	*n = cmp_n;
}

static bool same_contents(const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t xl = 0, yl = 0;
	bool same = tern_read_file(a, &x, &xl, 128 << 20, NULL) == 0 &&
		    tern_read_file(b, &y, &yl, 128 << 20, NULL) == 0 && xl == yl &&
		    memcmp(x, y, xl) == 0;
	free(x);
	free(y);
	return same;
}

/* "name=value;..." of the xattrs of path, sorted, without security.selinux. */
static char *xattr_string(const char *path)
{
	char names[8192], val[8192];
	ssize_t n = llistxattr(path, names, sizeof(names));
	char *list[128];
	size_t k = 0, used = 0;
	char *out = calloc(1, 65536);

	for (char *p = names; n > 0 && p < names + n && k < 128; p += strlen(p) + 1)
		if (strcmp(p, "security.selinux") != 0)
			list[k++] = p;
	for (size_t i = 0; i < k; i++)
		for (size_t j = i + 1; j < k; j++)
			if (strcmp(list[i], list[j]) > 0) {
				char *t = list[i];
				list[i] = list[j];
				list[j] = t;
			}
	for (size_t i = 0; i < k; i++) {
		ssize_t vl = lgetxattr(path, list[i], val, sizeof(val));
		used += (size_t)snprintf(out + used, 65536 - used, "%s=", list[i]);
		for (ssize_t v = 0; v < vl && used < 65000; v++)
			used += (size_t)snprintf(out + used, 65536 - used, "%02x",
						 (unsigned char)val[v]);
		used += (size_t)snprintf(out + used, 65536 - used, ";");
	}
	return out;
}

static int compare_entry(const char *ra, const char *rb, const char *rel)
{
	char pa[PATH_MAX], pb[PATH_MAX], la[PATH_MAX] = "", lb[PATH_MAX] = "";
	struct stat a, b;
	char *xa, *xb;
	int bad = 0;

	snprintf(pa, sizeof(pa), "%s%s", ra, rel);
	snprintf(pb, sizeof(pb), "%s%s", rb, rel);
	if (lstat(pa, &a) < 0 || lstat(pb, &b) < 0) {
		printf("#   %s: missing on one side\n", rel);
		return 1;
	}
	if (a.st_mode != b.st_mode || a.st_uid != b.st_uid || a.st_gid != b.st_gid ||
	    a.st_rdev != b.st_rdev || a.st_nlink != b.st_nlink)
		bad = printf("#   %s: mode %o/%o owner %d:%d/%d:%d nlink %d/%d\n", rel, a.st_mode,
			     b.st_mode, a.st_uid, a.st_gid, b.st_uid, b.st_gid, (int)a.st_nlink,
			     (int)b.st_nlink);
	if (S_ISREG(a.st_mode) && (a.st_size != b.st_size || !same_contents(pa, pb)))
		bad = printf("#   %s: contents differ\n", rel);
	if (S_ISLNK(a.st_mode) && (readlink(pa, la, sizeof(la) - 1) < 0 ||
				   readlink(pb, lb, sizeof(lb) - 1) < 0 || strcmp(la, lb) != 0))
		bad = printf("#   %s: symlink targets '%s' / '%s'\n", rel, la, lb);
	if (a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)
		bad = printf("#   %s: mtime %ld.%09ld / %ld.%09ld\n", rel, a.st_mtim.tv_sec,
			     a.st_mtim.tv_nsec, b.st_mtim.tv_sec, b.st_mtim.tv_nsec);
	xa = xattr_string(pa);
	xb = xattr_string(pb);
	if (strcmp(xa, xb) != 0)
		bad = printf("#   %s: xattrs '%s' / '%s'\n", rel, xa, xb);
	free(xa);
	free(xb);
	return bad ? 1 : 0;
}

/* Hard links: names sharing an inode in A share one in B, and only they. */
static int compare_links(const char *ra, const char *rb, char **paths, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			char p[4][PATH_MAX];
			struct stat s[4];
			snprintf(p[0], PATH_MAX, "%s%s", ra, paths[i]);
			snprintf(p[1], PATH_MAX, "%s%s", ra, paths[j]);
			snprintf(p[2], PATH_MAX, "%s%s", rb, paths[i]);
			snprintf(p[3], PATH_MAX, "%s%s", rb, paths[j]);
			for (int k = 0; k < 4; k++)
				if (lstat(p[k], &s[k]) < 0)
					memset(&s[k], 0, sizeof(s[k]));
			if (S_ISDIR(s[0].st_mode) || s[0].st_nlink < 2)
				continue;
			if ((s[0].st_ino == s[1].st_ino) != (s[2].st_ino == s[3].st_ino)) {
				printf("#   %s and %s: hard links differ\n", paths[i], paths[j]);
				bad++;
			}
		}
	return bad;
}

static int compare_trees(const char *ra, const char *rb)
{
	char **pa, **pb;
	size_t na, nb;
	int bad = 0;

	list_tree(ra, &pa, &na);
	list_tree(rb, &pb, &nb);
	if (na != nb) {
		printf("#   %zu entries in A, %zu in B\n", na, nb);
		bad++;
		for (size_t i = 0; i < nb; i++) {
			char p[PATH_MAX];
			struct stat st;
			snprintf(p, sizeof(p), "%s%s", ra, pb[i]);
			if (lstat(p, &st) < 0)
				printf("#   only in B: %s\n", pb[i]);
		}
	}
	for (size_t i = 0; i < na; i++)
		bad += compare_entry(ra, rb, pa[i]);
	bad += compare_links(ra, rb, pa, na);
	for (size_t i = 0; i < na; i++)
		free(pa[i]);
	for (size_t i = 0; i < nb; i++)
		free(pb[i]);
	free(pa);
	free(pb);
	return bad;
}

/* ---- the trees ---- */

static void make_base(void)
{
	sh("mkdir -p %s %s %s %s %s %s %s %s", at("base/etc"), at("base/usr/bin"),
	   at("base/usr/lib"), at("base/data"), at("base/tree/a/b/c"), at("base/links"),
	   at("base/sym"), at("base/swap/dir-to-file/inner"));
	sh("mkdir -p %s %s", at("base/sparse"), at("base/dev"));
	put_str(at("base/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
	put_str(at("base/etc/hostname"), "base\n");
	put_noise(at("base/usr/bin/tool"), 100 << 10, 1);
	put_noise(at("base/usr/lib/libx.so"), 300 << 10, 2);
	put_str(at("base/data/keep.txt"), "keep\n");
	put_str(at("base/data/change.txt"), "version 1\n");
	put_str(at("base/data/resize.txt"), "short\n");
	put_str(at("base/data/delete.txt"), "delete me\n");
	put_str(at("base/data/rename-me.txt"), "rename me\n");
	put_str(at("base/data/meta.txt"), "only metadata changes\n");
	put_str(at("base/tree/a/b/c/deep.txt"), "deep\n");
	put_str(at("base/tree/a/file.txt"), "file\n");
	put_str(at("base/links/orig"), "linked twice\n");
	if (link(at("base/links/orig"), at("base/links/orig2")) < 0)
		printf("# link: %s\n", strerror(errno));
	put_str(at("base/links/single"), "one name, then two\n");
	put_str(at("base/links/split1"), "split me\n");
	if (link(at("base/links/split1"), at("base/links/split2")) < 0)
		printf("# link: %s\n", strerror(errno));
	if (symlink("../etc/passwd", at("base/sym/rel")) < 0 ||
	    symlink("nowhere", at("base/sym/dangling")) < 0)
		printf("# symlink: %s\n", strerror(errno));
	put_str(at("base/swap/file-to-dir"), "a file, then a directory\n");
	put_str(at("base/swap/dir-to-file/inner/x"), "inside a directory, then gone\n");
	put_str(at("base/sparse/later"), "a file that becomes sparse\n");
}

/* security.capability, v2: cap_net_bind_service in permitted, effective. */
static const unsigned char fcap[20] = {0x01, 0x00, 0x00, 0x02, 0x00, 0x04};

static bool can_fcap;

static void make_socket(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		printf("# socket %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void change_a_round1(void)
{
	struct timespec old[2] = {{0, UTIME_OMIT}, {1000000000, 123456789}};
	int fd;

	put_str(at("A/data/change.txt"), "version 2\n"); /* same size */
	put_str(at("A/data/resize.txt"), "a longer version of it\n");
	unlink(at("A/data/delete.txt"));
	rename(at("A/data/rename-me.txt"), at("A/data/renamed.txt"));
	sh("rm -rf %s", at("A/tree"));
	sh("mkdir -p %s", at("A/newdir/sub"));
	put_str(at("A/newdir/sub/new.txt"), "new\n");
	chmod(at("A/newdir"), 0750);
	/* Only metadata: mode, owner, xattr, and an mtime alone. */
	chmod(at("A/data/meta.txt"), 0600);
	if (chown(at("A/data/meta.txt"), 1000, 1000) < 0)
		printf("# chown: %s\n", strerror(errno));
	setxattr(at("A/data/meta.txt"), "user.test", "hello", 5, 0);
	setxattr(at("A/newdir"), "user.dir", "d", 1, 0);
	utimensat(AT_FDCWD, at("A/usr/lib/libx.so"), old, 0);
	can_fcap =
	    setxattr(at("A/usr/bin/tool"), "security.capability", fcap, sizeof(fcap), 0) == 0;
	/* Hard links: one added to an existing file, a new pair, a pair split
	 * (the second name replaced by a copy with the same contents). */
	link(at("A/links/single"), at("A/links/single-too"));
	put_str(at("A/links/two-a"), "a new file, two names\n");
	link(at("A/links/two-a"), at("A/links/two-b"));
	unlink(at("A/links/split2"));
	put_str(at("A/links/split2"), "split me\n");
	/* Sparse: 64 MiB with two small extents. */
	fd = open(at("A/sparse/big"), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (ftruncate(fd, 64 << 20) < 0 || pwrite(fd, "hello", 5, 1 << 20) != 5 ||
	    pwrite(fd, "world", 5, 40 << 20) != 5)
		printf("# sparse: %s\n", strerror(errno));
	close(fd);
	/* Symlinks: out of the tree (copied, never followed), retargeted, with
	 * an xattr of its own (trusted.*: user.* is not allowed on symlinks). */
	symlink("../../etc/passwd", at("A/sym/outside"));
	unlink(at("A/sym/rel"));
	symlink("../etc/hostname", at("A/sym/rel"));
	lsetxattr(at("A/sym/outside"), "trusted.sym", "on the link", 11, 0);
	mkfifo(at("A/dev/fifo"), 0640);
	make_socket(at("A/dev/sock"));
	if (mknod(at("A/dev/null"), S_IFCHR | 0666, makedev(1, 3)) < 0)
		printf("# mknod: %s\n", strerror(errno));
	/* A file becomes a directory and a directory a file. */
	unlink(at("A/swap/file-to-dir"));
	sh("mkdir -p %s", at("A/swap/file-to-dir"));
	put_str(at("A/swap/file-to-dir/child"), "child\n");
	sh("rm -rf %s", at("A/swap/dir-to-file"));
	put_str(at("A/swap/dir-to-file"), "now a file\n");
}

static void change_a_round2(void)
{
	int fd = open(at("A/data/change.txt"), O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || write(fd, "appended\n", 9) != 9)
		printf("# append: %s\n", strerror(errno));
	close(fd);
	/* Changed in place: both names see it, B must keep them linked. */
	fd = open(at("A/links/orig"), O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "LINKED", 6) != 6)
		printf("# write: %s\n", strerror(errno));
	close(fd);
	unlink(at("A/links/single-too"));
	/* A new name that sorts before the one B has: a LINK, not a copy. */
	link(at("A/usr/bin/tool"), at("A/usr/bin/a-tool"));
	sh("rm -rf %s", at("A/newdir/sub"));
	chmod(at("A/newdir"), 0700);
	fd = open(at("A/sparse/big"), O_WRONLY | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, "middle", 6, 20 << 20) != 6)
		printf("# sparse: %s\n", strerror(errno));
	close(fd);
	removexattr(at("A/data/meta.txt"), "user.test");
	setxattr(at("A/data/meta.txt"), "user.other", "x", 1, 0);
	unlink(at("A/sym/dangling"));
	mkdir(at("A/sym/dangling"), 0755);
	unlink(at("A/dev/fifo"));
	put_noise(at("A/usr/lib/libx.so"), 300 << 10, 3);
}

static void test_sync(void)
{
	int fa, fb, ret;
	tern_error *err = NULL;
	tern_rootfs_sender *s = NULL;
	tern_rootfs_applier *ap = NULL;
	tern_rootfs_stats st;
	char *manifest = NULL;
	size_t mlen = 0, chunk = 0;
	struct stat pw_before, pw_after, sb;

	make_base();
	sh("cp -a %s %s && cp -a %s %s", at("base"), at("A"), at("base"), at("B"));
	change_a_round1();
	stat("/etc/passwd", &pw_before);

	fa = open_dir(at("A"));
	fb = open_dir(at("B"));
	ret = tern_rootfs_manifest(fb, &manifest, &mlen, &err);
	ok(ret == 0, "manifest of B%s%s", err ? ": " : "", err ? err->msg : "");
	ret = tern_rootfs_sender_new(fa, manifest, mlen, &s, &err);
	ok(ret == 0, "sender for A against the manifest%s%s", err ? ": " : "", err ? err->msg : "");
	ret = tern_rootfs_applier_new(fb, &ap, &err);
	ok(ret == 0, "applier for B");
	if (s == NULL || ap == NULL)
		return;

	capturing = true;
	ret = round_trip(s, ap, &st, &chunk, &err);
	capturing = false;
	ok(ret == 0, "round 1%s%s", err ? ": " : "", err ? err->msg : "");
	printf("# round 1: %llu sent, %llu deleted, %llu data bytes, %llu stream bytes\n",
	       (unsigned long long)st.entries_sent, (unsigned long long)st.entries_deleted,
	       (unsigned long long)st.data_bytes, (unsigned long long)st.stream_bytes);
	ok(chunk <= (1 << 20), "chunks of at most 1 MiB (largest %zu)", chunk);
	ok(st.data_bytes < (64 << 10),
	   "unchanged files, and files whose metadata alone changed, send no data");
	ok(compare_trees(at("A"), at("B")) == 0, "after round 1, B is A");
	ok(lstat(at("B/sparse/big"), &sb) == 0 && sb.st_size == (64 << 20) &&
	       sb.st_blocks * 512 < (1 << 20),
	   "the sparse file stays sparse in B (%lld blocks)", (long long)sb.st_blocks);
	if (!can_fcap)
		printf("# security.capability could not be set here: not covered\n");
	{
		char t[PATH_MAX] = "";
		ok(readlink(at("B/sym/outside"), t, sizeof(t) - 1) > 0 &&
		       strcmp(t, "../../etc/passwd") == 0,
		   "a symlink out of the tree is copied as a symlink");
	}
	stat("/etc/passwd", &pw_after);
	ok(pw_before.st_mtim.tv_sec == pw_after.st_mtim.tv_sec &&
	       pw_before.st_ino == pw_after.st_ino,
	   "the host's /etc/passwd is untouched");

	change_a_round2();
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0, "round 2%s%s", err ? ": " : "", err ? err->msg : "");
	printf("# round 2: %llu sent, %llu deleted, %llu data bytes\n",
	       (unsigned long long)st.entries_sent, (unsigned long long)st.entries_deleted,
	       (unsigned long long)st.data_bytes);
	ok(compare_trees(at("A"), at("B")) == 0, "after round 2, B is A");
	ok(lstat(at("B/sparse/big"), &sb) == 0 && sb.st_blocks * 512 < (1 << 20),
	   "still sparse after an extent was added");
	ok(st.data_bytes < (400 << 10),
	   "round 2 sends only what changed (a new first name of a file is a link)");

	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0, "round 3 with nothing changed");
	ok(st.entries_sent == 0 && st.entries_deleted == 0 && st.data_bytes == 0 &&
	       st.stream_bytes < 64,
	   "an idle round sends nothing but its header (%llu bytes)",
	   (unsigned long long)st.stream_bytes);

	/* A fresh manifest of B now matches A: round 1 of a new sender is
	 * empty too (the hashes and inode ids of both sides agree). */
	free(manifest);
	tern_rootfs_sender_free(s);
	s = NULL;
	ret = tern_rootfs_manifest(fb, &manifest, &mlen, &err);
	if (ret == 0)
		ret = tern_rootfs_sender_new(fa, manifest, mlen, &s, &err);
	if (ret == 0)
		ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.entries_sent == 0 && st.entries_deleted == 0,
	   "a new manifest of the synced B: nothing to send (%llu sent, %llu deleted)",
	   (unsigned long long)st.entries_sent, (unsigned long long)st.entries_deleted);

	/* Manifest parsing: every truncation is refused, no byte flip crashes. */
	{
		int refused = 0, tries = 0;
		for (size_t n = 0; n < mlen; n += 1 + n / 512, tries++) {
			tern_rootfs_sender *t = NULL;
			if (tern_rootfs_sender_new(fa, manifest, n, &t, &err) < 0)
				refused++;
			tern_rootfs_sender_free(t);
		}
		ok(refused == tries, "truncated manifests are refused (%d/%d)", refused, tries);
		for (size_t i = 0; i < mlen && i < 4096; i++) {
			tern_rootfs_sender *t = NULL;
			manifest[i] ^= 0x5a;
			tern_rootfs_sender_new(fa, manifest, mlen, &t, &err);
			tern_rootfs_sender_free(t);
			manifest[i] ^= 0x5a;
		}
		ok(1, "corrupted manifests do not crash the parser");
	}

	tern_error_free(err);
	free(manifest);
	tern_rootfs_sender_free(s);
	tern_rootfs_applier_free(ap);
	close(fa);
	close(fb);
}

/* ---- undo ---- */

/* Both rounds applied to B with an undo directory, then undone: B is the
 * untouched copy C again, entry by entry (contents, owners, modes, xattrs,
 * mtimes of files and directories, hard links). Then an applier killed
 * half way through a stream: its log undoes what it did. */
static void test_undo(void)
{
	tern_error *err = NULL;
	tern_rootfs_sender *s[2] = {NULL, NULL};
	tern_rootfs_applier *ap[2] = {NULL, NULL};
	tern_rootfs_stats st;
	int fa, fb, fb2, fu, fu3, ret = 0;

	/* (test_corrupt_stream compares test_sync's A and B) */
	sh("mv %s %s && mv %s %s", at("A"), at("A.sync"), at("B"), at("B.sync"));
	sh("cp -a %s %s && cp -a %s %s && cp -a %s %s && cp -a %s %s", at("base"), at("A"),
	   at("base"), at("B"), at("base"), at("B2"), at("base"), at("C"));
	sh("mkdir -m 0700 %s %s %s", at("undo1"), at("undo2"), at("undo3"));
	change_a_round1();
	fa = open_dir(at("A"));
	fb = open_dir(at("B"));
	fb2 = open_dir(at("B2"));
	fu = open_dir(at("undo1"));
	fu3 = open_dir(at("undo3"));
	/* B: the rounds, then undone; B2: the rounds, then the undo
	 * directory dropped (a migration that succeeded) */
	for (int i = 0; i < 2 && ret == 0; i++) {
		char *manifest = NULL;
		size_t mlen = 0;
		int f = i ? fb2 : fb;
		ret = tern_rootfs_manifest(f, &manifest, &mlen, &err);
		if (ret == 0)
			ret = tern_rootfs_sender_new(fa, manifest, mlen, &s[i], &err);
		if (ret == 0)
			ret = tern_rootfs_applier_new(f, &ap[i], &err);
		if (ret == 0)
			ret = tern_rootfs_applier_set_undo(ap[i], i ? fu3 : fu, &err);
		free(manifest);
	}
	ok(ret == 0, "appliers with an undo directory%s%s", err ? ": " : "", err ? err->msg : "");
	if (ret < 0)
		return;
	for (int i = 0; i < 2 && ret == 0; i++)
		ret = round_trip(s[i], ap[i], &st, NULL, &err);
	change_a_round2();
	for (int i = 0; i < 2 && ret == 0; i++)
		ret = round_trip(s[i], ap[i], &st, NULL, &err);
	ok(ret == 0, "two rounds with an undo directory%s%s", err ? ": " : "", err ? err->msg : "");
	for (int i = 0; i < 2; i++) {
		tern_rootfs_applier_free(ap[i]);
		tern_rootfs_sender_free(s[i]);
	}
	sh("rm -rf %s", at("undo3"));
	ok(compare_trees(at("A"), at("B2")) == 0,
	   "with the undo directory dropped, B2 is A (the same hard links too)");
	ret = tern_rootfs_undo(fb, fu, &err);
	ok(ret == 0, "the undo%s%s", err ? ": " : "", err ? err->msg : "");
	ok(compare_trees(at("C"), at("B")) == 0, "after the undo, B is as it was");
	{
		char **names = NULL;
		size_t n = 0;
		rs_list_dir(fu, &names, &n);
		ok(n == 1 && strcmp(names[0], "log") == 0,
		   "every entry put aside went back (%zu left in the undo directory)", n);
		tern_strv_freep(&names);
	}
	close(fb2);
	close(fu3);

	/* killed half way through round 1 (captured by test_sync: base -> A) */
	{
		int fu2 = open_dir(at("undo2"));
		pid_t pid;
		int status = -1;
		size_t half = captured.len / 2;
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			tern_rootfs_applier *k = NULL;
			if (tern_rootfs_applier_new(fb, &k, &err) < 0 ||
			    tern_rootfs_applier_set_undo(k, fu2, &err) < 0 ||
			    tern_rootfs_applier_feed(k, captured.data, half, &err) < 0)
				_exit(1);
			_exit(0); /* no clean up: as if killed */
		}
		waitpid(pid, &status, 0);
		ok(status == 0 && compare_trees(at("C"), at("B")) != 0,
		   "a killed applier changed B (%zu of %zu stream bytes)", half, captured.len);
		ret = tern_rootfs_undo(fb, fu2, &err);
		ok(ret == 0, "the undo from the killed applier's log%s%s", err ? ": " : "",
		   err ? err->msg : "");
		ok(compare_trees(at("C"), at("B")) == 0,
		   "after it, B is as it was (no temporary file left either)");
		close(fu2);
	}
	tern_error_free(err);
	close(fa);
	close(fb);
	close(fu);
	sh("rm -rf %s %s && mv %s %s && mv %s %s", at("A"), at("B"), at("A.sync"), at("A"),
	   at("B.sync"), at("B"));
}

/* ---- hostile streams ---- */

static void b_u32(struct rs_buf *b, uint32_t v)
{
	unsigned char c[4] = {v >> 24, v >> 16, v >> 8, v};
	rs_buf_put(b, c, 4);
}

static void b_u64(struct rs_buf *b, uint64_t v)
{
	b_u32(b, (uint32_t)(v >> 32));
	b_u32(b, (uint32_t)v);
}

static void b_str(struct rs_buf *b, const char *s, size_t n)
{
	b_u32(b, (uint32_t)n);
	rs_buf_put(b, s, n);
}

static void b_record(struct rs_buf *b, char type, const struct rs_buf *body)
{
	rs_buf_put(b, &type, 1);
	b_u32(b, (uint32_t)body->len);
	rs_buf_put(b, body->data, body->len);
}

static void b_header(struct rs_buf *b, uint32_t version)
{
	struct rs_buf body = {0};
	rs_buf_put(&body, "tern-rootfs-sync", 16);
	b_u32(&body, version);
	b_record(b, 'H', &body);
	rs_buf_free(&body);
}

/* An ENTRY or META record written by hand (path given with its length, so
 * it may hold a NUL). */
static void b_entry(struct rs_buf *b, char type, const char *path, size_t plen, uint32_t mode,
		    uint64_t size, uint32_t maj, uint32_t min, const char *link)
{
	struct rs_buf body = {0};
	b_str(&body, path, plen);
	b_u32(&body, mode);
	b_u32(&body, 0);
	b_u32(&body, 0);
	b_u64(&body, size);
	b_u64(&body, 1700000000);
	b_u32(&body, 0);
	b_u32(&body, maj);
	b_u32(&body, min);
	b_str(&body, link ? link : "", link ? strlen(link) : 0);
	b_u32(&body, 0);
	b_record(b, type, &body);
	rs_buf_free(&body);
}

static void b_data(struct rs_buf *b, uint64_t off, const char *data)
{
	struct rs_buf body = {0};
	b_u64(&body, off);
	rs_buf_put(&body, data, strlen(data));
	b_record(b, 'D', &body);
	rs_buf_free(&body);
}

static void b_empty(struct rs_buf *b, char type)
{
	struct rs_buf body = {0};
	b_record(b, type, &body);
}

static void b_paths(struct rs_buf *b, char type, const char *path, const char *target)
{
	struct rs_buf body = {0};
	b_str(&body, path, strlen(path));
	if (target)
		b_str(&body, target, strlen(target));
	b_record(b, type, &body);
	rs_buf_free(&body);
}

/* A regular file "path" holding "hi". */
static void b_file(struct rs_buf *b, const char *path)
{
	b_entry(b, 'E', path, strlen(path), S_IFREG | 0644, 2, 0, 0, NULL);
	b_data(b, 0, "hi");
	b_empty(b, 'C');
}

/* Feed the stream to a fresh applier on S; 0 if it was applied. The
 * error message, if any, goes to *msg. */
static int apply_stream(const struct rs_buf *b, char **msg)
{
	tern_rootfs_applier *ap = NULL;
	tern_error *err = NULL;
	int fs = open_dir(at("S")), ret;

	ret = tern_rootfs_applier_new(fs, &ap, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_feed(ap, b->data, b->len, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_finish_round(ap, &err);
	*msg = err && err->msg ? strdup(err->msg) : strdup("");
	tern_error_free(err);
	tern_rootfs_applier_free(ap);
	close(fs);
	return ret;
}

static bool outside_intact(void)
{
	char **paths;
	size_t n;
	char *s = NULL;
	size_t len = 0;
	bool good;

	list_tree(at("outside"), &paths, &n);
	good = n == 2 && tern_read_file(at("outside/secret"), &s, &len, 0, NULL) == 0 && len == 6 &&
	       memcmp(s, "s3cret", 6) == 0;
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(s);
	return good && access("/tmp/tern-rootfs-sync-abs", F_OK) != 0;
}

/* The stream must be refused with a message naming `name`. */
static void refused(const struct rs_buf *b, const char *name, const char *what)
{
	char *msg = NULL;
	int ret = apply_stream(b, &msg);

	ok(ret < 0 && (name == NULL || strstr(msg, name) != NULL) && outside_intact(),
	   "refused: %s (%s)", what, msg);
	free(msg);
}

#define STREAM(...)                                                                                \
	do {                                                                                       \
		rs_buf_free(&b);                                                                   \
		b_header(&b, RS_VERSION);                                                          \
		__VA_ARGS__;                                                                       \
	} while (0)

static void test_hostile(const char *variant)
{
	struct rs_buf b = {0};
	char *msg = NULL;
	struct stat st;

	printf("# hostile streams, %s\n", variant);
	sh("rm -rf %s %s && mkdir -p %s %s", at("S"), at("outside"), at("S/dir"), at("outside"));
	put_str(at("outside/secret"), "s3cret");
	symlink(at("outside"), at("S/evil"));
	symlink("../outside", at("S/evilrel"));
	symlink(at("outside/secret"), at("S/evilfile"));

	STREAM(b_file(&b, "dir/ok"));
	ok(apply_stream(&b, &msg) == 0 && access(at("S/dir/ok"), F_OK) == 0,
	   "a well-formed hand-made stream applies (%s)", msg);
	free(msg);

	STREAM(b_file(&b, "../outside/x"));
	refused(&b, "../outside/x", "a .. component");
	STREAM(b_file(&b, "dir/../../outside/x"));
	refused(&b, "dir/../../outside/x", "a .. component inside");
	STREAM(b_file(&b, "/tmp/tern-rootfs-sync-abs"));
	refused(&b, "/tmp/tern-rootfs-sync-abs", "an absolute path");
	STREAM(b_file(&b, "evil/x"));
	refused(&b, "evil/x", "through a symlink to an absolute path outside");
	STREAM(b_file(&b, "evilrel/x"));
	refused(&b, "evilrel/x", "through a symlink to ../outside");
	STREAM(b_file(&b, "dir//x"));
	refused(&b, "dir//x", "an empty component");
	STREAM(b_file(&b, "dir/./x"));
	refused(&b, "dir/./x", "a . component");
	STREAM(b_file(&b, "dir/"));
	refused(&b, "dir/", "a trailing slash");
	STREAM(b_entry(&b, 'E', "dir/a\0b", 7, S_IFREG | 0644, 0, 0, 0, NULL); b_empty(&b, 'C'));
	refused(&b, NULL, "a NUL in a path");
	STREAM(b_entry(&b, 'M', "evilfile", 8, S_IFREG | 0777, 0, 0, 0, NULL));
	refused(&b, "evilfile", "metadata for a symlink as if it were its target");
	STREAM(b_entry(&b, 'M', "evil/secret", 11, S_IFREG | 0777, 0, 0, 0, NULL));
	refused(&b, "evil/secret", "metadata through a symlink");
	STREAM(b_paths(&b, 'X', "evil/secret", NULL));
	refused(&b, "evil/secret", "a deletion through a symlink");
	STREAM(b_paths(&b, 'L', "dir/l", "evil/secret"));
	refused(&b, "dir/l", "a hard link to a file through a symlink");
	STREAM(b_paths(&b, 'L', "dir/l", "../outside/secret"));
	refused(&b, "dir/l", "a hard link to a file outside");
	STREAM(b_paths(&b, 'X', "", NULL));
	refused(&b, NULL, "deleting the rootfs itself");
	STREAM(b_entry(&b, 'E', "dir/f", 5, S_IFREG | 0644, 4, 0, 0, NULL);
	       b_data(&b, 2, "too long"); b_empty(&b, 'C'));
	refused(&b, "dir/f", "data past the file's size");
	STREAM(b_entry(&b, 'E', "dir/f", 5, S_IFREG | 0644, 4, 0, 0, NULL);
	       b_data(&b, UINT64_MAX - 1, "xx"); b_empty(&b, 'C'));
	refused(&b, "dir/f", "data at an offset that overflows");
	STREAM(b_entry(&b, 'E', "dir/f", 5, S_IFREG | 0644, 4, 0, 0, NULL); b_file(&b, "dir/g"));
	refused(&b, "dir/f", "another entry inside a file's data");
	STREAM(b_entry(&b, 'E', "dir/f", 5, S_IFREG | 0644, 4, 0, 0, NULL));
	refused(&b, "dir/f", "the round ends inside a file");
	STREAM(b_data(&b, 0, "x"));
	refused(&b, NULL, "data outside a file");
	STREAM(b_entry(&b, 'E', "dir/sda", 7, S_IFBLK | 0666, 0, 8, 0, NULL));
	refused(&b, "dir/sda", "a block device the policy does not allow");
	STREAM(b_entry(&b, 'E', "dir/link", 8, S_IFLNK | 0777, 0, 0, 0, NULL));
	refused(&b, "dir/link", "a symlink without a target");
	STREAM(rs_buf_put(&b, "E\xff\xff\xff\xff", 5));
	refused(&b, NULL, "a record of 4 GiB");
	STREAM(rs_buf_put(&b, "E\0\0\0\x10partial", 12));
	refused(&b, NULL, "the round ends inside a record");
	rs_buf_free(&b);
	b_file(&b, "dir/noheader");
	refused(&b, NULL, "a stream without its header");
	rs_buf_free(&b);
	b_header(&b, 99);
	refused(&b, "version 99", "another version");

	/* Deleting the symlink itself is fine: its target is left alone. */
	STREAM(b_paths(&b, 'X', "evil", NULL));
	ok(apply_stream(&b, &msg) == 0 && lstat(at("S/evil"), &st) < 0 && outside_intact(),
	   "deleting a symlink to a directory outside removes the link only (%s)", msg);
	free(msg);
	/* Replacing a symlink by a file replaces the link, not its target. */
	STREAM(b_file(&b, "evilfile"));
	ok(apply_stream(&b, &msg) == 0 && lstat(at("S/evilfile"), &st) == 0 &&
	       S_ISREG(st.st_mode) && outside_intact(),
	   "a file over a symlink replaces the symlink (%s)", msg);
	free(msg);
	rs_buf_free(&b);
}

static int count_fds(void)
{
	char **paths;
	size_t n;

	list_tree("/proc/self/fd", &paths, &n);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return (int)n;
}

/* Round 1's stream with one byte changed, many times over, into a scratch
 * copy of the base: errors are fine, crashes and writes elsewhere are not. */
static void test_corrupt_stream(void)
{
	int refused = 0, runs = 0;

	sh("cp -a %s %s", at("base"), at("F"));
	for (size_t i = 0; i < captured.len; i += 7, runs++) {
		tern_rootfs_applier *ap = NULL;
		tern_error *err = NULL;
		int fd = open_dir(at("F"));

		captured.data[i] ^= 0x21;
		if (tern_rootfs_applier_new(fd, &ap, &err) < 0 ||
		    tern_rootfs_applier_feed(ap, captured.data, captured.len, &err) < 0 ||
		    tern_rootfs_applier_finish_round(ap, &err) < 0)
			refused++;
		captured.data[i] ^= 0x21;
		tern_rootfs_applier_free(ap);
		tern_error_free(err);
		close(fd);
	}
	ok(runs > 0 && compare_trees(at("A"), at("B")) == 0 && outside_intact(),
	   "%d corrupted streams (%d refused): no crash, nothing outside the target changed", runs,
	   refused);
	rs_buf_free(&captured);
}

/* ---- deltas ---- */

/* A changed regular file the target holds an earlier version of: only the
 * blocks that differ cross (rootfs-delta.h), patched in place, and the
 * undo puts the original back. */
static void test_delta(void)
{
	tern_error *err = NULL;
	tern_rootfs_sender *s = NULL;
	tern_rootfs_applier *ap = NULL;
	tern_rootfs_stats st = {0};
	char *manifest = NULL;
	size_t mlen = 0;
	int fa, fb, fu, ret;

	sh("mkdir -p %s/D/A %s/D/undo && chmod 0700 %s/D/undo", top, top, top);
	put_noise(at("D/A/big"), 1000000, 7); /* 15 blocks and a part */
	put_str(at("D/A/small"), "small\n");
	put_noise(at("D/A/linked"), 200000, 8);
	sh("cp -a %s %s && cp -a %s %s", at("D/A"), at("D/B"), at("D/A"), at("D/C"));
	/* B's linked shares its inode with a file outside B (an image
	 * store's hard link): never patched in place */
	sh("ln %s %s && cp %s %s", at("D/B/linked"), at("D/store"), at("D/store"),
	   at("D/store.orig"));
	fa = open_dir(at("D/A"));
	fb = open_dir(at("D/B"));
	fu = open_dir(at("D/undo"));
	ret = tern_rootfs_manifest(fb, &manifest, &mlen, &err);
	if (ret == 0)
		ret = tern_rootfs_sender_new(fa, manifest, mlen, &s, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_new(fb, &ap, &err);
	if (ret == 0)
		ret = tern_rootfs_applier_set_undo(ap, fu, &err);
	free(manifest);
	ok(ret == 0, "a sender and an applier with an undo%s%s", err ? ": " : "",
	   err ? err->msg : "");
	if (ret < 0)
		return;

	sh("head -c 5000 /dev/urandom >> %s && head -c 10 /dev/urandom >> %s", at("D/A/big"),
	   at("D/A/linked"));
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes == 5000 + 200010 && compare_trees(at("D/A"), at("D/B")) == 0,
	   "an append sends only the new tail, a file with another name outside the tree "
	   "crosses whole (%llu data bytes of 5000 + 200010)",
	   (unsigned long long)st.data_bytes);
	ok(same_contents(at("D/store"), at("D/store.orig")),
	   "the file outside the tree that shared the inode is untouched");
	sh("printf XXXXXXXXXX | dd of=%s bs=1 seek=300000 conv=notrunc status=none", at("D/A/big"));
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes == 65536 && compare_trees(at("D/A"), at("D/B")) == 0,
	   "10 bytes changed in the middle send their block (%llu data bytes)",
	   (unsigned long long)st.data_bytes);
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes == 0 && st.entries_sent == 0,
	   "nothing changed: nothing sent (%llu entries)", (unsigned long long)st.entries_sent);
	sh("truncate -s 800000 %s", at("D/A/big"));
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes <= 65536 && compare_trees(at("D/A"), at("D/B")) == 0,
	   "a truncated file is cut on the target (%llu data bytes)",
	   (unsigned long long)st.data_bytes);
	sh("cp %s %s && truncate -s 1000 %s", at("D/A/big"), at("D/A/big2"), at("D/A/big"));
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes == 800000 + 1000 && compare_trees(at("D/A"), at("D/B")) == 0,
	   "a new file, and one cut to less than it cut off, cross whole (%llu data bytes)",
	   (unsigned long long)st.data_bytes);
	sh("truncate -s 3000000 %s && printf end >> %s", at("D/A/big"), at("D/A/big"));
	ret = round_trip(s, ap, &st, NULL, &err);
	ok(ret == 0 && st.data_bytes <= 65536 && compare_trees(at("D/A"), at("D/B")) == 0,
	   "extended with a hole: the zeros do not cross (%llu data bytes)",
	   (unsigned long long)st.data_bytes);
	tern_rootfs_applier_free(ap);
	tern_rootfs_sender_free(s);
	ret = tern_rootfs_undo(fb, fu, &err);
	sh("rm %s", at("D/store")); /* (C's copy has no such link) */
	ok(ret == 0 && compare_trees(at("D/C"), at("D/B")) == 0,
	   "the undo puts the patched file back byte for byte, its inode too%s%s", err ? ": " : "",
	   err ? err->msg : "");
	close(fa);
	close(fb);
	close(fu);
}

int main(void)
{
	int fds;

	if (geteuid() != 0) {
		printf("1..0 # SKIP needs root (chown, mknod, security.capability)\n");
		return 0;
	}
	snprintf(top, sizeof(top), "/var/tmp/tern-test-rootfs-sync.XXXXXX");
	if (mkdtemp(top) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	fds = count_fds();
	test_sync();
	test_undo();
	test_delta();
	test_hostile("openat2");
	rs_no_openat2 = true;
	test_hostile("the O_NOFOLLOW walk (no openat2)");
	rs_no_openat2 = false;
	test_corrupt_stream();
	is_int(count_fds(), fds, "no file descriptor leaked");
	sh("rm -rf %s", top);
	return done_testing();
}
