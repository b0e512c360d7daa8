/* The masked directories' tmpfs left out of criu's images: see
 * checkpoint-masked.h. */
#include "checkpoint-masked.h"

#include "devices.h"
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
				out = tern_strv_add(out, tern_xstrdup(masked[i]));
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
			out = tern_strv_add(out, tern_xstrdup(c->destination));
	}
	container_mounts_clear(&cm);
	return out;
}

/* The config's tmpfs mount on `dest`, if it has one. */
static const oci_mount *config_tmpfs(const oci_config *config, const char *dest)
{
	for (size_t i = 0; config && i < config->mounts_len; i++)
		if (config->mounts[i].type && strcmp(config->mounts[i].type, "tmpfs") == 0 &&
		    config->mounts[i].destination &&
		    strcmp(config->mounts[i].destination, dest) == 0)
			return &config->mounts[i];
	return NULL;
}

int tern_ckpt_tmpfs_source(int dirfd, const char *dir, const char *name, const oci_config *config,
			   const char *dest, char **path, tern_error **err)
{
	const oci_mount *c = config_tmpfs(config, dest);

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

/* ---- cgroup v1's tmpfs: its tree instead of its archive ---- */

/* a name the descriptor can carry and a restore may create */
static bool plain_name(const char *s)
{
	return s[0] != '\0' && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       strpbrk(s, "/ \n\t") == NULL && strlen(s) < 256;
}

static bool is_mountpoint(const container_mounts *cm, const char *path)
{
	for (size_t i = 0; i < cm->n; i++)
		if (strcmp(cm->lines[i].mountpoint, path) == 0)
			return true;
	return false;
}

/* The descriptor line for the entry `name` of the tmpfs root `fd` (stat
 * `root`), at `path` in the container, in *line without its destination
 * and name (a key and what follows them is made by the caller: "KEY DEST
 * NAME ..."; see checkpoint-masked.h); false when a tree cannot carry it. */
static bool tree_entry(int fd, const char *dest, const char *name, const char *path,
		       const struct stat *root, const container_mounts *cm, const oci_config *config,
		       char **line)
{
	struct stat e;
	char target[256];

	if (fstatat(fd, name, &e, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (is_mountpoint(cm, path)) {
		/* what is mounted on it is restored by criu (or is an external
		 * mount); below it is an empty directory, or an empty file as
		 * tern makes for a bound device or the console. What covers it
		 * hides the file's own mode: a restore makes it 0000 */
		if (S_ISDIR(e.st_mode))
			*line = tern_strdup_printf("tmpfs-dir %s %s %o %u %u", dest, name, e.st_mode & 07777,
						   e.st_uid, e.st_gid);
		else
			*line = tern_strdup_printf("tmpfs-file %s %s 0 %u %u", dest, name, root->st_uid,
						   root->st_gid);
		return true;
	}
	if (e.st_dev != root->st_dev)
		return false;
	if (S_ISLNK(e.st_mode)) {
		ssize_t n = readlinkat(fd, name, target, sizeof(target) - 1);
		if (n <= 0)
			return false;
		target[n] = '\0';
		if (strpbrk(target, " \n\t"))
			return false;
		*line = tern_strdup_printf("tmpfs-link %s %s %s", dest, name, target);
		return true;
	}
	if (S_ISDIR(e.st_mode)) {
		cleanup_close int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || !is_empty_dir(sub))
			return false;
		*line = tern_strdup_printf("tmpfs-dir %s %s %o %u %u", dest, name, e.st_mode & 07777, e.st_uid,
					   e.st_gid);
		return true;
	}
	if (S_ISREG(e.st_mode) && e.st_size == 0 && e.st_nlink == 1) {
		*line = tern_strdup_printf("tmpfs-file %s %s %o %u %u", dest, name, e.st_mode & 07777,
					   e.st_uid, e.st_gid);
		return true;
	}
	/* a node config.json makes there (the container may have made
	 * others, with CAP_MKNOD: those go to criu) */
	if (S_ISCHR(e.st_mode) || S_ISBLK(e.st_mode) || S_ISFIFO(e.st_mode)) {
		unsigned int maj = S_ISFIFO(e.st_mode) ? 0 : major(e.st_rdev);
		unsigned int min = S_ISFIFO(e.st_mode) ? 0 : minor(e.st_rdev);
		if (!tern_devices_allowed(config, path, e.st_mode & S_IFMT, maj, min))
			return false;
		*line = tern_strdup_printf("tmpfs-node %s %s %o %u %u %c %u %u", dest, name,
					   e.st_mode & 07777, e.st_uid, e.st_gid,
					   S_ISCHR(e.st_mode)   ? 'c'
					   : S_ISBLK(e.st_mode) ? 'b'
								: 'p',
					   maj, min);
		return true;
	}
	return false;
}

bool tern_ckpt_tmpfs_tree(pid_t pid, const char *dest, const oci_config *config, char ***lines)
{
	container_mounts cm;
	const tern_mountinfo_line *m = NULL;
	char **out = NULL;
	bool ok = false;
	/* (before the first goto: its cleanup runs at `out`) */
	cleanup_close int fd = -1;

	if (dest[0] != '/' || strpbrk(dest, " \n\t"))
		return false;
	if (!container_mounts_read(pid, &cm))
		goto out;
	/* exactly one mount there (none stacked on it), a tmpfs at its root */
	for (size_t i = 0; i < cm.n; i++)
		if (strcmp(cm.lines[i].mountpoint, dest) == 0) {
			if (m)
				goto out;
			m = &cm.lines[i];
		}
	unsigned int major, minor;
	struct statfs fs;
	struct stat st;
	if (m == NULL || strcmp(m->fstype, "tmpfs") != 0 || strcmp(m->root, "/") != 0 ||
	    sscanf(m->dev, "%u:%u", &major, &minor) != 2)
		goto out;
	fd = tern_open_in_root(cm.rootfd, dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, NULL);
	if (fd < 0 || fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC || fstat(fd, &st) < 0 ||
	    st.st_dev != makedev(major, minor))
		goto out;
	out = tern_strv_add(out, tern_strdup_printf("tmpfs-tree %s %o %u %u %d", dest,
							st.st_mode & 07777, st.st_uid, st.st_gid,
							read_only(m->opts)));
	int copy = dup(fd);
	DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
	if (d == NULL) {
		if (copy >= 0)
			close(copy);
		goto out;
	}
	bool fits = true;
	for (struct dirent *de; fits && (de = readdir(d)) != NULL;) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		cleanup_free char *path = tern_strdup_printf("%s/%s", dest, de->d_name);
		cleanup_free char *line = NULL;
		fits = plain_name(de->d_name) &&
		       tree_entry(fd, dest, de->d_name, path, &st, &cm, config, &line);
		if (fits)
			out = tern_strv_add(out, steal_pointer(&line));
	}
	closedir(d);
	if (!fits)
		goto out;
	for (char **l = out; l && *l; l++)
		*lines = tern_strv_add(*lines, tern_xstrdup(*l));
	ok = true;
out:
	tern_strv_freep(&out);
	container_mounts_clear(&cm);
	return ok;
}

static bool has_userns(const oci_config *config)
{
	const oci_linux *lx = config ? config->linux_ : NULL;
	for (size_t i = 0; lx && i < lx->namespaces_len; i++)
		if (lx->namespaces[i].type == OCI_NS_USER)
			return true;
	return false;
}

/* Make the entry one descriptor line `l` names in the new tmpfs `fd`
 * (path `path`), when it is for `dest`; `config` is the restore's. */
static int make_tree_entry(int fd, const char *path, const char *dest, const char *l,
			   const oci_config *config, tern_error **err)
{
	char key[16], ldest[4096], ename[256], target[256], type;
	unsigned int emode, euid, egid, maj, min;
	int n;

	n = sscanf(l, "%15s %4095s %255s", key, ldest, ename);
	if (n != 3 || strcmp(ldest, dest) != 0 || strcmp(key, "tmpfs-tree") == 0)
		return 0;
	if (!plain_name(ename))
		return tern_error_make_quiet(err, EINVAL, "bad %s line `%s`", key, l);
	if (strcmp(key, "tmpfs-link") == 0) {
		if (sscanf(l, "%*s %*s %*s %255s", target) != 1)
			return tern_error_make_quiet(err, EINVAL, "bad tmpfs-link line `%s`", l);
		if (symlinkat(target, fd, ename) < 0)
			return tern_error_make(err, errno, "symlink `%s/%s`", path, ename);
		return 0;
	}
	if (sscanf(l, "%*s %*s %*s %o %u %u", &emode, &euid, &egid) != 3 || emode > 07777)
		return tern_error_make_quiet(err, EINVAL, "bad %s line `%s`", key, l);
	if (strcmp(key, "tmpfs-dir") == 0) {
		if (mkdirat(fd, ename, 0700) < 0)
			return tern_error_make(err, errno, "make `%s/%s`", path, ename);
	} else if (strcmp(key, "tmpfs-file") == 0) {
		int f = openat(fd, ename, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (f < 0)
			return tern_error_make(err, errno, "make `%s/%s`", path, ename);
		close(f);
	} else if (strcmp(key, "tmpfs-node") == 0) {
		/* only a node the new config.json makes at that path: a
		 * descriptor is no licence for any other device */
		cleanup_free char *at = tern_strdup_printf("%s/%s", dest, ename);
		if (sscanf(l, "%*s %*s %*s %*o %*u %*u %c %u %u", &type, &maj, &min) != 3 ||
		    (type != 'c' && type != 'b' && type != 'p'))
			return tern_error_make_quiet(err, EINVAL, "bad tmpfs-node line `%s`", l);
		mode_t t = type == 'c' ? S_IFCHR : type == 'b' ? S_IFBLK : S_IFIFO;
		if (has_userns(config) || !tern_devices_allowed(config, at, t, maj, min))
			return tern_error_make_quiet(
			    err, EPERM,
			    "the checkpoint's device `%s` (%c %u:%u) is not one config.json makes "
			    "(linux.devices, or a default device)",
			    at, type, maj, min);
		if (mknodat(fd, ename, t | 0600, makedev(maj, min)) < 0)
			return tern_error_make(err, errno, "mknod `%s/%s`", path, ename);
	} else {
		return tern_error_make_quiet(err, EINVAL, "unknown tmpfs tree line `%s`", l);
	}
	if (fchmodat(fd, ename, emode, 0) < 0 ||
	    fchownat(fd, ename, euid, egid, AT_SYMLINK_NOFOLLOW) < 0)
		return tern_error_make(err, errno, "owner and mode of `%s/%s`", path, ename);
	return 0;
}

int tern_ckpt_tmpfs_tree_source(int dirfd, const char *dir, const char *name, const char *dest,
				const oci_config *config, char *const *lines, char **path,
				tern_error **err)
{
	unsigned int mode = 0755, uid = 0, gid = 0;
	int ro = 0;
	bool found = false;
	size_t dl = strlen(dest);
	int ret = 0;
	/* (before the first goto: its cleanup runs at `fail`) */
	cleanup_close int fd = -1;
	tern_mount_options o = {0};

	for (char *const *l = lines; l && *l && !found; l++)
		found = strncmp(*l, "tmpfs-tree ", 11) == 0 && strncmp(*l + 11, dest, dl) == 0 &&
			(*l)[11 + dl] == ' ' &&
			sscanf(*l + 12 + dl, "%o %u %u %d", &mode, &uid, &gid, &ro) == 4;
	if (!found || mode > 07777)
		return tern_error_make_quiet(err, EINVAL,
					     "the checkpoint's tmpfs tree on `%s`: no "
					     "valid tmpfs-tree line",
					     dest);
	/* a tmpfs of config.json (/dev) is made as the new config says (size,
	 * flags), then given the dump's owner and mode; cgroup v1's tmpfs is
	 * tern's own */
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	cleanup_free char *data = tern_strdup_printf("mode=%o,uid=%u,gid=%u", mode, uid, gid);
	const oci_mount *c = config_tmpfs(config, dest);
	if (c) {
		ret = tern_mount_options_parse(c->options, &o, err);
		if (ret < 0)
			return tern_error_wrap(err, "mount on `%s` in config.json", dest);
		unsigned long keep = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME |
				     MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME;
		flags = o.flags & keep;
		ro = (flags & MS_RDONLY) != 0;
		flags &= ~MS_RDONLY;
		free(data);
		data = o.data ? tern_xstrdup(o.data) : NULL;
	}
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST) {
		tern_mount_options_clear(&o);
		return tern_error_make(err, errno, "mkdir `%s/%s`", dir, name);
	}
	*path = tern_strdup_printf("%s/%s", dir, name);
	if (mount("tmpfs", *path, "tmpfs", flags, data) < 0) {
		ret = tern_error_make(err, errno, "mount a tmpfs for `%s` on `%s`", dest, *path);
		goto fail;
	}
	fd = open(*path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = tern_error_make(err, errno, "open `%s`", *path);
		goto fail_mounted;
	}
	if (c && (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0)) {
		ret = tern_error_make(err, errno, "owner and mode of `%s`", *path);
		goto fail_mounted;
	}
	for (char *const *l = lines; l && *l; l++) {
		ret = make_tree_entry(fd, *path, dest, *l, config, err);
		if (ret < 0)
			goto fail_mounted;
	}
	if (ro && mount(NULL, *path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) < 0) {
		ret = tern_error_make(err, errno, "make `%s` read-only", *path);
		goto fail_mounted;
	}
	tern_mount_options_clear(&o);
	return 0;
fail_mounted:
	umount2(*path, MNT_DETACH);
fail:
	tern_mount_options_clear(&o);
	unlinkat(dirfd, name, AT_REMOVEDIR);
	free(*path);
	*path = NULL;
	return ret;
}
