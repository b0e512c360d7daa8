/* tern migrate: the source side (the session is drawn in migrate.h).
 *
 * The rule this file keeps: until the target says RUNNING, the container
 * here is the one that counts. It is frozen with the cgroup freezer (as
 * `tern pause`), dumped with criu's leave-running (criu leaves a cgroup it
 * found frozen frozen), and any failure before RUNNING thaws it again.
 * After RUNNING it is never thawed: it is deleted. */
#include "cgroup.h"
#include "checkpoint.h"
#include "criu-kdat.h"
#include "tcp-sockets.h"
#include "checkpoint-net.h"
#include "container-cgroup.h"
#include "log.h"
#include "migrate.h"
#include "migrate-source-internal.h"
#include "rootfs-sync.h"
#include "snapshot.h"
#include "state.h"
#include "utils.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the whole ---- */

static int make_work(source *s, tern_error **err)
{
	cleanup_free char *tmpl =
	    tern_strdup_printf("%s/%s/migrate-XXXXXX", s->env->rt->root, s->o->id);

	if (mkdtemp(tmpl) == NULL)
		return tern_error_make(err, errno, "work directory `%s`", tmpl);
	/* absolute: criu does not run in our working directory */
	s->work = realpath(tmpl, NULL);
	if (s->work == NULL) {
		s->work = steal_pointer(&tmpl);
		return tern_error_make(err, errno, "work directory `%s`", s->work);
	}
	s->images = tern_strdup_printf("%s/images", s->work);
	s->crit_work = tern_strdup_printf("%s/work", s->work);
	s->tls_dir = tern_strdup_printf("%s/tls", s->work);
	if (mkdir(s->images, 0700) < 0 || mkdir(s->crit_work, 0700) < 0 ||
	    mkdir(s->tls_dir, 0700) < 0)
		return tern_error_make(err, errno, "work directory `%s`", s->work);
	return 0;
}

/* A source that keeps the container: its connections go on from here, so
 * the lock the dump left (--tcp-established, see checkpoint-net.h) goes.
 * Harmless when the dump never got that far (nothing to remove). */
static void unlock_net(source *s)
{
	tern_error *e = NULL;

	if (!s->o->tcp_established || s->pid <= 0)
		return;
	if (tern_netns_unlock(s->pid, &e) < 0) {
		tern_debug("unlock the network of `%s`: %s", s->o->id, e->msg);
		tern_error_free(e);
	}
}

static bool has_status(source *s, const char *status)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	bool same;

	if (tern_container_peek(s->env->rt, s->o->id, &dir, &st, NULL) < 0)
		return false;
	same = strcmp(st->status, status) == 0;
	oci_state_free(st);
	return same;
}

static bool is_migrated(source *s)
{
	return has_status(s, "migrated");
}

/* ---- the dead man's switch ----
 *
 * If tern migrate itself dies (SIGKILL, the OOM killer) while the container
 * is frozen and before RUNNING, nobody would thaw it. A child started
 * before the freeze, in a session of its own (a ^C of the terminal is for
 * tern migrate, which rolls back itself), reads a pipe: "C" says the target
 * owns the container, "R" that tern migrate dealt with it. At end of file
 * without either it does what the roll back would: hang up on a lazy dump's
 * page server, then thaw the container (which waits until the dump has let
 * go of it: the state directory's lock). */
static void watchdog(source *s, int fd)
{
	pid_t groups[TERN_MIG_WATCH_GROUPS];
	size_t ngroups;
	tern_error *e = NULL;
	/* not the connection: the target must see it close with tern
	 * migrate; the lock stays held until the thaw */
	int keep[] = {fd, s->lock_fd, tern_log_fd()};

	tern_close_fds_from(3, keep, 3);
	setsid();
	if (tern_mig_watchdog_read(fd, groups, &ngroups))
		_exit(0);
	/* marked migrated (wait_running) before tern migrate could say "C":
	 * the target owns it, nothing here to undo */
	if (is_migrated(s))
		_exit(0);
	source_hang_up_page_server(s->page_ip, s->page_port);
	unlock_net(s);
	if (tern_container_resume(s->env->rt, s->o->id, &e) < 0)
		_exit(1);
	/* criu writes its last files (stats, log) after it let go of the
	 * container: the work directory goes once the dump's group is gone
	 * (never killed: a dump that lets go leaves the container whole) */
	tern_mig_groups_gone(groups, ngroups, false, 60000);
	/* (the container runs on here: nothing else removes it until its delete) */
	if (s->work)
		tern_remove_tree(s->work);
	tern_log(TERN_LOG_WARNING, "tern migrate of `%s` ended before the target ran it: thawed",
		 s->o->id);
	_exit(0);
}

static void watchdog_main(void *arg, int fd)
{
	watchdog(arg, fd);
}

static int start_watchdog(source *s, tern_error **err)
{
	return tern_mig_watchdog_start(watchdog_main, s, &s->watch_pid, &s->watch_fd, err);
}

static void stop_watchdog(source *s, char what)
{
	tern_mig_watchdog_stop(&s->watch_pid, &s->watch_fd, what);
}

static int freeze(source *s, tern_error **err)
{
	int ret = tern_container_pause(s->env->rt, s->o->id, err);

	if (ret < 0)
		return tern_error_wrap(err, "freeze `%s`", s->o->id);
	s->frozen = true;
	s->t_freeze = tern_mig_now_ns();
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "freeze");
	tern_mig_event(&s->p, "phase", &w, "frozen `%s`", s->o->id);
	return 0;
}

static int wait_running(source *s, tern_error **err)
{
	cleanup_free char *payload = NULL;
	size_t len;
	int ret = tern_mchan_recv(s->c, TERN_MSG_RUNNING, NULL, &payload, &len,
				  TERN_MIG_STEP_TIMEOUT_MS, err);

	if (ret < 0)
		return ret;
	/* the commit point: the target owns the container from here. Marked
	 * first, before anything that could be killed: a tern migrate killed
	 * from here on leaves a source that says "migrated", which resume
	 * refuses (the watchdog's too), never one that looks paused. */
	tern_error *me = NULL;
	if (tern_state_mark_migrated(s->env->rt->root, s->o->id, s->o->to, s->target_id, &me) < 0) {
		tern_log(TERN_LOG_ERROR, "the target runs `%s`: %s", s->target_id, me->msg);
		tern_error_free(me);
	}
	s->committed = true;
	stop_watchdog(s, 'C');
	s->t_running = tern_mig_now_ns();
	/* the downtime ended when it ran on the target, which may be before
	 * RUNNING (the memory filled from the images: migrate-target-restore.c);
	 * a target that does not say (an empty object) ran it just now */
	uint64_t ran_for_ms = 0;
	yajl_val v = NULL;
	tern_error *e = NULL;
	if (tern_mig_json_parse(payload, "RUNNING", &v, &e) == 0)
		tern_mig_json_u64(v, "ran_for_ms", &ran_for_ms);
	else
		tern_error_free(e);
	yajl_tree_free(v);
	uint64_t frozen_ns = s->t_running - s->t_freeze;
	s->downtime_ns = frozen_ns - (ran_for_ms * 1000000 < frozen_ns ? ran_for_ms * 1000000 : 0);
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "running");
	tern_jw_u64(&w, "downtime_ms", s->downtime_ns / 1000000);
	tern_jw_u64(&w, "frozen_ms", frozen_ns / 1000000);
	tern_mig_event(&s->p, "phase", &w,
		       "the target runs `%s` (stopped for %llu ms; frozen here for %llu ms)",
		       s->target_id, (unsigned long long)(s->downtime_ns / 1000000),
		       (unsigned long long)(frozen_ns / 1000000));
	return 0;
}

/* The checks, then the connection: the token is read, used and
 * cleared here. */
static int check_and_connect(source *s, bool *post_copy, bool *pre_copy, tern_error **err)
{
	unsigned char *token = NULL;
	size_t token_len;
	int ret;

	ret = tern_mchan_token_read(s->o->token_file, &token, &token_len, err);
	if (ret < 0)
		return ret;
	ret = tern_criu_find(s->env->criu, &s->criu, err);
	/* before the freeze: the first criu run of a boot may have to make
	 * the cache of its kernel probes */
	if (ret == 0)
		tern_criu_kdat_prepare(s->criu);
	if (ret == 0)
		ret = source_load(s, err);
	if (ret == 0)
		ret = source_take_lock(s, err);
	if (ret == 0)
		ret = source_check_tcp(s, err);
	if (ret == 0)
		ret = source_check_stdio(s, err);
	if (ret == 0)
		ret = source_choose_features(s, post_copy, pre_copy, err);
	if (ret < 0) {
		tern_mchan_token_free(token, token_len);
		return ret;
	}
	ret = tern_mchan_connect(s->o->to, token, token_len, "source", TERN_MIG_CONNECT_TIMEOUT_MS,
				 &s->c, err);
	tern_mchan_token_free(token, token_len);
	token = NULL;
	if (ret < 0)
		return tern_error_wrap(err, "--to `%s`", s->o->to);
	tern_mchan_set_send_timeout(s->c, TERN_MIG_STEP_TIMEOUT_MS);
	tern_mig_event(&s->p, "connected", NULL, "connected to %s", s->o->to);
	return 0;
}

/* Before the freeze, while the container runs: pre-copy's memory rounds
 * (then an IMAGES_DONE that ends them), post-copy's TLS for criu. */
static int before_freeze(source *s, int *rounds, tern_error **err)
{
	int ret = 0;

	if (ret == 0 && s->mode == TERN_MIG_PRE_COPY) {
		ret = source_precopy_rounds(s, rounds, err);
		if (ret == 0)
			ret = tern_mchan_send(s->c, TERN_MSG_IMAGES_DONE, NULL, 0, err);
	}
	if (ret == 0 && s->mode == TERN_MIG_POST_COPY)
		ret = source_prepare_tls(s, err);
	return ret;
}

/* The downtime: freeze, the last rootfs round and the frozen dump, in the
 * order the freezer allows; the images a v1 freezer lets go are sent
 * while criu writes them (*ps, *frozen_bytes). */
static int dump_frozen(source *s, tern_rootfs_sender *rs, const char *parent, page_stream *ps,
		       uint64_t *frozen_bytes, tern_error **err)
{
	int ret = 0;

	/* downtime from here. With a cgroup v1 freezer: freeze, dump and the
	 * last rootfs round beside it (criu leaves a cgroup it found frozen
	 * frozen). On v2
	 * criu cannot dump a frozen cgroup (its parasite code cannot run
	 * there): criu stops the tasks itself, and tern freezes the cgroup
	 * while criu still holds them (leave_frozen); the rootfs, which
	 * nothing changed since the tasks stopped, goes after the dump. */
	if (ret == 0 && s->freezer_v1)
		ret = freeze(s, err);
	if (ret == 0 && !s->freezer_v1) {
		s->frozen = true;
		s->t_freeze = tern_mig_now_ns();
	}
	if (ret == 0)
		ret = source_start_dump(s, s->images, parent, false, err);
	/* (v1: the last rootfs round reads the frozen tree while criu dumps;
	 * it goes out before the images) */
	if (ret == 0 && s->freezer_v1)
		ret = source_rootfs_round(s, rs, 2, err);
	/* with a v1 freezer the target waits for the images already; on v2
	 * the last rootfs round comes first (see above) */
	if (ret == 0 && s->mode == TERN_MIG_POST_COPY) {
		ret = source_wait_lazy_ready(s, err);
	} else if (ret == 0 && s->freezer_v1) {
		ret = source_dump_streaming(s, ps, frozen_bytes, err);
	} else if (ret == 0) {
		ret = source_wait_dump(s, err);
	}
	if (ret == 0 && !s->freezer_v1) {
		tern_jw fw;
		tern_jw_begin(&fw);
		tern_jw_str(&fw, "phase", "freeze");
		tern_mig_event(&s->p, "phase", &fw, "frozen `%s` (by criu, then its cgroup)",
			       s->o->id);
		ret = source_rootfs_round(s, rs, 2, err);
	}
	return ret;
}

/* After the dump: the rest of the images, and post-copy's page server. */
static int send_frozen(source *s, page_stream *ps, uint64_t frozen_bytes, int rounds,
		       tern_error **err)
{
	int ret;

	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "dumped");
	bool netns_new = tern_ckpt_netns_left_out(s->images);
	tern_jw_bool(&w, "netns_new", netns_new);
	tern_mig_event(&s->p, "phase", &w, "criu dump done%s%s",
		       s->mode == TERN_MIG_POST_COPY ? " (memory stays here, served lazily)" : "",
		       netns_new ? "; its network namespace held only lo: a new one there" : "");
	ret = tern_mig_images_send(s->c, s->images, (const char *const *)ps->names, true,
				   &frozen_bytes, err);
	source_page_stream_free(ps);
	if (ret < 0)
		return ret;
	s->image_bytes += frozen_bytes;
	/* pre-copy: the frozen dump holds what was dirtied since the last
	 * round */
	source_memory_event(s, 0, tern_mig_pages_bytes(s->images), frozen_bytes,
			    rounds ? s->t_dump - s->t_last_round : 0);
	if (s->mode == TERN_MIG_POST_COPY) {
		ret = source_send_page_server(s, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int run(source *s, tern_error **err)
{
	bool post_copy = false, pre_copy = false;
	int ret;

	ret = check_and_connect(s, &post_copy, &pre_copy, err);
	if (ret < 0)
		return ret;
	ret = source_offer(s, post_copy, pre_copy, err);
	if (ret < 0)
		return ret;

	/* rootfs round 1, while the container runs */
	cleanup_free char *manifest = NULL;
	size_t mlen;
	ret = tern_mchan_recv(s->c, TERN_MSG_ROOTFS_MANIFEST, NULL, &manifest, &mlen,
			      TERN_MIG_STEP_TIMEOUT_MS, err);
	if (ret < 0)
		return ret;
	cleanup_close int rootfd = open(s->rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", s->rootfs);
	tern_rootfs_sender *rs = NULL;
	ret = tern_rootfs_sender_new(rootfd, manifest, mlen, &rs, err);
	if (ret < 0)
		return tern_error_wrap(err, "rootfs `%s`", s->rootfs);
	ret = source_rootfs_round(s, rs, 1, err);
	if (ret == 0)
		ret = make_work(s, err);
	/* pre-copy: the memory rounds, then an IMAGES_DONE that ends them */
	int rounds = 0;
	if (ret == 0)
		ret = before_freeze(s, &rounds, err);
	cleanup_free char *parent = rounds ? tern_strdup_printf("pre-%d", rounds) : NULL;

	if (ret == 0)
		ret = start_watchdog(s, err);
	page_stream ps = {.n = 0};
	uint64_t frozen_bytes = 0;
	if (ret == 0)
		ret = dump_frozen(s, rs, parent, &ps, &frozen_bytes, err);
	tern_rootfs_sender_free(rs);
	if (ret < 0) {
		source_page_stream_free(&ps);
		return ret;
	}
	ret = send_frozen(s, &ps, frozen_bytes, rounds, err);
	if (ret < 0)
		return ret;
	return wait_running(s, err);
}

/* Freeze the container's cgroup directly (its state says paused already,
 * and the state lock is this side's): failures are logged, nothing more
 * can be done about them here. */
static void freeze_cgroup_of(source *s)
{
	tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	tern_error *e = NULL;

	if (tern_container_peek(s->env->rt, s->o->id, &dir, &st, &e) == 0)
		tern_cgroup_freeze(&st->cgroup_paths, true, &e);
	if (e) {
		tern_log(TERN_LOG_ERROR, "freeze `%s` before killing criu: %s", s->o->id, e->msg);
		tern_error_free(e);
	}
	oci_state_free(st);
	tern_state_dir_free(dir);
}

/* Post-copy after RUNNING: wait for the lazy dump, which ends once the
 * target has fetched every page, showing what crosses its page server. */
static int wait_lazy_dump(source *s, tern_mig_fetch *f, tern_error **err)
{
	tern_error *e = NULL;
	int ret;

	/* (counted here, not in the downtime) */
	s->lazy_known = tern_mig_lazy_pages(s->images, &s->lazy_pages, &e) == 0;
	if (!s->lazy_known)
		tern_warn("post-copy: the pages left to fetch are unknown: %s", e->msg);
	tern_error_free(e);
	tern_mig_fetch_init(f, s->page_ip, s->page_port, true,
			    s->lazy_pages * tern_mig_page_size());
	/* (a first sample at once: a small transfer may be over before the
	 * next) */
	bool uncorked = false;
	do {
		tern_mig_fetch_sample(f, &s->p);
		/* (the connection is up once the target runs the container:
		 * its restore needed pages) */
		if (!uncorked)
			uncorked = tern_criu_uncork(s->dump_pid, s->page_port) > 0;
		/* A target that stopped fetching but holds the connection open
		 * (its lazy-pages daemon hung) would hold this wait forever:
		 * the pages still flow in the background while it lives, so a
		 * silence as long as --criu-timeout is a hang. */
		int64_t idle = tern_mig_fetch_idle_ms(f);
		if (idle > s->o->criu_timeout_ms) {
			tern_error *ignored = NULL;
			/* criu holds the tasks stopped by ptrace, and with a v1
			 * freezer their cgroup thawed (it freezes it again
			 * only when it ends on its own): frozen first, so that
			 * criu's death does not let them run */
			freeze_cgroup_of(s);
			kill(-s->dump_pid, SIGKILL);
			kill(s->dump_pid, SIGKILL);
			tern_mig_child_wait(s->dump_pid, s->dump_errfd, -1, &ignored);
			tern_error_free(ignored);
			return tern_error_make_quiet(
			    err, ETIMEDOUT,
			    "the target fetched no page for %d s (--criu-timeout): killed "
			    "criu's lazy dump",
			    s->o->criu_timeout_ms / 1000);
		}
	} while ((ret = tern_mig_child_wait(s->dump_pid, s->dump_errfd, TERN_MIG_PROGRESS_MS,
					    err)) == -ETIMEDOUT);
	return ret;
}

/* After RUNNING: wait for the lazy dump to have served every page, then
 * delete the source container and say DONE. */
static int finish(source *s, tern_error **err)
{
	tern_mig_fetch f;
	int ret = 0;

	if (s->dump_pid > 0) {
		ret = wait_lazy_dump(s, &f, err);
		s->dump_pid = 0;
		if (ret < 0 && !s->env->debug)
			tern_remove_tree(s->work);
		if (ret < 0)
			return tern_error_wrap(
			    err,
			    "post-copy: the memory transfer to the target failed after the target "
			    "had started `%s`, so its copy lacks pages; the source container "
			    "`%s` is left frozen (migrated) with the memory as it was at the "
			    "freeze: check the target, then `tern resume --force %s` (if the "
			    "target's copy is gone) or `tern delete %s`",
			    s->target_id, s->o->id, s->o->id, s->o->id);
		tern_mig_pages_event(&s->p, s->lazy_known, s->lazy_pages, &f,
				     "every page fetched by the target");
	}
	tern_remove_tree(s->work);
	/* its connections go on on the target: closed here they would linger
	 * behind the lock (tcp-sockets.h) */
	if (s->o->tcp_established && s->pid > 0)
		tern_debug("`%s`: %d connections put in repair mode before the delete", s->o->id,
			   tern_tcp_repair_tree(s->pid));
	ret = tern_container_delete(s->env->rt, s->o->id, true, err);
	if (ret < 0)
		return tern_error_wrap(
		    err, "the target runs `%s`, but deleting the source copy failed", s->target_id);
	/* as `tern delete` does: its snapshots stay behind on this node no more
	 * than its state, and a clone's overlay and record go */
	tern_error *ignored = NULL;
	source_snapshots_finish(s);
	if (tern_snapshot_warm_cleanup(s->env->rt, s->o->id, &ignored) < 0 ||
	    tern_snapshot_delete_all(s->env->rt->root, s->o->id, &ignored) < 0 ||
	    tern_snapshot_clone_cleanup(s->env->rt->root, s->o->id, &ignored) < 0) {
		tern_warn("`%s` moved, but not all it had here went: %s", s->o->id, ignored->msg);
		tern_error_free(ignored);
		ignored = NULL;
	}
	if (tern_mchan_send(s->c, TERN_MSG_DONE, NULL, 0, &ignored) < 0) {
		tern_warn("DONE not delivered to the target: %s", ignored->msg);
		tern_error_free(ignored);
	}
	return 0;
}

static bool is_paused(source *s)
{
	return has_status(s, "paused");
}

/* Before RUNNING: the source keeps the container, running. */
static void roll_back(source *s, tern_error *why)
{
	tern_error *e = NULL;

	if (s->c)
		tern_mchan_send_error(s->c, why);
	source_abort_dump(s);
	unlock_net(s);
	if (s->frozen && is_paused(s)) {
		if (tern_container_resume(s->env->rt, s->o->id, &e) < 0) {
			tern_log(TERN_LOG_ERROR, "thaw `%s` after the failed migration: %s",
				 s->o->id, e->msg);
			tern_error_free(e);
		} else {
			tern_mig_event(&s->p, "rollback", NULL,
				       "`%s` thawed: it keeps running here", s->o->id);
		}
	}
	stop_watchdog(s, 'R');
	if (s->work && s->env->debug)
		tern_log(TERN_LOG_ERROR,
			 "--debug: the images and criu's logs are kept in `%s` (remove it before "
			 "`tern delete`)",
			 s->work);
	else if (s->work)
		tern_remove_tree(s->work);
}

int tern_migrate_source(const tern_mig_env *env, const tern_migrate_opts *o, tern_error **err)
{
	source s = {
	    .env = env, .o = o, .lock_fd = -1, .dump_errfd = -1, .status_fd = -1, .watch_fd = -1};
	int ret;

	tern_mig_progress_init(&s.p, "source", o->json);
	ret = run(&s, err);
	if (ret < 0 && s.c && !s.committed)
		tern_mig_peer_reason(s.c, err);
	if (ret < 0 && !s.committed) {
		roll_back(&s, *err);
		/* say where the container is: the point of the bound */
		if (s.criu_killed && *err && !is_paused(&s)) {
			char *m = tern_strdup_printf("%s; `%s` runs on here", (*err)->msg, o->id);
			free((*err)->msg);
			(*err)->msg = m;
		}
	}
	if (ret == 0)
		ret = finish(&s, err);
	if (ret == 0) {
		uint64_t now = tern_mig_now_ns();
		tern_jw w;
		tern_jw_begin(&w);
		tern_jw_str(&w, "id", o->id);
		tern_jw_str(&w, "target_id", s.target_id);
		tern_jw_str(&w, "mode", tern_mig_mode_name(s.mode));
		tern_jw_u64(&w, "downtime_ms", s.downtime_ns / 1000000);
		tern_jw_u64(&w, "total_ms", (now - s.p.t0_ns) / 1000000);
		tern_jw_u64(&w, "image_bytes", s.image_bytes);
		tern_jw_u64(&w, "rootfs_bytes", s.rootfs_bytes);
		tern_jw_u64(&w, "memory_bytes", s.memory_bytes);
		tern_mig_fetched_fields(&w, s.mode, s.lazy_known, s.lazy_pages);
		tern_mig_event(
		    &s.p, "done", &w,
		    "done: `%s` runs on %s as `%s` (%s); downtime %llu ms, total %llu ms", o->id,
		    o->to, s.target_id, tern_mig_mode_name(s.mode),
		    (unsigned long long)(s.downtime_ns / 1000000),
		    (unsigned long long)((now - s.p.t0_ns) / 1000000));
	}
	stop_watchdog(&s, 'R');
	if (s.status_fd >= 0)
		close(s.status_fd);
	if (s.lock_fd >= 0)
		close(s.lock_fd);
	tern_mchan_free(s.c);
	free(s.criu);
	free(s.config_json);
	free(s.rootfs);
	free(s.target_id);
	free(s.target_cert);
	free(s.work);
	free(s.images);
	free(s.crit_work);
	free(s.tls_dir);
	free(s.page_ip);
	source_snapshots_free(&s);
	return ret;
}
