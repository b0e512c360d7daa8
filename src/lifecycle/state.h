/* The state directory: one directory per container under --root
 * (default /run/tern), holding state.json (written to a temp file and
 * renamed), exec.fifo while the container waits for `start`, and a copy of
 * config.json taken at create time. Every command that acts on a container
 * holds an flock on its directory, so two tern processes never race. */
#pragma once

#include "error.h"
#include "oci-state.h"

#include <stdbool.h>

#define TERN_DEFAULT_ROOT "/run/tern"
#define TERN_EXEC_FIFO	  "exec.fifo"
#define TERN_STATE_FILE	  "state.json"
#define TERN_CONFIG_COPY  "config.json"
#define TERN_PARTIAL_IMAGES "checkpoint-images.partial"
#define TERN_MIGRATED_FILE  "migrated"
/* the last failed criu run's logs (criu/failure-logs.h); delete removes it */
#define TERN_LAST_FAILURE_DIR "last-failure"

typedef struct {
	char *root; /* --root */
	char *id;
	char *dir; /* root/id */
	int dirfd; /* O_DIRECTORY|O_CLOEXEC, flock'ed */
	bool busy; /* opened to read while another command held the lock */
} tern_container_dir;

/* The default --root. As root: /run/tern. Rootless (an unprivileged
 * user, or root inside a user namespace that is not the host's and whose
 * $USER is not root, as runc decides it): $XDG_RUNTIME_DIR/tern, created
 * 0700 and sticky (the XDG spec lets a cleaner remove runtime files that
 * lack the sticky bit). When XDG_RUNTIME_DIR is unset, /run/tern stays the
 * default, as with runc, and creating it fails with a message that says
 * to set XDG_RUNTIME_DIR or pass --root. Returns a malloc'd path. */
char *tern_state_default_root(void);

/* runc's rule: [A-Za-z0-9_+.-]+, not "." or "..". */
int tern_state_check_id(const char *id, tern_error **err);

/* Create root/id (mkdir, so a duplicate fails with "container `id` already
 * exists") and lock it. A leftover directory of a create that was killed
 * before it wrote state.json (unlocked, no state.json) is reclaimed. */
int tern_state_dir_create(const char *root, const char *id, tern_container_dir **out,
			  tern_error **err);

/* Remove the directory a create killed before its first state.json left
 * (as runc's delete does); false if there is none, or a create holds it. */
bool tern_state_dir_reclaim_unfinished(const char *root, const char *id);

/* Open and lock an existing container directory ("container `id` does not
 * exist" otherwise). With `peek` (state, list), a directory another command
 * holds is opened without its lock, marked busy, instead of waiting: a
 * lazy checkpoint holds its container for as long as the migration takes. */
int tern_state_dir_open(const char *root, const char *id, bool peek, tern_container_dir **out,
			tern_error **err);

/* A checkpoint records the image directory it made (by its absolute path)
 * until criu has filled it, or it has removed it again: a checkpoint killed
 * in between leaves the record, and the next checkpoint of the container,
 * or its removal, removes that directory. */
int tern_state_mark_partial_images(tern_container_dir *d, const char *images, tern_error **err);
void tern_state_unmark_partial_images(tern_container_dir *d);
void tern_state_remove_partial_images(tern_container_dir *d);

/* "container does not exist" (ENOENT, quiet): for a container that went
 * away while a command looked at it. */
int tern_state_error_gone(const char *root, const char *id, tern_error **err);

/* Remove the directory and everything in it (and the images of a
 * checkpoint that did not finish). */
int tern_state_dir_remove(tern_container_dir *dir, tern_error **err);
void tern_state_dir_free(tern_container_dir *dir);
void tern_state_dir_freep(tern_container_dir **dir);
#define cleanup_state_dir __attribute__((cleanup(tern_state_dir_freep)))

int tern_state_write(tern_container_dir *dir, const oci_state *state, tern_error **err);
int tern_state_read(tern_container_dir *dir, oci_state **out, tern_error **err);

/* Whether the init has run the container's process already although
 * exec.fifo is still there: the `tern start` that released it was killed
 * before it removed the fifo. The init's executable (recorded at create)
 * is then another file. */
bool tern_state_init_started(const oci_state *state);

/* The live status: "stopped" when the process is gone (or its pid was
 * recycled: start time differs), "created" while exec.fifo exists,
 * "paused" when frozen, else "running"; and "migrated", whatever the
 * process does, once tern_state_mark_migrated marked it (with
 * state->migrated_to and migrated_as filled in). Updates state->status
 * and sets state->pid to 0 when stopped (as runc prints it). */
void tern_state_refresh_status(tern_container_dir *dir, oci_state *state);

/* tern migrate's source, the moment the target said RUNNING: the
 * container at root/id runs on `to` (HOST:PORT) as `as` now. Its status is
 * "migrated" from then on, which resume and start refuse (a second live
 * copy) and delete removes. Takes no lock: the migration holds its own,
 * and its criu may hold the directory's. */
int tern_state_mark_migrated(const char *root, const char *id, const char *to, const char *as,
			     tern_error **err);
/* `tern resume --force`: the mark goes (the directory is locked). */
int tern_state_unmark_migrated(tern_container_dir *d, tern_error **err);

/* The ids under root, sorted. */
int tern_state_list_ids(const char *root, char ***ids, tern_error **err);

/* Current time as RFC 3339 with nanoseconds in UTC. */
char *tern_state_now_rfc3339(void);
