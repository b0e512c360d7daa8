/* Restoring a checkpoint whose container has a user namespace of its own,
 * in the place of the live container (tern rollback).
 *
 * criu makes the user namespace anew on restore: its root task is cloned
 * with CLONE_NEWUSER and the tasks then read their images as the
 * container's root, the host id its mappings give, which the host's
 * 0600 images shut out; so, too, are the init's stdio files that criu
 * reopens as that root. And only criu can make a network namespace that
 * belongs to that new user namespace: a snapshot of such a container keeps
 * its network namespace in the images (snapshot-take.c). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* The init's (`pid`) stdio that the restore of `images` in its place
 * reopens (a file outside the container, tern_ckpt_outside_stdio) can be
 * opened by the container's root (the host ids `config` maps 0 to) as the
 * init has it open; else an error naming the fd and its file, before
 * anything is done. A pipe is handed over as it is. */
int tern_ckpt_stdio_check_userns(const char *images, pid_t pid, const oci_config *config,
				 tern_error **err);

/* How the checkpoint in `images` has the container's network namespace:
 * in the images (criu restores it), not external (joined by path) nor left
 * out (made anew); *veths ("INNER OUTER", NULL-terminated, may be NULL):
 * the veths whose outer end criu makes anew in the restoring tern's
 * network namespace. */
int tern_ckpt_netns_in_images(const char *images, bool *in_images, char ***veths, tern_error **err);

