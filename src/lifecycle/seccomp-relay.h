/* The notify fd of a linux.seccomp filter with SCMP_ACT_NOTIFY rules, on
 * its way from the child that loaded the filter to the listener: a step of
 * the parent/child protocol ((4b) in sync.h), so it lives with the
 * protocol, and seccomp.c knows only the filter and the listener. */
#pragma once

#include "error.h"
#include "oci-config.h"
#include "seccomp.h"

#include <sys/types.h>

/* The runtime's half of (4b) in sync.h, for create and exec alike: take the
 * notify fd the child sends on `sync_fd`, pass it to the listener, and let
 * the child go on (SYNC_SECCOMP_DONE). */
int tern_seccomp_relay_notify_fd(int sync_fd, const oci_seccomp *seccomp, pid_t pid,
				 const char *state_json, tern_error **err);

/* The child's half, for the init and an exec process alike: load the
 * filter; with SCMP_ACT_NOTIFY rules its fd goes to the parent for the
 * listener, and we wait until the listener has it. */
int tern_seccomp_load_and_hand_fd(const tern_seccomp_filter *filter, int sync_fd, tern_error **err);
