/* /dev inside the container (runtime-spec config-linux.md "Devices" and
 * "Default Devices"), done before pivot_root while the host /dev is still
 * reachable for bind mounts.
 *
 * Every node is created with mknodat() in a parent directory resolved
 * inside the rootfs: mknodat, symlinkat and an O_CREAT|O_EXCL|O_NOFOLLOW
 * open never follow a symlink in the last component, so a device path that
 * the image made a symlink to the host cannot create anything there. */
#include "devices.h"
#include "log.h"
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct dev_node {
	const char *path;
	mode_t type; /* S_IFCHR, S_IFBLK or S_IFIFO */
	unsigned major, minor;
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

/* The runtime-spec's default devices, as runc creates them. */
static const struct dev_node default_devices[] = {
    {"/dev/null", S_IFCHR, 1, 3, 0666, 0, 0},	 {"/dev/zero", S_IFCHR, 1, 5, 0666, 0, 0},
    {"/dev/full", S_IFCHR, 1, 7, 0666, 0, 0},	 {"/dev/random", S_IFCHR, 1, 8, 0666, 0, 0},
    {"/dev/urandom", S_IFCHR, 1, 9, 0666, 0, 0}, {"/dev/tty", S_IFCHR, 5, 0, 0666, 0, 0},
};

/* Split `path` into a parent directory fd inside the root (created if
 * missing) and the last component. */
static int open_parent(int rootfd, const char *path, char **name, tern_error **err)
{
	cleanup_free char *copy = tern_xstrdup(path);
	char *slash;
	size_t len = strlen(copy);

	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	if (slash == NULL) {
		*name = tern_xstrdup(copy);
		return tern_mkdir_in_root(rootfd, "/", false, err);
	}
	*name = tern_xstrdup(slash + 1);
	if (**name == '\0' || strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0) {
		free(*name);
		*name = NULL;
		return tern_error_make(err, EINVAL, "not a device path");
	}
	*slash = '\0';
	return tern_mkdir_in_root(rootfd, *copy ? copy : "/", false, err);
}

/* Remove what stands at `name` unless it already is this very device:
 * an image's own /dev entry (or a symlink planted there) is replaced, never
 * followed. Returns 1 when the right node is already there. */
static int clear_old(int dirfd, const char *name, const struct dev_node *d, bool bind)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!bind && (st.st_mode & S_IFMT) == d->type &&
	    (d->type == S_IFIFO || st.st_rdev == makedev(d->major, d->minor)))
		return 1;
	if (unlinkat(dirfd, name, 0) < 0)
		return -errno;
	return 0;
}

/* In a user namespace mknod of a device is EPERM: bind the host's node
 * onto an empty file instead (its owner and mode are then the host's). */
static int bind_device(int dirfd, const char *name, const struct dev_node *d, tern_error **err)
{
	cleanup_close int host = -1, target = -1;
	char hp[32], tp[32];
	struct stat st;
	int fd;

	host = open(d->path, O_PATH | O_CLOEXEC);
	if (host < 0)
		return tern_error_make(err, errno, "open the host's `%s`", d->path);
	/* The host path is a name, the node is what matters: check it is the
	 * device the config asked for before showing it to the container. */
	if (fstat(host, &st) < 0)
		return tern_error_make(err, errno, "stat the host's `%s`", d->path);
	if ((st.st_mode & S_IFMT) != d->type || st.st_rdev != makedev(d->major, d->minor))
		return tern_error_make(err, ENODEV, "the host's `%s` is not device %u:%u", d->path,
				       d->major, d->minor);
	fd = openat(dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0000);
	if (fd < 0)
		return tern_error_make(err, errno, "create the mount point");
	close(fd);
	target = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return tern_error_make(err, errno, "open the mount point");
	if (mount(tern_fd_path(host, hp, sizeof(hp)), tern_fd_path(target, tp, sizeof(tp)), NULL,
		  MS_BIND, NULL) < 0)
		return tern_error_make(err, errno, "bind the host's `%s`", d->path);
	return 0;
}

/* mknod with exactly the mode asked for (no umask). Returns -errno. */
static int make_node(int dirfd, const char *name, const struct dev_node *d)
{
	mode_t old = umask(0);
	int r = mknodat(dirfd, name, d->type | (d->mode & 07777), makedev(d->major, d->minor));
	int e = errno;

	umask(old);
	return r < 0 ? -e : 0;
}

static int create_device(int rootfd, const struct dev_node *d, bool in_user_ns, tern_error **err)
{
	cleanup_close int dirfd = -1;
	cleanup_free char *name = NULL;
	bool bind = in_user_ns && d->type != S_IFIFO;
	int ret;

	dirfd = open_parent(rootfd, d->path, &name, err);
	if (dirfd < 0)
		return dirfd;
	ret = clear_old(dirfd, name, d, bind);
	if (ret < 0)
		return tern_error_make(err, -ret, "replace the existing entry");
	if (ret == 1) {
		/* Already the right node (an image's /dev): fix owner and mode. */
		cleanup_close int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		char p[32];
		if (fd < 0 || chmod(tern_fd_path(fd, p, sizeof(p)), d->mode & 07777) < 0 ||
		    fchownat(dirfd, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return tern_error_make(err, errno, "set the owner and mode");
		return 0;
	}
	if (!bind) {
		ret = make_node(dirfd, name, d);
		if (ret == 0) {
			if (fchownat(dirfd, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) < 0)
				return tern_error_make(err, errno, "chown to %u:%u",
						       (unsigned)d->uid, (unsigned)d->gid);
			return 0;
		}
		if (ret != -EPERM)
			return tern_error_make(err, -ret, "mknod");
		/* Not allowed to mknod here after all (no CAP_MKNOD, or a
		 * user namespace we were not told about): bind instead. */
		if (d->type == S_IFIFO)
			return tern_error_make(err, EPERM, "mknod");
	}
	return bind_device(dirfd, name, d, err);
}

static int device_from_config(const oci_device *cd, struct dev_node *d, tern_error **err)
{
	memset(d, 0, sizeof(*d));
	d->path = cd->path;
	if (cd->type == NULL)
		return tern_error_make(err, EINVAL, "no type");
	if (strcmp(cd->type, "c") == 0 || strcmp(cd->type, "u") == 0)
		d->type = S_IFCHR;
	else if (strcmp(cd->type, "b") == 0)
		d->type = S_IFBLK;
	else if (strcmp(cd->type, "p") == 0)
		d->type = S_IFIFO;
	else
		return tern_error_make(err, EINVAL, "unknown type `%s`", cd->type);
	if (d->type != S_IFIFO && (!cd->major.set || !cd->minor.set))
		return tern_error_make(err, EINVAL, "major and minor are required for type `%s`",
				       cd->type);
	if (cd->major.value < 0 || cd->minor.value < 0 || cd->major.value > 0xfff ||
	    cd->minor.value > 0xfffff)
		return tern_error_make(err, EINVAL, "major/minor out of range");
	d->major = (unsigned)cd->major.value;
	d->minor = (unsigned)cd->minor.value;
	/* runtime-spec: fileMode defaults to 0666 when absent (runc too). */
	d->mode = cd->file_mode.set ? (mode_t)(cd->file_mode.value & 07777) : 0666;
	d->uid = cd->uid.set ? (uid_t)cd->uid.value : 0;
	d->gid = cd->gid.set ? (gid_t)cd->gid.value : 0;
	return 0;
}

static int make_symlink(int devfd, const char *target, const char *name, tern_error **err)
{
	if (symlinkat(target, devfd, name) < 0 && errno != EEXIST)
		return tern_error_make(err, errno, "symlink /dev/%s -> %s", name, target);
	return 0;
}

int tern_devices_setup(int rootfd, const oci_config *config, bool in_user_ns, tern_error **err)
{
	const oci_linux *lx = config ? config->linux_ : NULL;
	size_t ndev = lx ? lx->devices_len : 0;
	cleanup_close int devfd = -1;
	struct stat st;
	int ret;

	devfd = tern_mkdir_in_root(rootfd, "/dev", false, err);
	if (devfd < 0)
		return tern_error_wrap(err, "/dev");

	/* The defaults, unless linux.devices names the same path. */
	for (size_t i = 0; i < sizeof(default_devices) / sizeof(default_devices[0]); i++) {
		bool overridden = false;
		for (size_t j = 0; j < ndev; j++)
			if (lx->devices[j].path &&
			    strcmp(lx->devices[j].path, default_devices[i].path) == 0)
				overridden = true;
		if (overridden)
			continue;
		ret = create_device(rootfd, &default_devices[i], in_user_ns, err);
		if (ret < 0)
			return tern_error_wrap(err, "default device `%s`", default_devices[i].path);
	}
	for (size_t j = 0; j < ndev; j++) {
		struct dev_node d;
		const char *path = lx->devices[j].path ? lx->devices[j].path : "(none)";

		ret = device_from_config(&lx->devices[j], &d, err);
		if (ret == 0)
			ret = create_device(rootfd, &d, in_user_ns, err);
		if (ret < 0)
			return tern_error_wrap(err, "linux.devices[%zu] `%s`", j, path);
	}

	static const char *const links[][2] = {
	    {"/proc/self/fd", "fd"},
	    {"/proc/self/fd/0", "stdin"},
	    {"/proc/self/fd/1", "stdout"},
	    {"/proc/self/fd/2", "stderr"},
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		ret = make_symlink(devfd, links[i][0], links[i][1], err);
		if (ret < 0)
			return ret;
	}
	/* Like runc: only when the kernel has /proc/kcore (CONFIG_PROC_KCORE). */
	if (stat("/proc/kcore", &st) == 0) {
		ret = make_symlink(devfd, "/proc/kcore", "core", err);
		if (ret < 0)
			return ret;
	}
	/* /dev/ptmx must be the container's devpts instance (newinstance),
	 * not the host's: like runc, whatever stands there is replaced by a
	 * link into /dev/pts. */
	if (fstatat(devfd, "ptmx", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode))
			return tern_error_make(err, EISDIR, "/dev/ptmx");
		if (unlinkat(devfd, "ptmx", 0) < 0)
			return tern_error_make(err, errno, "remove /dev/ptmx");
	}
	return make_symlink(devfd, "pts/ptmx", "ptmx", err);
}
