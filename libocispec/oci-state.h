/* libocispec: the container state, as the OCI runtime-spec defines it, plus
 * the fields tern keeps on disk next to it.
 *
 * Three JSON shapes come out of one structure:
 *  - OCI_STATE_HOOK: the runtime-spec "state" object that hooks read on
 *    stdin: ociVersion, id, status, pid, bundle, annotations.
 *  - OCI_STATE_CLI:  what `tern state` prints, the same fields and layout as
 *    `runc state`: ociVersion, id, pid, status, bundle, rootfs, created,
 *    annotations (only when non-empty), owner; indented with two spaces, no
 *    trailing newline (runc's order and layout, checked against its output).
 *  - OCI_STATE_DISK: everything, including tern's private fields, for the
 *    state.json in the container's state directory.
 */
#pragma once

#include "oci-config.h"

typedef enum {
	OCI_STATE_HOOK = 0,
	OCI_STATE_CLI,
	OCI_STATE_DISK,
} oci_state_format;

typedef struct {
	/* runtime-spec state */
	char *oci_version;
	char *id;
	char *status; /* "creating", "created", "running", "stopped", "paused";
		       * tern's own "migrated" (below) */
	int pid;      /* 0 when there is no process */
	char *bundle; /* absolute */
	oci_map annotations;

	/* shown by `tern state` as runc does */
	char *rootfs;  /* absolute */
	char *created; /* RFC 3339 with nanoseconds, UTC, e.g. 2026-12-02T09:34:16.123456789Z */
	char *owner;   /* "" for root, as runc prints it */

	/* tern's own, kept on disk only */
	uint64_t pid_start_time; /* field 22 of /proc/PID/stat: tells a recycled pid apart */
	char *cgroup_path;	 /* linux.cgroupsPath as resolved, for messages */
	oci_map cgroup_paths;	 /* hierarchy mount point -> the container's cgroup in it */
	bool systemd_cgroup;	 /* created with --systemd-cgroup */
	bool own_cgroup;	 /* tern created that cgroup, so delete removes it */
	char *config_path;	 /* the copy of config.json taken at create time */
	bool detached_stdio;	 /* reserved */
	uint64_t init_exe_dev;	 /* the init's executable before it runs the */
	uint64_t init_exe_ino;	 /* process: still it means not started yet */
	char *rdt_group;	 /* linux.intelRdt: the resctrl group's directory */
	bool rdt_own_group;	 /* named after the container: delete removes it */
	char *rdt_mon_group;	 /* the MON group of enableMonitoring (always removed) */

	/* A container that `tern migrate` handed over (the target said
	 * RUNNING): where it went, HOST:PORT, and its id there. Not kept in
	 * state.json: read from the state directory's mark with the status
	 * (tern_state_refresh_status), and shown by `tern state` as
	 * "migratedTo" and "migratedAs", after owner, only then. */
	char *migrated_to;
	char *migrated_as;
} oci_state;

/* Serialize. `*out` is malloc'd and NUL-terminated; `*len` (optional)
 * receives its length. Returns 0 or a negative errno. */
int oci_state_to_json(const oci_state *state, oci_state_format format, char **out, size_t *len);

/* Parse a state written with OCI_STATE_DISK (or any of the shapes: missing
 * private fields stay zero). `name` is used in error messages. */
int oci_state_parse_data(const char *data, size_t len, const char *name, oci_state **out,
			 char **err);

void oci_state_free(oci_state *state);

/* Copy annotations from a parsed config (duplicates every string). */
int oci_map_copy(oci_map *dst, const oci_map *src);
void oci_map_clear(oci_map *map);
