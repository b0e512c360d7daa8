/* tern clone ID NAME NEW-ID: a new, independent container started from a
 * snapshot ("initialise once, claim many").
 *
 * The clone's bundle (--bundle DIR, which must not exist yet; default
 * ROOT/@clones/NEW-ID.bundle) is tern's and goes with `delete`:
 *   config.json   the snapshot's config, with root.path "rootfs", no
 *                 cgroupsPath (the clone's cgroup is named after NEW-ID)
 *                 and no network namespace path (a new one: the snapshot
 *                 left the namespace out)
 *   stdio.log     with a user namespace of its own: what the init's stdio
 *                 outside the container took (snapshot-spares.h)
 *   rootfs/       an overlay: the snapshot's tree/ read-only below, the
 *                 clone's own .upper/ above, so N clones share the
 *                 snapshot's files and each writes only its own
 *   .upper/ .work/
 * ROOT/@clones/NEW-ID records "bundle PATH" and "source ID NAME"; the
 * snapshot holds clones/NEW-ID while the clone exists, and cannot be
 * deleted meanwhile (its tree is the clone's lower layer).
 *
 * A container with a user namespace of its own: criu makes the clone's
 * user namespace anew (the images' root task has CLONE_NEWUSER), and a
 * process of it may not enter a network namespace that belongs to
 * another, so tern makes none: the snapshot holds the network namespace
 * (snapshot-take.c) and criu makes the clone's from it, with the
 * addresses and routes it had, owned by the clone's user namespace.
 * Refused up front (tern_snap_clone_check_userns): a network namespace
 * joined by path, one left out of the images (an older snapshot), and a
 * veth to the host, which criu cannot make in such a namespace. The
 * images are opened to the container's root (checkpoint-userns.h), and
 * the init's outside stdio goes to BUNDLE/stdio.log, the container
 * root's: criu reopens it from inside the new user namespace, where the
 * caller's files are not open to it.
 *
 * Memory: each clone gets its own copy, restored by criu from the
 * snapshot's images. With --share-memory the copies are marked for the
 * kernel's samepage merging, and ksmd folds the pages that are still the
 * same across the clones into one (memory-merge.h).
 *
 * The highest of the snapshot files: it uses snapshot-store,
 * snapshot-container, snapshot-spares (a ready spare claimed) and
 * snapshot.c (a clone that failed half-way deleted as `tern delete` would
 * delete it); none of them uses it (the order is in snapshot-store.h). */
#include "snapshot.h"
#include "checkpoint.h"
#include "log.h"
#include "memory-merge.h"
#include "snapshot-container.h"
#include "snapshot-spares.h"
#include "snapshot-store.h"
#include "state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	const char *root;
	const char *id; /* the source */
	const char *name;
	const char *new_id;
	tern_snap_store s;
	int snapfd;
	char *record; /* ROOT/@clones/NEW-ID */
	char *bundle;
	char *rootfs;
	bool made_bundle;
	bool mounted;
	bool marked;
} clone_ctx;

static int make_bundle(clone_ctx *c, const char *bundle_opt, tern_error **err)
{
	cleanup_free char *clones = tern_strdup_printf("%s/" TERN_CLONES_DIR, c->root);

	if (tern_mkdir_p(clones, 0700, err) < 0)
		return tern_error_wrap(err, "clone");
	c->record = tern_strdup_printf("%s/%s", clones, c->new_id);
	c->bundle = bundle_opt ? tern_absolute_path(bundle_opt)
			       : tern_strdup_printf("%s/%s.bundle", clones, c->new_id);
	/* (the overlay's options are comma-separated) */
	if (strpbrk(c->bundle, ",:") || strpbrk(c->s.path, ",:"))
		return tern_error_make_quiet(err, EINVAL,
					     "clone: `%s` or `%s` has a ',' or ':', which an "
					     "overlay mount cannot take",
					     c->bundle, c->s.path);
	if (mkdir(c->bundle, 0711) < 0)
		return tern_error_make(err, errno, "--bundle `%s` (clone makes it: it must not exist)",
				       c->bundle);
	c->made_bundle = true;
	c->rootfs = tern_strdup_printf("%s/rootfs", c->bundle);
	cleanup_free char *lower = tern_strdup_printf("%s/%s/tree", c->s.path, c->name);
	int ret = tern_snap_overlay_mount(lower, c->bundle, err);
	if (ret < 0)
		return tern_error_wrap(err, "clone rootfs");
	c->mounted = true;
	return 0;
}

static int write_record(clone_ctx *c, tern_error **err)
{
	cleanup_free char *rec =
	    tern_strdup_printf("bundle %s\nsource %s %s\n", c->bundle, c->id, c->name);
	cleanup_free char *mark = tern_strdup_printf("%s/%s/clones", c->s.path, c->name);

	if (mkdir(mark, 0700) < 0 && errno != EEXIST)
		return tern_error_make(err, errno, "`%s`", mark);
	cleanup_free char *m = tern_strdup_printf("%s/%s", mark, c->new_id);
	int ret = tern_write_file(m, "", 0, 0600, err);
	if (ret < 0)
		return ret;
	c->marked = true;
	return tern_write_file(c->record, rec, strlen(rec), 0600, err);
}

/* A restore leaves tern clone in a mount namespace of its own; the
 * clone's overlay is the host's, undone there. */
static void back_to_host(int host_mnt, const char *id)
{
	if (host_mnt >= 0 && setns(host_mnt, CLONE_NEWNS) < 0)
		tern_warn("clone `%s`: back to the host's mount namespace: %s", id,
			  strerror(errno));
}

struct gone_ctx {
	const tern_runtime *rt;
	const char *id;
	pid_t clone_cmd; /* tern clone itself, not its background filler */
	int host_mnt;
};

/* a clone restored whose memory could not be filled: deleted as `tern
 * delete` would, by tern clone or by its filler (criu-lazy-filler.h) */
static void delete_clone(void *data)
{
	struct gone_ctx *gc = data;
	tern_error *e = NULL;

	/* (the filler never left the host's) */
	if (getpid() == gc->clone_cmd)
		back_to_host(gc->host_mnt, gc->id);

	if (tern_snapshot_container_delete(gc->rt, gc->id, true, false, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "%s", e->msg);
		tern_error_free(e);
	}
}

/* The clone made from a ready spare (stats->spare set then, and the
 * result is its record's); otherwise what the claim said: 0, no spare is
 * ready, or its error. */
static int clone_from_spare(clone_ctx *c, const tern_runtime *rt, const char *criu,
			    tern_snapshot_stats *stats, tern_error **err)
{
	cleanup_free char *clones = tern_strdup_printf("%s/" TERN_CLONES_DIR, c->root);
	cleanup_free char *bundle = tern_strdup_printf("%s/%s.bundle", clones, c->new_id);
	int ret = tern_mkdir_p(clones, 0700, err);

	if (ret == 0)
		ret = tern_snap_spares_claim(rt, criu, c->s.path, c->id, c->name, c->new_id, bundle,
					     err);
	if (ret > 0) {
		stats->spare = true;
		c->record = tern_strdup_printf("%s/%s", clones, c->new_id);
		c->bundle = steal_pointer(&bundle);
		ret = write_record(c, err);
		if (ret < 0) {
			tern_error *e = NULL;
			if (tern_snapshot_container_delete(rt, c->new_id, true, false, &e) < 0) {
				tern_warn("%s", e->msg);
				tern_error_free(e);
			}
		}
	}
	return ret;
}

int tern_snapshot_clone(const tern_runtime *rt, const char *criu, const char *id, const char *name,
			const char *new_id, const tern_clone_opts *o, tern_snapshot_stats *stats,
			tern_error **err)
{
	clone_ctx c = {.root = rt->root,
		       .id = id,
		       .name = name,
		       .new_id = new_id,
		       .s = {.fd = -1},
		       .snapfd = -1};
	uint64_t t0 = tern_now_ns();
	int ret;
	/* (back_to_host) */
	cleanup_close int host_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

	memset(stats, 0, sizeof(*stats));
	ret = tern_snap_check_name(name, err);
	if (ret == 0)
		ret = tern_state_check_id(new_id, err);
	if (ret == 0 && o->share_memory) {
		ret = tern_memory_merge_check(err);
		if (ret == 0 && !tern_memory_merge_ksmd_runs())
			tern_warn("--share-memory: ksmd is off (/sys/kernel/mm/ksm/run is not 1): the "
				  "clone's memory is marked, but nothing merges it until ksmd runs");
	}
	if (ret == 0) {
		cleanup_free char *state = tern_strdup_printf("%s/%s", rt->root, new_id);
		if (access(state, F_OK) == 0)
			ret = tern_error_make_quiet(err, EEXIST, "container `%s` already exists",
						    new_id);
	}
	if (ret == 0) {
		ret = tern_snap_store_open(rt->root, id, false, &c.s, err);
		if (ret == 0)
			c.snapfd = openat(c.s.fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (ret == -ENOENT || (ret == 0 && c.snapfd < 0))
			ret = tern_error_make_quiet(err, ENOENT, "container `%s` has no snapshot `%s`",
						    id, name);
	}
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", c.s.path, name);
	/* a user namespace of its own: criu makes the clone's network
	 * namespace from the images (see the top) */
	if (ret == 0)
		ret = tern_snap_clone_check_userns(images, id, name, err);
	/* (the clone's stdio where tern gives it: criu closes each once it
	 * has it, and these are closed at the end) */
	int fds[3] = {-1, -1, -1};
	/* a spare restored ahead of time, where one is ready and the clone
	 * asks for nothing a spare cannot have (snapshot-spares.c) */
	if (ret == 0 && !o->bundle && !o->console_socket && !o->share_memory) {
		ret = clone_from_spare(&c, rt, criu, stats, err);
		if (stats->spare)
			goto done;
	}
	if (ret == 0)
		ret = make_bundle(&c, o->bundle, err);
	if (ret == 0) {
		tern_snap_config_opts cfg = {0};
		ret = tern_snap_write_config(images, c.bundle, &cfg, err);
	}
	if (ret == 0)
		ret = write_record(&c, err);
	/* in a user namespace of its own, criu reopens the stdio from inside
	 * it, where the caller's files are not open to the container's root:
	 * the clone writes to BUNDLE/stdio.log as a spare's clone does */
	bool own_stdio = ret == 0 && tern_ckpt_own_userns(images);
	if (own_stdio)
		ret = tern_snap_clone_stdio(images, c.bundle, fds, err);
	if (ret == 0) {
		tern_create_opts copts = {
		    .bundle = c.bundle, .console_socket = o->console_socket, .detach = true};
		/* the clone is gone after a failure: criu's logs are kept
		 * with the container it is cloned from, while it exists */
		cleanup_free char *logs_in = tern_strdup_printf("%s/%s", rt->root, id);
		tern_ckpt_opts co = {
		    .image_path = images,
		    .status_fd = -1,
		    .failure_logs_in = logs_in,
		    .merge_memory = o->share_memory,
		    .stdio_given = own_stdio,
		    .stdio_fds = {fds[0], fds[1], fds[2]},
		};
		struct gone_ctx gc = {
		    .rt = rt, .id = new_id, .clone_cmd = getpid(), .host_mnt = host_mnt};
		ret = tern_snap_restore(rt, criu, new_id, &copts, &co, images, c.bundle,
					delete_clone, &gc, !o->wait_fill, stats, err);
	}
	if (ret < 0) {
		tern_error_wrap(err, "clone `%s` from snapshot `%s` of `%s`", new_id, name, id);
		if (c.marked) {
			cleanup_free char *m =
			    tern_strdup_printf("%s/%s/clones/%s", c.s.path, name, new_id);
			unlink(m);
		}
		if (c.record)
			unlink(c.record);
		back_to_host(host_mnt, new_id);
		if (c.made_bundle)
			tern_snap_overlay_undo(c.bundle);
	}
done:
	stats->total_ns = tern_now_ns() - t0;
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (c.snapfd >= 0)
		close(c.snapfd);
	tern_snap_store_close(&c.s);
	free(c.record);
	free(c.bundle);
	free(c.rootfs);
	return ret;
}
