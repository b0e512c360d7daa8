/* Uncorking criu's page-server connection.
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
 * pidfd_getfd, or a connection not found, only leaves the 0.4 s. */
#pragma once

#include <sys/types.h>

/* Clear TCP_CORK on each connected TCP socket of `pid` or of a process
 * below it whose local or remote port is `port`; the number of sockets
 * uncorked. */
int tern_criu_uncork(pid_t pid, int port);
