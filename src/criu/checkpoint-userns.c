/* Restoring images whose root task makes a user namespace of its own
 * (checkpoint-userns.h): the images opened to the namespace's root, read
 * only, and what a restore beside the original needs to know (the host
 * ids of container root, the veths recorded). */
#include "checkpoint-userns.h"
#include "checkpoint-internal.h"
#include "idmap.h"
#include "log.h"
#include "mount-common.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* the host id container id 0 maps to, or -1 */
static long host_of_zero(const oci_id_mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].container_id == 0 && m[i].size > 0)
			return (long)m[i].host_id;
	return -1;
}

bool tern_ckpt_userns_root(const char *images, uid_t *uid, gid_t *gid)
{
	cleanup_free char *path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *msg = NULL;
	oci_config *c = NULL;
	bool ok = false;

	if (oci_config_parse_file(path, &c, &msg) < 0)
		return false;
	const oci_namespace *ns = tern_ckpt_config_ns(c, OCI_NS_USER);
	if (ns && ns->path == NULL) {
		long u = host_of_zero(c->linux_->uid_mappings, c->linux_->uid_mappings_len);
		long g = host_of_zero(c->linux_->gid_mappings, c->linux_->gid_mappings_len);
		ok = u >= 0 && g >= 0;
		*uid = (uid_t)u;
		*gid = (gid_t)g;
	}
	oci_config_free(c);
	return ok;
}

bool tern_ckpt_config_userns_unprivileged(const oci_config *c)
{
	const oci_namespace *ns = tern_ckpt_config_ns(c, OCI_NS_USER);

	if (ns == NULL || ns->path != NULL)
		return false;
	return host_of_zero(c->linux_->uid_mappings, c->linux_->uid_mappings_len) !=
	       (long)geteuid();
}

#define YARD_NOTE "restore-yard"

/* "/run/tern-restore-XXXXXX" or the same in /tmp, as mkdtemp made it */
static bool is_yard_path(const char *p)
{
	size_t n = strlen(p);
	const char *x = p + n - 6;

	if ((strncmp(p, "/run/tern-restore-", 18) != 0 &&
	     strncmp(p, "/tmp/tern-restore-", 18) != 0) ||
	    n != 24)
		return false;
	for (int i = 0; i < 6; i++)
		if (!((x[i] >= 'a' && x[i] <= 'z') || (x[i] >= 'A' && x[i] <= 'Z') ||
		      (x[i] >= '0' && x[i] <= '9')))
			return false;
	return true;
}

int tern_ckpt_userns_yard(int note_fd, char **path, int *dirfd, tern_error **err)
{
	char *dir = tern_xstrdup(access("/run", W_OK) == 0 ? "/run/tern-restore-XXXXXX"
							   : "/tmp/tern-restore-XXXXXX");

	if (mkdtemp(dir) == NULL) {
		int ret = tern_error_make(err, errno, "mkdtemp `%s`", dir);
		free(dir);
		return ret;
	}
	*dirfd = open(dir, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*dirfd < 0 || fchmod(*dirfd, 0711) < 0) {
		int ret = tern_error_make(err, errno, "`%s`", dir);
		if (*dirfd >= 0)
			close(*dirfd);
		*dirfd = -1;
		rmdir(dir);
		free(dir);
		return ret;
	}
	*path = dir;
	/* whoever outlives this process (it may be killed) finds it there;
	 * best effort: the work directory may be images on a read-only
	 * file system */
	cleanup_close int fd =
	    note_fd < 0 ? -1
			: openat(note_fd, YARD_NOTE,
				 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (note_fd >= 0 && (fd < 0 || tern_write_all(fd, dir, strlen(dir)) < 0))
		tern_debug("restore yard `%s` not noted in the work directory: %s", dir,
			   strerror(errno));
	return 0;
}

void tern_ckpt_userns_yard_done(int note_fd, char **path, int *dirfd)
{
	if (*dirfd >= 0)
		close(*dirfd);
	*dirfd = -1;
	if (*path)
		rmdir(*path);
	if (note_fd >= 0)
		unlinkat(note_fd, YARD_NOTE, 0);
	free(*path);
	*path = NULL;
}

void tern_ckpt_userns_yard_reclaim(const char *work_dir)
{
	cleanup_free char *note = tern_strdup_printf("%s/" YARD_NOTE, work_dir);
	cleanup_free char *yard = NULL;
	size_t len;

	if (tern_read_file(note, &yard, &len, 64, NULL) < 0)
		return;
	/* its mounts were in the dead restore's mount namespace: here are
	 * only the directories and files they were made on */
	if (is_yard_path(yard))
		tern_remove_tree(yard);
	unlink(note);
}

/* `fd` (a directory: 0710, or 0750 for one criu opens by name, a
 * parent/; else a file: 0640; group `gid`), unless it is already so; the
 * owner stays */
static int grant(int fd, const char *what, gid_t gid, bool opened, tern_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "`%s`", what);
	mode_t want = !S_ISDIR(st.st_mode) ? 0640 : opened ? 0750 : 0710;
	if (st.st_gid != gid && fchown(fd, (uid_t)-1, gid) < 0)
		return tern_error_make(err, errno, "chgrp `%s`", what);
	if ((st.st_mode & 07777) != want && fchmod(fd, want) < 0)
		return tern_error_make(err, errno, "chmod `%s`", what);
	return 0;
}

/* the images of `dirfd` (criu's *.img, and parent/ the same way) */
static int grant_dir(int dirfd, const char *path, gid_t gid, int depth, tern_error **err)
{
	/* (criu gets the top one open from tern; a parent/ it opens itself,
	 * which takes read permission on a directory) */
	int ret = grant(dirfd, path, gid, depth > 0, err);
	int dupfd = ret == 0 ? fcntl(dirfd, F_DUPFD_CLOEXEC, 3) : -1;
	DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;

	if (ret < 0)
		return ret;
	if (d == NULL) {
		if (dupfd >= 0)
			close(dupfd);
		return tern_error_make(err, errno, "`%s`", path);
	}
	for (struct dirent *e; ret == 0 && (e = readdir(d)) != NULL;) {
		size_t n = strlen(e->d_name);
		bool img = n > 4 && strcmp(e->d_name + n - 4, ".img") == 0;
		bool parent = strcmp(e->d_name, "parent") == 0 && depth < 64;
		if (!img && !parent)
			continue;
		/* no symlink followed: what is changed is in the store */
		cleanup_close int fd = openat(dirfd, e->d_name,
					      O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
						  (parent ? O_DIRECTORY : 0));
		cleanup_free char *sub = tern_strdup_printf("%s/%s", path, e->d_name);
		if (fd < 0) {
			/* a symlink (ELOOP) or a file gone meanwhile is not ours */
			if (errno == ELOOP || errno == ENOENT || errno == ENOTDIR)
				continue;
			ret = tern_error_make(err, errno, "`%s`", sub);
		} else if (parent) {
			ret = grant_dir(fd, sub, gid, depth + 1, err);
		} else {
			struct stat st;
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
				ret = grant(fd, sub, gid, false, err);
		}
	}
	closedir(d);
	return ret;
}

int tern_ckpt_images_for_userns(const char *images, tern_error **err)
{
	uid_t uid;
	gid_t gid;

	if (!tern_ckpt_userns_root(images, &uid, &gid) || gid == 0)
		return 0;
	cleanup_close int fd = open(images, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "--image-path `%s`", images);
	int ret = grant_dir(fd, images, gid, 0, err);
	return ret < 0
		   ? tern_error_wrap(err, "the images opened to the container's root (host gid %u)",
				     (unsigned)gid)
		   : 0;
}

char **tern_ckpt_veths(const char *images)
{
	descriptor d = {0};
	tern_error *e = NULL;
	char **out = NULL;

	if (tern_ckpt_descriptor_read(images, &d, &e) == 0) {
		out = d.veths;
		d.veths = NULL;
	}
	tern_error_free(e);
	tern_ckpt_descriptor_clear(&d);
	return out;
}

int tern_ckpt_idmapped_source(const oci_config *c, const oci_mount *m, const char *src, int dirfd,
			      const char *dir, const char *name, char **path, tern_error **err)
{
	tern_mount_options opts;
	int ret = tern_mount_options_parse(m->options, &opts, err);

	if (ret < 0)
		return ret;
	bool recursive = opts.recursive_bind || (m->type && strcmp(m->type, "rbind") == 0);
	bool ridmap = opts.idmap_recursive;
	tern_mount_options_clear(&opts);
	/* (`idmap` without mappings: the container's, which its user
	 * namespace is not there yet to give) */
	oci_mount copy = *m;
	if (copy.uid_mappings_len == 0 && copy.gid_mappings_len == 0 && c->linux_) {
		copy.uid_mappings = c->linux_->uid_mappings;
		copy.uid_mappings_len = c->linux_->uid_mappings_len;
		copy.gid_mappings = c->linux_->gid_mappings;
		copy.gid_mappings_len = c->linux_->gid_mappings_len;
	}
	size_t index = (size_t)(m - c->mounts);
	cleanup_close int tree = open_tree(
	    AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return tern_error_make(err, errno, "mounts[%zu]: a copy of `%s`", index, src);
	ret = tern_idmap_apply(tree, &copy, index, ridmap, -1, err);
	if (ret < 0)
		return tern_error_wrap(err, "mounts[%zu]: `%s`", index, src);
	struct stat st;
	if (fstat(tree, &st) < 0)
		return tern_error_make(err, errno, "`%s`", src);
	if (S_ISDIR(st.st_mode) ? mkdirat(dirfd, name, 0700) < 0
				: mknodat(dirfd, name, S_IFREG | 0600, 0) < 0)
		return tern_error_make(err, errno, "`%s/%s`", dir, name);
	if (move_mount(tree, "", dirfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0) {
		ret = tern_error_make(err, errno, "mounts[%zu]: attach the idmapped copy of `%s`",
				      index, src);
		if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
			unlinkat(dirfd, name, 0);
		return ret;
	}
	*path = tern_strdup_printf("%s/%s", dir, name);
	return 0;
}
