/* Fault injection points (fault.h); empty unless configured in. */
#include "fault.h"

#ifdef TERN_FAULT_INJECTION

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opened at the first point, which every command reaches before it
 * clones or pivots: the container's init writes its points through the
 * inherited fd after its root has changed. O_CLOEXEC keeps it out of the
 * container's program. */
static int trace_fd = -1;

static void trace(const char *name)
{
	const char *path = getenv("TERN_FAULT_TRACE");
	char line[256];
	int len;

	if (path == NULL || *path == '\0')
		return;
	if (trace_fd < 0)
		trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (trace_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%d %s\n", (int)getpid(), name);
	/* one write per line: O_APPEND keeps lines of several processes whole */
	if (len > 0 && (size_t)len < sizeof(line) && write(trace_fd, line, (size_t)len) < 0)
		return;
}

int tern_fault_trace_fd(void)
{
	return trace_fd;
}

void tern_fault_point(const char *name)
{
	const char *at = getenv("TERN_FAULT_KILL_AT");

	trace(name);
	if (at == NULL || strcmp(at, name) != 0)
		return;
	char msg[256];
	int len = snprintf(msg, sizeof(msg), "tern: fault injection: SIGKILL at %s\n", name);
	if (len > 0 && (size_t)len < sizeof(msg) && write(STDERR_FILENO, msg, (size_t)len) < 0)
		len = 0;
	kill(getpid(), SIGKILL);
	/* a pid-1 init in a new pid namespace ignores its own SIGKILL */
	_exit(137);
}

bool tern_fault_fails(const char *name)
{
	const char *fail = getenv("TERN_FAULT_FAIL");

	return fail != NULL && strcmp(fail, name) == 0;
}

#endif
