/* Checkpoint and restore for a user without root (rootless): what criu
 * can do for one, and the refusal, up front and with the reason, of what
 * it cannot.
 *
 * criu runs as such a user in its unprivileged mode (--unprivileged; tern
 * asks for it whenever it runs without root), which needs the criu binary
 * itself to carry the file capability CAP_CHECKPOINT_RESTORE
 * (scripts/install-criu.sh gives it that one alone). What that mode
 * cannot do, seen with criu 4.2.1 on this kernel:
 *   - dump a process in a user namespace of its own, which every rootless
 *     container has: criu checks that the other namespaces belong to it
 *     from a child that drops its supplementary groups and takes the
 *     namespace's root ids, which needs CAP_SETGID and CAP_SETUID in the
 *     host ("Unable to drop supplementary groups", then "One or more
 *     namespaces doesn't belong to the target user namespace").
 *     criu started inside the container's user namespace instead (its
 *     owner may enter it) is root there but has no capability in the
 *     host's: it may not read /proc/PID/map_files (that needs
 *     CAP_CHECKPOINT_RESTORE in the initial user namespace), and its
 *     fallback, the mapped file's path, is a path in the container's
 *     mount namespace, not criu's ("Can't open PID's mapfile link").
 *   - a restore: tern's own restore works in a mount namespace of its
 *     own (the container's root bound for criu's --root), and a user
 *     without root may not make one in the host's user namespace.
 *   - TCP connections (--tcp-established): TCP repair needs CAP_NET_ADMIN
 *     in the network namespace's user namespace, the host's for a
 *     rootless container (it shares the host's network).
 *   - lazy pages: the restored processes' memory comes through a
 *     userfaultfd, which needs CAP_SYS_PTRACE in the host unless
 *     vm.unprivileged_userfaultfd is 1, and criu's page server with them.
 * Root checkpoints and restores containers in user namespaces, rootless
 * ones included (their uid maps are the user's). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* tern runs as a user without root */
bool tern_criu_rootless(void);

/* Rootless: an error saying why `what` ("checkpoint", "restore") of the
 * container `id` (its `config`) cannot be done, or 0 when tern runs as
 * root. `tcp_established` and `lazy_pages` are the options asked for. */
int tern_criu_rootless_refuse(const char *what, const char *id, const oci_config *config,
			      bool tcp_established, bool lazy_pages, tern_error **err);
