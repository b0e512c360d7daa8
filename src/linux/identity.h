/* The container process's identity, set the same way for the init
 * (init.c) and for an exec'd process (exec.c). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>

/* Loads a seccomp filter that must go in before the user changes (it needs
 * CAP_SYS_ADMIN when no_new_privs is off: sync.h, stage A). */
typedef int (*tern_early_filter_fn)(void *data, tern_error **err);

/* In the order the kernel needs: stdio to the user (CAP_CHOWN), the
 * bounding set (CAP_SETPCAP), the early filter when `early_filter` is not
 * NULL, user and groups, capabilities. Then args[0] is looked up with the
 * credentials execve will judge it by, so that a missing or forbidden
 * executable fails create or exec, not the process after `start`. */
int tern_become_process(const oci_process *p, tern_early_filter_fn early_filter, void *data,
			tern_error **err);
