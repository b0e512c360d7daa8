/* Idmapped mounts: the parent's half (see idmap.h). */
#include "idmap.h"
#include "procfs.h"
#include "mounts.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The trees made by tern_idmap_prepare, one slot per config mount (-1 when
 * that mount is not idmapped). The one piece of state shared across the
 * clone on purpose: the child finds its copy of the table by the mount's
 * address, which the clone keeps, so rootfs.c needs no extra plumbing. */
static struct {
	const oci_mount *mounts;
	size_t n;
	int *fds;
} prepared;

bool tern_idmap_wanted(const oci_mount *m)
{
	if (m->uid_mappings_len > 0 || m->gid_mappings_len > 0)
		return true;
	for (size_t i = 0; m->options && m->options[i]; i++)
		if (strcmp(m->options[i], "idmap") == 0 || strcmp(m->options[i], "ridmap") == 0)
			return true;
	return false;
}

void tern_idmap_release(void)
{
	for (size_t i = 0; i < prepared.n; i++)
		if (prepared.fds[i] >= 0)
			close(prepared.fds[i]);
	free(prepared.fds);
	prepared.fds = NULL;
	prepared.mounts = NULL;
	prepared.n = 0;
}

int tern_idmap_take(const oci_mount *m)
{
	if (prepared.fds == NULL || m < prepared.mounts || m >= prepared.mounts + prepared.n)
		return -1;
	int fd = prepared.fds[m - prepared.mounts];
	prepared.fds[m - prepared.mounts] = -1;
	return fd;
}

/* A user namespace holding the given maps, as an fd of its nsfs inode. A
 * helper child creates it and waits on a pipe; the maps are written from
 * here (root in the parent namespace), the namespace is opened, and the
 * child is killed: the fd alone keeps the namespace alive, and if tern dies
 * first the child reads EOF and exits. */
static int make_userns(const oci_id_mapping *uids, size_t n_uids, const oci_id_mapping *gids,
		       size_t n_gids, const char *field_prefix, tern_error **err)
{
	cleanup_close_pair int pipefd[2] = {-1, -1};
	cleanup_child pid_t child = -1;
	cleanup_close int procfd = -1;
	char path[64];
	int fd, ret;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	child = (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL,
			       NULL, NULL);
	if (child < 0)
		return tern_error_make(err, errno, "create a user namespace for the mapping");
	if (child == 0) {
		char c;
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(steal_fd(&pipefd[0]));

	ret = tern_ns_write_maps(child, uids, n_uids, gids, n_gids, field_prefix, err);
	if (ret < 0)
		return ret;
	procfd = tern_procfs_open(err);
	if (procfd < 0)
		return procfd;
	snprintf(path, sizeof(path), "%d/ns/user", child);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open /proc/%s", path);
	return fd;
}

/* The user namespace whose mapping mount `m` gets (see the spec's `idmap`
 * option: the mount's own mappings, else the container's). */
static int userns_for(const oci_config *config, const tern_ns_plan *plan, const oci_mount *m,
		      size_t index, tern_error **err)
{
	const oci_linux *lx = config->linux_;

	if (m->uid_mappings_len > 0 || m->gid_mappings_len > 0) {
		char prefix[48];
		snprintf(prefix, sizeof(prefix), "mounts[%zu].", index);
		return make_userns(m->uid_mappings, m->uid_mappings_len, m->gid_mappings,
				   m->gid_mappings_len, prefix, err);
	}
	if (lx && (lx->uid_mappings_len > 0 || lx->gid_mappings_len > 0))
		return make_userns(lx->uid_mappings, lx->uid_mappings_len, lx->gid_mappings,
				   lx->gid_mappings_len, "linux.", err);
	if (plan->join_fd[OCI_NS_USER] >= 0) {
		int fd = fcntl(plan->join_fd[OCI_NS_USER], F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return tern_error_make(err, errno, "dup the joined user namespace");
		return fd;
	}
	/* The config validator refuses this; kept for callers that skip it. */
	return tern_error_make_quiet(err, EINVAL,
				     "`idmap` without uidMappings/gidMappings needs the "
				     "container's user namespace mappings, and there are none");
}

static int prepare_one(const oci_config *config, const tern_ns_plan *plan, int bundlefd,
		       const oci_mount *m, size_t index, tern_error **err)
{
	tern_mount_options opts = {0};
	cleanup_close int tree = -1, userns = -1;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP};
	bool bind = m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0);
	bool recursive = m->type && strcmp(m->type, "rbind") == 0;
	int ret;

	ret = tern_mount_options_parse(m->options, &opts, err);
	if (ret < 0)
		return ret;
	tern_mount_options_clear(&opts); /* only the booleans are needed */
	bind = bind || opts.bind;
	recursive = recursive || opts.recursive_bind;
	if (!bind)
		return tern_error_make_quiet(err, EINVAL,
					     "idmapped mounts are only supported for bind mounts "
					     "(`bind` or `rbind` in options)");
	if (m->source == NULL)
		return tern_error_make_quiet(err, EINVAL, "a bind mount needs a source");

	/* A detached copy of the source; its submounts too for rbind. The
	 * source is a host path chosen by whoever wrote config.json (relative
	 * ones are relative to the bundle), so it is opened normally. */
	tree = open_tree(bundlefd, m->source,
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return tern_error_make_literal(err, errno, strerror(errno));

	userns = userns_for(config, plan, m, index, err);
	if (userns < 0)
		return userns;
	/* `ridmap` maps every mount of the copied tree, `idmap` only its top
	 * (for a plain bind the tree has nothing else). */
	attr.userns_fd = (unsigned long long)userns;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | (opts.idmap_recursive ? AT_RECURSIVE : 0),
			  &attr, sizeof(attr)) < 0) {
		int e = errno;
		if (e == EINVAL)
			return tern_error_make(err, e,
					       "make it idmapped (the filesystem does not support "
					       "idmapped mounts, or a mapping is not valid)");
		return tern_error_make(err, e, "make it idmapped");
	}
	prepared.fds[index] = steal_fd(&tree);
	return 0;
}

int tern_idmap_prepare(const oci_config *config, const tern_ns_plan *plan, const char *bundle,
		       tern_error **err)
{
	cleanup_close int bundlefd = -1;
	bool any = false;

	tern_idmap_release();
	for (size_t i = 0; i < config->mounts_len; i++)
		any = any || tern_idmap_wanted(&config->mounts[i]);
	if (!any)
		return 0;

	bundlefd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bundlefd < 0)
		return tern_error_make(err, errno, "open the bundle `%s`", bundle);
	prepared.mounts = config->mounts;
	prepared.n = config->mounts_len;
	prepared.fds = tern_xmalloc0(config->mounts_len * sizeof(int));
	for (size_t i = 0; i < config->mounts_len; i++)
		prepared.fds[i] = -1;

	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *m = &config->mounts[i];
		int ret;

		if (!tern_idmap_wanted(m))
			continue;
		ret = prepare_one(config, plan, bundlefd, m, i, err);
		if (ret < 0) {
			tern_idmap_release();
			return tern_error_wrap(err, "mount `%s` to `%s` (mounts[%zu])",
					       m->source ? m->source : "none",
					       m->destination ? m->destination : "", i);
		}
	}
	return 0;
}
