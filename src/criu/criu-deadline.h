/* A bound on a call into libcriu.
 *
 * libcriu forks `criu swrk` itself and waits on its socket with no
 * timeout, so a criu that hangs (or an action script of its that never
 * returns) would hang tern with it. A watcher forked before the call
 * SIGKILLs what the call started once the bound has passed: the calling
 * process's children that it did not have before (criu, and in a restore
 * the restored tree, which libcriu makes criu's sibling) with all their
 * descendants. libcriu then reads the end of the socket, reaps criu and
 * returns an error, and the caller undoes as for any failed criu run
 * (thaws the container after a dump, removes the half-restored one). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define TERN_CRIU_DEADLINE_MAX_CHILDREN 256

typedef struct {
	pid_t pid; /* the watcher; 0: none */
	/* the caller's children before the call: left alone */
	pid_t keep[TERN_CRIU_DEADLINE_MAX_CHILDREN];
	size_t nkeep;
	int fd; /* closed when the call returned; -1 */
	int timeout_ms;
	/* a child of the caller's from before the call that is the call's all
	 * the same (a criu started ahead, criu-swrk.h): killed too; 0 */
	pid_t also;
} tern_criu_deadline;

/* The bound of a criu dump or restore: TERN_CRIU_TIMEOUT (seconds), else 300 s. */
#define TERN_CRIU_TIMEOUT_DEFAULT_S 300
int tern_criu_timeout_ms(void);

/* Start watching for timeout_ms. Failing to start leaves no bound (the
 * call still runs): *d then holds no watcher. */
void tern_criu_deadline_start(tern_criu_deadline *d, int timeout_ms);

/* The call returned: stop the watcher. True if it had killed criu. */
bool tern_criu_deadline_stop(tern_criu_deadline *d);
