/* A bound on a call into libcriu.
 *
 * libcriu forks `criu swrk` itself and waits on its socket with no
 * timeout, so a criu that hangs (or an action script of its that never
 * returns) would hang tern with it. A watcher forked before the call
 * SIGKILLs the calling process's other descendants (criu and what it
 * started) once the bound has passed: libcriu then reads the end of the
 * socket, reaps criu and returns an error, and the caller undoes as for
 * any failed criu run (thaws the container). Only around a dump: a
 * restore's descendants are the restored container. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
	pid_t pid; /* the watcher; 0: none */
	int fd;	   /* closed when the call returned; -1 */
	int timeout_ms;
} tern_criu_deadline;

/* The bound of a criu dump: TERN_CRIU_TIMEOUT (seconds), else 300 s. */
#define TERN_CRIU_TIMEOUT_DEFAULT_S 300
int tern_criu_timeout_ms(void);

/* Start watching for timeout_ms. Failing to start leaves no bound (the
 * call still runs): *d then holds no watcher. */
void tern_criu_deadline_start(tern_criu_deadline *d, int timeout_ms);

/* The call returned: stop the watcher. True if it had killed criu. */
bool tern_criu_deadline_stop(tern_criu_deadline *d);
