/* tern migrate, the source side before the downtime: what must hold
 * before anything changes (the lock, established connections, stdio,
 * the modes this node can do), the OFFER the target accepts, and the
 * rootfs rounds. Stages of migrate-source.c's run. */
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

#define MIGRATE_LOCK "migrate.lock"

/* ---- checks before anything changes ---- */

int source_take_lock(source *s, tern_error **err)
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
int source_check_tcp(source *s, tern_error **err)
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
int source_check_stdio(source *s, tern_error **err)
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

int source_load(source *s, tern_error **err)
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
	/* (before the lock and the connection: a refusal changes nothing) */
	ret = source_snapshots_check(s, err);
	if (ret < 0)
		goto out;
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
int source_choose_features(source *s, bool *post_copy, bool *pre_copy, tern_error **err)
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
	if (why)
		snprintf(s->no_post_copy, sizeof(s->no_post_copy), "%s", why->msg);
	tern_error_free(why);
	return 0;
}

/* ---- the conversation ---- */

int source_offer(source *s, bool post_copy, bool pre_copy, tern_error **err)
{
	cleanup_free char *msg = NULL, *reply = NULL;
	size_t len;
	yajl_val v = NULL;
	tern_jw w;
	int ret;

	ret = source_snapshots_lock(s, err);
	if (ret < 0)
		return ret;
	tern_jw_begin(&w);
	tern_jw_str(&w, "id", s->o->id);
	tern_jw_str(&w, "mode", tern_mig_mode_name(s->o->mode));
	tern_jw_str(&w, "config", s->config_json);
	tern_jw_u64(&w, "memory_bytes", s->memory_bytes);
	tern_jw_bool(&w, "tcp_established", s->o->tcp_established);
	tern_jw_bool(&w, "post_copy", post_copy);
	tern_jw_bool(&w, "pre_copy", pre_copy);
	tern_jw_u64(&w, "snapshots", source_snapshots_count(s));
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
	bool takes_snapshots = tern_mig_json_bool(v, "snapshots");
	/* the target's half of why --mode auto got no post-copy, where this
	 * side could have served it */
	const char *target_why = tern_mig_json_str(v, "not_post_copy");
	if (!s->no_post_copy[0] && target_why)
		snprintf(s->no_post_copy, sizeof(s->no_post_copy), "%s", target_why);
	yajl_tree_free(v);
	/* --mode auto that could not have post-copy: say why (the reason
	 * --mode post-copy fails with) */
	bool fell_back =
	    s->o->mode == TERN_MIG_AUTO && s->mode == TERN_MIG_STOP_AND_COPY && s->no_post_copy[0];
	tern_jw_begin(&w);
	tern_jw_str(&w, "mode", tern_mig_mode_name(s->mode));
	tern_jw_str(&w, "target_id", s->target_id);
	if (fell_back)
		tern_jw_str(&w, "not_post_copy", s->no_post_copy);
	else
		tern_jw_null(&w, "not_post_copy");
	tern_mig_event(&s->p, "accepted", &w, "target accepted `%s` as `%s`, mode %s%s%s", s->o->id,
		       s->target_id, tern_mig_mode_name(s->mode),
		       fell_back ? ", not post-copy: " : "", fell_back ? s->no_post_copy : "");
	return source_snapshots_send(s, takes_snapshots, err);
}

static int rootfs_write(void *data, const void *buf, size_t len, tern_error **err)
{
	return tern_mchan_send(data, TERN_MSG_ROOTFS_DATA, buf, len, err);
}

int source_rootfs_round(source *s, tern_rootfs_sender *rs, int round, tern_error **err)
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
