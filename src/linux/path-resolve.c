/* Resolving paths inside a container rootfs.
 *
 * The rootfs belongs to the image author, not to us: any component of a
 * config.json path (a mount destination, a device, a masked path) may be a
 * symlink planted to point at the host ("/etc", "../../../../etc"). Opening
 * is done by the kernel with RESOLVE_IN_ROOT, which treats the root fd as
 * "/" for absolute symlinks and "..". Creating is done by our own walk, one
 * component at a time, never following a symlink with the kernel's help:
 * a symlink is read and spliced into the remaining path, the way the kernel
 * would resolve it if the rootfs were "/". */
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's own limit on symlinks followed in one lookup. */
#define MAX_SYMLINKS 40

static int openat2_in_root(int rootfd, const char *path, int flags, mode_t mode, __u64 resolve)
{
	struct open_how how = {
	    .flags = (__u64)(flags | O_CLOEXEC),
	    .resolve = resolve,
	};
	int fd;

	/* openat2 refuses a mode without O_CREAT/O_TMPFILE. */
	if (flags & (O_CREAT | __O_TMPFILE))
		how.mode = mode;
	if (*path == '\0')
		return -ENOENT;
	/* EAGAIN: a rename raced with the lookup; the kernel asks us to retry. */
	for (int tries = 0; tries < 128; tries++) {
		fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
		if (fd >= 0)
			return fd;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
	return -EAGAIN;
}

int tern_open_in_root(int rootfd, const char *path, int flags, mode_t mode, tern_error **err)
{
	int fd =
	    openat2_in_root(rootfd, path, flags, mode, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return tern_error_make(err, -fd, "open `%s` inside the rootfs", path);
	return fd;
}

const char *tern_fd_path(int fd, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
	return buf;
}

/* Drop the last component of an absolute, symlink-free path ("/" stays). */
static void path_pop(char *done)
{
	char *slash = strrchr(done, '/');
	if (slash != NULL)
		*slash = '\0';
}

/* Read the symlink `name` in `dirfd` and build the path still to walk:
 * its target followed by `rest`. An absolute target restarts at the root
 * (signalled through *absolute). */
static int splice_symlink(int dirfd, const char *name, const char *rest, char **todo,
			  bool *absolute)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);

	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOENT;
	target[n] = '\0';
	*absolute = target[0] == '/';
	*todo = tern_strdup_printf("%s/%s", target, rest);
	return 0;
}

/* Create `name` in `dirfd`: a directory, or an empty regular file. EEXIST is
 * fine (someone else or a dangling symlink: the caller looks again). */
static int create_entry(int dirfd, const char *name, bool file)
{
	if (file) {
		int fd =
		    openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return errno == EEXIST ? 0 : -errno;
		close(fd);
		return 0;
	}
	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int tern_mkdir_in_root(int rootfd, const char *path, bool last_is_file, tern_error **err)
{
	cleanup_free char *todo = tern_xstrdup(path);
	cleanup_free char *done = tern_xmalloc0(strlen(path) + 2);
	size_t done_cap = strlen(path) + 2;
	cleanup_close int dirfd = -1;
	int symlinks = 0, ret;

	/* `done` is the resolved, symlink-free part (empty means the root);
	 * dirfd is an O_PATH fd on it. */
	dirfd = openat2_in_root(rootfd, "/", O_PATH | O_DIRECTORY, 0, RESOLVE_IN_ROOT);
	if (dirfd < 0)
		return tern_error_make(err, -dirfd, "open the rootfs");

	for (;;) {
		char *p = todo, *slash, *name;
		cleanup_close int fd = -1;
		struct stat st;
		bool last;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		name = p;
		slash = strchr(p, '/');
		if (slash != NULL) {
			*slash = '\0';
			p = slash + 1;
			while (*p == '/')
				p++;
		} else {
			p = name + strlen(name);
		}
		last = *p == '\0';

		if (strcmp(name, ".") == 0) {
			memmove(todo, p, strlen(p) + 1);
			continue;
		}
		if (strcmp(name, "..") == 0) {
			/* `done` has no symlinks, so ".." is lexical; at the
			 * root it stays at the root, as in RESOLVE_IN_ROOT. */
			path_pop(done);
			tern_closep(&dirfd);
			dirfd = openat2_in_root(rootfd, *done ? done : "/", O_PATH | O_DIRECTORY, 0,
						RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
			if (dirfd < 0)
				return tern_error_make(err, -dirfd, "open `%s` inside the rootfs",
						       *done ? done : "/");
			memmove(todo, p, strlen(p) + 1);
			continue;
		}

		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			ret = create_entry(dirfd, name, last && last_is_file);
			if (ret < 0)
				return tern_error_make(
				    err, -ret, "create `%s/%s` inside the rootfs", done, name);
			fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0)
			return tern_error_make(err, errno, "open `%s/%s` inside the rootfs", done,
					       name);
		if (fstat(fd, &st) < 0)
			return tern_error_make(err, errno, "stat `%s/%s`", done, name);

		if (S_ISLNK(st.st_mode)) {
			char *next = NULL;
			bool absolute = false;

			if (++symlinks > MAX_SYMLINKS)
				return tern_error_make(err, ELOOP, "resolve `%s` inside the rootfs",
						       path);
			ret = splice_symlink(dirfd, name, p, &next, &absolute);
			if (ret < 0)
				return tern_error_make(err, -ret, "read the symlink `%s/%s`", done,
						       name);
			free(todo);
			todo = next;
			if (absolute) {
				done[0] = '\0';
				tern_closep(&dirfd);
				dirfd = openat2_in_root(rootfd, "/", O_PATH | O_DIRECTORY, 0,
							RESOLVE_IN_ROOT);
				if (dirfd < 0)
					return tern_error_make(err, -dirfd, "open the rootfs");
			}
			continue;
		}

		if (last) {
			/* The caller mounts on it: whatever it is, it is inside. */
			return steal_fd(&fd);
		}
		if (!S_ISDIR(st.st_mode))
			return tern_error_make(err, ENOTDIR,
					       "resolve `%s` inside the rootfs: `%s/%s`", path,
					       done, name);
		/* Symlink targets can make the resolved path longer than `path`. */
		size_t need = strlen(done) + strlen(name) + 2;
		if (need > done_cap) {
			char *grown = tern_xmalloc0(need * 2);
			strcpy(grown, done);
			free(done);
			done = grown;
			done_cap = need * 2;
		}
		strcat(done, "/");
		strcat(done, name);
		tern_closep(&dirfd);
		dirfd = steal_fd(&fd);
		memmove(todo, p, strlen(p) + 1);
	}
	/* The path was "/" or only "." and "..": the directory itself. */
	return steal_fd(&dirfd);
}

int tern_chdir_in_root(const char *path, tern_error **err)
{
	cleanup_close int rootfd = -1, fd = -1;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");
	fd = openat2_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0,
			     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return tern_error_make(err, -fd, "`%s`%s", path,
				       fd == -ELOOP ? " (a magic link such as /proc/self/fd/N, or "
						      "too many symlinks)"
						    : "");
	if (fchdir(fd) < 0)
		return tern_error_make(err, errno, "`%s`", path);
	return 0;
}
