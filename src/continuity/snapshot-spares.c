/* Clone spares: "initialise once, claim many" in milliseconds
 * (`tern clone --spares N ID NAME`, then `tern clone ID NAME NEW-ID`).
 *
 * A clone is a criu restore: about 100 ms of criu's own work however small
 * the container, most of it starting two criu processes and building the
 * namespaces and mounts. A spare is that restore done ahead of time, in
 * the background: a clone of the snapshot, restored into a cgroup of its
 * own, with a new network namespace and its own overlay, and frozen at
 * criu's pre-resume point (checkpoint.h, freeze_at_resume), so that it
 * never runs an instruction; its memory is filled before it counts as
 * ready. A clone then claims one:
 *
 *   the spare's bundle renamed to the clone's; the clone's state directory
 *   and its cgroup (named after NEW-ID, with the config's limits) made as a
 *   cold clone's are; that cgroup frozen, the spare's processes moved in
 *   (frozen they stay frozen), thawed; the spare's cgroup removed.
 *
 * and a builder in the background restores the next, up to N again.
 *
 * In the store (ROOT/@snapshots/ID/, snapshot.h), per snapshot NAME:
 *   .clone-spares/NAME/want      N, as `--spares N` set it
 *   .clone-spares/NAME/.lock     flock: held by the one builder at work
 *   .clone-spares/NAME/error     why the last spare could not be made (the
 *                                builder stops; `--spares N` again retries)
 *   .clone-spares/NAME/build.log the builder's messages
 *   .clone-spares/NAME/s-XXXXXX/ a spare: ready (once frozen and filled),
 *                                bundle/ (config.json, rootfs/ = an overlay
 *                                on NAME's tree, .upper/, .work/), root/
 *                                (the --root its state is kept under, as
 *                                container "spare"), criu's logs
 * Claims, `--spares` and deletes run under the store's lock; the builder
 * only adds spares, and marks one ready once it is.
 *
 * What differs from a cold clone: the spare's stdio is /dev/null (it is
 * made in the background, for nobody's terminal or pipe); the memory its
 * restore filled stays charged to the spare's memory cgroup (then to its
 * parent) after the move, not to the clone's. A spare costs a full copy of
 * the snapshot's memory while it waits. Not made: for a snapshot with a
 * terminal (the pty would go nowhere) or with hooks (they would run when
 * the spare is made, not when a clone is), with the systemd cgroup driver,
 * or rootless, nor for one that a clone is refused
 * (tern_snap_clone_check_userns). A clone with --bundle, --console-socket
 * or --share-memory is always a cold one.
 *
 * A snapshot of a container with a user namespace and a network
 * namespace of its own holds that network namespace in its images
 * (snapshot-take.c): criu makes the spare's anew from them, inside the
 * spare's new user namespace, and the spare keeps it, as it keeps a new
 * one made by tern otherwise; the claim moves processes only, never a
 * namespace, so it is the same for both.
 *
 * Owns the clone spares' part of the store, their builder and the claim
 * (snapshot-spares.h). Uses snapshot-store, snapshot-container and
 * snapshot-warm (a spare's runtime and removal) only; clone, list and
 * delete use it (the order is in snapshot-store.h). */
#include "cgroup.h"
#include "checkpoint.h"
#include "checkpoint-userns.h"
#include "container-cgroup.h"
#include "log.h"
#include "snapshot-container.h"
#include "snapshot-spares.h"
#include "snapshot-store.h"
#include "snapshot-warm.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define SPARES_DIR ".clone-spares"
#define SPARE_ID   "spare"

/* ---- small helpers ---- */

static char *spares_dir(const char *store, const char *name)
{
	return tern_strdup_printf("%s/" SPARES_DIR "/%s", store, name);
}

static unsigned read_want(const char *dir)
{
	cleanup_free char *path = tern_strdup_printf("%s/want", dir);
	cleanup_free char *data = NULL;
	size_t len;

	if (tern_read_file(path, &data, &len, 64, NULL) < 0)
		return 0;
	return (unsigned)strtoul(data, NULL, 10);
}

static bool is_spare(const char *entry)
{
	return strncmp(entry, "s-", 2) == 0;
}

static bool spare_ready(const char *dir, const char *entry)
{
	cleanup_free char *ready = tern_strdup_printf("%s/%s/ready", dir, entry);
	return access(ready, F_OK) == 0;
}

/* The spares in `dir` (being made or ready), and how many are ready. */
static unsigned count_spares(const char *dir, unsigned *ready)
{
	DIR *d = opendir(dir);
	unsigned n = 0;

	*ready = 0;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (!is_spare(e->d_name))
			continue;
		n++;
		if (spare_ready(dir, e->d_name))
			(*ready)++;
	}
	if (d)
		closedir(d);
	return n;
}

/* ---- building ---- */

typedef struct {
	const tern_runtime *main_rt; /* the caller's: the container's --root */
	const char *criu;
	const char *store;
	const char *id;
	const char *name;
	char *dir;   /* .clone-spares/NAME */
	char *spare; /* the one being made */
	tern_runtime rt;
} builder;

static void delete_spare_container(void *data)
{
	builder *b = data;
	tern_error *e = NULL;

	if (tern_container_delete(&b->rt, SPARE_ID, true, &e) < 0) {
		tern_log(TERN_LOG_ERROR, "%s", e->msg);
		tern_error_free(e);
	}
}

/* ---- what cold clones share ---- */

int tern_snap_clone_stdio(const char *images, const char *bundle, int fds[3], tern_error **err)
{
	char kinds[3];
	unsigned modes[3];
	uid_t uid;
	gid_t gid;
	cleanup_free char *log = tern_strdup_printf("%s/stdio.log", bundle);
	/* criu reopens a file from inside the user namespace it makes:
	 * the log is the container root's */
	bool chown_log = tern_ckpt_userns_root(images, &uid, &gid);

	tern_ckpt_outside_stdio(images, kinds, modes);
	for (int i = 0; i < 3; i++) {
		bool to_log = kinds[i] == 'p' || (kinds[i] == 'f' && S_ISREG(modes[i]));
		fds[i] = to_log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
				: open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fds[i] < 0)
			return tern_error_make(err, errno, "`%s`", to_log ? log : "/dev/null");
		if (to_log && kinds[i] == 'f' && fchmod(fds[i], modes[i] & 07777) < 0)
			return tern_error_make(err, errno, "chmod `%s`", log);
		if (to_log && chown_log && fchown(fds[i], uid, gid) < 0)
			return tern_error_make(err, errno, "chown `%s`", log);
	}
	return 0;
}

int tern_snap_clone_check_userns(const char *images, const char *id, const char *name,
				 tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *msg = NULL;
	oci_config *c = NULL;
	const char *why = NULL;

	if (!tern_ckpt_own_userns(images))
		return 0;
	if (oci_config_parse_file(path, &c, &msg) < 0)
		return tern_error_make_quiet(err, EINVAL, "`%s`: %s", path, msg);
	const oci_namespace *net = NULL;
	for (size_t i = 0; c->linux_ && i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == OCI_NS_NETWORK)
			net = &c->linux_->namespaces[i];
	/* criu makes the clone's user namespace anew, and a process of it
	 * cannot join a network namespace that belongs to another one */
	cleanup_strv char **veths = tern_ckpt_veths(images);
	cleanup_free char *veth_why = NULL;
	if (net && net->path)
		why = "joined its network namespace by path: a clone would join it too, and the "
		      "clone's new user namespace (criu makes it anew) may not enter a network "
		      "namespace of another user namespace";
	else if (net && tern_ckpt_netns_left_out(images))
		why = "has its network namespace left out of the images (a snapshot taken by an "
		      "older tern): only criu can make a network namespace that belongs to the "
		      "clone's new user namespace, from images that hold one; take a new snapshot";
	else if (veths) {
		/* criu 4.2 makes the inner end through its usernsd, and the
		 * kernel answers EOPNOTSUPP (plain checkpoint/restore of such a
		 * container fails the same way) */
		char *sp = strchr(veths[0], ' ');
		if (sp)
			*sp++ = '\0';
		veth_why = tern_strdup_printf(
		    "has a veth to the host in its network namespace (`%s`, whose outer end is "
		    "`%s`): criu cannot make a veth in the network namespace of a user namespace "
		    "it "
		    "makes (its netlink request fails: Operation not supported); remove the veth "
		    "before the snapshot, or give the container its network through a device "
		    "criu need not make",
		    veths[0], sp ? sp : "?");
		why = veth_why;
	}
	oci_config_free(c);
	if (why)
		return tern_error_make_quiet(err, ENOTSUP,
					     "snapshot `%s` of `%s` is of a container with a user "
					     "namespace of its own that %s",
					     name, id, why);
	return 0;
}

static int build_one(builder *b, tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", b->store, b->name);
	cleanup_free char *lower = tern_strdup_printf("%s/%s/tree", b->store, b->name);
	cleanup_free char *tmpl = tern_strdup_printf("%s/s-XXXXXX", b->dir);
	int ret;

	if (mkdtemp(tmpl) == NULL)
		return tern_error_make(err, errno, "`%s`", tmpl);
	b->spare = tern_xstrdup(tmpl);
	/* criu's work directory: searched by the restored root of a user
	 * namespace (the mount sources tern makes for criu are there, see
	 * checkpoint-userns.h); nothing in it is listed or read by others */
	if (chmod(b->spare, 0711) < 0)
		return tern_error_make(err, errno, "chmod `%s`", b->spare);
	cleanup_free char *bundle = tern_strdup_printf("%s/bundle", b->spare);
	if (mkdir(bundle, 0711) < 0)
		return tern_error_make(err, errno, "`%s`", bundle);
	ret = tern_snap_overlay_mount(lower, bundle, err);
	if (ret < 0)
		return ret;
	/* a cgroup of its own until a clone takes the processes into its */
	cleanup_free char *cg =
	    tern_strdup_printf("tern-spare-%s-%s-%s", b->id, b->name, strrchr(b->spare, '-') + 1);
	tern_snap_config_opts cfg = {.cgroups_path = cg, .drop_hooks = true};
	ret = tern_snap_write_config(images, bundle, &cfg, err);
	if (ret < 0)
		return ret;
	b->rt = tern_snap_spare_runtime(b->main_rt, b->spare);
	ret = tern_mkdir_p(b->rt.root, 0700, err);
	if (ret < 0)
		return ret;
	int fds[3] = {-1, -1, -1};
	ret = tern_snap_clone_stdio(images, bundle, fds, err);
	cleanup_close int fd0 = fds[0];
	cleanup_close int fd1 = fds[1];
	cleanup_close int fd2 = fds[2];
	if (ret < 0)
		return ret;

	tern_create_opts copts = {.bundle = bundle, .detach = true};
	/* criu's logs of a spare that fails: with its container's */
	cleanup_free char *logs_in = tern_strdup_printf("%s/%s", b->main_rt->root, b->id);
	tern_ckpt_opts co = {
	    .image_path = images,
	    .status_fd = -1,
	    .failure_logs_in = logs_in,
	    .stdio_given = true,
	    .stdio_fds = {fd0, fd1, fd2},
	    .freeze_at_resume = true,
	};
	tern_snapshot_stats stats = {0};
	ret = tern_snap_restore(&b->rt, b->criu, SPARE_ID, &copts, &co, images, b->spare,
				delete_spare_container, b, false, &stats, err);
	if (ret < 0)
		return ret;
	cleanup_free char *ready = tern_strdup_printf("%s/ready", b->spare);
	return tern_write_file(ready, "", 0, 0600, err);
}

static void remove_unready(const tern_runtime *rt, const char *dir)
{
	DIR *d = opendir(dir);

	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (!is_spare(e->d_name) || spare_ready(dir, e->d_name))
			continue;
		cleanup_free char *spare = tern_strdup_printf("%s/%s", dir, e->d_name);
		tern_warn("clone spare `%s` was left half-made: removed", spare);
		tern_snap_spare_remove(rt, SPARE_ID, spare);
	}
	if (d)
		closedir(d);
}

/* The builder: its own session, at nice 10, none of the caller's fds (the
 * caller's stdout may be a pipe somebody reads to its end), its messages
 * in build.log. One at a time (the lock); it makes spares until there are
 * `want`, looks once more after letting go of the lock (a clone may have
 * taken one meanwhile and found the lock held), and stops at the first
 * spare that cannot be made. */
static void builder_main(builder *b)
{
	cleanup_free char *lock = tern_strdup_printf("%s/.lock", b->dir);
	cleanup_free char *log = tern_strdup_printf("%s/build.log", b->dir);
	cleanup_free char *error = tern_strdup_printf("%s/error", b->dir);

	setsid();
	int host_mnt = open("/proc/self/ns/mnt", O_RDONLY);
	int keep[] = {host_mnt};
	tern_close_fds_from(3, keep, 1);
	tern_stdio_to_log(log);
	if (setpriority(PRIO_PROCESS, 0, 10) < 0)
		tern_debug("clone spares: nice 10: %s", strerror(errno));
	int lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0)
		_exit(0);
	/* with the lock, a spare that is not ready is a dead builder's */
	remove_unready(b->main_rt, b->dir);
	for (;;) {
		unsigned ready, n = count_spares(b->dir, &ready);
		if (access(error, F_OK) == 0)
			break;
		if (n >= read_want(b->dir)) {
			flock(lockfd, LOCK_UN);
			if (count_spares(b->dir, &ready) >= read_want(b->dir) ||
			    flock(lockfd, LOCK_EX | LOCK_NB) < 0)
				_exit(0);
			continue;
		}
		tern_error *e = NULL;
		if (build_one(b, &e) < 0) {
			/* the restore leaves this process in a mount namespace of
			 * its own: the overlay is undone in the host's */
			if (host_mnt >= 0 && setns(host_mnt, CLONE_NEWNS) < 0)
				tern_warn("back to the host's mount namespace: %s",
					  strerror(errno));
			if (b->spare)
				tern_snap_spare_remove(b->main_rt, SPARE_ID, b->spare);
			tern_write_file(error, e->msg, strlen(e->msg), 0600, NULL);
			fprintf(stderr, "tern: clone spare of `%s` at `%s`: %s\n", b->id, b->name,
				e->msg);
			tern_error_free(e);
			_exit(1);
		}
		if (host_mnt >= 0 && setns(host_mnt, CLONE_NEWNS) < 0) {
			tern_warn("back to the host's mount namespace: %s", strerror(errno));
			_exit(1);
		}
		free(b->spare);
		b->spare = NULL;
		free((char *)b->rt.root);
		b->rt.root = NULL;
	}
	_exit(0);
}

static int spawn_builder(const tern_runtime *rt, const char *criu, const char *store,
			 const char *id, const char *name, tern_error **err)
{
	builder b = {.main_rt = rt, .criu = criu, .store = store, .id = id, .name = name};

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return tern_error_make(err, errno, "fork the clone spares' builder");
	if (pid == 0) {
		b.dir = spares_dir(store, name);
		builder_main(&b);
	}
	return 0;
}

/* ---- --spares N ---- */

static int check_can_spare(const tern_runtime *rt, const char *store, const char *id,
			   const char *name, tern_error **err)
{
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", store, name);
	cleanup_free char *path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *msg = NULL;
	oci_config *config = NULL;
	const char *why = NULL;

	if (rt->systemd_cgroup)
		why = "with the systemd cgroup driver (a spare needs a cgroup of its own, which "
		      "tern does not make beside a scope)";
	else if (geteuid() != 0)
		why = "rootless (a spare's processes move into the clone's cgroup)";
	if (why)
		return tern_error_make_quiet(err, ENOTSUP, "--spares: no clone spares %s", why);
	if (oci_config_parse_file(path, &config, &msg) < 0)
		return tern_error_make_quiet(err, EINVAL, "`%s`: %s", path, msg);
	if (config->process && config->process->terminal)
		why = "has a terminal: a spare's pty would go nowhere";
	else if (config->hooks)
		why = "has hooks: they would run when the spare is made, not when a clone is";
	oci_config_free(config);
	if (why)
		return tern_error_make_quiet(err, ENOTSUP, "--spares: snapshot `%s` of `%s` %s",
					     name, id, why);
	return tern_snap_clone_check_userns(images, id, name, err) < 0
		   ? tern_error_wrap(err, "--spares")
		   : 0;
}

/* The process holding the flock on `fd`'s file, or 0. /proc/locks:
 * "N: FLOCK  ADVISORY  WRITE PID MAJOR:MINOR:INODE START END" (hex
 * device numbers); a waiter's line has "->" after the number. */
static pid_t lock_holder(int fd)
{
	struct stat st;
	char line[256];
	pid_t pid = 0;
	FILE *f;

	if (fstat(fd, &st) < 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return 0;
	while (pid == 0 && fgets(line, sizeof(line), f)) {
		char type[16];
		int p;
		unsigned maj, min;
		unsigned long long ino;
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu", type, &p, &maj, &min, &ino) ==
			5 &&
		    strcmp(type, "FLOCK") == 0 && ino == st.st_ino &&
		    makedev(maj, min) == st.st_dev)
			pid = p;
	}
	fclose(f);
	return pid;
}

static bool is_stopped(pid_t pid)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/stat", pid);
	cleanup_free char *data = NULL;
	size_t len;

	if (tern_read_file(path, &data, &len, 4096, NULL) < 0)
		return false;
	/* "PID (COMM) STATE ...", COMM may hold anything */
	char *close_paren = strrchr(data, ')');
	return close_paren && (close_paren[2] == 'T' || close_paren[2] == 't');
}

/* A builder that is stopped, or has not finished its spare in two
 * minutes, is killed with its process group (its criu is in it; it is
 * the leader of a session of its own, which tells it from a command
 * that holds the lock for a moment). True if it was. */
static bool kill_builder(const char *lock, pid_t holder, bool stopped)
{
	if (holder <= 0 || getsid(holder) != holder)
		return false;
	tern_warn("`%s`: the clone spares' builder (pid %d) %s: killed", lock, holder,
		  stopped ? "is stopped" : "has not finished its spare in 120 s");
	return kill(-holder, SIGKILL) == 0;
}

/* Every spare in `dir` killed and removed (only the ready ones, and no
 * more than `surplus` of them, with `trim`), then the directory itself if
 * nothing is wanted. Without `trim`, the builder is stopped first. */
static void discard_in(const char *root, const char *dir, bool trim, unsigned surplus)
{
	tern_runtime rt = {.root = root};
	int lockfd = -1;

	if (!trim) {
		cleanup_free char *want = tern_strdup_printf("%s/want", dir);
		cleanup_free char *lock = tern_strdup_printf("%s/.lock", dir);
		tern_write_file(want, "0", 1, 0600, NULL);
		/* a builder finishes the spare it is on (a restore is not to
		 * be cut in half), then sees that none is wanted */
		lockfd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		bool killed = false;
		for (int waited = 0; lockfd >= 0 && flock(lockfd, LOCK_EX | LOCK_NB) < 0;
		     waited += 10) {
			int why = errno;
			pid_t holder = why == EWOULDBLOCK ? lock_holder(lockfd) : 0;
			bool stopped = holder > 0 && is_stopped(holder);
			if (!killed && holder > 0 && (waited >= 120000 || stopped) &&
			    kill_builder(lock, holder, stopped)) {
				/* (the lock goes with its last holder) */
				killed = true;
				waited = 110000;
			} else if (why != EWOULDBLOCK || waited >= 120000) {
				tern_warn("`%s`: the clone spares' builder still holds it (%s): "
					  "removing its spares all the same",
					  lock, strerror(why));
				break;
			}
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (!is_spare(e->d_name) ||
		    (trim && (surplus == 0 || !spare_ready(dir, e->d_name))))
			continue;
		cleanup_free char *spare = tern_strdup_printf("%s/%s", dir, e->d_name);
		tern_snap_spare_remove(&rt, SPARE_ID, spare);
		if (trim)
			surplus--;
	}
	if (d)
		closedir(d);
	if (!trim)
		tern_remove_tree(dir);
	if (lockfd >= 0)
		close(lockfd);
}

void tern_snap_spares_discard(const char *root, const char *store, const char *name)
{
	cleanup_free char *all = tern_strdup_printf("%s/" SPARES_DIR, store);

	if (name) {
		cleanup_free char *dir = spares_dir(store, name);
		if (access(dir, F_OK) == 0)
			discard_in(root, dir, false, 0);
		rmdir(all);
		return;
	}
	DIR *d = opendir(all);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		cleanup_free char *dir = tern_strdup_printf("%s/%s", all, e->d_name);
		discard_in(root, dir, false, 0);
	}
	if (d)
		closedir(d);
	rmdir(all);
}

int tern_snapshot_clone_spares(const tern_runtime *rt, const char *criu, const char *id,
			       const char *name, unsigned want, tern_error **err)
{
	tern_snap_store s = {.fd = -1};
	int ret = tern_snap_check_name(name, err);

	if (ret == 0)
		ret = tern_snap_store_open(rt->root, id, false, &s, err);
	if (ret == 0 && faccessat(s.fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		ret = -ENOENT;
	if (ret == -ENOENT)
		ret = tern_error_make_quiet(err, ENOENT, "container `%s` has no snapshot `%s`", id,
					    name);
	cleanup_free char *dir = ret == 0 ? spares_dir(s.path, name) : NULL;
	if (ret == 0 && want == 0) {
		tern_snap_spares_discard(rt->root, s.path, name);
		goto out;
	}
	if (ret == 0)
		ret = check_can_spare(rt, s.path, id, name, err);
	if (ret == 0)
		ret = tern_mkdir_p(dir, 0700, err);
	if (ret == 0) {
		cleanup_free char *path = tern_strdup_printf("%s/want", dir);
		cleanup_free char *text = tern_strdup_printf("%u", want);
		cleanup_free char *error = tern_strdup_printf("%s/error", dir);
		ret = tern_write_file(path, text, strlen(text), 0600, err);
		unlink(error);
	}
	if (ret == 0) {
		unsigned ready, n = count_spares(dir, &ready);
		if (n > want)
			discard_in(rt->root, dir, true, n - want);
		ret = spawn_builder(rt, criu, s.path, id, name, err);
	}
out:
	if (ret < 0)
		tern_error_wrap(err, "clone --spares of snapshot `%s` of `%s`", name, id);
	tern_snap_store_close(&s);
	return ret;
}

void tern_snap_spares_info(const char *store, const char *name, tern_snapshot_info *i)
{
	cleanup_free char *dir = spares_dir(store, name);
	cleanup_free char *error = tern_strdup_printf("%s/error", dir);

	if (access(dir, F_OK) < 0)
		return;
	i->spares_wanted = read_want(dir);
	count_spares(dir, &i->spares_ready);
	i->spares_failed = access(error, F_OK) == 0;
}

/* ---- the claim ---- */

/* The first ready spare whose init is still the one restored, or NULL;
 * those whose init is gone are removed. */
static char *take_ready(const tern_runtime *rt, const char *dir, tern_container_dir **sdir,
			oci_state **sst)
{
	DIR *d = opendir(dir);
	char *found = NULL;

	for (struct dirent *e; d && found == NULL && (e = readdir(d)) != NULL;) {
		if (!is_spare(e->d_name) || !spare_ready(dir, e->d_name))
			continue;
		cleanup_free char *spare = tern_strdup_printf("%s/%s", dir, e->d_name);
		tern_runtime r = tern_snap_spare_runtime(rt, spare);
		tern_error *err = NULL;
		int ret = tern_container_peek(&r, SPARE_ID, sdir, sst, &err);
		free((char *)r.root);
		if (ret == 0 && (*sst)->pid > 0 &&
		    tern_process_start_time((*sst)->pid) == (*sst)->pid_start_time) {
			found = steal_pointer(&spare);
			break;
		}
		tern_debug("clone spare `%s` is no good: %s", spare,
			   err ? err->msg : "its init is gone");
		tern_error_free(err);
		oci_state_free(*sst);
		tern_state_dir_free(*sdir);
		*sst = NULL;
		*sdir = NULL;
		tern_snap_spare_remove(rt, SPARE_ID, spare);
	}
	if (d)
		closedir(d);
	return found;
}

/* A claim under way: what it has made so far, for its undo. */
typedef struct {
	const char *bundle;
	char *spare;
	tern_container_dir *sdir, *cdir;
	oci_state *sst;
	oci_config *config;
	tern_container c;
	pid_t *pids;
	size_t n;
	bool moved, made_cgroup, renamed;
} claim_ctx;

/* The spare's bundle made the clone's, with the clone's config; the
 * clone's state directory, with its copy of that config. */
static int claim_bundle(claim_ctx *k, const char *images, const char *new_id, tern_error **err)
{
	cleanup_free char *sbundle = tern_strdup_printf("%s/bundle", k->spare);
	cleanup_free char *config_path = NULL, *msg = NULL, *config_text = NULL;
	size_t config_len = 0;
	int ret;

	if (rename(sbundle, k->bundle) < 0)
		return tern_error_make(err, errno, "rename `%s` to `%s`", sbundle, k->bundle);
	k->renamed = true;
	tern_snap_config_opts cfg = {0};
	ret = tern_snap_write_config(images, k->bundle, &cfg, err);
	if (ret < 0)
		return ret;
	config_path = tern_strdup_printf("%s/config.json", k->bundle);
	if (oci_config_parse_file(config_path, &k->config, &msg) < 0)
		return tern_error_make_quiet(err, EINVAL, "`%s`: %s", config_path, msg);
	ret = tern_state_dir_create(k->c.rt->root, new_id, &k->cdir, err);
	if (ret < 0)
		return ret;
	/* the state's copy of the config: the bundle's, as written above */
	ret = tern_read_file(config_path, &config_text, &config_len, 0, err);
	if (ret == 0) {
		cleanup_free char *copy = tern_strdup_printf("%s/" TERN_CONFIG_COPY, k->cdir->dir);
		ret = tern_write_file(copy, config_text, config_len, 0600, err);
	}
	return ret;
}

/* The clone's cgroup, with the processes of the spare in it; the spare's
 * cgroup removed. */
static int claim_cgroup(claim_ctx *k, tern_error **err)
{
	int ret;

	k->c.config = k->config;
	k->c.dir = k->cdir;
	ret = tern_container_cgroup_prepare(&k->c, err);
	k->made_cgroup = ret == 0;
	/* the clone's cgroup frozen, the spare's processes (frozen) moved in,
	 * thawed: they run for the first time, in their own cgroup */
	if (ret == 0)
		ret = tern_cgroup_freeze(&k->c.cgroup_paths, true, err);
	k->moved = ret == 0;
	for (size_t i = 0; ret == 0 && i < k->n; i++)
		ret = tern_cgroup_enter(&k->c.cgroup_paths, k->pids[i], err);
	if (ret == 0)
		ret = tern_cgroup_freeze(&k->c.cgroup_paths, false, err);
	if (ret < 0)
		return ret;
	tern_error *e = NULL;
	if (tern_cgroup_destroy(&k->sst->cgroup_paths, &e) < 0) {
		tern_warn("the cgroup of clone spare `%s`: %s", k->spare, e->msg);
		tern_error_free(e);
	}
	return 0;
}

/* The clone's state: running, its init the spare's. */
static int claim_state(claim_ctx *k, const char *new_id, tern_error **err)
{
	cleanup_free char *rootfs = tern_strdup_printf("%s/rootfs", k->bundle);
	cleanup_free char *created = tern_state_now_rfc3339();
	oci_state s = {
	    .oci_version = k->config->oci_version,
	    .id = (char *)new_id,
	    .status = "running",
	    .pid = k->sst->pid,
	    .bundle = (char *)k->bundle,
	    .annotations = k->config->annotations,
	    .rootfs = rootfs,
	    .created = created,
	    .owner = "",
	    .pid_start_time = k->sst->pid_start_time,
	    .cgroup_path = k->c.cgroup_path,
	    .cgroup_paths = k->c.cgroup_paths,
	    .own_cgroup = k->c.own_cgroup,
	    .config_path = TERN_CONFIG_COPY,
	};
	return tern_state_write(k->cdir, &s, err);
}

/* the processes killed where they are (a thawed cgroup lets them die),
 * the clone's cgroup, state and bundle gone, and the spare */
static void claim_undo(claim_ctx *k)
{
	for (size_t i = 0; i < k->n; i++)
		kill(k->pids[i], SIGKILL);
	if (k->moved)
		tern_cgroup_thaw_all(&k->c.cgroup_paths);
	if (k->made_cgroup)
		tern_cgroup_destroy(&k->c.cgroup_paths, NULL);
	if (k->cdir)
		tern_state_dir_remove(k->cdir, NULL);
	if (k->renamed)
		tern_snap_overlay_undo(k->bundle);
	tern_snap_spare_remove(k->c.rt, SPARE_ID, k->spare);
}

int tern_snap_spares_claim(const tern_runtime *rt, const char *criu, const char *store,
			   const char *id, const char *name, const char *new_id, const char *bundle,
			   tern_error **err)
{
	cleanup_free char *dir = spares_dir(store, name);
	cleanup_free char *images = tern_strdup_printf("%s/%s/images", store, name);
	claim_ctx k = {.bundle = bundle, .c = {.rt = rt, .id = new_id}};
	int ret;

	if (access(dir, F_OK) < 0 || rt->systemd_cgroup)
		return 0;
	k.spare = take_ready(rt, dir, &k.sdir, &k.sst);
	if (k.spare == NULL)
		return 0;
	ret = tern_cgroup_pids(&k.sst->cgroup_paths, &k.pids, &k.n, err);
	/* from here the spare is the clone's, or gone */
	if (ret == 0)
		ret = claim_bundle(&k, images, new_id, err);
	if (ret == 0)
		ret = claim_cgroup(&k, err);
	if (ret == 0)
		ret = claim_state(&k, new_id, err);
	if (ret == 0) {
		ret = 1;
		tern_remove_tree(k.spare);
	} else {
		claim_undo(&k);
		tern_error_wrap(err, "clone spare `%s`", k.spare);
	}
	/* the next spare, behind the clone */
	{
		tern_error *e = NULL;
		if (spawn_builder(rt, criu, store, id, name, &e) < 0) {
			tern_warn("%s", e->msg);
			tern_error_free(e);
		}
	}
	free(k.pids);
	free(k.c.cgroup_path);
	oci_map_clear(&k.c.cgroup_paths);
	oci_config_free(k.config);
	oci_state_free(k.sst);
	tern_state_dir_free(k.sdir);
	tern_state_dir_free(k.cdir);
	free(k.spare);
	return ret;
}
