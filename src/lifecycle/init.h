/* The container child: every stage from "just cloned" to execve of
 * process.args, in order. Never returns: on error it reports {errno,
 * message} to the parent over the sync socket and exits. */
#pragma once

#include "container-shared.h"

__attribute__((noreturn)) void tern_init_main(tern_container *c, int sync_fd);

/* Whether the init stops before pivot_root for the parent ((4) in sync.h):
 * to run the prestart and createRuntime hooks, and to move linux.netDevices
 * in before the createContainer hooks and the sysctls can look for them. */
bool tern_init_awaits_parent(const oci_config *config);
