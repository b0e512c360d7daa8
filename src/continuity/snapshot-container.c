/* What the snapshot commands do to a container (snapshot-container.h):
 * check it runs, kill its processes, restore one from a snapshot's images
 * with the criu flags the snapshot was taken with, and make a bundle from
 * a snapshot (its config.json, an overlay on its tree/). Kept apart so
 * that rollback, warm spares, clone spares and clones share it without
 * calling each other.
 *
 * Uses snapshot-store (snapshot.txt) only; the order of the snapshot
 * files is in snapshot-store.h. */
#include "snapshot-container.h"
#include "cgroup.h"
#include "checkpoint.h"
#include "checkpoint-userns.h"
#include "log.h"
#include "snapshot-store.h"
#include "state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

int tern_snap_check_running(const oci_state *st, const char *what, const char *id, tern_error **err)
{
	if (strcmp(st->status, "running") == 0)
		return 0;
	if (strcmp(st->status, "paused") == 0)
		return tern_error_make_quiet(err, EINVAL,
					     "cannot %s container `%s`: it is paused (resume it "
					     "first)",
					     what, id);
	return tern_error_make_quiet(err, EINVAL, "cannot %s container `%s`: it is %s, not running",
				     what, id, st->status);
}

int tern_snap_kill_all(const oci_state *st, const char *id, tern_error **err)
{
	kill(st->pid, SIGKILL);
	for (int i = 0; i < 10000; i++) {
		pid_t *pids = NULL;
		size_t n = 0;
		if (tern_cgroup_pids(&st->cgroup_paths, &pids, &n, NULL) < 0)
			n = 0;
		for (size_t j = 0; j < n; j++)
			kill(pids[j], SIGKILL);
		free(pids);
		bool init_gone = tern_process_start_time(st->pid) != st->pid_start_time ||
				 tern_process_is_zombie(st->pid);
		if (n == 0 && init_gone)
			return 0;
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return tern_error_make_quiet(
	    err, EBUSY, "the processes of `%s` did not die within 10 s of SIGKILL", id);
}

/* The config makes a namespace of type `t` of its own (no path). */
bool tern_snap_own_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return false;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return c->linux_->namespaces[i].path == NULL;
	return false;
}

bool tern_snap_own_netns(const oci_config *c)
{
	return tern_snap_own_ns(c, OCI_NS_NETWORK);
}

int tern_snap_restore(const tern_runtime *rt, const char *criu, const char *id,
		      const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
		      const char *work, void (*kill_it)(void *), void *data, bool fill_behind,
		      tern_snapshot_stats *stats, tern_error **err)
{
	/* criu's flags as the snapshot was taken with them (snapshot.txt,
	 * beside the images) */
	cleanup_free char *snap = tern_strdup_printf("%s/..", images);
	cleanup_close int fd = open(snap, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	tern_snapshot_opts f = {0};
	int exit_status;

	if (fd >= 0)
		tern_snap_meta_read(fd, NULL, &f);
	/* a user namespace of its own: criu opens images from inside it */
	int ret = tern_ckpt_images_for_userns(images, err);
	if (ret < 0)
		return ret;
	co->tcp_established = f.tcp_established;
	co->ext_unix_sk = f.ext_unix_sk;
	co->shell_job = f.shell_job;
	co->file_locks = f.file_locks;
	return tern_restore_filled(rt, criu, id, copts, co, images, work, kill_it, data,
				   fill_behind, &exit_status, &stats->criu_ns, &stats->fill_ns,
				   err);
}

static void gen_key(yajl_gen g, const char *k)
{
	yajl_gen_string(g, (const unsigned char *)k, strlen(k));
}

static bool is_network_ns(yajl_val obj)
{
	const char *path[] = {"type", NULL};
	yajl_val t = yajl_tree_get(obj, path, yajl_t_string);
	const char *type = t ? YAJL_GET_STRING(t) : NULL;
	return type && strcmp(type, "network") == 0;
}

/* Write `v` as it is, but for the changes `o` asks for (root.path is
 * always "rootfs"); `ctx` says where `v` is ("", "root", "linux",
 * "linux.namespaces[]"...). */
static void emit(yajl_gen g, yajl_val v, const char *ctx, const tern_snap_config_opts *o)
{
	if (YAJL_IS_OBJECT(v)) {
		yajl_gen_map_open(g);
		for (size_t i = 0; i < v->u.object.len; i++) {
			const char *k = v->u.object.keys[i];
			yajl_val c = v->u.object.values[i];
			if (strcmp(ctx, "root") == 0 && strcmp(k, "path") == 0) {
				gen_key(g, k);
				gen_key(g, "rootfs");
				continue;
			}
			if (strcmp(ctx, "linux") == 0 && strcmp(k, "cgroupsPath") == 0)
				continue;
			if (strcmp(ctx, "linux.namespaces[]") == 0 && strcmp(k, "path") == 0 &&
			    is_network_ns(v) && !o->keep_netns_path)
				continue;
			if (*ctx == '\0' && strcmp(k, "hooks") == 0 && o->drop_hooks)
				continue;
			cleanup_free char *sub =
			    *ctx ? tern_strdup_printf("%s.%s", ctx, k) : tern_xstrdup(k);
			gen_key(g, k);
			emit(g, c, sub, o);
		}
		if (strcmp(ctx, "linux") == 0 && o->cgroups_path) {
			gen_key(g, "cgroupsPath");
			gen_key(g, o->cgroups_path);
		}
		yajl_gen_map_close(g);
	} else if (YAJL_IS_ARRAY(v)) {
		cleanup_free char *sub = tern_strdup_printf("%s[]", ctx);
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->u.array.len; i++)
			emit(g, v->u.array.values[i], sub, o);
		yajl_gen_array_close(g);
	} else if (YAJL_IS_STRING(v)) {
		const char *str = YAJL_GET_STRING(v);
		gen_key(g, str ? str : "");
	} else if (YAJL_IS_NUMBER(v)) {
		yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
	} else if (YAJL_IS_TRUE(v)) {
		yajl_gen_bool(g, 1);
	} else if (YAJL_IS_FALSE(v)) {
		yajl_gen_bool(g, 0);
	} else {
		yajl_gen_null(g);
	}
}

int tern_snap_write_config(const char *images, const char *bundle, const tern_snap_config_opts *o,
			   tern_error **err)
{
	cleanup_free char *src = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *dst = tern_strdup_printf("%s/config.json", bundle);
	cleanup_free char *data = NULL;
	char errbuf[256];
	size_t len;
	int ret = tern_read_file(src, &data, &len, 0, err);

	if (ret < 0)
		return ret;
	yajl_val tree = yajl_tree_parse(data, errbuf, sizeof(errbuf));
	if (tree == NULL)
		return tern_error_make_quiet(err, EINVAL, "`%s`: %s", src, errbuf);
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_config(g, yajl_gen_beautify, 1);
	emit(g, tree, "", o);
	const unsigned char *buf;
	size_t n;
	yajl_gen_get_buf(g, &buf, &n);
	ret = tern_write_file(dst, (const char *)buf, n, 0600, err);
	yajl_gen_free(g);
	yajl_tree_free(tree);
	return ret;
}

int tern_snap_overlay_mount(const char *lower, const char *bundle, tern_error **err)
{
	const char *sub[] = {"rootfs", ".upper", ".work"};
	for (size_t i = 0; i < 3; i++) {
		cleanup_free char *p = tern_strdup_printf("%s/%s", bundle, sub[i]);
		if (mkdir(p, 0755) < 0)
			return tern_error_make(err, errno, "`%s`", p);
	}
	/* the overlay's root takes the upper directory's owner and mode:
	 * the lower tree's root's, so that the root of a user namespace that
	 * owns it still owns /. (Rootless, a tree owned by a subordinate id
	 * cannot be matched: / stays the caller's, as before.) */
	struct stat st;
	cleanup_free char *upper = tern_strdup_printf("%s/.upper", bundle);
	if (stat(lower, &st) == 0 &&
	    (chown(upper, st.st_uid, st.st_gid) < 0 || chmod(upper, st.st_mode & 07777) < 0))
		tern_debug("the owner and mode of `%s` as `%s`'s: %s", upper, lower,
			   strerror(errno));
	cleanup_free char *rootfs = tern_strdup_printf("%s/rootfs", bundle);
	cleanup_free char *opts = tern_strdup_printf(
	    "lowerdir=%s,upperdir=%s/.upper,workdir=%s/.work", lower, bundle, bundle);
	if (mount("overlay", rootfs, "overlay", 0, opts) < 0)
		return tern_error_make(err, errno, "mount an overlay on `%s` (%s)", rootfs, opts);
	return 0;
}

void tern_snap_overlay_undo(const char *bundle)
{
	cleanup_free char *rootfs = tern_strdup_printf("%s/rootfs", bundle);

	if (umount2(rootfs, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
		tern_warn("unmount `%s`: %s", rootfs, strerror(errno));
	tern_remove_tree(bundle);
}
