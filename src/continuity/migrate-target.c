/* tern migrate-receive: the target side (the session is drawn in
 * migrate.h). It accepts one migration, restores the container detached
 * and exits 0 once it runs here (post-copy: once every page has arrived).
 *
 * Everything from the network is checked before it is used: the id, the
 * image names and sizes against the free space, the image set's
 * completeness, the page server's address. On any failure before RUNNING
 * it says ERROR and leaves nothing: no container, no state directory, no
 * cgroup, no image directory, no criu daemon. The images wait in a private
 * directory in the bundle (BUNDLE/.tern-migrate-XXXXXX, 0700) that holds a
 * lock file while in use.
 *
 * The rootfs rounds change the bundle's rootfs before anything is sure:
 * they keep what they replace or delete, and an undo log, in the work
 * directory (tern_rootfs_applier_set_undo), and a failure puts the rootfs
 * back. A receiver that was killed cannot: a watchdog child does its roll
 * back (see watchdog()), and should that be killed too, the next receiver
 * into the same bundle undoes and removes every work directory whose lock
 * is free. */
#include "checkpoint.h"
#include "criu-kdat.h"
#include "criu-lazy-daemon.h"
#include "tcp-sockets.h"
#include "log.h"
#include "migrate.h"
#include "oci-config.h"
#include "rootfs-sync.h"
#include "state.h"
#include "utils.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORK_PREFIX ".tern-migrate-"
#define WORK_LOCK   "lock"
/* in the work directory: the undo log of the rootfs rounds, the rootfs it
 * applies to, and a mark saying that config.json is the receiver's */
#define WORK_UNDO	  "undo"
#define WORK_ROOTFS	  "rootfs"
#define WORK_WROTE_CONFIG "wrote-config"
/* the state directory of the container it restores */
#define WORK_CONTAINER "container"
/* what a lazy dump's images need at most besides memory, roughly */
#define LAZY_IMAGE_ALLOWANCE (64ULL << 20)

typedef struct {
	const tern_mig_env *env;
	const tern_receive_opts *o;
	tern_mig_progress p;
	char *criu;
	tern_mchan *c;
	char *bundle;
	char *rootfs;
	char *id;
	char *src_id;
	bool wrote_config;
	char *work;
	int work_lock;
	char *images;
	tern_mig_mode mode;
	bool tcp_established;
	tern_criu_features features; /* checked before listening */
	uint64_t memory_bytes;
	char *cert; /* ours (post-copy) */
	/* post-copy: fed by the source's page server; the other modes,
	 * where this kernel has userfaultfd: fed by the images received */
	tern_lazy_daemon lazy;
	bool fill_from_images;
	bool restored;
	uint64_t t_restored; /* when the restore returned: the container runs */
	pid_t receiver_pid;
	bool keep_work; /* its undo failed: the next receiver tries again */
	pid_t watch_pid;
	int watch_fd; /* write end: see watchdog() */
	int pre_rounds;
	uint64_t image_bytes;
	/* post-copy: the pages the dump left for us to fetch */
	bool lazy_known;
	uint64_t lazy_pages;
	char *page_ip; /* post-copy: the source's page server */
	int page_port;
} target;

/* ---- leftovers of receivers that were killed ---- */

/* Put back what the work directory `work` says was changed in `bundle`:
 * the rootfs rounds (from the undo log), a config.json it wrote. */
static int undo_bundle(const char *bundle, const char *work, tern_error **err)
{
	cleanup_free char *rootfs_file = tern_strdup_printf("%s/" WORK_ROOTFS, work);
	cleanup_free char *undo = tern_strdup_printf("%s/" WORK_UNDO, work);
	cleanup_free char *mark = tern_strdup_printf("%s/" WORK_WROTE_CONFIG, work);
	cleanup_free char *rootfs = NULL;
	cleanup_close int rootfd = -1, undofd = -1;
	size_t len, bl = strlen(bundle);
	int ret = 0;

	if (access(mark, F_OK) == 0) {
		cleanup_free char *config = tern_strdup_printf("%s/config.json", bundle);
		unlink(config);
	}
	undofd = open(undo, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (undofd < 0)
		return errno == ENOENT ? 0 : tern_error_make(err, errno, "`%s`", undo);
	ret = tern_read_file(rootfs_file, &rootfs, &len, 4096, err);
	if (ret < 0)
		return ret;
	/* (written by a receiver; a rootfs is inside its bundle) */
	if (len <= bl || memchr(rootfs, '\0', len) || strncmp(rootfs, bundle, bl) != 0 ||
	    rootfs[bl] != '/' || strstr(rootfs, "/..") != NULL)
		return tern_error_make_quiet(err, EINVAL, "`%s`: not a rootfs in `%s`", rootfs_file,
					     bundle);
	rootfd = open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", rootfs);
	ret = tern_rootfs_undo(rootfd, undofd, err);
	return ret < 0 ? tern_error_wrap(err, "putting back the rootfs `%s`", rootfs) : 0;
}

static void sweep(const char *bundle)
{
	DIR *d = opendir(bundle);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, WORK_PREFIX, strlen(WORK_PREFIX)) != 0)
			continue;
		cleanup_free char *dir = tern_strdup_printf("%s/%s", bundle, e->d_name);
		cleanup_free char *lock = tern_strdup_printf("%s/%s", dir, WORK_LOCK);
		cleanup_close int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		/* held: another receiver's, in use */
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		tern_info("removing `%s`, left by a receiver that did not finish", dir);
		tern_error *e = NULL;
		cleanup_free char *cfile = tern_strdup_printf("%s/" WORK_CONTAINER, dir);
		cleanup_free char *state = NULL;
		size_t slen;
		/* killed between its commit and removing this: the rootfs is
		 * the container's */
		if (tern_read_file(cfile, &state, &slen, 4096, NULL) == 0 &&
		    memchr(state, '\0', slen) == NULL && access(state, F_OK) == 0) {
			tern_remove_tree(dir);
			continue;
		}
		if (undo_bundle(bundle, dir, &e) < 0) {
			/* its undo log is what is left of the rootfs as it was */
			tern_log(TERN_LOG_ERROR, "%s; `%s` is kept", e->msg, dir);
			tern_error_free(e);
			continue;
		}
		tern_remove_tree(dir);
	}
	closedir(d);
}

static int make_work(target *t, tern_error **err)
{
	cleanup_free char *tmpl = tern_strdup_printf("%s/" WORK_PREFIX "XXXXXX", t->bundle);
	cleanup_free char *lock = NULL;

	if (mkdtemp(tmpl) == NULL)
		return tern_error_make(err, errno, "image directory `%s`", tmpl);
	t->work = steal_pointer(&tmpl);
	lock = tern_strdup_printf("%s/%s", t->work, WORK_LOCK);
	t->work_lock = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (t->work_lock < 0 || flock(t->work_lock, LOCK_EX) < 0)
		return tern_error_make(err, errno, "lock `%s`", lock);
	t->images = tern_strdup_printf("%s/images", t->work);
	if (mkdir(t->images, 0700) < 0)
		return tern_error_make(err, errno, "image directory `%s`", t->images);
	if (t->wrote_config) {
		cleanup_free char *mark = tern_strdup_printf("%s/" WORK_WROTE_CONFIG, t->work);
		if (tern_write_file(mark, "", 0, 0600, err) < 0)
			return tern_error_wrap(err, "work directory");
	}
	cleanup_free char *cfile = tern_strdup_printf("%s/" WORK_CONTAINER, t->work);
	cleanup_free char *state = tern_strdup_printf("%s/%s", t->env->rt->root, t->id);
	if (tern_write_file(cfile, state, strlen(state), 0600, err) < 0)
		return tern_error_wrap(err, "work directory");
	return 0;
}

/* ---- the dead man's switch ----
 *
 * If the receiver dies (SIGKILL, the OOM killer), nobody would remove what
 * it made, and a container it restored would run on while the source,
 * which never heard RUNNING, thaws its own: two would run. A child started
 * with the work directory, in a session of its own, holding the work
 * directory's lock (the same open file), reads a pipe: 'P' and a pid: a
 * process group to kill (the restore with its criu, the lazy-pages daemon
 * with any child it forked); 'C': the source was told
 * RUNNING, the container is this node's now; 'R': the receiver dealt with
 * it. At end of file without 'C' or 'R' it does what the roll back would:
 * kill the restore, delete the container, put the bundle back, remove the
 * work directory. */
static void watchdog(target *t, int fd)
{
	pid_t groups[TERN_MIG_WATCH_GROUPS];
	size_t ngroups;
	tern_error *e = NULL;
	int keep[] = {fd, t->work_lock, tern_log_fd()};

	tern_close_fds_from(3, keep, 3);
	setsid();
	bool handled = tern_mig_watchdog_read(fd, groups, &ngroups);
	if (handled)
		_exit(0);
	tern_mig_groups_gone(groups, ngroups, true, 10000);
	cleanup_free char *state = tern_strdup_printf("%s/%s", t->env->rt->root, t->id);
	if (access(state, F_OK) == 0 && tern_container_delete(t->env->rt, t->id, true, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "delete `%s` after the receiver died: %s", t->id, e->msg);
		_exit(1);
	}
	if (undo_bundle(t->bundle, t->work, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "after the receiver died: %s; `%s` is kept", e->msg,
			 t->work);
		_exit(1);
	}
	tern_remove_tree(t->work);
	tern_log(TERN_LOG_WARNING,
		 "migrate-receive of `%s` died before the source was told RUNNING: "
		 "rolled back",
		 t->id);
	_exit(0);
}

static void watchdog_main(void *arg, int fd)
{
	watchdog(arg, fd);
}

static int start_watchdog(target *t, tern_error **err)
{
	return tern_mig_watchdog_start(watchdog_main, t, &t->watch_pid, &t->watch_fd, err);
}

/* Tell the watchdog that it has nothing to do ('C' or 'R'), and reap it. */
static void stop_watchdog(target *t, char what)
{
	tern_mig_watchdog_stop(&t->watch_pid, &t->watch_fd, what);
}

/* ---- the offer ---- */

/* The source's config is only a convenience for a bundle that has none:
 * a token holder must not be able to run commands on this node or reach
 * its files through it. So it may not bring hooks (they run here, as
 * root), bind mounts of host paths outside the bundle, or namespaces
 * joined by path; a config.json that the node's operator put in the bundle
 * may. */
static bool mount_is_bind(const oci_mount *m)
{
	if (m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0))
		return true;
	for (char **o = m->options; o && *o; o++)
		if (strcmp(*o, "bind") == 0 || strcmp(*o, "rbind") == 0)
			return true;
	return false;
}

static int check_offered_config(const target *t, const oci_config *c, tern_error **err)
{
	static const char hint[] = "the source's config may not bring it here; put a config.json "
				   "in the bundle to accept it";
	const oci_hooks *h = c->hooks;
	size_t bl = strlen(t->bundle);

	if (h && (h->prestart.len || h->create_runtime.len || h->create_container.len ||
		  h->start_container.len || h->poststart.len || h->poststop.len))
		return tern_error_make_quiet(err, EPERM, "OFFER: config.json: hooks: %s", hint);
	for (size_t i = 0; i < c->mounts_len; i++) {
		const oci_mount *m = &c->mounts[i];
		const char *src = m->source;
		if (!mount_is_bind(m) || src == NULL || src[0] != '/')
			continue;
		if (strncmp(src, t->bundle, bl) == 0 && (src[bl] == '/' || src[bl] == '\0') &&
		    strstr(src + bl, "/..") == NULL)
			continue;
		return tern_error_make_quiet(
		    err, EPERM, "OFFER: config.json: mounts[%zu]: bind of the host's `%s`: %s", i,
		    src, hint);
	}
	for (size_t i = 0; c->linux_ && i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].path)
			return tern_error_make_quiet(
			    err, EPERM, "OFFER: config.json: linux.namespaces[%zu]: path `%s`: %s",
			    i, c->linux_->namespaces[i].path, hint);
	return 0;
}

/* t->rootfs: root.path, which must be inside the bundle. */
static int locate_rootfs(target *t, const char *path, const oci_config *config, tern_error **err)
{
	const char *root = config->root && config->root->path ? config->root->path : "rootfs";
	cleanup_free char *joined = NULL;

	if (root[0] == '/' || strstr(root, ".."))
		return tern_error_make_quiet(
		    err, EINVAL,
		    "%s: root.path `%s`: the rootfs must be inside the bundle "
		    "(relative, no `..`)",
		    path, root);
	joined = tern_strdup_printf("%s/%s", t->bundle, root);
	t->rootfs = realpath(joined, NULL);
	if (t->rootfs == NULL)
		return tern_error_make(err, errno, "root.path: rootfs `%s`", joined);
	return 0;
}

static int use_config(target *t, const char *src_config, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/config.json", t->bundle);
	oci_config *config = NULL;
	char *msg = NULL;
	int ret;

	if (access(path, F_OK) < 0) {
		/* the source's config (its bind sources may not exist here:
		 * restore says which) */
		ret = tern_write_file(path, src_config, strlen(src_config), 0644, err);
		if (ret < 0)
			return tern_error_wrap(err, "--bundle");
		t->wrote_config = true;
	}
	ret = oci_config_parse_file(path, &config, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "config.json: invalid");
		free(msg);
		return ret;
	}
	/* (a refused config.json is removed with the rest at the end) */
	if (t->wrote_config)
		ret = check_offered_config(t, config, err);
	if (ret == 0)
		ret = locate_rootfs(t, path, config, err);
	oci_config_free(config);
	return ret;
}

static int choose_mode(target *t, const char *asked, bool src_post, bool src_pre, tern_error **err)
{
	tern_mig_mode want;
	const tern_criu_features f = t->features;

	if (asked == NULL || tern_mig_mode_parse(asked, &want) < 0)
		return tern_error_make_quiet(err, EPROTO, "OFFER: unknown mode `%s`",
					     asked ? asked : "");
	switch (want) {
	case TERN_MIG_PRE_COPY:
		/* the source tracks the dirty pages; restoring them needs
		 * nothing of this kernel */
		if (!src_pre)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "--mode pre-copy: the source cannot track dirty "
			    "pages");
		t->mode = TERN_MIG_PRE_COPY;
		return 0;
	case TERN_MIG_POST_COPY:
		if (!f.lazy_pages)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "--mode post-copy: criu on the target says this kernel cannot restore "
			    "memory lazily (no usable userfaultfd)");
		if (!src_post)
			return tern_error_make_quiet(err, ENOTSUP,
						     "--mode post-copy: the source cannot serve "
						     "memory lazily");
		t->mode = TERN_MIG_POST_COPY;
		return 0;
	case TERN_MIG_AUTO:
		if (src_pre)
			t->mode = TERN_MIG_PRE_COPY;
		else if (f.lazy_pages && src_post)
			t->mode = TERN_MIG_POST_COPY;
		else
			t->mode = TERN_MIG_STOP_AND_COPY;
		return 0;
	case TERN_MIG_STOP_AND_COPY:
		t->mode = TERN_MIG_STOP_AND_COPY;
		return 0;
	}
	return -EINVAL;
}

static int check_id(target *t, tern_error **err)
{
	cleanup_free char *dir = NULL;
	int ret = tern_state_check_id(t->id, err);

	if (ret < 0)
		return tern_error_wrap(err, "the container id");
	dir = tern_strdup_printf("%s/%s", t->env->rt->root, t->id);
	if (access(dir, F_OK) == 0)
		return tern_error_make_quiet(err, EEXIST,
					     "container `%s` already exists under --root `%s`",
					     t->id, t->env->rt->root);
	return 0;
}

static int check_space(target *t, tern_error **err)
{
	uint64_t have, need;
	int ret = tern_mig_free_bytes(t->bundle, &have, err);

	if (ret < 0)
		return ret;
	need = t->mode == TERN_MIG_POST_COPY ? LAZY_IMAGE_ALLOWANCE
					     : t->memory_bytes + LAZY_IMAGE_ALLOWANCE;
	if (need > have)
		return tern_error_make_quiet(
		    err, ENOSPC, "no space on %s: need %llu MiB, have %llu MiB", t->bundle,
		    (unsigned long long)(need >> 20), (unsigned long long)(have >> 20));
	return 0;
}

static int handle_offer(target *t, tern_error **err)
{
	cleanup_free char *payload = NULL;
	size_t len;
	yajl_val v = NULL;
	int ret = tern_mchan_recv(t->c, TERN_MSG_OFFER, NULL, &payload, &len,
				  TERN_MIG_STEP_TIMEOUT_MS, err);

	if (ret < 0)
		return ret;
	ret = tern_mig_json_parse(payload, "OFFER", &v, err);
	if (ret < 0)
		return ret;
	const char *id = tern_mig_json_str(v, "id");
	const char *config = tern_mig_json_str(v, "config");
	if (id == NULL || config == NULL) {
		ret = tern_error_make_quiet(err, EPROTO, "OFFER: want an \"id\" and a \"config\"");
		goto out;
	}
	t->src_id = tern_xstrdup(id);
	t->id = tern_xstrdup(t->o->new_id ? t->o->new_id : id);
	t->tcp_established = tern_mig_json_bool(v, "tcp_established");
	tern_mig_json_u64(v, "memory_bytes", &t->memory_bytes);
	ret = check_id(t, err);
	if (ret == 0)
		ret =
		    choose_mode(t, tern_mig_json_str(v, "mode"), tern_mig_json_bool(v, "post_copy"),
				tern_mig_json_bool(v, "pre_copy"), err);
	if (ret == 0)
		ret = check_space(t, err);
	if (ret == 0)
		ret = use_config(t, config, err);
out:
	yajl_tree_free(v);
	return ret;
}

static int accept_offer(target *t, tern_error **err)
{
	cleanup_free char *msg = NULL;
	tern_jw w;
	int ret;

	if (t->mode == TERN_MIG_POST_COPY) {
		cleanup_free char *tls = tern_strdup_printf("%s/tls", t->work);
		if (mkdir(tls, 0700) < 0)
			return tern_error_make(err, errno, "`%s`", tls);
		ret = tern_mchan_ephemeral_cert(tls, tern_mchan_local_ip(t->c), &t->cert, err);
		if (ret < 0)
			return tern_error_wrap(err, "criu TLS certificate");
	}
	tern_jw_begin(&w);
	tern_jw_str(&w, "id", t->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(t->mode));
	if (t->cert)
		tern_jw_str(&w, "cert", t->cert);
	msg = tern_jw_end(&w);
	ret = tern_mchan_send(t->c, TERN_MSG_ACCEPT, msg, strlen(msg), err);
	if (ret < 0)
		return ret;
	tern_jw_begin(&w);
	tern_jw_str(&w, "id", t->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(t->mode));
	tern_mig_event(&t->p, "accepted", &w, "accepted `%s` as `%s`, mode %s", t->src_id, t->id,
		       tern_mig_mode_name(t->mode));
	return 0;
}

/* ---- rootfs, and pre-copy's memory rounds in between ---- */

/* The memory rounds sent while the container runs (pre-N directories),
 * between the two rootfs rounds. */
static int receive_precopy(target *t, tern_error **err)
{
	cleanup_close int dirfd = open(t->images, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	uint64_t space, bytes = 0;
	int ret;

	if (dirfd < 0)
		return tern_error_make(err, errno, "`%s`", t->images);
	ret = tern_mig_free_bytes(t->images, &space, err);
	if (ret == 0)
		ret = tern_mig_images_recv(t->c, dirfd, t->images, space, &bytes, &t->pre_rounds,
					   false, err);
	if (ret < 0)
		return tern_error_wrap(err, "receiving the pre-copy rounds");
	t->image_bytes += bytes;
	uint64_t pages_bytes = 0;
	for (int r = 1; r <= t->pre_rounds; r++) {
		cleanup_free char *dir = tern_strdup_printf("%s/pre-%d", t->images, r);
		pages_bytes += tern_mig_pages_bytes(dir);
	}
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "memory");
	tern_jw_u64(&w, "rounds", (uint64_t)t->pre_rounds);
	tern_jw_u64(&w, "pages", pages_bytes / tern_mig_page_size());
	tern_jw_u64(&w, "pages_bytes", pages_bytes);
	tern_jw_u64(&w, "bytes", bytes);
	tern_mig_event(&t->p, "phase", &w,
		       "memory rounds received: %d, %llu pages, %llu bytes of pages, %llu bytes",
		       t->pre_rounds, (unsigned long long)(pages_bytes / tern_mig_page_size()),
		       (unsigned long long)pages_bytes, (unsigned long long)bytes);
	return 0;
}

/* What the rounds replace or delete goes into the work directory, which
 * must be on the rootfs's file system (a rename); a rootfs mounted from
 * elsewhere is synced without an undo, as the warning says. */
static int keep_undo(target *t, tern_rootfs_applier *a, tern_error **err)
{
	cleanup_free char *undo = tern_strdup_printf("%s/" WORK_UNDO, t->work);
	cleanup_free char *rootfs_file = tern_strdup_printf("%s/" WORK_ROOTFS, t->work);
	cleanup_close int undofd = -1;
	int ret;

	ret = tern_write_file(rootfs_file, t->rootfs, strlen(t->rootfs), 0600, err);
	if (ret < 0)
		return ret;
	if (mkdir(undo, 0700) < 0)
		return tern_error_make(err, errno, "`%s`", undo);
	undofd = open(undo, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (undofd < 0)
		return tern_error_make(err, errno, "`%s`", undo);
	ret = tern_rootfs_applier_set_undo(a, undofd, err);
	if (ret == -EXDEV) {
		tern_error_free(*err);
		*err = NULL;
		tern_warn("the rootfs `%s` is not on the file system of the bundle `%s`: a failed "
			  "migration cannot put back what its rootfs rounds changed",
			  t->rootfs, t->bundle);
		return 0;
	}
	return ret;
}

static int rootfs_rounds(target *t, tern_error **err)
{
	cleanup_close int rootfd = open(t->rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	cleanup_free char *manifest = NULL;
	tern_rootfs_applier *a = NULL;
	size_t mlen;
	int ret, round = 1;

	if (rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", t->rootfs);
	ret = tern_rootfs_manifest(rootfd, &manifest, &mlen, err);
	if (ret < 0)
		return tern_error_wrap(err, "rootfs `%s`", t->rootfs);
	ret = tern_mchan_send(t->c, TERN_MSG_ROOTFS_MANIFEST, manifest, mlen, err);
	if (ret < 0)
		return ret;
	ret = tern_rootfs_applier_new(rootfd, &a, err);
	if (ret == 0)
		ret = keep_undo(t, a, err);
	if (ret < 0) {
		tern_rootfs_applier_free(a);
		return tern_error_wrap(err, "rootfs `%s`", t->rootfs);
	}
	/* two rounds: while the container runs, then frozen */
	while (ret == 0 && round <= 2) {
		cleanup_free char *data = NULL;
		uint32_t type;
		size_t len;
		ret = tern_mchan_recv(t->c, 0, &type, &data, &len, TERN_MIG_STEP_TIMEOUT_MS, err);
		if (ret < 0)
			break;
		if (type == TERN_MSG_ROOTFS_DATA) {
			ret = tern_rootfs_applier_feed(a, data, len, err);
		} else if (type == TERN_MSG_ROOTFS_DONE) {
			ret = tern_rootfs_applier_finish_round(a, err);
			if (ret == 0) {
				tern_jw w;
				tern_jw_begin(&w);
				tern_jw_str(&w, "phase", "rootfs");
				tern_jw_u64(&w, "round", (uint64_t)round);
				tern_mig_event(&t->p, "phase", &w, "rootfs round %d applied",
					       round);
			}
			if (ret == 0 && round == 1 && t->mode == TERN_MIG_PRE_COPY)
				ret = receive_precopy(t, err);
			round++;
		} else {
			ret = tern_error_make_quiet(err, EPROTO,
						    "protocol: message type %u during the rootfs "
						    "rounds",
						    type);
		}
	}
	tern_rootfs_applier_free(a);
	return ret < 0 ? tern_error_wrap(err, "rootfs `%s`", t->rootfs) : 0;
}

/* ---- images ---- */

static int receive_images(target *t, tern_error **err)
{
	static const char *const needed[] = {"inventory.img", TERN_CKPT_DESCRIPTOR,
					     TERN_CKPT_CONFIG};
	cleanup_close int dirfd = open(t->images, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	uint64_t space, before = t->image_bytes;
	int ret;

	if (dirfd < 0)
		return tern_error_make(err, errno, "`%s`", t->images);
	ret = tern_mig_free_bytes(t->images, &space, err);
	if (ret < 0)
		return ret;
	ret = tern_mig_images_recv(t->c, dirfd, t->images, space, &t->image_bytes, &t->pre_rounds,
				   true, err);
	if (ret < 0)
		return tern_error_wrap(err, "receiving the images");
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (faccessat(dirfd, needed[i], F_OK, 0) < 0)
			return tern_error_make_quiet(
			    err, EPROTO,
			    "the image set is incomplete: no `%s`; nothing "
			    "restored",
			    needed[i]);
	/* the frozen dump's pages (pre-copy: its rounds' are in pre-N) */
	uint64_t pages_bytes = tern_mig_pages_bytes(t->images);
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "images");
	tern_jw_u64(&w, "pages", pages_bytes / tern_mig_page_size());
	tern_jw_u64(&w, "pages_bytes", pages_bytes);
	/* this batch, as the source's event (pre-copy's rounds had theirs) */
	tern_jw_u64(&w, "bytes", t->image_bytes - before);
	tern_mig_event(&t->p, "phase", &w,
		       "images received: %llu bytes (%llu pages, %llu bytes of pages)",
		       (unsigned long long)(t->image_bytes - before),
		       (unsigned long long)(pages_bytes / tern_mig_page_size()),
		       (unsigned long long)pages_bytes);
	return 0;
}

/* ---- post-copy: criu lazy-pages ---- */

static int start_lazy_daemon(target *t, tern_error **err)
{
	cleanup_free char *payload = NULL;
	cleanup_free char *addr = NULL, *port_s = NULL, *peer = NULL;
	unsigned char buf[sizeof(struct in6_addr)];
	uint64_t port = 0;
	size_t len;
	yajl_val v = NULL;
	int ret = tern_mchan_recv(t->c, TERN_MSG_PAGE_SERVER, NULL, &payload, &len,
				  TERN_MIG_STEP_TIMEOUT_MS, err);

	if (ret < 0)
		return ret;
	ret = tern_mig_json_parse(payload, "PAGE_SERVER", &v, err);
	if (ret < 0)
		return ret;
	const char *a = tern_mig_json_str(v, "address");
	const char *cert = tern_mig_json_str(v, "cert");
	if (a)
		addr = tern_xstrdup(a);
	peer = tern_strdup_printf("%s/tls/peer.pem", t->work);
	if (cert)
		ret = tern_write_file(peer, cert, strlen(cert), 0600, err);
	bool port_ok = tern_mig_json_u64(v, "port", &port) && port > 0 && port < 65536;
	yajl_tree_free(v);
	if (ret < 0)
		return ret;
	/* an address, never an option or a name to resolve */
	if (addr == NULL || cert == NULL || !port_ok ||
	    (inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1))
		return tern_error_make_quiet(err, EPROTO,
					     "PAGE_SERVER: want an IP \"address\", a \"port\" and "
					     "a \"cert\"");
	port_s = tern_strdup_printf("%llu", (unsigned long long)port);
	t->page_ip = tern_xstrdup(addr);
	t->page_port = (int)port;
	cleanup_free char *cacert = tern_xstrdup(peer);
	cleanup_free char *mycert = tern_strdup_printf("%s/tls/cert.pem", t->work);
	cleanup_free char *mykey = tern_strdup_printf("%s/tls/key.pem", t->work);
	/* the source's page server, TLS with each side's pinned certificate */
	char *extra[] = {
	    "--page-server",	  "--address", addr,	     "--port", port_s,	    "--tls",
	    "--tls-cacert",	  cacert,      "--tls-cert", mycert,   "--tls-key", mykey,
	    "--tls-no-cn-verify", NULL,
	};
	ret = tern_lazy_daemon_start(t->criu, t->images, extra, &t->lazy, err);
	if (ret < 0)
		return ret;
	tern_mig_watchdog_group(t->watch_fd, t->lazy.pid);
	return 0;
}

/* The daemon ends once every page is here; non-zero when it failed.
 * Meanwhile: what its connection to the page server has received. */
static int wait_lazy_daemon(target *t, tern_mig_fetch *f, tern_error **err)
{
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, t->lazy.pid, 0);
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	tern_error *e = NULL;

	/* (counted here, not in the downtime) */
	t->lazy_known = tern_mig_lazy_pages(t->images, &t->lazy_pages, &e) == 0;
	if (!t->lazy_known)
		tern_warn("post-copy: the pages to fetch are unknown: %s", e->msg);
	tern_error_free(e);
	tern_mig_fetch_init(f, t->page_ip, t->page_port, false,
			    t->lazy_pages * tern_mig_page_size());
	/* (without a pidfd, no progress: just wait) */
	tern_mig_fetch_sample(f, &t->p);
	bool uncorked = tern_criu_uncork(t->lazy.pid, t->page_port) > 0;
	uint64_t end = tern_mig_now_ns() + (uint64_t)t->o->criu_timeout_ms * 1000000ULL;
	while (pidfd >= 0 && tern_mig_now_ns() < end) {
		int r = poll(&pfd, 1, TERN_MIG_PROGRESS_MS);
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		if (r == 0)
			tern_mig_fetch_sample(f, &t->p);
		if (r == 0 && !uncorked)
			uncorked = tern_criu_uncork(t->lazy.pid, t->page_port) > 0;
	}
	/* (whatever is left of the bound: none past it, which kills it) */
	uint64_t now = tern_mig_now_ns();
	return tern_lazy_daemon_wait_for(&t->lazy, now >= end ? 0 : (int)((end - now) / 1000000ULL),
					 err);
}

/* ---- the other modes: memory filled from the images received ----
 *
 * Every page is here once the images are, yet criu's plain restore reads
 * them into the new mappings one page fault per page; criu lazy-pages
 * without a page server maps them from the images with UFFDIO_COPY, no
 * fault (see criu-lazy-daemon.h). The container runs as soon as criu's
 * restore returns, and the daemon fills the rest behind it. RUNNING waits
 * for the daemon: the source keeps its frozen copy until every page is in,
 * and thaws it should the daemon fail, as in post-copy. */

static int start_fill_from_images(target *t, tern_error **err)
{
	int ret = tern_lazy_daemon_start(t->criu, t->images, NULL, &t->lazy, err);

	if (ret < 0)
		return tern_error_wrap(err, "filling memory from the images");
	tern_mig_watchdog_group(t->watch_fd, t->lazy.pid);
	return 0;
}

static int wait_fill_from_images(target *t, tern_error **err)
{
	/* the page images it reads: the last dump's and pre-copy's rounds' */
	uint64_t bytes = tern_mig_pages_bytes(t->images);
	for (int r = 1; r <= t->pre_rounds; r++) {
		cleanup_free char *dir = tern_strdup_printf("%s/pre-%d", t->images, r);
		bytes += tern_mig_pages_bytes(dir);
	}
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "restored");
	tern_jw_str(&w, "id", t->id);
	tern_mig_event(&t->p, "phase", &w, "`%s` restored here; its memory fills from the images",
		       t->id);
	int ret = tern_lazy_daemon_wait_for(&t->lazy, t->o->criu_timeout_ms, err);

	if (ret < 0)
		return tern_error_wrap(err, "filling the memory of `%s` from the images", t->id);
	uint64_t ms = (tern_mig_now_ns() - t->t_restored) / 1000000;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "memory filled");
	tern_jw_u64(&w, "pages_bytes", bytes);
	tern_jw_u64(&w, "after_restore_ms", ms);
	tern_mig_event(&t->p, "phase", &w,
		       "memory filled from the images (%llu bytes of page images), %llu ms after "
		       "the restore returned",
		       (unsigned long long)bytes, (unsigned long long)ms);
	return 0;
}

/* ---- restore ---- */

static int restore_child(void *arg, tern_error **err)
{
	target *t = arg;
	tern_create_opts copts = {.bundle = t->bundle, .detach = true};
	tern_ckpt_opts ck = {.image_path = t->images,
			     .tcp_established = t->tcp_established,
			     .lazy_pages = t->lazy.pid > 0,
			     .criu_checked = true,
			     .lazy_ready_wait = t->lazy.ready_fd >= 0,
			     .lazy_ready_fd = t->lazy.ready_fd,
			     .status_fd = -1};
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int status;

	signal(SIGPIPE, SIG_DFL);
	/* a group of its own, with criu: killed together if it hangs; and
	 * never a restore that goes on when the receiver was killed */
	setpgid(0, 0);
	if (!tern_die_with_parent(t->receiver_pid))
		return tern_error_make_quiet(err, ECANCELED, "the receiver is gone");
	/* the container's stdio, which was the source's: /dev/null here */
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	return tern_container_restore(t->env->rt, t->criu, t->id, &copts, &ck, &status, err);
}

static int restore(target *t, tern_error **err)
{
	pid_t pid;
	int errfd;
	int keep[] = {t->work_lock, t->watch_fd};
	int ret;

	t->receiver_pid = getpid();
	ret = tern_mig_child_start(restore_child, t, keep, 2, &pid, &errfd, err);

	if (ret < 0)
		return ret;
	/* the child makes itself the leader of a group; so does this side,
	 * before the watchdog may look for it */
	setpgid(pid, pid);
	tern_mig_watchdog_group(t->watch_fd, pid);
	/* criu can hang when a lazy restore fails half way, or in a hook */
	cleanup_free char *what = tern_strdup_printf("criu restore of `%s`", t->id);
	ret = tern_mig_child_wait_or_kill(pid, errfd, t->o->criu_timeout_ms, t->o->criu_timeout_ms,
					  what, err);
	if (ret == -ETIMEDOUT) {
		/* killed half way: nothing cleaned up after it; what it made
		 * goes as the watchdog's would */
		cleanup_free char *state = tern_strdup_printf("%s/%s", t->env->rt->root, t->id);
		tern_error *e = NULL;
		if (access(state, F_OK) == 0 &&
		    tern_container_delete(t->env->rt, t->id, true, &e) < 0) {
			tern_log(TERN_LOG_ERROR, "delete `%s` after its killed restore: %s", t->id,
				 e->msg);
			tern_error_free(e);
		}
	}
	/* (its daemon then failed too, for want of the restore) */
	if (ret < 0 && ret != -ETIMEDOUT && t->fill_from_images) {
		/* criu then says no more than that its socket broke */
		tern_error *e = NULL;
		if (tern_lazy_daemon_poll(&t->lazy, &e) < 0)
			tern_error_wrap(err, "filling the memory from the images: %s", e->msg);
		tern_error_free(e);
	}
	if (ret < 0)
		return ret;
	t->restored = true;
	t->t_restored = tern_mig_now_ns();
	return 0;
}

/* The commit point: from here a receiver that dies leaves the container
 * running here, since the source reads the RUNNING that went before the
 * connection's end and deletes its copy. (Only a network that drops right
 * then, before the source read it, leaves the source to thaw its copy as
 * well: the window is one message.) Post-copy: once every page is here; a
 * copy without them must not run, and the source keeps its copy frozen.
 * The work directory goes now, its undo log with it: the rootfs is the
 * container's. */
static void commit(target *t)
{
	stop_watchdog(t, 'C');
	if (t->env->debug) {
		/* the images and logs stay for --debug, never the undo log:
		 * the rootfs is the container's now */
		cleanup_free char *undo = tern_strdup_printf("%s/%s", t->work, WORK_UNDO);
		tern_remove_tree(undo);
		return;
	}
	tern_remove_tree(t->work);
}

static int send_running(target *t, tern_error **err)
{
	tern_error *e = NULL;
	tern_jw w;

	/* how long it ran here already (the fill from the images): the
	 * source ends the downtime that much before RUNNING */
	tern_jw_begin(&w);
	tern_jw_u64(&w, "ran_for_ms", (tern_mig_now_ns() - t->t_restored) / 1000000);
	cleanup_free char *msg = tern_jw_end(&w);
	int ret = tern_mchan_send(t->c, TERN_MSG_RUNNING, msg, strlen(msg), err);

	if (ret < 0) {
		/* the source did not hear it and thaws its copy: ours goes,
		 * never two running */
		if (tern_container_delete(t->env->rt, t->id, true, &e) < 0) {
			tern_log(TERN_LOG_ERROR, "delete `%s`: %s", t->id, e->msg);
			tern_error_free(e);
		}
		t->restored = false;
		return tern_error_wrap(err, "telling the source that `%s` runs", t->id);
	}
	if (t->mode != TERN_MIG_POST_COPY)
		commit(t);
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "running");
	tern_jw_str(&w, "id", t->id);
	tern_mig_event(&t->p, "phase", &w, "`%s` runs here", t->id);
	return 0;
}

/* ---- the whole ---- */

/* Anyone may connect to the port: each refused peer is said, on stderr
 * and in the log (and as an event with --format json), and the wait goes
 * on for the source. */
static void refused_peer(void *arg, const char *peer, const tern_error *why)
{
	target *t = arg;
	const char *reason = why && why->msg ? why->msg : "unknown error";

	tern_warn("migrate-receive: refused the connection from %s: %s", peer, reason);
	if (t->p.json) {
		tern_jw w;
		tern_jw_begin(&w);
		tern_jw_str(&w, "peer", peer);
		tern_jw_str(&w, "reason", reason);
		tern_mig_event(&t->p, "refused", &w, "refused %s", peer);
	}
}

static int run(target *t, tern_error **err)
{
	unsigned char *token = NULL;
	cleanup_close int lfd = -1;
	size_t token_len;
	int port, ret;

	ret = tern_mchan_token_read(t->o->token_file, &token, &token_len, err);
	if (ret < 0)
		return ret;
	ret = tern_criu_find(t->env->criu, &t->criu, err);
	if (ret == 0)
		tern_criu_kdat_prepare(t->criu);
	/* criu's version and what this kernel lets it do, before listening:
	 * a broken criu fails here, and the source does not wait for it */
	if (ret == 0)
		ret = tern_criu_features_check(t->criu, &t->features, err);
	if (ret == 0) {
		t->bundle = realpath(t->o->bundle, NULL);
		if (t->bundle == NULL)
			ret = tern_error_make(err, errno, "--bundle `%s`", t->o->bundle);
	}
	if (ret == 0 && t->o->new_id && tern_state_check_id(t->o->new_id, err) < 0)
		ret = tern_error_wrap(err, "--id");
	if (ret == 0) {
		sweep(t->bundle);
		lfd = tern_mchan_listen(t->o->listen, &port, err);
		if (lfd < 0)
			ret = tern_error_wrap(err, "--listen");
	}
	if (ret < 0) {
		tern_mchan_token_free(token, token_len);
		return ret;
	}
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "listen", t->o->listen);
	tern_jw_u64(&w, "port", (uint64_t)port);
	tern_mig_event(&t->p, "listening", &w, "listening on %s (port %d)", t->o->listen, port);
	tern_mchan_accept_opts ao = {.timeout_ms = t->o->timeout_ms,
				     .handshake_timeout_ms = t->o->handshake_timeout_ms,
				     .max_failed = t->o->max_failed_peers,
				     .refused = refused_peer,
				     .arg = t};
	ret = tern_mchan_accept_peers(lfd, token, token_len, "target", &ao, &t->c, err);
	tern_mchan_token_free(token, token_len);
	if (ret < 0)
		return ret;
	tern_mchan_set_send_timeout(t->c, TERN_MIG_STEP_TIMEOUT_MS);
	tern_mig_event(&t->p, "connected", NULL, "source %s connected", tern_mchan_peer_ip(t->c));
	ret = handle_offer(t, err);
	if (ret == 0)
		ret = make_work(t, err);
	if (ret == 0)
		ret = start_watchdog(t, err);
	if (ret == 0)
		ret = accept_offer(t, err);
	if (ret == 0)
		ret = rootfs_rounds(t, err);
	if (ret == 0)
		ret = receive_images(t, err);
	/* (userfaultfd, as post-copy needs: see choose_mode) */
	t->fill_from_images = t->mode != TERN_MIG_POST_COPY && t->features.lazy_pages;
	if (ret == 0 && t->mode == TERN_MIG_POST_COPY)
		ret = start_lazy_daemon(t, err);
	else if (ret == 0 && t->fill_from_images)
		ret = start_fill_from_images(t, err);
	if (ret == 0)
		ret = restore(t, err);
	if (ret == 0 && t->fill_from_images)
		ret = wait_fill_from_images(t, err);
	if (ret == 0)
		ret = send_running(t, err);
	return ret;
}

static int finish(target *t, tern_error **err)
{
	cleanup_free char *payload = NULL;
	tern_error *e = NULL;
	tern_mig_fetch f;
	size_t len;
	int ret;

	if (t->mode == TERN_MIG_POST_COPY && t->lazy.pid > 0) {
		ret = wait_lazy_daemon(t, &f, err);
		if (ret < 0) {
			/* memory it lacks would read as zeros: never run it so */
			if (tern_container_delete(t->env->rt, t->id, true, &e) < 0) {
				tern_log(TERN_LOG_ERROR, "delete `%s`: %s", t->id, e->msg);
				tern_error_free(e);
			}
			return tern_error_wrap(
			    err, "post-copy of `%s`: the container was killed here", t->id);
		}
		commit(t);
		tern_mig_pages_event(&t->p, t->lazy_known, t->lazy_pages, &f, "every page arrived");
	}
	if (tern_mchan_recv(t->c, TERN_MSG_DONE, NULL, &payload, &len, TERN_MIG_STEP_TIMEOUT_MS,
			    &e) < 0) {
		tern_warn("`%s` runs here, but the source did not confirm that it deleted its "
			  "copy: %s",
			  t->id, e->msg);
		tern_error_free(e);
	}
	return 0;
}

static void roll_back(target *t, tern_error *why)
{
	tern_error *e = NULL;

	if (t->c)
		tern_mchan_send_error(t->c, why);
	tern_lazy_daemon_stop(&t->lazy);
	if (t->restored && tern_container_delete(t->env->rt, t->id, true, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "delete `%s`: %s", t->id, e->msg);
		tern_error_free(e);
		e = NULL;
	}
	if (t->work && undo_bundle(t->bundle, t->work, &e) < 0) {
		tern_log(TERN_LOG_ERROR,
			 "%s; `%s` is kept (the next migrate-receive into the "
			 "bundle tries again)",
			 e->msg, t->work);
		tern_error_free(e);
		t->keep_work = true;
	}
	if (t->wrote_config) {
		cleanup_free char *path = tern_strdup_printf("%s/config.json", t->bundle);
		unlink(path);
	}
}

int tern_migrate_target(const tern_mig_env *env, const tern_receive_opts *o, tern_error **err)
{
	target t = {
	    .env = env, .o = o, .work_lock = -1, .lazy = TERN_LAZY_DAEMON_INIT, .watch_fd = -1};
	int ret;

	tern_mig_progress_init(&t.p, "target", o->json);
	ret = run(&t, err);
	if (ret < 0)
		roll_back(&t, *err);
	else
		ret = finish(&t, err);
	if (ret == 0) {
		tern_jw w;
		tern_jw_begin(&w);
		tern_jw_str(&w, "id", t.id);
		tern_jw_str(&w, "mode", tern_mig_mode_name(t.mode));
		tern_jw_u64(&w, "total_ms", (tern_mig_now_ns() - t.p.t0_ns) / 1000000);
		tern_mig_fetched_fields(&w, t.mode, t.lazy_known, t.lazy_pages);
		tern_mig_event(&t.p, "done", &w, "done: `%s` runs here (%s)", t.id,
			       tern_mig_mode_name(t.mode));
	}
	if (t.work && env->debug)
		tern_log(TERN_LOG_WARNING, "--debug: the images and criu's logs are kept in `%s`",
			 t.work);
	else if (t.work && !t.keep_work)
		tern_remove_tree(t.work);
	stop_watchdog(&t, 'R');
	if (t.work_lock >= 0)
		close(t.work_lock);
	tern_lazy_daemon_stop(&t.lazy);
	tern_mchan_free(t.c);
	free(t.criu);
	free(t.bundle);
	free(t.rootfs);
	free(t.id);
	free(t.src_id);
	free(t.work);
	free(t.images);
	free(t.cert);
	free(t.page_ip);
	return ret;
}
