/* The masked directories' tmpfs left out of criu's images: see
 * checkpoint-masked.h. */
#include "checkpoint-masked.h"

#include "cli.h"
#include "mounts.h"
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
#include <sys/mount.h>
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

/* A tmpfs at its root, on the device mountinfo names, empty through the
 * container's root (openat2 inside it: a path from config.json never leads
 * out). */
static bool is_empty_tmpfs(int rootfd, const tern_mountinfo_line *m, const char *path)
{
	unsigned int major, minor;
	struct statfs fs;
	struct stat st;

	if (strcmp(m->fstype, "tmpfs") != 0 || strcmp(m->root, "/") != 0 ||
	    sscanf(m->dev, "%u:%u", &major, &minor) != 2)
		return false;
	cleanup_close int fd =
	    tern_open_in_root(rootfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, NULL);
	if (fd < 0 || fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC || fstat(fd, &st) < 0 ||
	    st.st_dev != makedev(major, minor))
		return false;
	return is_empty_dir(fd);
}

/* The mounts of the container whose init is `pid`, as its mountinfo
 * lists them (pointing into *data, which the caller frees), and its root;
 * false when they cannot be read. */
typedef struct {
	char *data;
	tern_mountinfo_line *lines;
	size_t n;
	int rootfd;
} container_mounts;

static void container_mounts_clear(container_mounts *cm)
{
	free(cm->data);
	free(cm->lines);
	if (cm->rootfd >= 0)
		close(cm->rootfd);
}

static bool container_mounts_read(pid_t pid, container_mounts *cm)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	size_t len, cap = 0;

	*cm = (container_mounts){.rootfd = -1};
	if (tern_read_file(path, &cm->data, &len, 0, NULL) < 0)
		return false;
	for (char *save = NULL, *l = strtok_r(cm->data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (!tern_mountinfo_parse(l, &m))
			continue;
		if (cm->n == cap) {
			cap = cap ? cap * 2 : 64;
			tern_mountinfo_line *grown = realloc(cm->lines, cap * sizeof(*cm->lines));
			if (grown == NULL)
				return false;
			cm->lines = grown;
		}
		cm->lines[cm->n++] = m;
	}
	cleanup_free char *root = tern_strdup_printf("/proc/%d/root", pid);
	cm->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return cm->rootfd >= 0;
}

char **tern_ckpt_masked_empty(pid_t pid, char *const *masked)
{
	container_mounts cm;
	char **out = NULL;

	if (masked == NULL || masked[0] == NULL)
		return NULL;
	if (container_mounts_read(pid, &cm))
		for (size_t i = 0; masked[i]; i++) {
			const tern_mountinfo_line *m = sole_mount(cm.lines, cm.n, masked[i]);
			if (m && read_only(m->opts) && is_empty_tmpfs(cm.rootfd, m, masked[i]))
				out = tern_cli_strv_add(out, tern_xstrdup(masked[i]));
		}
	container_mounts_clear(&cm);
	return out;
}

char **tern_ckpt_tmpfs_empty(pid_t pid, const oci_mount *mounts, size_t n)
{
	container_mounts cm;
	char **out = NULL;

	if (n == 0 || !container_mounts_read(pid, &cm)) {
		if (n)
			container_mounts_clear(&cm);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const oci_mount *c = &mounts[i];
		if (c->type == NULL || strcmp(c->type, "tmpfs") != 0 || c->destination == NULL ||
		    c->destination[0] != '/' || strstr(c->destination, "/..") ||
		    strchr(c->destination, ' '))
			continue;
		const tern_mountinfo_line *m = sole_mount(cm.lines, cm.n, c->destination);
		if (m && is_empty_tmpfs(cm.rootfd, m, c->destination))
			out = tern_cli_strv_add(out, tern_xstrdup(c->destination));
	}
	container_mounts_clear(&cm);
	return out;
}

int tern_ckpt_tmpfs_source(int dirfd, const char *dir, const char *name, const oci_config *config,
			   const char *dest, char **path, tern_error **err)
{
	const oci_mount *c = NULL;

	for (size_t i = 0; config && i < config->mounts_len && c == NULL; i++)
		if (config->mounts[i].type && strcmp(config->mounts[i].type, "tmpfs") == 0 &&
		    config->mounts[i].destination &&
		    strcmp(config->mounts[i].destination, dest) == 0)
			c = &config->mounts[i];
	if (c == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "the checkpoint's empty tmpfs on `%s` has no tmpfs "
					     "mount in config.json to be made from",
					     dest);
	tern_mount_options o = {0};
	int ret = tern_mount_options_parse(c->options, &o, err);
	if (ret < 0)
		return tern_error_wrap(err, "mount on `%s` in config.json", dest);
	unsigned long keep = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME |
			     MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME;
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		ret = tern_error_make(err, errno, "mkdir `%s/%s`", dir, name);
	*path = tern_strdup_printf("%s/%s", dir, name);
	if (ret == 0 && mount("tmpfs", *path, "tmpfs", o.flags & keep, o.data) < 0)
		ret = tern_error_make(err, errno, "mount a tmpfs for `%s` on `%s`", dest, *path);
	tern_mount_options_clear(&o);
	if (ret < 0) {
		unlinkat(dirfd, name, AT_REMOVEDIR);
		free(*path);
		*path = NULL;
	}
	return ret;
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
