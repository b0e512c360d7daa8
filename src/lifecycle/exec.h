/* `tern exec`: a new process inside a running container, in all of its
 * namespaces and its cgroup, with the container's process settings as the
 * base (what runc does) and the command-line overrides on top. */
#pragma once

#include "container.h"

typedef struct {
	const char *process_file; /* --process */
	bool tty;		  /* --tty */
	const char *console_socket;
	bool detach;
	const char *pid_file;
	char **env;		/* --env, NULL-terminated */
	const char *cwd;	/* --cwd */
	const char *user;	/* --user uid[:gid] */
	char **additional_gids; /* --additional-gids */
	char **caps;		/* --cap */
	bool no_new_privs;
	int preserve_fds;
	const char *apparmor;
	const char *process_label;
	bool ignore_paused;
	char *
	    *cgroups; /* --cgroup [CTRL[,CTRL]:]PATH, NULL-terminated: see tern_cgroup_sub_paths */
	char **args;  /* the command */
} tern_exec_opts;

/* The process of `config` (taken out of it: *out, the caller's to free,
 * also on error) with the command-line overrides of `o` applied: --env,
 * --cwd, --user uid[:gid], --additional-gids, --cap, --no-new-privs, --tty.
 * Errors name the option. Exported for the fuzz tests. */
int tern_exec_apply_overrides(const tern_exec_opts *o, oci_config *config, oci_process **out,
			      tern_error **err);

int tern_container_exec(const tern_runtime *rt, const char *id, const tern_exec_opts *opts,
			int *exit_status, tern_error **err);
