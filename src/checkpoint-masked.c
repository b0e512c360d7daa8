/* The masked directories' tmpfs left out of criu's images: see
 * checkpoint-masked.h. */
#include "checkpoint-masked.h"

#include "cli.h"
#include "mountinfo.h"
#include "path-resolve.h"
#include "rootfs.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

static bool read_only(const char *opts)
{
	return strncmp(opts, "ro", 2) == 0 && (opts[2] == '\0' || opts[2] == ',');
}

static bool is_empty_dir(int fd)
{
	int copy = dup(fd);
	if (copy < 0)
		return false;
	DIR *d = fdopendir(copy);
	if (d == NULL) {
		close(copy);
		return false;
	}
	bool empty = true;
	for (struct dirent *de; empty && (de = readdir(d)) != NULL;)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			empty = false;
	closedir(d);
	return empty;
}

/* The one mount at `path` in `lines` (n of them), if nothing else is
 * mounted on or below it. */
static const tern_mountinfo_line *sole_mount(const tern_mountinfo_line *lines, size_t n,
					     const char *path)
{
	const tern_mountinfo_line *found = NULL;
	size_t plen = strlen(path);

	for (size_t i = 0; i < n; i++) {
		const char *mp = lines[i].mountpoint;
		if (strcmp(mp, path) == 0) {
			if (found)
				return NULL;
			found = &lines[i];
		} else if (strncmp(mp, path, plen) == 0 && mp[plen] == '/') {
			return NULL;
		}
	}
	return found;
}

/* As tern made it: a read-only tmpfs at its root, on the device mountinfo
 * names, empty through the container's root (openat2 inside it: a path
 * from config.json never leads out). */
static bool is_tern_mask(int rootfd, const tern_mountinfo_line *m, const char *path)
{
	unsigned int major, minor;
	struct statfs fs;
	struct stat st;

	if (strcmp(m->fstype, "tmpfs") != 0 || strcmp(m->root, "/") != 0 || !read_only(m->opts) ||
	    sscanf(m->dev, "%u:%u", &major, &minor) != 2)
		return false;
	cleanup_close int fd =
	    tern_open_in_root(rootfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, NULL);
	if (fd < 0 || fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC || fstat(fd, &st) < 0 ||
	    st.st_dev != makedev(major, minor))
		return false;
	return is_empty_dir(fd);
}

char **tern_ckpt_masked_empty(pid_t pid, char *const *masked)
{
	if (masked == NULL || masked[0] == NULL)
		return NULL;
	cleanup_free char *path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	cleanup_free char *data = NULL;
	size_t len;
	if (tern_read_file(path, &data, &len, 0, NULL) < 0)
		return NULL;

	size_t n = 0, cap = 0;
	cleanup_free tern_mountinfo_line *lines = NULL;
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (!tern_mountinfo_parse(l, &m))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			tern_mountinfo_line *grown = realloc(lines, cap * sizeof(*lines));
			if (grown == NULL)
				return NULL;
			lines = grown;
		}
		lines[n++] = m;
	}

	cleanup_free char *root = tern_strdup_printf("/proc/%d/root", pid);
	cleanup_close int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return NULL;
	char **out = NULL;
	for (size_t i = 0; masked[i]; i++) {
		const tern_mountinfo_line *m = sole_mount(lines, n, masked[i]);
		if (m && is_tern_mask(rootfd, m, masked[i]))
			out = tern_cli_strv_add(out, tern_xstrdup(masked[i]));
	}
	return out;
}

int tern_ckpt_masked_source(int dirfd, const char *dir, const char *name, char **path,
			    tern_error **err)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return tern_error_make(err, errno, "mkdir `%s/%s`", dir, name);
	cleanup_close int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open `%s/%s`", dir, name);
	int shared = -1;
	int ret = tern_rootfs_mount_empty_tmpfs(fd, &shared);
	if (shared >= 0)
		close(shared);
	if (ret < 0)
		return tern_error_make(err, -ret, "an empty tmpfs for the masked paths on `%s/%s`",
				       dir, name);
	*path = tern_strdup_printf("%s/%s", dir, name);
	return 0;
}
