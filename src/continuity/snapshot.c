/* tern snapshot / rollback (the layout and the rules are in snapshot.h). */
#include "snapshot.h"
#include "checkpoint.h"
#include "cgroup.h"
#include "log.h"
#include "memory-merge.h"
#include "snapshot-fs.h"
#include "snapshot-store.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define META_FILE "snapshot.txt"
#define HEAD_FILE "head"
#define TMP_PREFIX ".tmp-"
/* criu reads a page that did not change through every parent up the
 * chain: past this many, a snapshot dumps its memory whole again */
#define MEM_DEPTH_MAX 8

void tern_snapshot_info_clear(tern_snapshot_info *i)
{
	free(i->name);
	free(i->created);
	free(i->parent);
	memset(i, 0, sizeof(*i));
}

/* A snapshot name: what a container id may be ([A-Za-z0-9_+.-]), not
 * starting with a dot (the store's own entries do). */
int tern_snap_check_name(const char *name, tern_error **err)
{
	if (name == NULL || *name == '\0')
		return tern_error_make_quiet(err, EINVAL, "snapshot name is empty");
	if (name[0] == '.' || strlen(name) > 200 || tern_state_check_id(name, NULL) < 0 ||
	    strcmp(name, HEAD_FILE) == 0)
		return tern_error_make_quiet(err, EINVAL,
					     "invalid snapshot name `%s`: use letters, digits and "
					     "_ + - . (not first), at most 200",
					     name);
	return 0;
}

/* ---- the store ---- */

void tern_snap_store_close(tern_snap_store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	s->fd = -1;
	s->path = NULL;
}

/* Open (with `create`: make) and lock ROOT/@snapshots/ID. ENOENT when it
 * does not exist and may not be made. */
int tern_snap_store_open(const char *root, const char *id, bool create, tern_snap_store *s, tern_error **err)
{
	int ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	s->path = tern_strdup_printf("%s/" TERN_SNAPSHOT_DIR "/%s", root, id);
	if (create && tern_mkdir_p(s->path, 0700, err) < 0)
		return tern_error_wrap(err, "snapshot store");
	s->fd = open(s->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->fd < 0)
		return errno == ENOENT ? -ENOENT
				       : tern_error_make(err, errno, "snapshot store `%s`", s->path);
	if (flock(s->fd, LOCK_EX) < 0)
		return tern_error_make(err, errno, "lock the snapshot store `%s`", s->path);
	return 0;
}

/* What a tern killed half-way left: .tmp-* directories. The store is
 * locked, so none is in use. */
static void sweep(tern_snap_store *s)
{
	cleanup_close int fd = dup(s->fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (d == NULL)
		return;
	fd = -1;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		cleanup_free char *path = tern_strdup_printf("%s/%s", s->path, e->d_name);
		tern_debug("removing `%s`, left by a snapshot that did not finish", path);
		tern_remove_tree(path);
	}
	closedir(d);
}

static char *read_head(tern_snap_store *s)
{
	char buf[256];
	cleanup_close int fd = openat(s->fd, HEAD_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (tern_snap_check_name(buf, NULL) < 0 || faccessat(s->fd, buf, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	return tern_xstrdup(buf);
}

static int write_at(int dirfd, const char *name, const char *data, tern_error **err)
{
	cleanup_free char *tmp = tern_strdup_printf("%s.new", name);
	cleanup_close int fd =
	    openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || tern_write_all(fd, data, strlen(data)) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		int e = errno;
		unlinkat(dirfd, tmp, 0);
		return tern_error_make(err, e, "write `%s`", name);
	}
	return 0;
}

/* The flags the dump was taken with: the restore needs the same. */
static char *meta_format(const char *created, const char *parent, const tern_snapshot_opts *o,
			 int mem_depth)
{
	return tern_strdup_printf("created %s\nparent %s\ntcp-established %d\next-unix-sk %d\n"
				  "shell-job %d\nfile-locks %d\nlink-remap %d\nmem-depth %d\n",
				  created, parent ? parent : "", o->tcp_established, o->ext_unix_sk,
				  o->shell_job, o->file_locks, o->link_remap, mem_depth);
}

int tern_snap_meta_read(int snapfd, tern_snapshot_info *info, tern_snapshot_opts *o)
{
	cleanup_close int fd = openat(snapfd, META_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_free char *data = NULL;
	size_t len;

	if (fd < 0)
		return -errno;
	if (tern_read_fd_all(fd, &data, &len, 65536) < 0)
		return -EIO;
	for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
		char *v = strchr(line, ' ');
		if (v == NULL)
			continue;
		*v++ = '\0';
		bool on = strcmp(v, "1") == 0;
		/* a key given twice: the last one counts */
		if (info && strcmp(line, "created") == 0) {
			free(info->created);
			info->created = tern_xstrdup(v);
		} else if (info && strcmp(line, "parent") == 0) {
			free(info->parent);
			info->parent = tern_xstrdup(v);
		} else if (o && strcmp(line, "tcp-established") == 0)
			o->tcp_established = on;
		else if (o && strcmp(line, "ext-unix-sk") == 0)
			o->ext_unix_sk = on;
		else if (o && strcmp(line, "shell-job") == 0)
			o->shell_job = on;
		else if (o && strcmp(line, "file-locks") == 0)
			o->file_locks = on;
		else if (o && strcmp(line, "link-remap") == 0)
			o->link_remap = on;
		else if (info && strcmp(line, "mem-depth") == 0)
			info->mem_depth = atoi(v);
	}
	return 0;
}

/* What a snapshot takes on disk and shares with no other: its rootfs
 * record's own part and its images. */
static uint64_t own_bytes(int snapfd)
{
	uint64_t sum = tern_snapfs_own_bytes(snapfd);
	cleanup_close int fd = openat(snapfd, "images", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (d == NULL)
		return sum;
	fd = -1;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

/* ---- snapshot ---- */

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
} snap_ctx;

/* ---- incremental memory ---- */

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
	cleanup_close int parent = images >= 0 ? openat(images, "parent", O_DIRECTORY | O_RDONLY |
									   O_CLOEXEC)
					       : -1;

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
	    .netns_out = true,
	    .into_dir = c->dir,
	    .tcp_established = o->tcp_established,
	    .ext_unix_sk = o->ext_unix_sk,
	    .shell_job = o->shell_job,
	    .file_locks = o->file_locks,
	    .link_remap = o->link_remap,
	};
	uint64_t t = tern_now_ns();
	int ret = tern_container_checkpoint(c->rt, c->criu, c->id, &co, err);

	stats->criu_ns = tern_now_ns() - t;
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

static int check_running(const oci_state *st, const char *what, const char *id, tern_error **err)
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

static int finish_snapshot(snap_ctx *c, const char *name, const char *parent,
			   const tern_snapshot_opts *o, tern_snapshot_stats *stats, tern_error **err)
{
	cleanup_free char *created = tern_state_now_rfc3339();
	cleanup_free char *meta = meta_format(created, parent, o, c->mem_parent ? c->mem_depth : 0);
	int ret = write_at(c->tmpfd, META_FILE, meta, err);

	if (ret < 0)
		return ret;
	stats->bytes = own_bytes(c->tmpfd);
	const char *base = strrchr(c->tmp, '/') + 1;
	if (renameat(c->s.fd, base, c->s.fd, name) < 0)
		return tern_error_make(err, errno, "snapshot `%s` of `%s`", name, c->id);
	free(c->tmp);
	c->tmp = NULL;
	cleanup_free char *head = tern_strdup_printf("%s\n", name);
	tern_error *e = NULL;
	/* (without it the next snapshot copies every file again: slower,
	 * not wrong) */
	if (write_at(c->s.fd, HEAD_FILE, head, &e) < 0) {
		tern_warn("snapshot store of `%s`: %s", c->id, e->msg);
		tern_error_free(e);
	}
	return 0;
}

/* A warm spare of `name` made in the background (snapshot-warm.c); the
 * snapshot or rollback itself has succeeded, so a failure here is only
 * said. */
static void keep_warm(const tern_runtime *rt, const char *criu, const char *store,
		      const char *id, const char *name)
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

int tern_snapshot_take(const tern_runtime *rt, const char *criu, const char *id,
		       const char *name, const tern_snapshot_opts *o, tern_snapshot_stats *stats,
		       tern_error **err)
{
	snap_ctx c = {.rt = rt, .criu = criu, .id = id, .s = {.fd = -1}, .tmpfd = -1, .prevfd = -1};
	oci_config *config = NULL;
	cleanup_free char *parent = NULL;
	uint64_t t0 = tern_now_ns();
	int ret;

	memset(stats, 0, sizeof(*stats));
	ret = tern_snap_check_name(name, err);
	if (ret < 0)
		return ret;
	ret = tern_container_load(rt, id, &c.dir, &c.st, &config, err);
	if (ret < 0)
		return ret;
	ret = check_running(c.st, "snapshot", id, err);
	if (ret == 0)
		ret = tern_snap_store_open(rt->root, id, true, &c.s, err);
	if (ret == 0) {
		sweep(&c.s);
		if (faccessat(c.s.fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			ret = tern_error_make_quiet(
			    err, EEXIST, "container `%s` has a snapshot `%s` already", id, name);
	}
	if (ret == 0) {
		c.tmp = tern_strdup_printf("%s/" TMP_PREFIX "%s-XXXXXX", c.s.path, name);
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
		parent = read_head(&c.s);
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
		ret = take_frozen(&c, o, stats, err);
	}
	if (ret == 0)
		ret = finish_snapshot(&c, name, parent, o, stats, err);
	if (ret == 0 && o->keep_warm)
		keep_warm(rt, criu, c.s.path, id, name);
	if (ret < 0 && c.tmp)
		tern_remove_tree(c.tmp);
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

/* ---- rollback ---- */

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
	return tern_error_make_quiet(err, EBUSY,
				     "the processes of `%s` did not die within 10 s of SIGKILL", id);
}

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
} rollback_ctx;

/* The config makes a namespace of type `t` of its own (no path). */
static bool own_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return false;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return c->linux_->namespaces[i].path == NULL;
	return false;
}

static int rollback_check(rollback_ctx *r, tern_error **err)
{
	int ret = check_running(r->st, "roll back", r->id, err);
	if (ret < 0)
		return ret;
	if (r->config == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "cannot roll back container `%s`: its config copy in "
					     "`%s` is unreadable",
					     r->id, r->dir->dir);
	/* (restore would find out only after the processes were killed) */
	if (r->config->process && r->config->process->terminal && r->console_socket == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "container `%s` has a terminal: rollback needs "
					     "--console-socket to send the new pty master to",
					     r->id);
	/* the kept network namespace belongs to the container's user
	 * namespace, which goes with the old processes: criu cannot put the
	 * new ones into it (EPERM), and would find out after the kill */
	if (own_ns(r->config, OCI_NS_USER) && tern_snap_own_netns(r->config))
		return tern_error_make_quiet(err, ENOTSUP,
					     "container `%s` has a user namespace of its own: a "
					     "rollback keeps its network namespace, which belongs to "
					     "that user namespace, and cannot restore new processes "
					     "into it (not supported yet); `tern clone` the snapshot "
					     "instead",
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
	return 0;
}

bool tern_snap_own_netns(const oci_config *c)
{
	return own_ns(c, OCI_NS_NETWORK);
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
	};
	int ret = tern_snap_restore(r->rt, r->criu, r->id, &copts, &co, images, work,
				    kill_restored, r, false, stats, err);
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

int tern_snapshot_rollback(const tern_runtime *rt, const char *criu, const char *id,
			   const char *name, const tern_rollback_opts *o,
			   tern_snapshot_stats *stats, tern_error **err)
{
	rollback_ctx r = {.rt = rt, .criu = criu, .id = id, .name = name, .s = {.fd = -1},
			  .snapfd = -1, .netns_fd = -1, .stdio = {-1, -1, -1},
			  .console_socket = o->console_socket};
	uint64_t t0 = tern_now_ns(), t_kill = 0;
	bool killed = false;
	int ret;
	/* a restore leaves this process in a mount namespace of its own */
	cleanup_close int host_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

	memset(stats, 0, sizeof(*stats));
	ret = tern_snap_check_name(name, err);
	if (ret == 0)
		ret = tern_container_load(rt, id, &r.dir, &r.st, &r.config, err);
	if (ret == 0)
		ret = rollback_check(&r, err);
	/* the network namespace the snapshot left out: the live one, held
	 * while the processes are replaced */
	/* a warm spare of `name`, once whoever makes it is done: swapped in */
	int warm_lock = -1;
	bool warm = false;
	if (ret == 0) {
		tern_error *e = NULL;
		warm_lock = tern_snap_warm_lock(r.s.path, o->keep_warm, 120000, &e);
		if (warm_lock < 0 && warm_lock != -ENOENT) {
			tern_warn("%s; rolling back without it", e->msg);
			tern_error_free(e);
		}
		warm = warm_lock >= 0 && tern_snap_warm_ready(r.s.path, name);
	}
	if (ret == 0 && warm) {
		t_kill = tern_now_ns();
		ret = tern_snap_warm_swap(rt, r.s.path, id, r.dir, r.st, stats, &killed, err);
		if (ret < 0 && !killed) {
			tern_warn("warm spare of `%s` at `%s` not used: %s", id, name, (*err)->msg);
			tern_error_free(*err);
			*err = NULL;
			tern_snap_warm_discard(rt, r.s.path, id, NULL);
			warm = false;
			ret = 0;
		}
	}
	if (ret == 0 && !warm) {
		cleanup_free char *images = tern_strdup_printf("%s/%s/images", r.s.path, name);
		if (tern_snap_own_netns(r.config) && tern_ckpt_netns_left_out(images)) {
			cleanup_free char *ns = tern_strdup_printf("/proc/%d/ns/net", r.st->pid);
			r.netns_fd = open(ns, O_RDONLY | O_CLOEXEC);
			if (r.netns_fd < 0)
				ret = tern_error_make(err, errno, "the network namespace `%s`", ns);
		}
	}
	if (ret == 0 && !warm) {
		cleanup_free char *images = tern_strdup_printf("%s/%s/images", r.s.path, name);
		take_stdio(images, r.st->pid, r.stdio);
		r.merge_memory = tern_memory_merge_is_marked(r.st->pid);
		t_kill = tern_now_ns();
		ret = tern_snap_kill_all(r.st, id, err);
		killed = true;
		if (ret == 0)
			ret = put_back_fs(&r, stats, err);
		if (ret == 0)
			ret = restore(&r, o, stats, err);
		if (ret == 0)
			keep_state_fields(&r);
	}
	if (ret == 0) {
		cleanup_free char *head = tern_strdup_printf("%s\n", name);
		tern_error *e = NULL;
		if (write_at(r.s.fd, HEAD_FILE, head, &e) < 0) {
			tern_warn("snapshot store of `%s`: %s", id, e->msg);
			tern_error_free(e);
		}
	} else if (killed) {
		/* the old state, whose init is dead: `stopped`, for delete */
		tern_error *e = NULL;
		if (tern_state_write(r.dir, r.st, &e) < 0)
			tern_error_free(e);
		tern_error_wrap(err, "roll back `%s` to `%s` (its processes were killed: it has "
				     "stopped)",
				id, name);
	} else if (ret < 0) {
		tern_error_wrap(err, "roll back `%s` to `%s`", id, name);
	}
	if (t_kill && !stats->warm)
		stats->frozen_ns = tern_now_ns() - t_kill;
	stats->total_ns = tern_now_ns() - t0;
	/* the next spare, or (after a swap) the old processes' end */
	if (ret == 0 && warm_lock >= 0 && (o->keep_warm || stats->warm)) {
		tern_error *e = NULL;
		if (tern_snap_warm_spawn(rt, criu, r.s.path, id, o->keep_warm ? name : NULL,
					 warm_lock, host_mnt, &e) < 0) {
			tern_warn("no warm spare of `%s` at `%s`: %s", id, name, e->msg);
			tern_error_free(e);
			/* the old processes are not to wait, frozen, for the next */
			if (stats->warm)
				tern_snap_warm_reap(r.s.path);
		}
	}
	if (warm_lock >= 0)
		close(warm_lock);
	for (int i = 0; i < 3; i++)
		if (r.stdio[i] >= 0)
			close(r.stdio[i]);
	if (r.netns_fd >= 0)
		close(r.netns_fd);
	if (r.snapfd >= 0)
		close(r.snapfd);
	tern_snap_store_close(&r.s);
	oci_state_free(r.st);
	oci_config_free(r.config);
	tern_state_dir_free(r.dir);
	return ret;
}

/* ---- restore, the memory filled fast ---- */

int tern_snap_restore(const tern_runtime *rt, const char *criu, const char *id,
		      const tern_create_opts *copts, tern_ckpt_opts *co, const char *images,
		      const char *work, void (*kill_it)(void *), void *data,
		      bool fill_behind, tern_snapshot_stats *stats, tern_error **err)
{
	/* criu's flags as the snapshot was taken with them (snapshot.txt,
	 * beside the images) */
	cleanup_free char *snap = tern_strdup_printf("%s/..", images);
	cleanup_close int fd = open(snap, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	tern_snapshot_opts f = {0};
	int exit_status;

	if (fd >= 0)
		tern_snap_meta_read(fd, NULL, &f);
	co->tcp_established = f.tcp_established;
	co->ext_unix_sk = f.ext_unix_sk;
	co->shell_job = f.shell_job;
	co->file_locks = f.file_locks;
	return tern_restore_filled(rt, criu, id, copts, co, images, work, kill_it, data,
				   fill_behind, &exit_status, &stats->criu_ns, &stats->fill_ns, err);
}

/* ---- list, delete ---- */

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
		i.bytes = own_bytes(snapfd);
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

/* The first clone (still a container) whose overlay has this snapshot's
 * tree below it, or NULL; markers of clones gone are removed. */
static char *live_clone(const char *root, int snapfd)
{
	cleanup_close int fd = openat(snapfd, "clones", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char *found = NULL;

	if (d == NULL)
		return NULL;
	fd = -1;
	for (struct dirent *e; found == NULL && (e = readdir(d)) != NULL;) {
		if (tern_state_check_id(e->d_name, NULL) < 0)
			continue;
		cleanup_free char *state = tern_strdup_printf("%s/%s", root, e->d_name);
		if (access(state, F_OK) == 0)
			found = tern_xstrdup(e->d_name);
		else
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	return found;
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
		cleanup_free char *clone = snapfd >= 0 ? live_clone(root, snapfd) : NULL;
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
		cleanup_free char *head = read_head(&s);
		tern_remove_tree(path);
		if (head && strcmp(head, name) == 0)
			unlinkat(s.fd, HEAD_FILE, 0);
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
		cleanup_free char *clone = snapfd >= 0 ? live_clone(root, snapfd) : NULL;
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

int tern_snapshot_container_delete(const tern_runtime *rt, const char *id, bool force,
				   bool keep_snapshots, tern_error **err)
{
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
