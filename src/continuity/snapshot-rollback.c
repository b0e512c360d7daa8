/* tern rollback: a running container put back to one of its snapshots,
 * keeping what it is to the outside (snapshot.h says what). Owns the
 * stages of a rollback: the checks made before anything is killed, a warm
 * spare swapped in where one is ready, else the cold way (the network
 * namespace and stdio held, the processes killed, the rootfs put back,
 * criu's restore into the same cgroup), and the head moved.
 *
 * A container with a user namespace of its own is the exception: criu
 * makes the user namespace anew on restore, and the processes it restores
 * there cannot enter the live network namespace, which belongs to the old
 * one (EPERM). Its snapshots hold the network namespace (snapshot-take.c),
 * and criu restores it, owned by the new user namespace, with the inner
 * addresses, routes, firewall rules and listening sockets as snapshotted.
 * A veth to the host is not made anew (criu 4.2 fails to make one from a
 * user namespace here, and a new outer end would lose its bridge, its
 * addresses and routes): after the kill, the live veth's inner end is
 * moved out of the old namespace (held open, so that it does not die
 * with it) into tern's under a name of its own, and criu moves it into
 * the new one under the snapshot's name (--external netdev[]). Its outer
 * end is never touched.
 *
 * Uses snapshot-store, snapshot-container, snapshot-fs and snapshot-warm;
 * no snapshot file uses it (the order is in snapshot-store.h). */
#include "snapshot.h"
#include "checkpoint-net.h"
#include "checkpoint.h"
#include "log.h"
#include "memory-merge.h"
#include "netdev.h"
#include "checkpoint-userns.h"
#include "restore-userns.h"
#include "snapshot-container.h"
#include "snapshot-fs.h"
#include "snapshot-store.h"
#include "snapshot-warm.h"
#include "state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The old init's fds 0-2, as the restored init's outside stdio. */
static void take_stdio(const char *images, pid_t pid, int fds[3])
{
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	tern_ckpt_take_stdio(images, pidfd, pid, fds);
}

typedef struct {
	const tern_runtime *rt;
	const char *criu;
	const char *id;
	const char *name;
	tern_container_dir *dir;
	oci_state *st;
	oci_config *config;
	tern_snap_store s;
	int snapfd;
	int netns_fd;
	int stdio[3];
	const char *console_socket;
	bool merge_memory; /* the processes replaced were marked (a clone's --share-memory) */
	int warm_lock;	   /* .warm.lock, held from the check to the next spare, or -1 */
	bool warm;	   /* a warm spare of `name` is ready: swapped in */
	bool killed;	   /* the container's processes were killed */
	uint64_t t_kill;   /* when they were (0: not yet) */
	/* a user namespace of the container's own: its network namespace is
	 * in the snapshot's images; the live one is held (old_netns) while
	 * the inner end of each of its veths to the host goes to criu */
	int old_netns;
	char **veth_live;  /* the live inner ends' names */
	char **veth_inner; /* the snapshot's names for them, in the same order */
	char **netdevs_in; /* "INNER NAME" for criu, once moved out */
	int *moved_index;  /* in tern's network namespace, where moved (else 0) */
} rollback_ctx;

/* The live veth whose outer end is `outer` (in `live`, "INNER OUTER"):
 * its inner end is to become the snapshot's `inner`. */
static int find_live_veth(rollback_ctx *r, const char *inner, const char *outer, char **live,
			  tern_error **err)
{
	for (char **p = live; p && *p; p++) {
		const char *sp = strchr(*p, ' ');
		if (sp && strcmp(sp + 1, outer) == 0) {
			r->veth_live = tern_strv_add(
			    r->veth_live, tern_strdup_printf("%.*s", (int)(sp - *p), *p));
			r->veth_inner = tern_strv_add(r->veth_inner, tern_xstrdup(inner));
			return 0;
		}
	}
	return tern_error_make_quiet(
	    err, ENOENT,
	    "cannot roll back container `%s` to `%s`: the snapshot has a veth `%s` whose "
	    "outer end `%s` is in this network namespace, and the container has no veth "
	    "with that outer end now (tern moves the live one in; criu cannot make a "
	    "veth anew from a user namespace here)",
	    r->id, r->name, inner, outer);
}

/* A user namespace of the container's own and a network namespace joined
 * by path: criu cannot restore into it (nor dump it: the namespace is not
 * the user namespace's). Refused from the config alone. */
static int check_userns_netns_path(rollback_ctx *r, tern_error **err)
{
	if (!tern_snap_own_ns(r->config, OCI_NS_USER))
		return 0;
	for (size_t i = 0; r->config->linux_ && i < r->config->linux_->namespaces_len; i++) {
		const oci_namespace *ns = &r->config->linux_->namespaces[i];
		if (ns->type == OCI_NS_NETWORK && ns->path)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "cannot roll back container `%s`: it has a user namespace of its "
			    "own and joins the network namespace `%s` by path; criu makes the "
			    "user namespace anew on restore, and processes in it cannot enter "
			    "a network namespace that belongs to another user namespace",
			    r->id, ns->path);
	}
	return 0;
}

/* A container with a user namespace of its own (see the top): its
 * network namespace must come from the images, with each veth there still
 * the container's; its root must be able to read the images and reopen
 * the init's stdio files. */
static int check_userns(rollback_ctx *r, tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", r->s.path, r->name);
	cleanup_strv char **veths = NULL;
	cleanup_strv char **live = NULL;
	bool in_images = false;
	int ret;

	if (!tern_snap_own_ns(r->config, OCI_NS_USER))
		return 0;
	if (tern_snap_own_netns(r->config)) {
		ret = tern_ckpt_netns_in_images(images, &in_images, &veths, err);
		if (ret < 0)
			return ret;
		if (!in_images)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "cannot roll back container `%s` to `%s`: the snapshot left the "
			    "network namespace out of its images (an older tern's), and the "
			    "container has a user namespace of its own, whose new processes "
			    "need the one criu restores from them; take a new snapshot",
			    r->id, r->name);
		if (veths && (ret = tern_veth_pairs(r->st->pid, &live, err)) < 0)
			return tern_error_wrap(err, "container `%s`", r->id);
		for (char **v = veths; v && *v; v++) {
			cleanup_free char *inner = tern_xstrdup(*v);
			char *outer = strchr(inner, ' ');
			*outer++ = '\0';
			ret = find_live_veth(r, inner, outer, live, err);
			if (ret < 0)
				return ret;
		}
		cleanup_free char *ns = tern_strdup_printf("/proc/%d/ns/net", r->st->pid);
		r->old_netns = open(ns, O_RDONLY | O_CLOEXEC);
		if (r->old_netns < 0)
			return tern_error_make(err, errno, "the network namespace `%s`", ns);
		size_t n = 0;
		while (r->veth_live && r->veth_live[n])
			n++;
		r->moved_index = calloc(n + 1, sizeof(int));
		if (r->moved_index == NULL)
			abort();
	}
	ret = tern_ckpt_stdio_check_userns(images, r->st->pid, r->config, err);
	if (ret < 0)
		return tern_error_wrap(err, "cannot roll back container `%s`", r->id);
	ret = tern_ckpt_images_for_userns(images, err);
	return ret < 0 ? tern_error_wrap(err, "snapshot `%s` of `%s`", r->name, r->id) : 0;
}

/* After the kill: each live veth's inner end out of the old network
 * namespace (held), into tern's under a name of its own, for criu. */
static int move_veths_out(rollback_ctx *r, tern_error **err)
{
	for (size_t i = 0; r->veth_live && r->veth_live[i]; i++) {
		char name[16];
		snprintf(name, sizeof(name), "trb%d.%zu", (int)(getpid() % 10000000), i);
		int ret = tern_netdev_move_out(r->old_netns, r->veth_live[i], name,
					       &r->moved_index[i], err);
		if (ret < 0)
			return tern_error_wrap(err, "container `%s`'s veth", r->id);
		r->netdevs_in = tern_strv_add(r->netdevs_in,
					      tern_strdup_printf("%s %s", r->veth_inner[i], name));
	}
	return 0;
}

/* A rollback that failed after the moves: what criu did not take is
 * deleted (its outer end with it), as the old namespace would have. */
static void undo_veths(rollback_ctx *r)
{
	for (size_t i = 0; r->netdevs_in && r->netdevs_in[i]; i++)
		if (r->moved_index[i] > 0)
			tern_netdev_delete(strchr(r->netdevs_in[i], ' ') + 1, r->moved_index[i]);
}

static int rollback_check(rollback_ctx *r, tern_error **err)
{
	int ret = tern_snap_check_running(r->st, "roll back", r->id, err);
	if (ret < 0)
		return ret;
	if (r->config == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "cannot roll back container `%s`: its config copy in "
					     "`%s` is unreadable",
					     r->id, r->dir->dir);
	ret = check_userns_netns_path(r, err);
	if (ret < 0)
		return ret;
	/* (restore would find out only after the processes were killed; the
	 * user namespace's other checks, which need the snapshot, are last) */
	if (r->config->process && r->config->process->terminal && r->console_socket == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "container `%s` has a terminal: rollback needs "
					     "--console-socket to send the new pty master to",
					     r->id);
	ret = tern_snap_store_open(r->rt->root, r->id, false, &r->s, err);
	if (ret == -ENOENT)
		return tern_error_make_quiet(err, ENOENT, "container `%s` has no snapshot `%s`",
					     r->id, r->name);
	if (ret < 0)
		return ret;
	r->snapfd = openat(r->s.fd, r->name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (r->snapfd < 0)
		return tern_error_make_quiet(err, ENOENT, "container `%s` has no snapshot `%s`",
					     r->id, r->name);
	if (faccessat(r->snapfd, "images/inventory.img", F_OK, 0) < 0 ||
	    faccessat(r->snapfd, "tree", F_OK, 0) < 0)
		return tern_error_make_quiet(err, EINVAL,
					     "snapshot `%s` of `%s` is incomplete (`%s/%s` has no "
					     "images/inventory.img or tree/)",
					     r->name, r->id, r->s.path, r->name);
	return check_userns(r, err);
}

static int put_back_fs(rollback_ctx *r, tern_snapshot_stats *stats, tern_error **err)
{
	cleanup_close int rootfd = open(r->st->rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	tern_snapfs_stats fs = {0};
	uint64_t t = tern_now_ns();

	if (rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", r->st->rootfs);
	int ret = tern_snapfs_restore(rootfd, r->snapfd, &fs, err);
	stats->fs_ns = tern_now_ns() - t;
	stats->files_copied = fs.files_copied;
	stats->bytes_copied = fs.bytes_copied;
	stats->entries_removed = fs.entries_removed;
	return ret < 0 ? tern_error_wrap(err, "rootfs `%s`", r->st->rootfs) : 0;
}

/* A restored container whose memory could not be filled: killed. */
static void kill_restored(void *data)
{
	rollback_ctx *r = data;
	oci_state *now = NULL;
	tern_error *e = NULL;

	if (tern_state_read(r->dir, &now, &e) < 0) {
		tern_error_free(e);
		return;
	}
	now->pid_start_time = tern_process_start_time(now->pid);
	if (tern_snap_kill_all(now, r->id, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "%s", e->msg);
		tern_error_free(e);
	}
	oci_state_free(now);
}

static int restore(rollback_ctx *r, const tern_rollback_opts *o, tern_snapshot_stats *stats,
		   tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", r->s.path, r->name);
	cleanup_free char *config = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	/* criu's restore.log: in the state directory, which delete empties */
	cleanup_free char *work = tern_xstrdup(r->dir->dir);
	tern_create_opts copts = {
	    .bundle = r->st->bundle, .console_socket = o->console_socket, .detach = true};
	tern_ckpt_opts co = {
	    .image_path = images,
	    .work_path = work,
	    .status_fd = -1,
	    .into_dir = r->dir,
	    .config_path = config,
	    .created = r->st->created,
	    .join_netns = r->netns_fd >= 0,
	    .netns_fd = r->netns_fd,
	    .stdio_given = true,
	    .stdio_fds = {r->stdio[0], r->stdio[1], r->stdio[2]},
	    .merge_memory = r->merge_memory,
	    .netdevs_in = r->netdevs_in,
	};
	int ret = tern_snap_restore(r->rt, r->criu, r->id, &copts, &co, images, work, kill_restored,
				    r, false, stats, err);
	return ret;
}

/* The restore made the state anew: what it cannot know comes from the old
 * one (the cgroup is the container's own, made at create). */
static void keep_state_fields(rollback_ctx *r)
{
	oci_state *now = NULL;
	tern_error *e = NULL;

	if (tern_state_read(r->dir, &now, &e) == 0) {
		now->own_cgroup = r->st->own_cgroup;
		if (tern_state_write(r->dir, now, &e) < 0) {
			tern_warn("container `%s`: %s", r->id, e->msg);
			tern_error_free(e);
		}
		oci_state_free(now);
	} else {
		tern_error_free(e);
	}
}

/* A warm spare of `name`, once whoever makes it is done: swapped in. A
 * swap that fails before the kill leaves the cold way open. */
static int rollback_warm(rollback_ctx *r, const tern_rollback_opts *o, tern_snapshot_stats *stats,
			 tern_error **err)
{
	int ret = 0;
	tern_error *e = NULL;

	r->warm_lock = tern_snap_warm_lock(r->s.path, o->keep_warm, 120000, &e);
	if (r->warm_lock < 0 && r->warm_lock != -ENOENT) {
		tern_warn("%s; rolling back without it", e->msg);
		tern_error_free(e);
	}
	r->warm = r->warm_lock >= 0 && tern_snap_warm_ready(r->s.path, r->name);
	if (r->warm) {
		r->t_kill = tern_now_ns();
		ret = tern_snap_warm_swap(r->rt, r->s.path, r->id, r->dir, r->st, stats, &r->killed,
					  err);
		if (ret < 0 && !r->killed) {
			tern_warn("warm spare of `%s` at `%s` not used: %s", r->id, r->name,
				  (*err)->msg);
			tern_error_free(*err);
			*err = NULL;
			tern_snap_warm_discard(r->rt, r->s.path, r->id, NULL);
			r->warm = false;
			ret = 0;
		}
	}
	return ret;
}

/* The cold way: the processes killed, the rootfs put back, criu's
 * restore into the same cgroup. */
static int rollback_cold(rollback_ctx *r, const tern_rollback_opts *o, tern_snapshot_stats *stats,
			 tern_error **err)
{
	int ret = 0;
	/* the network namespace the snapshot left out: the live one, held
	 * while the processes are replaced */
	{
		cleanup_free char *images = tern_strdup_printf("%s/%s/images", r->s.path, r->name);
		if (tern_snap_own_netns(r->config) && tern_ckpt_netns_left_out(images)) {
			cleanup_free char *ns = tern_strdup_printf("/proc/%d/ns/net", r->st->pid);
			r->netns_fd = open(ns, O_RDONLY | O_CLOEXEC);
			if (r->netns_fd < 0)
				ret = tern_error_make(err, errno, "the network namespace `%s`", ns);
		}
	}
	if (ret == 0) {
		cleanup_free char *images = tern_strdup_printf("%s/%s/images", r->s.path, r->name);
		take_stdio(images, r->st->pid, r->stdio);
		r->merge_memory = tern_memory_merge_is_marked(r->st->pid);
		r->t_kill = tern_now_ns();
		ret = tern_snap_kill_all(r->st, r->id, err);
		r->killed = true;
		if (ret == 0)
			ret = move_veths_out(r, err);
		if (ret == 0)
			ret = put_back_fs(r, stats, err);
		if (ret == 0)
			ret = restore(r, o, stats, err);
		if (ret == 0)
			keep_state_fields(r);
		else
			undo_veths(r);
	}
	return ret;
}

/* Done: the head is the snapshot rolled back to. Failed: the error says
 * whether the container is gone (its old state, whose init is dead, is
 * `stopped`, for delete). */
static void rollback_end(rollback_ctx *r, int ret, tern_error **err)
{
	if (ret == 0) {
		cleanup_free char *head = tern_strdup_printf("%s\n", r->name);
		tern_error *e = NULL;
		if (tern_snap_write_at(r->s.fd, TERN_SNAP_HEAD_FILE, head, &e) < 0) {
			tern_warn("snapshot store of `%s`: %s", r->id, e->msg);
			tern_error_free(e);
		}
	} else if (r->killed) {
		/* the old state, whose init is dead: `stopped`, for delete */
		tern_error *e = NULL;
		if (tern_state_write(r->dir, r->st, &e) < 0)
			tern_error_free(e);
		tern_error_wrap(err,
				"roll back `%s` to `%s` (its processes were killed: it has "
				"stopped)",
				r->id, r->name);
	} else if (ret < 0) {
		tern_error_wrap(err, "roll back `%s` to `%s`", r->id, r->name);
	}
}

/* The next spare, or (after a swap) the old processes' end */
static void rollback_next_spare(rollback_ctx *r, const tern_rollback_opts *o,
				const tern_snapshot_stats *stats, int host_mnt)
{
	tern_error *e = NULL;

	if (tern_snap_warm_spawn(r->rt, r->criu, r->s.path, r->id, o->keep_warm ? r->name : NULL,
				 r->warm_lock, host_mnt, &e) < 0) {
		tern_warn("no warm spare of `%s` at `%s`: %s", r->id, r->name, e->msg);
		tern_error_free(e);
		/* the old processes are not to wait, frozen, for the next */
		if (stats->warm)
			tern_snap_warm_reap(r->s.path);
	}
}

static void rollback_ctx_free(rollback_ctx *r)
{
	if (r->warm_lock >= 0)
		close(r->warm_lock);
	for (int i = 0; i < 3; i++)
		if (r->stdio[i] >= 0)
			close(r->stdio[i]);
	if (r->netns_fd >= 0)
		close(r->netns_fd);
	if (r->snapfd >= 0)
		close(r->snapfd);
	if (r->old_netns >= 0)
		close(r->old_netns);
	tern_strv_freep(&r->veth_live);
	tern_strv_freep(&r->veth_inner);
	tern_strv_freep(&r->netdevs_in);
	free(r->moved_index);
	tern_snap_store_close(&r->s);
	oci_state_free(r->st);
	oci_config_free(r->config);
	tern_state_dir_free(r->dir);
}

int tern_snapshot_rollback(const tern_runtime *rt, const char *criu, const char *id,
			   const char *name, const tern_rollback_opts *o,
			   tern_snapshot_stats *stats, tern_error **err)
{
	rollback_ctx r = {.rt = rt,
			  .criu = criu,
			  .id = id,
			  .name = name,
			  .s = {.fd = -1},
			  .snapfd = -1,
			  .netns_fd = -1,
			  .old_netns = -1,
			  .stdio = {-1, -1, -1},
			  .console_socket = o->console_socket,
			  .warm_lock = -1};
	uint64_t t0 = tern_now_ns();
	int ret;
	/* a restore leaves this process in a mount namespace of its own */
	cleanup_close int host_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

	memset(stats, 0, sizeof(*stats));
	ret = tern_snap_check_name(name, err);
	if (ret == 0)
		ret = tern_container_load(rt, id, &r.dir, &r.st, &r.config, err);
	if (ret == 0)
		ret = rollback_check(&r, err);
	if (ret == 0)
		ret = rollback_warm(&r, o, stats, err);
	if (ret == 0 && !r.warm)
		ret = rollback_cold(&r, o, stats, err);
	rollback_end(&r, ret, err);
	if (r.t_kill && !stats->warm)
		stats->frozen_ns = tern_now_ns() - r.t_kill;
	stats->total_ns = tern_now_ns() - t0;
	if (ret == 0 && r.warm_lock >= 0 && (o->keep_warm || stats->warm))
		rollback_next_spare(&r, o, stats, host_mnt);
	rollback_ctx_free(&r);
	return ret;
}
