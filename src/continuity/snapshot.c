/* tern snapshot --list and --delete, and what `tern delete` does to a
 * container's snapshots, warm spare, clone spares and, for a clone, its
 * bundle (the layout and the rules are in snapshot.h).
 *
 * Uses snapshot-store, snapshot-container, snapshot-warm and
 * snapshot-spares; snapshot-clone uses it (a clone that failed half-way
 * is deleted as `tern delete` would); the order is in snapshot-store.h. */
#include "snapshot.h"
#include "container-load.h"
#include "log.h"
#include "snapshot-container.h"
#include "snapshot-spares.h"
#include "snapshot-store.h"
#include "snapshot-warm.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int compare_created(const void *a, const void *b)
{
	const tern_snapshot_info *x = a, *y = b;
	int c = strcmp(x->created ? x->created : "", y->created ? y->created : "");
	return c ? c : strcmp(x->name, y->name);
}

int tern_snapshot_list(const char *root, const char *id, tern_snapshot_info **out, size_t *n,
		       tern_error **err)
{
	tern_snap_store s = {.fd = -1};
	size_t cap = 0;
	int ret = tern_snap_store_open(root, id, false, &s, err);

	*out = NULL;
	*n = 0;
	if (ret == -ENOENT) {
		tern_snap_store_close(&s);
		/* no store: a container without snapshots, or none at all */
		cleanup_free char *state = tern_strdup_printf("%s/%s/" TERN_STATE_FILE, root, id);
		if (access(state, F_OK) == 0)
			return 0;
		return tern_error_make_quiet(err, ENOENT, "container `%s` does not exist", id);
	}
	if (ret < 0) {
		tern_snap_store_close(&s);
		return ret;
	}
	int fd = dup(s.fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (tern_snap_check_name(e->d_name, NULL) < 0)
			continue;
		cleanup_close int snapfd =
		    openat(s.fd, e->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		tern_snapshot_info i = {.name = tern_xstrdup(e->d_name)};
		if (snapfd < 0 || tern_snap_meta_read(snapfd, &i, NULL) < 0) {
			tern_snapshot_info_clear(&i);
			continue;
		}
		i.bytes = tern_snap_own_bytes(snapfd);
		i.warm = tern_snap_warm_status(s.path, i.name);
		tern_snap_spares_info(s.path, i.name, &i);
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = realloc(*out, cap * sizeof(**out));
			if (*out == NULL)
				abort();
		}
		(*out)[(*n)++] = i;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	if (*n)
		qsort(*out, *n, sizeof(**out), compare_created);
	tern_snap_store_close(&s);
	return 0;
}

int tern_snapshot_delete(const char *root, const char *id, const char *name, tern_error **err)
{
	tern_snap_store s = {.fd = -1};
	int ret = tern_snap_check_name(name, err);

	if (ret == 0)
		ret = tern_snap_store_open(root, id, false, &s, err);
	if (ret == 0 && faccessat(s.fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		ret = -ENOENT;
	if (ret == -ENOENT)
		ret = tern_error_make_quiet(err, ENOENT, "container `%s` has no snapshot `%s`", id,
					    name);
	if (ret == 0) {
		cleanup_close int snapfd = openat(s.fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		cleanup_free char *clone = snapfd >= 0 ? tern_snap_live_clone(root, snapfd) : NULL;
		if (clone)
			ret = tern_error_make_quiet(err, EBUSY,
						    "snapshot `%s` of `%s` is the base of the clone "
						    "`%s`: delete the clone first",
						    name, id, clone);
	}
	int warm_lock = ret == 0 ? tern_snap_warm_lock(s.path, false, 120000, err) : -1;
	if (ret == 0 && warm_lock < 0 && warm_lock != -ENOENT)
		ret = warm_lock;
	if (ret == 0) {
		cleanup_free char *live = NULL;
		if (tern_snap_warm_live_name(s.path, &live) && strcmp(live, name) == 0)
			ret = tern_error_make_quiet(err, EBUSY,
						    "snapshot `%s` of `%s` is below the rootfs `%s` runs "
						    "on since its warm rollback: it goes with the "
						    "container",
						    name, id, id);
	}
	if (ret == 0) {
		tern_snap_warm_discard(&(tern_runtime){.root = root}, s.path, id, name);
		tern_snap_spares_discard(root, s.path, name);
	}
	if (warm_lock >= 0)
		close(warm_lock);
	if (ret == 0) {
		cleanup_free char *path = tern_strdup_printf("%s/%s", s.path, name);
		cleanup_free char *head = tern_snap_head_read(&s);
		tern_remove_tree(path);
		if (head && strcmp(head, name) == 0)
			unlinkat(s.fd, TERN_SNAP_HEAD_FILE, 0);
	}
	tern_snap_store_close(&s);
	return ret;
}

int tern_snapshot_delete_all(const char *root, const char *id, tern_error **err)
{
	tern_snap_store s = {.fd = -1};
	int ret = tern_snap_store_open(root, id, false, &s, err);

	if (ret == -ENOENT) {
		tern_snap_store_close(&s);
		return 0;
	}
	/* each snapshot but those that clones still stand on (the spares of
	 * every one go: they are not clones yet) */
	if (ret == 0)
		tern_snap_spares_discard(root, s.path, NULL);
	int fd = ret == 0 ? dup(s.fd) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	bool kept = false;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cleanup_close int snapfd =
		    openat(s.fd, e->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		cleanup_free char *clone = snapfd >= 0 ? tern_snap_live_clone(root, snapfd) : NULL;
		if (clone) {
			tern_warn("snapshot `%s` of `%s` is kept: the clone `%s` stands on it",
				  e->d_name, id, clone);
			kept = true;
			continue;
		}
		cleanup_free char *path = tern_strdup_printf("%s/%s", s.path, e->d_name);
		if (snapfd >= 0)
			tern_remove_tree(path);
		else
			unlink(path);
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	if (ret == 0 && !kept)
		rmdir(s.path);
	tern_snap_store_close(&s);
	return ret;
}

/* A clone spare being made is a restore from the container's images
 * into, on a hybrid host, the container's own cgroup of the unified
 * hierarchy first (checkpoint-restore.c), which criu makes again when the
 * delete has removed it: the spares (and their builder) go first, when
 * the delete is going to go ahead (and the snapshots with it). */
static void discard_spares_first(const tern_runtime *rt, const char *id, bool force)
{
	tern_snap_store s = {.fd = -1};
	tern_container_dir *dir = NULL;
	oci_state *st = NULL;

	if (tern_snap_store_open(rt->root, id, false, &s, NULL) == 0 &&
	    tern_container_peek(rt, id, &dir, &st, NULL) == 0 &&
	    (force || (strcmp(st->status, "running") != 0 && strcmp(st->status, "paused") != 0)))
		tern_snap_spares_discard(rt->root, s.path, NULL);
	oci_state_free(st);
	tern_state_dir_free(dir);
	tern_snap_store_close(&s);
}

int tern_snapshot_container_delete(const tern_runtime *rt, const char *id, bool force,
				   bool keep_snapshots, tern_error **err)
{
	if (!keep_snapshots)
		discard_spares_first(rt, id, force);
	int ret = tern_container_delete(rt, id, force, err);

	if (ret < 0)
		return ret;
	/* (its snapshots go even if its files could not all be copied back) */
	tern_error *warm_err = NULL;
	tern_snapshot_warm_cleanup(rt, id, &warm_err);
	if (!keep_snapshots && (ret = tern_snapshot_delete_all(rt->root, id, err)) < 0) {
		tern_error_free(warm_err);
		return ret;
	}
	if (warm_err) {
		ret = warm_err->errnum ? -warm_err->errnum : -EINVAL;
		*err = warm_err;
		return ret;
	}
	return tern_snapshot_clone_cleanup(rt->root, id, err);
}

int tern_snapshot_clone_cleanup(const char *root, const char *id, tern_error **err)
{
	cleanup_free char *record = tern_strdup_printf("%s/" TERN_CLONES_DIR "/%s", root, id);
	cleanup_free char *data = NULL;
	size_t len;

	if (tern_state_check_id(id, NULL) < 0 || access(record, F_OK) < 0)
		return 0;
	int ret = tern_read_file(record, &data, &len, 65536, err);
	if (ret < 0)
		return ret;
	char *bundle = NULL, *src_id = NULL, *src_name = NULL;
	for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "bundle ", 7) == 0) {
			bundle = line + 7;
		} else if (strncmp(line, "source ", 7) == 0) {
			src_id = line + 7;
			src_name = strchr(src_id, ' ');
			if (src_name)
				*src_name++ = '\0';
		}
	}
	if (bundle && bundle[0] == '/')
		tern_snap_overlay_undo(bundle);
	if (src_id && src_name && tern_state_check_id(src_id, NULL) == 0 &&
	    tern_snap_check_name(src_name, NULL) == 0) {
		cleanup_free char *m =
		    tern_strdup_printf("%s/@snapshots/%s/%s/clones/%s", root, src_id, src_name, id);
		unlink(m);
	}
	unlink(record);
	return 0;
}
