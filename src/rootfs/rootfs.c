/* The container's filesystem, in the order rootfs.h describes. Runs in the
 * child, single-threaded, inside its own mount namespace (or the caller's,
 * when linux.namespaces lists none: see host-mounts.h). */
#include "rootfs.h"
#include "devices.h"
#include "log.h"
#include "mountinfo.h"
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
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static bool str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* linux.rootfsPropagation as mount(2) flags; 0 when absent. */
static int parse_propagation(const char *s, unsigned long *out, tern_error **err)
{
	static const struct {
		const char *name;
		unsigned long flags;
	} table[] = {
	    {"private", MS_PRIVATE},	   {"rprivate", MS_PRIVATE | MS_REC},
	    {"shared", MS_SHARED},	   {"rshared", MS_SHARED | MS_REC},
	    {"slave", MS_SLAVE},	   {"rslave", MS_SLAVE | MS_REC},
	    {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
	};
	*out = 0;
	if (s == NULL || *s == '\0')
		return 0;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(s, table[i].name) == 0) {
			*out = table[i].flags;
			return 0;
		}
	}
	return tern_error_make(err, EINVAL, "linux.rootfsPropagation: unknown value `%s`", s);
}

static bool has_cgroupns(const oci_config *c)
{
	if (c->linux_ == NULL)
		return false;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == OCI_NS_CGROUP)
			return true;
	return false;
}

/* runc leaves /dev alone when the config bind-mounts it from elsewhere. */
static bool dev_is_bind_mounted(const oci_config *c)
{
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *d = m->destination;
		bool bind = str_eq(m->type, "bind") || str_eq(m->type, "rbind");

		for (size_t j = 0; !bind && m->options && m->options[j]; j++)
			bind = str_eq(m->options[j], "bind") || str_eq(m->options[j], "rbind");
		if (!bind || d == NULL)
			continue;
		while (*d == '/')
			d++;
		if (strncmp(d, "dev", 3) == 0 && strspn(d + 3, "/") == strlen(d + 3))
			return true;
	}
	return false;
}

/* One line of /proc/self/mountinfo, split; paths still escaped (a path
 * with a space, \040, simply never matches the rootfs: harmless). */
typedef struct {
	char *id, *parent, *dev, *root, *mp;
	char *group; /* N of "shared:N", or NULL */
	bool unbindable;
} mi_line;

static bool mi_parse(char *line, mi_line *out)
{
	char *f[16] = {0}, *p = NULL, *sep = strstr(line, " - ");
	int n = 0;

	if (sep)
		*sep = '\0';
	for (char *t = strtok_r(line, " ", &p); t && n < 16; t = strtok_r(NULL, " ", &p))
		f[n++] = t;
	if (n < 6)
		return false;
	*out = (mi_line){.id = f[0], .parent = f[1], .dev = f[2], .root = f[3], .mp = f[4]};
	/* The optional fields (shared:N, master:N, unbindable) follow field 6. */
	for (int i = 6; i < n; i++) {
		if (strncmp(f[i], "shared:", 7) == 0)
			out->group = f[i] + 7;
		if (strcmp(f[i], "unbindable") == 0)
			out->unbindable = true;
	}
	return true;
}

static bool is_dir_prefix(const char *prefix, const char *path)
{
	size_t len = strlen(prefix);
	if (strcmp(prefix, "/") == 0)
		return true;
	return strncmp(path, prefix, len) == 0 && (path[len] == '/' || path[len] == '\0');
}

/* The mount holding `path` (the one a lookup of `path` reaches: not a
 * mount shadowed or tucked under another on the same mount point), from
 * `info`, mountinfo's text, left as is. *buf is the copy that *out points
 * into, for the caller to free. */
static bool holding_mount(const char *info, const char *path, char **buf, mi_line *out)
{
	struct statx stx;
	char id[32];

	*buf = NULL;
	if (statx(AT_FDCWD, path, AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	snprintf(id, sizeof(id), "%llu", (unsigned long long)stx.stx_mnt_id);
	*buf = tern_xstrdup(info);
	for (char *line = *buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (mi_parse(line, out) && strcmp(out->id, id) == 0)
			return true;
	}
	return false;
}

/* pivot_root refuses a new root whose parent mount is shared
 * (IS_SHARED(new_mnt->mnt_parent)), our bind of the rootfs onto itself
 * would otherwise propagate to the host, and an unbindable one cannot be
 * bound at all: fix the mount holding the rootfs, in our namespace. A
 * slave keeps receiving the host's mounts (what rootfsPropagation "slave",
 * and the default rslave, ask of the rootfs: the bind of a slave is a slave
 * of the same master); otherwise it becomes private. */
static int fix_parent_mount(const char *rootfs, bool slave, tern_error **err)
{
	cleanup_free char *info = NULL, *buf = NULL;
	mi_line x;
	int ret;

	ret = tern_read_file("/proc/self/mountinfo", &info, NULL, 0, err);
	if (ret < 0)
		return ret;
	if (!holding_mount(info, rootfs, &buf, &x) || (x.group == NULL && !x.unbindable))
		return 0;
	unsigned long flag = x.group && slave ? MS_SLAVE : MS_PRIVATE;
	if (mount(NULL, x.mp, NULL, flag, NULL) < 0)
		return tern_error_make(err, errno, "make `%s` %s", x.mp,
				       flag == MS_SLAVE ? "a slave" : "private");
	return 0;
}

/* Without a mount namespace, the bind of the rootfs onto itself propagates
 * to every peer of the mount holding the rootfs. When a peer in our own
 * namespace shows the rootfs directory too (the rootfs is a bind of a
 * directory of a shared mount, in that mount's peer group: `mount --bind
 * rootfs rootfs` on a shared filesystem), the copy lands in our namespace,
 * tucked under the caller's own mount, and unmounting the container's
 * rootfs later would take the caller's mount with it: refuse, before
 * anything is mounted. (Paths with escaped characters never match: then
 * nothing is refused, as before.) */
static int refuse_propagation_loop(const char *rootfs, tern_error **err)
{
	cleanup_free char *info = NULL, *buf = NULL, *fsdir = NULL;
	mi_line x;
	int ret = tern_read_file("/proc/self/mountinfo", &info, NULL, 0, err);

	if (ret < 0)
		return ret;
	if (!holding_mount(info, rootfs, &buf, &x) || x.group == NULL)
		return 0;
	/* The rootfs directory as a path inside the filesystem. */
	const char *rel = strcmp(x.mp, "/") == 0 ? rootfs : rootfs + strlen(x.mp);
	fsdir = tern_strdup_printf("%s%s", strcmp(x.root, "/") == 0 ? "" : x.root, rel);
	for (char *line = info, *next; line && *line; line = next) {
		mi_line m;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!mi_parse(line, &m) || strcmp(m.id, x.id) == 0 || m.group == NULL ||
		    strcmp(m.group, x.group) != 0 || strcmp(m.dev, x.dev) != 0 ||
		    !is_dir_prefix(m.root, fsdir[0] ? fsdir : "/"))
			continue;
		return tern_error_make(
		    err, EINVAL,
		    "no mount namespace: the rootfs `%s` is on `%s`, a shared mount in the same "
		    "peer "
		    "group as `%s` here: the container's mounts would propagate onto the caller's "
		    "own "
		    "mounts and could not be taken away without them; make `%s` a private mount "
		    "(mount --make-private) or add a mount namespace to linux.namespaces",
		    rootfs, x.mp, m.mp, x.mp);
	}
	return 0;
}

/* Steps 1 and 2 (rootfs.h): cut propagation to the host, then bind the
 * rootfs onto itself. Returns an O_PATH fd to the bind's root. */
static int prepare_root(const tern_rootfs_ctx *ctx, unsigned long prop, tern_error **err)
{
	/* An unbindable tree cannot be bound (the rootfs onto itself, host
	 * directories into it): "unbindable" is set at step 8; until then the
	 * private mount the spec says it also is. */
	unsigned long early = prop & MS_UNBINDABLE ? MS_PRIVATE | (prop & MS_REC) : prop;
	bool slave = prop == 0 || (prop & MS_SLAVE);
	int fd, ret;

	if (!ctx->host_mount_ns) {
		/* runc uses the rootfsPropagation value here when one is set
		 * (so "rshared" keeps the host link, which bidirectional volumes
		 * need), rslave otherwise. */
		if (mount(NULL, "/", NULL, early ? early : MS_SLAVE | MS_REC, NULL) < 0)
			return tern_error_make(err, errno, "set the propagation of /");
		ret = fix_parent_mount(ctx->rootfs, slave, err);
		if (ret < 0)
			return tern_error_wrap(err, "rootfs `%s`", ctx->rootfs);
	} else {
		ret = refuse_propagation_loop(ctx->rootfs, err);
		if (ret < 0)
			return ret;
	}
	/* pivot_root needs the new root to be a mount point; without a mount
	 * namespace, this mount of our own is what root.readonly and
	 * rootfsPropagation change instead of the host's mount. */
	if (mount(ctx->rootfs, ctx->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind mount the rootfs `%s` onto itself",
				       ctx->rootfs);
	/* Opened after the bind, so it is the new mount's root. */
	fd = open(ctx->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open the rootfs `%s`", ctx->rootfs);
	if (ctx->host_mount_ns) {
		/* In the caller's namespace only the bind is ours to change: by
		 * default a slave (what rslave gives the rootfs in a namespace of
		 * its own), so that nothing mounted in the container propagates
		 * to the host's peers. "shared" is a new peer group, as the spec
		 * says, not the host's: private first. */
		char path[32];
		tern_fd_path(fd, path, sizeof(path));
		if (((prop & MS_SHARED) &&
		     mount(NULL, path, NULL, MS_PRIVATE | (prop & MS_REC), NULL) < 0) ||
		    mount(NULL, path, NULL, early ? early : MS_SLAVE | MS_REC, NULL) < 0) {
			ret = tern_error_make(err, errno, "set the propagation of the rootfs bind");
			close(fd);
			return ret;
		}
	}
	return fd;
}

/* ---- --no-pivot: the host's mounts out of reach ----
 *
 * MS_MOVE + chroot leaves the old root and every mount on it in the
 * container's mount namespace, hidden only by the chroot. The kernel lets
 * a process that owns a new user namespace mount a fresh procfs or sysfs
 * (unmasked: no maskedPaths, no read-only /proc/sys) as soon as a fully
 * visible one exists anywhere in its mount namespace (mount_too_revealing
 * walks the namespace, not the chroot): the host's /proc under the old
 * root is one. pivot_root detaches all of it; here every mount that is
 * neither the rootfs, under it, nor one of the mounts the rootfs sits on
 * is detached (or, where the kernel keeps it locked, in a user namespace,
 * covered with an empty read-only tmpfs, as runc does for proc and sysfs). */

typedef struct {
	unsigned long long id, parent;
	char *mp; /* unescaped */
	bool shared;
} ns_mount;

static void ns_mounts_free(ns_mount *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].mp);
	free(v);
}

/* The namespace's mounts, read again from `fd` (/proc/self/mountinfo,
 * opened before the first detach: the host's /proc goes too). */
static int ns_mounts_read(int fd, ns_mount **out, size_t *n)
{
	cleanup_free char *text = NULL;
	size_t cap = 0;
	ns_mount *v = NULL;
	int ret;

	*out = NULL;
	*n = 0;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	ret = tern_read_fd_all(fd, &text, NULL, 0);
	if (ret < 0)
		return ret;
	for (char *line = text, *next; line && *line; line = next) {
		mi_line x;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!mi_parse(line, &x))
			continue;
		if (*n == cap) {
			ns_mount *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));
			if (nv == NULL) {
				ns_mounts_free(v, *n);
				*n = 0;
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[*n] = (ns_mount){.id = strtoull(x.id, NULL, 10),
				   .parent = strtoull(x.parent, NULL, 10),
				   .mp = tern_mountinfo_unescape(x.mp),
				   .shared = x.group != NULL};
		(*n)++;
	}
	*out = v;
	return 0;
}

static const ns_mount *ns_mount_find(const ns_mount *v, size_t n, unsigned long long id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

/* Whether `anc` is `id` or one of the mounts it sits on. */
static bool ns_mount_within(const ns_mount *v, size_t n, unsigned long long id,
			    unsigned long long anc)
{
	for (size_t steps = 0; steps <= n; steps++) {
		const ns_mount *m;
		if (id == anc)
			return true;
		m = ns_mount_find(v, n, id);
		if (m == NULL || m->parent == id)
			return false;
		id = m->parent;
	}
	return false;
}

/* Whether a lookup of m->mp reaches m itself (not a mount on top of it,
 * nor nothing at all because a parent is gone already). */
static bool ns_mount_reachable(const ns_mount *m)
{
	struct statx stx;
	return statx(AT_FDCWD, m->mp, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx) ==
		   0 &&
	       (stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id == m->id;
}

static int detach_host_mounts(int rootfd, tern_error **err)
{
	cleanup_close int mi = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	struct statx stx;
	bool progress = true;

	if (mi < 0)
		return tern_error_make(err, errno, "--no-pivot: open /proc/self/mountinfo");
	if (statx(rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return tern_error_make(err, errno ? errno : ENOSYS,
				       "--no-pivot: the mount id of the rootfs");
	const unsigned long long root_id = stx.stx_mnt_id;

	/* Each round detaches what it can reach; a mount tucked under
	 * another one is reached in a later round. */
	for (int round = 0; progress && round < 4096; round++) {
		ns_mount *v = NULL;
		size_t n = 0;
		int ret = ns_mounts_read(mi, &v, &n);

		if (ret < 0)
			return tern_error_make(err, -ret, "--no-pivot: read /proc/self/mountinfo");
		progress = false;
		for (size_t i = 0; i < n && ret == 0; i++) {
			const ns_mount *m = &v[i], *p = ns_mount_find(v, n, m->parent);

			/* The rootfs and what is under it; the mounts it sits on
			 * (they hold it); mounts whose parent goes with them. */
			if (ns_mount_within(v, n, m->id, root_id) ||
			    ns_mount_within(v, n, root_id, m->id))
				continue;
			if (p != NULL && !ns_mount_within(v, n, root_id, p->id))
				continue;
			if (!ns_mount_reachable(m))
				continue;
			/* An unmount propagates to the peers of the parent and of
			 * the mounts below: slaves first, so the host keeps its
			 * mounts (rootfsPropagation "rshared" shares them). */
			if (p != NULL && p->shared && ns_mount_reachable(p) &&
			    mount(NULL, p->mp, NULL, MS_SLAVE, NULL) < 0) {
				ret = tern_error_make(err, errno, "--no-pivot: make `%s` a slave",
						      p->mp);
				break;
			}
			if (mount(NULL, m->mp, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
				ret = tern_error_make(err, errno, "--no-pivot: make `%s` a slave",
						      m->mp);
				break;
			}
			if (umount2(m->mp, MNT_DETACH) == 0) {
				progress = true;
				continue;
			}
			/* Locked (a user namespace's copy of the host's mounts):
			 * cover it instead; the kernel does not count a procfs or
			 * sysfs under a locked mount as fully visible. */
			if ((errno != EINVAL && errno != EPERM) ||
			    mount("tmpfs", m->mp, "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=000") < 0) {
				ret = tern_error_make(
				    err, errno, "--no-pivot: unmount or cover the host's `%s`",
				    m->mp);
				break;
			}
			progress = true;
		}
		ns_mounts_free(v, n);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int do_pivot(int rootfd, bool no_pivot, bool host_mount_ns, tern_error **err)
{
	if (fchdir(rootfd) < 0)
		return tern_error_make(err, errno, "chdir to the rootfs");
	if (host_mount_ns) {
		/* No mount namespace of our own: the caller's root must stay
		 * where it is, so neither pivot_root nor --no-pivot's move
		 * over "/": the container is chrooted into the rootfs, as runc
		 * and crun do. */
		if (chroot(".") < 0)
			return tern_error_make(err, errno, "chroot to the rootfs");
	} else if (no_pivot) {
		/* --no-pivot (e.g. a rootfs on ramfs, where pivot_root is
		 * refused): move the rootfs over / and chroot into it. The old
		 * root stays underneath (the mounts holding the rootfs), with
		 * nothing else of the host's on it. */
		int ret = detach_host_mounts(rootfd, err);
		if (ret < 0)
			return ret;
		if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
			return tern_error_make(err, errno, "move the rootfs onto /");
		if (chroot(".") < 0)
			return tern_error_make(err, errno, "chroot");
	} else {
		/* pivot_root(".", "."): the old root ends up mounted on top of
		 * the new one at "/", so no directory is needed in the image
		 * for it; then unmount it from there. */
		cleanup_close int oldroot = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (oldroot < 0)
			return tern_error_make(err, errno, "open the old root");
		if (syscall(SYS_pivot_root, ".", ".") < 0)
			return tern_error_make(err, errno, "pivot_root");
		/* What "." is after pivot_root(".", ".") is not promised by the
		 * kernel: step onto the old root explicitly, or the recursive
		 * slave below would hit the new root's mounts (and undo a
		 * "shared" mount option). */
		if (fchdir(oldroot) < 0)
			return tern_error_make(err, errno, "chdir to the old root");
		/* Before the unmount: make it a slave, so the detach does not
		 * propagate back to the host (when rootfsPropagation made it
		 * shared). */
		if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0)
			return tern_error_make(err, errno, "make the old root a slave");
		if (umount2(".", MNT_DETACH) < 0)
			return tern_error_make(err, errno, "unmount the old root");
	}
	if (chdir("/") < 0)
		return tern_error_make(err, errno, "chdir to /");
	return 0;
}

/* Whether mounts[i]'s "ro" waits until the end of the setup (runc does so
 * for /dev): something goes under it later, a mount of the config (a bind
 * at /a/b under a read-only tmpfs at /a needs its mountpoint made) or, for
 * /dev, the devices, links, /dev/pts and /dev/console. Not when a later
 * mount covers it (same destination or above): the final remount finds
 * the mount by its destination, and would find that one. */
static bool ro_deferred(const oci_config *c, size_t i)
{
	cleanup_free char *di = NULL;
	bool under = false;

	if (c->mounts[i].destination == NULL)
		return false;
	di = tern_mount_clean_dest(c->mounts[i].destination);
	for (size_t j = i + 1; j < c->mounts_len; j++) {
		cleanup_free char *dj = NULL;
		if (c->mounts[j].destination == NULL)
			continue;
		dj = tern_mount_clean_dest(c->mounts[j].destination);
		if (is_dir_prefix(dj, di))
			return false;
		if (is_dir_prefix(di, dj))
			under = true;
	}
	return under || strcmp(di, "/dev") == 0;
}

/* The "ro" that ro_deferred() held back, now that everything under those
 * mounts is there: the mount itself read-only (mount_setattr, no /proc
 * needed), what is mounted under it keeps its own flags. */
static int apply_deferred_ro(int rootfd, const oci_config *c, tern_error **err)
{
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		tern_mount_options opts = {0};
		struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
		cleanup_close int fd = -1;
		struct statx stx;
		bool ro;

		if (str_eq(m->type, "cgroup") || str_eq(m->type, "cgroup2") || !ro_deferred(c, i))
			continue;
		/* Parsed once already, by the mount itself. */
		ro = tern_mount_options_parse(m->options, &opts, NULL) == 0 &&
		     (opts.flags & MS_RDONLY);
		tern_mount_options_clear(&opts);
		if (!ro)
			continue;
		fd = tern_open_in_root(rootfd, m->destination, O_PATH, 0, err);
		if (fd < 0)
			return tern_error_wrap(err, "mounts[%zu] `%s`: remount read-only", i,
					       m->destination);
		/* The root of a mount, or the lookup went somewhere else. */
		if (statx(fd, "", AT_EMPTY_PATH, 0, &stx) < 0 ||
		    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
		    !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
			return tern_error_make(err, EINVAL,
					       "mounts[%zu] `%s`: remount read-only: not a mount "
					       "point any more",
					       i, m->destination);
		if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
			return tern_error_make(err, errno, "mounts[%zu] `%s`: remount read-only", i,
					       m->destination);
	}
	return 0;
}

/* The source opened for mounts[i], if any; ownership of the fd moves to
 * the caller. */
static tern_bind_source take_source(const tern_rootfs_ctx *ctx, size_t i)
{
	tern_bind_source none = {.fd = -1, .tree = false}, got;

	if (ctx->bind_sources == NULL)
		return none;
	got = ctx->bind_sources[i];
	ctx->bind_sources[i] = none;
	return got;
}

int tern_rootfs_setup(const tern_rootfs_ctx *ctx, tern_error **err)
{
	const oci_config *c = ctx->config;
	unsigned long prop = 0;
	cleanup_close int rootfd = -1;
	bool cgroupns = has_cgroupns(c);
	int ret;

	if (ctx->rootfs == NULL || ctx->rootfs[0] != '/')
		return tern_error_make(err, EINVAL,
				       "root.path must be resolved to an absolute path");
	ret = parse_propagation(c->linux_ ? c->linux_->rootfs_propagation : NULL, &prop, err);
	if (ret < 0)
		return ret;

	/* 1, 2. */
	rootfd = prepare_root(ctx, prop, err);
	if (rootfd < 0)
		return rootfd;

	/* 3. The config's mounts, in order. */
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *src = m->source ? m->source : (m->type ? m->type : "none");

		if (ctx->before_cgroup_mount &&
		    (str_eq(m->type, "cgroup") || str_eq(m->type, "cgroup2"))) {
			ret = ctx->before_cgroup_mount(ctx->before_cgroup_mount_data, err);
			if (ret < 0)
				return ret;
		}
		ret = tern_mount_one_ex(rootfd, ctx->rootfs, m, take_source(ctx, i),
					ctx->in_user_ns, cgroupns, ro_deferred(c, i), err);
		if (ret < 0)
			return tern_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])", src,
					       m->destination ? m->destination : "", i);
	}

	/* 4. /dev, unless the config binds one in. */
	if (!dev_is_bind_mounted(c)) {
		ret = tern_devices_setup(rootfd, c, ctx->in_user_ns, err);
		if (ret < 0)
			return ret;
	}

	/* The spec's place for the prestart/createRuntime/createContainer hooks. */
	if (ctx->before_pivot) {
		ret = ctx->before_pivot(ctx->before_pivot_data, err);
		if (ret < 0)
			return ret;
	}

	/* 5. */
	return do_pivot(rootfd, ctx->no_pivot, ctx->host_mount_ns, err);
}

/* ---- after pivot_root: the new mount API, which needs no /proc ----
 *
 * The container's /proc may not be mounted (or not yet), so nothing here
 * goes through /proc/self/fd: open_tree/move_mount attach mounts to fds and
 * mount_setattr changes only the attributes named, leaving the ones the
 * kernel locked (nosuid, nodev, noexec from the host) as they are. */

/* Mount a clone of what `srcfd` points at on top of `dstfd`. Returns an fd
 * to the new mount (the caller closes it). */
static int bind_fd(int srcfd, int dstfd, bool recursive)
{
	cleanup_close int tree = -1;

	tree = (int)syscall(SYS_open_tree, srcfd, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
				(recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return -errno;
	if (syscall(SYS_move_mount, tree, "", dstfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	return steal_fd(&tree);
}

static int set_readonly(int mntfd, bool recursive)
{
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(mntfd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
			  sizeof(attr)) < 0)
		return -errno;
	return 0;
}

/* An empty, read-only tmpfs on `dstfd`. Every masked directory shows the
 * same one (*shared, the first mount, then a clone of it for each next
 * directory): a checkpoint then archives one empty tmpfs instead of one
 * per directory, each a tar and a gzip run by criu while the container is
 * frozen (and again to restore). */
int tern_rootfs_mount_empty_tmpfs(int dstfd, int *shared)
{
	cleanup_close int fsfd = -1, mnt = -1;

	if (*shared >= 0) {
		mnt = (int)syscall(SYS_open_tree, *shared, "",
				   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (mnt < 0)
			return -errno;
	} else {
		fsfd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
		if (fsfd < 0)
			return -errno;
		if (syscall(SYS_fsconfig, fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
			return -errno;
		mnt = (int)syscall(SYS_fsmount, fsfd, FSMOUNT_CLOEXEC,
				   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				       MOUNT_ATTR_NOEXEC);
		if (mnt < 0)
			return -errno;
	}
	if (syscall(SYS_move_mount, mnt, "", dstfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return -errno;
	if (*shared < 0)
		*shared = steal_fd(&mnt);
	return 0;
}

static int mask_paths(int rootfd, char *const *paths, tern_error **err)
{
	cleanup_close int devnull = -1, empty_tmpfs = -1;
	struct stat st;
	int ret;

	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int fd = -1;

		fd = tern_open_in_root(rootfd, paths[i], O_PATH, 0, NULL);
		if (fd == -ENOENT)
			continue; /* runc skips missing paths */
		if (fd < 0)
			return tern_error_make(err, -fd, "maskedPaths[%zu] `%s`", i, paths[i]);
		if (fstat(fd, &st) < 0)
			return tern_error_make(err, errno, "maskedPaths[%zu] `%s`", i, paths[i]);
		if (S_ISDIR(st.st_mode)) {
			ret = tern_rootfs_mount_empty_tmpfs(fd, &empty_tmpfs);
			if (ret < 0)
				return tern_error_make(err, -ret,
						       "maskedPaths[%zu] `%s`: mount a read-only "
						       "tmpfs",
						       i, paths[i]);
			continue;
		}
		if (devnull < 0) {
			/* The container's /dev/null is the image's to set up:
			 * make sure it is the real 1:3 before using it as a
			 * mask, or a file could be shown in place of secrets. */
			struct stat ns;
			devnull = tern_open_in_root(rootfd, "/dev/null", O_PATH, 0, err);
			if (devnull < 0)
				return tern_error_wrap(err, "maskedPaths");
			if (fstat(devnull, &ns) < 0 || !S_ISCHR(ns.st_mode) ||
			    ns.st_rdev != makedev(1, 3))
				return tern_error_make(err, ENODEV,
						       "maskedPaths: /dev/null is not the "
						       "character device 1:3");
		}
		ret = bind_fd(devnull, fd, false);
		if (ret < 0)
			return tern_error_make(err, -ret, "maskedPaths[%zu] `%s`: bind /dev/null",
					       i, paths[i]);
		close(ret);
	}
	return 0;
}

static int readonly_paths(int rootfd, char *const *paths, tern_error **err)
{
	for (size_t i = 0; paths && paths[i]; i++) {
		cleanup_close int fd = -1, mnt = -1;
		int ret;

		fd = tern_open_in_root(rootfd, paths[i], O_PATH, 0, NULL);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			return tern_error_make(err, -fd, "readonlyPaths[%zu] `%s`", i, paths[i]);
		/* Bind onto itself (with what is mounted below it), then
		 * read-only, recursively, keeping every other flag. */
		mnt = bind_fd(fd, fd, true);
		if (mnt < 0)
			return tern_error_make(err, -mnt, "readonlyPaths[%zu] `%s`: bind", i,
					       paths[i]);
		ret = set_readonly(mnt, true);
		if (ret < 0)
			return tern_error_make(
			    err, -ret, "readonlyPaths[%zu] `%s`: remount read-only", i, paths[i]);
	}
	return 0;
}

int tern_rootfs_finalize(const tern_rootfs_ctx *ctx, tern_error **err)
{
	const oci_config *c = ctx->config;
	const oci_linux *lx = c->linux_;
	cleanup_close int rootfd = -1;
	unsigned long prop = 0;
	int ret;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");

	/* The mounts whose "ro" waited for what goes under them (the
	 * console, set up just before, is the last thing made in /dev). */
	ret = apply_deferred_ro(rootfd, c, err);
	if (ret < 0)
		return ret;

	/* 6. */
	if (lx != NULL) {
		ret = mask_paths(rootfd, lx->masked_paths, err);
		if (ret < 0)
			return ret;
		ret = readonly_paths(rootfd, lx->readonly_paths, err);
		if (ret < 0)
			return ret;
	}

	/* 7. Only the root mount itself, as runc: mounts below keep their
	 * own flags (a rw volume stays writable). */
	if (c->root != NULL && c->root->readonly) {
		if (mount(NULL, "/", NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | tern_mount_locked_flags(rootfd, NULL),
			  NULL) < 0)
			return tern_error_make(err, errno, "root.readonly: remount / read-only");
	}

	/* 8. Now that the rootfs is "/", apply rootfsPropagation to it (done
	 * before pivot it would have applied to the host's root mount). */
	ret = parse_propagation(lx ? lx->rootfs_propagation : NULL, &prop, err);
	if (ret < 0)
		return ret;
	if (prop != 0 && mount(NULL, "/", NULL, prop, NULL) < 0)
		return tern_error_make(err, errno, "linux.rootfsPropagation: set on /");
	return 0;
}

int tern_rootfs_bind_console(int slave, const char *pts_path, tern_error **err)
{
	cleanup_close int rootfd = -1, devfd = -1, console = -1, mnt = -1;
	struct stat st;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");
	/* The source is the slave fd itself, not its path: /dev/pts/N could
	 * be anything by now (CVE-2025-52565). */
	if (fstat(slave, &st) < 0 || !S_ISCHR(st.st_mode) || !isatty(slave))
		return tern_error_make(err, ENOTTY, "console: `%s` is not a terminal", pts_path);
	devfd = tern_mkdir_in_root(rootfd, "/dev", false, err);
	if (devfd < 0)
		return tern_error_wrap(err, "console");
	/* Never through a symlink: whatever is not a plain file goes. */
	if (fstatat(devfd, "console", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return tern_error_make(err, EISDIR, "console: /dev/console");
		if (unlinkat(devfd, "console", 0) < 0)
			return tern_error_make(err, errno, "console: remove /dev/console");
	}
	console = openat(devfd, "console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (console < 0)
		return tern_error_make(err, errno, "console: create /dev/console");
	tern_closep(&console);
	console = openat(devfd, "console", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (console < 0)
		return tern_error_make(err, errno, "console: open /dev/console");
	/* A regular file, on the container's /dev: not something mounted
	 * there in the meantime. */
	if (fstat(console, &st) < 0 || !S_ISREG(st.st_mode))
		return tern_error_make(err, EEXIST, "console: /dev/console changed under us");
	mnt = bind_fd(slave, console, false);
	if (mnt < 0)
		return tern_error_make(err, -mnt, "console: bind `%s` on /dev/console", pts_path);
	return 0;
}
