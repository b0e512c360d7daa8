/* linux.seccomp with libseccomp: the filter is compiled in the parent (so
 * a bad profile fails before anything is created, and the child does no
 * JSON or allocation work) and loaded by the child as late as it can: the
 * last step before execve, after no_new_privs, unless it needs
 * CAP_SYS_ADMIN or must hand a notify fd to the parent (sync.h says where
 * it is loaded then). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct tern_seccomp_filter tern_seccomp_filter;

/* Build the BPF program. Unknown actions, ops, arches or flags, and flags
 * this kernel lacks, are errors naming the field
 * ("linux.seccomp.syscalls[3].action: unknown action `X`").
 * SCMP_ACT_NOTIFY needs listenerPath, and may be neither the default
 * action nor the action for sendmsg (tern's own hand-over of the fd). Unknown syscall names are
 * skipped with a debug log, as runc does: a profile may name syscalls newer
 * than the kernel. A rule with the default action is dropped (it changes
 * nothing, and libseccomp refuses it). Unless the default action lets
 * calls run, a syscall numbered above every one the profile names gets
 * ENOSYS, as in runc (seccomp.c says why). *out is owned by the caller.
 * With cache_root (the state root) the program is looked up in, and
 * stored to, a cache there: the same profile compiles once per libseccomp
 * and kernel. */
int tern_seccomp_compile(const oci_seccomp *seccomp, const char *cache_root,
			 tern_seccomp_filter **out, tern_error **err);

/* Load it into the calling process (child side): one seccomp(2) call with
 * the profile's flags (TSYNC, LOG, SPEC_ALLOW...), no allocation and no
 * libseccomp. Needs no_new_privs or CAP_SYS_ADMIN. The filter stays owned
 * by the caller. With SCMP_ACT_NOTIFY rules *notify_fd is the listener fd
 * the kernel returned (close-on-exec), else -1. */
int tern_seccomp_load(const tern_seccomp_filter *filter, int *notify_fd, tern_error **err);

/* The filter has SCMP_ACT_NOTIFY rules: the process that loads it hands
 * its notify fd to the runtime, which passes it to listenerPath. */
bool tern_seccomp_has_notify(const tern_seccomp_filter *filter);

/* Runtime side: connect to linux.seccomp.listenerPath and send the
 * container process state of the runtime-spec (ociVersion, fds
 * ["seccompFd"], pid, metadata = listenerMetadata, state = `state_json`)
 * with `notify_fd` as SCM_RIGHTS. `pid` is the process that loaded the
 * filter, as the runtime sees it. */
int tern_seccomp_send_to_listener(const oci_seccomp *seccomp, int notify_fd, pid_t pid,
				  const char *state_json, tern_error **err);

/* For `tern features`: the flag names tern knows (up to max, returns how
 * many there are), and whether this kernel accepts one. */
size_t tern_seccomp_known_flags(const char **names, size_t max);
bool tern_seccomp_flag_supported(const char *name);

void tern_seccomp_filter_free(tern_seccomp_filter *filter);
