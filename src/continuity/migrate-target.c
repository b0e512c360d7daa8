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
#include "migrate-target-internal.h"
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

/* ---- leftovers of receivers that were killed ---- */

/* written by send_running just before RUNNING goes: the mode's name */
#define WORK_TOLD_RUNNING "told-running"

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
	target_snapshots_undo(work);
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

/* Said on stderr (an event with --format json): a leftover of a receive
 * that did not finish was dealt with. */
static void said_undone(target *t, const char *dir, bool rolled_back)
{
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "dir", dir);
	tern_jw_bool(&w, "rolled_back", rolled_back);
	tern_mig_event(&t->p, "undone", &w,
		       rolled_back ? "undid the interrupted receive in `%s`: the bundle is put back"
				   : "removed `%s`, left by a receive that had finished",
		       dir);
}

static void sweep(target *t)
{
	const char *bundle = t->bundle;
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
		tern_error *e = NULL;
		cleanup_free char *cfile = tern_strdup_printf("%s/" WORK_CONTAINER, dir);
		cleanup_free char *state = NULL;
		size_t slen;
		/* killed between its commit and removing this: the rootfs is
		 * the container's */
		if (tern_read_file(cfile, &state, &slen, 4096, NULL) == 0 &&
		    memchr(state, '\0', slen) == NULL && access(state, F_OK) == 0) {
			tern_remove_tree(dir);
			said_undone(t, dir, false);
			continue;
		}
		if (undo_bundle(bundle, dir, &e) < 0) {
			/* its undo log is what is left of the rootfs as it was */
			tern_log(TERN_LOG_ERROR, "%s; `%s` is kept", e->msg, dir);
			tern_error_free(e);
			continue;
		}
		tern_remove_tree(dir);
		said_undone(t, dir, true);
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
	/* what send_running recorded before it told the source (read before
	 * the work directory goes) */
	cleanup_free char *told = tern_strdup_printf("%s/" WORK_TOLD_RUNNING, t->work);
	cleanup_free char *mode = NULL;
	size_t mlen;
	bool was_told = tern_read_file(told, &mode, &mlen, 64, NULL) == 0;
	tern_remove_tree(t->work);
	if (!was_told)
		tern_log(TERN_LOG_WARNING,
			 "migrate-receive of `%s` died before the source was told RUNNING: "
			 "rolled back",
			 t->id);
	else if (strcmp(mode, "post-copy") == 0)
		tern_log(TERN_LOG_WARNING,
			 "migrate-receive of `%s` died after the source was told RUNNING, before "
			 "all of its memory was here: the copy here could not run without it and "
			 "was deleted, the rootfs put back; the source's copy is the only one "
			 "left",
			 t->id);
	else
		tern_log(TERN_LOG_WARNING,
			 "migrate-receive of `%s` died just after the source was told RUNNING, "
			 "before it took the container over: the copy here was deleted, the "
			 "rootfs put back; the source deletes its copy on RUNNING: check it",
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

/* ---- the commit point ---- */

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
	target_snapshots_commit(t);
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
	/* recorded before it is sent, for the watchdog to say what happened
	 * should this receiver die from here on */
	cleanup_free char *told = tern_strdup_printf("%s/" WORK_TOLD_RUNNING, t->work);
	const char *mode = tern_mig_mode_name(t->mode);
	if (tern_write_file(told, mode, strlen(mode), 0600, &e) < 0) {
		tern_log(TERN_LOG_WARNING, "%s", e->msg);
		tern_error_free(e);
		e = NULL;
	}
	int ret = tern_mchan_send(t->c, TERN_MSG_RUNNING, msg, strlen(msg), err);

	if (ret < 0) {
		unlink(told);
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
		sweep(t);
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
	ret = target_handle_offer(t, err);
	if (ret == 0)
		ret = make_work(t, err);
	if (ret == 0)
		ret = start_watchdog(t, err);
	if (ret == 0)
		ret = target_accept_offer(t, err);
	if (ret == 0)
		ret = target_rootfs_rounds(t, err);
	if (ret == 0)
		ret = target_receive_images(t, err);
	/* (userfaultfd, as post-copy needs: see choose_mode) */
	t->fill_from_images = t->mode != TERN_MIG_POST_COPY && t->features.lazy_pages;
	if (ret == 0 && t->mode == TERN_MIG_POST_COPY)
		ret = target_start_lazy_daemon(t, err);
	else if (ret == 0 && t->fill_from_images)
		ret = target_start_fill_from_images(t, err);
	if (ret == 0)
		ret = target_restore(t, err);
	if (ret == 0 && t->fill_from_images)
		ret = target_wait_fill_from_images(t, err);
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
		ret = target_wait_lazy_daemon(t, &f, err);
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
	/* not committed (a post-copy that failed after RUNNING): the
	 * snapshots go with the container */
	if (ret < 0 && t.snap_store && !t.keep_work)
		tern_remove_tree(t.snap_store);
	free(t.snap_store);
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
