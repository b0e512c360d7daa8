/* The container being created, as every stage of the lifecycle sees it:
 * container.c fills it, spawn.c clones the child with it, and the child's
 * init (init.c) reads its own copy. It lives below all three, with the OCI
 * state view of it that hooks read, so that the parent's and the child's
 * stages reach it without calling back up into container.c. */
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
	char *cgroup_path;	  /* as configured, for messages */
	oci_map cgroup_paths;	  /* per hierarchy, see cgroup.h */
	bool own_cgroup;
	tern_rdt rdt;		  /* linux.intelRdt: the resctrl group (intel-rdt.h) */
	int console_sock;	  /* connected --console-socket (or run's internal pair), -1 */
	int console_recv;	  /* run's end of the internal pair, -1 */
	bool internal_console;	  /* a foreground run may proxy the terminal itself */
	int n_listen_fds;	  /* fds from LISTEN_FDS passed on as well */
	int exec_fifo_watch;	  /* inotify (IN_OPEN) on exec.fifo for the init, -1 */
	pid_t pid;		  /* the container init, as the host sees it */
	tern_netdev_set *netdevs; /* linux.netDevices moved in by this create */
	char *created;		  /* RFC 3339 */
} tern_container;

/* The state of `c` with `status` (pointers into c: nothing to free), as
 * create writes it to the state directory. */
void tern_container_fill_state(oci_state *s, const tern_container *c, const char *status);
/* The OCI state (hook format) of a container being created, for hooks. */
char *tern_container_hook_state(const tern_container *c, const char *status);
