#include "exec.h"
#include "fault.h"
#include "caps.h"
#include "cgroup.h"
#include "identity.h"
#include "inherited-fds.h"
#include "intel-rdt.h"
#include "log.h"
#include "lsm.h"
#include "numa.h"
#include "path-resolve.h"
#include "proc-attrs.h"
#include "seccomp-relay.h"
#include "seccomp.h"
#include "sync.h"
#include "terminal.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The namespaces of the container init that differ from ours, as fds. The
 * user namespace first, the mount namespace last (a path opened after
 * joining it would resolve inside the container). */
static const struct {
	const char *name;
	int flag;
} ns_order[] = {
    {"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC},	  {"uts", CLONE_NEWUTS},
    {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP}, {"mnt", CLONE_NEWNS},
};
#define N_CHILD_NS (sizeof(ns_order) / sizeof(ns_order[0]))

typedef struct {
	int fd[N_CHILD_NS];
	int pid_fd;  /* pid namespace, joined by the parent for its children */
	int time_fd; /* likewise the time namespace */
	int root_fd; /* the init's root, when it shares our mount namespace */
} exec_ns;

static void exec_ns_close(exec_ns *ns)
{
	for (size_t i = 0; i < N_CHILD_NS; i++)
		if (ns->fd[i] >= 0)
			close(ns->fd[i]);
	if (ns->pid_fd >= 0)
		close(ns->pid_fd);
	if (ns->time_fd >= 0)
		close(ns->time_fd);
	if (ns->root_fd >= 0)
		close(ns->root_fd);
}

static bool same_ns(pid_t pid, const char *name)
{
	char a[64], b[64];
	struct stat sa, sb;
	snprintf(a, sizeof(a), "/proc/%d/ns/%s", pid, name);
	snprintf(b, sizeof(b), "/proc/self/ns/%s", name);
	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return true;
	return sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

static int open_ns(pid_t pid, const char *name, int *fd, tern_error **err)
{
	char path[64];

	*fd = -1;
	if (same_ns(pid, name))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		if (errno == ENOENT && strcmp(name, "time") == 0)
			return 0; /* kernel without time namespaces */
		return tern_error_make(err, errno, "open `%s`", path);
	}
	return 0;
}

static int open_container_ns(pid_t pid, exec_ns *ns, tern_error **err)
{
	int ret;

	for (size_t i = 0; i < N_CHILD_NS; i++)
		ns->fd[i] = -1;
	ns->pid_fd = ns->time_fd = ns->root_fd = -1;
	for (size_t i = 0; i < N_CHILD_NS; i++) {
		ret = open_ns(pid, ns_order[i].name, &ns->fd[i], err);
		if (ret < 0)
			return ret;
		/* A container without a mount namespace is chrooted into its
		 * rootfs in ours: no setns puts us there, its root does. */
		if (ns_order[i].flag == CLONE_NEWNS && ns->fd[i] < 0) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/root", pid);
			ns->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (ns->root_fd < 0)
				return tern_error_make(err, errno, "open `%s`", path);
		}
	}
	ret = open_ns(pid, "pid", &ns->pid_fd, err);
	if (ret < 0)
		return ret;
	return open_ns(pid, "time", &ns->time_fd, err);
}

static char **strv_dup(char *const *v)
{
	size_t n = oci_strv_len(v);
	char **out = tern_xmalloc0((n + 1) * sizeof(char *));
	for (size_t i = 0; i < n; i++)
		out[i] = tern_xstrdup(v[i]);
	return out;
}

static char **strv_append(char **v, const char *s)
{
	size_t n = oci_strv_len(v);
	char **out = realloc(v, (n + 2) * sizeof(char *));
	if (out == NULL)
		abort();
	out[n] = tern_xstrdup(s);
	out[n + 1] = NULL;
	return out;
}

static char **strv_dup_or_null(char *const *v)
{
	return v ? strv_dup(v) : NULL;
}

static oci_capabilities *caps_dup(const oci_capabilities *c)
{
	oci_capabilities *d = tern_xmalloc0(sizeof(*d));

	d->bounding = strv_dup_or_null(c->bounding);
	d->effective = strv_dup_or_null(c->effective);
	d->inheritable = strv_dup_or_null(c->inheritable);
	d->permitted = strv_dup_or_null(c->permitted);
	d->ambient = strv_dup_or_null(c->ambient);
	return d;
}

static oci_exec_cpu_affinity *affinity_dup(const oci_exec_cpu_affinity *a)
{
	oci_exec_cpu_affinity *d = tern_xmalloc0(sizeof(*d));

	d->initial = a->initial ? tern_xstrdup(a->initial) : NULL;
	d->final = a->final ? tern_xstrdup(a->final) : NULL;
	return d;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Take the container's process (the config was parsed just for us) and
 * apply the command line to it. */
int tern_exec_apply_overrides(const tern_exec_opts *o, oci_config *config, oci_process **out,
			      tern_error **err)
{
	oci_process *p = config->process;

	config->process = NULL;
	*out = p;
	for (char **a = p->args; a && *a; a++)
		free(*a);
	free(p->args);
	p->args = strv_dup(o->args);
	for (char **e = o->env; e && *e; e++) {
		/* KEY=VALUE replaces an existing KEY, as runc does */
		const char *eq = strchr(*e, '=');
		size_t klen;
		bool replaced = false;

		if (eq == NULL || eq == *e)
			return tern_error_make(err, EINVAL, "--env `%s`: must be NAME=VALUE", *e);
		klen = (size_t)(eq - *e);
		for (char **cur = p->env; cur && *cur; cur++) {
			if (strncmp(*cur, *e, klen) == 0 && (*cur)[klen] == '=') {
				free(*cur);
				*cur = tern_xstrdup(*e);
				replaced = true;
				break;
			}
		}
		if (!replaced)
			p->env = strv_append(p->env, *e);
	}
	if (o->cwd) {
		if (o->cwd[0] != '/')
			return tern_error_make(err, EINVAL, "--cwd `%s`: must be an absolute path",
					       o->cwd);
		free(p->cwd);
		p->cwd = tern_xstrdup(o->cwd);
	}
	if (o->user) {
		cleanup_free char *u = tern_xstrdup(o->user);
		char *colon = strchr(u, ':');
		if (colon)
			*colon++ = '\0';
		if (parse_u32(u, &p->user.uid) < 0 || (colon && parse_u32(colon, &p->user.gid) < 0))
			return tern_error_make(err, EINVAL, "--user `%s`: expected uid[:gid]",
					       o->user);
		if (colon == NULL)
			p->user.gid = 0;
		/* (uid_t)-1 would leave the process root: oci-config.h */
		if (p->user.uid > OCI_ID_MAX)
			return tern_error_make(err, EINVAL,
					       "--user `%s`: uid %u is out of range (0-%u)",
					       o->user, p->user.uid, OCI_ID_MAX);
		if (p->user.gid > OCI_ID_MAX)
			return tern_error_make(err, EINVAL,
					       "--user `%s`: gid %u is out of range (0-%u)",
					       o->user, p->user.gid, OCI_ID_MAX);
	}
	size_t ngids = oci_strv_len(o->additional_gids);
	if (ngids > 0) {
		free(p->user.additional_gids);
		p->user.additional_gids = tern_xmalloc0(ngids * sizeof(uint32_t));
		p->user.additional_gids_len = ngids;
		for (size_t i = 0; i < ngids; i++)
			if (parse_u32(o->additional_gids[i], &p->user.additional_gids[i]) < 0)
				return tern_error_make(err, EINVAL, "--additional-gids `%s`",
						       o->additional_gids[i]);
			else if (p->user.additional_gids[i] > OCI_ID_MAX)
				return tern_error_make(
				    err, EINVAL, "--additional-gids `%s`: out of range (0-%u)",
				    o->additional_gids[i], OCI_ID_MAX);
	}
	for (char **c = o->caps; c && *c; c++) {
		if (tern_cap_from_name(*c) < 0)
			return tern_error_make(err, EINVAL, "--cap `%s`: unknown capability", *c);
		if (p->capabilities == NULL)
			p->capabilities = tern_xmalloc0(sizeof(*p->capabilities));
		p->capabilities->bounding = strv_append(p->capabilities->bounding, *c);
		p->capabilities->effective = strv_append(p->capabilities->effective, *c);
		p->capabilities->permitted = strv_append(p->capabilities->permitted, *c);
		p->capabilities->ambient = strv_append(p->capabilities->ambient, *c);
	}
	if (o->no_new_privs)
		p->no_new_privileges = true;
	p->terminal = o->tty;
	return 0;
}

/* The process to run: --process FILE, or the container's own process
 * with the command-line overrides (what runc does). */
static int build_process(const tern_exec_opts *o, const oci_config *config, oci_process **out,
			 tern_error **err)
{
	if (o->process_file) {
		char *msg = NULL;
		int ret = oci_process_parse_file(o->process_file, out, &msg);
		if (ret < 0) {
			tern_error_make_literal(err, -ret, msg ? msg : "--process: invalid");
			free(msg);
			return ret;
		}
		/* As runc: a process without capabilities gets the
		 * container's (and none when the container has none). */
		if ((*out)->capabilities == NULL && config && config->process &&
		    config->process->capabilities)
			(*out)->capabilities = caps_dup(config->process->capabilities);
		/* Likewise execCPUAffinity: config.json's is the default of
		 * every exec (runc does the same). */
		if ((*out)->exec_cpu_affinity == NULL && config && config->process &&
		    config->process->exec_cpu_affinity)
			(*out)->exec_cpu_affinity =
			    affinity_dup(config->process->exec_cpu_affinity);
		return 0;
	}
	if (o->args == NULL || o->args[0] == NULL)
		return tern_error_make(err, EINVAL, "exec needs a command to run");
	if (config == NULL || config->process == NULL)
		return tern_error_make(err, EINVAL, "the container's config.json copy is missing");
	return tern_exec_apply_overrides(o, (oci_config *)config, out, err);
}

/* --apparmor and --process-label replace the process's labels (also those
 * of a --process file, as with runc); then the labels, scheduler and I/O
 * priority get the same checks as at create, before anything is spawned.
 * The messages name the flag when the value came from one. */
static int check_process(const tern_exec_opts *o, oci_process *p, tern_error **err)
{
	int ret;

	if (o->apparmor) {
		free(p->apparmor_profile);
		p->apparmor_profile = tern_xstrdup(o->apparmor);
	}
	if (o->process_label) {
		free(p->selinux_label);
		p->selinux_label = tern_xstrdup(o->process_label);
	}
	ret = tern_lsm_check_apparmor(o->apparmor ? "--apparmor" : "process.apparmorProfile",
				      p->apparmor_profile, err);
	if (ret < 0)
		return ret;
	ret = tern_lsm_check_selinux(o->process_label ? "--process-label" : "process.selinuxLabel",
				     p->selinux_label, err);
	if (ret < 0)
		return ret;
	if (p->scheduler) {
		ret = tern_scheduler_check(p->scheduler, err);
		if (ret < 0)
			return ret;
	}
	if (p->io_priority)
		return tern_io_priority_check(p->io_priority, err);
	return 0;
}

static void child_fail(int sync_fd, tern_error *e)
{
	tern_sync_send_error(sync_fd, e);
	_exit(127);
}

/* Load the filter; with SCMP_ACT_NOTIFY its fd goes to the parent for the
 * listener, and we wait until the listener has it. */
static int load_exec_seccomp(const tern_seccomp_filter *filter, int sync_fd, tern_error **err)
{
	return tern_seccomp_load_and_hand_fd(filter, sync_fd, err);
}

/* fds: stdio, --preserve-fds, and tern's own until execve closes them
 * (the sync socket, whose closing tells the parent the exec happened, and
 * the log). Before any seccomp filter, which may deny close_range. */
static int close_inherited_fds(const tern_exec_opts *o, int sync_fd, int lsm_procfd,
			       tern_error **err)
{
	int keep_from = 3 + o->preserve_fds;
	int keep[] = {sync_fd, tern_log_fd(), tern_fault_trace_fd(), lsm_procfd};

	/* None of ours may be among the preserved: tern_inherited_fds_check made
	 * sure, this says so if that ever stops being true. */
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (keep[i] >= 3 && keep[i] < keep_from)
			return tern_error_make(
			    err, EBADF, "--preserve-fds: fd %d is tern's own, not the caller's",
			    keep[i]);
	for (int fd = 3; fd < keep_from; fd++) {
		int flags = fcntl(fd, F_GETFD);
		if (flags >= 0 && fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
			return tern_error_make(err, errno, "--preserve-fds: fd %d", fd);
	}
	int ret = tern_close_fds_except(keep_from, keep, sizeof(keep) / sizeof(keep[0]), err);
	if (ret < 0)
		return tern_error_wrap(err, "close inherited fds");
	return 0;
}

struct exec_filter {
	const tern_seccomp_filter *filter;
	int sync_fd;
};

static int load_exec_seccomp_cb(void *data, tern_error **err)
{
	struct exec_filter *f = data;
	return load_exec_seccomp(f->filter, f->sync_fd, err);
}

/* The filter goes in before the user changes when it needs CAP_SYS_ADMIN
 * (no no_new_privs: sync.h, stage A), as in the init. */
static int become_exec_process(const oci_process *p, const tern_seccomp_filter *filter, int sync_fd,
			       tern_error **err)
{
	struct exec_filter f = {filter, sync_fd};
	bool filter_first = filter && !p->no_new_privileges;

	return tern_become_process(p, filter_first ? load_exec_seccomp_cb : NULL, &f, err);
}

/* Rootless exec: join the pid and time namespaces here, after the user
 * namespace that owns them gave us the right to, and fork the exec process
 * into them as a child of the tern parent (CLONE_PARENT), which learns its
 * pid from SYNC_CHILD_PID. Returns in that process only. */
static void nested_fork(exec_ns *ns, int sync_fd)
{
	tern_error *e = NULL;

	if (ns->pid_fd >= 0 && setns(ns->pid_fd, CLONE_NEWPID) < 0) {
		tern_error_make(&e, errno, "join the container's pid namespace");
		child_fail(sync_fd, e);
	}
	if (ns->time_fd >= 0 && setns(ns->time_fd, CLONE_NEWTIME) < 0) {
		tern_error_make(&e, errno, "join the container's time namespace");
		child_fail(sync_fd, e);
	}
	/* As in init.c: nothing from the new process on the socket before
	 * its pid, which the parent reads first; it waits for us to exit. */
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0) {
		tern_error_make(&e, errno, "pipe");
		child_fail(sync_fd, e);
	}
	pid_t pid = (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), NULL, NULL,
				   NULL, NULL);
	if (pid < 0) {
		tern_error_make(&e, errno, "clone the exec process");
		child_fail(sync_fd, e);
	}
	if (pid > 0) {
		tern_sync_send(sync_fd, SYNC_CHILD_PID, pid, NULL);
		_exit(0);
	}
	/* the death signal is not inherited: the tern parent is ours now */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(gate[1]);
	char byte;
	while (read(gate[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(gate[0]);
}

/* What the exec process gets besides its process object. */
typedef struct {
	const tern_seccomp_filter *filter;
	const oci_seccomp *seccomp;
	const tern_mempolicy *mempolicy;
	const tern_cpu_affinity *affinity;
} exec_extras;

__attribute__((noreturn)) static void exec_child(const tern_exec_opts *o, const oci_process *p,
						 exec_ns *ns, bool nested, const exec_extras *x,
						 int console_sock, int sync_fd)
{
	const tern_seccomp_filter *filter = x->filter;
	tern_error *e = NULL;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* We are in the container's pid namespace already: until execve, its
	 * processes must not open our /proc/PID/exe, fd/ or cwd
	 * (CVE-2016-9962, CVE-2019-5736). So since the clone already
	 * (spawn_exec); this keeps it so whatever tern was started with. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (tern_sync_expect(sync_fd, SYNC_GO, NULL, &e) < 0)
		_exit(127);
	tern_fault_point("exec-child:released");
	if (tern_signals_reset(&e) < 0)
		child_fail(sync_fd, e);
	/* The procfs the LSM labels are written through (lsm.h): a private
	 * one, made now while we have the privileges for it and are not yet
	 * in the container's mount namespace, whose /proc is the image's and
	 * the config's to decide. Closed by execve. */
	int lsm_procfd = -1;
	if (tern_lsm_exec_procfs_open(p->apparmor_profile, p->selinux_label, &lsm_procfd, &e) < 0)
		child_fail(sync_fd, e);
	for (size_t i = 0; i < N_CHILD_NS; i++) {
		if (ns->fd[i] >= 0 && setns(ns->fd[i], ns_order[i].flag) < 0) {
			tern_error_make(&e, errno, "join the container's %s namespace",
					ns_order[i].name);
			child_fail(sync_fd, e);
		}
	}
	if (nested)
		nested_fork(ns, sync_fd);
	if (ns->root_fd >= 0 && (fchdir(ns->root_fd) < 0 || chroot(".") < 0)) {
		tern_error_make(&e, errno, "enter the container's root");
		child_fail(sync_fd, e);
	}
	/* Inside the container's root, never through a magic link to an fd
	 * the caller passed us (CVE-2024-21626). */
	if (tern_chdir_in_root(p->cwd, &e) < 0) {
		tern_error_wrap(&e, "cwd");
		child_fail(sync_fd, e);
	}
	tern_env_ensure_home((oci_process *)p);
	if (p->terminal) {
		int master = -1, slave = -1;
		char *slave_path = NULL;
		if (tern_terminal_open(&master, &slave, &slave_path, &e) < 0)
			child_fail(sync_fd, e);
		if ((p->console_height.set || p->console_width.set) &&
		    tern_terminal_set_size(master, (unsigned)p->console_height.value,
					   (unsigned)p->console_width.value, &e) < 0)
			child_fail(sync_fd, e);
		if (tern_console_send_fd(console_sock, master, slave_path, &e) < 0)
			child_fail(sync_fd, e);
		close(master);
		close(console_sock);
		if (tern_terminal_become_controlling(slave, slave_path, &e) < 0)
			child_fail(sync_fd, e);
		if (slave > 2)
			close(slave);
		free(slave_path);
	} else if (setsid() < 0) {
		/* As runc: a session and process group of its own, inside the
		 * container's pid namespace (ours is outside it: getpgrp would
		 * say 0 and job control would not work). */
		tern_error_make(&e, errno, "setsid");
		child_fail(sync_fd, e);
	}
	if (p->oom_score_adj.set && tern_oom_score_adj_apply((int)p->oom_score_adj.value, &e) < 0)
		child_fail(sync_fd, e);
	if (tern_rlimits_apply(p->rlimits, p->rlimits_len, &e) < 0)
		child_fail(sync_fd, e);
	if (p->scheduler && tern_scheduler_apply(p->scheduler, &e) < 0)
		child_fail(sync_fd, e);
	if (p->io_priority && tern_io_priority_apply(p->io_priority, &e) < 0)
		child_fail(sync_fd, e);
	/* We are in the container's cgroup (the parent moved us before
	 * SYNC_GO): the memory policy and the final CPUs (or, without
	 * execCPUAffinity, the cpuset's) now, before any seccomp filter
	 * (numa.h). */
	if (tern_mempolicy_apply(x->mempolicy, &e) < 0)
		child_fail(sync_fd, e);
	if (tern_cpu_affinity_apply_final(x->affinity, &e) < 0)
		child_fail(sync_fd, e);
	if (close_inherited_fds(o, sync_fd, lsm_procfd, &e) < 0)
		child_fail(sync_fd, e);
	if (become_exec_process(p, filter, sync_fd, &e) < 0)
		child_fail(sync_fd, e);
	tern_fault_point("exec-child:became-process");
	if (lsm_procfd >= 0 && tern_lsm_apply_exec_labels_at(lsm_procfd, p->apparmor_profile,
							     p->selinux_label, &e) < 0)
		child_fail(sync_fd, e);
	if (p->no_new_privileges && tern_no_new_privs_apply(&e) < 0)
		child_fail(sync_fd, e);
	/* the parent-death signal survives execve: a detached exec must outlive
	 * the tern that started it (and seccomp may forbid prctl: do it first) */
	prctl(PR_SET_PDEATHSIG, 0);
	if (filter && p->no_new_privileges && load_exec_seccomp(filter, sync_fd, &e) < 0)
		child_fail(sync_fd, e);
	tern_exec_process(p, &e);
	child_fail(sync_fd, e);
	_exit(127);
}

/* Wait for the child's verdict: EOF means execve succeeded (the socket is
 * close-on-exec); a message means it failed and why. */
static int wait_exec(int sync_fd, tern_error **err)
{
	tern_sync_msg msg;
	ssize_t n;

	do
		n = recv(sync_fd, &msg, sizeof(msg), 0);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n < 0)
		return tern_error_make(err, errno, "exec: wait for the process");
	msg.text[TERN_SYNC_MSG_MAX - 1] = '\0';
	return tern_error_make_literal(err, msg.value > 0 ? msg.value : EINVAL, msg.text);
}

static int wait_status(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 255;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static volatile pid_t exec_forward_to;

static void exec_forward(int sig)
{
	if (exec_forward_to > 0)
		kill(exec_forward_to, sig);
}

/* The exec process loaded a filter with SCMP_ACT_NOTIFY rules: its fd goes
 * to listenerPath with the process state (runc does this for exec too). */
static int hand_notify_fd(int sync_fd, const oci_state *st, const oci_seccomp *seccomp, pid_t pid,
			  tern_error **err)
{
	cleanup_free char *state = NULL;

	if (oci_state_to_json(st, OCI_STATE_HOOK, &state, NULL) < 0)
		return tern_error_make(err, ENOMEM, "linux.seccomp: building the container state");
	return tern_seccomp_relay_notify_fd(sync_fd, seccomp, pid, state, err);
}

/* --tty: where the pty master goes: --console-socket, or the end of a
 * pair whose other end (console_pair[0]) this exec proxies itself. */
static int exec_console(const tern_exec_opts *o, int console_pair[2], int *console_sock,
			tern_error **err)
{
	if (o->console_socket) {
		*console_sock = tern_console_socket_connect(o->console_socket, err);
		if (*console_sock < 0)
			return tern_error_wrap(err, "--console-socket");
	} else if (o->detach) {
		return tern_error_make(err, EINVAL, "--tty with --detach needs --console-socket");
	} else {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, console_pair) < 0)
			return tern_error_make(err, errno, "socketpair");
		*console_sock = steal_fd(&console_pair[1]);
	}
	return 0;
}

/* Clone the exec process, in the container's pid and time namespaces unless
 * `nested` (see spawn_exec). Returns its pid; `ns` is closed either way. */
static pid_t clone_exec_child(const tern_exec_opts *o, const oci_process *p, exec_ns *ns,
			      bool nested, const exec_extras *x, int console_sock, int sv[2],
			      tern_error **err)
{
	cleanup_close int self_pid = -1, self_time = -1;
	pid_t child;

	/* The child is born in the container's pid namespace, holding our fds
	 * (the namespaces', the sync socket) and running tern: it must be
	 * non-dumpable from its first instruction, or the container's
	 * processes could open its /proc/PID/fd, exe or mem before it says so
	 * itself (CVE-2016-9962). The flag is inherited across clone: set it
	 * here, before the setns, and give ours back after the clone. */
	int was_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		exec_ns_close(ns);
		return tern_error_make(err, errno, "prctl PR_SET_DUMPABLE");
	}
	self_pid = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	self_time = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
	if (nested) {
		/* nothing to join here */
	} else if (ns->pid_fd >= 0 && setns(ns->pid_fd, CLONE_NEWPID) < 0) {
		exec_ns_close(ns);
		return tern_error_make(err, errno, "join the container's pid namespace");
	}
	if (!nested && ns->time_fd >= 0 && setns(ns->time_fd, CLONE_NEWTIME) < 0) {
		exec_ns_close(ns);
		return tern_error_make(err, errno, "join the container's time namespace");
	}
	child = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
	if (child == 0) {
		close(sv[0]);
		exec_child(o, p, ns, nested, x, console_sock, sv[1]);
	}
	int clone_errno = errno;
	if (!nested && ns->pid_fd >= 0 && self_pid >= 0)
		setns(self_pid, CLONE_NEWPID);
	if (!nested && ns->time_fd >= 0 && self_time >= 0)
		setns(self_time, CLONE_NEWTIME);
	/* we are outside the container's pid namespace: as we were */
	if (was_dumpable > 0)
		prctl(PR_SET_DUMPABLE, was_dumpable, 0, 0, 0);
	exec_ns_close(ns);
	if (child < 0)
		return tern_error_make(err, clone_errno, "clone the exec process");
	return child;
}

/* Before SYNC_GO: the exec process goes where the container's are. */
static int place_exec_child(const oci_state *st, const exec_extras *x, pid_t child,
			    tern_error **err)
{
	/* execCPUAffinity.initial: before the process joins the cgroup
	 * (config.md), so that what it does until its exec runs there. */
	int ret = tern_cpu_affinity_set_initial(x->affinity, child, err);
	if (ret < 0)
		return ret;
	if (st->cgroup_paths.len > 0) {
		ret = tern_cgroup_enter(&st->cgroup_paths, child, err);
		if (ret < 0)
			return ret;
	}
	/* linux.intelRdt: the container's resctrl group, before it execs */
	ret = tern_rdt_enter(st->rdt_group, st->rdt_mon_group, child, err);
	if (ret < 0)
		return ret;
	tern_fault_point("exec:cgroup-joined");
	return 0;
}

/* The process runs: --pid-file, then, unless --detach, signals and the
 * terminal are passed on until it exits. */
static int follow_exec(const tern_exec_opts *o, pid_t child, int master, int *exit_status,
		       tern_error **err)
{
	if (o->pid_file) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%d", child);
		int ret = tern_write_file(o->pid_file, buf, (size_t)len, 0644, err);
		if (ret < 0)
			return tern_error_wrap(err, "--pid-file");
	}
	if (o->detach)
		return 0;
	exec_forward_to = child;
	struct sigaction sa = {.sa_handler = exec_forward, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	if (master >= 0) {
		tern_error *perr = NULL;
		if (tern_terminal_proxy(master, &perr) < 0)
			tern_error_free(perr);
	}
	*exit_status = wait_status(child);
	return 0;
}

static int spawn_exec(const tern_exec_opts *o, const oci_state *st, const oci_process *p,
		      const exec_extras *x, int *exit_status, tern_error **err)
{
	const tern_seccomp_filter *filter = x->filter;
	exec_ns ns;
	cleanup_close_pair int sv[2] = {-1, -1};
	cleanup_close_pair int console_pair[2] = {-1, -1};
	cleanup_close int console_sock = -1;
	cleanup_close int master = -1;
	pid_t child;
	int ret;

	ret = open_container_ns(st->pid, &ns, err);
	if (ret < 0) {
		exec_ns_close(&ns);
		return ret;
	}
	if (p->terminal) {
		ret = exec_console(o, console_pair, &console_sock, err);
		if (ret < 0) {
			exec_ns_close(&ns);
			return ret;
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		exec_ns_close(&ns);
		return tern_error_make(err, errno, "socketpair");
	}
	/* The pid and time namespaces apply to children only: join them here,
	 * clone, and come back, so the child starts inside them. Rootless,
	 * that needs CAP_SYS_ADMIN over the container's user namespace, which
	 * only joining it gives, for good: the child does it (nested_fork). */
	bool nested = geteuid() != 0 && ns.fd[0] >= 0 && (ns.pid_fd >= 0 || ns.time_fd >= 0);
	child = clone_exec_child(o, p, &ns, nested, x, console_sock, sv, err);
	if (child < 0)
		return child;
	close(steal_fd(&sv[1]));
	if (console_sock >= 0)
		close(steal_fd(&console_sock));
	tern_fault_point("exec:cloned");

	ret = place_exec_child(st, x, child, err);
	if (ret < 0)
		goto fail;
	ret = tern_sync_send(sv[0], SYNC_GO, 0, err);
	if (ret < 0)
		goto fail;
	tern_fault_point("exec:child-released");
	if (nested) {
		int32_t pid = 0;
		ret = tern_sync_expect(sv[0], SYNC_CHILD_PID, &pid, err);
		waitpid(child, NULL, 0);
		if (ret < 0)
			return ret;
		child = pid;
	}
	if (console_pair[0] >= 0) {
		ret = tern_console_recv_fd(console_pair[0], &master, err);
		if (ret < 0) {
			/* the child's own error explains better, if it sent one */
			tern_error *why = NULL;
			if (wait_exec(sv[0], &why) < 0) {
				tern_error_free(*err);
				*err = why;
			}
			goto fail;
		}
	}
	if (tern_seccomp_has_notify(filter)) {
		/* a child that failed before sent its error instead of the fd */
		ret = hand_notify_fd(sv[0], st, x->seccomp, child, err);
		if (ret < 0)
			goto fail;
	}
	ret = wait_exec(sv[0], err);
	if (ret < 0) {
		waitpid(child, NULL, 0);
		return ret;
	}
	tern_fault_point("exec:process-started");
	return follow_exec(o, child, master, exit_status, err);
fail:
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return ret;
}

int tern_container_exec(const tern_runtime *rt, const char *id, const tern_exec_opts *o,
			int *exit_status, tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	oci_config *config = NULL;
	oci_process *p = NULL;
	tern_seccomp_filter *filter = NULL;
	tern_mempolicy mempolicy = {0};
	tern_cpu_affinity affinity = {0};
	int ret;

	*exit_status = 0;
	ret = tern_inherited_fds_check("--preserve-fds", o->preserve_fds, err);
	if (ret < 0)
		return ret;
	ret = tern_container_load(rt, id, &dir, &st, &config, err);
	if (ret < 0)
		return ret;
	/* The lock is for lifecycle changes; an exec must not block them. */
	tern_state_dir_freep(&dir);
	tern_fault_point("exec:state-loaded");
	if (strcmp(st->status, "stopped") == 0) {
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot exec in container `%s`: it is stopped", id);
		goto out;
	}
	if (strcmp(st->status, "migrated") == 0) {
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot exec in container `%s`: it is migrated (to %s)",
					    id, st->migrated_to);
		goto out;
	}
	if (strcmp(st->status, "paused") == 0 && !o->ignore_paused) {
		ret = tern_error_make(err, EINVAL,
				      "cannot exec in container `%s`: it is paused "
				      "(--ignore-paused to try anyway)",
				      id);
		goto out;
	}
	if (o->cgroups) {
		/* before anything exists; the process then joins these instead */
		oci_map sub;
		ret = tern_cgroup_sub_paths(&st->cgroup_paths, o->cgroups, &sub, err);
		if (ret < 0)
			goto out;
		oci_map_clear(&st->cgroup_paths);
		st->cgroup_paths = sub;
	}
	ret = build_process(o, config, &p, err);
	if (ret < 0)
		goto out;
	ret = check_process(o, p, err);
	if (ret < 0)
		goto out;
	/* The container's memory policy (exec processes inherit nothing
	 * from the init) and this process's CPUs, checked and made ready. */
	if (config) {
		ret = tern_mempolicy_prepare(config, NULL, &mempolicy, err);
		if (ret < 0)
			goto out;
	}
	ret = tern_cpu_affinity_prepare(p->exec_cpu_affinity, NULL, &affinity, err);
	if (ret < 0)
		goto out;
	/* before it runs: it may change the container's network namespace
	 * and be gone by the time a migration decides whether to carry it */
	if (tern_caps_may_change_netns(p->capabilities)) {
		cleanup_free char *mark =
		    tern_strdup_printf("%s/%s/%s", rt->root, id, TERN_NETNS_EXEC_MARK);
		int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno == ENOENT) {
			/* deleted since we looked */
			ret = tern_state_error_gone(rt->root, id, err);
			goto out;
		}
		if (fd < 0) {
			ret = tern_error_make(err, errno, "exec: marking the state (%s)", mark);
			goto out;
		}
		close(fd);
	}
	if (config && config->linux_ && config->linux_->seccomp) {
		ret = tern_seccomp_compile(config->linux_->seccomp, rt->root, &filter, err);
		if (ret < 0)
			goto out;
	}
	tern_fault_point("exec:process-built");
	exec_extras x = {.filter = filter,
			 .seccomp = filter ? config->linux_->seccomp : NULL,
			 .mempolicy = &mempolicy,
			 .affinity = &affinity};
	ret = spawn_exec(o, st, p, &x, exit_status, err);
	if (ret < 0 && (tern_process_start_time(st->pid) != st->pid_start_time ||
			tern_process_is_exiting(st->pid))) {
		/* Its init exited since we looked: whatever failed (a
		 * namespace gone, a clone into a dying pid namespace, a
		 * cgroup join of a killed child) failed for that reason. */
		cleanup_free char *why =
		    tern_xstrdup(err && *err && (*err)->msg ? (*err)->msg : "");
		ret = tern_error_make_quiet(err, ESRCH,
					    "cannot exec in container `%s`: it stopped while the "
					    "exec was being set up (%s)",
					    id, why);
	}
out:
	tern_mempolicy_clear(&mempolicy);
	tern_cpu_affinity_clear(&affinity);
	tern_seccomp_filter_free(filter);
	oci_process_free(p);
	oci_config_free(config);
	oci_state_free(st);
	return ret;
}
