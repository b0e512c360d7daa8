/* tern migrate, the source side's criu: the dumps (with the watchdog's
 * process groups and --criu-timeout), post-copy's page server, pre-copy's
 * memory rounds, and the frozen dump's pages sent while criu still
 * writes them. Stages of migrate-source.c's run. */
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

int source_prepare_tls(source *s, tern_error **err)
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

int source_start_dump(source *s, const char *images, const char *parent, bool pre_dump,
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
	/* the frozen dump, whose pages are written while the container
	 * waits: said as it goes (a lazy dump writes no pages, a pre-dump
	 * runs beside the container) */
	s->dump_progress = !pre_dump && s->mode != TERN_MIG_POST_COPY;
	if (s->dump_progress)
		tern_dump_progress_init(&s->dprog, images, s->t_dump);
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
	 * (exec'd) does not need it: checkpoint-dump.c writes it */
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
int source_wait_dump(source *s, tern_error **err)
{
	cleanup_free char *what = tern_strdup_printf("criu dump of `%s`", s->o->id);
	struct pollfd pfd = {.fd = s->dump_errfd, .events = POLLIN};

	/* the frozen dump's progress until the child ends (its pipe is
	 * readable then) or the bound has passed (then it is killed below) */
	while (s->dump_progress && dump_left_ms(s) > 0) {
		int wait = tern_dump_progress_wait_ms(&s->dprog);
		int r = poll(&pfd, 1, wait < dump_left_ms(s) ? wait : dump_left_ms(s));
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		tern_dump_progress_tick(&s->dprog, &s->p);
	}
	int ret = tern_mig_child_wait_or_kill(s->dump_pid, s->dump_errfd, dump_left_ms(s),
					      s->o->criu_timeout_ms, what, err);

	s->dump_pid = 0;
	s->dump_ns = tern_mig_now_ns() - s->t_dump;
	if (ret == 0 && s->dump_progress)
		tern_dump_progress_end(&s->dprog, &s->p);
	s->dump_progress = false;
	if (ret == -ETIMEDOUT)
		s->criu_killed = true;
	return ret;
}

/* Post-copy: wait until the images are written and criu's page server
 * listens (a byte on the status pipe), or the dump failed. */
int source_wait_lazy_ready(source *s, tern_error **err)
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

void source_hang_up_page_server(const char *ip, int port)
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
void source_abort_dump(source *s)
{
	tern_error *ignored = NULL;

	if (s->dump_pid <= 0)
		return;
	source_hang_up_page_server(s->page_ip, s->page_port);
	if (tern_mig_child_wait(s->dump_pid, s->dump_errfd, 20000, &ignored) == -ETIMEDOUT) {
		/* criu is in the child's process group */
		kill(-s->dump_pid, SIGKILL);
		kill(s->dump_pid, SIGKILL);
		tern_mig_child_wait(s->dump_pid, s->dump_errfd, -1, &ignored);
	}
	tern_error_free(ignored);
	s->dump_pid = 0;
}

int source_send_page_server(source *s, tern_error **err)
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
void source_memory_event(source *s, int round, uint64_t pages_bytes, uint64_t sent,
			 uint64_t since_ns)
{
	uint64_t pages = pages_bytes / tern_mig_page_size();
	char rate_text[64] = "", during_text[96] = "";
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", round > 0 ? "memory" : "images");
	if (round > 0)
		tern_jw_u64(&w, "round", (uint64_t)round);
	tern_jw_u64(&w, "pages", pages);
	tern_jw_u64(&w, "pages_bytes", pages_bytes);
	tern_jw_u64(&w, "bytes", sent);
	if (round == 0 && s->mode != TERN_MIG_POST_COPY) {
		tern_jw_u64(&w, "dump_ms", s->dump_ns / 1000000);
		tern_jw_u64(&w, "sent_during_dump", s->sent_during_dump);
		snprintf(during_text, sizeof(during_text), "; %llu while criu dumped (for %llu ms)",
			 (unsigned long long)s->sent_during_dump,
			 (unsigned long long)(s->dump_ns / 1000000));
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
int source_precopy_rounds(source *s, int *rounds, tern_error **err)
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
		ret = source_start_dump(s, dir, parent, true, err);
		if (ret == 0)
			ret = source_wait_dump(s, err);
		s->dump_pid = 0;
		if (ret < 0)
			return tern_error_wrap(err, "pre-copy round %d", r);
		bytes = tern_mig_pages_bytes(dir);
		ret = tern_mig_images_send_dir(s->c, dir, rel, &sent, err);
		if (ret < 0)
			return ret;
		s->image_bytes += sent;
		*rounds = r;
		source_memory_event(s, r, bytes, sent, r > 1 ? s->t_dump - s->t_last_round : 0);
		s->t_last_round = s->t_dump;
		s->last_round = r;
		if (bytes >= last)
			break; /* not converging: the rest goes frozen */
		last = bytes;
	}
	return 0;
}

/* ---- the frozen dump's pages, sent while criu writes them ----
 * (how, and the page_stream: migrate-source-internal.h) */

static bool is_page_image(const char *name)
{
	size_t len = strlen(name);

	return strncmp(name, "pages-", 6) == 0 && len > 10 && strcmp(name + len - 4, ".img") == 0;
}

void source_page_stream_free(page_stream *ps)
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
			int ret =
			    tern_error_make(err, errno, "image `%s/%s`", s->images, e->d_name);
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
int source_dump_streaming(source *s, page_stream *ps, uint64_t *bytes, tern_error **err)
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
		/* (after the send, which may have taken long: said even if the
		 * dump ended meanwhile) */
		if (s->dump_progress)
			tern_dump_progress_tick(&s->dprog, &s->p);
	}
	s->sent_during_dump = *bytes;
	ret = source_wait_dump(s, err);
	if (ret == 0)
		ret = page_stream_send(s, ps, true, bytes, err);
	return ret;
}
