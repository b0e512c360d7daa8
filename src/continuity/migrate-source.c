/* tern migrate: the source side (the session is drawn in migrate.h).
 *
 * The rule this file keeps: until the target says RUNNING, the container
 * here is the one that counts. It is frozen with the cgroup freezer (as
 * `tern pause`), dumped with criu's leave-running (criu leaves a cgroup it
 * found frozen frozen), and any failure before RUNNING thaws it again.
 * After RUNNING it is never thawed: it is deleted. */
#include "checkpoint.h"
#include "criu-kdat.h"
#include "tcp-sockets.h"
#include "checkpoint-net.h"
#include "container-cgroup.h"
#include "log.h"
#include "migrate.h"
#include "rootfs-sync.h"
#include "snapshot.h"
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

#define MIGRATE_LOCK "migrate.lock"

typedef struct {
	const tern_mig_env *env;
	const tern_migrate_opts *o;
	tern_mig_progress p;
	char *criu;
	tern_mchan *c;
	int lock_fd;
	char *config_json;
	char *rootfs;
	pid_t pid; /* the container's init */
	uint64_t memory_bytes;
	tern_mig_mode mode;
	char *target_id;
	char *target_cert;
	/* root/id/migrate-XXXXXX: images/, work/, tls/ */
	char *work;
	char *images;
	char *crit_work;
	char *tls_dir;
	char *page_ip;
	int page_port;
	pid_t dump_pid;
	bool criu_killed; /* a dump past --criu-timeout was killed */
	int dump_errfd;
	int status_fd; /* read end: a byte once a lazy dump's images are written */
	bool frozen;
	bool freezer_v1; /* frozen before the dump; else by criu (see run) */
	bool committed;
	pid_t watch_pid;
	int watch_fd; /* write end: see start_watchdog */
	uint64_t t_freeze, t_running;
	uint64_t downtime_ns; /* from the freeze until it ran on the target */
	uint64_t image_bytes, rootfs_bytes;
	uint64_t sent_during_dump; /* of the frozen dump's images (see page_stream) */
	/* pre-copy: when the last memory round's pre-dump started (criu
	 * resets the dirty bits there), for the dirty rate of the next */
	uint64_t t_dump, t_last_round;
	int last_round;
	/* post-copy: the pages the dump left for the target to fetch */
	bool lazy_known;
	uint64_t lazy_pages;
} source;

/* ---- checks before anything changes ---- */

static int take_lock(source *s, tern_error **err)
{
	cleanup_free char *path =
	    tern_strdup_printf("%s/%s/%s", s->env->rt->root, s->o->id, MIGRATE_LOCK);

	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock_fd < 0)
		return tern_error_make(err, errno, "migration lock `%s`", path);
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return tern_error_make_quiet(
			    err, EBUSY, "container `%s` is already being migrated", s->o->id);
		return tern_error_make(err, errno, "migration lock `%s`", path);
	}
	return 0;
}

/* criu refuses established connections without --tcp-established, but
 * only once the container is frozen and half dumped: look first. */
static int check_tcp(source *s, tern_error **err)
{
	static const char *const files[] = {"tcp", "tcp6"};

	if (s->o->tcp_established)
		return 0;
	for (size_t i = 0; i < 2; i++) {
		cleanup_free char *path = tern_strdup_printf("/proc/%d/net/%s", s->pid, files[i]);
		cleanup_free char *data = NULL;
		size_t len;
		if (tern_read_file(path, &data, &len, 0, NULL) < 0)
			continue;
		char *save = NULL;
		char *l = strtok_r(data, "\n", &save); /* the header */
		for (l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char st[8] = "";
			/* sl local rem st: state 01 is ESTABLISHED */
			if (sscanf(l, " %*s %*s %*s %7s", st) == 1 && strcmp(st, "01") == 0)
				return tern_error_make_quiet(
				    err, EBUSY,
				    "container `%s` has established TCP connections (%s): migrate "
				    "them with --tcp-established (the container's address must be "
				    "reachable on the target), or close them first",
				    s->o->id, path);
		}
	}
	return 0;
}

/* The init's stdio comes from this node (the file or pipe `tern run -d`
 * was given). The target hands the restored init /dev/null instead; criu
 * accepts that for a pipe or a character device, but a regular file must
 * match its size and mode on restore, which no file on the target can. */
static int check_stdio(source *s, tern_error **err)
{
	for (int fd = 0; fd < 3; fd++) {
		cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", s->pid, fd);
		char target[PATH_MAX];
		struct stat st;
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0 || stat(link, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		target[n] = '\0';
		size_t rl = strlen(s->rootfs);
		if (strncmp(target, s->rootfs, rl) == 0 && target[rl] == '/')
			continue; /* inside the rootfs: it travels */
		return tern_error_make_quiet(
		    err, EINVAL,
		    "container `%s`: its fd %d is `%s`, a file of this node that cannot go with "
		    "it (criu restores a regular file only with its exact size); start it with "
		    "stdio on /dev/null or a pipe",
		    s->o->id, fd, target);
	}
	return 0;
}

/* What the dump will hold, about: the resident memory of the container's
 * processes (shared pages counted twice, so rather more). */
static uint64_t memory_estimate(const oci_state *st)
{
	uint64_t total = 0;

	for (size_t i = 0; i < st->cgroup_paths.len; i++) {
		cleanup_free char *procs =
		    tern_strdup_printf("%s%s/cgroup.procs", st->cgroup_paths.items[i].key,
				       st->cgroup_paths.items[i].value);
		cleanup_free char *data = NULL;
		size_t len;
		if (tern_read_file(procs, &data, &len, 0, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *l = strtok_r(data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			cleanup_free char *status = tern_strdup_printf("/proc/%s/status", l);
			cleanup_free char *sdata = NULL;
			size_t slen;
			char *rss;
			if (tern_read_file(status, &sdata, &slen, 0, NULL) == 0 &&
			    (rss = strstr(sdata, "VmRSS:")) != NULL)
				total += strtoull(rss + 6, NULL, 10) << 10;
		}
		if (total)
			break;
	}
	return total;
}

static int load(source *s, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	cleanup_free char *cfg = NULL; /* (before the goto: freed at `out`) */
	size_t len;
	int ret = tern_container_peek(s->env->rt, s->o->id, &dir, &st, err);

	if (ret < 0)
		return ret;
	if (strcmp(st->status, "running") != 0) {
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot migrate container `%s`: it is %s, not running",
					    s->o->id, st->status);
		goto out;
	}
	s->pid = st->pid;
	for (size_t i = 0; i < st->cgroup_paths.len; i++) {
		const char *k = strrchr(st->cgroup_paths.items[i].key, '/');
		if (k && strcmp(k, "/freezer") == 0)
			s->freezer_v1 = true;
	}
	s->rootfs = tern_xstrdup(st->rootfs);
	s->memory_bytes = memory_estimate(st);
	cfg = tern_strdup_printf("%s/%s", dir->dir, TERN_CONFIG_COPY);
	ret = tern_read_file(cfg, &s->config_json, &len, 0, err);
	if (ret < 0)
		tern_error_wrap(err, "container `%s`", s->o->id);
out:
	oci_state_free(st);
	return ret;
}

/* Which modes can work here; the target decides with its own half. */
static int choose_features(source *s, bool *post_copy, bool *pre_copy, tern_error **err)
{
	tern_criu_features f;
	tern_error *why = NULL;
	int ret = tern_criu_features_check(s->criu, &f, err);

	if (ret < 0)
		return ret;
	*pre_copy = f.mem_track;
	*post_copy = tern_criu_lazy_pipes_check(&why) == 0;
	if (s->o->mode == TERN_MIG_PRE_COPY && !f.mem_track) {
		tern_error_free(why);
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--mode pre-copy: this kernel lacks memory dirty tracking "
		    "(CONFIG_MEM_SOFT_DIRTY; `criu check --feature mem_dirty_track` "
		    "fails), which pre-copy needs; use --mode post-copy or stop-and-copy");
	}
	if (s->o->mode == TERN_MIG_POST_COPY && why) {
		*err = why;
		return tern_error_wrap(err, "--mode post-copy");
	}
	tern_error_free(why);
	return 0;
}

/* ---- the conversation ---- */

static int offer(source *s, bool post_copy, bool pre_copy, tern_error **err)
{
	cleanup_free char *msg = NULL, *reply = NULL;
	size_t len;
	yajl_val v = NULL;
	tern_jw w;
	int ret;

	tern_jw_begin(&w);
	tern_jw_str(&w, "id", s->o->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(s->o->mode));
	tern_jw_str(&w, "config", s->config_json);
	tern_jw_u64(&w, "memory_bytes", s->memory_bytes);
	tern_jw_bool(&w, "tcp_established", s->o->tcp_established);
	tern_jw_bool(&w, "post_copy", post_copy);
	tern_jw_bool(&w, "pre_copy", pre_copy);
	msg = tern_jw_end(&w);
	ret = tern_mchan_send(s->c, TERN_MSG_OFFER, msg, strlen(msg), err);
	if (ret < 0)
		return ret;
	ret = tern_mchan_recv(s->c, TERN_MSG_ACCEPT, NULL, &reply, &len, TERN_MIG_STEP_TIMEOUT_MS,
			      err);
	if (ret < 0)
		return ret;
	ret = tern_mig_json_parse(reply, "ACCEPT", &v, err);
	if (ret < 0)
		return ret;
	const char *mode = tern_mig_json_str(v, "mode");
	const char *id = tern_mig_json_str(v, "id");
	const char *cert = tern_mig_json_str(v, "cert");
	if (mode == NULL || tern_mig_mode_parse(mode, &s->mode) < 0 || id == NULL ||
	    s->mode == TERN_MIG_AUTO || (s->mode == TERN_MIG_PRE_COPY && !pre_copy) ||
	    (s->mode == TERN_MIG_POST_COPY && (!post_copy || cert == NULL))) {
		yajl_tree_free(v);
		return tern_error_make_quiet(err, EPROTO,
					     "the target's ACCEPT names no mode this side offered");
	}
	s->target_id = tern_xstrdup(id);
	s->target_cert = cert ? tern_xstrdup(cert) : NULL;
	yajl_tree_free(v);
	tern_jw_begin(&w);
	tern_jw_str(&w, "mode", tern_mig_mode_name(s->mode));
	tern_jw_str(&w, "target_id", s->target_id);
	tern_mig_event(&s->p, "accepted", &w, "target accepted `%s` as `%s`, mode %s", s->o->id,
		       s->target_id, tern_mig_mode_name(s->mode));
	return 0;
}

static int rootfs_write(void *data, const void *buf, size_t len, tern_error **err)
{
	return tern_mchan_send(data, TERN_MSG_ROOTFS_DATA, buf, len, err);
}

static int rootfs_round(source *s, tern_rootfs_sender *rs, int round, tern_error **err)
{
	tern_rootfs_stats st = {0};
	tern_jw w;
	int ret = tern_rootfs_sender_round(rs, rootfs_write, s->c, &st, err);

	if (ret < 0)
		return tern_error_wrap(err, "rootfs `%s`, round %d", s->rootfs, round);
	ret = tern_mchan_send(s->c, TERN_MSG_ROOTFS_DONE, NULL, 0, err);
	if (ret < 0)
		return ret;
	s->rootfs_bytes += st.stream_bytes;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "rootfs");
	tern_jw_u64(&w, "round", (uint64_t)round);
	tern_jw_u64(&w, "entries", st.entries_sent);
	tern_jw_u64(&w, "deleted", st.entries_deleted);
	tern_jw_u64(&w, "data_bytes", st.data_bytes);
	tern_jw_u64(&w, "bytes", st.stream_bytes);
	tern_mig_event(&s->p, "phase", &w,
		       "rootfs round %d: %llu entries, %llu deleted, %llu data bytes (%llu sent)",
		       round, (unsigned long long)st.entries_sent,
		       (unsigned long long)st.entries_deleted, (unsigned long long)st.data_bytes,
		       (unsigned long long)st.stream_bytes);
	return 0;
}

/* ---- the dump ---- */

/* A free TCP port on `ip` for criu's page server (criu binds it itself,
 * a moment later). */
static int free_port(const char *ip, tern_error **err)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	cleanup_close int fd = -1;

	if (strchr(ip, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, ip, &a->sin6_addr) != 1)
			return tern_error_make_quiet(err, EINVAL, "address `%s`", ip);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		if (inet_pton(AF_INET, ip, &a->sin_addr) != 1)
			return tern_error_make_quiet(err, EINVAL, "address `%s`", ip);
		sl = sizeof(*a);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return tern_error_make(err, errno, "a free port on `%s` for criu's page server",
				       ip);
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

typedef struct {
	source *s;
	tern_ckpt_opts ck;
} dump_job;

static int dump_child(void *arg, tern_error **err)
{
	dump_job *j = arg;
	int ret;

	signal(SIGPIPE, SIG_DFL);
	/* a group of its own, criu with it: a ^C at the terminal stops tern
	 * migrate (whose watchdog thaws the container once the dump let go
	 * of it), never criu half way through the dump */
	setpgid(0, 0);
	ret = tern_container_checkpoint(j->s->env->rt, j->s->criu, j->s->o->id, &j->ck, err);
	/* criu answers before it has quite finished with its work directory */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return ret;
}

static int prepare_tls(source *s, tern_error **err)
{
	cleanup_free char *cert = NULL;
	cleanup_free char *peer = tern_strdup_printf("%s/peer.pem", s->tls_dir);
	int ret = tern_mchan_ephemeral_cert(s->tls_dir, tern_mchan_local_ip(s->c), &cert, err);

	if (ret < 0)
		return tern_error_wrap(err, "criu TLS certificate");
	ret = tern_write_file(peer, s->target_cert, strlen(s->target_cert), 0600, err);
	if (ret < 0)
		return ret;
	free(s->target_cert);
	s->target_cert = steal_pointer(&cert); /* now: ours, for PAGE_SERVER */
	s->page_ip = tern_xstrdup(tern_mchan_local_ip(s->c));
	s->page_port = free_port(s->page_ip, err);
	return s->page_port < 0 ? s->page_port : 0;
}

static int start_dump(source *s, const char *images, const char *parent, bool pre_dump,
		      tern_error **err)
{
	dump_job j = {.s = s,
		      .ck = {.image_path = images,
			     .work_path = s->crit_work,
			     .parent_path = parent,
			     .pre_dump = pre_dump,
			     .leave_running = true,
			     .leave_frozen = !s->freezer_v1,
			     .tcp_established = s->o->tcp_established,
			     .netns_fresh_if_plain = true,
			     .criu_checked = true,
			     .criu_timeout_ms = s->o->criu_timeout_ms,
			     .keep_net_locked = s->o->tcp_established,
			     .status_fd = -1}};
	cleanup_free char *ps = NULL, *cacert = NULL, *cert = NULL, *key = NULL;
	int sp[2] = {-1, -1};
	int ret;

	s->t_dump = tern_mig_now_ns();
	if (s->mode == TERN_MIG_POST_COPY) {
		if (pipe2(sp, O_CLOEXEC) < 0)
			return tern_error_make(err, errno, "pipe");
		ps = strchr(s->page_ip, ':')
			 ? tern_strdup_printf("[%s]:%d", s->page_ip, s->page_port)
			 : tern_strdup_printf("%s:%d", s->page_ip, s->page_port);
		cacert = tern_strdup_printf("%s/peer.pem", s->tls_dir);
		cert = tern_strdup_printf("%s/cert.pem", s->tls_dir);
		key = tern_strdup_printf("%s/key.pem", s->tls_dir);
		j.ck.lazy_pages = true;
		j.ck.page_server = ps;
		j.ck.tls_cacert = cacert;
		j.ck.tls_cert = cert;
		j.ck.tls_key = key;
		j.ck.status_fd = sp[1];
	}
	/* the child keeps the status pipe's write end across fork; criu
	 * (exec'd) does not need it: checkpoint.c writes it */
	if (sp[1] >= 0)
		fcntl(sp[1], F_SETFD, 0);
	int close_these[] = {sp[0], s->lock_fd, s->watch_fd};
	ret =
	    tern_mig_child_start(dump_child, &j, close_these, 3, &s->dump_pid, &s->dump_errfd, err);
	/* the child makes itself the leader of a group; so does this side,
	 * before the watchdog may look for it */
	if (ret == 0) {
		setpgid(s->dump_pid, s->dump_pid);
		tern_mig_watchdog_group(s->watch_fd, s->dump_pid);
	}
	if (sp[1] >= 0)
		close(sp[1]);
	s->status_fd = sp[0];
	return ret;
}

/* What is left of --criu-timeout for the dump started at t_dump. */
static int dump_left_ms(source *s)
{
	uint64_t spent = (tern_mig_now_ns() - s->t_dump) / 1000000ULL;

	return spent >= (uint64_t)s->o->criu_timeout_ms ? 0 : s->o->criu_timeout_ms - (int)spent;
}

/* Wait for the dump child and its criu within --criu-timeout: a hung criu
 * (or an action script of its that never returns) is killed with its
 * group, and the roll back thaws the container. */
static int wait_dump(source *s, tern_error **err)
{
	cleanup_free char *what = tern_strdup_printf("criu dump of `%s`", s->o->id);
	int ret = tern_mig_child_wait_or_kill(s->dump_pid, s->dump_errfd, dump_left_ms(s),
					      s->o->criu_timeout_ms, what, err);

	s->dump_pid = 0;
	if (ret == -ETIMEDOUT)
		s->criu_killed = true;
	return ret;
}

/* Post-copy: wait until the images are written and criu's page server
 * listens (a byte on the status pipe), or the dump failed. */
static int wait_lazy_ready(source *s, tern_error **err)
{
	char b;
	struct pollfd pfd = {.fd = s->status_fd, .events = POLLIN};
	int r;

	while ((r = poll(&pfd, 1, dump_left_ms(s))) < 0 && errno == EINTR)
		;
	if (r > 0 && read(s->status_fd, &b, 1) == 1)
		return 0;
	int ret = tern_mig_child_wait(s->dump_pid, s->dump_errfd, r == 0 ? 0 : 10000, err);
	if (ret == -ETIMEDOUT) {
		/* hung: roll_back's abort_dump would wait 20 s more for it */
		kill(-s->dump_pid, SIGKILL);
		kill(s->dump_pid, SIGKILL);
		tern_mig_child_wait(s->dump_pid, s->dump_errfd, -1, err);
		tern_error_free(*err);
		*err = NULL;
		s->dump_pid = 0;
		s->criu_killed = true;
		return tern_error_make_quiet(
		    err, ETIMEDOUT,
		    "criu's lazy dump of `%s` did not get ready within %d s: killed it", s->o->id,
		    s->o->criu_timeout_ms / 1000);
	}
	s->dump_pid = 0;
	if (ret == 0)
		return tern_error_make_quiet(err, EIO, "criu's lazy dump of `%s` ended unready",
					     s->o->id);
	return ret;
}

static void hang_up_page_server(const char *ip, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	struct sockaddr *sa = (struct sockaddr *)&a;
	socklen_t sl = sizeof(a);
	int fd;

	if (ip == NULL || port <= 0)
		return;
	if (inet_pton(AF_INET6, ip, &a6.sin6_addr) == 1) {
		sa = (struct sockaddr *)&a6;
		sl = sizeof(a6);
	} else if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		return;
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, sa, sl) < 0)
		tern_debug("page server %s port %d: %s", ip, port, strerror(errno));
	close(fd);
}

/* Make a lazy dump that is still waiting give up cleanly (so that criu
 * unlocks the network and lets the tasks go, still frozen): connect to its
 * page server and hang up, which fails its TLS handshake; if it does not
 * end, kill it. */
static void abort_dump(source *s)
{
	tern_error *ignored = NULL;

	if (s->dump_pid <= 0)
		return;
	hang_up_page_server(s->page_ip, s->page_port);
	if (tern_mig_child_wait(s->dump_pid, s->dump_errfd, 20000, &ignored) == -ETIMEDOUT) {
		/* criu is in the child's process group */
		kill(-s->dump_pid, SIGKILL);
		kill(s->dump_pid, SIGKILL);
		tern_mig_child_wait(s->dump_pid, s->dump_errfd, -1, &ignored);
	}
	tern_error_free(ignored);
	s->dump_pid = 0;
}

static int send_page_server(source *s, tern_error **err)
{
	cleanup_free char *msg = NULL;
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "address", s->page_ip);
	tern_jw_u64(&w, "port", (uint64_t)s->page_port);
	tern_jw_str(&w, "cert", s->target_cert);
	msg = tern_jw_end(&w);
	return tern_mchan_send(s->c, TERN_MSG_PAGE_SERVER, msg, strlen(msg), err);
}

/* ---- pre-copy ---- */

/* The event of a memory round (`round` > 0) or of the images sent frozen
 * (0): their pages and the bytes sent, and, where they hold only what was
 * dirtied since the previous round (`since_ns` since that one's pre-dump
 * started; 0: no previous round), the dirty rate. Without dirty tracking
 * (stop-and-copy, post-copy, or pre-copy's first round, which holds
 * everything) the rate is unknown: null. */
static void memory_event(source *s, int round, uint64_t pages_bytes, uint64_t sent,
			 uint64_t since_ns)
{
	uint64_t pages = pages_bytes / tern_mig_page_size();
	char rate_text[64] = "", during_text[64] = "";
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", round > 0 ? "memory" : "images");
	if (round > 0)
		tern_jw_u64(&w, "round", (uint64_t)round);
	tern_jw_u64(&w, "pages", pages);
	tern_jw_u64(&w, "pages_bytes", pages_bytes);
	tern_jw_u64(&w, "bytes", sent);
	if (round == 0 && s->mode != TERN_MIG_POST_COPY) {
		tern_jw_u64(&w, "sent_during_dump", s->sent_during_dump);
		snprintf(during_text, sizeof(during_text), "; %llu while criu dumped",
			 (unsigned long long)s->sent_during_dump);
	}
	if (since_ns > 0) {
		uint64_t rate = pages_bytes * 1000000000ULL / since_ns;
		tern_jw_u64(&w, "dirty_rate", rate);
		snprintf(rate_text, sizeof(rate_text), "; dirtied at %.1f MiB/s since round %d",
			 (double)rate / 1048576.0, s->last_round);
	} else {
		tern_jw_null(&w, "dirty_rate");
	}
	if (round > 0)
		tern_mig_event(&s->p, "phase", &w,
			       "memory round %d (running): %llu pages, %llu bytes of pages, %llu "
			       "sent%s",
			       round, (unsigned long long)pages, (unsigned long long)pages_bytes,
			       (unsigned long long)sent, rate_text);
	else
		tern_mig_event(&s->p, "phase", &w,
			       "images sent: %llu bytes (%llu pages, %llu bytes of pages)%s%s",
			       (unsigned long long)sent, (unsigned long long)pages,
			       (unsigned long long)pages_bytes, during_text, rate_text);
}

/* Memory rounds while the container runs: each a criu pre-dump of the
 * pages dirtied since the last (soft-dirty), sent as images/pre-N. They
 * stop when a round is no smaller than the one before (the container
 * dirties memory as fast as it is copied) or after --max-rounds; the final
 * dump, frozen, then holds only what changed since the last. *rounds: how
 * many were sent. */
static int precopy_rounds(source *s, int *rounds, tern_error **err)
{
	uint64_t last = UINT64_MAX;
	int max = s->o->max_rounds > 0 ? s->o->max_rounds : 1;

	*rounds = 0;
	for (int r = 1; r <= max; r++) {
		cleanup_free char *dir = tern_strdup_printf("%s/pre-%d", s->images, r);
		cleanup_free char *rel = tern_strdup_printf("pre-%d", r);
		cleanup_free char *parent = r > 1 ? tern_strdup_printf("../pre-%d", r - 1) : NULL;
		uint64_t sent = 0, bytes;
		int ret;

		if (mkdir(dir, 0700) < 0)
			return tern_error_make(err, errno, "`%s`", dir);
		ret = start_dump(s, dir, parent, true, err);
		if (ret == 0)
			ret = wait_dump(s, err);
		s->dump_pid = 0;
		if (ret < 0)
			return tern_error_wrap(err, "pre-copy round %d", r);
		bytes = tern_mig_pages_bytes(dir);
		ret = tern_mig_images_send_dir(s->c, dir, rel, &sent, err);
		if (ret < 0)
			return ret;
		s->image_bytes += sent;
		*rounds = r;
		memory_event(s, r, bytes, sent, r > 1 ? s->t_dump - s->t_last_round : 0);
		s->t_last_round = s->t_dump;
		s->last_round = r;
		if (bytes >= last)
			break; /* not converging: the rest goes frozen */
		last = bytes;
	}
	return 0;
}

/* ---- the frozen dump's pages, sent while criu writes them ---- */

/* criu writes each page image (pages-N.img) front to back, and a reader
 * sees no byte beyond the file's size before it is written. So what is
 * there is sent while criu writes the rest: the copy overlaps the dump
 * instead of following it, which matters most when the memory is large.
 * A part is IMAGE_FILE {name, size, part: true} and its IMAGE_DATA, which
 * the target appends; the last part goes once criu has exited, then the
 * other images. */
#define STREAM_FILES_MAX TERN_MIG_PARTS_MAX /* more go whole, after */
#define STREAM_PART_MIN	 (4u << 20)	    /* smaller parts wait (but the last) */

typedef struct {
	char *names[STREAM_FILES_MAX + 1]; /* NULL-terminated: the skip list */
	int fds[STREAM_FILES_MAX];
	uint64_t sent[STREAM_FILES_MAX];
	size_t n;
} page_stream;

static bool is_page_image(const char *name)
{
	size_t len = strlen(name);

	return strncmp(name, "pages-", 6) == 0 && len > 10 && strcmp(name + len - 4, ".img") == 0;
}

static void page_stream_free(page_stream *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->names[i]);
		close(ps->fds[i]);
	}
	ps->n = 0;
}

/* Send what criu added to its page images since the last call; `last`
 * (criu has exited): all of it, however little. */
static int page_stream_send(source *s, page_stream *ps, bool last, uint64_t *bytes,
			    tern_error **err)
{
	DIR *d = opendir(s->images);
	struct dirent *e;

	if (d == NULL)
		return tern_error_make(err, errno, "images `%s`", s->images);
	while ((e = readdir(d)) != NULL && ps->n < STREAM_FILES_MAX) {
		bool known = false;
		if (e->d_type != DT_REG || !is_page_image(e->d_name))
			continue;
		for (size_t i = 0; i < ps->n && !known; i++)
			known = strcmp(ps->names[i], e->d_name) == 0;
		if (known)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			/* before closedir: e lives in d's buffer */
			int ret = tern_error_make(err, errno, "image `%s/%s`", s->images, e->d_name);
			closedir(d);
			return ret;
		}
		ps->fds[ps->n] = fd;
		ps->sent[ps->n] = 0;
		ps->names[ps->n++] = tern_xstrdup(e->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < ps->n; i++) {
		struct stat st;
		if (fstat(ps->fds[i], &st) < 0)
			return tern_error_make(err, errno, "image `%s`", ps->names[i]);
		uint64_t size = (uint64_t)st.st_size;
		if (size <= ps->sent[i] || (!last && size - ps->sent[i] < STREAM_PART_MIN))
			continue;
		uint64_t part = size - ps->sent[i];
		tern_jw w;
		tern_jw_begin(&w);
		tern_jw_str(&w, "name", ps->names[i]);
		tern_jw_u64(&w, "size", part);
		tern_jw_bool(&w, "part", true);
		cleanup_free char *msg = tern_jw_end(&w);
		int ret = tern_mchan_send(s->c, TERN_MSG_IMAGE_FILE, msg, strlen(msg), err);
		/* (the fd's offset is what was sent) */
		if (ret == 0)
			ret = tern_mchan_send_fd(s->c, TERN_MSG_IMAGE_DATA, ps->fds[i], part, err);
		if (ret < 0)
			return tern_error_wrap(err, "send image `%s`", ps->names[i]);
		ps->sent[i] = size;
		*bytes += part;
	}
	return 0;
}

/* Wait for the frozen dump, sending its pages meanwhile. */
static int dump_streaming(source *s, page_stream *ps, uint64_t *bytes, tern_error **err)
{
	struct pollfd pfd = {.fd = s->dump_errfd, .events = POLLIN};
	int ret = 0;

	/* the pipe is readable once the child has exited (or wrote why) */
	for (;;) {
		int r = poll(&pfd, 1, 10);
		if (r > 0 || dump_left_ms(s) == 0)
			break; /* (past the bound: wait_dump kills it) */
		if (r < 0 && errno != EINTR)
			return tern_error_make(err, errno, "poll");
		ret = page_stream_send(s, ps, false, bytes, err);
		if (ret < 0)
			return ret; /* (roll_back waits for the dump) */
	}
	s->sent_during_dump = *bytes;
	ret = wait_dump(s, err);
	if (ret == 0)
		ret = page_stream_send(s, ps, true, bytes, err);
	return ret;
}

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
	hang_up_page_server(s->page_ip, s->page_port);
	unlock_net(s);
	if (tern_container_resume(s->env->rt, s->o->id, &e) < 0)
		_exit(1);
	/* criu writes its last files (stats, log) after it let go of the
	 * container: the work directory goes once the dump's group is gone
	 * (never killed: a dump that lets go leaves the container whole) */
	tern_mig_groups_gone(groups, ngroups, false, 60000);
	/* (in the state directory, whose removal goes one level deep only) */
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
	/* the commit point: the target owns the container from here */
	s->committed = true;
	stop_watchdog(s, 'C');
	s->t_running = tern_mig_now_ns();
	/* the downtime ended when it ran on the target, which may be before
	 * RUNNING (the memory filled from the images: migrate-target.c);
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

static int run(source *s, tern_error **err)
{
	unsigned char *token = NULL;
	size_t token_len;
	bool post_copy = false, pre_copy = false;
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
		ret = load(s, err);
	if (ret == 0)
		ret = take_lock(s, err);
	if (ret == 0)
		ret = check_tcp(s, err);
	if (ret == 0)
		ret = check_stdio(s, err);
	if (ret == 0)
		ret = choose_features(s, &post_copy, &pre_copy, err);
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
	ret = offer(s, post_copy, pre_copy, err);
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
	ret = rootfs_round(s, rs, 1, err);
	if (ret == 0)
		ret = make_work(s, err);
	/* pre-copy: the memory rounds, then an IMAGES_DONE that ends them */
	int rounds = 0;
	if (ret == 0 && s->mode == TERN_MIG_PRE_COPY) {
		ret = precopy_rounds(s, &rounds, err);
		if (ret == 0)
			ret = tern_mchan_send(s->c, TERN_MSG_IMAGES_DONE, NULL, 0, err);
	}
	if (ret == 0 && s->mode == TERN_MIG_POST_COPY)
		ret = prepare_tls(s, err);
	cleanup_free char *parent = rounds ? tern_strdup_printf("pre-%d", rounds) : NULL;

	if (ret == 0)
		ret = start_watchdog(s, err);
	/* downtime from here. With a cgroup v1 freezer: freeze, last rootfs
	 * round, dump (criu leaves a cgroup it found frozen frozen). On v2
	 * criu cannot dump a frozen cgroup (its parasite code cannot run
	 * there): criu stops the tasks itself, and tern freezes the cgroup
	 * while criu still holds them (leave_frozen); the rootfs, which
	 * nothing changed since the tasks stopped, goes after the dump. */
	if (ret == 0 && s->freezer_v1)
		ret = freeze(s, err);
	if (ret == 0 && s->freezer_v1)
		ret = rootfs_round(s, rs, 2, err);
	if (ret == 0 && !s->freezer_v1) {
		s->frozen = true;
		s->t_freeze = tern_mig_now_ns();
	}
	if (ret == 0)
		ret = start_dump(s, s->images, parent, false, err);
	/* with a v1 freezer the target waits for the images already; on v2
	 * the last rootfs round comes first (see above) */
	page_stream ps = {.n = 0};
	uint64_t frozen_bytes = 0;
	if (ret == 0 && s->mode == TERN_MIG_POST_COPY) {
		ret = wait_lazy_ready(s, err);
	} else if (ret == 0 && s->freezer_v1) {
		ret = dump_streaming(s, &ps, &frozen_bytes, err);
	} else if (ret == 0) {
		ret = wait_dump(s, err);
	}
	if (ret == 0 && !s->freezer_v1) {
		tern_jw fw;
		tern_jw_begin(&fw);
		tern_jw_str(&fw, "phase", "freeze");
		tern_mig_event(&s->p, "phase", &fw, "frozen `%s` (by criu, then its cgroup)",
			       s->o->id);
		ret = rootfs_round(s, rs, 2, err);
	}
	tern_rootfs_sender_free(rs);
	if (ret < 0) {
		page_stream_free(&ps);
		return ret;
	}
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "dumped");
	bool netns_new = tern_ckpt_netns_left_out(s->images);
	tern_jw_bool(&w, "netns_new", netns_new);
	tern_mig_event(&s->p, "phase", &w, "criu dump done%s%s",
		       s->mode == TERN_MIG_POST_COPY ? " (memory stays here, served lazily)" : "",
		       netns_new ? "; its network namespace held only lo: a new one there" : "");
	ret = tern_mig_images_send(s->c, s->images, (const char *const *)ps.names, true,
				   &frozen_bytes, err);
	page_stream_free(&ps);
	if (ret < 0)
		return ret;
	s->image_bytes += frozen_bytes;
	/* pre-copy: the frozen dump holds what was dirtied since the last
	 * round */
	memory_event(s, 0, tern_mig_pages_bytes(s->images), frozen_bytes,
		     rounds ? s->t_dump - s->t_last_round : 0);
	if (s->mode == TERN_MIG_POST_COPY) {
		ret = send_page_server(s, err);
		if (ret < 0)
			return ret;
	}
	return wait_running(s, err);
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
			    "`%s` is left frozen with the memory as it was at the freeze: check "
			    "the target, then `tern resume %s` (if the target's copy is gone) or "
			    "`tern delete --force %s`",
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
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	bool paused;

	if (tern_container_peek(s->env->rt, s->o->id, &dir, &st, NULL) < 0)
		return false;
	paused = strcmp(st->status, "paused") == 0;
	oci_state_free(st);
	return paused;
}

/* Before RUNNING: the source keeps the container, running. */
static void roll_back(source *s, tern_error *why)
{
	tern_error *e = NULL;

	if (s->c)
		tern_mchan_send_error(s->c, why);
	abort_dump(s);
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
	return ret;
}
