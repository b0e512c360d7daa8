/* tern migrate-receive, what arrives and the restore: the rootfs rounds
 * (with pre-copy's memory rounds between them) applied under an undo
 * log, the images, criu lazy-pages (post-copy, or the fill from the
 * images), and criu's restore. Stages of migrate-target.c's run. */
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

int target_rootfs_rounds(target *t, tern_error **err)
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

int target_receive_images(target *t, tern_error **err)
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

int target_start_lazy_daemon(target *t, tern_error **err)
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
int target_wait_lazy_daemon(target *t, tern_mig_fetch *f, tern_error **err)
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

int target_start_fill_from_images(target *t, tern_error **err)
{
	int ret = tern_lazy_daemon_start(t->criu, t->images, NULL, &t->lazy, err);

	if (ret < 0)
		return tern_error_wrap(err, "filling memory from the images");
	tern_mig_watchdog_group(t->watch_fd, t->lazy.pid);
	return 0;
}

int target_wait_fill_from_images(target *t, tern_error **err)
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
			     .work_goes = !t->env->debug,
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

int target_restore(target *t, tern_error **err)
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
