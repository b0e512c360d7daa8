/* A lazy restore whose memory is filled after the command has returned.
 *
 * `tern clone` returns once the clone runs; its memory is still coming in
 * from the snapshot's images through `criu lazy-pages` (criu-lazy-daemon.h),
 * first the pages the clone touches, then the rest. The daemon dies with
 * the process that started it, so that process cannot be tern's command:
 * it is the filler, a background process tern forks first (a session of
 * its own, stdio on /dev/null, no fd of the caller's), which starts the
 * daemon, passes its "listening" byte on to the restore, and then:
 *   - "ok" from tern (the container runs): waits for the daemon; if it
 *     fails before every page is in, the container's memory would read as
 *     zeros, so the filler deletes the container, if it is still the one
 *     restored (same init, same start time: not a later rollback's);
 *   - "abort" (the restore failed), or tern gone without a word (killed
 *     mid-restore): kills the daemon and, for the latter, deletes what the
 *     dead restore may have left under the id. */
#pragma once

#include "container.h"
#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
	pid_t pid;	/* the filler; 0: none */
	int ready_fd;	/* a byte once the daemon listens (for the restore) */
	int verdict_fd; /* tern's word to the filler */
} tern_lazy_filler;

#define TERN_LAZY_FILLER_INIT {.pid = 0, .ready_fd = -1, .verdict_fd = -1}

/* What the filler needs to find the container again and delete it. */
typedef struct {
	const tern_runtime *rt;
	const char *id;
	const char *socket; /* the daemon's, removed once it is done */
	void (*delete_it)(void *data);
	void *data;
} tern_lazy_filler_target;

/* Fork the filler, which starts `criu lazy-pages EXTRA... -D IMAGES` as
 * tern_lazy_daemon_start does. */
int tern_lazy_filler_start(const char *criu, const char *images, char *const extra[],
			   const tern_lazy_filler_target *t, tern_lazy_filler *f,
			   tern_error **err);

/* The restore succeeded (`ok`) or failed: tell the filler and let it go.
 * After a failure this waits for the filler, so that no daemon is left. */
void tern_lazy_filler_release(tern_lazy_filler *f, bool ok);
