/* A criu started before it is needed.
 *
 * libcriu starts criu for every call (fork, exec of `criu swrk`), and its
 * start (the exec, two dozen shared libraries and their constructors)
 * costs about 10-12 ms here. A snapshot pays that while the container is
 * frozen, between tern's freeze and criu's first step. So a dump may
 * start `criu swrk` itself, before the freeze, and have libcriu use it
 * (criu_local_set_service_fd): criu loads while tern prepares, and waits
 * for the request on its socket.
 *
 * The criu is tern's child, as libcriu's own would be: it runs in tern's
 * namespaces, gets its image and work directories through
 * /proc/TERN/fd/N (criu reopens the fds the request names from its
 * peer), and reads exactly one request. It is started with umask 077, as
 * a dump's criu must be (checkpoint-dump.c: images private from the
 * start). If tern dies before it sends the request, criu reads the end of
 * the socket and exits. Only dumps use one: a restore's criu must be
 * libcriu's (criu_local_restore_child, which makes the restored tree
 * tern's child). */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct tern_criu_swrk_s {
	pid_t pid; /* 0: none */
	int fd;	   /* tern's end of the socket; -1 once libcriu has it */
	int criu_fd; /* criu's end, as criu numbers it */
} tern_criu_swrk;

/* Start `criu swrk` on a new socket. An error leaves *w empty (the caller
 * then lets libcriu start its own). */
int tern_criu_swrk_start(tern_criu_swrk *w, const char *criu, tern_error **err);

/* Wait, at most `max_ms`, until criu is loaded and reading its socket (a
 * snapshot freezes only then); false if it did not get there in time. */
bool tern_criu_swrk_wait_ready(const tern_criu_swrk *w, int max_ms);

/* After the call that used it, or instead of one: close tern's end if it
 * is still ours (criu then exits), and reap criu. */
void tern_criu_swrk_finish(tern_criu_swrk *w);
