/* What a restore in place of a container with a user namespace of its own
 * needs of the images (restore-userns.h): opened to the container's root,
 * and what they say of the network namespace. */
#include "restore-userns.h"
#include "checkpoint-internal.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The host id that `maps` give the container's id 0: -1 when there is no
 * user namespace of the container's own or no mapping of 0. */
static unsigned root_host_id(const oci_config *config, bool gid)
{
	const oci_namespace *ns = tern_ckpt_config_ns(config, OCI_NS_USER);

	if (ns == NULL || ns->path != NULL || config->linux_ == NULL)
		return (unsigned)-1;
	const oci_id_mapping *maps =
	    gid ? config->linux_->gid_mappings : config->linux_->uid_mappings;
	size_t n = gid ? config->linux_->gid_mappings_len : config->linux_->uid_mappings_len;
	for (size_t i = 0; i < n; i++)
		if (maps[i].container_id == 0 && maps[i].size > 0)
			return maps[i].host_id;
	return (unsigned)-1;
}

static gid_t root_host_gid(const oci_config *config)
{
	return (gid_t)root_host_id(config, true);
}

/* The access mode (O_ACCMODE) `pid` has its `fd` open with, or -1. */
static int fd_accmode(pid_t pid, int fd)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/fdinfo/%d", pid, fd);
	cleanup_free char *data = NULL;
	size_t len;
	char *p;

	if (tern_read_file(path, &data, &len, 0, NULL) < 0 || (p = strstr(data, "flags:")) == NULL)
		return -1;
	return (int)(strtol(p + 6, NULL, 8) & O_ACCMODE);
}

int tern_ckpt_stdio_check_userns(const char *images, pid_t pid, const oci_config *config,
				 tern_error **err)
{
	uid_t uid = (uid_t)root_host_id(config, false);
	gid_t gid = root_host_gid(config);
	char kinds[3];
	unsigned modes[3];

	if (uid == (uid_t)-1 || uid == 0)
		return 0;
	tern_ckpt_outside_stdio(images, kinds, modes);
	for (int fd = 0; fd < 3; fd++) {
		cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", pid, fd);
		char target[PATH_MAX];
		struct stat st;
		if (kinds[fd] != 'f' || stat(link, &st) < 0)
			continue;
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = '\0';
		int acc = fd_accmode(pid, fd);
		unsigned shift = st.st_uid == uid ? 6 : st.st_gid == gid ? 3 : 0;
		unsigned need = (acc == O_RDONLY || acc == O_RDWR ? 4 : 0) |
				(acc == O_WRONLY || acc == O_RDWR ? 2 : 0);
		if (acc < 0 || (((st.st_mode >> shift) & 7) & need) != need)
			return tern_error_make_quiet(
			    err, EACCES,
			    "the init's fd %d is `%s` (uid %u, gid %u, mode %04o), which criu "
			    "reopens on restore as the container's root, host uid %u gid %u, "
			    "and it may not; give the container stdio it can open (a pipe, "
			    "/dev/null, or a file it may write)",
			    fd, target, (unsigned)st.st_uid, (unsigned)st.st_gid,
			    (unsigned)(st.st_mode & 07777), (unsigned)uid, (unsigned)gid);
	}
	return 0;
}

int tern_ckpt_netns_in_images(const char *images, bool *in_images, char ***veths, tern_error **err)
{
	descriptor d = {0};
	int ret = tern_ckpt_descriptor_read(images, &d, err);

	*in_images = false;
	*veths = NULL;
	if (ret == 0) {
		*in_images = !d.netns_external && !d.netns_fresh;
		*veths = d.veths;
		d.veths = NULL;
	}
	tern_ckpt_descriptor_clear(&d);
	return ret;
}
