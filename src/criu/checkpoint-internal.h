/* What the parts of checkpoint and restore share, and nothing outside
 * them uses: the libcriu session both stages open, the descriptor of
 * tern's own that travels beside criu's images (tern-checkpoint.txt, see
 * checkpoint.h), and the few helpers both stages call. The parts:
 *   checkpoint-session.c     finding criu, the session, the common options
 *   checkpoint-descriptor.c  the descriptor and what it records (stdio)
 *   checkpoint-dump.c        the checkpoint
 *   checkpoint-restore.c     the restore
 * checkpoint.h stays the module's face. */
#pragma once

#include "checkpoint.h"
#include "error.h"
#include "oci-config.h"

#include <criu/criu.h>
#include <criu/rpc.pb-c.h>
#include <stdbool.h>
#include <sys/types.h>

/* CRIU's key for a network namespace the container joined from a path
 * (runc uses the same one, so images are interchangeable). */
#define TERN_CKPT_NETNS_KEY "extRootNetNS"

/* ---- the session ---- */

/* one criu call: its options, the image and work directories handed to it */
typedef struct {
	criu_opts *opts;
	int images_fd;
	int work_fd;
	char *work_dir;
	const char *log_name;
	/* options bookworm's libcriu has no name for (see add_unknown) */
	ProtobufCMessageUnknownField unknown[2];
} criu_session;

/* ---- the descriptor ---- */

typedef struct {
	char *id;
	char **ext_mounts;	/* bind mount points: destinations, symlinks resolved */
	char **cg_mounts;	/* "DESTINATION HOST-HIERARCHY-MOUNTPOINT" */
	char **masked;		/* masked directories left out (checkpoint-masked.h) */
	char **tmpfs;		/* config.json's empty tmpfs mounts left out (the same) */
	char **trees;		/* cgroup v1 tmpfs trees: their descriptor lines (the same) */
	char **devbinds;	/* "MOUNTPOINT ROOT": host devices (checkpoint-devbinds.h) */
	char *stdio[3];		/* CRIU's key of the init's fd 0-2 when it is outside */
	unsigned stdio_mode[3]; /* the st_mode of a file[] one (criu checks it) */
	char **veths;		/* "INNER OUTER": veths whose peer was outside */
	/* the container's cgroup in the host's unified hierarchy of a hybrid
	 * host, which criu restores the tree into (checkpoint-restore.c) */
	char *unified_cg;
	bool netns_external;
	bool netns_fresh; /* not in the images: restore makes a new one */
	/* in the images, dumped without criu's network lock (no TCP connection
	 * kept): restored without it too */
	bool netns_unlocked;
	/* in the images, but as plain as a new one (tern_netns_is_plain_in_
	 * userns): criu makes it empty and tern sets it up */
	bool netns_empty;
	bool terminal;
} descriptor;

/* ---- checkpoint-session.c ---- */

/* libcriu's options for one criu call on `images` (logs in `work`, or the
 * images; both must be private directories), with criu's version checked
 * unless `criu_checked`. tern_ckpt_session_clear frees it all. */
int tern_ckpt_session_open(criu_session *s, const char *criu, const char *images, const char *work,
			   const char *log_name, bool criu_checked, tern_error **err);
void tern_ckpt_session_clear(criu_session *s);
/* The first error lines of the session's criu log (malloc'd) and where
 * the log is; with `state_dir` (a container's), criu's logs are kept in
 * its last-failure/ first (failure-logs.h) and that copy is named; else,
 * with `work_goes`, the message says the log is not kept. */
char *tern_ckpt_log_tail(const criu_session *s, const char *state_dir, bool work_goes);
/* criu's empty_ns for the network namespace (made, not filled from the
 * images); false where this libcriu's options are not laid out as tern
 * expects. */
bool tern_ckpt_empty_netns(criu_opts *opts);
/* criu's "skip" network lock method, where this libcriu allows it. */
void tern_ckpt_network_lock_skip(criu_opts *opts);
/* `src` copied to `name` in `dirfd` (0600). */
int tern_ckpt_copy_file_into(int dirfd, const char *name, const char *src, tern_error **err);

/* ---- checkpoint-descriptor.c ---- */

void tern_ckpt_descriptor_clear(descriptor *d);
int tern_ckpt_descriptor_write(int dirfd, const descriptor *d, tern_error **err);
int tern_ckpt_descriptor_read(const char *images, descriptor *d, tern_error **err);
/* The namespace of type `t` in the config, or NULL. */
const oci_namespace *tern_ckpt_config_ns(const oci_config *c, oci_namespace_type t);
/* The init's (`pid`) stdio that comes from outside the container: into
 * d->stdio, and declared to criu as external where it has to be. */
int tern_ckpt_external_stdio(criu_session *s, pid_t pid, descriptor *d);
