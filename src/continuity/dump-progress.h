/* The progress of a criu dump while it runs, for the user who waits on a
 * frozen container (tern migrate's frozen dump in stop-and-copy and
 * pre-copy, tern snapshot): every TERN_PROGRESS_MS a "progress" event
 * (progress-event.h's tern_mig_event: a text line on stderr, or a JSON line on
 * stdout) with the bytes of the page images (pages-*.img) criu has written
 * so far into its image directory, and the rate since the event before
 * (since the dump began, for the first), and how long it has run. Once
 * the dump has succeeded, a last event (`last` true) gives the total, if
 * the dump took a tick or longer (a shorter dump stays silent). */
#pragma once

#include "error.h"
#include "progress-event.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
	const char *dir;  /* criu's image directory */
	uint64_t t_start; /* when the dump began (tern_mig_now_ns) */
	uint64_t t_last;  /* the last event, or t_start */
	uint64_t t_next;  /* when the next is due */
	uint64_t bytes;	  /* at the last event */
	bool shown;	  /* an event was printed */
} tern_dump_progress;

/* The size of the page images (pages-*.img) directly in `dir`. */
uint64_t tern_dump_pages_bytes(const char *dir);

void tern_dump_progress_init(tern_dump_progress *d, const char *dir, uint64_t t_start);
/* Milliseconds until the next event is due (0: now). */
int tern_dump_progress_wait_ms(const tern_dump_progress *d);
/* The event, if it is due. */
void tern_dump_progress_tick(tern_dump_progress *d, tern_mig_progress *p);
/* The dump has ended: the total, if an event was printed before. */
void tern_dump_progress_end(tern_dump_progress *d, tern_mig_progress *p);

/* For a dump this process makes itself, through libcriu (tern snapshot),
 * which returns only when it is over: a child prints the events
 * meanwhile, and the last once the dump ended. Started right before the
 * dump; stopped after it (always, once started: it is waited for). */
typedef struct {
	pid_t pid; /* 0: none */
	int fd;	   /* closed: the dump has ended */
} tern_dump_watcher;

int tern_dump_watcher_start(tern_dump_watcher *w, const char *dir, tern_mig_progress *p,
			    tern_error **err);
/* `ok`: the dump succeeded (its total is said) */
void tern_dump_watcher_stop(tern_dump_watcher *w, bool ok);
