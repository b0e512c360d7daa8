/* OCI hooks: each hook gets the runtime-spec state JSON on stdin, its
 * args (args[0] is argv[0]; just {path} when absent) and env (empty when
 * absent), and is SIGKILLed after `timeout` seconds. Its stdout and stderr
 * are captured (the first 4 KiB of each) and, as runc does, put in the error.
 * A failing hook is an error naming the stage, the path and the exit status
 * or signal, e.g. "prestart hook `/x` exited with status 3, stdout: ...,
 * stderr: ...", or "... timed out after 5 s"; the first failure stops the
 * stage. The caller decides whether that is fatal (poststart and poststop
 * failures are only logged, as the spec says). SIGPIPE is blocked while a
 * hook runs, so a hook that ignores its stdin cannot kill tern. */
#pragma once

#include "error.h"
#include "oci-config.h"

int tern_hooks_run(const oci_hook_list *hooks, const char *stage, const char *state_json,
		   tern_error **err);
