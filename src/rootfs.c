/* STUB: to be replaced by the real implementation. */
#include "rootfs.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_rootfs_setup(const tern_rootfs_ctx *ctx, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_rootfs_finalize(const tern_rootfs_ctx *ctx, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_rootfs_bind_console(const char *pts_path, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}
