/* Lazy pages for a container with a user namespace of its own.
 *
 * criu opens the userfaultfd of a lazy restore in each restored process,
 * once that process is in the container's user namespace, and the kernel
 * lets it only with CAP_SYS_PTRACE in the host's user namespace or with
 * vm.unprivileged_userfaultfd=1 (which tern leaves alone: while it is 1,
 * any process of the host may open one). Linux 6.1's /dev/userfaultfd
 * (root's) makes one for whoever holds it open, with no other check:
 * tern-uffd-preload.so (uffd-preload.c), preloaded into that criu alone,
 * opens the device in criu's own process before it forks, hands each
 * restored process its userfaultfd through it, and closes it there
 * before the process runs again. */
#pragma once

#include <stdbool.h>

/* NULL when a restore here can take lazy pages through the device and
 * the preload; else why not (for the debug log) */
const char *tern_uffd_device_why_not(void);

/* LD_PRELOAD of the preload set for the criu about to start (a no-op if
 * it is not found), and the environment as it was again: set just before
 * libcriu starts criu, taken back once criu runs (its first notification)
 * and after it returned, so that nothing else tern starts gets it */
void tern_uffd_preload_arm(void);
void tern_uffd_preload_disarm(void);
