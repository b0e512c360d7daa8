#include "container.h"
#include "fault.h"
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "container-cgroup.h"
#include "hooks.h"
#include "host-mounts.h"
#include "inherited-fds.h"
#include "log.h"
#include "lsm.h"
#include "proc-attrs.h"
#include "spawn.h"
#include "sync.h"
#include "terminal.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int hook_state_from_disk(const oci_state *st, const char *status, char **json)
{
	oci_state s = *st;
	s.status = (char *)status;
	return oci_state_to_json(&s, OCI_STATE_HOOK, json, NULL);
}

static void free_container(tern_container *c)
{
	if (c->console_sock >= 0)
		close(c->console_sock);
	if (c->console_recv >= 0)
		close(c->console_recv);
	tern_ns_plan_close(&c->ns);
	tern_netdev_set_free(c->netdevs);
	tern_seccomp_filter_free(c->seccomp);
	tern_mempolicy_clear(&c->mempolicy);
	oci_config_free(c->config);
	tern_state_dir_free(c->dir);
	free(c->bundle);
	free(c->rootfs);
	free(c->cgroup_path);
	oci_map_clear(&c->cgroup_paths);
	tern_rdt_clear(&c->rdt);
	free(c->created);
}

/* linux.memoryPolicy against this machine and its kernel, made ready for
 * the init; process.execCPUAffinity is for `tern exec` only (config.md:
 * not for the init), but a bad one fails create rather than the first
 * exec. */
static int check_numa(tern_container *c, tern_error **err)
{
	tern_cpu_affinity aff;
	int ret;

	ret = tern_mempolicy_prepare(c->config, NULL, &c->mempolicy, err);
	if (ret < 0)
		return ret;
	ret = tern_mempolicy_probe(&c->mempolicy, err);
	if (ret < 0)
		return ret;
	ret = tern_cpu_affinity_prepare(c->config->process->exec_cpu_affinity, NULL, &aff, err);
	tern_cpu_affinity_clear(&aff);
	return ret;
}

/* Everything that can be checked before the first thing is created, so
 * that bad input leaves nothing behind. */
static int load_bundle(tern_container *c, tern_error **err)
{
	cleanup_free char *config_path = NULL;
	char *msg = NULL;
	struct stat st;
	int ret;

	c->bundle = tern_absolute_path(c->opts->bundle ? c->opts->bundle : ".");
	if (c->bundle == NULL)
		return tern_error_make(err, errno, "bundle path");
	config_path = tern_strdup_printf("%s/config.json", c->bundle);
	ret = oci_config_parse_file(config_path, &c->config, &msg);
	if (ret < 0) {
		tern_error_make_literal(err, -ret, msg ? msg : "config.json: invalid");
		free(msg);
		return ret;
	}
	for (char **w = c->config->warnings; w && *w; w++)
		tern_warn("%s", *w);
	{
		cleanup_free char *joined =
		    c->config->root->path[0] == '/'
			? tern_xstrdup(c->config->root->path)
			: tern_strdup_printf("%s/%s", c->bundle, c->config->root->path);
		/* canonical: the rootfs stage compares mount paths against it */
		c->rootfs = realpath(joined, NULL);
		if (c->rootfs == NULL)
			return tern_error_make(err, errno, "root.path: rootfs `%s`", joined);
	}
	if (stat(c->rootfs, &st) < 0)
		return tern_error_make(err, errno, "root.path: rootfs `%s`", c->rootfs);
	if (!S_ISDIR(st.st_mode))
		return tern_error_make(err, ENOTDIR, "root.path: rootfs `%s`", c->rootfs);
	ret = tern_ns_plan_make(c->config, &c->ns, err);
	if (ret < 0)
		return ret;
	ret = tern_netdev_check(c->config, &c->ns, err);
	if (ret < 0)
		return ret;
	ret = tern_rlimits_check(c->config->process->rlimits, c->config->process->rlimits_len, err);
	if (ret < 0)
		return ret;
	ret = tern_proc_attrs_check(c->config, err);
	if (ret < 0)
		return ret;
	ret = tern_lsm_check_config(c->config, err);
	if (ret < 0)
		return ret;
	ret = tern_sysctl_check(c->config, err);
	if (ret < 0)
		return ret;
	ret = tern_rdt_plan(c->config->linux_ ? c->config->linux_->intel_rdt : NULL, c->id, &c->rdt,
			    err);
	if (ret < 0)
		return ret;
	ret = check_numa(c, err);
	if (ret < 0)
		return ret;
	/* The systemd driver asks systemd (PID 1) over D-Bus for a scope;
	 * without systemd there is nobody to ask. */
	if (c->rt->systemd_cgroup && !tern_systemd_booted())
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "--systemd-cgroup: systemd is not running as PID 1 on this host, so "
		    "there is no systemd to create the container's scope; run without "
		    "--systemd-cgroup (linux.cgroupsPath is then a cgroupfs path)");
	if (c->config->linux_) {
		ret = tern_cgroup_validate_resources(c->config->linux_->resources, err);
		if (ret < 0)
			return ret;
	}
	if (c->config->linux_ && c->config->linux_->seccomp) {
		/* its errors name the field (linux.seccomp.syscalls[2].action...) */
		ret =
		    tern_seccomp_compile(c->config->linux_->seccomp, c->rt->root, &c->seccomp, err);
		if (ret < 0)
			return ret;
	}
	if (c->config->process->terminal && c->opts->console_socket == NULL) {
		if (!c->internal_console)
			return tern_error_make(
			    err, EINVAL,
			    "process.terminal is true: a container that tern does "
			    "not run in the foreground needs --console-socket");
		/* A foreground run with a terminal: tern receives the pty
		 * master itself and proxies it to its own stdio. */
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			return tern_error_make(err, errno, "socketpair for the console");
		c->console_recv = sv[0];
		c->console_sock = sv[1];
	}
	if (c->opts->console_socket) {
		c->console_sock = tern_console_socket_connect(c->opts->console_socket, err);
		if (c->console_sock < 0)
			return tern_error_wrap(err, "--console-socket `%s`",
					       c->opts->console_socket);
	}
	return 0;
}

static int copy_config(tern_container *c, tern_error **err)
{
	cleanup_free char *src = tern_strdup_printf("%s/config.json", c->bundle);
	cleanup_free char *data = NULL;
	cleanup_close int fd = -1;
	size_t len;
	int ret;

	ret = tern_read_file(src, &data, &len, 0, err);
	if (ret < 0)
		return ret;
	fd =
	    openat(c->dir->dirfd, TERN_CONFIG_COPY, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "copy config.json to `%s`", c->dir->dir);
	ret = tern_write_all(fd, data, len);
	if (ret < 0)
		return tern_error_make(err, -ret, "copy config.json to `%s`", c->dir->dir);
	return 0;
}

static int write_pid_file(const char *path, pid_t pid, tern_error **err)
{
	cleanup_free char *tmp = tern_strdup_printf("%s.tern-tmp", path);
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d", pid);
	int ret = tern_write_file(tmp, buf, (size_t)len, 0644, err);

	if (ret < 0)
		return tern_error_wrap(err, "--pid-file");
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		return tern_error_make(err, errno, "--pid-file `%s`", path);
	}
	return 0;
}

/* Undo everything a failed create made: the process, the network devices
 * it moved in (the set holds their namespace, dead init or not), the mounts
 * it made in our mount namespace when it has none of its own (mounts in its
 * own die with it), the cgroup, the state directory. */
static void rollback_create(tern_container *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	tern_netdev_undo(c->netdevs);
	if (c->dir) {
		tern_error *e = NULL;
		if (tern_host_mounts_undo(c->dir->dirfd, &e) < 0) {
			/* Keep the record (and so the state) for `delete`. */
			tern_warn("%s; `tern delete %s` unmounts the rest once that is solved",
				  e->msg, c->id);
			tern_error_free(e);
			tern_state_dir_free(c->dir);
			c->dir = NULL;
		}
	}
	if (c->own_cgroup)
		tern_cgroup_remove(
		    &c->cgroup_paths,
		    c->rt->systemd_cgroup ? tern_systemd_state_unit(c->cgroup_path) : NULL, NULL);
	tern_rdt_undo(&c->rdt);
	if (c->dir) {
		tern_state_dir_remove(c->dir, NULL);
	}
}

/* How the init learns that `start` opened exec.fifo without waiting in a
 * blocking open of it, which would keep a directory of procfs open all the
 * while (init.c, wait_for_start): an inotify watch for IN_OPEN. Made here,
 * by the parent, which may read the fifo (a user namespace's root may only
 * write it) and which the child inherits it from through the clone. */
static int watch_exec_fifo(tern_container *c, tern_error **err)
{
	cleanup_free char *path =
	    tern_strdup_printf("/proc/self/fd/%d/%s", c->dir->dirfd, TERN_EXEC_FIFO);

	c->exec_fifo_watch = inotify_init1(IN_CLOEXEC);
	if (c->exec_fifo_watch < 0)
		return tern_error_make(err, errno, "inotify_init1 for the exec fifo");
	if (inotify_add_watch(c->exec_fifo_watch, path, IN_OPEN | IN_DONT_FOLLOW) < 0)
		return tern_error_make(err, errno, "watch exec fifo in `%s`", c->dir->dir);
	return 0;
}

/* The state directory's contents before anything else is made: the exec
 * fifo, its watch, the config copy. */
static int make_state_files(tern_container *c, tern_error **err)
{
	int ret;

	c->created = tern_state_now_rfc3339();
	if (mkfifoat(c->dir->dirfd, TERN_EXEC_FIFO, 0622) < 0)
		return tern_error_make(err, errno, "create exec fifo in `%s`", c->dir->dir);
	/* mkfifo honours the umask; the container user must be able to write it. */
	if (fchmodat(c->dir->dirfd, TERN_EXEC_FIFO, 0622, 0) < 0)
		return tern_error_make(err, errno, "chmod exec fifo");
	ret = watch_exec_fifo(c, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:exec-fifo-made");
	ret = copy_config(c, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:config-copied");
	return 0;
}

/* The state "creating", then what the process is confined to before it can
 * ever run: cgroup, resctrl group, and (without a mount namespace) the
 * record of the host's mounts under the rootfs. */
static int prepare_confinement(tern_container *c, tern_error **err)
{
	int ret;

	ret = tern_container_cgroup_resolve(c, err);
	if (ret < 0)
		return ret;
	/* Recorded before the cgroup exists, as ours if it does not yet: a
	 * tern killed from here on leaves a state that `delete`, or the next
	 * create of this id, uses to remove the cgroup. (A systemd scope is
	 * ours only once systemd has started it for us: spawn's join.) */
	if (!c->rt->systemd_cgroup)
		c->own_cgroup = tern_cgroup_missing(&c->cgroup_paths);
	{
		oci_state s;
		tern_container_fill_state(&s, c, "creating");
		ret = tern_state_write(c->dir, &s, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("create:state-creating-written");
	/* Limits before the process can ever run: the cgroup is made now, or
	 * by spawn while the child sets up its first mounts (it cannot exec
	 * before it is in the cgroup). */
	if (!tern_container_cgroup_make_after_clone(c)) {
		c->own_cgroup = false; /* what make creates is ours */
		ret = tern_container_cgroup_make(c, err);
		if (ret < 0)
			return ret;
		tern_fault_point("create:cgroup-made");
	}
	/* The resctrl group with its schemata, too, before the process can
	 * run: spawn puts the child in it with the cgroup. */
	ret = tern_rdt_apply(&c->rdt, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:rdt-group-made");
	/* No mount namespace: the mounts are made in ours, and nothing would
	 * unmount them. What is under the rootfs now is not the container's. */
	if (!c->ns.has[OCI_NS_MOUNT]) {
		ret = tern_host_mounts_begin(c->dir->dirfd, c->rootfs, err);
		if (ret < 0)
			return ret;
		tern_fault_point("create:host-mounts-begun");
	}
	return 0;
}

/* The container is made: the state "created", and --pid-file. */
static int record_created(tern_container *c, tern_error **err)
{
	int ret;

	if (!c->ns.has[OCI_NS_MOUNT]) {
		ret = tern_host_mounts_commit(c->dir->dirfd, err);
		if (ret < 0)
			return ret;
	}

	oci_state s;
	tern_container_fill_state(&s, c, "created");
	s.pid_start_time = tern_process_start_time(c->pid);
	/* for `state` and `start` after a start killed half-way: see
	 * tern_state_init_started */
	tern_process_exe_id(c->pid, &s.init_exe_dev, &s.init_exe_ino);
	ret = tern_state_write(c->dir, &s, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:state-created-written");
	if (c->opts->pid_file) {
		ret = write_pid_file(c->opts->pid_file, c->pid, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("create:pid-file-written");
	return 0;
}

/* create, up to the container waiting on exec.fifo. On success the sync
 * socket is handed back so the caller decides when to release the child. */
static int do_create(tern_container *c, const char *id, int *sync_fd, tern_error **err)
{
	int ret;

	c->exec_fifo_watch = -1;
	/* before anything of ours is open: those slots go to the container */
	ret = tern_inherited_fds_check(c->n_listen_fds > 0 ? "--preserve-fds (with LISTEN_FDS)"
							   : "--preserve-fds",
				       c->opts->preserve_fds + c->n_listen_fds, err);
	if (ret < 0)
		return ret;
	ret = load_bundle(c, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:bundle-loaded");
	ret = tern_state_dir_create(c->rt->root, id, &c->dir, err);
	if (ret < 0)
		return ret;
	tern_fault_point("create:state-dir-made");
	ret = make_state_files(c, err);
	if (ret < 0)
		goto fail;
	ret = prepare_confinement(c, err);
	if (ret < 0)
		goto fail;

	ret = tern_spawn_container(c, sync_fd, err);
	tern_closep(&c->exec_fifo_watch); /* the init's copy is the one used */
	if (ret < 0) {
		c->pid = 0; /* spawn killed and reaped it */
		goto fail;
	}
	tern_fault_point("create:spawned");
	ret = record_created(c, err);
	if (ret < 0)
		goto fail_sync;
	return 0;

fail_sync:
	close(*sync_fd);
	*sync_fd = -1;
fail:
	tern_closep(&c->exec_fifo_watch);
	rollback_create(c);
	return ret;
}

static int finish_create(int sync_fd, tern_error **err)
{
	int ret = tern_sync_send(sync_fd, SYNC_FINISH, 0, err);
	close(sync_fd);
	return ret;
}

static void count_listen_fds(tern_container *c)
{
	/* socket activation: LISTEN_FDS fds after the preserved ones pass on */
	const char *v = getenv("LISTEN_FDS");
	c->n_listen_fds = v ? atoi(v) : 0;
	if (c->n_listen_fds < 0)
		c->n_listen_fds = 0;
}

int tern_container_create(const tern_runtime *rt, const char *id, const tern_create_opts *opts,
			  tern_error **err)
{
	tern_container c = {
	    .rt = rt, .opts = opts, .id = id, .console_sock = -1, .console_recv = -1};
	int sync_fd = -1;
	int ret;

	/* a bundle that fails to load frees the container before its plan */
	tern_ns_plan_init(&c.ns);
	count_listen_fds(&c);
	ret = do_create(&c, id, &sync_fd, err);
	if (ret == 0) {
		tern_fault_point("create:finishing");
		ret = finish_create(sync_fd, err);
	}
	free_container(&c);
	return ret;
}

/* Open the fifo without blocking and wait for the child's byte, checking
 * that the child is still alive (a dead child never writes). Dead includes
 * a zombie: under `run` the init is our own child, and nobody reaps it
 * while we wait here. */
static int release_container(tern_container_dir *dir, const oci_state *st, tern_error **err)
{
	cleanup_close int fd =
	    openat(dir->dirfd, TERN_EXEC_FIFO, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	char byte;

	if (fd < 0)
		return tern_error_make(err, errno, "open exec fifo of `%s`", dir->id);
	tern_fault_point("start:exec-fifo-opened");
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int n = poll(&pfd, 1, 100);
		if (n < 0 && errno != EINTR)
			return tern_error_make(err, errno, "wait for `%s`", dir->id);
		if (n > 0 && (pfd.revents & POLLIN)) {
			ssize_t r = read(fd, &byte, 1);
			if (r == 1) {
				tern_fault_point("start:started-byte-read");
				break;
			}
		}
		if (tern_process_start_time(st->pid) != st->pid_start_time ||
		    tern_process_is_zombie(st->pid))
			return tern_error_make_quiet(
			    err, ESRCH, "container `%s` exited before it started", dir->id);
		/* a start killed after it released the init took the byte */
		if (tern_state_init_started(st))
			break;
	}
	unlinkat(dir->dirfd, TERN_EXEC_FIFO, 0);
	tern_fault_point("start:exec-fifo-removed");
	return 0;
}

static int run_poststart(const oci_config *config, const oci_state *st, tern_error **err)
{
	cleanup_free char *json = NULL;

	if (config == NULL || config->hooks == NULL || config->hooks->poststart.len == 0)
		return 0;
	if (hook_state_from_disk(st, "running", &json) < 0)
		return 0;
	return tern_hooks_run_in(st->bundle, &config->hooks->poststart, "poststart", json, err);
}

int tern_container_start(const tern_runtime *rt, const char *id, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	oci_config *config = NULL;
	int ret;

	ret = tern_container_load(rt, id, &dir, &st, &config, err);
	if (ret < 0)
		return ret;
	if (st->migrated_to) {
		/* (never created: nothing to start; no --force either) */
		ret = tern_error_make_quiet(
		    err, EINVAL,
		    "cannot start container `%s`: it is migrated: it was handed over to %s (as "
		    "`%s`), which runs it; `tern delete %s` removes what is left here",
		    id, st->migrated_to, st->migrated_as ? st->migrated_as : id, id);
		goto out;
	}
	if (strcmp(st->status, "created") != 0) {
		ret = tern_error_make_quiet(err, EINVAL, "cannot start container `%s`: it is %s",
					    id, st->status);
		goto out;
	}
	ret = release_container(dir, st, err);
	if (ret < 0)
		goto out;
	tern_fault_point("start:released");
	ret = run_poststart(config, st, err);
	if (ret < 0) {
		/* runtime-spec 1.3 (runc too): a failing poststart hook fails
		 * start, and the container is stopped and destroyed, poststop
		 * hooks and all, as a delete would (delete takes the lock) */
		tern_error *e = NULL;
		tern_state_dir_freep(&dir);
		if (tern_container_delete(rt, id, true, &e) < 0) {
			tern_warn("deleting `%s` after its poststart hook failed: %s", id, e->msg);
			tern_error_free(e);
		}
		tern_error_wrap(err, "container `%s` stopped and deleted", id);
	}
out:
	oci_state_free(st);
	oci_config_free(config);
	return ret;
}

int tern_container_state_json(const tern_runtime *rt, const char *id, char **json, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = tern_container_peek(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	ret = oci_state_to_json(st, OCI_STATE_CLI, json, NULL);
	oci_state_free(st);
	if (ret < 0)
		return tern_error_make(err, -ret, "serialize state of `%s`", id);
	return 0;
}

/* ---- signals ----
 *
 * A pid names a process only while that process lives: once the init has
 * died and been reaped, the kernel may give its pid to anything, and a
 * kill(2) by pid would signal that (runc 1.1 checks the start time, then
 * kills by pid: the window stays). So tern pins the process first with a
 * pidfd (pidfd_open), then checks that the pinned pid is still
 * the init (its start time, recorded in state.json when it was created),
 * and signals through the pidfd (pidfd_send_signal): a pid reused after the
 * check cannot receive it, the pidfd names the process that was checked.
 * Kernels before 5.3 have no pidfd_open (ENOSYS): there tern checks the
 * start time and uses kill(2), which leaves the window between the two. */

/* A pidfd for `pid`, or -errno (-ENOSYS: no pidfds on this kernel). */
static int open_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : fd;
}

/* Send `sig` through `pidfd`, or by pid when the kernel has no pidfds
 * (pidfd < 0). 0 or -errno. */
static int send_signal(int pidfd, pid_t pid, int sig)
{
	if (pidfd >= 0) {
		if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0)
			return 0;
		if (errno != ENOSYS)
			return -errno;
	}
	return kill(pid, sig) < 0 ? -errno : 0;
}

/* Signal the container's init, if the process under its pid is still the
 * one that state.json recorded. -ESRCH when it is not (it has exited, and
 * its pid may belong to another process now). */
static int signal_init(const oci_state *st, int sig)
{
	cleanup_close int pidfd = -1;
	int ret;

	if (st->pid <= 0)
		return -ESRCH;
	ret = open_pidfd(st->pid);
	if (ret < 0 && ret != -ENOSYS)
		return ret;
	pidfd = ret;
	/* after the pidfd is open: its process is the one checked here */
	if (tern_process_start_time(st->pid) != st->pid_start_time)
		return -ESRCH;
	return send_signal(pidfd, st->pid, sig);
}

static int compare_pids(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* How many pidfds signal_all holds at once (well below RLIMIT_NOFILE). */
#define SIGNAL_BATCH 256

/* Signal every process of the container's cgroup. Each pid read from
 * cgroup.procs is pinned with a pidfd, and the cgroup read again: a pinned
 * process whose pid is still listed is the container's (its pid cannot be
 * reused while it lives), one whose pid has gone may have left for good,
 * its pid for another process outside, and is not signalled. */
static int signal_all(const oci_state *st, int sig, tern_error **err)
{
	pid_t *pids = NULL;
	size_t n = 0;
	int ret;

	if (st->cgroup_paths.len == 0)
		return tern_error_make(err, ENOENT, "--all: container has no cgroup");
	ret = tern_cgroup_pids(&st->cgroup_paths, &pids, &n, err);
	if (ret < 0)
		return ret;
	for (size_t start = 0; start < n; start += SIGNAL_BATCH) {
		size_t len = n - start < SIGNAL_BATCH ? n - start : SIGNAL_BATCH;
		int fds[SIGNAL_BATCH];
		bool have_pidfds = true;
		pid_t *now = NULL;
		size_t n_now = 0;

		for (size_t i = 0; i < len; i++) {
			fds[i] = open_pidfd(pids[start + i]);
			if (fds[i] == -ENOSYS)
				have_pidfds = false;
		}
		/* (without pidfds, by pid: the window of the second read stays) */
		if (have_pidfds) {
			ret = tern_cgroup_pids(&st->cgroup_paths, &now, &n_now, err);
			if (ret < 0) {
				for (size_t i = 0; i < len; i++)
					if (fds[i] >= 0)
						close(fds[i]);
				break;
			}
			qsort(now, n_now, sizeof(*now), compare_pids);
		}
		for (size_t i = 0; i < len; i++) {
			pid_t pid = pids[start + i];
			if (!have_pidfds)
				send_signal(-1, pid, sig);
			else if (fds[i] >= 0 &&
				 bsearch(&pid, now, n_now, sizeof(*now), compare_pids) != NULL)
				send_signal(fds[i], pid, sig);
			if (fds[i] >= 0)
				close(fds[i]);
		}
		free(now);
	}
	free(pids);
	return ret;
}

int tern_container_kill(const tern_runtime *rt, const char *id, int sig, bool all, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = tern_container_load(rt, id, &dir, &st, NULL, err);

	if (ret < 0)
		return ret;
	if (all) {
		ret = signal_all(st, sig, err);
	} else if (strcmp(st->status, "stopped") == 0 || (ret = signal_init(st, sig)) == -ESRCH) {
		/* runc's words first: containerd's shim takes "container not
		 * running" for "already finished" (the table in state.c) */
		ret = tern_error_make_quiet(
		    err, ESRCH, "container not running: container `%s` has stopped", id);
	} else if (ret < 0) {
		ret = tern_error_make(err, -ret, "kill container `%s` (pid %d)", id, st->pid);
	}
	oci_state_free(st);
	return ret;
}

/* Wait (bounded) until the init is gone after SIGKILL. */
static void wait_gone(const oci_state *st)
{
	for (int i = 0; i < 1000; i++) {
		if (tern_process_start_time(st->pid) != st->pid_start_time)
			return;
		/* our own child (run): reap it */
		if (waitpid(st->pid, NULL, WNOHANG) == st->pid)
			return;
		/* someone else's zombie is as good as gone: its parent (a
		 * subreaper, PID 1) reaps it when it gets round to it */
		if (tern_process_is_zombie(st->pid))
			return;
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static void run_poststop(const oci_config *config, const oci_state *st)
{
	cleanup_free char *json = NULL;

	if (config == NULL || config->hooks == NULL || config->hooks->poststop.len == 0)
		return;
	if (hook_state_from_disk(st, "stopped", &json) < 0)
		return;
	/* runtime-spec: likewise for poststop. */
	tern_hooks_run_all_in(st->bundle, &config->hooks->poststop, "poststop", json);
}

int tern_container_delete(const tern_runtime *rt, const char *id, bool force, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	oci_config *config = NULL;
	int ret = tern_container_load(rt, id, &dir, &st, &config, err);

	if (ret == -ENOENT)
		tern_state_dir_reclaim_unfinished(rt->root, id);
	if (ret < 0)
		return ret;
	tern_fault_point("delete:state-loaded");
	/* Its cgroup is ours to remove: where it cannot be seen (`ip netns
	 * exec`), keep everything rather than leave the cgroup behind. */
	if (st->own_cgroup && tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0) {
		ret = tern_error_wrap(err, "cannot delete container `%s`", id);
		goto out;
	}
	/* A created container never ran user code: deleting it is allowed,
	 * as with runc. A running or paused one needs --force; a migrated one
	 * (frozen, its copy runs elsewhere) does not. */
	if (strcmp(st->status, "running") == 0 || strcmp(st->status, "paused") == 0) {
		if (!force) {
			ret = tern_error_make_quiet(
			    err, EBUSY, "cannot delete container `%s` that is not stopped: %s", id,
			    st->status);
			goto out;
		}
	}
	if (strcmp(st->status, "stopped") != 0) {
		signal_init(st, SIGKILL);
		/* a frozen process only dies once thawed; a sub-cgroup may be
		 * frozen on its own */
		if (tern_cgroup_is_frozen(&st->cgroup_paths))
			signal_all(st, SIGKILL, NULL);
		tern_cgroup_thaw_all(&st->cgroup_paths);
		tern_cgroup_release_frozen(&st->cgroup_paths);
		wait_gone(st);
	}
	tern_fault_point("delete:process-killed");
	/* Before poststop, which the spec runs once the container is deleted. */
	ret = tern_host_mounts_undo(dir->dirfd, err);
	if (ret < 0) {
		tern_error_wrap(err, "delete container `%s`", id);
		goto out;
	}
	run_poststop(config, st);
	tern_fault_point("delete:poststop-run");
	if (st->own_cgroup) {
		ret = tern_cgroup_remove(
		    &st->cgroup_paths,
		    st->systemd_cgroup ? tern_systemd_state_unit(st->cgroup_path) : NULL, err);
		if (ret < 0)
			goto out;
	}
	tern_fault_point("delete:cgroup-removed");
	ret = tern_rdt_remove(st->rdt_group, st->rdt_own_group, st->rdt_mon_group, err);
	if (ret < 0)
		goto out;
	ret = tern_state_dir_remove(dir, err);
out:
	oci_state_free(st);
	oci_config_free(config);
	return ret;
}

int tern_container_update_rdt(const tern_runtime *rt, const char *id, const char *l3,
			      const char *mb, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = tern_container_load(rt, id, &dir, &st, NULL, err);

	if (ret < 0)
		return ret;
	if (strcmp(st->status, "stopped") == 0)
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot update container `%s`: it is stopped", id);
	else if (st->rdt_group == NULL)
		ret = tern_error_make_quiet(
		    err, EINVAL,
		    "--%s: container `%s` has no resctrl group (its config has "
		    "no linux.intelRdt)",
		    l3 ? "l3-cache-schema" : "mem-bw-schema", id);
	else
		ret = tern_rdt_update(st->rdt_group, l3, mb, err);
	oci_state_free(st);
	return ret;
}

/* ---- run ---- */

static volatile pid_t forward_to;

static void forward_signal(int sig)
{
	if (forward_to > 0)
		kill(forward_to, sig);
}

void tern_forward_signals(pid_t pid)
{
	static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH};
	struct sigaction sa = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};

	forward_to = pid;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int tern_wait_exit_status(pid_t pid)
{
	int status;

	for (;;) {
		pid_t r = waitpid(-1, &status, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 255;
		if (r != pid)
			continue; /* a reparented orphan of the container: reaped */
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		if (WIFSIGNALED(status))
			return 128 + WTERMSIG(status);
	}
}

int tern_container_run(const tern_runtime *rt, const char *id, const tern_create_opts *opts,
		       int *exit_status, tern_error **err)
{
	tern_container c = {.rt = rt,
			    .opts = opts,
			    .id = id,
			    .console_sock = -1,
			    .console_recv = -1,
			    .internal_console = !opts->detach};
	cleanup_close int master = -1;
	int sync_fd = -1;
	int ret;

	*exit_status = 0;
	tern_ns_plan_init(&c.ns);
	count_listen_fds(&c);
	/* Our grandchild may become the init (two-stage spawn): as a subreaper
	 * we get it back when stage 1 exits, and can wait for it. */
	if (!opts->detach && !opts->no_subreaper)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	ret = do_create(&c, id, &sync_fd, err);
	if (ret < 0)
		goto out;
	if (c.console_recv >= 0) {
		/* the child sent the master before SYNC_READY */
		ret = tern_console_recv_fd(c.console_recv, &master, err);
		if (ret < 0) {
			close(sync_fd);
			rollback_create(&c);
			goto out;
		}
	}
	ret = finish_create(sync_fd, err);
	if (ret < 0) {
		rollback_create(&c);
		goto out;
	}
	if (!opts->detach)
		tern_forward_signals(c.pid);
	/* start takes the directory lock itself: let go of create's */
	tern_state_dir_free(c.dir);
	c.dir = NULL;
	/* created: the devices are the container's now, and its namespace
	 * must not outlive its processes on our account */
	tern_netdev_set_free(c.netdevs);
	c.netdevs = NULL;

	ret = tern_container_start(rt, id, err);
	if (ret < 0) {
		tern_container_delete(rt, id, true, NULL);
		goto out;
	}
	if (opts->detach)
		goto out;

	if (master >= 0) {
		tern_error *perr = NULL;
		if (tern_terminal_proxy(master, &perr) < 0) {
			tern_debug("terminal proxy: %s", perr->msg);
			tern_error_free(perr);
		}
	}
	*exit_status = tern_wait_exit_status(c.pid);
	tern_forward_signals(0);
	if (!opts->keep) {
		tern_error *derr = NULL;
		if (tern_container_delete(rt, id, true, &derr) < 0) {
			tern_warn("%s", derr->msg);
			tern_error_free(derr);
		}
	}
out:
	free_container(&c);
	return ret;
}
