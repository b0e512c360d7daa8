/* STUB: to be replaced by the real implementation. */
#include "mounts.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_mount_options_parse(char *const *options, tern_mount_options *out, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

void tern_mount_options_clear(tern_mount_options *opts)
{
}

int tern_mount_one(int rootfd, const char *rootfs_path, const oci_mount *m, bool in_user_ns,
		   tern_error **err)
{
	(void)0;
	return -ENOSYS;
}
