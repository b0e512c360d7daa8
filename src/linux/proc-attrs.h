/* Attributes of the container process that are not capabilities:
 * rlimits, user and groups, umask, no_new_privs, oom_score_adj, sysctls,
 * personality, scheduler, I/O priority, and finally the exec of
 * process.args. These run in the child; their checks (tern_*_check) run in
 * the parent first, so bad values fail before anything is created.
 *
 * Order in the child (src/lifecycle/init.c): signals reset (first), rlimits,
 * personality, scheduler (once in the container's cgroup), I/O priority,
 * inherited fds closed, stdio chowned, then bounding set, user,
 * capabilities, the args[0] check; after `start`: LSM exec labels (lsm.h),
 * no_new_privs, seccomp, exec. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
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
/* Also refused: kernel.hostname (the `hostname` field is its place) and a
 * kernel.domainname that differs from the `domainname` field; the message
 * names both. */
int tern_sysctl_check(const oci_config *config, tern_error **err);

/* execve process.args[0] (looked up in the PATH of process.env when it has no
 * slash, like execvp does) with process.env. Only returns on failure, with
 * an error naming the executable ("exec `foo`: No such file or directory"). */
int tern_exec_process(const oci_process *process, tern_error **err);

/* Where execve will find `name` (PATH from env when it has no slash, as
 * tern_exec_process searches it) and whether it may run it, judged with
 * the current credentials: 0 with *path set, or a negative errno:
 * -EACCES when a candidate exists but is a directory or other non-regular
 * file, lacks execute permission for us, or is on a noexec mount; -ENOENT
 * when none exists (execvp's rules: an EACCES candidate is remembered and
 * the search goes on). Uses faccessat(AT_EACCESS) and stat. */
int tern_find_executable(const char *name, char *const *env, char **path);

/* tern_find_executable for process.args[0] as an error for the user:
 * "exec `foo`: Permission denied" / "...: No such file or directory" (podman
 * maps those to exit codes 126 and 127). Call it where the process's
 * user, groups and capabilities are in place, so that it judges as execve
 * will; before that (as root) only its -ENOENT is certain. */
int tern_exec_check(const oci_process *process, tern_error **err);

/* Whether tern_exec_check can work here: false when a seccomp filter
 * already loaded denies the syscalls it makes (its errors would then say
 * nothing about the executable). */
bool tern_exec_check_possible(void);

/* Every signal back to its default action and an empty blocked mask:
 * the container process must not inherit what tern's caller ignored or
 * blocked (conmon ignores SIGPIPE, shells ignore SIGINT in background
 * jobs). Call first thing in the child, before any seccomp filter. */
int tern_signals_reset(tern_error **err);

/* runc's rule for stdio (fds 0-2): chown each to `uid`, keeping its gid,
 * unless it is that uid already or is /dev/null; EINVAL, EPERM and EROFS
 * (an owner or group not mapped in our user namespace, a read-only /dev)
 * leave it as it is. So a non-root process can reopen /dev/stdout or its
 * pty. Needs CAP_CHOWN: call before tern_user_apply. */
int tern_stdio_chown(uid_t uid, tern_error **err);

/* Close every fd from `first` up, except those in keep[]: close_range,
 * or where that is refused (old kernel, a seccomp profile around tern),
 * each fd a private procfs lists in /proc/self/fd. */
int tern_close_fds_except(int first, const int *keep, size_t nkeep, tern_error **err);

/* runc's rule: when process.env has no HOME, add HOME from the container's
 * /etc/passwd entry for the uid, or "/" without one. Call after the
 * container's root is in place. */
void tern_env_ensure_home(oci_process *process);

/* linux.personality: domain LINUX or LINUX32 plus flags (the kernel's
 * names: ADDR_NO_RANDOMIZE, UNAME26, ...), as one personality(2) value.
 * Unknown names fail naming the field ("linux.personality.domain: unknown
 * domain `X` ..."). */
int tern_personality_value(const oci_personality *p, unsigned long *out, tern_error **err);
/* personality(2) in the child; it survives the execve. */
int tern_personality_apply(const oci_personality *p, tern_error **err);

/* process.scheduler: the policy by name (SCHED_OTHER, SCHED_BATCH,
 * SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE), nice, priority, flags
 * and the deadline parameters, checked against what sched_setattr(2)
 * accepts (priority 1-99 for FIFO/RR and 0 otherwise, nice -20..19,
 * 1024 <= runtime <= deadline <= period for DEADLINE). Messages name the
 * field ("process.scheduler.priority: 120 is out of range ..."). */
int tern_scheduler_check(const oci_scheduler *s, tern_error **err);
/* sched_setattr on ourselves, in the child while it still has
 * CAP_SYS_NICE (before the user and capabilities change). */
int tern_scheduler_apply(const oci_scheduler *s, tern_error **err);

/* process.ioPriority: class IOPRIO_CLASS_RT, _BE or _IDLE, priority 0-7. */
int tern_io_priority_check(const oci_io_priority *io, tern_error **err);
/* ioprio_set on ourselves (the RT class needs CAP_SYS_ADMIN or
 * CAP_SYS_NICE: same place as the scheduler). */
int tern_io_priority_apply(const oci_io_priority *io, tern_error **err);

/* Every check above for a container's config (scheduler, ioPriority,
 * personality), in the parent before anything is created. */
int tern_proc_attrs_check(const oci_config *config, tern_error **err);
