/* Checkpoint and restore for a user without root: see criu-rootless.h. */
#include "criu-rootless.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

bool tern_criu_rootless(void)
{
	return geteuid() != 0;
}

static bool own_userns(const oci_config *config)
{
	if (config == NULL || config->linux_ == NULL)
		return false;
	for (size_t i = 0; i < config->linux_->namespaces_len; i++)
		if (config->linux_->namespaces[i].type == OCI_NS_USER)
			return true;
	return false;
}

int tern_criu_rootless_refuse(const char *what, const char *id, const oci_config *config,
			      bool tcp_established, bool lazy_pages, tern_error **err)
{
	if (!tern_criu_rootless())
		return 0;
	/* the option-specific reasons first: they stay true whatever else
	 * changes */
	if (tcp_established)
		return tern_error_make_quiet(
		    err, EPERM,
		    "cannot %s `%s` without root: --tcp-established needs TCP repair, which "
		    "needs CAP_NET_ADMIN in the user namespace that owns the network namespace "
		    "(the host's, for a rootless container), and criu's unprivileged mode has "
		    "only CAP_CHECKPOINT_RESTORE; leave --tcp-established out, or run as root",
		    what, id);
	if (lazy_pages)
		return tern_error_make_quiet(
		    err, EPERM,
		    "cannot %s `%s` without root with --lazy-pages: the restored processes' "
		    "memory comes through a userfaultfd, which needs CAP_SYS_PTRACE in the host "
		    "unless vm.unprivileged_userfaultfd is 1; leave --lazy-pages out (a restore "
		    "then copies all memory before the processes run), or run as root",
		    what, id);
	if (strcmp(what, "restore") == 0)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "cannot restore `%s` without root: tern restores in a mount namespace of its "
		    "own (the container's root bound there for criu), which a user without root "
		    "may not make in the host's user namespace; run the restore as root",
		    id);
	if (own_userns(config))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "cannot %s `%s` without root: it has a user namespace of its own (every "
		    "rootless container has), and criu (4.2) cannot dump one without root: its "
		    "unprivileged mode checks the namespace from a child that must drop its "
		    "supplementary groups (CAP_SETGID in the host), and a criu inside the "
		    "container's user namespace may not read /proc/PID/map_files "
		    "(CAP_CHECKPOINT_RESTORE in the host); root can %s it",
		    what, id, what);
	return tern_error_make_quiet(err, ENOTSUP,
				     "cannot %s `%s` without root: it has no user namespace of its "
				     "own, so its processes run with host ids a user without root "
				     "has no rights over; run as root",
				     what, id);
}
