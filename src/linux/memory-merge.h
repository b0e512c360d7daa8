/* Memory a clone shares with its siblings: the kernel's samepage merging
 * (KSM). A process marked with PR_SET_MEMORY_MERGE has all its anonymous
 * memory scanned by ksmd, which maps identical pages once, read-only, and
 * copies a page again on the first write to it. Clones restored from one
 * snapshot hold the same pages, so N of them come to cost about one. The
 * mark is inherited over fork and exec: set on tern while criu restores,
 * it reaches every restored process (criu forks them) and their children.
 *
 * Opt-in (tern clone --share-memory): pages merged across containers let a
 * process time another's writes (a copy-on-write fault is slow), which
 * leaks whether a page's contents exist elsewhere on the host. */
#ifndef TERN_MEMORY_MERGE_H
#define TERN_MEMORY_MERGE_H

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* This kernel can mark a whole process mergeable (Linux 6.4 or later,
 * built with CONFIG_KSM); else a clear error naming --share-memory. */
int tern_memory_merge_check(tern_error **err);

/* ksmd is running (/sys/kernel/mm/ksm/run is 1): marked pages merge. */
bool tern_memory_merge_ksmd_runs(void);

/* Mark (or unmark) the calling process; children made afterwards inherit. */
int tern_memory_merge_mark_self(bool on, tern_error **err);

/* `pid` is marked (its /proc/PID/ksm_stat says ksm_merge_any: yes). */
bool tern_memory_merge_is_marked(pid_t pid);

#endif
