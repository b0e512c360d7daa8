/* OCI hooks: each hook gets the runtime-spec state JSON on stdin, its
 * args (args[0] is argv[0]; just {path} when absent) and env (tern's own
 * environment when absent, as with runc and crun; none for an empty list),
 * and is SIGKILLed after `timeout` seconds. Its stdout and stderr are
 * captured (the first 4 KiB of each) and, as runc does, put in the error.
 * A failing hook is an error naming the stage, the path and the exit status
 * or signal, e.g. "prestart hook `/x` exited with status 3, stdout: ...,
 * stderr: ...", or "... timed out after 5 s". SIGPIPE is blocked while a
 * hook runs, so a hook that ignores its stdin cannot kill tern. */
#pragma once

#include "error.h"
#include "oci-config.h"

/* The stages whose failure fails the operation (prestart, createRuntime,
 * createContainer, startContainer): the first failure stops the stage. */
int tern_hooks_run(const oci_hook_list *hooks, const char *stage, const char *state_json,
		   tern_error **err);

/* poststart and poststop: every hook runs; each failure is a warning
 * ("poststop hook `/x` exited with status 3 (hook #1; going on)") and the
 * lifecycle goes on as if it had succeeded (runtime-spec). Returns how many
 * failed. */
int tern_hooks_run_all(const oci_hook_list *hooks, const char *stage, const char *state_json);

/* The same, run in `dir` (the bundle: runc runs every hook there, and
 * hooks written for it use paths relative to it; the spec says nothing).
 * A `dir` that cannot be entered (a bundle removed before `delete`) leaves
 * them in tern's own working directory. */
int tern_hooks_run_in(const char *dir, const oci_hook_list *hooks, const char *stage,
		      const char *state_json, tern_error **err);
int tern_hooks_run_all_in(const char *dir, const oci_hook_list *hooks, const char *stage,
			  const char *state_json);
