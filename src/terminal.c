/* STUB: to be replaced by the real implementation. */
#include "terminal.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

int tern_terminal_open(int *master, char **slave_path, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_terminal_set_size(int fd, unsigned rows, unsigned cols, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_terminal_become_controlling(const char *slave_path, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_console_socket_connect(const char *path, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_console_send_fd(int sock, int fd, const char *name, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_console_recv_fd(int sock, int *fd, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}

int tern_terminal_proxy(int master, tern_error **err)
{
	(void)0;
	return -ENOSYS;
}
