#include "init.h"
#include "fault.h"
#include "caps.h"
#include "hooks.h"
#include "identity.h"
#include "log.h"
#include "lsm.h"
#include "mount-source.h"
#include "numa.h"
#include "path-resolve.h"
#include "procfs.h"
#include "proc-attrs.h"
#include "rootfs.h"
#include "seccomp-relay.h"
#include "seccomp.h"
#include "sync.h"
#include "terminal.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define KEYCTL_JOIN_SESSION_KEYRING 1

/* Where linux.seccomp is loaded: see the table in sync.h. */
typedef enum {
	SECCOMP_NONE,
	SECCOMP_BEFORE_USER,  /* A: no no_new_privs, CAP_SYS_ADMIN still held */
	SECCOMP_BEFORE_READY, /* B: the notify fd must reach the parent */
	SECCOMP_BEFORE_EXEC,  /* C: the default, as late as possible */
} seccomp_stage;

/* The child's view of the run: set once, read by the stage helpers below. */
typedef struct {
	tern_container *c;
	int sync_fd;
	pid_t host_pid; /* our pid as the host sees it, for hook state */
	bool in_cgroup; /* the parent has moved us into the container's cgroup */
	seccomp_stage seccomp_at;
	int fifofd;			/* O_PATH on exec.fifo: see open_exec_fifo */
	tern_bind_source *bind_sources; /* by mount: what the parent opened (sync.h, 0a) */
} init_ctx;

static seccomp_stage seccomp_stage_of(const tern_container *c)
{
	if (c->seccomp == NULL)
		return SECCOMP_NONE;
	if (!c->config->process->no_new_privileges)
		return SECCOMP_BEFORE_USER;
	if (tern_seccomp_has_notify(c->seccomp))
		return SECCOMP_BEFORE_READY;
	return SECCOMP_BEFORE_EXEC;
}

/* Load the filter; a notify fd goes to the parent, which hands it to the
 * listener, and we wait until it has (sync.h, 4b). */
static int load_seccomp(init_ctx *ic, tern_error **err)
{
	return tern_seccomp_load_and_hand_fd(ic->c->seccomp, ic->sync_fd, err);
}

/* In the container's cgroup: the CPUs are its cpuset's, not those of
 * the tern that started us (numa.h). Before any seccomp filter, which
 * might not allow sched_setaffinity. */
static void entered_cgroup(init_ctx *ic)
{
	ic->in_cgroup = true;
	tern_cpu_affinity_reset();
}

/* Wait (once) until the parent has moved us into the cgroup. */
static int await_cgroup(init_ctx *ic, tern_error **err)
{
	if (ic->in_cgroup)
		return 0;
	int ret = tern_sync_expect(ic->sync_fd, SYNC_CGROUP_DONE, NULL, err);
	if (ret < 0)
		return ret;
	entered_cgroup(ic);
	return 0;
}

/* The rootfs stage calls this before a cgroup mount, which binds the
 * cgroups we are in: they must be the container's by then (rootfs.h). */
static int await_cgroup_cb(void *data, tern_error **err)
{
	return await_cgroup(data, err);
}

__attribute__((noreturn)) static void fail(init_ctx *ic, tern_error *e)
{
	if (ic->sync_fd >= 0)
		tern_sync_send_error(ic->sync_fd, e);
	else
		tern_error_report(e);
	_exit(1);
}

/* Before pivot_root the host's /proc is still mounted at /proc, and its
 * "self" link resolves in the host pid namespace: that is the pid hooks
 * must see. */
static pid_t host_pid_of_self(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
	if (n <= 0)
		return getpid();
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

static int become_root_in_userns(tern_error **err)
{
	/* After the maps are written, uid 0 inside is what the rest of the setup
	 * should act as (files created by mounts, devices...). */
	if (setresgid(0, 0, 0) < 0)
		return tern_error_make(err, errno,
				       "setresgid(0) in the user namespace "
				       "(is gid 0 mapped in linux.gidMappings?)");
	if (setresuid(0, 0, 0) < 0)
		return tern_error_make(err, errno,
				       "setresuid(0) in the user namespace "
				       "(is uid 0 mapped in linux.uidMappings?)");
	return 0;
}

/* The slow path's first stage: join namespaces by path, create the user
 * namespace (the parent writes its maps), create the rest, and fork the
 * process that becomes the container init. Returns in the init only. */
static void two_stage_namespaces(init_ctx *ic)
{
	tern_container *c = ic->c;
	tern_error *e = NULL;

	if (tern_ns_join(&c->ns, true, &e) < 0)
		fail(ic, e);
	/* Joining the others before creating a user namespace keeps the
	 * capabilities of the current one, which owns them. */
	if (tern_ns_join(&c->ns, false, &e) < 0)
		fail(ic, e);
	if (c->ns.new_user) {
		if (unshare(CLONE_NEWUSER) < 0) {
			tern_error_make(&e, errno, "create the user namespace");
			fail(ic, e);
		}
		if (tern_sync_send(ic->sync_fd, SYNC_MAPS_REQUEST, 0, &e) < 0 ||
		    tern_sync_expect(ic->sync_fd, SYNC_MAPS_DONE, NULL, &e) < 0)
			fail(ic, e);
	}
	if ((c->ns.new_user || c->ns.join_fd[OCI_NS_USER] >= 0) && become_root_in_userns(&e) < 0)
		fail(ic, e);
	int flags = (c->ns.clone_flags & ~CLONE_NEWUSER) | (c->ns.new_time ? CLONE_NEWTIME : 0);
	if (flags && unshare(flags) < 0) {
		tern_error_make(&e, errno, "create namespaces (flags 0x%x)", flags);
		fail(ic, e);
	}
	if (c->ns.new_time && tern_ns_write_time_offsets(c->config, &e) < 0)
		fail(ic, e);

	/* The parent reads SYNC_CHILD_PID first, but the init shares the
	 * socket and, when stage 1 is slow to be scheduled, could reach
	 * SYNC_READY before it: the init waits until stage 1 has sent the pid
	 * and exited, which closes the gate's write end. */
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0) {
		tern_error_make(&e, errno, "pipe");
		fail(ic, e);
	}
	pid_t pid = fork();
	if (pid < 0) {
		tern_error_make(&e, errno, "fork the container init");
		fail(ic, e);
	}
	if (pid > 0) {
		if (tern_sync_send(ic->sync_fd, SYNC_CHILD_PID, pid, &e) < 0)
			fail(ic, e);
		_exit(0);
	}
	/* The init: our parent (stage 1) exits now, so no parent-death signal
	 * here; a dead tern is seen as EOF on the sync socket instead. */
	close(gate[1]);
	char byte;
	while (read(gate[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(gate[0]);
}

static int run_container_hooks(init_ctx *ic, const oci_hook_list *list, const char *stage,
			       const char *status, tern_error **err)
{
	cleanup_free char *json = NULL;
	pid_t saved = ic->c->pid;

	if (list == NULL || list->len == 0)
		return 0;
	ic->c->pid = ic->host_pid;
	json = tern_container_hook_state(ic->c, status);
	ic->c->pid = saved;
	return tern_hooks_run(list, stage, json, err);
}

bool tern_init_awaits_parent(const oci_config *config)
{
	const oci_hooks *h = config->hooks;
	const oci_linux *lx = config->linux_;

	return (h && (h->prestart.len > 0 || h->create_runtime.len > 0)) ||
	       (lx && lx->net_devices_len > 0);
}

/* Between the mounts and pivot_root: the spec's place for the prestart and
 * createRuntime hooks (run by the parent, in the host's namespaces) and the
 * createContainer hooks (run here, in the container's namespaces). */
static int before_pivot(void *data, tern_error **err)
{
	init_ctx *ic = data;
	const oci_hooks *hooks = ic->c->config->hooks;
	bool await_parent = tern_init_awaits_parent(ic->c->config);

	if (hooks == NULL && !await_parent)
		return 0;
	int ret = await_cgroup(ic, err);
	if (ret < 0)
		return ret;
	if (await_parent) {
		ret = tern_sync_send(ic->sync_fd, SYNC_HOOKS_REQUEST, 0, err);
		if (ret < 0)
			return ret;
		ret = tern_sync_expect(ic->sync_fd, SYNC_HOOKS_DONE, NULL, err);
		if (ret < 0)
			return ret;
	}
	if (hooks == NULL || hooks->create_container.len == 0)
		return 0;
	/* runc runs them in the container's root (not yet pivoted to), so
	 * hooks written for it may use paths relative to it; the mounts that
	 * took relative sources from the bundle are done, and pivot_root gets
	 * the bundle back as its cwd. */
	cleanup_close int back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (back < 0)
		return tern_error_make(err, errno, "open the working directory");
	if (chdir(ic->c->rootfs) < 0)
		return tern_error_make(err, errno,
				       "createContainer hooks: chdir to the container's root `%s`",
				       ic->c->rootfs);
	ret = run_container_hooks(ic, &hooks->create_container, "createContainer", "created", err);
	if (fchdir(back) < 0 && ret == 0)
		ret = tern_error_make(err, errno,
				      "back to the bundle after the createContainer hooks");
	return ret;
}

static int setup_terminal(init_ctx *ic, tern_error **err)
{
	const oci_process *p = ic->c->config->process;
	cleanup_close int master = -1, slave = -1;
	cleanup_free char *slave_path = NULL;
	int ret;

	ret = tern_terminal_open(&master, &slave, &slave_path, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.terminal");
	if (p->console_height.set || p->console_width.set) {
		ret = tern_terminal_set_size(master, (unsigned)p->console_height.value,
					     (unsigned)p->console_width.value, err);
		if (ret < 0)
			return ret;
	}
	ret = tern_rootfs_bind_console(slave, slave_path, err);
	if (ret < 0)
		return ret;
	if (ic->c->console_sock >= 0) {
		ret = tern_console_send_fd(ic->c->console_sock, master, slave_path, err);
		if (ret < 0)
			return tern_error_wrap(err, "send the pty to the console socket");
		close(ic->c->console_sock);
		ic->c->console_sock = -1;
	}
	return tern_terminal_become_controlling(slave, slave_path, err);
}

/* Only stdio, the preserved fds, and what tern still needs until execve
 * closes it (all close-on-exec: the sync socket, the O_PATH fd on
 * exec.fifo and its inotify watch, the log) stay open; the container must not inherit anything
 * else of tern's caller. Done before any seccomp filter is loaded, and
 * before SYNC_READY, so a failure here fails `create` with its reason. */
static int close_runtime_fds(init_ctx *ic, tern_error **err)
{
	tern_container *c = ic->c;
	int n = c->opts->preserve_fds + c->n_listen_fds;
	int keep[] = {ic->fifofd, c->exec_fifo_watch, ic->sync_fd, tern_log_fd(),
		      tern_fault_trace_fd()};

	for (int fd = 3; fd < 3 + n; fd++) {
		int flags = fcntl(fd, F_GETFD);
		if (flags >= 0 && fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
			return tern_error_make(err, errno, "--preserve-fds: fd %d", fd);
	}
	int ret = tern_close_fds_except(3 + n, keep, sizeof(keep) / sizeof(keep[0]), err);
	if (ret < 0)
		return tern_error_wrap(err, "close inherited fds");
	return 0;
}

/* SYNC_CGROUP_DONE comes before SYNC_SECCOMP_DONE on the socket: read it
 * first. */
static int load_early_seccomp(void *data, tern_error **err)
{
	init_ctx *ic = data;
	int ret = await_cgroup(ic, err);

	return ret < 0 ? ret : load_seccomp(ic, err);
}

static int become_process(init_ctx *ic, tern_error **err)
{
	bool filter_first = ic->seccomp_at == SECCOMP_BEFORE_USER;

	return tern_become_process(ic->c->config->process, filter_first ? load_early_seccomp : NULL,
				   ic, err);
}

/* A missing process.cwd is created, as runc and crun do: now, as the
 * container's root, before root.readonly and the masked paths apply; mode
 * 0755 (less the umask tern was started with, as runc). Resolved inside
 * the root, symlinks included, so it never lands outside. Only when it is
 * missing: anything else wrong with it (a magic link such as
 * /proc/self/fd/N, a file) is for the chdir to report, without a
 * directory made on the way. */
static int make_cwd(const char *cwd, tern_error **err)
{
	cleanup_close int rootfd = -1, fd = -1;

	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");
	fd = tern_open_in_root(rootfd, cwd, O_PATH, 0, NULL);
	if (fd != -ENOENT)
		return 0;
	fd = tern_mkdir_in_root(rootfd, cwd, false, err);
	return fd < 0 ? fd : 0;
}

/* The namespaces' first settings, before any mount: the loopback device,
 * the cgroup namespace, a fresh session keyring. */
static int setup_session(init_ctx *ic, tern_error **err)
{
	tern_container *c = ic->c;
	const oci_process *p = c->config->process;
	int ret;

	ret = tern_ns_setup_loopback(&c->ns, err);
	if (ret < 0)
		return ret;
	if (c->ns.new_cgroup) {
		ret = await_cgroup(ic, err);
		if (ret < 0)
			return ret;
		if (unshare(CLONE_NEWCGROUP) < 0)
			return tern_error_make(err, errno, "create the cgroup namespace");
	}
	if (!c->opts->no_new_keyring) {
		ret = tern_lsm_set_keycreate_label(p->selinux_label, err);
		if (ret < 0)
			return ret;
		/* A fresh session keyring, so the container cannot read the
		 * host's keys; named like runc's so tools that look for it find
		 * it. Kernels without keyrings just lack the call. */
		cleanup_free char *name = tern_strdup_printf("_ses.%s", c->id);
		if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, name) < 0 && errno != ENOSYS &&
		    errno != EACCES && errno != EDQUOT)
			return tern_error_make(err, errno, "join a new session keyring");
	}
	return 0;
}

/* The rootfs (rootfs.h) and what is set between its two halves: the
 * process's cwd, hostname, sysctls and console. */
static int setup_filesystem(init_ctx *ic, tern_error **err)
{
	tern_container *c = ic->c;
	const oci_config *cfg = c->config;
	const oci_process *p = cfg->process;
	int ret;

	tern_lsm_label_mounts(c->config);

	/* relative bind-mount sources are relative to the bundle, as in runc */
	if (chdir(c->bundle) < 0)
		return tern_error_make(err, errno, "chdir to the bundle `%s`", c->bundle);
	tern_rootfs_ctx rctx = {
	    .config = cfg,
	    .rootfs = c->rootfs,
	    .no_pivot = c->opts->no_pivot,
	    .host_mount_ns = !c->ns.has[OCI_NS_MOUNT],
	    .in_user_ns = c->ns.new_user || c->ns.join_fd[OCI_NS_USER] >= 0,
	    .bind_sources = ic->bind_sources,
	    .before_pivot = before_pivot,
	    .before_pivot_data = ic,
	    .before_cgroup_mount = await_cgroup_cb,
	    .before_cgroup_mount_data = ic,
	};
	ret = tern_rootfs_setup(&rctx, err);
	if (ret < 0)
		return ret;
	tern_fault_point("init:rootfs-set-up");
	ret = make_cwd(p->cwd, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.cwd");
	ret = tern_ns_set_uts(cfg, err);
	if (ret < 0)
		return ret;
	if (cfg->linux_) {
		ret = tern_sysctl_apply(&cfg->linux_->sysctl, err);
		if (ret < 0)
			return tern_error_wrap(err, "linux.sysctl");
	}
	if (p->terminal) {
		ret = setup_terminal(ic, err);
		if (ret < 0)
			return ret;
	} else {
		/* As runc: the init leads a session of its own, so that no
		 * session leader lives outside the container's pid namespace
		 * (CRIU cannot checkpoint such a tree). */
		setsid();
	}
	ret = tern_rootfs_finalize(&rctx, err);
	if (ret < 0)
		return ret;
	tern_fault_point("init:rootfs-finalized");
	return 0;
}

/* The process's attributes that need privileges the user and capability
 * change drops: cwd, oomScoreAdj, rlimits, personality, scheduler, I/O
 * priority, memory policy. */
static int apply_process_attrs(init_ctx *ic, tern_error **err)
{
	tern_container *c = ic->c;
	const oci_config *cfg = c->config;
	const oci_process *p = cfg->process;
	int ret;

	/* Resolved inside the root, never through a magic link: tern's own
	 * fds are still open here (CVE-2024-21626). */
	ret = tern_chdir_in_root(p->cwd, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.cwd");
	tern_env_ensure_home((oci_process *)p);
	if (p->oom_score_adj.set) {
		ret = tern_oom_score_adj_apply((int)p->oom_score_adj.value, err);
		if (ret < 0)
			return tern_error_wrap(err, "process.oomScoreAdj");
	}
	ret = tern_rlimits_apply(p->rlimits, p->rlimits_len, err);
	if (ret < 0)
		return tern_error_wrap(err, "process.rlimits");
	if (cfg->linux_ && cfg->linux_->personality) {
		ret = tern_personality_apply(cfg->linux_->personality, err);
		if (ret < 0)
			return ret;
	}
	/* Scheduler and I/O priority while we still have CAP_SYS_NICE and
	 * CAP_SYS_ADMIN: the capabilities and user change below drop them.
	 * Inside the container's cgroup already: the kernel checks a
	 * realtime policy against the cgroup's realtime budget, and refuses
	 * to move a realtime task into a cgroup without one. */
	if (p->scheduler) {
		ret = await_cgroup(ic, err);
		if (ret < 0)
			return ret;
		ret = tern_scheduler_apply(p->scheduler, err);
		if (ret < 0)
			return ret;
	}
	if (p->io_priority) {
		ret = tern_io_priority_apply(p->io_priority, err);
		if (ret < 0)
			return ret;
	}
	/* In the container's cgroup first: joining a cpuset remaps the
	 * policy's nodes (numa.h). Before any seccomp filter. */
	if (c->mempolicy.set) {
		ret = await_cgroup(ic, err);
		if (ret < 0)
			return ret;
		ret = tern_mempolicy_apply(&c->mempolicy, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int setup_container(init_ctx *ic, tern_error **err)
{
	const oci_process *p = ic->c->config->process;
	int ret;

	ret = setup_session(ic, err);
	if (ret < 0)
		return ret;
	ret = setup_filesystem(ic, err);
	if (ret < 0)
		return ret;
	ret = apply_process_attrs(ic, err);
	if (ret < 0)
		return ret;
	ret = close_runtime_fds(ic, err);
	if (ret < 0)
		return ret;
	/* The labels apply at the next execve, which is the first
	 * startContainer hook's (it runs in the container, labelled like it,
	 * as in runc) or the process's. Before no_new_privs (AppArmor limits
	 * profile changes under it) and before any seccomp filter (it may
	 * forbid the writes to /proc). */
	ret = tern_lsm_apply_exec_labels(p->apparmor_profile, p->selinux_label, err);
	if (ret < 0)
		return ret;
	ret = become_process(ic, err);
	if (ret < 0)
		return ret;
	tern_fault_point("init:became-process");
	/* Everything that limits privilege is in place before `start` runs
	 * the startContainer hooks as the container's user: the user, the
	 * capabilities (become_process) and no_new_privs, so that a setuid
	 * binary run as a hook gains nothing (as runc, which sets it at
	 * create). Only a filter of stage C comes later, just before the
	 * process's execve. */
	if (p->no_new_privileges) {
		ret = tern_no_new_privs_apply(err);
		if (ret < 0)
			return ret;
	}
	ret = await_cgroup(ic, err);
	if (ret < 0)
		return ret;
	if (ic->seccomp_at == SECCOMP_BEFORE_READY)
		return load_seccomp(ic, err);
	return 0;
}

/* The exec fifo, opened O_PATH (which does not wait for a reader) before
 * pivot_root hides the host. The init holds this and no directory: while
 * it waits for `start`, any process of the container with CAP_SYS_PTRACE
 * can use its fds through /proc/1/fd, and a directory of the host (the
 * state directory) would lead it up to the host's / . A fifo leads
 * nowhere. As runc. */
static int open_exec_fifo(int dirfd, tern_error **err)
{
	cleanup_close int fd = -1;
	struct stat st;

	fd = openat(dirfd, TERN_EXEC_FIFO, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open exec fifo");
	if (fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "stat exec fifo");
	if (!S_ISFIFO(st.st_mode))
		return tern_error_make(err, EINVAL, "exec fifo: not a fifo");
	return steal_fd(&fd);
}

/* The exec fifo is opened for writing only after SYNC_FINISH, when create
 * has reported success already; the same reopen now, with O_PATH (which
 * does not wait for a reader), finds a process.rlimits that leaves too few
 * fds for it (it takes the same ones), or a seccomp filter that forbids
 * it, while the failure can still fail create. */
static int probe_exec_fifo(int fifofd, tern_error **err)
{
	int fd = tern_procfs_reopen(fifofd, O_PATH, err);
	if (fd < 0)
		return tern_error_wrap(err, "open exec fifo%s",
				       fd == -EMFILE ? " (process.rlimits: RLIMIT_NOFILE "
						       "leaves no file descriptor free)"
						     : "");
	close(fd);
	return 0;
}

/* Blocks until `tern start` opens the fifo for reading; returns the fifo
 * open for writing. Not a blocking open: that would hold the directory it
 * opens through all the while (the fifo is reopened through our own
 * /proc/self/fd, on a verified procfs: the container's /proc may be
 * anything its config or its processes made of it). A non-blocking open
 * fails with ENXIO until there is a reader; between the tries we wait for
 * the next open of the fifo (create's inotify watch: container.c). The
 * watch was there before the init ran, so no open is missed; an open that
 * is not start's (or a start gone again) just means another try. */
static int wait_for_start(init_ctx *ic, tern_error **err)
{
	char events[sizeof(struct inotify_event) + NAME_MAX + 1]
	    __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		tern_error *e = NULL;
		int fd = tern_procfs_reopen(ic->fifofd, O_WRONLY | O_NONBLOCK, &e);

		if (fd >= 0) {
			/* signal_started's write: a whole byte or an error */
			fcntl(fd, F_SETFL, 0);
			return fd;
		}
		if (fd != -ENXIO) {
			tern_error_free(*err);
			*err = e;
			return tern_error_wrap(err, "open exec fifo");
		}
		tern_error_free(e);
		if (read(ic->c->exec_fifo_watch, events, sizeof(events)) < 0 && errno != EINTR)
			return tern_error_make(err, errno,
					       "wait for `start` (inotify on exec fifo)");
	}
}

/* The byte `tern start` waits for: once it has it, start runs poststart. */
static int signal_started(int fifo, tern_error **err)
{
	int ret = tern_write_all(fifo, "0", 1);
	close(fifo);
	if (ret < 0)
		return tern_error_make(err, -ret, "write exec fifo");
	return 0;
}

void tern_init_main(tern_container *c, int sync_fd)
{
	init_ctx ic = {.c = c, .sync_fd = sync_fd, .seccomp_at = seccomp_stage_of(c), .fifofd = -1};
	tern_error *e = NULL;
	const oci_process *p = c->config->process;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (tern_sync_expect(sync_fd, SYNC_GO, NULL, &e) < 0)
		_exit(1);
	tern_fault_point("init:released");
	if (tern_signals_reset(&e) < 0)
		fail(&ic, e);
	if (c->ns.two_stage) {
		entered_cgroup(&ic); /* the parent did it before SYNC_GO */
		two_stage_namespaces(&ic);
	} else if (c->ns.new_user && become_root_in_userns(&e) < 0) {
		fail(&ic, e);
	}
	/* The bind sources the parent opened for us (sync.h, 0a). */
	if (tern_mount_sources_receive(sync_fd, c->config, &ic.bind_sources, &e) < 0)
		fail(&ic, e);
	tern_fault_point("init:mount-sources-received");
	/* Until execve (which makes a plain binary dumpable again), no process
	 * of the container without CAP_SYS_PTRACE may open our /proc/PID/exe,
	 * fd/ or cwd: the fds are the runtime's, and the exe is the runtime
	 * (CVE-2016-9962, CVE-2019-5736). One with CAP_SYS_PTRACE can: so
	 * nothing we hold from here on may lead out of the rootfs. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		tern_error_make(&e, errno, "prctl PR_SET_DUMPABLE");
		fail(&ic, e);
	}
	ic.host_pid = host_pid_of_self();

	/* The state directory itself is not kept: the parent's fd carries the
	 * flock, and a copy of it here would hold the container's lock until
	 * exec; and a directory of the host must not be in our fds. */
	ic.fifofd = open_exec_fifo(c->dir->dirfd, &e);
	if (ic.fifofd < 0)
		fail(&ic, e);
	close(c->dir->dirfd);
	c->dir->dirfd = -1;

	if (setup_container(&ic, &e) < 0)
		fail(&ic, e);
	tern_fault_point("init:container-set-up");

	if (probe_exec_fifo(ic.fifofd, &e) < 0)
		fail(&ic, e);

	/* The parent may exit the moment it has sent SYNC_FINISH, so the
	 * parent-death signal must be gone before we ask for it; a parent that
	 * dies before answering is seen as EOF here. */
	prctl(PR_SET_PDEATHSIG, 0);
	if (tern_sync_send(sync_fd, SYNC_READY, 0, &e) < 0 ||
	    tern_sync_expect(sync_fd, SYNC_FINISH, NULL, &e) < 0)
		_exit(1);
	close(sync_fd);
	ic.sync_fd = -1;
	/* From here on errors go to the container's stderr: the log file
	 * (--log) is a file of the host, not to be held while we wait, when
	 * the container's processes can reach our fds (as runc, which closes
	 * its log pipe here). */
	tern_log_close();

	int fifo = wait_for_start(&ic, &e);
	if (fifo < 0)
		fail(&ic, e);
	tern_fault_point("init:start-requested");
	tern_closep(&ic.fifofd);
	tern_closep(&c->exec_fifo_watch);

	/* startContainer is part of start, before poststart (which `tern start`
	 * runs once it reads our byte): so the hooks run before the byte. They
	 * run as the process will: its user, capabilities, no_new_privs and
	 * LSM labels (setup_container); only without a seccomp filter of
	 * stage C. */
	if (c->config->hooks && run_container_hooks(&ic, &c->config->hooks->start_container,
						    "startContainer", "running", &e) < 0)
		fail(&ic, e);
	if (signal_started(fifo, &e) < 0)
		fail(&ic, e);
	tern_fault_point("init:started-byte-written");
	/* The last step: nothing of tern's own setup runs under the filter. */
	if (ic.seccomp_at == SECCOMP_BEFORE_EXEC && load_seccomp(&ic, &e) < 0)
		fail(&ic, e);
	tern_exec_process(p, &e);
	fail(&ic, e);
}
