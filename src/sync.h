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
 *  [fast path] move child into the cgroup,
 *  (1b) SYNC_CGROUP_DONE --------------------->  (1b) awaited before the cgroup namespace,
 *                                                    any hook, and SYNC_READY
 *  (moving a task is slow on cgroup v1: the kernel waits for an RCU grace
 *   period, ~10 ms here; the child sets up its mounts meanwhile)
 *                                               [slow path: join namespaces by path,
 *                                                unshare the user namespace]
 *  write id maps  <---------------------------  (2) SYNC_MAPS_REQUEST   (slow path only)
 *  (2) SYNC_MAPS_DONE ------------------------>  unshare the rest, fork the init
 *  waitpid(stage 1) <-------------------------  (3) SYNC_CHILD_PID{pid} (slow path only;
 *                                                    the stage-1 process then exits)
 *                                               mounts, /dev
 *  run prestart + createRuntime hooks <-------  (4) SYNC_HOOKS_REQUEST  (only with such hooks)
 *  (4) SYNC_HOOKS_DONE ----------------------->  createContainer hooks, pivot_root,
 *                                                hostname, sysctl, console, masked paths,
 *                                                rlimits, user, capabilities
 *  write state.json, --pid-file  <------------  (5) SYNC_READY (parent-death signal
 *                                                    cleared just before)
 *  (5) SYNC_FINISH --------------------------->  close
 *  exit 0 (create) / start + wait (run)          the socket, block on exec.fifo
 *                                                (until `tern start`), startContainer hooks,
 *                                                no_new_privs, seccomp, execve
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
} tern_sync_type;

#define TERN_SYNC_MSG_MAX 4000

typedef struct {
	uint32_t type;
	int32_t value;		      /* pid for SYNC_CHILD_PID, errno for SYNC_ERROR */
	char text[TERN_SYNC_MSG_MAX]; /* error message, NUL-terminated */
} tern_sync_msg;

int tern_sync_send(int fd, tern_sync_type type, int32_t value, tern_error **err);

/* Send an error (the child's way to report): errno and message of `e`. */
void tern_sync_send_error(int fd, const tern_error *e);

/* Receive the message `want`. A SYNC_ERROR becomes *err with the peer's errno
 * and message; EOF (the peer died) is an error too. `value` may be NULL. */
int tern_sync_expect(int fd, tern_sync_type want, int32_t *value, tern_error **err);

const char *tern_sync_type_name(tern_sync_type type);
