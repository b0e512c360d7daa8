/* tern snapshot: a running container's rootfs and memory recorded, frozen
 * at one instant, into a new snapshot of the store (snapshot.h says what
 * it holds). Owns the stages of a take: the freeze, the rootfs record, the
 * dump (its memory incremental on the last snapshot's), the snapshot
 * named when complete.
 *
 * Uses snapshot-store, snapshot-container, snapshot-fs and snapshot-warm
 * (--keep-warm); no snapshot file uses it (the order is in
 * snapshot-store.h). */
#include "snapshot.h"
#include "cgroup.h"
#include "checkpoint.h"
#include "criu-swrk.h"
#include "dump-progress.h"
#include "log.h"
#include "snapshot-container.h"
#include "snapshot-fs.h"
#include "snapshot-space.h"
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* criu reads a page that did not change through every parent up the
 * chain: past this many, a snapshot dumps its memory whole again */
#define MEM_DEPTH_MAX 8

static bool has_v1_freezer(const oci_map *paths)
{
	for (size_t i = 0; i < paths->len; i++) {
		const char *k = strrchr(paths->items[i].key, '/');
		if (k && strcmp(k, "/freezer") == 0)
			return true;
	}
	return false;
}

typedef struct {
	const tern_runtime *rt;
	const char *criu;
	const char *id;
	tern_container_dir *dir;
	oci_state *st;
	tern_snap_store s;
	char *tmp; /* the snapshot being made */
	int tmpfd;
	int prevfd;
	bool frozen;
	bool track_mem;		/* the kernel tracks dirty pages (soft-dirty) */
	bool criu_checked;	/* tern_criu_features_cached() knows this criu works */
	const char *mem_parent; /* the snapshot whose images hold our unchanged pages */
	int mem_depth;
	tern_mig_progress progress; /* (o->progress) */
	/* the container has a user namespace and a network namespace of its
	 * own: the network namespace belongs to that user namespace, which
	 * criu makes anew on restore, so only criu can make its successor
	 * (from the images); see snapshot-rollback.c */
	bool netns_in_images;
	tern_criu_swrk swrk; /* started before the freeze (criu-swrk.h) */
} snap_ctx;

/* Hard links of every file in `src` (and of its own parent/, the same
 * way) in the new directory `name` of `dstfd`: a snapshot's parent images
 * become its own, and deleting the parent snapshot takes nothing from it. */
static int link_images(int srcfd, int dstfd, const char *name, int depth, tern_error **err)
{
	if (mkdirat(dstfd, name, 0700) < 0)
		return tern_error_make(err, errno, "images `%s`", name);
	cleanup_close int to = openat(dstfd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_close int fd = dup(srcfd);
	DIR *d = fd >= 0 && to >= 0 ? fdopendir(fd) : NULL;
	int ret = 0;

	if (d == NULL)
		return tern_error_make(err, errno, "images `%s`", name);
	fd = -1;
	for (struct dirent *e; ret == 0 && (e = readdir(d)) != NULL;) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    fstatat(srcfd, e->d_name, &st, 0) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			if (linkat(srcfd, e->d_name, to, e->d_name, 0) < 0)
				ret = tern_error_make(err, errno, "link the parent image `%s`",
						      e->d_name);
		} else if (S_ISDIR(st.st_mode) && strcmp(e->d_name, "parent") == 0 &&
			   depth < MEM_DEPTH_MAX) {
			cleanup_close int sub =
			    openat(srcfd, e->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
			ret = sub < 0 ? tern_error_make(err, errno, "parent images")
				      : link_images(sub, to, "parent", depth + 1, err);
		}
	}
	closedir(d);
	return ret;
}

/* criu made images/parent a symlink to the parent snapshot's images:
 * replace it by hard links of them. */
static int own_parent_images(snap_ctx *c, tern_error **err)
{
	cleanup_close int images = openat(c->tmpfd, "images", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_close int parent =
	    images >= 0 ? openat(images, "parent", O_DIRECTORY | O_RDONLY | O_CLOEXEC) : -1;

	if (parent < 0)
		return tern_error_make(err, errno, "the parent images of `%s`", c->tmp);
	int ret = link_images(parent, images, "parent.new", 0, err);
	if (ret == 0 && (unlinkat(images, "parent", 0) < 0 ||
			 renameat(images, "parent.new", images, "parent") < 0))
		ret = tern_error_make(err, errno, "the parent images of `%s`", c->tmp);
	return ret;
}

static int record_fs(snap_ctx *c, tern_snapshot_stats *stats, tern_error **err)
{
	cleanup_close int rootfd = open(c->st->rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	tern_snapfs_stats fs = {0};
	uint64_t t = tern_now_ns();

	if (rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", c->st->rootfs);
	int ret = tern_snapfs_record(rootfd, c->prevfd, c->tmpfd, &fs, err);
	stats->fs_ns = tern_now_ns() - t;
	stats->files_copied = fs.files_copied;
	stats->files_linked = fs.files_linked;
	stats->bytes_copied = fs.bytes_copied;
	return ret < 0 ? tern_error_wrap(err, "rootfs `%s`", c->st->rootfs) : 0;
}

static int dump(snap_ctx *c, const tern_snapshot_opts *o, bool leave_frozen,
		tern_snapshot_stats *stats, tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/images", c->tmp);
	/* (relative to images/: the same once the snapshot has its name) */
	cleanup_free char *parent =
	    c->mem_parent ? tern_strdup_printf("../../%s/images", c->mem_parent) : NULL;
	tern_ckpt_opts co = {
	    .image_path = images,
	    .parent_path = parent,
	    .track_mem = c->track_mem,
	    .criu_checked = c->criu_checked,
	    .status_fd = -1,
	    .leave_running = true,
	    .leave_frozen = leave_frozen,
	    .netns_out = !c->netns_in_images,
	    .into_dir = c->dir,
	    .tcp_established = o->tcp_established,
	    .ext_unix_sk = o->ext_unix_sk,
	    .shell_job = o->shell_job,
	    .file_locks = o->file_locks,
	    .link_remap = o->link_remap,
	    .swrk = c->swrk.pid > 0 ? &c->swrk : NULL,
	};
	/* libcriu holds this process until the dump is over: a child says
	 * how far it got meanwhile (a snapshot without it is no failure);
	 * it runs from before the dump until after it */
	tern_dump_watcher watcher = {0};
	if (o->progress) {
		tern_error *e = NULL;
		if (tern_dump_watcher_start(&watcher, images, &c->progress, &e) < 0) {
			tern_debug("no progress of the dump of `%s`: %s", c->id, e->msg);
			tern_error_free(e);
		}
	}
	uint64_t t = tern_now_ns();
	int ret = tern_container_checkpoint(c->rt, c->criu, c->id, &co, err);

	stats->criu_ns = tern_now_ns() - t;
	tern_dump_watcher_stop(&watcher, ret == 0);
	tern_debug("criu dumped `%s` in %llu ms", c->id,
		   (unsigned long long)(stats->criu_ns / 1000000));
	if (ret == 0 && c->mem_parent)
		ret = own_parent_images(c, err);
	return ret;
}

/* Frozen: the rootfs and the memory at one instant. With a v1 freezer
 * criu dumps a cgroup frozen beforehand (and leaves it frozen); on v2 it
 * cannot, so criu stops the tasks itself and tern freezes the cgroup
 * before criu lets them go (leave_frozen); the rootfs, which nothing
 * changed since, is recorded after the dump. */
static int take_frozen(snap_ctx *c, const tern_snapshot_opts *o, tern_snapshot_stats *stats,
		       tern_error **err)
{
	const oci_map *paths = &c->st->cgroup_paths;
	uint64_t t = tern_now_ns();
	int ret;

	if (has_v1_freezer(paths)) {
		/* criu's start (exec, libraries) before the freeze rather than
		 * inside it: the dump then begins as soon as the rootfs is
		 * recorded. Not ready in time, or not started: it is only
		 * slower. */
		tern_error *e = NULL;
		if (tern_criu_swrk_start(&c->swrk, c->criu, &e) < 0) {
			tern_debug("criu started by libcriu: %s", e->msg);
			tern_error_free(e);
		} else if (!tern_criu_swrk_wait_ready(&c->swrk, 1000)) {
			tern_debug("criu swrk %d not ready after 1 s: freezing all the same",
				   (int)c->swrk.pid);
		}
		t = tern_now_ns();
		ret = tern_cgroup_freeze(paths, true, err);
		if (ret < 0)
			return tern_error_wrap(err, "freeze `%s`", c->id);
		c->frozen = true;
		ret = record_fs(c, stats, err);
		if (ret == 0)
			ret = dump(c, o, false, stats, err);
	} else {
		ret = dump(c, o, true, stats, err);
		c->frozen = ret == 0;
		if (ret == 0)
			ret = record_fs(c, stats, err);
	}
	if (c->frozen) {
		tern_error *e = NULL;
		if (tern_cgroup_freeze(paths, false, &e) < 0) {
			tern_log(TERN_LOG_ERROR, "thaw `%s` after its snapshot: %s", c->id, e->msg);
			tern_error_free(e);
		}
		c->frozen = false;
	}
	stats->frozen_ns = tern_now_ns() - t;
	tern_criu_swrk_finish(&c->swrk);
	return ret;
}

/* A regular file the init writes as stdio (a log the operator gave it)
 * goes on growing after the snapshot, and criu refuses to restore an fd
 * whose file changed size since the dump, unless it is write-only and
 * O_APPEND (criu's rule for log files). The rollback gives back the very
 * same open file, so its size is no reason to fail: make it O_APPEND,
 * which for a file only appended to changes nothing. */
static void stdio_append(pid_t pid)
{
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct stat st;

	for (int i = 0; pidfd >= 0 && i < 3; i++) {
		cleanup_close int fd = (int)syscall(SYS_pidfd_getfd, pidfd, i, 0);
		int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
		if (fl < 0 || (fl & O_ACCMODE) != O_WRONLY || (fl & O_APPEND) ||
		    fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (fcntl(fd, F_SETFL, fl | O_APPEND) < 0)
			tern_debug("stdio fd %d of %d: O_APPEND: %s", i, (int)pid, strerror(errno));
	}
}

static int finish_snapshot(snap_ctx *c, const char *name, const char *parent,
			   const tern_snapshot_opts *o, tern_snapshot_stats *stats,
			   tern_error **err)
{
	cleanup_free char *created = tern_state_now_rfc3339();
	cleanup_free char *meta =
	    tern_snap_meta_format(created, parent, o, c->mem_parent ? c->mem_depth : 0);
	int ret = tern_snap_write_at(c->tmpfd, TERN_SNAP_META_FILE, meta, err);

	if (ret < 0)
		return ret;
	stats->bytes = tern_snap_own_bytes(c->tmpfd);
	const char *base = strrchr(c->tmp, '/') + 1;
	if (renameat(c->s.fd, base, c->s.fd, name) < 0)
		return tern_error_make(err, errno, "snapshot `%s` of `%s`", name, c->id);
	free(c->tmp);
	c->tmp = NULL;
	cleanup_free char *head = tern_strdup_printf("%s\n", name);
	tern_error *e = NULL;
	/* (without it the next snapshot copies every file again: slower,
	 * not wrong) */
	if (tern_snap_write_at(c->s.fd, TERN_SNAP_HEAD_FILE, head, &e) < 0) {
		tern_warn("snapshot store of `%s`: %s", c->id, e->msg);
		tern_error_free(e);
	}
	return 0;
}

/* A warm spare of `name` made in the background (snapshot-warm.c); the
 * snapshot or rollback itself has succeeded, so a failure here is only
 * said. */
static void keep_warm(const tern_runtime *rt, const char *criu, const char *store, const char *id,
		      const char *name)
{
	tern_error *e = NULL;
	int lockfd = tern_snap_warm_lock(store, true, 120000, &e);

	if (lockfd >= 0 && tern_snap_warm_spawn(rt, criu, store, id, name, lockfd, -1, &e) == 0) {
		close(lockfd);
		return;
	}
	if (lockfd >= 0)
		close(lockfd);
	tern_warn("no warm spare of `%s` at `%s`: %s", id, name, e->msg);
	tern_error_free(e);
}

int tern_snapshot_take(const tern_runtime *rt, const char *criu, const char *id, const char *name,
		       const tern_snapshot_opts *o, tern_snapshot_stats *stats, tern_error **err)
{
	snap_ctx c = {.rt = rt,
		      .criu = criu,
		      .id = id,
		      .s = {.fd = -1},
		      .tmpfd = -1,
		      .prevfd = -1,
		      .swrk = {.fd = -1}};
	oci_config *config = NULL;
	cleanup_free char *parent = NULL;
	uint64_t t0 = tern_now_ns();
	int ret;

	memset(stats, 0, sizeof(*stats));
	tern_mig_progress_init(&c.progress, "snapshot", o->progress_json);
	ret = tern_snap_check_name(name, err);
	if (ret < 0)
		return ret;
	ret = tern_container_load(rt, id, &c.dir, &c.st, &config, err);
	if (ret < 0)
		return ret;
	ret = tern_snap_check_running(c.st, "snapshot", id, err);
	c.netns_in_images =
	    config && tern_snap_own_ns(config, OCI_NS_USER) && tern_snap_own_netns(config);
	if (ret == 0)
		ret = tern_snap_store_open(rt->root, id, true, &c.s, err);
	if (ret == 0) {
		tern_snap_store_sweep(&c.s);
		if (faccessat(c.s.fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			ret = tern_error_make_quiet(
			    err, EEXIST, "container `%s` has a snapshot `%s` already", id, name);
	}
	if (ret == 0) {
		c.tmp = tern_strdup_printf("%s/" TERN_SNAP_TMP_PREFIX "%s-XXXXXX", c.s.path, name);
		if (mkdtemp(c.tmp) == NULL) {
			ret = tern_error_make(err, errno, "snapshot directory `%s`", c.tmp);
			free(c.tmp);
			c.tmp = NULL;
		}
	}
	if (ret == 0) {
		c.tmpfd = open(c.tmp, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		if (c.tmpfd < 0)
			ret = tern_error_make(err, errno, "snapshot directory `%s`", c.tmp);
	}
	if (ret == 0) {
		stdio_append(c.st->pid);
		parent = tern_snap_head_read(&c.s);
		if (parent)
			c.prevfd = openat(c.s.fd, parent, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		tern_criu_features f = tern_criu_features_cached(rt->root, criu);
		c.track_mem = f.mem_track;
		c.criu_checked = f.works;
		tern_snapshot_info pi = {0};
		if (c.track_mem && c.prevfd >= 0 && tern_snap_meta_read(c.prevfd, &pi, NULL) == 0 &&
		    pi.mem_depth + 1 < MEM_DEPTH_MAX &&
		    faccessat(c.prevfd, "images/inventory.img", F_OK, 0) == 0) {
			c.mem_parent = parent;
			c.mem_depth = pi.mem_depth + 1;
		}
		tern_snapshot_info_clear(&pi);
		tern_snap_space space;
		ret = tern_snap_space_check(c.st, c.s.path, c.prevfd, &space, err);
		if (ret == 0)
			ret = take_frozen(&c, o, stats, err);
	}
	if (ret == 0)
		ret = finish_snapshot(&c, name, parent, o, stats, err);
	if (ret == 0 && o->keep_warm)
		keep_warm(rt, criu, c.s.path, id, name);
	if (ret < 0 && c.tmp)
		tern_remove_tree(c.tmp);
	if (ret < 0)
		tern_snap_store_remove_empty(&c.s);
	if (ret < 0)
		tern_error_wrap(err, "snapshot `%s` of `%s`", name, id);
	stats->total_ns = tern_now_ns() - t0;
	free(c.tmp);
	if (c.tmpfd >= 0)
		close(c.tmpfd);
	if (c.prevfd >= 0)
		close(c.prevfd);
	tern_snap_store_close(&c.s);
	oci_state_free(c.st);
	oci_config_free(config);
	tern_state_dir_free(c.dir);
	return ret;
}
