/* tern_open_in_root / tern_mkdir_in_root against a hostile tree: absolute
 * symlinks, ../ escapes, loops. Nothing here may touch anything outside the
 * temporary "root" directory, which is checked through a sibling "host"
 * directory that the symlinks aim at. */
#include "path-resolve.h"
#include "utils.h"

#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[256];

static char *at(const char *rel)
{
	static char buf[4][PATH_MAX + 512];
	static int n;
	char *b = buf[n++ % 4];
	snprintf(b, sizeof(buf[0]), "%s/%s", base, rel);
	return b;
}

static bool exists(const char *rel)
{
	struct stat st;
	return lstat(at(rel), &st) == 0;
}

static bool is_dir(const char *rel)
{
	struct stat st;
	return lstat(at(rel), &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_reg(const char *rel)
{
	struct stat st;
	return lstat(at(rel), &st) == 0 && S_ISREG(st.st_mode);
}

/* Same inode as root/rel? */
static bool fd_is(int fd, const char *rel)
{
	struct stat a, b;
	if (fd < 0 || fstat(fd, &a) < 0 || lstat(at(rel), &b) < 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void rm_rf(const char *path)
{
	char *cmd = tern_strdup_printf("rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "# cleanup of %s failed\n", path);
	free(cmd);
}

int main(void)
{
	tern_error *err = NULL;
	char buf[64];
	int rootfd, fd;

	snprintf(base, sizeof(base), "/tmp/tern-test-path-resolve.XXXXXX");
	if (mkdtemp(base) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	/* base/root is the rootfs; base/host stands for the host. */
	mkdir(at("root"), 0755);
	mkdir(at("host"), 0755);
	mkdir(at("root/etc"), 0755);
	mkdir(at("root/host"), 0755);
	close(open(at("root/etc/passwd"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	close(open(at("host/secret"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	(void)!symlink(at("host"), at("root/abs"));	      /* absolute, at the "host" */
	(void)!symlink("../../../../../host", at("root/up")); /* dot-dot escape */
	(void)!symlink("/etc", at("root/etclink"));
	(void)!symlink("loop2", at("root/loop1"));
	(void)!symlink("loop1", at("root/loop2"));
	(void)!symlink("/nonexistent-target/sub", at("root/dangling"));
	(void)!symlink("../host/newdir", at("root/etc/rel"));

	rootfd = open(at("root"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	ok(rootfd >= 0, "open the test root");

	is_str(tern_fd_path(7, buf, sizeof(buf)), "/proc/self/fd/7", "tern_fd_path");

	/* --- tern_open_in_root --- */
	fd = tern_open_in_root(rootfd, "/etc/passwd", O_RDONLY, 0, &err);
	ok(fd_is(fd, "root/etc/passwd"), "plain path opens inside the root");
	if (fd >= 0)
		close(fd);

	fd = tern_open_in_root(rootfd, "etclink/passwd", O_PATH, 0, &err);
	ok(fd_is(fd, "root/etc/passwd"), "absolute symlink /etc resolves inside the root");
	if (fd >= 0)
		close(fd);

	fd = tern_open_in_root(rootfd, "/abs/secret", O_PATH, 0, &err);
	is_int(fd, -ENOENT, "absolute symlink to the host path does not reach the host");
	ok(err != NULL && strstr(err->msg, "/abs/secret") != NULL, "error names the path: %s",
	   err ? err->msg : "(none)");
	tern_error_freep(&err);

	fd = tern_open_in_root(rootfd, "/up/secret", O_PATH, 0, &err);
	is_int(fd, -ENOENT, "../../ symlink does not reach the host");
	tern_error_freep(&err);

	fd = tern_open_in_root(rootfd, "../../../host/secret", O_PATH, 0, &err);
	is_int(fd, -ENOENT, "literal ../ in the path stays in the root");
	tern_error_freep(&err);

	fd = tern_open_in_root(rootfd, "loop1", O_PATH, 0, &err);
	is_int(fd, -ELOOP, "symlink loop is ELOOP");
	tern_error_freep(&err);

	fd = tern_open_in_root(rootfd, "/proc/self/root/etc", O_PATH, 0, &err);
	ok(fd < 0, "magic links are not followed (/proc does not exist in the root)");
	tern_error_freep(&err);

	/* --- tern_mkdir_in_root --- */
	fd = tern_mkdir_in_root(rootfd, "/a/b/c", false, &err);
	ok(fd >= 0 && is_dir("root/a/b/c"), "mkdir -p of a new path");
	ok(fd_is(fd, "root/a/b/c"), "returned fd is the new directory");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/a/b/c", false, &err);
	ok(fd_is(fd, "root/a/b/c"), "existing directory is returned");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/a/file", true, &err);
	ok(is_reg("root/a/file") && fd_is(fd, "root/a/file"), "last_is_file creates a file");
	if (fd >= 0) {
		int flags = fcntl(fd, F_GETFL);
		ok((flags & O_PATH) && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "fd is O_PATH|O_CLOEXEC");
		close(fd);
	}

	fd = tern_mkdir_in_root(rootfd, "/abs/x", false, &err);
	ok(fd >= 0 && is_dir("root/") && !exists("host/x"),
	   "absolute symlink: nothing created on the host");
	char *under_root = tern_strdup_printf("root%s/x", at("host"));
	ok(is_dir(under_root), "created under the root instead");
	free(under_root);
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/up/y", false, &err);
	ok(fd >= 0 && !exists("host/y") && is_dir("root/host/y"),
	   "../ symlink: created at root/host/y, not on the host");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/etc/rel/z", false, &err);
	ok(fd >= 0 && !exists("host/newdir") && is_dir("root/host/newdir/z"),
	   "relative ../ symlink in a subdirectory is clamped at the root");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/../../../../host/w", true, &err);
	ok(fd >= 0 && !exists("host/w") && is_reg("root/host/w"),
	   "literal ../ clamped at the root");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/dangling", false, &err);
	ok(fd >= 0 && is_dir("root/nonexistent-target/sub") && !exists("../nonexistent-target"),
	   "dangling absolute symlink: its target is created inside the root");
	if (fd >= 0)
		close(fd);
	ok(access("/nonexistent-target", F_OK) != 0, "nothing created at the real /");

	fd = tern_mkdir_in_root(rootfd, "/loop1/x", false, &err);
	is_int(fd, -ELOOP, "symlink loop: ELOOP");
	ok(err != NULL && strstr(err->msg, "Too many levels") != NULL, "loop message: %s",
	   err ? err->msg : "(none)");
	tern_error_freep(&err);

	fd = tern_mkdir_in_root(rootfd, "/etc/passwd/x", false, &err);
	is_int(fd, -ENOTDIR, "a file in the middle of the path: ENOTDIR");
	tern_error_freep(&err);

	fd = tern_mkdir_in_root(rootfd, "/", false, &err);
	ok(fd_is(fd, "root"), "\"/\" is the root itself");
	if (fd >= 0)
		close(fd);

	fd = tern_mkdir_in_root(rootfd, "/./a//b/../b/./c/", false, &err);
	ok(fd_is(fd, "root/a/b/c"), "., .. and // inside the path");
	if (fd >= 0)
		close(fd);

	close(rootfd);
	rm_rf(base);
	return done_testing();
}
