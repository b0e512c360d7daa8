/* Container lifecycle orchestration: create, start, run, state, kill,
 * delete, exec. This layer decides what happens in which order; the
 * syscalls live in the stage files (spawn, init, namespaces, rootfs...). */
#pragma once

#include "cgroup.h"
#include "error.h"
#include "intel-rdt.h"
#include "namespaces.h"
#include "netdev.h"
#include "numa.h"
#include "oci-config.h"
#include "oci-state.h"
#include "seccomp.h"
#include "state.h"

#include <stdbool.h>
#include <sys/types.h>

/* Options of create and run (runc's flags). */
typedef struct {
	const char *bundle;	    /* --bundle, default "." */
	const char *console_socket; /* --console-socket */
	const char *pid_file;	    /* --pid-file */
	bool no_pivot;		    /* --no-pivot */
	bool no_new_keyring;	    /* --no-new-keyring */
	int preserve_fds;	    /* --preserve-fds N: fds 3..3+N-1 pass through */
	bool detach;		    /* run --detach */
	bool keep;		    /* run --keep: do not delete after exit */
	bool no_subreaper;	    /* run --no-subreaper */
} tern_create_opts;

typedef struct {
	const char *root; /* --root */
	bool systemd_cgroup;
	/* --rootless true|false|auto (auto: rootless when not root). Rootless:
	 * a cgroup that cannot be created is left out (container-cgroup.c). */
	enum { TERN_ROOTLESS_AUTO = 0, TERN_ROOTLESS_ON, TERN_ROOTLESS_OFF } rootless;
} tern_runtime;

/* Everything the parent and the container child share (the child is a
 * clone, so it sees this memory as it was at clone time). */
typedef struct {
	const tern_runtime *rt;
	const tern_create_opts *opts;
	const char *id;
	oci_config *config;
	char *bundle; /* absolute */
	char *rootfs; /* absolute */
	tern_container_dir *dir;
	tern_ns_plan ns;
	tern_seccomp_filter *seccomp;
	tern_mempolicy mempolicy; /* linux.memoryPolicy, ready for the child */
	char *cgroup_path;    /* as configured, for messages */
	oci_map cgroup_paths; /* per hierarchy, see cgroup.h */
	bool own_cgroup;
	tern_rdt rdt;	       /* linux.intelRdt: the resctrl group (intel-rdt.h) */
	int console_sock;      /* connected --console-socket (or run's internal pair), -1 */
	int console_recv;      /* run's end of the internal pair, -1 */
	bool internal_console; /* a foreground run may proxy the terminal itself */
	int n_listen_fds;      /* fds from LISTEN_FDS passed on as well */
	int exec_fifo_watch;   /* inotify (IN_OPEN) on exec.fifo for the init, -1 */
	pid_t pid;	       /* the container init, as the host sees it */
	tern_netdev_set *netdevs; /* linux.netDevices moved in by this create */
	char *created;	       /* RFC 3339 */
} tern_container;

/* The OCI state (hook format) of a container being created, for hooks. */
char *tern_container_hook_state(const tern_container *c, const char *status);

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

/* Load state (with refreshed status) and the config copy. */
int tern_container_load(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, oci_config **config, tern_error **err);
/* The same for reading only (state, list): does not wait for a command
 * that holds the container (see tern_state_dir_open). */
/* Read the state (status refreshed) and, when `config` is not NULL, the
 * config copy (NULL if unreadable) of a container whose directory the
 * caller has open and locked. */
int tern_container_read(tern_container_dir *dir, oci_state **state, oci_config **config,
			tern_error **err);
int tern_container_peek(const tern_runtime *rt, const char *id, tern_container_dir **dir,
			oci_state **state, tern_error **err);
