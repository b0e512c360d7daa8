/* The checkpoint: what the container must be for criu to dump it, what
 * is declared external (bind, cgroup, masked and tmpfs mounts, the network
 * namespace, host devices), the freeze around the dump and what criu is
 * told while it holds the tasks (--leave-frozen, a kept network lock,
 * --status-fd). */
#include "checkpoint-internal.h"
#include "cgroup.h"
#include "checkpoint-devbinds.h"
#include "checkpoint-masked.h"
#include "checkpoint-net.h"
#include "checkpoint-netns.h"
#include "criu-deadline.h"
#include "criu-rootless.h"
#include "criu-swrk.h"
#include "fault.h"
#include "log.h"
#include "mountinfo.h"
#include "netdev.h"
#include "restore-mountpoints.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool strv_has(char *const *strv, const char *s)
{
	for (; strv && *strv; strv++)
		if (strcmp(*strv, s) == 0)
			return true;
	return false;
}

static const char *freezer_dir(const oci_map *paths, char **out)
{
	for (size_t i = 0; i < paths->len; i++) {
		const char *k = paths->items[i].key;
		const char *b = strrchr(k, '/');
		if (b && strcmp(b + 1, "freezer") == 0) {
			*out = tern_strdup_printf("%s%s", k, paths->items[i].value);
			return *out;
		}
	}
	return NULL;
}

/* ---- cgroup mounts ---- */

static bool is_cgroupfs(const char *fstype)
{
	return strcmp(fstype, "cgroup") == 0 || strcmp(fstype, "cgroup2") == 0;
}

/* The host's mount point of the cgroup hierarchy on device `dev`. */
static char *host_hierarchy(const char *dev)
{
	cleanup_free char *data = NULL;
	size_t len;

	if (tern_read_file("/proc/self/mountinfo", &data, &len, 0, NULL) < 0)
		return NULL;
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (tern_mountinfo_parse(l, &m) && is_cgroupfs(m.fstype) &&
		    strcmp(m.dev, dev) == 0 && strcmp(m.root, "/") == 0)
			return tern_xstrdup(m.mountpoint);
	}
	return NULL;
}

/* The container's cgroup mounts (binds of its own cgroup directory, or
 * cgroupns mounts rooted there) cannot be dumped as such: CRIU wants the
 * root of a mount's filesystem to be visible. They become external
 * mounts, and restore binds the new cgroup's directory there. */
static int external_cgroup_mounts(criu_session *s, pid_t pid, descriptor *d, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	cleanup_free char *data = NULL;
	size_t len;
	int ret = tern_read_file(path, &data, &len, 0, err);

	if (ret < 0)
		return ret;
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		tern_mountinfo_line m;
		if (!tern_mountinfo_parse(l, &m) || !is_cgroupfs(m.fstype))
			continue;
		cleanup_free char *host = host_hierarchy(m.dev);
		if (host == NULL)
			return tern_error_make_quiet(err, ENOENT,
						     "cgroup mount `%s` of the container: no host "
						     "hierarchy on device %s",
						     m.mountpoint, m.dev);
		criu_local_add_ext_mount(s->opts, m.mountpoint, m.mountpoint);
		d->cg_mounts =
		    tern_strv_add(d->cg_mounts, tern_strdup_printf("%s %s", m.mountpoint, host));
	}
	return 0;
}

/* ---- checkpoint ---- */

static int check_dirty_tracking(criu_session *s, tern_error **err)
{
	struct criu_feature_check f = {.mem_track = true};

	if (criu_local_feature_check(s->opts, &f, sizeof(f)) < 0 || !f.mem_track)
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--pre-dump: this kernel lacks memory dirty tracking (soft-dirty page bits, "
		    "CONFIG_MEM_SOFT_DIRTY), which CRIU needs to pre-dump and to write "
		    "incremental images; checkpoint without --pre-dump");
	return 0;
}

/* criu creates its images (and logs) 0644 less its umask, which it has
 * from us: with 077 they are 0600 from the start, no window in which
 * another user reads the container's memory (a chmod after the dump would
 * leave one). The dump creates nothing in the container whose mode the
 * umask would change; a restore does (ghost files, sockets), so only the
 * dump runs so. */
static int dump_private(criu_session *s, bool pre_dump)
{
	mode_t old = umask(077);
	int ret = pre_dump ? criu_local_pre_dump(s->opts) : criu_local_dump(s->opts);

	umask(old);
	return ret;
}

static int make_image_dir(const char *path, bool *created, tern_error **err)
{
	struct stat st;

	*created = false;
	if (stat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return tern_error_make(err, ENOTDIR, "--image-path `%s`", path);
		return 0;
	}
	if (mkdir(path, 0700) < 0)
		return tern_error_make(err, errno, "--image-path `%s`", path);
	*created = true;
	return 0;
}

/* The dump's own options: the tree, where it stops, its parent, the page
 * server. */
static int set_dump_options(criu_session *s, const oci_state *st, const tern_ckpt_opts *o,
			    tern_error **err)
{
	cleanup_free char *freezer = NULL;

	criu_local_set_pid(s->opts, st->pid);
	criu_local_set_root(s->opts, st->rootfs);
	criu_local_set_leave_running(s->opts, o->leave_running || o->pre_dump);
	if (freezer_dir(&st->cgroup_paths, &freezer))
		criu_local_set_freeze_cgroup(s->opts, freezer);
	/* CRIU skips the pages unchanged since the parent only when it
	 * tracks memory (soft-dirty bits) in both dumps */
	if (o->pre_dump || o->parent_path || o->track_mem)
		criu_local_set_track_mem(s->opts, true);
	if (o->parent_path)
		criu_local_set_parent_images(s->opts, (char *)o->parent_path);
	if (o->page_server) {
		cleanup_free char *addr = tern_xstrdup(o->page_server);
		char *colon = strrchr(addr, ':');
		if (colon == NULL || colon == addr || !colon[1])
			return tern_error_make_quiet(
			    err, EINVAL, "--page-server `%s`: expected IP:PORT", o->page_server);
		*colon = '\0';
		char *end;
		errno = 0;
		long port = strtol(colon + 1, &end, 10);
		if (errno || *end || port < 1 || port > 65535)
			return tern_error_make_quiet(err, EINVAL,
						     "--page-server `%s`: the port is not 1-65535",
						     o->page_server);
		criu_local_set_page_server_address_port(s->opts, addr, (int)port);
	}
	return 0;
}

static void declare_bind_mounts(criu_session *s, const oci_state *st, const oci_config *config,
				descriptor *d)
{
	/* bind mounts from outside the rootfs are not the container's to
	 * dump: CRIU records them by mount point, restore binds the new
	 * config's source there. The mount point is the destination with
	 * the image's symlinks resolved, where create mounted it (runc
	 * resolves it the same way, securejoin); the destination as it is
	 * when the container has a mount there (a symlink the container
	 * made since cannot move the key) */
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *m = &config->mounts[i];
		if (!tern_mount_is_bind(m))
			continue;
		char *mp = tern_mount_at(st->pid, m->destination)
			       ? tern_xstrdup(m->destination)
			       : tern_mount_dest_resolved(st->rootfs, m->destination);
		criu_local_add_ext_mount(s->opts, mp, mp);
		d->ext_mounts = tern_strv_add(d->ext_mounts, mp);
	}
}

/* The network namespace: joined by path (external), left out as good as
 * new, or dumped (with the veths restore must be told of). */
static int declare_netns(criu_session *s, const oci_state *st, const oci_config *config,
			 const tern_ckpt_opts *o, tern_container_dir *dir, descriptor *d,
			 tern_error **err)
{
	const oci_namespace *net = tern_ckpt_config_ns(config, OCI_NS_NETWORK);
	if (net && net->path) {
		cleanup_free char *nspath = tern_strdup_printf("/proc/%d/ns/net", st->pid);
		struct stat nst;
		if (stat(nspath, &nst) < 0)
			return tern_error_make(err, errno, "%s", nspath);
		cleanup_free char *ext = tern_strdup_printf(
		    "net[%lu]:%s", (unsigned long)nst.st_ino, TERN_CKPT_NETNS_KEY);
		criu_local_add_external(s->opts, ext);
		d->netns_external = true;
	} else if (net) {
		cleanup_free char *why = NULL;
		if (o->netns_out ||
		    (o->netns_fresh_if_plain && !o->tcp_established &&
		     tern_netns_is_plain(config, &st->cgroup_paths, st->pid, dir->dir, &why))) {
			cleanup_free char *nspath = tern_strdup_printf("/proc/%d/ns/net", st->pid);
			struct stat nst;
			if (stat(nspath, &nst) < 0)
				return tern_error_make(err, errno, "%s", nspath);
			cleanup_free char *ext = tern_strdup_printf(
			    "net[%lu]:%s", (unsigned long)nst.st_ino, TERN_CKPT_NETNS_KEY);
			criu_local_add_external(s->opts, ext);
			tern_ckpt_network_lock_skip(s->opts);
			d->netns_fresh = true;
		} else {
			if (why)
				tern_debug("the network namespace goes into the images: %s", why);
			/* criu's lock keeps TCP connections from being reset
			 * while they are dumped and restored; with none kept it
			 * only costs iptables runs (a user namespace's restore:
			 * a third of it). The restore follows the descriptor. */
			if (!o->tcp_established) {
				tern_ckpt_network_lock_skip(s->opts);
				d->netns_unlocked = true;
			}
			/* as good as new, but only criu can make it (it belongs
			 * to the user namespace criu makes): made empty, then
			 * set up by tern, rather than refilled by ip and
			 * iptables runs */
			cleanup_free char *uwhy = NULL;
			if (!o->tcp_established &&
			    tern_netns_is_plain_in_userns(config, &st->cgroup_paths, st->pid,
							  dir->dir, &uwhy))
				d->netns_empty = true;
			else if (uwhy)
				tern_debug("the network namespace is restored from the images: %s",
					   uwhy);
			/* a veth from the container's own namespace to ours (the
			 * operator's plumbing): restore must be told its outer
			 * name. Not finding them is no reason to refuse a
			 * checkpoint that most likely has none: only such a
			 * restore would fail. */
			tern_error *e = NULL;
			if (tern_veth_pairs(st->pid, &d->veths, &e) < 0) {
				tern_warn("container `%s`: the veths of its network namespace: %s",
					  st->id, e->msg);
				tern_error_free(e);
			}
		}
	}
	return 0;
}

/* The mounts criu is told to leave out: cgroup mounts, empty masked
 * directories and tmpfs, cgroup v1 tmpfs trees, host devices. */
static int declare_left_out_mounts(criu_session *s, const oci_state *st, const oci_config *config,
				   descriptor *d, tern_error **err)
{
	int ret;

	ret = external_cgroup_mounts(s, st->pid, d, err);
	if (ret < 0)
		return ret;
	if (config->linux_)
		d->masked = tern_ckpt_masked_empty(st->pid, config->linux_->masked_paths);
	for (char **m = d->masked; m && *m; m++)
		criu_local_add_ext_mount(s->opts, *m, *m);
	cleanup_strv char **tmpfs =
	    tern_ckpt_tmpfs_empty(st->pid, config->mounts, config->mounts_len);
	for (char **m = tmpfs; m && *m; m++)
		if (!strv_has(d->masked, *m)) {
			d->tmpfs = tern_strv_add(d->tmpfs, tern_xstrdup(*m));
			criu_local_add_ext_mount(s->opts, *m, *m);
		}
	/* cgroup v1's tmpfs, and a tmpfs of config.json that holds only what
	 * tern put there (/dev), go as their trees */
	for (size_t i = 0; i < config->mounts_len; i++) {
		const oci_mount *cm = &config->mounts[i];
		const char *dest = cm->destination;
		if (cm->type == NULL || dest == NULL || dest[0] != '/' || strstr(dest, "/.."))
			continue;
		bool candidate = strcmp(cm->type, "cgroup") == 0 ||
				 (strcmp(cm->type, "tmpfs") == 0 && !strv_has(tmpfs, dest) &&
				  !strv_has(d->masked, dest));
		if (candidate && tern_ckpt_tmpfs_tree(st->pid, dest, config, &d->trees))
			criu_local_add_ext_mount(s->opts, dest, dest);
	}
	ret =
	    tern_ckpt_devbinds_find(st->pid, (const char *const *)d->ext_mounts, &d->devbinds, err);
	if (ret < 0)
		return ret;
	for (char **m = d->devbinds; m && *m; m++) {
		cleanup_free char *mp = tern_xstrdup(*m);
		*strchr(mp, ' ') = '\0';
		criu_local_add_ext_mount(s->opts, mp, mp);
	}
	return 0;
}

static int prepare_dump(criu_session *s, const oci_state *st, const oci_config *config,
			const tern_ckpt_opts *o, tern_container_dir *dir, tern_error **err)
{
	descriptor d = {.id = tern_xstrdup(st->id)};
	int ret;

	ret = set_dump_options(s, st, o, err);
	if (ret < 0)
		return ret;
	declare_bind_mounts(s, st, config, &d);
	ret = declare_netns(s, st, config, o, dir, &d, err);
	if (ret == 0)
		ret = declare_left_out_mounts(s, st, config, &d, err);
	if (ret < 0) {
		tern_ckpt_descriptor_clear(&d);
		return ret;
	}
	tern_ckpt_external_stdio(s, st->pid, &d);
	for (size_t i = 0; i < st->cgroup_paths.len; i++) {
		const char *b = strrchr(st->cgroup_paths.items[i].key, '/');
		if (b && strcmp(b + 1, "unified") == 0 && st->cgroup_paths.items[i].value[0] == '/')
			d.unified_cg = tern_xstrdup(st->cgroup_paths.items[i].value);
	}
	d.terminal = config->process && config->process->terminal;
	if (d.terminal)
		/* the pty master is held outside the container (by whoever got
		 * it from --console-socket): the slave is restored as an
		 * orphan and a new master handed to restore's console socket */
		criu_local_set_orphan_pts_master(s->opts, true);
	ret = tern_ckpt_apply_common(s->opts, o, err);
	if (ret == 0)
		ret = tern_ckpt_descriptor_write(s->images_fd, &d, err);
	if (ret == 0) {
		cleanup_free char *cfg = tern_strdup_printf("%s/%s", dir->dir, TERN_CONFIG_COPY);
		ret = tern_ckpt_copy_file_into(s->images_fd, TERN_CKPT_CONFIG, cfg, err);
	}
	tern_ckpt_descriptor_clear(&d);
	return ret;
}

/* --status-fd (-1 once written; libcriu's notify callback has no user
 * argument) */
static int dump_status_fd = -1;

static void signal_status_fd(void)
{
	char zero = 0;

	if (dump_status_fd < 0)
		return;
	if (write(dump_status_fd, &zero, 1) < 0)
		tern_debug("--status-fd %d: %s", dump_status_fd, strerror(errno));
	close(dump_status_fd);
	dump_status_fd = -1;
}

/* A lazy dump does not return until the restoring side has fetched every
 * page; whoever waits on --status-fd learns when the images (all but the
 * memory) are written and the page server listens, so it can start the
 * restore. */
/* --leave-frozen: the cgroup to freeze while criu still holds the tasks
 * (NULL otherwise); whether that failed. */
static const oci_map *dump_freeze_paths;
static bool dump_freeze_failed;

/* While criu holds the dumped tasks (ptrace-stopped, which the cgroup v2
 * freezer counts as frozen), freeze their cgroup: when criu lets them go
 * they stay frozen, exactly as dumped. Done at "status-ready" for a lazy
 * dump (whose "post-dump" comes only after the last page), at "post-dump"
 * otherwise. */
static void freeze_dumped(void)
{
	tern_error *e = NULL;

	if (dump_freeze_paths == NULL)
		return;
	if (tern_cgroup_freeze(dump_freeze_paths, true, &e) < 0) {
		tern_warn("freeze after the dump: %s", e->msg);
		tern_error_free(e);
		dump_freeze_failed = true;
	}
	dump_freeze_paths = NULL;
}

/* keep_net_locked: the container's init (0 otherwise, or once done) */
static pid_t dump_lock_pid;

/* Before criu unlocks the network at the end of the dump, and at the same
 * points as freeze_dumped for the same reason. */
static void lock_dumped_net(void)
{
	tern_error *e = NULL;

	if (dump_lock_pid == 0)
		return;
	if (tern_netns_lock(dump_lock_pid, &e) < 0) {
		tern_warn("%s", e->msg);
		tern_error_free(e);
		dump_freeze_failed = true;
	}
	dump_lock_pid = 0;
}

static int dump_notify(char *action, criu_notify_arg_t na)
{
	(void)na;
	if (strcmp(action, "status-ready") == 0) {
		lock_dumped_net();
		freeze_dumped();
		signal_status_fd();
	} else if (strcmp(action, "post-dump") == 0) {
		lock_dumped_net();
		freeze_dumped();
	}
	/* a non-zero answer makes criu fail the dump and let the tasks run */
	return dump_freeze_failed ? -1 : 0;
}

/* criu 4.2's lazy page server sizes a pipe to 1024 pages (4 MiB) and does
 * not check that it got it: without CAP_SYS_RESOURCE the kernel caps
 * pipes at fs.pipe-max-size (1 MiB by default), and the dump then fails
 * only when the first page is asked for ("page-pipe: splice: Bad file
 * descriptor"), with the restore already under way. */
#define CRIU_LAZY_PIPE_BYTES (4L << 20)

static bool has_effective_cap(cap_value_t cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;

	if (caps == NULL)
		return false;
	cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

static int check_lazy_dump(const tern_ckpt_opts *o, tern_error **err)
{
	if (o->page_server == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "--lazy-pages needs --page-server IP:PORT: the "
					     "restoring side fetches the memory from there");
	if (o->pre_dump)
		return tern_error_make_quiet(err, EINVAL,
					     "--lazy-pages cannot be combined with --pre-dump");
	return tern_criu_lazy_pipes_check(err);
}

int tern_criu_lazy_pipes_check(tern_error **err)
{
	cleanup_free char *data = NULL;
	size_t len;

	if (has_effective_cap(CAP_SYS_RESOURCE))
		return 0;
	if (tern_read_file("/proc/sys/fs/pipe-max-size", &data, &len, 64, NULL) < 0)
		return 0; /* let criu try */
	long max = strtol(data, NULL, 10);
	if (max >= CRIU_LAZY_PIPE_BYTES)
		return 0;
	return tern_error_make_quiet(
	    err, EPERM,
	    "--lazy-pages: criu's page server needs 4 MiB pipes, but fs.pipe-max-size is "
	    "%ld bytes and tern runs without CAP_SYS_RESOURCE to exceed it; raise it "
	    "(sysctl fs.pipe-max-size=%ld) or run with CAP_SYS_RESOURCE",
	    max, CRIU_LAZY_PIPE_BYTES);
}

/* criu waits for a v1 freezer in 100 ms steps, and a cgroup is hardly
 * ever FROZEN at its first look, so every dump it freezes lasts 100 ms
 * longer than it needs. Frozen here first (tern's freeze looks every
 * millisecond), criu dumps the cgroup as it finds it and leaves it frozen:
 * *thaw says to thaw it after the dump. Not when it is frozen already (a
 * paused container, or tern snapshot's freeze: they stay as they were),
 * stays frozen (--leave-frozen), or the dump is lazy (criu holds the
 * tasks until the restore has every page; it freezes them itself). v2:
 * criu stops the tasks itself (see take_frozen in src/continuity/snapshot-take.c). */
static int freeze_before_dump(const oci_state *st, const tern_ckpt_opts *o, bool *thaw,
			      tern_error **err)
{
	cleanup_free char *freezer = NULL;

	*thaw = false;
	if (o->lazy_pages || o->leave_frozen || !freezer_dir(&st->cgroup_paths, &freezer) ||
	    tern_cgroup_is_frozen(&st->cgroup_paths))
		return 0;
	int ret = tern_cgroup_freeze(&st->cgroup_paths, true, err);
	if (ret < 0)
		return tern_error_wrap(err, "checkpoint: freeze `%s`", st->id);
	*thaw = true;
	return 0;
}

/* After a dump that stopped the container, criu has killed its frozen
 * tasks, which die when thawed: wait for the init to be gone, so that the
 * container reads stopped once checkpoint returns. */
static void thaw_after_dump(const oci_state *st, const tern_ckpt_opts *o, bool dumped)
{
	tern_error *e = NULL;

	if (tern_cgroup_freeze(&st->cgroup_paths, false, &e) < 0) {
		tern_warn("thaw `%s` after the dump: %s", st->id, e->msg);
		tern_error_free(e);
		return;
	}
	if (!dumped || o->leave_running || o->pre_dump)
		return;
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	if (pidfd >= 0 && poll(&pfd, 1, 5000) == 0)
		tern_warn("container `%s`: its init %d is still there 5 s after the dump", st->id,
			  (int)st->pid);
}

/* What makes the container one this dump cannot take: refused before
 * anything is made. */
static int check_checkpointable(const oci_state *st, const oci_config *config, const char *id,
				const tern_container_dir *dir_used, const tern_ckpt_opts *o,
				tern_error **err)
{
	cleanup_free char *v1_freezer = NULL;

	if (strcmp(st->status, "running") != 0 && strcmp(st->status, "paused") != 0)
		return tern_error_make_quiet(
		    err, EINVAL, "cannot checkpoint container `%s`: it is %s, not running", id,
		    st->status);
	/* criu dumps the cgroups too: it must see them */
	if (tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0)
		return tern_error_wrap(err, "cannot checkpoint container `%s`", id);
	/* criu dumps a v1 cgroup frozen as it is; without one it stops the
	 * tasks itself, and tasks the v2 freezer holds never stop for it (such
	 * a checkpoint had not returned after 5 minutes in the v2 guest) */
	if (strcmp(st->status, "paused") == 0 && !freezer_dir(&st->cgroup_paths, &v1_freezer))
		return tern_error_make_quiet(
		    err, EINVAL,
		    "cannot checkpoint container `%s`: it is paused, and criu cannot dump "
		    "processes the cgroup v2 freezer holds; resume it first",
		    id);
	if (config == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "cannot checkpoint container `%s`: its config copy in "
					     "`%s` is unreadable",
					     id, dir_used->dir);
	/* without root: what criu's unprivileged mode cannot do */
	int ret = tern_criu_rootless_refuse("checkpoint", id, config, o->tcp_established,
					    o->lazy_pages, err);
	if (ret < 0)
		return ret;
	/* CRIU would have to dump the moved devices with the namespace and
	 * make them anew (a veth, not a physical device), and the namespace
	 * the dump ends takes them along: virtual ones destroyed, physical
	 * ones back to the host under their container names. */
	if (tern_netdev_in_own_netns(config))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "cannot checkpoint container `%s`: linux.netDevices moved host devices into "
		    "its own network namespace, which CRIU cannot carry them in; a container "
		    "keeps its devices across a checkpoint only in a network namespace joined "
		    "by path",
		    id);
	if (o->lazy_pages) {
		ret = check_lazy_dump(o, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The work directory, and the image directory: made 0700 where it is
 * not there yet (*created_images), and marked partial until the dump is
 * whole. */
static int make_dump_dirs(tern_container_dir *dir_used, const char *images, const tern_ckpt_opts *o,
			  bool *created_images, tern_error **err)
{
	int ret;

	if (o->work_path && tern_mkdir_p(o->work_path, 0700, err) < 0)
		return tern_error_wrap(err, "--work-path");
	/* a checkpoint of this container killed half-way left its images */
	tern_state_remove_partial_images(dir_used);
	ret = make_image_dir(images, created_images, err);
	if (ret < 0)
		return ret;
	if (*created_images) {
		ret = tern_state_mark_partial_images(dir_used, images, err);
		if (ret < 0) {
			tern_remove_tree(images);
			return ret;
		}
	}
	return 0;
}

/* What criu's notifications do during this dump (see dump_notify). */
static void set_dump_notify(criu_session *s, const oci_state *st, const oci_config *config,
			    const tern_ckpt_opts *o)
{
	dump_status_fd = o->status_fd;
	dump_freeze_paths = o->leave_frozen && !o->pre_dump ? &st->cgroup_paths : NULL;
	dump_freeze_failed = false;
	{
		const oci_namespace *net = tern_ckpt_config_ns(config, OCI_NS_NETWORK);
		dump_lock_pid =
		    o->keep_net_locked && o->leave_running && !o->pre_dump && net && !net->path
			? st->pid
			: 0;
	}
	if (o->lazy_pages || dump_freeze_paths || dump_lock_pid)
		criu_local_set_notify_cb(s->opts, dump_notify);
}

/* criu's dump, frozen around it where that is quicker, bounded in time;
 * a failure says why (criu's log). */
static int run_dump(criu_session *s, const oci_state *st, const char *id, const tern_ckpt_opts *o,
		    tern_criu_swrk *swrk, tern_container_dir *dir_used, bool created_images,
		    tern_error **err)
{
	bool thaw_after = false;
	int ret;

	ret = freeze_before_dump(st, o, &thaw_after, err);
	if (ret < 0)
		return ret;
	tern_fault_point("checkpoint:frozen");
	/* a hung criu must not hang tern; a lazy dump lasts as long as the
	 * restore takes its pages, which its caller bounds */
	tern_criu_deadline dl = {.pid = 0, .also = swrk && swrk->fd >= 0 ? swrk->pid : 0};
	int bound = o->criu_timeout_ms > 0 ? o->criu_timeout_ms : tern_criu_timeout_ms();
	if (!o->lazy_pages)
		tern_criu_deadline_start(&dl, bound);
	if (swrk && swrk->fd >= 0) {
		criu_local_set_service_fd(s->opts, swrk->fd);
		/* (libcriu closes it when the call is over) */
		swrk->fd = -1;
	}
	ret = dump_private(s, o->pre_dump);
	bool killed = tern_criu_deadline_stop(&dl);
	if (swrk)
		tern_criu_swrk_finish(swrk);
	if (thaw_after)
		thaw_after_dump(st, o, ret == 0);
	if (ret < 0 && killed)
		return tern_error_make_quiet(
		    err, ETIMEDOUT,
		    "checkpoint of `%s`: criu %s did not finish within %d s: "
		    "killed it; `%s` %s",
		    id, o->pre_dump ? "pre-dump" : "dump", bound / 1000, id,
		    thaw_after ? "runs on" : "is left as it was");
	if (ret < 0) {
		/* the image or work directory may go (a snapshot's, a
		 * migration's, the one tern made): the logs stay in the
		 * container's state directory (delete removes them) */
		cleanup_free char *why = tern_ckpt_log_tail(s, dir_used->dir, false);
		return tern_error_make_quiet(err, ECANCELED,
					     "checkpoint of `%s`: criu %s failed: %s", id,
					     o->pre_dump ? "pre-dump" : "dump", why);
	}
	return ret;
}

int tern_container_checkpoint(const tern_runtime *rt, const char *criu, const char *id,
			      const tern_ckpt_opts *o, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	tern_container_dir *dir_used;
	criu_session s = {.images_fd = -1, .work_fd = -1};
	const char *images = o->image_path ? o->image_path : "checkpoint";
	oci_state *st = NULL;
	oci_config *config = NULL;
	bool created_images = false;
	tern_criu_swrk own = {.fd = -1};
	tern_criu_swrk *swrk = o->swrk;
	int ret;

	/* criu loads while the state is read and the dump prepared */
	if (swrk == NULL && !o->pre_dump && !o->lazy_pages) {
		tern_error *e = NULL;
		if (tern_criu_swrk_start(&own, criu, &e) == 0) {
			swrk = &own;
		} else {
			tern_debug("criu started by libcriu: %s", e->msg);
			tern_error_free(e);
		}
	}
	/* (tern snapshot holds the lock already) */
	ret = o->into_dir ? tern_container_read(o->into_dir, &st, &config, err)
			  : tern_container_load(rt, id, &dir, &st, &config, err);
	if (ret < 0)
		return ret;
	dir_used = o->into_dir ? o->into_dir : dir;
	tern_fault_point("checkpoint:state-loaded");
	ret = check_checkpointable(st, config, id, dir_used, o, err);
	if (ret < 0)
		goto out;
	ret = make_dump_dirs(dir_used, images, o, &created_images, err);
	if (ret < 0)
		goto out;
	tern_fault_point("checkpoint:image-dir-made");
	ret =
	    tern_ckpt_session_open(&s, criu, images, o->work_path,
				   o->pre_dump ? "pre-dump.log" : "dump.log", o->criu_checked, err);
	if (ret < 0)
		goto out;
	if (o->pre_dump && !o->criu_checked) {
		ret = check_dirty_tracking(&s, err);
		if (ret < 0)
			goto out;
	}
	ret = prepare_dump(&s, st, config, o, dir_used, err);
	if (ret < 0)
		goto out;
	tern_fault_point("checkpoint:dump-prepared");
	set_dump_notify(&s, st, config, o);
	ret = run_dump(&s, st, id, o, swrk, dir_used, created_images, err);
	if (ret < 0)
		goto out;
	/* whole: from now on they are the caller's */
	if (created_images)
		tern_state_unmark_partial_images(dir_used);
	tern_fault_point("checkpoint:dumped");
	/* runc writes a byte when the images are complete (with lazy pages
	 * it was written when the page server came up) */
	signal_status_fd();
out:
	if (ret < 0 && created_images) {
		tern_remove_tree(images);
		tern_state_unmark_partial_images(dir_used);
	}
	tern_ckpt_session_clear(&s);
	if (swrk)
		tern_criu_swrk_finish(swrk);
	oci_state_free(st);
	oci_config_free(config);
	return ret;
}
