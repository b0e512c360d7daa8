/* The container child: every stage from "just cloned" to execve of
 * process.args, in order. Never returns: on error it reports {errno,
 * message} to the parent over the sync socket and exits. */
#pragma once

#include "container.h"

__attribute__((noreturn)) void tern_init_main(tern_container *c, int sync_fd);
