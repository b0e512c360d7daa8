/* Restoring images whose root task makes a user namespace of its own.
 *
 * criu makes the user namespace anew on restore and some of its work
 * happens inside it: the restored root task opens image files (the
 * namespaces', the ttys') relative to the image directory, as the
 * namespace's root, which is an unprivileged host uid where the mapping
 * does not put container root at host 0. A directory 0700 and images 0600
 * of host root are closed to it. The images and the directory are given
 * to the group container gid 0 maps to, read-only (0640, 0710): no other
 * host user gets anything, and the container's root reads only what it
 * could read of itself while it ran.
 *
 * Also: the host ids container root and root's group map to, and the
 * veths a checkpoint recorded (for a copy restored beside the original,
 * whose outer ends need new names). */
#pragma once

#include "error.h"
#include "oci-config.h"

#include <stdbool.h>
#include <sys/types.h>

/* The checkpoint's config (`images`/tern-config.json) gives it a user
 * namespace of its own that maps container uid 0 and gid 0: true, with
 * their host ids. */
bool tern_ckpt_userns_root(const char *images, uid_t *uid, gid_t *gid);

/* `config` gives the container a user namespace of its own whose root is
 * not this user (host root, or a rootless caller): what criu opens by path
 * from inside it on a restore must be reachable by that uid. */
bool tern_ckpt_config_userns_unprivileged(const oci_config *config);

/* For such a restore, in its own mount namespace: the mount sources tern
 * makes for criu (the masked paths' tmpfs, the empty tmpfs, the cgroup
 * tmpfs trees) go in a new directory of their own, /run/tern-restore-XXXXXX
 * (0711, root's), instead of the state directory: criu's restored root
 * task opens them by path from inside the user namespace, and a state
 * root is 0700. Only the directory shows on the host, empty, while the
 * restore runs (the mounts are in the restore's namespace); the caller
 * removes it. */
int tern_ckpt_userns_yard(int note_fd, char **path, int *dirfd, tern_error **err);
/* Its path is also noted in the directory `note_fd` (criu's work
 * directory, or -1), for tern_ckpt_userns_yard_reclaim: a restore killed
 * half-way leaves it. done: closed, removed, the note too. */
void tern_ckpt_userns_yard_done(int note_fd, char **path, int *dirfd);
/* The yard a restore that worked in `work_dir` left, if it is one,
 * removed, with its note. */
void tern_ckpt_userns_yard_reclaim(const char *work_dir);

/* An idmapped bind mount (`m`, mounts[index] of `config`, whose source is
 * `src`) as criu is to take it: criu binds an external mount's source as
 * it finds it, so the source is given already idmapped: a copy of it
 * (recursive for rbind), idmapped as the config says (the mount's own
 * mappings, else the container's), attached in this (the restore's own)
 * mount namespace at `dir`/`name` (made in `dirfd`), which is *path. */
#define TERN_CKPT_IDMAP_PREFIX "idmapped-"
int tern_ckpt_idmapped_source(const oci_config *config, const oci_mount *m, const char *src,
			      int dirfd, const char *dir, const char *name, char **path,
			      tern_error **err);

/* The images (and the parent/ images below them) readable by the group
 * that container gid 0 maps to, where the checkpoint has a user namespace
 * of its own and that group is not host root's. Nothing else changes. */
int tern_ckpt_images_for_userns(const char *images, tern_error **err);

/* The veths the checkpoint recorded, "INNER OUTER" each (NULL: none). */
char **tern_ckpt_veths(const char *images);
