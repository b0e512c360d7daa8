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
#include "mounts.h"
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

/* An O_PATH fd on `path` if it is the device `d`, else -1. The host path
 * is a name, the node is what matters: check it before showing it to the
 * container. */
static int open_if_device(const char *path, const struct dev_node *d)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != d->type ||
	    st.st_rdev != makedev(d->major, d->minor)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The name the kernel gives device `d` under /dev (DEVNAME in
 * /sys/dev/{char,block}/MAJ:MIN/uevent: "null", "dri/card0"), or NULL. */
static char *kernel_devname(const struct dev_node *d)
{
	char path[64];
	cleanup_free char *uevent = NULL;

	snprintf(path, sizeof(path), "/sys/dev/%s/%u:%u/uevent",
		 d->type == S_IFBLK ? "block" : "char", d->major, d->minor);
	if (tern_read_file(path, &uevent, NULL, 0, NULL) < 0)
		return NULL;
	for (char *line = uevent, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "DEVNAME=", 8) != 0)
			continue;
		line += 8;
		/* a name below /dev, nothing that climbs out of it */
		if (*line == '\0' || *line == '/' || strstr(line, "..") != NULL)
			return NULL;
		return tern_strdup_printf("/dev/%s", line);
	}
	return NULL;
}

/* The host's node of device `d`, to bind where mknod is not allowed (a
 * user namespace): at the same path, else wherever the kernel's devtmpfs
 * name for the numbers puts it (a config may name /dev/mynull what the
 * host calls /dev/null, as mknod would allow). A device the host does not
 * have cannot be shown: refused, naming it. */
static int open_host_node(const struct dev_node *d, tern_error **err)
{
	cleanup_free char *other = NULL;
	int fd = open_if_device(d->path, d);

	if (fd >= 0)
		return fd;
	other = kernel_devname(d);
	if (other != NULL && strcmp(other, d->path) != 0) {
		fd = open_if_device(other, d);
		if (fd >= 0)
			return fd;
	}
	return tern_error_make(err, ENODEV,
			       "the host has no device %c %u:%u to bind (none at `%s`%s%s%s); in "
			       "a user namespace device nodes cannot be created, only bound from "
			       "the host's",
			       d->type == S_IFBLK ? 'b' : 'c', d->major, d->minor, d->path,
			       other ? " or `" : "", other ? other : "", other ? "`" : "");
}

/* In a user namespace mknod of a device is EPERM: bind the host's node
 * (`host`, from open_host_node) onto an empty file instead; its owner and
 * mode are then the host's. Bound nosuid and noexec, as crun does: the
 * container has no business executing or trusting set-id bits of a node
 * of the host's /dev (runc 1.1.5 leaves both off). */
static int bind_device(int dirfd, const char *name, const struct dev_node *d, int host,
		       tern_error **err)
{
	cleanup_close int target = -1, mnt = -1;
	char hp[32], tp[32];
	int fd;

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
	/* The new mount, not the file it covers. */
	mnt = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (mnt < 0)
		return tern_error_make(err, errno, "open the bound device");
	if (mount(NULL, tern_fd_path(mnt, tp, sizeof(tp)), NULL,
		  MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC | tern_mount_locked_flags(mnt, NULL),
		  NULL) < 0)
		return tern_error_make(err, errno, "remount the bound device nosuid,noexec");
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

/* Whether device `d` is bound from the host rather than made with mknod. */
static bool bound_from_host(const struct dev_node *d, bool in_user_ns)
{
	return in_user_ns && d->type != S_IFIFO;
}

/* Make device `d`; `host` is its host node when it is to be bound
 * (open_host_node), or -1. */
static int create_device(int rootfd, const struct dev_node *d, bool in_user_ns, int host,
			 tern_error **err)
{
	cleanup_close int dirfd = -1, own_host = -1;
	cleanup_free char *name = NULL;
	bool bind = bound_from_host(d, in_user_ns);
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
	if (host < 0) {
		host = own_host = open_host_node(d, err);
		if (host < 0)
			return host;
	}
	return bind_device(dirfd, name, d, host, err);
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

/* One device to make, with where it comes from, for messages. */
struct dev_item {
	struct dev_node d;
	int host;	   /* the host's node to bind, or -1 */
	const char *field; /* "default device" or "linux.devices[N]" */
	char field_buf[40];
};

static void dev_items_free(struct dev_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (items[i].host >= 0)
			close(items[i].host);
	free(items);
}

/* Every device to make: the defaults unless linux.devices names the same
 * path, then linux.devices. With `in_user_ns`, each host node is found
 * first: a device the host lacks fails before anything is created. */
static int collect_devices(const oci_config *config, bool in_user_ns, struct dev_item **out,
			   size_t *nout, tern_error **err)
{
	const oci_linux *lx = config ? config->linux_ : NULL;
	size_t ndef = sizeof(default_devices) / sizeof(default_devices[0]);
	size_t ndev = lx ? lx->devices_len : 0, n = 0;
	struct dev_item *items = tern_xmalloc0((ndef + ndev + 1) * sizeof(*items));
	int ret = 0;

	for (size_t i = 0; i < ndef; i++) {
		bool overridden = false;
		for (size_t j = 0; j < ndev; j++)
			if (lx->devices[j].path &&
			    strcmp(lx->devices[j].path, default_devices[i].path) == 0)
				overridden = true;
		if (overridden)
			continue;
		items[n] = (struct dev_item){.d = default_devices[i], .host = -1};
		items[n++].field = "default device";
	}
	for (size_t j = 0; j < ndev; j++) {
		struct dev_item *it = &items[n];

		it->host = -1;
		snprintf(it->field_buf, sizeof(it->field_buf), "linux.devices[%zu]", j);
		it->field = it->field_buf;
		ret = device_from_config(&lx->devices[j], &it->d, err);
		if (ret < 0) {
			tern_error_wrap(err, "%s `%s`", it->field,
					lx->devices[j].path ? lx->devices[j].path : "(none)");
			goto out;
		}
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		if (!bound_from_host(&items[i].d, in_user_ns))
			continue;
		items[i].host = ret = open_host_node(&items[i].d, err);
		if (ret < 0) {
			tern_error_wrap(err, "%s `%s`", items[i].field, items[i].d.path);
			goto out;
		}
	}
	ret = 0;
out:
	if (ret < 0) {
		dev_items_free(items, n);
		return ret;
	}
	*out = items;
	*nout = n;
	return 0;
}

bool tern_devices_allowed(const oci_config *config, const char *path, mode_t type,
			  unsigned int major, unsigned int minor)
{
	const oci_linux *lx = config ? config->linux_ : NULL;
	size_t ndef = sizeof(default_devices) / sizeof(default_devices[0]);

	/* linux.devices first: a path it names replaces the default there */
	for (size_t j = 0; lx && j < lx->devices_len; j++) {
		struct dev_node d;
		tern_error *e = NULL;
		if (lx->devices[j].path == NULL || strcmp(lx->devices[j].path, path) != 0)
			continue;
		if (device_from_config(&lx->devices[j], &d, &e) < 0) {
			tern_error_free(e);
			return false;
		}
		return d.type == type && (type == S_IFIFO || (d.major == major && d.minor == minor));
	}
	for (size_t i = 0; i < ndef; i++)
		if (strcmp(default_devices[i].path, path) == 0)
			return default_devices[i].type == type && default_devices[i].major == major &&
			       default_devices[i].minor == minor;
	return false;
}

int tern_devices_setup(int rootfd, const oci_config *config, bool in_user_ns, tern_error **err)
{
	cleanup_close int devfd = -1;
	struct dev_item *items = NULL;
	size_t n = 0;
	struct stat st;
	int ret;

	ret = collect_devices(config, in_user_ns, &items, &n, err);
	if (ret < 0)
		return ret;
	devfd = tern_mkdir_in_root(rootfd, "/dev", false, err);
	if (devfd < 0) {
		dev_items_free(items, n);
		return tern_error_wrap(err, "/dev");
	}
	for (size_t i = 0; i < n; i++) {
		ret = create_device(rootfd, &items[i].d, in_user_ns, items[i].host, err);
		if (ret < 0) {
			tern_error_wrap(err, "%s `%s`", items[i].field, items[i].d.path);
			dev_items_free(items, n);
			return ret;
		}
	}
	dev_items_free(items, n);

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
