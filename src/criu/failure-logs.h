/* The last failure's criu logs, kept in one known place per container:
 * ROOT/ID/last-failure/ (TERN_LAST_FAILURE_DIR, state.h). A criu run that
 * fails writes its log (dump.log, restore.log, lazy-pages.log, ...) into a
 * work directory that is often tern's own temporary one (a snapshot being
 * taken, a migration's work directory) and goes with the cleanup: the
 * error must cite a log that is still there. Every *.log of the work
 * directory is copied into last-failure/ before the error is made, and
 * the error cites the copy. The first copy of a tern process empties the
 * directory first, so that it holds one failure's logs, the last one's;
 * `tern delete` removes it with the state directory. */
#pragma once

/* Copy every regular *.log file of `work` into STATE_DIR/last-failure/
 * (made 0700; emptied the first time this process keeps logs there).
 * Returns the kept copy of `name` (malloc'd), or NULL when there is none
 * (no state directory, `name` not in `work`, a failed copy: debug
 * logged). */
char *tern_failure_logs_keep(const char *state_dir, const char *work, const char *name);
