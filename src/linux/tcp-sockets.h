/* TCP sockets of other processes, reached through a copy of their
 * descriptors (pidfd_getfd, which needs ptrace rights over the process:
 * tern is root and started it or the container).
 *
 * 1. Uncorking criu's page-server connection.
 *
 * Both ends of a lazy page-server connection (criu's page server on the
 * source, `criu lazy-pages` on the target) set TCP_CORK on it when it
 * opens and flush by hand after each page request and reply (setting
 * TCP_NODELAY pushes what a cork holds). The messages that end the session
 * are not flushed: lazy-pages' close, the server's answer and the TLS
 * close_notify each wait out the kernel's cork timer (200 ms), so a
 * post-copy move ends some 0.4 s after its last page arrived (criu 4.2).
 *
 * The socket belongs to the criu process, but a corked socket is a state of
 * the socket, not of the file descriptor: tern takes a copy of criu's
 * descriptor (pidfd_getfd, which needs ptrace rights over criu: tern
 * started it and is root) and clears the cork once the connection is up.
 * From then on every message goes out when criu sends it, as the page
 * requests and replies already did. Best effort: a kernel without
 * pidfd_getfd, or a connection not found, only leaves the 0.4 s.
 *
 * 2. Repair mode on a migrated source's connections. A migration dumps
 * with the tasks left frozen (so that it can roll back), and criu takes
 * their connections out of repair mode at the end of the dump. Once the
 * target runs the container, the source is deleted: its killed processes
 * would close those connections for real, and since the source's network
 * is locked (checkpoint-net.h) the FIN is never answered. The orphaned
 * socket then retries for about 100 s and keeps the source's network
 * namespace, with its end of the container's veth and the addresses now
 * used on the target, alive that long. A socket in repair mode closes
 * silently and at once, as when criu kills the tasks it dumped. */
#pragma once

#include <sys/types.h>

/* Clear TCP_CORK on each connected TCP socket of `pid` or of a process
 * below it whose local or remote port is `port`; the number of sockets
 * uncorked. */
int tern_criu_uncork(pid_t pid, int port);

/* Put each TCP connection of `pid` and of the processes below it in
 * repair mode (they must be frozen or stopped, so that none is opened or
 * changes hands meanwhile); the number of sockets set. */
int tern_tcp_repair_tree(pid_t pid);
