/* Container lifecycle orchestration: create, start, run, state, kill,
 * delete, exec. This layer decides what happens in which order; the
 * syscalls live in the stage files (spawn, init, namespaces, rootfs...). */
#pragma once

#include "container-load.h"
#include "container-shared.h"
#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

int tern_container_create(const tern_runtime *rt, const char *id, const tern_create_opts *opts,
			  tern_error **err);
int tern_container_start(const tern_runtime *rt, const char *id, tern_error **err);

/* create + start + wait (or detach). *exit_status: the process's exit code,
 * 128+N when killed by signal N. */
int tern_container_run(const tern_runtime *rt, const char *id, const tern_create_opts *opts,
		       int *exit_status, tern_error **err);

/* The state as `tern state` prints it (malloc'd JSON). */
int tern_container_state_json(const tern_runtime *rt, const char *id, char **json,
			      tern_error **err);

int tern_container_kill(const tern_runtime *rt, const char *id, int sig, bool all,
			tern_error **err);
int tern_container_delete(const tern_runtime *rt, const char *id, bool force, tern_error **err);
/* update --l3-cache-schema / --mem-bw-schema: the lines (checked with
 * tern_rdt_check_update) written to the container's resctrl group, which
 * it must have (linux.intelRdt). */
int tern_container_update_rdt(const tern_runtime *rt, const char *id, const char *l3,
			      const char *mb, tern_error **err);

/* From now on, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1/2 and SIGWINCH
 * sent to tern go to `pid` (0: to nobody), as for a foreground run. */
void tern_forward_signals(pid_t pid);
/* Wait for our child `pid` (reaping any other, reparented, child on the
 * way): its exit status, or 128 + the signal that killed it. */
int tern_wait_exit_status(pid_t pid);
