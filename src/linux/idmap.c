/* Idmapped mounts: the parent's half (see idmap.h). */
#include "idmap.h"
#include "procfs.h"
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

bool tern_idmap_wanted(const oci_mount *m)
{
	if (m->uid_mappings_len > 0 || m->gid_mappings_len > 0)
		return true;
	for (size_t i = 0; m->options && m->options[i]; i++)
		if (strcmp(m->options[i], "idmap") == 0 || strcmp(m->options[i], "ridmap") == 0)
			return true;
	return false;
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
static int userns_for(const oci_mount *m, size_t index, int container_userns, tern_error **err)
{
	if (m->uid_mappings_len > 0 || m->gid_mappings_len > 0) {
		char prefix[48];
		snprintf(prefix, sizeof(prefix), "mounts[%zu].", index);
		return make_userns(m->uid_mappings, m->uid_mappings_len, m->gid_mappings,
				   m->gid_mappings_len, prefix, err);
	}
	if (container_userns >= 0) {
		int fd = fcntl(container_userns, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return tern_error_make(err, errno, "dup the container's user namespace");
		return fd;
	}
	/* The config validator refuses this; kept for callers that skip it. */
	return tern_error_make_quiet(err, EINVAL,
				     "`idmap` without uidMappings/gidMappings needs the "
				     "container's user namespace mappings, and there are none");
}

int tern_idmap_apply(int tree, const oci_mount *m, size_t index, bool recursive,
		     int container_userns, tern_error **err)
{
	cleanup_close int userns = userns_for(m, index, container_userns, err);
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP};

	if (userns < 0)
		return userns;
	/* `ridmap` maps every mount of the copied tree, `idmap` only its top
	 * (for a plain bind the tree has nothing else). */
	attr.userns_fd = (unsigned long long)userns;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
			  sizeof(attr)) < 0) {
		int e = errno;
		if (e == EINVAL)
			return tern_error_make(err, e,
					       "make it idmapped (the filesystem does not support "
					       "idmapped mounts, or a mapping is not valid)");
		return tern_error_make(err, e, "make it idmapped");
	}
	return 0;
}
