/* `criu lazy-pages`: the daemon a lazy restore takes its memory from.
 *
 * A restore with lazy pages maps the private memory of the restored
 * processes empty and registers it with userfaultfd; the daemon fills it
 * with UFFDIO_COPY, first what the processes touch, then the rest, and
 * exits 0 once every page is in. It takes the pages from a page server
 * (post-copy: the source's, over the network) or, without one, from the
 * image directory itself.
 *
 * The second use is tern's own: a restore whose images are all here fills
 * memory faster through the daemon than criu's plain restore, which reads
 * the pages into the new mappings with preadv and so takes one page fault
 * per 4 KiB page. UFFDIO_COPY maps pages without a fault, and where faults
 * are expensive (this machine is a VM: a fault costs about 10 us, 256 MiB
 * took 1.1 s to read in and 0.4 s to fill through the daemon) that is most
 * of a restore.
 *
 * The daemon leads a process group of its own and dies with the process
 * that started it (PR_SET_PDEATHSIG): half-filled memory must never be left
 * without its filler, which would make the rest read as zeros. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct {
	pid_t pid;    /* the daemon, leader of its process group; 0: none */
	int ready_fd; /* read end of its --status-fd: a byte once it listens; -1 */
} tern_lazy_daemon;

#define TERN_LAZY_DAEMON_INIT                                                                      \
	{                                                                                          \
		.pid = 0, .ready_fd = -1                                                           \
	}

/* Start `criu lazy-pages EXTRA... -D IMAGES -o lazy-pages.log -v4
 * --status-fd 3`; `extra` (NULL-terminated, may be NULL) is e.g. the page
 * server to take the pages from. Its log goes to IMAGES/lazy-pages.log;
 * the restore meets it at IMAGES/lazy-pages.socket, so IMAGES must be the
 * restore's work directory too. */
int tern_lazy_daemon_start(const char *criu, const char *images, char *const extra[],
			   tern_lazy_daemon *d, tern_error **err);

/* Wait for the daemon to end: 0 once it exited 0, every page filled. */
int tern_lazy_daemon_wait(tern_lazy_daemon *d, tern_error **err);

/* The same, at most timeout_ms: past it the daemon (hung: its page server
 * or the restore it serves went silent) is killed with its group, -ETIMEDOUT
 * "criu lazy-pages did not finish within N s: killed it". */
int tern_lazy_daemon_wait_for(tern_lazy_daemon *d, int timeout_ms, tern_error **err);

/* The same without waiting: 1 while it runs. */
int tern_lazy_daemon_poll(tern_lazy_daemon *d, tern_error **err);

/* Wait, at most TERN_LAZY_SOCKET_WAIT_MS, for a daemon someone else
 * started (`criu lazy-pages -D DIR`, put in the background just before the
 * restore) to make DIR/lazy-pages.socket: criu creates it only after its
 * own start-up (kernel probes, the page-server connection), and a restore
 * that looked once failed whenever it came first. dirfd is DIR (dir_name
 * names it in the error, images in its hint). 0 once the socket is there;
 * -ENOENT after the bound, naming the socket path and the bound. */
#define TERN_LAZY_SOCKET_WAIT_MS 5000
int tern_lazy_socket_wait(int dirfd, const char *dir_name, const char *images, tern_error **err);

/* Kill and reap it (and its group); also closes ready_fd. */
void tern_lazy_daemon_stop(tern_lazy_daemon *d);
