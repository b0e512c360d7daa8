/* STUB: to be replaced by the real implementation. */
#include "path-resolve.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_open_in_root(int rootfd, const char *path, int flags, mode_t mode, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_mkdir_in_root(int rootfd, const char *path, bool last_is_file, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

const char * tern_fd_path(int fd, char *buf, size_t size)
{
	return NULL;
}
