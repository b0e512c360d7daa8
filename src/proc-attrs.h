/* Attributes of the container process that are not capabilities:
 * rlimits, user and groups, umask, no_new_privs, oom_score_adj, sysctls,
 * and finally the exec of process.args. All of these run in the child. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <sys/types.h>

/* Each rlimit by name. One above the hard limit we may not raise (no
 * CAP_SYS_RESOURCE) fails with a message naming it, e.g.
 * "setrlimit RLIMIT_NOFILE (soft 30000, hard 30000): Operation not permitted". */
int tern_rlimits_apply(const oci_rlimit *rlimits, size_t n, tern_error **err);

/* Check rlimits against what this process may set, in the parent, before
 * anything is created (so a bad config leaves nothing behind). */
int tern_rlimits_check(const oci_rlimit *rlimits, size_t n, tern_error **err);

/* setgroups (additionalGids; skipped when setgroups is denied in a user ns
 * and there are none), setresgid, setresuid, keeping capabilities across the
 * uid change (PR_SET_KEEPCAPS) so tern_caps_apply can set them after. Also
 * applies user.umask (default 0022). Order in the child:
 * tern_caps_drop_bounding, tern_user_apply, tern_caps_apply. */
int tern_user_apply(const oci_user *user, tern_error **err);

int tern_no_new_privs_apply(tern_error **err);

/* Write /proc/self/oom_score_adj. */
int tern_oom_score_adj_apply(int value, tern_error **err);

/* linux.sysctl: each key (dots or slashes) written under /proc/sys; keys
 * with ".." or absolute paths are rejected. */
int tern_sysctl_apply(const oci_map *sysctl, tern_error **err);

/* In the parent, before anything is created: every linux.sysctl key must
 * belong to a namespace the container has of its own (ipc: kernel.shm*,
 * kernel.msg*, kernel.sem, fs.mqueue.*; network: net.*; uts:
 * kernel.domainname, kernel.hostname; pid: kernel.ns_last_pid), as runc
 * requires; any other key would change the host. */
int tern_sysctl_check(const oci_linux *lx, tern_error **err);

/* execve process.args[0] (looked up in the PATH of process.env when it has no
 * slash, like execvp does) with process.env. Only returns on failure, with
 * an error naming the executable ("exec `foo`: No such file or directory"). */
int tern_exec_process(const oci_process *process, tern_error **err);

/* The PATH-resolved executable, for checks before exec; NULL when not found. */
char *tern_find_executable(const char *name, char *const *env);

/* runc's rule: when process.env has no HOME, add HOME from the container's
 * /etc/passwd entry for the uid, or "/" without one. Call after the
 * container's root is in place. */
void tern_env_ensure_home(oci_process *process);
