/* Parent side of container creation: clone the child with its new
 * namespaces and walk the protocol of sync.h up to SYNC_READY. */
#pragma once

#include "container-shared.h"

/* On success c->pid is the init (host pid) and *sync_fd the parent's end of
 * the socket, waiting for the parent to send SYNC_FINISH. On failure the
 * child is killed and reaped. */
int tern_spawn_container(tern_container *c, int *sync_fd, tern_error **err);
