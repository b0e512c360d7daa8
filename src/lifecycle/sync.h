/* The parent/child protocol of `create` and `exec`.
 *
 * One SOCK_SEQPACKET socketpair; every message is a tern_sync_msg, one
 * datagram each. Either side may send SYNC_ERROR{errno, message} instead of
 * the expected message; the receiver turns it into its own error and the
 * child exits.
 *
 *  parent (tern create)                         child (container init)
 *  ------------------------------------------   ------------------------------------------
 *  clone(new namespaces)
 *  [slow path] move child into the cgroup
 *  [fast path + new userns] write id maps
 *  (1) SYNC_GO ------------------------------->  (1) start
 *  [fast path] open the bind sources (0),
 *  (0a) SYNC_MOUNT_SOURCES{n} and
 *  n x SYNC_MOUNT_SOURCE{fd} ----------------->  (0a) awaited before anything else
 *  [fast path] move child into the cgroup,
 *  (1b) SYNC_CGROUP_DONE --------------------->  (1b) awaited before the cgroup namespace,
 *                                                    a cgroup mount (it shows the
 *                                                    cgroups we are in), any hook,
 *                                                    and SYNC_READY
 *  (moving a task is slow on cgroup v1: the kernel waits for an RCU grace
 *   period, ~10 ms here; the child sets up its mounts meanwhile)
 *                                               [slow path: join namespaces by path,
 *                                                unshare the user namespace]
 *  write id maps  <---------------------------  (2) SYNC_MAPS_REQUEST   (slow path only)
 *  (2) SYNC_MAPS_DONE ------------------------>  unshare the rest, fork the init
 *  waitpid(stage 1) <-------------------------  (3) SYNC_CHILD_PID{pid} (slow path only;
 *                                                    the stage-1 process then exits)
 *  [slow path] open the bind sources (0),
 *  (0a) SYNC_MOUNT_SOURCES... --------------->  (0a) the init keeps them for the mounts
 *                                               mounts, /dev
 *  [linux.netDevices] move them in (netdev.h)
 *  run prestart + createRuntime hooks <-------  (4) SYNC_HOOKS_REQUEST  (only with such hooks
 *                                                    or linux.netDevices)
 *  (4) SYNC_HOOKS_DONE ----------------------->  createContainer hooks, pivot_root,
 *                                                hostname, sysctl, console, masked paths,
 *                                                rlimits, close inherited fds, LSM exec
 *                                                labels, stdio to the user, [seccomp A],
 *                                                user, capabilities, args[0] check,
 *                                                [no_new_privs], [seccomp B]
 *  connect to linux.seccomp.listenerPath, <---  (4b) SYNC_SECCOMP_FD{notify fd as
 *  send it the process state + the fd                SCM_RIGHTS} (only with SCMP_ACT_NOTIFY)
 *  (4b) SYNC_SECCOMP_DONE -------------------->  (awaited, so nothing runs under the
 *                                                 filter before the listener has its fd)
 *  write state.json, --pid-file  <------------  (5) SYNC_READY (parent-death signal
 *                                                    cleared just before)
 *  (5) SYNC_FINISH --------------------------->  close
 *  exit 0 (create) / start + wait (run)          the socket and the log, wait until
 *                                                `tern start` opens exec.fifo (holding
 *                                                no directory: init.c), startContainer
 *                                                hooks, [seccomp C], execve
 *
 * (0) Bind-mount sources (mount-source.h) are opened by the parent, with the
 * host's credentials but inside the container's mount namespace (setns
 * there and back), so that a source under a directory the container's root
 * cannot enter still works and the kernel's locks on host mounts hold. Each
 * one goes to the child as SYNC_MOUNT_SOURCE with the fd and value
 * index * 2 + 1 for a detached tree (open_tree) or index * 2 for an O_PATH
 * fd; n is 0 when the parent could not enter (rootless), and the child then
 * opens the sources itself.
 *
 * linux.seccomp is loaded at exactly one of A, B, C (init.c, seccomp_stage):
 * C, the last step before execve, when process.noNewPrivileges is set and
 * no rule is SCMP_ACT_NOTIFY; B when the notify fd must reach the parent,
 * which is gone by C; A without noNewPrivileges, because loading a filter
 * then needs CAP_SYS_ADMIN, which the user and capability change may drop
 * (runc and crun load there too). Everything tern does after A or B runs
 * under the filter: so every fallible step that a profile might deny (fd
 * closing, the stdio chown) comes before A, and each step between A and
 * SYNC_READY reports its failure over the socket (a KILL action leaves
 * none: the parent then names the signal).
 *
 * `tern exec` uses the same messages on its own socket: SYNC_GO to the
 * child; with SCMP_ACT_NOTIFY, SYNC_SECCOMP_FD / SYNC_SECCOMP_DONE once it
 * has loaded the filter; then SYNC_ERROR, or EOF when execve closed the
 * (close-on-exec) socket.
 *
 * Until just before SYNC_READY the child has PR_SET_PDEATHSIG(SIGKILL); after
 * that it only waits on the socket, where a dead tern reads as EOF: either
 * way, if tern is killed mid-create the container process dies with it.
 */
#pragma once

#include "error.h"

#include <stdint.h>
#include <sys/types.h>

typedef enum {
	SYNC_GO = 1,
	SYNC_CGROUP_DONE,
	SYNC_MAPS_REQUEST,
	SYNC_MAPS_DONE,
	SYNC_CHILD_PID,
	SYNC_HOOKS_REQUEST,
	SYNC_HOOKS_DONE,
	SYNC_READY,
	SYNC_FINISH,
	SYNC_ERROR,
	SYNC_SECCOMP_FD,
	SYNC_SECCOMP_DONE,
	SYNC_MOUNT_SOURCES,
	SYNC_MOUNT_SOURCE,
} tern_sync_type;

#define TERN_SYNC_MSG_MAX 4000

typedef struct {
	uint32_t type;
	int32_t value;		      /* pid for SYNC_CHILD_PID, errno for SYNC_ERROR */
	char text[TERN_SYNC_MSG_MAX]; /* error message, NUL-terminated */
} tern_sync_msg;

int tern_sync_send(int fd, tern_sync_type type, int32_t value, tern_error **err);

/* Send `type` with `passfd` attached (SCM_RIGHTS); the caller keeps its
 * copy of passfd. */
int tern_sync_send_fd(int fd, tern_sync_type type, int passfd, tern_error **err);

/* The same with a value in the message. */
int tern_sync_send_fd_value(int fd, tern_sync_type type, int32_t value, int passfd,
			    tern_error **err);

/* Like tern_sync_expect, for a message that carries an fd: *passfd gets
 * it (close-on-exec), owned by the caller; a message without one is an
 * error. */
int tern_sync_expect_fd(int fd, tern_sync_type want, int *passfd, tern_error **err);

/* The same, also giving the message's value. */
int tern_sync_expect_fd_value(int fd, tern_sync_type want, int32_t *value, int *passfd,
			      tern_error **err);

/* Send an error (the child's way to report): errno and message of `e`. */
void tern_sync_send_error(int fd, const tern_error *e);

/* Receive the message `want`. A SYNC_ERROR becomes *err with the peer's errno
 * and message; EOF (the peer died) is an error too. `value` may be NULL. */
int tern_sync_expect(int fd, tern_sync_type want, int32_t *value, tern_error **err);

const char *tern_sync_type_name(tern_sync_type type);
