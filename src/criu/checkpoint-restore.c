/* The restore: the new bundle checked against what the checkpoint needs,
 * the state and cgroup made before any restored process runs, the
 * external mounts mapped to the new config's sources, criu run in a mount
 * namespace of our own, and everything undone when it fails. */
#include "checkpoint-internal.h"
#include "checkpoint-userns.h"
#include "idmap.h"
#include "cgroup.h"
#include "cgroup-systemd.h"
#include "checkpoint-devbinds.h"
#include "checkpoint-masked.h"
#include "checkpoint-netns.h"
#include "container-cgroup.h"
#include "criu-rootless.h"
#include "criu-deadline.h"
#include "criu-lazy-daemon.h"
#include "criu-uffd.h"
#include "fault.h"
#include "hooks.h"
#include "failure-logs.h"
#include "log.h"
#include "memory-merge.h"
#include "netdev.h"
#include "restore-mountpoints.h"
#include "terminal.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- restore ---- */

/* libcriu's notify callback has no user argument */
static struct {
	const oci_config *config;
	oci_state *state;
	tern_error *hook_err;
	const oci_map *freeze_paths; /* freeze_at_resume: the cgroup to freeze */
	bool frozen;
	tern_container_dir *dir; /* where the state goes once the pid is known */
	bool setup_netns;	 /* criu makes the network namespace empty: set it up */
} notify_ctx;

/* Until the lazy-pages daemon says it listens (a byte on its status fd),
 * at most 10 s; false if it never does (it died: EOF). */
static bool lazy_daemon_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;
	int r;

	do
		r = poll(&p, 1, 10000);
	while (r < 0 && errno == EINTR);
	return r > 0 && read(fd, &b, 1) == 1;
}

/* runc runs the prestart and createRuntime hooks when CRIU has set up the
 * namespaces of the restored tree, before its processes resume: we do
 * the same, with the new config's hooks. */
static int restore_notify(char *action, criu_notify_arg_t na)
{
	const oci_hooks *h = notify_ctx.config->hooks;

	/* criu runs: what tern starts from here (hooks) does not get it */
	tern_uffd_preload_disarm();
#ifdef TERN_FAULT_INJECTION
	/* restore dies while criu waits for the answer to a notification */
	char point[64];
	snprintf(point, sizeof(point), "restore:criu-%s", action);
	tern_fault_point(point);
#endif

	/* the tasks wait at their last sigreturn under criu's ptrace: frozen
	 * now, they leave criu frozen (criu's own pre-resume script slot) */
	if (strcmp(action, "pre-resume") == 0 && notify_ctx.freeze_paths) {
		if (tern_cgroup_freeze(notify_ctx.freeze_paths, true, &notify_ctx.hook_err) < 0)
			return -1;
		notify_ctx.frozen = true;
		return 0;
	}
	if (strcmp(action, "setup-namespaces") != 0)
		return 0;
	notify_ctx.state->pid = criu_notify_pid(na);
	notify_ctx.state->status = "creating";
	/* before any hook, and before criu restores a socket in it */
	if (notify_ctx.setup_netns &&
	    tern_netns_setup_in(notify_ctx.config, notify_ctx.state->pid, &notify_ctx.hook_err) < 0)
		return -1;
	/* The tree exists from here on, and criu may resume it even if this
	 * tern dies: recorded now, `state` can tell it runs and `delete`
	 * finds it. */
	notify_ctx.state->pid_start_time = tern_process_start_time(notify_ctx.state->pid);
	if (tern_state_write(notify_ctx.dir, notify_ctx.state, &notify_ctx.hook_err) < 0)
		return -1;
	tern_fault_point("restore:state-pid-written");
	if (h == NULL)
		return 0;
	cleanup_free char *json = NULL;
	if (oci_state_to_json(notify_ctx.state, OCI_STATE_HOOK, &json, NULL) < 0)
		return -1;
	if (tern_hooks_run(&h->prestart, "prestart", json, &notify_ctx.hook_err) < 0 ||
	    tern_hooks_run(&h->create_runtime, "createRuntime", json, &notify_ctx.hook_err) < 0)
		return -1;
	return 0;
}

/* The config's bind at mount point `mp`: its destination, or the
 * destination resolved inside the new rootfs (a symlink in the image, see
 * prepare_dump) */
static const oci_mount *find_bind(const oci_config *c, const char *rootfs, const char *mp)
{
	for (size_t i = 0; i < c->mounts_len; i++)
		if (tern_mount_is_bind(&c->mounts[i]) && strcmp(c->mounts[i].destination, mp) == 0)
			return &c->mounts[i];
	for (size_t i = 0; i < c->mounts_len; i++) {
		if (!tern_mount_is_bind(&c->mounts[i]))
			continue;
		cleanup_free char *r = tern_mount_dest_resolved(rootfs, c->mounts[i].destination);
		if (strcmp(r, mp) == 0)
			return &c->mounts[i];
	}
	return NULL;
}

typedef struct {
	tern_container c;
	descriptor d;
	criu_session s;
	const tern_ckpt_opts *o;
	/* o->into_dir opened anew in restore's mount namespace (the lock
	 * stays with the caller's fd) */
	tern_container_dir *into;
	int netns_fd;
	bool in_scope; /* tern itself is in the container's systemd scope */
	/* the tmpfs and idmapped copies made for criu (in our namespace):
	 * their mount points' names, unmounted and removed after the restore */
	char **made;
	/* where they are made: the state directory, or, for a user namespace
	 * whose root is not this user, a directory of their own that it can
	 * reach (checkpoint-userns.h) */
	int src_dirfd;
	const char *src_dir;
	char *yard;
	bool empty_netns; /* criu makes the network namespace empty */
	/* the part of the images' unified cgroup criu is to make (see
	 * note_unified_cgroup): the whole path, and how long its first
	 * missing directory's path is */
	char *unified_made;
	size_t unified_made_top;
} restore_ctx;

/* the mount of the new config.json a tmpfs tree of the checkpoint becomes */
static bool config_has_tree_mount(const oci_config *c, const char *dest)
{
	for (size_t i = 0; c && i < c->mounts_len; i++)
		if (c->mounts[i].type &&
		    (strcmp(c->mounts[i].type, "cgroup") == 0 ||
		     strcmp(c->mounts[i].type, "tmpfs") == 0) &&
		    c->mounts[i].destination && strcmp(c->mounts[i].destination, dest) == 0)
			return true;
	return false;
}

static int restore_mounts(restore_ctx *r, tern_error **err)
{
	r->src_dirfd = r->c.dir->dirfd;
	r->src_dir = r->c.dir->dir;
	if (tern_ckpt_config_userns_unprivileged(r->c.config)) {
		int ret = tern_ckpt_userns_yard(r->s.work_fd, &r->yard, &r->src_dirfd, err);
		if (ret < 0)
			return ret;
		r->src_dir = r->yard;
	}
	for (char **m = r->d.ext_mounts; m && *m; m++) {
		const oci_mount *bind = find_bind(r->c.config, r->c.rootfs, *m);
		if (bind == NULL || bind->source == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "mounts: the checkpoint has a bind mount at `%s`, the new "
			    "config.json has none there",
			    *m);
		cleanup_free char *src =
		    bind->source[0] == '/' ? tern_xstrdup(bind->source)
					   : tern_strdup_printf("%s/%s", r->c.bundle, bind->source);
		if (access(src, F_OK) < 0)
			return tern_error_make(err, errno, "mounts: bind source `%s` for `%s`", src,
					       *m);
		if (tern_idmap_wanted(bind)) {
			cleanup_free char *name = tern_strdup_printf(TERN_CKPT_IDMAP_PREFIX "%zu",
								     (size_t)(m - r->d.ext_mounts));
			char *mapped = NULL;
			int ret = tern_ckpt_idmapped_source(r->c.config, bind, src, r->src_dirfd,
							    r->src_dir, name, &mapped, err);
			if (ret < 0)
				return ret;
			r->made = tern_strv_add(r->made, tern_xstrdup(name));
			free(src);
			src = mapped;
		}
		criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	for (char **m = r->d.cg_mounts; m && *m; m++) {
		cleanup_free char *key = tern_xstrdup(*m);
		char *host = strchr(key, ' ');
		*host++ = '\0';
		const char *cg = NULL;
		for (size_t i = 0; i < r->c.cgroup_paths.len; i++)
			if (strcmp(r->c.cgroup_paths.items[i].key, host) == 0)
				cg = r->c.cgroup_paths.items[i].value;
		if (cg == NULL)
			return tern_error_make_quiet(
			    err, ENOENT,
			    "the checkpoint has a cgroup mount of the "
			    "hierarchy `%s`, which this host does not have",
			    host);
		cleanup_free char *src = tern_strdup_printf("%s%s", host, cg);
		criu_local_add_ext_mount(r->s.opts, key, src);
	}
	for (char **m = r->d.devbinds; m && *m; m++) {
		cleanup_free char *mp = NULL, *src = NULL;
		int ret = tern_ckpt_devbind_source(*m, r->c.config, &mp, &src, err);
		if (ret < 0)
			return ret;
		criu_local_add_ext_mount(r->s.opts, mp, src);
	}
	if (r->d.masked) {
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_masked_source(r->src_dirfd, r->src_dir, TERN_CKPT_MASKED_DIR,
						  &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(TERN_CKPT_MASKED_DIR));
		for (char **m = r->d.masked; *m; m++)
			criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	for (char **l = r->d.trees; l && *l; l++) {
		char dest[4096];
		if (strncmp(*l, "tmpfs-tree ", 11) != 0 || sscanf(*l + 11, "%4095s", dest) != 1)
			continue;
		if (!config_has_tree_mount(r->c.config, dest))
			return tern_error_make_quiet(err, EINVAL,
						     "the checkpoint's tmpfs on `%s` has no "
						     "cgroup or tmpfs mount in config.json",
						     dest);
		cleanup_free char *name =
		    tern_strdup_printf(TERN_CKPT_TREE_PREFIX "%zu", (size_t)(l - r->d.trees));
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_tmpfs_tree_source(r->src_dirfd, r->src_dir, name, dest,
						      r->c.config, r->d.trees, &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(name));
		criu_local_add_ext_mount(r->s.opts, dest, src);
	}
	for (char **m = r->d.tmpfs; m && *m; m++) {
		cleanup_free char *name =
		    tern_strdup_printf(TERN_CKPT_TMPFS_PREFIX "%zu", (size_t)(m - r->d.tmpfs));
		cleanup_free char *src = NULL;
		int ret = tern_ckpt_tmpfs_source(r->src_dirfd, r->src_dir, name, r->c.config, *m,
						 &src, err);
		if (ret < 0)
			return ret;
		r->made = tern_strv_add(r->made, tern_xstrdup(name));
		criu_local_add_ext_mount(r->s.opts, *m, src);
	}
	/* CRIU mounts the restored tree below --root, which must be a mount
	 * point (we are in a mount namespace of our own, see
	 * tern_container_restore) */
	if (mount(r->c.rootfs, r->c.rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind the rootfs `%s` onto itself", r->c.rootfs);
	criu_local_set_root(r->s.opts, r->c.rootfs);
	return 0;
}

/* `pid` and its descendants (read from /proc/PID/task/TID/children) into
 * the cgroup `paths`, best effort. */
static void enter_tree(const oci_map *paths, pid_t pid, int depth)
{
	cleanup_free char *tasks = tern_strdup_printf("/proc/%d/task", pid);
	DIR *d;

	tern_cgroup_enter(paths, pid, NULL);
	if (depth > 64 || (d = opendir(tasks)) == NULL)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		cleanup_free char *f = tern_strdup_printf("%s/%s/children", tasks, e->d_name);
		cleanup_free char *kids = NULL;
		if (tern_read_file(f, &kids, NULL, 0, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *t = strtok_r(kids, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
			enter_tree(paths, (pid_t)atoi(t), depth + 1);
	}
	closedir(d);
}

static int restore_cgroup_roots(restore_ctx *r)
{
	const oci_map *p = &r->c.cgroup_paths;
	bool same = true;

	for (size_t i = 1; i < p->len; i++)
		if (strcmp(p->items[i].value, p->items[0].value) != 0)
			same = false;
	if (p->len && same)
		return criu_local_add_cg_root(r->s.opts, NULL, p->items[0].value);
	for (size_t i = 0; i < p->len; i++) {
		const char *b = strrchr(p->items[i].key, '/');
		b = b ? b + 1 : p->items[i].key;
		if (strcmp(b, "unified") == 0)
			continue;
		cleanup_free char *ctrl =
		    strcmp(b, "systemd") == 0 ? tern_xstrdup("name=systemd") : tern_xstrdup(b);
		criu_local_add_cg_root(r->s.opts, ctrl, p->items[i].value);
	}
	return 0;
}

/* Without a root for the unified hierarchy, criu puts the tree in the
 * cgroup the images name there, made if it is missing (the source's,
 * gone with it: a restore under another id, a clone whose source was
 * deleted meanwhile). What of it criu is to make is noted here, before
 * criu runs, and removed once the tree left it (enter_tree) or the
 * restore failed: never a directory that was there before. */
static void note_unified_cgroup(restore_ctx *r)
{
	const oci_map *p = &r->c.cgroup_paths;

	for (size_t i = 0; r->d.unified_cg && i < p->len; i++) {
		const char *b = strrchr(p->items[i].key, '/');
		if (b == NULL || strcmp(b + 1, "unified") != 0 ||
		    strcmp(p->items[i].value, r->d.unified_cg) == 0)
			continue;
		char *full = tern_strdup_printf("%s%s", p->items[i].key, r->d.unified_cg);
		for (char *c = full + strlen(p->items[i].key) + 1;; c++) {
			if (*c != '/' && *c != '\0')
				continue;
			char was = *c;
			*c = '\0';
			bool missing = access(full, F_OK) < 0 && errno == ENOENT;
			*c = was;
			if (missing) {
				r->unified_made = full;
				r->unified_made_top = (size_t)(c - full);
				return;
			}
			if (was == '\0')
				break;
		}
		free(full);
	}
}

static void remove_unified_made(restore_ctx *r)
{
	char *p = r->unified_made;

	while (p && rmdir(p) == 0 && strlen(p) > r->unified_made_top)
		*strrchr(p, '/') = '\0';
	free(p);
	r->unified_made = NULL;
}

static int load_new_bundle(restore_ctx *r, const char *images, tern_error **err)
{
	cleanup_free char *config_path = NULL;
	char *msg = NULL;
	int ret;

	r->c.bundle = tern_absolute_path(r->c.opts->bundle ? r->c.opts->bundle : ".");
	config_path = r->o->config_path ? tern_xstrdup(r->o->config_path)
					: tern_strdup_printf("%s/config.json", r->c.bundle);
	ret = oci_config_parse_file(config_path, &r->c.config, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "config.json: invalid");
		free(msg);
		return ret;
	}
	/* criu knows nothing of resctrl, and tern does not yet put the
	 * restored tree in a group: refused rather than silently left out */
	if (r->c.config->linux_ && r->c.config->linux_->intel_rdt)
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.intelRdt: restore does not put the restored "
					     "processes in a resctrl group (not implemented); "
					     "remove linux.intelRdt from the config to restore");
	cleanup_free char *joined =
	    r->c.config->root->path[0] == '/'
		? tern_xstrdup(r->c.config->root->path)
		: tern_strdup_printf("%s/%s", r->c.bundle, r->c.config->root->path);
	r->c.rootfs = realpath(joined, NULL);
	if (r->c.rootfs == NULL)
		return tern_error_make(err, errno, "root.path: rootfs `%s`", joined);
	if (r->d.terminal && r->c.opts->console_socket == NULL)
		return tern_error_make_quiet(err, EINVAL,
					     "the checkpoint in `%s` has a terminal: restore needs "
					     "--console-socket to send the new pty master to",
					     images);
	/* The devices were in the checkpointed namespace, and went with it
	 * (see the dump's refusal); a namespace joined by path still has
	 * them, and nothing is moved. */
	if (tern_netdev_in_own_netns(r->c.config))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.netDevices: restore does not move host devices into a network "
		    "namespace of the container's own; a container keeps its devices across "
		    "a checkpoint only in a network namespace joined by path");
	if (r->o->join_netns && (r->d.netns_external || r->d.netns_fresh)) {
		r->netns_fd = fcntl(r->o->netns_fd, F_DUPFD_CLOEXEC, 3);
		if (r->netns_fd < 0)
			return tern_error_make(err, errno, "the network namespace to restore into");
	} else if (r->d.netns_external) {
		const oci_namespace *net = tern_ckpt_config_ns(r->c.config, OCI_NS_NETWORK);
		if (net == NULL || net->path == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.namespaces: the checkpointed container joined a network "
			    "namespace by path; the new config.json must name one too");
		r->netns_fd = open(net->path, O_RDONLY | O_CLOEXEC);
		if (r->netns_fd < 0)
			return tern_error_make(err, errno, "linux.namespaces: network path `%s`",
					       net->path);
	} else if (r->d.netns_fresh) {
		/* left out of the images as it was as good as new: a new one,
		 * or the one the new config joins */
		const oci_namespace *net = tern_ckpt_config_ns(r->c.config, OCI_NS_NETWORK);
		if (net == NULL)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.namespaces: the checkpointed container had a network "
			    "namespace of its own; the new config.json has none");
		if (net->path) {
			r->netns_fd = open(net->path, O_RDONLY | O_CLOEXEC);
			if (r->netns_fd < 0)
				return tern_error_make(
				    err, errno, "linux.namespaces: network path `%s`", net->path);
		} else {
			int ret = tern_netns_new(r->c.config, &r->netns_fd, err);
			if (ret < 0)
				return tern_error_wrap(err, "linux.namespaces: network");
		}
	}
	if (r->c.rt->systemd_cgroup && !tern_systemd_booted())
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--systemd-cgroup: systemd is not running as PID 1 on this host, so there "
		    "is no systemd to create the restored container's scope");
	return 0;
}

static int check_images(const char *images, tern_error **err)
{
	struct stat st;
	cleanup_free char *inv = tern_strdup_printf("%s/inventory.img", images);

	if (stat(images, &st) < 0)
		return tern_error_make(err, errno, "--image-path `%s`", images);
	if (!S_ISDIR(st.st_mode))
		return tern_error_make(err, ENOTDIR, "--image-path `%s`", images);
	if (stat(inv, &st) < 0)
		return tern_error_make_quiet(err, ENOENT,
					     "--image-path `%s` holds no checkpoint (no "
					     "inventory.img): No such file or directory",
					     images);
	return 0;
}

static void fill_restored_state(oci_state *s, const restore_ctx *r)
{
	memset(s, 0, sizeof(*s));
	s->oci_version = r->c.config->oci_version;
	s->id = (char *)r->c.id;
	s->status = "running";
	s->pid = r->c.pid;
	s->bundle = r->c.bundle;
	s->annotations = r->c.config->annotations;
	s->rootfs = r->c.rootfs;
	s->created = r->c.created;
	s->owner = "";
	s->cgroup_path = r->c.cgroup_path;
	s->cgroup_paths = r->c.cgroup_paths;
	s->own_cgroup = r->c.own_cgroup;
	s->systemd_cgroup = r->c.rt->systemd_cgroup;
	s->config_path = TERN_CONFIG_COPY;
}

static int send_pty_master(restore_ctx *r, tern_error **err)
{
	int master = criu_get_orphan_pts_master_fd();

	if (master < 0)
		return tern_error_make_quiet(err, EIO, "criu sent no pty master for the terminal");
	fcntl(master, F_SETFD, FD_CLOEXEC);
	int ret = tern_console_send_fd(r->c.console_sock, master, "console", err);
	close(master);
	return ret < 0 ? tern_error_wrap(err, "--console-socket `%s`", r->c.opts->console_socket)
		       : 0;
}

static int reuse_cgroup(restore_ctx *r, tern_error **err)
{
	oci_state *old = NULL;
	int ret = tern_state_read(r->into, &old, err);

	if (ret < 0)
		return ret;
	r->c.cgroup_path = old->cgroup_path ? tern_xstrdup(old->cgroup_path) : NULL;
	ret = oci_map_copy(&r->c.cgroup_paths, &old->cgroup_paths);
	/* (removed by the container's delete, not by a failed restore) */
	r->c.own_cgroup = false;
	oci_state_free(old);
	return ret < 0 ? tern_error_make(err, -ret, "the cgroup of `%s`", r->c.id) : 0;
}

/* The checkpoint and the new bundle read and checked, and criu's
 * session opened on the images. */
static int open_restore(restore_ctx *r, const char *criu, const char *images,
			const tern_ckpt_opts *o, tern_error **err)
{
	int ret;

	ret = check_images(images, err);
	if (ret < 0)
		return ret;
	ret = tern_ckpt_descriptor_read(images, &r->d, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:images-read");
	ret = load_new_bundle(r, images, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:bundle-loaded");
	if (r->c.opts->console_socket) {
		r->c.console_sock = tern_console_socket_connect(r->c.opts->console_socket, err);
		if (r->c.console_sock < 0)
			return tern_error_wrap(err, "--console-socket `%s`",
					       r->c.opts->console_socket);
	}
	if (o->work_path && tern_mkdir_p(o->work_path, 0700, err) < 0)
		return tern_error_wrap(err, "--work-path");
	ret = tern_ckpt_session_open(&r->s, criu, images, o->work_path, "restore.log",
				     o->criu_checked, err);
	if (ret < 0)
		return ret;
	ret = tern_ckpt_apply_common(r->s.opts, o, err);
	if (ret < 0)
		return ret;
	/* a daemon started just before us may not have made its socket yet */
	if (o->lazy_pages && !o->lazy_ready_wait) {
		ret = tern_lazy_socket_wait(r->s.work_fd, r->s.work_dir, images, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* What criu is told of the restore beyond the common options: the
 * stdio, the network namespace and the veths the descriptor records. */
static void set_restore_opts(restore_ctx *r, const tern_ckpt_opts *o)
{
	criu_local_set_tcp_close(r->s.opts, o->tcp_close);
	if (o->parent_path)
		criu_local_set_parent_images(r->s.opts, (char *)o->parent_path);
	if (o->lsm_profile)
		criu_local_set_lsm_profile(r->s.opts, (char *)o->lsm_profile);
	if (o->lsm_mount_context)
		criu_local_set_lsm_mount_context(r->s.opts, (char *)o->lsm_mount_context);
	if (r->d.terminal)
		criu_local_set_orphan_pts_master(r->s.opts, true);
	for (int fd = 0; fd < 3; fd++) {
		bool seen = false;
		if (r->d.stdio[fd] == NULL)
			continue;
		for (int j = 0; j < fd; j++)
			seen =
			    seen || (r->d.stdio[j] && strcmp(r->d.stdio[j], r->d.stdio[fd]) == 0);
		if (seen)
			continue;
		if (o->stdio_given && o->stdio_fds[fd] >= 0) {
			fcntl(o->stdio_fds[fd], F_SETFD, 0);
			criu_local_add_inherit_fd(r->s.opts, o->stdio_fds[fd], r->d.stdio[fd]);
		} else {
			criu_local_add_inherit_fd(r->s.opts, fd, r->d.stdio[fd]);
		}
	}
	if (r->netns_fd >= 0) {
		fcntl(r->netns_fd, F_SETFD, 0);
		criu_local_add_inherit_fd(r->s.opts, r->netns_fd, TERN_CKPT_NETNS_KEY);
	}
	if ((r->d.netns_fresh || r->d.netns_unlocked) && !o->tcp_established)
		tern_ckpt_network_lock_skip(r->s.opts);
	/* a plain one of the container's user namespace: criu makes it
	 * empty and tern sets it up (restore_notify) */
	r->empty_netns = r->d.netns_empty && r->d.netns_unlocked && !o->tcp_established &&
			 r->d.veths == NULL && r->netns_fd < 0 && tern_ckpt_empty_netns(r->s.opts);
	/* the outer end comes back in this (the restoring tern's) network
	 * namespace under its old name, with no address: see
	 * checkpoint-net.h */
	for (char **m = r->d.veths; m && *m; m++) {
		cleanup_free char *inner = tern_xstrdup(*m);
		char *outer = strchr(inner, ' ');
		*outer++ = '\0';
		cleanup_free char *ext = tern_strdup_printf("veth[%s]:%s", inner, outer);
		criu_local_add_external(r->s.opts, ext);
	}
	/* (criu looks for netdev[INNER] first) */
	for (char **m = o->netdevs_in; m && *m; m++) {
		cleanup_free char *inner = tern_xstrdup(*m);
		char *name = strchr(inner, ' ');
		*name++ = '\0';
		cleanup_free char *ext = tern_strdup_printf("netdev[%s]:%s", inner, name);
		criu_local_add_external(r->s.opts, ext);
	}
}

/* The state directory with the new config, and the cgroup the tree goes
 * into, recorded in the state (`creating`) as they are made. */
static int make_restore_state(restore_ctx *r, const tern_ckpt_opts *o, oci_state *s,
			      tern_error **err)
{
	int ret;

	if (r->into) {
		r->c.dir = r->into;
	} else {
		ret = tern_state_dir_create(r->c.rt->root, r->c.id, &r->c.dir, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:state-dir-made");
	r->c.created = o->created ? tern_xstrdup(o->created) : tern_state_now_rfc3339();
	{
		cleanup_free char *src = o->config_path
					     ? tern_xstrdup(o->config_path)
					     : tern_strdup_printf("%s/config.json", r->c.bundle);
		ret = tern_ckpt_copy_file_into(r->c.dir->dirfd, TERN_CONFIG_COPY, src, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:config-copied");
	/* the cgroup of the *new* config, with its limits, before any
	 * restored process runs; CRIU puts the tree there (cgroup root).
	 * Into a container's own state directory (rollback): its cgroup as
	 * it is, limits changed by `update` included. */
	if (r->into) {
		ret = reuse_cgroup(r, err);
		if (ret < 0)
			return ret;
	} else {
		ret = tern_container_cgroup_resolve(&r->c, err);
		if (ret < 0)
			return ret;
		/* recorded before the cgroup exists, as create does: a
		 * restore killed from here on leaves it to `delete` */
		if (!r->c.rt->systemd_cgroup)
			r->c.own_cgroup = tern_cgroup_missing(&r->c.cgroup_paths);
		fill_restored_state(s, r);
		s->status = "creating";
		ret = tern_state_write(r->c.dir, s, err);
		if (ret < 0)
			return ret;
		tern_fault_point("restore:state-creating-written");
		r->c.own_cgroup = false; /* what make creates is ours */
		ret = tern_container_cgroup_make(&r->c, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("restore:cgroup-made");
	if (r->c.rt->systemd_cgroup) {
		/* systemd starts a scope only around a process, and the
		 * restored ones do not exist yet: tern stands in for them
		 * (runc hands it criu's pid), criu starts as its child inside
		 * the scope and puts the tree there; tern then leaves */
		r->in_scope = true;
		ret = tern_container_cgroup_join(&r->c, getpid(), err);
		if (ret < 0)
			return ret;
	}
	fill_restored_state(s, r);
	s->status = "creating";
	ret = tern_state_write(r->c.dir, s, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:state-cgroup-written");
	return 0;
}

/* Where a failed restore keeps criu's logs: the container's own state
 * directory when it stays (rollback), the caller's choice otherwise. */
static const char *keep_logs(const restore_ctx *r, const tern_ckpt_opts *o)
{
	return r->into ? r->into->dir : o->failure_logs_in;
}

/* criu's restore, bounded in time, with the notifications that run the
 * hooks and freeze the tree; a failure says why. */
static int run_criu_restore(restore_ctx *r, const char *images, const tern_ckpt_opts *o,
			    oci_state *s, tern_error **err)
{
	int ret;

	notify_ctx.config = r->c.config;
	notify_ctx.state = s;
	notify_ctx.freeze_paths = o->freeze_at_resume ? &r->c.cgroup_paths : NULL;
	notify_ctx.frozen = false;
	notify_ctx.dir = r->c.dir;
	notify_ctx.setup_netns = r->empty_netns;
	criu_local_set_notify_cb(r->s.opts, restore_notify);
	/* criu connects to the daemon early, before any notification this
	 * side could wait in: wait here, after tern's own preparations */
	if (o->lazy_pages && o->lazy_ready_wait && !lazy_daemon_ready(o->lazy_ready_fd)) {
		/* (its log is in the work directory, where it met criu) */
		cleanup_free char *log =
		    tern_failure_logs_keep(keep_logs(r, o), r->s.work_dir, "lazy-pages.log");
		cleanup_free char *at = tern_strdup_printf("%s/lazy-pages.log", r->s.work_dir);
		const char *say = log			  ? "log:"
				  : o->work_goes	  ? "its log is not kept: it was"
				  : access(at, F_OK) == 0 ? "log:"
							  : "it left no log at";
		return tern_error_make_quiet(
		    err, EIO,
		    "restore of `%s`: criu lazy-pages did not get ready (it "
		    "exited, or not within 10 s; %s %s)",
		    r->c.id, say, log ? log : at);
	}
	/* criu forks the restored processes from its own: they inherit */
	if (o->merge_memory && tern_memory_merge_mark_self(true, err) < 0)
		return tern_error_wrap(err, "restore of `%s`", r->c.id);
	/* a hung criu must not hang tern: past the bound criu and the tree it
	 * was restoring are killed, and the failure below removes the rest */
	tern_criu_deadline dl = {.pid = 0};
	int bound = o->criu_timeout_ms > 0 ? o->criu_timeout_ms : tern_criu_timeout_ms();
	tern_criu_deadline_start(&dl, bound);
	/* (processes in a user namespace of their own: their userfaultfd
	 * through /dev/userfaultfd, criu-uffd.h) */
	if (o->lazy_pages && tern_ckpt_uffd_way(images) == TERN_UFFD_DEVICE)
		tern_uffd_preload_arm();
	ret = criu_local_restore_child(r->s.opts);
	tern_uffd_preload_disarm();
	bool killed = tern_criu_deadline_stop(&dl);
	if (o->merge_memory) {
		tern_error *e = NULL;
		if (tern_memory_merge_mark_self(false, &e) < 0) {
			tern_debug("%s", e->msg);
			tern_error_free(e);
		}
	}
	if (r->in_scope) {
		tern_cgroup_return_self();
		r->in_scope = false;
	}
	s->pid = 0;
	if (killed) {
		/* (it may have returned just as the bound passed: the tree
		 * is killed all the same) */
		if (ret > 0)
			waitpid(ret, NULL, 0);
		return tern_error_make_quiet(
		    err, ETIMEDOUT,
		    "restore of `%s`: criu restore did not finish within %d s: "
		    "killed it and what it had restored",
		    r->c.id, bound / 1000);
	}
	if (ret <= 0) {
		if (notify_ctx.hook_err) {
			tern_error_free(*err);
			*err = steal_pointer(&notify_ctx.hook_err);
			return tern_error_wrap(err, "restore of `%s`", r->c.id);
		}
		cleanup_free char *why = tern_ckpt_log_tail(&r->s, keep_logs(r, o), o->work_goes);
		return tern_error_make_quiet(
		    err, ECANCELED, "restore of `%s`: criu restore failed: %s", r->c.id, why);
	}
	r->c.pid = ret;
	tern_fault_point("restore:criu-restored");
	return 0;
}

/* The restored tree frozen as asked, in its cgroup, its pty master sent
 * and its state `running`. */
static int finish_restore(restore_ctx *r, const tern_ckpt_opts *o, oci_state *s, tern_error **err)
{
	int ret;

	/* criu only logs a failed pre-resume: the tree may run unfrozen */
	if (o->freeze_at_resume && !notify_ctx.frozen) {
		if (notify_ctx.hook_err) {
			tern_error_free(*err);
			*err = steal_pointer(&notify_ctx.hook_err);
			return tern_error_wrap(err, "restore of `%s`: freezing it", r->c.id);
		}
		return tern_error_make_quiet(err, EIO,
					     "restore of `%s`: criu never said it was about to "
					     "resume the tasks, so they were not frozen",
					     r->c.id);
	}
	/* with --manage-cgroups-mode ignore CRIU leaves the tree where it
	 * was; on a hybrid host it has no cgroup root for the unified
	 * hierarchy and puts the tree in the cgroup the images name there
	 * (the source container's, for a clone): the whole tree goes into the
	 * container's cgroup in every hierarchy */
	enter_tree(&r->c.cgroup_paths, r->c.pid, 0);
	remove_unified_made(r);
	if (r->d.terminal) {
		ret = send_pty_master(r, err);
		if (ret < 0)
			return ret;
	}
	fill_restored_state(s, r);
	s->pid_start_time = tern_process_start_time(r->c.pid);
	ret = tern_state_write(r->c.dir, s, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:state-running-written");
	if (r->c.opts->pid_file) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%d", r->c.pid);
		ret = tern_write_file(r->c.opts->pid_file, buf, (size_t)len, 0644, err);
		if (ret < 0)
			return tern_error_wrap(err, "--pid-file");
	}
	return 0;
}

static int do_restore(restore_ctx *r, const char *criu, const char *images, const tern_ckpt_opts *o,
		      tern_error **err)
{
	oci_state s;
	int ret;

	ret = open_restore(r, criu, images, o, err);
	if (ret < 0)
		return ret;
	/* criu's tasks read some images as the container's root, which a
	 * user namespace of its own may map to an unprivileged host id (a
	 * snapshot's restore has done it already; it is done once) */
	ret = tern_ckpt_images_for_userns(images, err);
	if (ret < 0)
		return tern_error_wrap(err, "restore of `%s`", r->c.id);
	set_restore_opts(r, o);

	ret = make_restore_state(r, o, &s, err);
	if (ret < 0)
		return ret;
	restore_cgroup_roots(r);
	note_unified_cgroup(r);
	/* a rootfs that never saw a create (podman's restore --import makes
	 * a fresh one) lacks the mount points CRIU needs */
	ret = tern_restore_make_mountpoints(r->c.rootfs, r->c.bundle, r->c.config, err);
	if (ret < 0)
		return tern_error_wrap(err, "restore of `%s`", r->c.id);
	ret = restore_mounts(r, err);
	if (ret < 0)
		return ret;
	tern_fault_point("restore:mounts-made");

	ret = run_criu_restore(r, images, o, &s, err);
	if (ret < 0)
		return ret;
	return finish_restore(r, o, &s, err);
}

static void rollback_restore(restore_ctx *r)
{
	if (r->c.pid > 0) {
		kill(r->c.pid, SIGKILL);
		waitpid(r->c.pid, NULL, 0);
		r->c.pid = 0;
	}
	if (r->in_scope)
		tern_cgroup_return_self();
	if (r->c.own_cgroup)
		tern_cgroup_remove(
		    &r->c.cgroup_paths,
		    r->c.rt->systemd_cgroup ? tern_systemd_state_unit(r->c.cgroup_path) : NULL,
		    NULL);
	if (r->c.dir && r->c.dir != r->into) {
		tern_state_dir_remove(r->c.dir, NULL);
		tern_state_dir_freep(&r->c.dir);
	}
}

int tern_container_restore(const tern_runtime *rt, const char *criu, const char *id,
			   const tern_create_opts *copts, const tern_ckpt_opts *o, int *exit_status,
			   tern_error **err)
{
	restore_ctx r = {
	    .c = {.rt = rt, .opts = copts, .id = id, .console_sock = -1, .console_recv = -1},
	    .s = {.images_fd = -1, .work_fd = -1},
	    .o = o,
	    .netns_fd = -1};
	const char *images = o->image_path ? o->image_path : "checkpoint";
	int ret;

	*exit_status = 0;
	ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	/* without root: before anything is made */
	ret =
	    tern_criu_rootless_refuse("restore", id, NULL, o->tcp_established, o->lazy_pages, err);
	if (ret < 0)
		return ret;
	if (!copts->detach && !copts->no_subreaper)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Everything restore mounts (the rootfs bind CRIU wants as --root)
	 * goes in a mount namespace of our own, so nothing is left on the host
	 * whatever happens. First of all: a directory opened before would
	 * belong to the old namespace, and CRIU's mounts below it (the cgroup
	 * yard in its work dir) would fail with EINVAL. */
	if (unshare(CLONE_NEWNS) < 0)
		return tern_error_make(err, errno, "unshare the mount namespace for restore");
	/* slave, not private: nothing goes back to the host, yet CRIU can
	 * still copy a shared mount's peer group onto the restored mounts */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return tern_error_make(err, errno, "make / a slave mount for restore");
	if (o->into_dir) {
		r.into = tern_xmalloc0(sizeof(*r.into));
		r.into->root = tern_xstrdup(o->into_dir->root);
		r.into->id = tern_xstrdup(o->into_dir->id);
		r.into->dir = tern_xstrdup(o->into_dir->dir);
		r.into->dirfd = open(r.into->dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		if (r.into->dirfd < 0) {
			ret = tern_error_make(err, errno, "state directory `%s`", r.into->dir);
			tern_state_dir_free(r.into);
			return ret;
		}
	}
	ret = do_restore(&r, criu, images, o, err);
	/* criu has bound the masked paths' tmpfs and the config's empty ones
	 * into the container (or failed): our mounts of them go, or the state
	 * directory could not be removed */
	for (char **m = r.made; m && *m; m++) {
		cleanup_free char *path = tern_strdup_printf("%s/%s", r.src_dir, *m);
		umount2(path, MNT_DETACH);
		if (unlinkat(r.src_dirfd, *m, AT_REMOVEDIR) < 0 && errno == ENOTDIR)
			unlinkat(r.src_dirfd, *m, 0);
	}
	if (r.yard)
		tern_ckpt_userns_yard_done(r.s.work_fd, &r.yard, &r.src_dirfd);
	tern_strv_freep(&r.made);
	if (ret < 0)
		rollback_restore(&r);
	remove_unified_made(&r);
	pid_t pid = r.c.pid;
	tern_ckpt_session_clear(&r.s);
	tern_ckpt_descriptor_clear(&r.d);
	if (r.netns_fd >= 0)
		close(r.netns_fd);
	if (r.c.console_sock >= 0)
		close(r.c.console_sock);
	oci_config_free(r.c.config);
	tern_state_dir_free(r.c.dir != r.into ? r.c.dir : NULL);
	tern_state_dir_free(r.into);
	free(r.c.bundle);
	free(r.c.rootfs);
	free(r.c.cgroup_path);
	oci_map_clear(&r.c.cgroup_paths);
	free(r.c.created);
	if (ret < 0 || copts->detach)
		return ret;
	/* foreground: wait as `run` does, then delete */
	tern_forward_signals(pid);
	*exit_status = tern_wait_exit_status(pid);
	tern_forward_signals(0);
	tern_error *derr = NULL;
	if (tern_container_delete(rt, id, true, &derr) < 0) {
		tern_warn("%s", derr->msg);
		tern_error_free(derr);
	}
	return 0;
}
