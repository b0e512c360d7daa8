/* OCI hooks: each hook gets the runtime-spec state JSON on stdin, its
 * args (args[0] is argv[0]) and env, and is killed after `timeout` seconds.
 * A failing hook is an error naming the stage, the path and the exit status;
 * the caller decides whether that is fatal (poststart and poststop failures
 * are only logged, as the spec says). */
#pragma once

#include "error.h"
#include "oci-config.h"

int tern_hooks_run(const oci_hook_list *hooks, const char *stage, const char *state_json,
		   tern_error **err);
