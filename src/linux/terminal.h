/* process.terminal: a pty created inside the container (its own devpts),
 * its master sent to the --console-socket over SCM_RIGHTS as runc does, or
 * proxied to tern's own stdio by a foreground `tern run`. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* Open /dev/ptmx (of the current root, checked to be a devpts ptmx), unlock,
 * and return the master, the slave (opened from the master with
 * TIOCGPTPEER, never by path) and the slave's name (e.g. "/dev/pts/0",
 * malloc'd, informative). Both fds are O_CLOEXEC. */
int tern_terminal_open(int *master, int *slave, char **slave_path, tern_error **err);

/* Apply process.consoleSize (0 = leave as it is). */
int tern_terminal_set_size(int fd, unsigned rows, unsigned cols, tern_error **err);

/* Make the pty slave `slave` the controlling terminal and stdin/out/err:
 * setsid, TIOCSCTTY, dup2 onto 0, 1, 2 (the caller still closes `slave`
 * when it is above 2). `slave_path` is for messages. */
int tern_terminal_become_controlling(int slave, const char *slave_path, tern_error **err);

/* Connect to the unix socket at `path`, for sending the master later.
 * Done by the parent, outside the container. Returns the socket fd. */
int tern_console_socket_connect(const char *path, tern_error **err);

/* Send `fd` over the connected unix socket `sock` with SCM_RIGHTS (the
 * message payload is the pty's name, as runc sends it; "console" when name
 * is NULL). The caller still owns and closes both fds. */
int tern_console_send_fd(int sock, int fd, const char *name, tern_error **err);

/* Receive an fd sent that way (used by `tern run -t` without a console
 * socket, and by tests). The new fd is O_CLOEXEC and owned by the caller. */
int tern_console_recv_fd(int sock, int *fd, tern_error **err);

/* Copy between tern's own stdin/stdout and `master` until the master hangs
 * up, with the local terminal in raw mode when stdin is a terminal (restored
 * before returning); window size changes (SIGWINCH, via a signalfd: the
 * signal is blocked while the proxy runs) are passed on. Returns once every
 * slave fd is closed (read gives EIO) and the output is drained. Call it
 * only after the container has opened the slave: a master whose slave was
 * never opened reads as hung up. The caller keeps and closes `master`. */
int tern_terminal_proxy(int master, tern_error **err);
