/* Warm spares: a rollback in milliseconds (`tern snapshot --keep-warm`,
 * `tern rollback --keep-warm`).
 *
 * A cold rollback is a criu restore, ~100-250 ms of criu's own work however
 * little memory there is. A warm spare is that restore done ahead of time:
 * the snapshot's processes restored and held frozen, in a cgroup of their
 * own, in the container's network namespace (or, for a container with a
 * user namespace of its own, in one of their own restored from the images:
 * snapshot-rollback.c says why) and with its stdio, until a rollback to
 * that snapshot swaps them in:
 *
 *   freeze the container's cgroup; SIGKILL its processes (the signal
 *   waits for the thaw); move the spare's processes in (frozen they stay
 *   frozen) and the old ones out into the spare's frozen cgroup; thaw.
 *
 * The old processes then die outside the downtime; a child in the
 * background (the next spare's builder, if any) waits for that and removes
 * their cgroup and the overlay they ran on (the reap).
 *
 * The spare never runs before the swap: the restore freezes its cgroup at
 * criu's pre-resume point, while criu still holds the tasks
 * (checkpoint.h, freeze_at_resume), and its memory is filled from the
 * images (lazy pages) before it counts as ready.
 *
 * Its root is an overlay of the snapshot's tree/ (which does not change)
 * under an upper layer of its own: criu reopens the files the processes
 * had open, and those must be the snapshot's, whatever the live container
 * has done to its rootfs since. After the swap the container runs on that
 * overlay; tern binds it over the container's rootfs path on the host, so
 * that the host sees the container's files where it always did (podman cp,
 * tern snapshot, tern migrate). At `delete` tern copies what the overlay
 * holds down into the bundle's own rootfs (rootfs-sync.h, as a migration
 * would), so that the bundle ends as the container left it, and unmounts.
 *
 * In the store (ROOT/@snapshots/ID/, snapshot.h):
 *   .warm.lock          flock: held while a spare is built, swapped in or
 *                       torn down (after the store's own lock, if both)
 *   .spare/             the spare: name (the snapshot it is of), ready
 *                       (once frozen and filled) or error (why it is not),
 *                       bundle/ (config.json, rootfs/ = the overlay,
 *                       .upper/, .work/), root/ (the --root its state is
 *                       kept under, with the container's id), restore.log
 *   .live/              after a warm rollback: the spare the container now
 *                       runs on (same layout); its name's snapshot cannot be
 *                       deleted while it is there
 *   .under/ .under-path a bind of the bundle's own rootfs (private), made at
 *                       the first swap, before tern's over-mount hid it; the
 *                       path of that rootfs
 *   .live-old/ .reap    what a swap left for the reap: the overlay before,
 *                       and the cgroup ("hierarchy<TAB>path" lines) its old
 *                       processes die in
 *
 * Limits: one spare per container; it holds a second copy of the memory
 * (charged to its own cgroup, `<cgroupsPath>.warm`; the pages it filled
 * stay charged there, then to the parent, after the swap); no terminal
 * (its pty would go to the console socket when the spare is made); the
 * cgroupfs driver only; a port the container listens on (criu binds the
 * spare's socket beside the live one with SO_REUSEPORT, or fails to: the
 * frozen spare would take connections). A spare that cannot be made says
 * why (.spare/error) and the rollback is a cold one.
 *
 * Owns the warm spare's part of the store and its builder
 * (snapshot-warm.h). Uses snapshot-store and snapshot-container only;
 * take, rollback, list and delete, and clone spares (a spare's runtime)
 * use it (the order is in snapshot-store.h). */
#include "cgroup.h"
#include "checkpoint.h"
#include "log.h"
#include "memory-merge.h"
#include "checkpoint-userns.h"
#include "restore-userns.h"
#include "snapshot-container.h"
#include "snapshot-store.h"
#include "snapshot-warm.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef OVERLAYFS_SUPER_MAGIC
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#endif

#define WARM_LOCK  ".warm.lock"
#define SPARE_DIR  ".spare"
#define LIVE_DIR   ".live"
#define UNDER_DIR  ".under"
#define UNDER_PATH ".under-path"
#define LIVE_OLD   ".live-old"
#define REAP_FILE  ".reap"

/* ---- the lock ---- */

int tern_snap_warm_lock(const char *store, bool create, int timeout_ms, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/" WARM_LOCK, store);
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);

	if (fd < 0 && errno == ENOENT && !create)
		return -ENOENT;
	if (fd < 0)
		return tern_error_make(err, errno, "`%s`", path);
	for (int waited = 0;; waited += 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if (errno != EWOULDBLOCK || waited >= timeout_ms) {
			int e = errno == EWOULDBLOCK ? ETIMEDOUT : errno;
			close(fd);
			return tern_error_make_quiet(err, e,
						     "`%s`: a warm spare is still being made (held "
						     "over %d ms)",
						     path, timeout_ms);
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* ---- small helpers ---- */

static char *read_small(const char *dir, const char *name)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, name);
	char *data = NULL;
	size_t len;

	if (tern_read_file(path, &data, &len, 4096, NULL) < 0)
		return NULL;
	while (len > 0 && data[len - 1] == '\n')
		data[--len] = '\0';
	return data;
}

static void write_small(const char *dir, const char *name, const char *text)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, name);
	tern_error *e = NULL;

	if (tern_write_file(path, text, strlen(text), 0600, &e) < 0) {
		tern_warn("%s", e->msg);
		tern_error_free(e);
	}
}

tern_runtime tern_snap_spare_runtime(const tern_runtime *rt, const char *spare)
{
	tern_runtime r = *rt;
	r.root = tern_strdup_printf("%s/root", spare);
	return r;
}

void tern_snap_spare_remove(const tern_runtime *rt, const char *id, const char *spare)
{
	tern_runtime r = tern_snap_spare_runtime(rt, spare);
	cleanup_free char *state = tern_strdup_printf("%s/%s", r.root, id);
	tern_error *e = NULL;

	if (access(state, F_OK) == 0 && tern_container_delete(&r, id, true, &e) < 0) {
		tern_warn("spare `%s`: %s", spare, e->msg);
		tern_error_free(e);
	}
	free((char *)r.root);
	/* the spare's directory is its restore's work directory */
	tern_ckpt_userns_yard_reclaim(spare);
	cleanup_free char *bundle = tern_strdup_printf("%s/bundle", spare);
	if (access(bundle, F_OK) == 0)
		tern_snap_overlay_undo(bundle);
	tern_remove_tree(spare);
}

const char *tern_snap_warm_status(const char *store, const char *name)
{
	cleanup_free char *spare = tern_strdup_printf("%s/" SPARE_DIR, store);
	cleanup_free char *of = read_small(spare, "name");

	if (of == NULL || strcmp(of, name) != 0)
		return NULL;
	cleanup_free char *ready = tern_strdup_printf("%s/ready", spare);
	cleanup_free char *error = tern_strdup_printf("%s/error", spare);
	if (access(ready, F_OK) == 0)
		return "ready";
	if (access(error, F_OK) == 0)
		return "failed";
	/* neither, and nobody holds the lock: its builder died */
	cleanup_free char *lock = tern_strdup_printf("%s/" WARM_LOCK, store);
	cleanup_close int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) == 0)
		return "failed";
	return "building";
}

bool tern_snap_warm_ready(const char *store, const char *name)
{
	const char *st = tern_snap_warm_status(store, name);
	return st && strcmp(st, "ready") == 0;
}

const char *tern_snap_warm_live_name(const char *store, char **buf)
{
	cleanup_free char *live = tern_strdup_printf("%s/" LIVE_DIR, store);
	*buf = read_small(live, "name");
	return *buf;
}

int tern_snap_warm_discard(const tern_runtime *rt, const char *store, const char *id,
			   const char *name)
{
	cleanup_free char *spare = tern_strdup_printf("%s/" SPARE_DIR, store);
	cleanup_free char *of = read_small(spare, "name");

	if (access(spare, F_OK) < 0 || (name && (of == NULL || strcmp(of, name) != 0)))
		return 0;
	tern_snap_spare_remove(rt, id, spare);
	return 1;
}

/* ---- the reap after a swap ---- */

/* The cgroup the old processes die in after a swap (the spare's), one
 * "hierarchy<TAB>path" line each, for the reap. */
static void write_reap(const char *store, const oci_map *paths)
{
	cleanup_free char *text = tern_xstrdup("");
	for (size_t i = 0; i < paths->len; i++) {
		char *more = tern_strdup_printf("%s%s\t%s\n", text, paths->items[i].key,
						paths->items[i].value);
		free(text);
		text = more;
	}
	write_small(store, REAP_FILE, text);
}

/* What a swap left to do: its old processes dead and their cgroup gone
 * (destroy kills what is left and waits), then the overlay they ran on.
 * With the warm lock held. */
void tern_snap_warm_reap(const char *store)
{
	cleanup_free char *text = read_small(store, REAP_FILE);
	cleanup_free char *old = tern_strdup_printf("%s/" LIVE_OLD, store);
	oci_map paths = {0};

	for (char *save = NULL, *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		if (tab == NULL)
			continue;
		*tab = '\0';
		paths.items = realloc(paths.items, (paths.len + 1) * sizeof(*paths.items));
		if (paths.items == NULL)
			abort();
		paths.items[paths.len].key = tern_xstrdup(line);
		paths.items[paths.len++].value = tern_xstrdup(tab + 1);
	}
	if (paths.len)
		tern_cgroup_destroy(&paths, NULL);
	oci_map_clear(&paths);
	if (access(old, F_OK) == 0) {
		cleanup_free char *bundle = tern_strdup_printf("%s/bundle", old);
		tern_snap_overlay_undo(bundle);
		tern_remove_tree(old);
	}
	cleanup_free char *f = tern_strdup_printf("%s/" REAP_FILE, store);
	unlink(f);
}

/* ---- building a spare ---- */

typedef struct {
	const tern_runtime *main_rt; /* the caller's: the container's --root */
	const char *criu;
	const char *store;
	const char *id;
	const char *name;
	char *spare;
	int netns_fd;
	int stdio[3];
	bool merge_memory; /* the live processes are marked (memory-merge.h) */
	/* a user namespace of the container's own: the spare gets a network
	 * namespace of its own, restored from the images (snapshot-rollback.c
	 * says why), where its sockets are apart from the live ones */
	bool netns_in_images;
	bool userns_paths; /* the spare's paths are searchable by its root */
} build_ctx;

static void delete_spare_container(void *data)
{
	build_ctx *b = data;
	tern_runtime r = tern_snap_spare_runtime(b->main_rt, b->spare);
	tern_error *e = NULL;

	if (tern_container_delete(&r, b->id, true, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "%s", e->msg);
		tern_error_free(e);
	}
	free((char *)r.root);
}

/* What the spare takes from the live container: its network namespace
 * (where the snapshot left it out, as a cold rollback does) and its init's
 * outside stdio, through a pidfd checked against the init's start time. */
static int take_from_live(build_ctx *b, const oci_config *config, const char *images,
			  tern_error **err)
{
	tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = tern_container_peek(b->main_rt, b->id, &dir, &st, err);

	if (ret < 0)
		return ret;
	if (strcmp(st->status, "running") != 0) {
		ret = tern_error_make_quiet(err, EINVAL, "container `%s` is %s, not running",
					    b->id, st->status);
		goto out;
	}
	if (st->systemd_cgroup) {
		ret = tern_error_make_quiet(err, ENOTSUP,
					    "container `%s` uses the systemd cgroup driver: a warm "
					    "spare needs a cgroup of its own beside the scope, which "
					    "tern does not make",
					    b->id);
		goto out;
	}
	int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	if (pidfd < 0 || tern_process_start_time(st->pid) != st->pid_start_time) {
		ret = tern_error_make_quiet(err, ESRCH, "the init of `%s` is gone", b->id);
		if (pidfd >= 0)
			close(pidfd);
		goto out;
	}
	/* criu reopens a stdio file as the container's root */
	ret = tern_ckpt_stdio_check_userns(images, st->pid, config, err);
	if (ret < 0) {
		close(pidfd);
		goto out;
	}
	tern_ckpt_take_stdio(images, pidfd, st->pid, b->stdio);
	b->merge_memory = tern_memory_merge_is_marked(st->pid);
	if (tern_snap_own_netns(config) && tern_ckpt_netns_left_out(images)) {
		cleanup_free char *ns = tern_strdup_printf("/proc/%d/ns/net", st->pid);
		b->netns_fd = open(ns, O_RDONLY | O_CLOEXEC);
		if (b->netns_fd < 0)
			ret = tern_error_make(err, errno, "the network namespace `%s`", ns);
	}
	/* all taken from the init the pidfd named, not from a recycled pid */
	if (ret == 0 && tern_process_start_time(st->pid) != st->pid_start_time)
		ret = tern_error_make_quiet(err, ESRCH, "the init of `%s` is gone", b->id);
	close(pidfd);
out:
	oci_state_free(st);
	tern_state_dir_free(dir);
	return ret;
}

/* A socket inode of `pid`'s fds is in `set` (n entries) */
static void socket_inodes(pid_t pid, unsigned long **set, size_t *n)
{
	cleanup_free char *fds = tern_strdup_printf("/proc/%d/fd", pid);
	DIR *d = opendir(fds);

	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		char link[64];
		cleanup_free char *f = tern_strdup_printf("%s/%s", fds, e->d_name);
		ssize_t len = readlink(f, link, sizeof(link) - 1);
		unsigned long ino;
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		*set = realloc(*set, (*n + 1) * sizeof(**set));
		if (*set == NULL)
			abort();
		(*set)[(*n)++] = ino;
	}
	if (d)
		closedir(d);
}

/* The first port one of `set`'s sockets listens on (TCP) or is bound to
 * (UDP), in the network namespace `pid` is in; *proto names which. */
static unsigned port_in_use(pid_t pid, const unsigned long *set, size_t n, const char **proto)
{
	static const char *const tables[] = {"tcp", "tcp6", "udp", "udp6"};

	for (size_t t = 0; t < 4; t++) {
		cleanup_free char *path = tern_strdup_printf("/proc/%d/net/%s", pid, tables[t]);
		FILE *f = fopen(path, "re");
		char line[512];
		bool tcp = t < 2;
		while (f && fgets(line, sizeof(line), f)) {
			char local[128], state[8];
			unsigned long ino;
			unsigned port;
			if (sscanf(line, " %*s %127s %*s %7s %*s %*s %*s %*s %*s %lu", local, state,
				   &ino) != 3)
				continue;
			char *colon = strrchr(local, ':');
			if (colon == NULL || sscanf(colon + 1, "%x", &port) != 1 || port == 0)
				continue;
			if (tcp && strcmp(state, "0A") != 0)
				continue;
			for (size_t i = 0; i < n; i++) {
				if (set[i] == ino) {
					fclose(f);
					*proto = tcp ? "TCP" : "UDP";
					return port;
				}
			}
		}
		if (f)
			fclose(f);
	}
	return 0;
}

/* criu binds the spare's sockets with SO_REUSEPORT, and a port the live
 * container listens on can then be bound twice (the live one restored by
 * criu keeps SO_REUSEPORT): the frozen spare would take a share of the
 * connections. Such a spare is refused. */
static int check_no_port(build_ctx *b, tern_error **err)
{
	tern_runtime r = tern_snap_spare_runtime(b->main_rt, b->spare);
	tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	unsigned long *set = NULL;
	pid_t *pids = NULL;
	size_t n = 0, ns = 0;
	const char *proto = NULL;
	int ret = tern_container_peek(&r, b->id, &dir, &st, err);

	if (ret == 0)
		ret = tern_cgroup_pids(&st->cgroup_paths, &pids, &n, err);
	for (size_t i = 0; ret == 0 && i < n; i++)
		socket_inodes(pids[i], &set, &ns);
	unsigned port = ret == 0 && ns ? port_in_use(st->pid, set, ns, &proto) : 0;
	if (port)
		ret = tern_error_make_quiet(err, EADDRINUSE,
					    "the spare would hold %s port %u in the container's "
					    "network namespace beside the container's own socket, and "
					    "take a share of what comes in while frozen: no warm spare "
					    "for a container that listens on a port",
					    proto, port);
	free(set);
	free(pids);
	oci_state_free(st);
	tern_state_dir_free(dir);
	free((char *)r.root);
	return ret;
}

/* What a spare of a container with a user namespace of its own needs
 * (snapshot-rollback.c has the cold way's reasons): the network namespace
 * in the images, no veth to the host (the live one cannot be the spare's
 * too: only a cold rollback hands it over), and the
 * images open to the container's root. */
static int check_userns(build_ctx *b, const oci_config *config, const char *images,
			tern_error **err)
{
	const oci_namespace *net = NULL;
	cleanup_strv char **veths = NULL;
	bool in_images = false;
	int ret;

	if (!tern_snap_own_ns(config, OCI_NS_USER))
		return 0;
	for (size_t i = 0; config->linux_ && i < config->linux_->namespaces_len; i++)
		if (config->linux_->namespaces[i].type == OCI_NS_NETWORK)
			net = &config->linux_->namespaces[i];
	if (net && net->path)
		return tern_error_make_quiet(err, ENOTSUP,
					     "container `%s` has a user namespace of its own and "
					     "joins the network namespace `%s` by path, which "
					     "criu cannot restore processes of a new user "
					     "namespace into",
					     b->id, net->path);
	if (net) {
		ret = tern_ckpt_netns_in_images(images, &in_images, &veths, err);
		if (ret < 0)
			return ret;
		if (!in_images)
			return tern_error_make_quiet(err, ENOTSUP,
						     "the snapshot left the network namespace of "
						     "`%s` out of its images (an older tern's)",
						     b->id);
		if (veths)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "container `%s` has a user namespace of its own and a veth to the "
			    "host (`%s`): the spare would need a network namespace of its own "
			    "with that veth in it while the container has it; a rollback "
			    "hands it over the cold way",
			    b->id, strchr(veths[0], ' ') + 1);
		b->netns_in_images = true;
	}
	ret = tern_ckpt_images_for_userns(images, err);
	if (ret < 0)
		return tern_error_wrap(err, "snapshot `%s` of `%s`", b->name, b->id);
	/* criu opens what the spare's state directory holds (the masked
	 * tmpfs) by its path as the container's root: the directories on the
	 * way there searchable, not readable (the snapshots in the store stay
	 * 0700) */
	cleanup_free char *up = tern_strdup_printf("%s/..", b->store);
	const char *path[] = {up, b->store, b->spare};
	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		if (stat(path[i], &st) < 0 || chmod(path[i], (st.st_mode & 07777) | 0111) < 0)
			return tern_error_make(err, errno, "`%s`", path[i]);
	}
	b->userns_paths = true;
	return 0;
}

static int build(build_ctx *b, tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", b->store, b->name);
	cleanup_free char *config_path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *lower = tern_strdup_printf("%s/%s/tree", b->store, b->name);
	cleanup_free char *bundle = tern_strdup_printf("%s/bundle", b->spare);
	cleanup_free char *msg = NULL;
	/* (every cleanup variable before the first goto) */
	cleanup_free char *spare_cg = NULL;
	/* criu's logs of a spare that fails: with its container's */
	cleanup_free char *logs_in = tern_strdup_printf("%s/%s", b->main_rt->root, b->id);
	oci_config *config = NULL;
	int ret;

	if (oci_config_parse_file(config_path, &config, &msg) < 0)
		return tern_error_make_quiet(err, EINVAL, "`%s`: %s", config_path, msg);
	if (config->process && config->process->terminal) {
		ret = tern_error_make_quiet(err, ENOTSUP,
					    "container `%s` has a terminal: a spare's pty would go to "
					    "the console socket when the spare is made, not at the "
					    "rollback",
					    b->id);
		goto out;
	}
	if (strpbrk(b->store, ",:")) {
		ret = tern_error_make_quiet(err, EINVAL,
					    "`%s` has a ',' or ':', which an overlay mount cannot take",
					    b->store);
		goto out;
	}
	ret = check_userns(b, config, images, err);
	if (ret < 0)
		goto out;
	ret = take_from_live(b, config, images, err);
	if (ret < 0)
		goto out;
	if (mkdir(bundle, 0711) < 0) {
		ret = tern_error_make(err, errno, "`%s`", bundle);
		goto out;
	}
	ret = tern_snap_overlay_mount(lower, bundle, err);
	if (ret < 0)
		goto out;
	const char *cg = config->linux_ && config->linux_->cgroups_path &&
				 *config->linux_->cgroups_path
			     ? config->linux_->cgroups_path
			     : b->id;
	spare_cg = tern_strdup_printf("%s.warm", cg);
	tern_snap_config_opts cfg = {
	    .cgroups_path = spare_cg, .keep_netns_path = true, .drop_hooks = true};
	ret = tern_snap_write_config(images, bundle, &cfg, err);
	if (ret < 0)
		goto out;

	tern_runtime r2 = tern_snap_spare_runtime(b->main_rt, b->spare);
	ret = tern_mkdir_p(r2.root, b->userns_paths ? 0711 : 0700, err);
	tern_create_opts copts = {.bundle = bundle, .detach = true};
	tern_ckpt_opts co = {
	    .image_path = images,
	    .status_fd = -1,
	    .failure_logs_in = logs_in,
	    .join_netns = b->netns_fd >= 0,
	    .netns_fd = b->netns_fd,
	    .stdio_given = true,
	    .stdio_fds = {b->stdio[0], b->stdio[1], b->stdio[2]},
	    .freeze_at_resume = true,
	    .merge_memory = b->merge_memory,
	};
	tern_snapshot_stats stats = {0};
	if (ret == 0)
		ret = tern_snap_restore(&r2, b->criu, b->id, &copts, &co, images, b->spare,
					delete_spare_container, b, false, &stats, err);
	if (ret == 0)
		ret = b->netns_in_images ? 0 : check_no_port(b, err);
	free((char *)r2.root);
out:
	oci_config_free(config);
	return ret;
}

/* The child that builds the spare (or, without a name, only reaps after a
 * swap): its own session, no fd of the command that started it but the
 * warm lock (the caller's stdout may be a pipe someone reads to its end),
 * its log in the spare's directory. It reaps first: the next spare's
 * cgroup is the one the old processes die in. */
static void build_child(build_ctx *b, int lockfd, int mntns_fd)
{
	tern_error *e = NULL;

	setsid();
	/* the overlay is the host's to see (a rollback has left it for a
	 * mount namespace of its restore's own) */
	if (mntns_fd >= 0 && setns(mntns_fd, CLONE_NEWNS) < 0) {
		write_small(b->spare, "error", "cannot enter the host's mount namespace");
		_exit(1);
	}
	/* the restore moves this process to a mount namespace of its own:
	 * the overlay is undone in this one */
	int host_mnt = open("/proc/self/ns/mnt", O_RDONLY);
	int keep[] = {lockfd, host_mnt};
	tern_close_fds_from(3, keep, 2);
	cleanup_free char *log = b->name ? tern_strdup_printf("%s/build.log", b->spare) : NULL;
	tern_stdio_to_log(log);
	tern_snap_warm_reap(b->store);
	if (b->name == NULL)
		_exit(0);
	if (build(b, &e) < 0) {
		delete_spare_container(b);
		if (host_mnt >= 0 && setns(host_mnt, CLONE_NEWNS) < 0)
			tern_warn("cannot go back to the host's mount namespace: %s", strerror(errno));
		cleanup_free char *bundle = tern_strdup_printf("%s/bundle", b->spare);
		if (access(bundle, F_OK) == 0)
			tern_snap_overlay_undo(bundle);
		write_small(b->spare, "error", e->msg);
		fprintf(stderr, "tern: warm spare of `%s` at `%s`: %s\n", b->id, b->name, e->msg);
		tern_error_free(e);
		_exit(1);
	}
	write_small(b->spare, "ready", "");
	_exit(0);
}

int tern_snap_warm_spawn(const tern_runtime *rt, const char *criu, const char *store,
			 const char *id, const char *name, int lockfd, int mntns_fd,
			 tern_error **err)
{
	build_ctx b = {.main_rt = rt,
		       .criu = criu,
		       .store = store,
		       .id = id,
		       .name = name,
		       .netns_fd = -1,
		       .stdio = {-1, -1, -1}};

	/* one spare: whatever was there goes */
	b.spare = tern_strdup_printf("%s/" SPARE_DIR, store);
	if (name) {
		tern_snap_warm_discard(rt, store, id, NULL);
		if (mkdir(b.spare, 0700) < 0) {
			int ret = tern_error_make(err, errno, "`%s`", b.spare);
			free(b.spare);
			return ret;
		}
		write_small(b.spare, "name", name);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int ret = tern_error_make(err, errno, "fork the warm spare's builder");
		if (name)
			tern_remove_tree(b.spare);
		free(b.spare);
		return ret;
	}
	if (pid == 0)
		build_child(&b, lockfd, mntns_fd);
	free(b.spare);
	return 0;
}

/* ---- the swap ---- */

static int bind_over(const char *from, const char *to, tern_error **err)
{
	if (mount(from, to, NULL, MS_BIND, NULL) < 0)
		return tern_error_make(err, errno, "bind `%s` on `%s`", from, to);
	return 0;
}

/* The host's view: the container's rootfs path shows the overlay it runs
 * on now. The bundle's own rootfs is bound aside first (once). */
static int show_rootfs(const char *store, const char *rootfs, bool had_live, tern_error **err)
{
	cleanup_free char *under = tern_strdup_printf("%s/" UNDER_DIR, store);
	cleanup_free char *merged = tern_strdup_printf("%s/" LIVE_DIR "/bundle/rootfs", store);

	if (!had_live) {
		if (mkdir(under, 0700) < 0 && errno != EEXIST)
			return tern_error_make(err, errno, "`%s`", under);
		int ret = bind_over(rootfs, under, err);
		if (ret < 0)
			return ret;
		/* private: on a shared mount the bind would be a peer of the
		 * rootfs's, and the over-mount below would appear on it too */
		if (mount(NULL, under, NULL, MS_PRIVATE, NULL) < 0)
			return tern_error_make(err, errno, "make `%s` private", under);
		write_small(store, UNDER_PATH, rootfs);
	} else if (umount2(rootfs, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
		return tern_error_make(err, errno, "unmount the old overlay from `%s`", rootfs);
	}
	return bind_over(merged, rootfs, err);
}

int tern_snap_warm_swap(const tern_runtime *rt, const char *store, const char *id,
			tern_container_dir *dir, oci_state *st, tern_snapshot_stats *stats,
			bool *killed, tern_error **err)
{
	cleanup_free char *spare = tern_strdup_printf("%s/" SPARE_DIR, store);
	cleanup_free char *live = tern_strdup_printf("%s/" LIVE_DIR, store);
	/* (every cleanup variable before the first goto) */
	cleanup_free char *sroot = NULL, *ready = NULL, *old = NULL;
	tern_runtime r = tern_snap_spare_runtime(rt, spare);
	tern_container_dir *sdir = NULL;
	oci_state *sst = NULL;
	pid_t *pids = NULL;
	size_t n = 0;
	int ret;

	*killed = false;
	tern_snap_warm_reap(store); /* (left by a reaper that was killed) */
	ret = tern_container_peek(&r, id, &sdir, &sst, err);
	if (ret == 0 && (sst->pid <= 0 || tern_process_start_time(sst->pid) != sst->pid_start_time))
		ret = tern_error_make_quiet(err, ESRCH, "the warm spare's init is gone");
	if (ret == 0)
		ret = tern_cgroup_pids(&sst->cgroup_paths, &pids, &n, err);
	if (ret < 0)
		goto out;

	/* The container's cgroup frozen, its processes killed where they are
	 * (SIGKILL waits for the thaw: not one more instruction of theirs
	 * runs), the spare's moved in (frozen they stay frozen) and the old
	 * ones out into the spare's frozen cgroup, then the thaw. The old ones
	 * die in the spare's cgroup afterwards, outside the downtime (a
	 * 256 MiB process takes milliseconds to unmap). */
	uint64_t t = tern_now_ns();
	pid_t *gone = NULL;
	size_t ngone = 0;
	*killed = true;
	ret = tern_cgroup_freeze(&st->cgroup_paths, true, err);
	if (ret == 0)
		ret = tern_cgroup_pids(&st->cgroup_paths, &gone, &ngone, err);
	for (size_t i = 0; i < ngone; i++)
		kill(gone[i], SIGKILL);
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = tern_cgroup_enter(&st->cgroup_paths, pids[i], err);
	/* (one that could not be moved dies at the thaw all the same) */
	for (size_t i = 0; ret == 0 && i < ngone; i++)
		tern_cgroup_enter(&sst->cgroup_paths, gone[i], NULL);
	if (ret == 0)
		ret = tern_cgroup_freeze(&st->cgroup_paths, false, err);
	stats->frozen_ns = tern_now_ns() - t;
	free(gone);
	if (ret < 0) {
		/* neither the old processes nor the spare: stopped, for delete */
		tern_cgroup_thaw_all(&st->cgroup_paths);
		for (size_t i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		tern_snap_spare_remove(rt, id, spare);
		goto out;
	}
	stats->warm = true;
	/* the old processes die once thawed, and with their cgroup and the
	 * overlay they ran on that is the reap's, in the background (its
	 * tern_cgroup_destroy thaws first): the thaw waits for the killed
	 * to wake, milliseconds the rollback need not wait for */
	write_reap(store, &sst->cgroup_paths);

	/* the spare is the container now: its own state and cgroup go first,
	 * so that nothing can take it for a spare again (a discard would
	 * kill the container) */
	sroot = tern_strdup_printf("%s/root", spare);
	ready = tern_strdup_printf("%s/ready", spare);
	unlink(ready);
	tern_remove_tree(sroot);
	st->pid = sst->pid;
	st->pid_start_time = sst->pid_start_time;
	free(st->status);
	st->status = tern_xstrdup("running");
	ret = tern_state_write(dir, st, err);
	if (ret < 0)
		goto out;

	/* the spare's directory becomes the live one and the host sees it at
	 * the rootfs path; the one before goes with the reap. The container
	 * runs whatever fails here: said, not failed. */
	old = tern_strdup_printf("%s/" LIVE_OLD, store);
	bool had_live = access(live, F_OK) == 0;
	tern_error *e = NULL;
	if ((had_live && rename(live, old) < 0) || rename(spare, live) < 0)
		tern_error_make(&e, errno, "rename `%s` to `%s`", spare, live);
	else
		show_rootfs(store, st->rootfs, had_live, &e);
	if (e) {
		tern_warn("container `%s` runs on `%s`, but the host's view of its rootfs "
			  "may be off: %s",
			  id, live, e->msg);
		tern_error_free(e);
	}
out:
	free(pids);
	oci_state_free(sst);
	tern_state_dir_free(sdir);
	free((char *)r.root);
	return ret;
}

/* ---- delete ---- */

/* What the overlay shows, copied down into the bundle's own rootfs: the
 * rootfs sync of tern migrate, run by tern-migrate (it hashes with
 * libcrypto, which tern does not load), reached through tern's own
 * binary (main.c execs tern-migrate for it). */
static int fold(const char *merged, const char *under, tern_error **err)
{
	char *argv[] = {"tern", "rootfs-fold", (char *)merged, (char *)under, NULL};
	pid_t pid = fork();

	if (pid < 0)
		return tern_error_make(err, errno, "fork");
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status = tern_wait_exit_status(pid);
	if (status != 0)
		return tern_error_make_quiet(err, EIO, "`tern rootfs-fold %s %s` exited with %d",
					     merged, under, status);
	return 0;
}

static uint64_t mount_id(const char *path)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

/* `path` is a mount point (of a file system of type `magic`, unless 0):
 * its mount is not its parent's (a bind on the same file system keeps
 * st_dev, so the mount ids tell) */
static bool is_mount_of(const char *path, long magic)
{
	cleanup_free char *up = tern_strdup_printf("%s/..", path);
	struct statfs fs;
	uint64_t mine = mount_id(path);

	if (statfs(path, &fs) < 0 || (magic && (long)fs.f_type != magic))
		return false;
	return mine != 0 && mine != mount_id(up);
}

int tern_snapshot_warm_cleanup(const tern_runtime *rt, const char *id, tern_error **err)
{
	if (tern_state_check_id(id, NULL) < 0)
		return 0;
	cleanup_free char *store = tern_strdup_printf("%s/" TERN_SNAPSHOT_DIR "/%s", rt->root, id);
	cleanup_free char *lock = tern_strdup_printf("%s/" WARM_LOCK, store);
	if (access(lock, F_OK) < 0)
		return 0;
	/* a builder finishes first (a restore is not to be cut in half) */
	int lockfd = tern_snap_warm_lock(store, false, 120000, err);
	if (lockfd == -ENOENT)
		return 0;
	if (lockfd < 0)
		return lockfd;
	int ret = 0;
	tern_snap_warm_reap(store);
	tern_snap_warm_discard(rt, store, id, NULL);
	cleanup_free char *live = tern_strdup_printf("%s/" LIVE_DIR, store);
	if (access(live, F_OK) == 0) {
		cleanup_free char *rootfs = read_small(store, UNDER_PATH);
		cleanup_free char *under = tern_strdup_printf("%s/" UNDER_DIR, store);
		cleanup_free char *merged = tern_strdup_printf("%s/bundle/rootfs", live);
		/* never from a directory that is not the overlay (unmounted, it is
		 * empty: the fold would empty the bundle's rootfs) nor into one
		 * that is not the bind of the bundle's rootfs */
		if (!is_mount_of(merged, OVERLAYFS_SUPER_MAGIC) || !is_mount_of(under, 0))
			ret = tern_error_make_quiet(err, EINVAL,
						    "`%s` or `%s` is not mounted: nothing copied",
						    merged, under);
		else
			ret = fold(merged, under, err);
		if (ret < 0)
			tern_error_wrap(err, "the rootfs of `%s` since its warm rollback, copied into "
					     "`%s`",
					id, rootfs ? rootfs : "?");
		if (rootfs && umount2(rootfs, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
			tern_warn("unmount `%s`: %s", rootfs, strerror(errno));
		umount2(under, MNT_DETACH | UMOUNT_NOFOLLOW);
		rmdir(under);
		cleanup_free char *bundle = tern_strdup_printf("%s/bundle", live);
		tern_snap_overlay_undo(bundle);
		tern_remove_tree(live);
		cleanup_free char *path = tern_strdup_printf("%s/" UNDER_PATH, store);
		unlink(path);
	}
	unlink(lock);
	close(lockfd);
	return ret;
}
