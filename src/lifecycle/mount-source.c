/* Bind-mount sources: opened by the parent inside the container's mount
 * namespace, received and attached by the child (see mount-source.h). */
#include "mount-source.h"
#include "idmap.h"
#include "procfs.h"
#include "sync.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

struct tern_mount_sources {
	size_t n;	       /* config->mounts_len */
	tern_bind_source *src; /* one per mount, fd -1 where none */
};

static void sources_close(tern_bind_source *src, size_t n)
{
	for (size_t i = 0; src && i < n; i++)
		if (src[i].fd >= 0)
			close(src[i].fd);
	free(src);
}

void tern_mount_sources_free(tern_mount_sources *s)
{
	if (s == NULL)
		return;
	sources_close(s->src, s->n);
	free(s);
}

/* bind/rbind as a type or an option, the way mounts.c reads them. */
static int bind_kind(const oci_mount *m, bool *bind, bool *recursive, bool *ridmap,
		     tern_error **err)
{
	tern_mount_options opts;
	int ret = tern_mount_options_parse(m->options, &opts, err);

	if (ret < 0)
		return ret;
	tern_mount_options_clear(&opts); /* only the booleans are needed */
	*bind = opts.bind ||
		(m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0));
	*recursive = opts.recursive_bind || (m->type && strcmp(m->type, "rbind") == 0);
	*ridmap = opts.idmap_recursive;
	return 0;
}

/* The propagation the tree gets before it is attached. A copy of a mount
 * of the container's namespace is still a peer of the host's mount when
 * the namespace has no user namespace of its own: left like that, what the
 * container mounts below it would appear on the host. The rootfs stage
 * makes every mount a slave of the host's unless linux.rootfsPropagation
 * says otherwise: the trees follow the same rule. */
static unsigned long tree_propagation(const oci_config *config)
{
	const char *p = config->linux_ ? config->linux_->rootfs_propagation : NULL;

	if (p && strstr(p, "shared"))
		return 0; /* keep the peer group: the container asked to share */
	if (p && strstr(p, "private"))
		return MS_PRIVATE;
	return MS_SLAVE;
}

typedef struct {
	int bundlefd;	       /* the bundle, for relative sources */
	int userns;	       /* the container's user namespace, or -1 */
	unsigned long prop;    /* tree_propagation */
	bool no_new_mount_api; /* open_tree or mount_setattr said ENOSYS */
	bool *on_host;	       /* per mount: to be cloned in tern's own namespace */
	bool host_copy;	       /* this pass makes those copies */
} open_ctx;

/* open_tree, then the propagation: 1 and the tree in *out, 0 when the
 * kernel lacks either call, or a negative errno. */
static int open_tree_source(open_ctx *oc, const char *source, bool recursive, int *out)
{
	struct mount_attr attr = {.propagation = oc->prop};
	cleanup_close int tree = -1;

	*out = -1;
	tree = open_tree(oc->bundlefd, source,
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return errno == ENOSYS ? 0 : -errno;
	if (oc->prop != 0 &&
	    mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return errno == ENOSYS ? 0 : -errno;
	*out = steal_fd(&tree);
	return 1;
}

/* A copy made in tern's own namespace (open_one's plain bind with mounts
 * under it, in a user namespace) is not locked as the copies in the
 * container's namespace are: the container's root could remount it
 * read-write, suid, dev or exec (tried: `mount -o remount,bind,rw` worked
 * on such a copy of a read-only mount, and failed on an rbind's). So only
 * a mount without those flags is copied so; for one with any of them, the
 * user is told what works instead. */
static int check_host_copy(int tree, const oci_mount *m, size_t index, tern_error **err)
{
	static const struct {
		unsigned long flag;
		const char *name;
	} locked[] = {
	    {ST_RDONLY, "ro"}, {ST_NOSUID, "nosuid"}, {ST_NODEV, "nodev"}, {ST_NOEXEC, "noexec"}};
	struct statvfs sv;
	char flags[32] = "";

	if (fstatvfs(tree, &sv) < 0)
		return tern_error_make(err, errno, "statvfs `%s`", m->source);
	for (size_t i = 0; i < sizeof(locked) / sizeof(locked[0]); i++)
		if (sv.f_flag & locked[i].flag)
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "%s%s",
				 flags[0] ? "," : "", locked[i].name);
	if (flags[0] == '\0')
		return 0;
	return tern_error_make_quiet(
	    err, EPERM,
	    "a plain bind of `%s` (mounts[%zu]) in a user namespace: it has mounts under it, "
	    "which the container's namespace keeps locked, and its own mount is %s, which a "
	    "copy made outside that namespace would not keep locked; use \"rbind\", or bind "
	    "a directory with no mounts under it",
	    m->source, index, flags);
}

static int open_one(open_ctx *oc, const oci_mount *m, size_t index, bool recursive, bool ridmap,
		    tern_bind_source *out, tern_error **err)
{
	bool idmap = tern_idmap_wanted(m);
	int fd = -1, ret;

	if (m->source == NULL)
		return tern_error_make_quiet(err, EINVAL, "a bind mount needs a source");
	if (!oc->no_new_mount_api) {
		ret = open_tree_source(oc, m->source, recursive, &fd);
		if (ret == -EINVAL && !recursive && oc->userns >= 0 && oc->on_host != NULL) {
			/* A plain bind of a directory with mounts under it: in
			 * a namespace made for a less privileged user namespace
			 * those submounts are locked, and the kernel refuses a
			 * copy without them (it would show what they cover).
			 * The host's root asked for exactly that copy: it is
			 * made in tern's own namespace instead, as crun does
			 * (tern_mount_sources_prepare, once back there). */
			oc->on_host[index] = true;
			return 0;
		}
		/* The bare strerror reads "mount `src` to `dst` (mounts[N]):
		 * No such file or directory" once the caller wraps it. */
		if (ret < 0)
			return tern_error_make_literal(err, -ret, strerror(-ret));
		oc->no_new_mount_api = ret == 0;
	}
	if (fd >= 0 && oc->host_copy) {
		ret = check_host_copy(fd, m, index, err);
		if (ret < 0) {
			close(fd);
			return ret;
		}
	}
	if (fd >= 0) {
		*out = (tern_bind_source){.fd = fd, .tree = true};
		if (idmap)
			return tern_idmap_apply(fd, m, index, ridmap, oc->userns, err);
		return 0;
	}
	if (idmap)
		return tern_error_make_quiet(err, ENOSYS,
					     "idmapped mounts need open_tree and mount_setattr "
					     "(Linux 5.12), which this kernel lacks");
	fd = openat(oc->bundlefd, m->source, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make_literal(err, errno, strerror(errno));
	*out = (tern_bind_source){.fd = fd, .tree = false};
	return 0;
}

/* The container's user namespace, when it has one of its own: the mapping
 * an `idmap` without mappings of its own takes. */
static int open_userns(int procfd, pid_t pid)
{
	char path[64];
	struct stat theirs, ours;
	int fd;

	snprintf(path, sizeof(path), "%d/ns/user", pid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &theirs) == 0 && fstatat(procfd, "self/ns/user", &ours, 0) == 0 &&
	    theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Where the parent was before entering the container's mount namespace:
 * setns resets the root and cwd to the namespace's root, both ways. */
typedef struct {
	int mntns, root, cwd;
} saved_place;

static void saved_place_close(saved_place *s)
{
	tern_closep(&s->mntns);
	tern_closep(&s->root);
	tern_closep(&s->cwd);
}

static int leave_mntns(saved_place *s, tern_error **err)
{
	if (setns(s->mntns, CLONE_NEWNS) < 0 || fchdir(s->root) < 0 || chroot(".") < 0 ||
	    fchdir(s->cwd) < 0)
		return tern_error_make(err, errno, "return to tern's own mount namespace");
	return 0;
}

/* Enter the mount namespace `target`; 0 when already there (a container
 * without a mount namespace of its own), 1 when entered, -EPERM when we
 * may not (a rootless tern), another negative errno on error. */
static int enter_mntns(int procfd, int target, saved_place *s, tern_error **err)
{
	struct stat theirs, ours;

	s->mntns = s->root = s->cwd = -1;
	if (fstat(target, &theirs) < 0)
		return tern_error_make(err, errno, "stat the container's mount namespace");
	/* ns/ files are magic links: tern_procfs_openat would refuse them. */
	s->mntns = openat(procfd, "self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (s->mntns < 0)
		return tern_error_make(err, errno, "open /proc/self/ns/mnt");
	if (fstat(s->mntns, &ours) < 0)
		return tern_error_make(err, errno, "stat our mount namespace");
	if (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev)
		return 0;
	s->root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	s->cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->root < 0 || s->cwd < 0)
		return tern_error_make(err, errno, "open our root and working directory");
	if (setns(target, CLONE_NEWNS) < 0)
		return errno == EPERM
			   ? -EPERM
			   : tern_error_make(err, errno, "enter the container's mount namespace");
	return 1;
}

/* Inside the container's mount namespace: open every bind source. With
 * `only` (back in tern's own namespace), just the mounts it marks. */
static int open_all(const oci_config *config, open_ctx *oc, const bool *only, tern_mount_sources *s,
		    tern_error **err)
{
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *m = &config->mounts[i];
		bool bind, recursive, ridmap;
		int ret;

		if (only != NULL && !only[i])
			continue;
		ret = bind_kind(m, &bind, &recursive, &ridmap, err);
		if (ret == 0 && !bind)
			continue;
		if (ret == 0)
			ret = open_one(oc, m, i, recursive, ridmap, &s->src[i], err);
		if (ret < 0)
			return tern_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])",
					       m->source ? m->source : "none",
					       m->destination ? m->destination : "", i);
	}
	return 0;
}

static bool any_bind(const oci_config *config)
{
	for (size_t i = 0; i < config->mounts_len; i++) {
		bool bind = false, recursive, ridmap;
		if (bind_kind(&config->mounts[i], &bind, &recursive, &ridmap, NULL) < 0 || bind)
			return true;
	}
	return false;
}

/* What a parent that may not enter the container's mount namespace (a
 * rootless tern) can do: nothing; the child opens the sources with the same
 * credentials, except that idmapped mounts need privileges. */
static int cannot_enter(const oci_config *config, tern_error **err)
{
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *m = &config->mounts[i];
		if (tern_idmap_wanted(m))
			return tern_error_make(err, EPERM,
					       "mount `%s` to `%s` (mounts[%zu]): idmapped mounts "
					       "need CAP_SYS_ADMIN",
					       m->source ? m->source : "none",
					       m->destination ? m->destination : "", i);
	}
	return 0;
}

static bool any_marked(const bool *marks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (marks[i])
			return true;
	return false;
}

static tern_mount_sources *sources_new(size_t n)
{
	tern_mount_sources *s = tern_xmalloc0(sizeof(*s));

	s->n = n;
	s->src = tern_xmalloc0((n + 1) * sizeof(*s->src));
	for (size_t i = 0; i < n; i++)
		s->src[i].fd = -1;
	return s;
}

/* One pass of open_all with the bundle opened in the current mount
 * namespace: `mark` (in the container's) notes the plain binds to copy
 * from tern's own; `only` (back in tern's own) copies just those. */
static int open_pass(const oci_config *config, const char *bundle, int userns, bool *mark,
		     const bool *only, tern_mount_sources *s, tern_error **err)
{
	cleanup_close int bundlefd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (bundlefd < 0)
		return tern_error_make(err, errno, "open the bundle `%s`", bundle);
	open_ctx oc = {.bundlefd = bundlefd,
		       .userns = userns,
		       .prop = tree_propagation(config),
		       .on_host = mark,
		       .host_copy = only != NULL};
	return open_all(config, &oc, only, s, err);
}

int tern_mount_sources_prepare(const oci_config *config, pid_t pid, const char *bundle,
			       tern_mount_sources **out, tern_error **err)
{
	cleanup_close int procfd = -1, target = -1, userns = -1;
	cleanup_free bool *on_host = NULL;
	saved_place place = {-1, -1, -1};
	tern_mount_sources *s = NULL;
	char path[64];
	int entered, ret;

	*out = NULL;
	if (!any_bind(config))
		return 0;
	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return procfd;
	snprintf(path, sizeof(path), "%d/ns/mnt", pid);
	target = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (target < 0 && (errno == EACCES || errno == EPERM))
		return cannot_enter(config, err);
	if (target < 0)
		return tern_error_make(err, errno, "open /proc/%s", path);
	userns = open_userns(procfd, pid);

	entered = enter_mntns(procfd, target, &place, err);
	if (entered < 0) {
		saved_place_close(&place);
		return entered == -EPERM ? cannot_enter(config, err) : entered;
	}
	/* Opened in there: a path resolved from an fd of the host's own
	 * namespace would give a mount of that namespace. */
	on_host = tern_xmalloc0((config->mounts_len + 1) * sizeof(*on_host));
	s = sources_new(config->mounts_len);
	ret = open_pass(config, bundle, userns, entered == 1 ? on_host : NULL, NULL, s, err);
	/* Back before anything else, on success and failure alike. */
	if (entered == 1 && leave_mntns(&place, ret < 0 ? NULL : err) < 0 && ret == 0)
		ret = -EIO;
	saved_place_close(&place);
	/* The plain binds that could not be copied in there (open_one): from
	 * here, with the bundle opened again in this namespace. */
	if (ret == 0 && entered == 1 && any_marked(on_host, config->mounts_len))
		ret = open_pass(config, bundle, userns, NULL, on_host, s, err);
	if (ret < 0) {
		tern_mount_sources_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

int tern_mount_sources_send(int sync_fd, const tern_mount_sources *s, tern_error **err)
{
	int32_t count = 0;
	int ret;

	for (size_t i = 0; s && i < s->n; i++)
		count += s->src[i].fd >= 0;
	ret = tern_sync_send(sync_fd, SYNC_MOUNT_SOURCES, count, err);
	for (size_t i = 0; ret == 0 && s && i < s->n; i++) {
		if (s->src[i].fd < 0)
			continue;
		ret = tern_sync_send_fd_value(sync_fd, SYNC_MOUNT_SOURCE,
					      (int32_t)(i * 2 + (s->src[i].tree ? 1 : 0)),
					      s->src[i].fd, err);
	}
	return ret;
}

/* ---- the child's side ---- */

int tern_mount_sources_receive(int sync_fd, const oci_config *config, tern_bind_source **out,
			       tern_error **err)
{
	int32_t count = 0;
	int ret = tern_sync_expect(sync_fd, SYNC_MOUNT_SOURCES, &count, err);

	if (ret < 0)
		return ret;
	/* by mount: found again by the mount's index in the config, which
	 * the clone and the fork keep */
	size_t n = config->mounts_len;
	tern_bind_source *src = tern_xmalloc0((n + 1) * sizeof(*src));

	for (size_t i = 0; i < n; i++)
		src[i].fd = -1;
	*out = src;
	for (int32_t k = 0; k < count; k++) {
		int32_t value = 0;
		int fd = -1;
		size_t index;

		ret = tern_sync_expect_fd_value(sync_fd, SYNC_MOUNT_SOURCE, &value, &fd, err);
		if (ret < 0)
			return ret;
		index = (size_t)value / 2;
		if (value < 0 || index >= n || src[index].fd >= 0) {
			close(fd);
			return tern_error_make(err, EPROTO, "sync: a mount source for mounts[%d]",
					       value / 2);
		}
		src[index] = (tern_bind_source){.fd = fd, .tree = (value & 1) != 0};
	}
	return 0;
}
