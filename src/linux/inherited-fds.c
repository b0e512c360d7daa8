#include "inherited-fds.h"
#include "fault.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

void tern_stdio_fill_closed(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* no O_CLOEXEC: this is the slot's content from now on, for
		 * tern and for what it starts; open takes the lowest free fd,
		 * which is this one, as the ones below it are open already */
		int null = open("/dev/null", O_RDWR);
		if (null >= 0 && null != fd)
			close(null);
	}
}

int tern_inherited_fds_check(const char *flag, int n, tern_error **err)
{
	for (int fd = 3; fd < 3 + n; fd++) {
		bool open_here = fcntl(fd, F_GETFD) >= 0;
		if (!open_here || fd == tern_log_fd() || fd == tern_fault_trace_fd())
			return tern_error_make(err, EBADF,
					       "%s %d: fd %d (of 3 to %d) was not passed to tern",
					       flag, n, fd, 2 + n);
	}
	return 0;
}
