/* linux.seccomp with libseccomp: the filter is compiled in the parent (so
 * a bad profile fails before anything is created, and the child does no
 * JSON or allocation work) and loaded by the child as its very last step
 * before execve, after no_new_privs. */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stddef.h>

typedef struct tern_seccomp_filter tern_seccomp_filter;

/* Build the BPF program. Unknown actions, ops, arches or syscalls are
 * errors naming the field (unknown syscall names are skipped with a debug
 * log, as runc does: a profile may name syscalls newer than the kernel). */
int tern_seccomp_compile(const oci_seccomp *seccomp, tern_seccomp_filter **out,
			 tern_error **err);

/* Load it into the calling process (child side). Needs no_new_privs or
 * CAP_SYS_ADMIN. */
int tern_seccomp_load(const tern_seccomp_filter *filter, tern_error **err);

void tern_seccomp_filter_free(tern_seccomp_filter *filter);
