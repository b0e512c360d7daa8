/* The container's own network namespace at checkpoint and restore.
 *
 * Veths: the ones that join a container's network namespace to the one
 * tern runs in.
 *
 * criu dumps the inner end of such a veth as the container's device but
 * cannot tell where its peer was, and on restore (criu 4.x) refuses to
 * recreate it ("Unknown peer net namespace") unless told the peer's name
 * with `--external veth[INNER]:OUTER`. tern records each pair at dump time
 * (the descriptor's "veth INNER OUTER" lines) so that restore recreates
 * the outer end under its old name in the restoring tern's network
 * namespace: on the target node for `tern migrate`, where the operator
 * gives it back its address and routes. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* "INNER OUTER" strings (a NULL-terminated vector, added to *pairs) for
 * each veth in the network namespace of `pid` whose peer is in this
 * thread's network namespace. */
int tern_veth_pairs(pid_t pid, char ***pairs, tern_error **err);

/* Whether `name` can be a network device name handed to criu. */
bool tern_veth_name_ok(const char *name);

/* The network lock that outlives a dump (tern migrate --tcp-established).
 *
 * criu locks the network while it dumps established connections, but with
 * --leave-running it unlocks at the end, takes the sockets out of repair
 * mode and lets the tasks go: the source's copy of each connection would
 * then answer (or, once the source is deleted, close or reset) the peer
 * that the copy restored on the target is talking to. So while criu still
 * holds the tasks, tern drops every packet in and out of the container's
 * namespace with rules of its own (chain TERN-MIGRATE, iptables and
 * ip6tables), which stay until the source dies with its namespace, or
 * until a failed migration thaws it and takes them away. */
int tern_netns_lock(pid_t pid, tern_error **err);
int tern_netns_unlock(pid_t pid, tern_error **err);
