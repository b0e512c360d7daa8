/* The progress of a criu dump while it runs (see dump-progress.h): the
 * size of its page images, sampled every TERN_PROGRESS_MS by whoever
 * waits for the dump, or by a child while libcriu holds the caller. */
#include "dump-progress.h"
#include "log.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TICK_NS ((uint64_t)TERN_PROGRESS_MS * 1000000ULL)

uint64_t tern_dump_pages_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t total = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (strncmp(e->d_name, "pages-", 6) == 0 &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

void tern_dump_progress_init(tern_dump_progress *d, const char *dir, uint64_t t_start)
{
	memset(d, 0, sizeof(*d));
	d->dir = dir;
	d->t_start = t_start;
	d->t_last = t_start;
	d->t_next = t_start + TICK_NS;
}

int tern_dump_progress_wait_ms(const tern_dump_progress *d)
{
	uint64_t now = tern_mig_now_ns();

	return now >= d->t_next ? 0 : (int)((d->t_next - now + 999999) / 1000000);
}

static void event(tern_dump_progress *d, tern_mig_progress *p, bool last)
{
	uint64_t now = tern_mig_now_ns();
	uint64_t b = tern_dump_pages_bytes(d->dir);
	/* (criu only adds to its page images: a smaller figure is a file
	 * seen before it was, or no longer, there) */
	if (b < d->bytes)
		b = d->bytes;
	uint64_t rate = now > d->t_last ? (b - d->bytes) * 1000000000ULL / (now - d->t_last) : 0;
	uint64_t ms = (now - d->t_start) / 1000000ULL;
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "dump");
	tern_jw_u64(&w, "bytes", b);
	tern_jw_u64(&w, "rate", rate);
	tern_jw_u64(&w, "dump_ms", ms);
	tern_jw_bool(&w, "last", last);
	if (last)
		tern_mig_event(
		    p, "progress", &w,
		    "dump: %.1f MiB of pages written in all, in %llu.%03llu s (%.1f MiB/s)",
		    (double)b / 1048576.0, (unsigned long long)(ms / 1000),
		    (unsigned long long)(ms % 1000), (double)rate / 1048576.0);
	else
		tern_mig_event(p, "progress", &w,
			       "dump: %.1f MiB of pages written so far (%.1f MiB/s)",
			       (double)b / 1048576.0, (double)rate / 1048576.0);
	d->bytes = b;
	d->t_last = now;
	d->shown = true;
}

void tern_dump_progress_tick(tern_dump_progress *d, tern_mig_progress *p)
{
	uint64_t now = tern_mig_now_ns();

	if (now < d->t_next)
		return;
	event(d, p, false);
	/* the next a tick on from this one: a late tick (a busy machine, a
	 * slow send) delays the rest rather than bunching them */
	d->t_next = now + TICK_NS;
}

void tern_dump_progress_end(tern_dump_progress *d, tern_mig_progress *p)
{
	/* by the clock, not by whether a tick came through: a dump as long
	 * as a tick always ends with its total */
	if (d->shown || tern_mig_now_ns() - d->t_start >= TICK_NS)
		event(d, p, true);
}

/* ---- the child of a dump made through libcriu ---- */

static void watcher_main(int fd, const char *dir, tern_mig_progress *p, uint64_t t_start)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	tern_dump_progress d;
	pid_t parent = getppid();
	char ok = 0;

	tern_dump_progress_init(&d, dir, t_start);
	for (;;) {
		int r = poll(&pfd, 1, tern_dump_progress_wait_ms(&d));
		if (r < 0 && errno == EINTR)
			continue;
		/* a byte then end of file: the dump succeeded; end of file
		 * alone: it failed (or the caller died) */
		if (r != 0 || getppid() != parent)
			break;
		tern_dump_progress_tick(&d, p);
	}
	while (read(fd, &ok, 1) < 0 && errno == EINTR)
		;
	if (ok == 1 && getppid() == parent)
		tern_dump_progress_end(&d, p);
	fflush(stdout);
	fflush(stderr);
}

int tern_dump_watcher_start(tern_dump_watcher *w, const char *dir, tern_mig_progress *p,
			    tern_error **err)
{
	uint64_t t_start = tern_mig_now_ns();
	int pp[2];

	w->pid = 0;
	w->fd = -1;
	if (pipe2(pp, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	/* nothing written before the fork twice */
	fflush(stdout);
	fflush(stderr);
	w->pid = fork();
	if (w->pid < 0) {
		int e = errno;
		w->pid = 0;
		close(pp[0]);
		close(pp[1]);
		return tern_error_make(err, e, "fork");
	}
	if (w->pid == 0) {
		close(pp[1]);
		/* a ^C is for the dump's caller, who thaws the container; this
		 * child ends with it (end of file) */
		signal(SIGINT, SIG_IGN);
		watcher_main(pp[0], dir, p, t_start);
		_exit(0);
	}
	close(pp[0]);
	w->fd = pp[1];
	return 0;
}

void tern_dump_watcher_stop(tern_dump_watcher *w, bool ok)
{
	char one = 1;

	if (w->pid <= 0)
		return;
	if (ok && write(w->fd, &one, 1) < 0)
		tern_debug("the dump's progress: %s", strerror(errno));
	close(w->fd);
	w->fd = -1;
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
	w->pid = 0;
}
