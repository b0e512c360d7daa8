/* Namespaces: which to create, which to join by path, and the writes that
 * must happen from outside (uid/gid maps) or before anyone enters (time
 * namespace offsets). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
	int clone_flags; /* CLONE_NEW* of the namespaces to create */
	bool new_user;	 /* a new user namespace */
	bool new_time;	 /* a new time namespace (needs unshare + offsets + fork) */
	bool new_cgroup; /* unshared by the child once it is in its cgroup */
	/* Namespaces joined by path: fds opened by the parent, O_CLOEXEC. */
	int join_fd[OCI_NS_COUNT];
	bool has[OCI_NS_COUNT]; /* listed in config at all */
	/* The slow path: a first child joins and unshares, then forks the init. */
	bool two_stage;
} tern_ns_plan;

int tern_ns_clone_flag(oci_namespace_type type);

/* Validate linux.namespaces and open the paths to join (errors name the
 * entry: "linux.namespaces[1].path `/x`: No such file or directory"). */
/* An empty plan that joins nothing: what tern_ns_plan_close may be given
 * before tern_ns_plan_make has run (fd 0 is not "none"). */
void tern_ns_plan_init(tern_ns_plan *plan);
int tern_ns_plan_make(const oci_config *config, tern_ns_plan *plan, tern_error **err);
void tern_ns_plan_close(tern_ns_plan *plan);

/* Child side: setns into the joined namespaces, the user namespace first
 * (only_user) or all the others (!only_user). */
int tern_ns_join(const tern_ns_plan *plan, bool only_user, tern_error **err);

/* Parent side: write /proc/PID/{uid_map,gid_map} for the
 * linux.uidMappings/gidMappings, through a procfs handle (see below). All
 * ranges go in one write per file, as the kernel requires. */
int tern_ns_write_id_maps(pid_t pid, const oci_config *config, tern_error **err);

/* The same for any mappings (an idmapped mount's helper namespace):
 * errors name `field_prefix`uidMappings, e.g. "mounts[2].uidMappings". */
int tern_ns_write_maps(pid_t pid, const oci_id_mapping *uids, size_t n_uids,
		       const oci_id_mapping *gids, size_t n_gids, const char *field_prefix,
		       tern_error **err);

/* After unshare(CLONE_NEWTIME), before the fork: /proc/self/timens_offsets. */
int tern_ns_write_time_offsets(const oci_config *config, tern_error **err);

/* hostname and domainname (need a new uts namespace: checked at plan time). */
int tern_ns_set_uts(const oci_config *config, tern_error **err);

/* Child side, in a network namespace tern created (not one joined by
 * path): bring its loopback interface up, as runc and crun do. A new
 * namespace starts with `lo` down, so 127.0.0.1 is unreachable and
 * localhost servers inside the container do not work. */
int tern_ns_setup_loopback(const tern_ns_plan *plan, tern_error **err);
