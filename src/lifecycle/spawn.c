#include "spawn.h"
#include "fault.h"
#include "cgroup.h"
#include "container-cgroup.h"
#include "hooks.h"
#include "init.h"
#include "intel-rdt.h"
#include "log.h"
#include "mount-source.h"
#include "netdev.h"
#include "seccomp-relay.h"
#include "sync.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* fork-like clone: no new stack, the child continues here with a copy of
 * our memory. tern is single-threaded, so that is safe. */
static pid_t clone_child(int flags)
{
	return (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* clone3's arguments up to `cgroup` (CLONE_ARGS_SIZE_VER2); glibc 2.36
 * does not declare them */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
	    set_tid_size, cgroup;
};

/* clone_child, started in the cgroup `cgroup_fd` (-1: none) when the
 * kernel can (5.7 and later, v2): *joined then says no attach is needed. */
static pid_t clone_child_into(int flags, int cgroup_fd, bool *joined)
{
	*joined = false;
	if (cgroup_fd >= 0) {
		struct clone3_args args = {
		    .flags = (uint64_t)(unsigned)flags | CLONE_INTO_CGROUP,
		    .exit_signal = SIGCHLD,
		    .cgroup = (uint64_t)cgroup_fd,
		};
		long pid = syscall(SYS_clone3, &args, sizeof(args));
		if (pid >= 0) {
			*joined = true;
			return (pid_t)pid;
		}
		/* an older kernel, or a cgroup it would not start us in:
		 * the usual attach says why, if it fails too */
	}
	return clone_child(flags);
}

/* How long tern waits for the container's init at each step of sync.h
 * before it gives up and kills it: far above what any setup takes (tens of
 * ms here), but bounded, because an init that stopped (a cgroup frozen
 * under it after the check in container-cgroup.c, a stuck FUSE mount)
 * would otherwise hang `create` forever. The createContainer hooks run in
 * the init before (5): their timeouts are added, and one without a timeout
 * may take as long as it likes (runtime-spec), so (5) is then unbounded. */
#define INIT_ANSWER_TIMEOUT_S 60

typedef struct {
	int fd;
	long long limit_s; /* 0: unbounded */
	struct timespec since;
} waiter;

static long long init_bound_s(const tern_container *c)
{
	const oci_hooks *h = c->config->hooks;
	long long bound = INIT_ANSWER_TIMEOUT_S;

	for (size_t i = 0; h && i < h->create_container.len; i++) {
		if (!h->create_container.items[i].timeout.set)
			return 0;
		bound += h->create_container.items[i].timeout.value;
	}
	return bound;
}

static void set_bound(waiter *w, long long seconds)
{
	struct timeval tv = {.tv_sec = (time_t)seconds};

	w->limit_s = seconds;
	clock_gettime(CLOCK_MONOTONIC, &w->since);
	/* SO_RCVTIMEO: a recvmsg that waits longer fails with EAGAIN */
	setsockopt(w->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* tern_sync_expect with the bound: an init that says nothing in time is
 * taken out of its cgroup (a frozen one would keep it from dying) and
 * killed; the caller's cleanup reaps it. */
static int expect(const tern_container *c, waiter *w, pid_t child, tern_sync_type want,
		  int32_t *value, tern_error **err)
{
	int ret = tern_sync_expect(w->fd, want, value, err);
	struct timespec now;

	if (ret != -EAGAIN || w->limit_s == 0)
		return ret;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec - w->since.tv_sec < w->limit_s)
		return ret; /* the child's own EAGAIN */
	tern_error_free(*err);
	*err = NULL;
	if (child > 0)
		tern_cgroup_evict(&c->cgroup_paths, child);
	return tern_error_make(err, ETIMEDOUT,
			       "the container's init did not answer within %lld s (waiting for "
			       "`%s`): killed it; is its cgroup frozen?",
			       w->limit_s, tern_sync_type_name(want));
}

static int run_parent_hooks(tern_container *c, tern_error **err)
{
	const oci_hooks *hooks = c->config->hooks;
	cleanup_free char *json = NULL;
	int ret;

	if (hooks == NULL)
		return 0;
	/* "created": the create operation's environment exists (namespaces,
	 * mounts, cgroup); crun passes it and conformance suites expect it
	 * (runc 1.1.5 passes "creating"). */
	json = tern_container_hook_state(c, "created");
	/* runc runs these in the bundle directory (the spec says nothing):
	 * hooks written for it may use paths relative to the bundle. */
	cleanup_close int back = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (back < 0)
		return tern_error_make(err, errno, "open the working directory");
	if (chdir(c->bundle) < 0)
		return tern_error_make(err, errno, "hooks: chdir to the bundle `%s`", c->bundle);
	/* prestart is deprecated but still part of the spec; it runs first. */
	ret = tern_hooks_run(&hooks->prestart, "prestart", json, err);
	if (ret == 0)
		ret = tern_hooks_run(&hooks->create_runtime, "createRuntime", json, err);
	if (fchdir(back) < 0 && ret == 0)
		ret = tern_error_make(err, errno, "back to the working directory after the hooks");
	return ret;
}

/* (4b) in sync.h: the child loaded a filter with SCMP_ACT_NOTIFY rules and
 * sends its notify fd; the listener at listenerPath gets it with the
 * container process state, and the child waits until it has. */
static int hand_notify_fd(tern_container *c, int sync_fd, tern_error **err)
{
	cleanup_free char *state = tern_container_hook_state(c, "creating");
	return tern_seccomp_relay_notify_fd(sync_fd, c->config->linux_->seccomp, c->pid, state,
					    err);
}

/* The child closed the socket without sending its error: it died, most
 * likely by a signal (a seccomp rule's KILL action, loaded at stage A or B
 * of sync.h, leaves no time for a message). Add how it ended, when it is
 * our child; *child is then reaped and cleared. */
static int explain_silence(const tern_container *c, pid_t *child, int ret, tern_error **err)
{
	const oci_linux *lx = c->config->linux_;
	const oci_memory *mem = lx && lx->resources ? lx->resources->memory : NULL;
	cleanup_close int pidfd = -1;
	struct pollfd pfd;
	int status, sig;

	if ((ret != -EPIPE && ret != -ECONNRESET) || *child <= 0)
		return ret;
	/* closing its last fd is part of exiting: the exit is close */
	pidfd = (int)syscall(SYS_pidfd_open, *child, 0);
	pfd = (struct pollfd){.fd = pidfd, .events = POLLIN};
	if (pidfd < 0 || poll(&pfd, 1, 1000) <= 0 || waitpid(*child, &status, WNOHANG) != *child)
		return ret;
	*child = -1;
	if (!WIFSIGNALED(status))
		return tern_error_wrap(err, "the container process exited with status %d",
				       WEXITSTATUS(status));
	sig = WTERMSIG(status);
	/* A limit below what the setup itself needs ends in the OOM killer's
	 * SIGKILL before the child can say anything: name the likely cause. */
	if (sig == SIGKILL && mem && mem->limit.set && mem->limit.value >= 0)
		return tern_error_wrap(err,
				       "the container process was killed by signal %d (%s): out "
				       "of memory under linux.resources.memory.limit %lld?",
				       sig, strsignal(sig), (long long)mem->limit.value);
	return tern_error_wrap(err, "the container process was killed by signal %d (%s%s)", sig,
			       strsignal(sig), sig == SIGSYS ? ": a linux.seccomp rule" : "");
}

/* A send that found the child gone (EPIPE, ECONNRESET) after it failed:
 * its error message, sent before it exited, waits unread in our queue
 * (the root of a user namespace that is not mapped fails the child while
 * tern prepares the bind sources). Say that rather than the broken pipe;
 * with no message, how it ended (explain_silence). */
static int child_error_instead(const tern_container *c, int fd, pid_t *child, int ret,
			       tern_error **err)
{
	if (ret != -EPIPE && ret != -ECONNRESET)
		return ret;
	/* it closed its end: what it sent is all there, then the end */
	for (int i = 0; i < 16; i++) {
		tern_error *said = NULL;
		int r = tern_sync_expect(fd, SYNC_ERROR, NULL, &said);
		if (said && r != -EPROTO && r != -EPIPE && r != -ECONNRESET && r != -EAGAIN) {
			tern_error_free(*err);
			*err = said;
			return r;
		}
		tern_error_free(said);
		if (r != -EPROTO)
			break;
	}
	return explain_silence(c, child, ret, err);
}

/* (0) in sync.h: open the bind sources inside the mount namespace of `pid`
 * with our credentials, and hand them to the child. */
static int send_mount_sources(tern_container *c, int sync_fd, pid_t pid, tern_error **err)
{
	tern_mount_sources *sources = NULL;
	int ret = tern_mount_sources_prepare(c->config, pid, c->bundle, &sources, err);

	if (ret < 0)
		return ret;
	ret = tern_mount_sources_send(sync_fd, sources, err);
	tern_mount_sources_free(sources);
	return ret;
}

/* Before SYNC_GO. The slow path forks the init later: it must be in the
 * cgroup first. The fast path's user namespace exists from the clone: its
 * maps are written now. */
static int before_release(tern_container *c, pid_t child, tern_error **err)
{
	int ret;

	if (c->ns.two_stage) {
		ret = tern_container_cgroup_join(c, child, err);
		if (ret < 0)
			return ret;
		/* the init it forks inherits the resctrl group too */
		ret = tern_rdt_enter(c->rdt.group, c->rdt.mon_group, child, err);
		if (ret < 0)
			return ret;
	}
	if (!c->ns.two_stage && c->ns.new_user) {
		ret = tern_ns_write_id_maps(child, c->config, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The fast path, after SYNC_GO: the child is the init already. */
static int place_fast_path_child(tern_container *c, int sync_fd, pid_t child, bool joined,
				 tern_error **err)
{
	/* The fast path's namespaces exist from the clone, and the child
	 * waits for its sources before it does anything: a missing one fails
	 * before any mount or cgroup. */
	int ret = send_mount_sources(c, sync_fd, child, err);
	if (ret < 0)
		return ret;
	/* The fast path makes the cgroup (on v1: container-cgroup.h) and
	 * moves the child while the child sets up its mounts; it waits for
	 * SYNC_CGROUP_DONE before anything that must see the cgroup (the
	 * cgroup namespace, a cgroup mount, hooks) and before it can ever
	 * exec. */
	if (tern_container_cgroup_make_after_clone(c)) {
		ret = tern_container_cgroup_make(c, err);
		if (ret < 0)
			return ret;
	}
	ret = joined ? 0 : tern_container_cgroup_join(c, child, err);
	if (ret < 0)
		return ret;
	ret = tern_rdt_enter(c->rdt.group, c->rdt.mon_group, child, err);
	if (ret < 0)
		return ret;
	/* A child that failed meanwhile has closed its end: then its
	 * own error, read below, says why, not this send. */
	tern_sync_send(sync_fd, SYNC_CGROUP_DONE, 0, NULL);
	tern_fault_point("spawn:cgroup-joined");
	return 0;
}

/* The slow path, after SYNC_GO: stage 1 (*child) asks for its id maps and
 * forks the init, which becomes *child. */
static int await_forked_init(tern_container *c, waiter *w, pid_t *child, tern_error **err)
{
	int32_t pid = 0;
	int status;
	int ret;

	if (c->ns.new_user) {
		ret = expect(c, w, *child, SYNC_MAPS_REQUEST, NULL, err);
		if (ret < 0)
			return ret;
		ret = tern_ns_write_id_maps(*child, c->config, err);
		if (ret < 0)
			return ret;
		ret = tern_sync_send(w->fd, SYNC_MAPS_DONE, 0, err);
		if (ret < 0)
			return ret;
	}
	tern_fault_point("spawn:id-maps-written");
	ret = expect(c, w, *child, SYNC_CHILD_PID, &pid, err);
	if (ret < 0)
		return ret;
	/* The init is our grandchild: from now on, killing it is what
	 * cleans up, and stage 1 just exits. */
	waitpid(*child, &status, 0);
	*child = pid;
	tern_fault_point("spawn:init-forked");
	/* The init's mount namespace exists now. */
	return send_mount_sources(c, w->fd, pid, err);
}

/* From the init's pid to SYNC_READY: linux.netDevices, the parent's hooks,
 * the seccomp notify fd. */
static int await_ready(tern_container *c, waiter *w, pid_t *child, tern_error **err)
{
	/* runtime-spec: the devices are in before the createRuntime hooks
	 * run (runc and crun move them there too); the child waits at (4) */
	int ret = tern_netdev_move_in(c->config, c->pid, &c->netdevs, err);
	if (ret < 0)
		return ret;
	if (tern_init_awaits_parent(c->config)) {
		ret = expect(c, w, *child, SYNC_HOOKS_REQUEST, NULL, err);
		if (ret < 0)
			return ret;
		ret = run_parent_hooks(c, err);
		if (ret < 0)
			return ret;
		tern_fault_point("spawn:parent-hooks-run");
		ret = tern_sync_send(w->fd, SYNC_HOOKS_DONE, 0, err);
		if (ret < 0)
			return ret;
	}
	/* the createContainer hooks run now, in the init */
	set_bound(w, init_bound_s(c));
	if (tern_seccomp_has_notify(c->seccomp)) {
		ret = hand_notify_fd(c, w->fd, err);
		if (ret < 0)
			return ret;
	}
	ret = expect(c, w, *child, SYNC_READY, NULL, err);
	if (ret < 0)
		return explain_silence(c, child, ret, err);
	tern_fault_point("spawn:child-ready");
	return 0;
}

int tern_spawn_container(tern_container *c, int *sync_fd, tern_error **err)
{
	cleanup_close_pair int sv[2] = {-1, -1};
	cleanup_child pid_t child = -1;
	int ret;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return tern_error_make(err, errno, "socketpair");

	int flags = c->ns.two_stage ? 0 : c->ns.clone_flags;
	bool joined = false;
	if (c->ns.two_stage || c->rt->systemd_cgroup) {
		child = clone_child(flags);
	} else {
		cleanup_close int cgroup_fd = tern_cgroup_open_v2_only(&c->cgroup_paths);
		child = clone_child_into(flags, cgroup_fd, &joined);
	}
	if (child < 0)
		return tern_error_make(err, errno, "clone the container process");
	if (child == 0) {
		close(sv[0]);
		tern_init_main(c, sv[1]);
	}
	close(steal_fd(&sv[1]));
	waiter w = {.fd = sv[0]};
	set_bound(&w, INIT_ANSWER_TIMEOUT_S);

	tern_fault_point("spawn:cloned");
	ret = before_release(c, child, err);
	if (ret < 0)
		return ret;
	ret = tern_sync_send(sv[0], SYNC_GO, 0, err);
	if (ret < 0)
		return child_error_instead(c, sv[0], &child, ret, err);
	tern_fault_point("spawn:child-released");
	if (!c->ns.two_stage)
		ret = place_fast_path_child(c, sv[0], child, joined, err);
	else
		ret = await_forked_init(c, &w, &child, err);
	if (ret < 0)
		return child_error_instead(c, sv[0], &child, ret, err);
	c->pid = child;

	ret = await_ready(c, &w, &child, err);
	if (ret < 0)
		return ret;
	/* the caller's own waits on the socket (`run`) are its business */
	set_bound(&w, 0);

	*sync_fd = steal_fd(&sv[0]);
	child = -1; /* ownership moves to the caller */
	return 0;
}
