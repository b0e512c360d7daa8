/* linux.seccomp with libseccomp: the filter is compiled in the parent (so
 * a bad profile fails before anything is created, and the child does no
 * JSON or allocation work) and loaded by the child as its very last step
 * before execve, after no_new_privs. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stddef.h>

typedef struct tern_seccomp_filter tern_seccomp_filter;

/* Build the BPF program. Unknown actions, ops, arches or flags are errors
 * naming the field relative to linux.seccomp ("syscalls[3]: unknown action
 * `X`"; the caller prefixes "linux.seccomp"). Unknown syscall names are
 * skipped with a debug log, as runc does: a profile may name syscalls newer
 * than the kernel. A rule with the default action is dropped (it changes
 * nothing, and libseccomp refuses it). *out is owned by the caller. */
int tern_seccomp_compile(const oci_seccomp *seccomp, tern_seccomp_filter **out, tern_error **err);

/* Load it into the calling process (child side): one seccomp(2) call with
 * the profile's flags (TSYNC, LOG, SPEC_ALLOW...), no allocation and no
 * libseccomp. Needs no_new_privs or CAP_SYS_ADMIN. The filter stays owned
 * by the caller. SCMP_ACT_NOTIFY is not supported yet (compile fails). */
int tern_seccomp_load(const tern_seccomp_filter *filter, tern_error **err);

void tern_seccomp_filter_free(tern_seccomp_filter *filter);
