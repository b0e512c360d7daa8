/* `criu lazy-pages` started and awaited (see criu-lazy-daemon.h). */
#include "criu-lazy-daemon.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#define LAZY_ARGS_MAX 32

int tern_lazy_daemon_start(const char *criu, const char *images, char *const extra[],
			   tern_lazy_daemon *d, tern_error **err)
{
	char *argv[LAZY_ARGS_MAX];
	size_t n = 0;
	int ready[2];

	argv[n++] = (char *)criu;
	argv[n++] = "lazy-pages";
	for (size_t i = 0; extra && extra[i]; i++) {
		if (n + 10 >= LAZY_ARGS_MAX)
			return tern_error_make_quiet(err, E2BIG,
						     "criu lazy-pages: too many arguments");
		argv[n++] = extra[i];
	}
	argv[n++] = "-D";
	argv[n++] = (char *)images;
	argv[n++] = "-o";
	argv[n++] = "lazy-pages.log";
	argv[n++] = "-v4";
	argv[n++] = "--status-fd";
	argv[n++] = "3";
	argv[n] = NULL;

	/* criu writes a byte to its --status-fd once it listens; the restore
	 * starts meanwhile and waits for that byte only when it is about to
	 * connect (tern_ckpt_opts.lazy_ready_wait) */
	if (pipe2(ready, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe for criu lazy-pages");
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int en = errno;
		close(ready[0]);
		close(ready[1]);
		return tern_error_make(err, en, "fork for criu lazy-pages");
	}
	if (pid == 0) {
		/* a group of its own, killed as one: what it forks (criu's
		 * kernel probes stop themselves under ptrace and, orphaned,
		 * stay stopped forever) goes with it; and it must not outlive
		 * its parent, even one killed while this fork was under way */
		setpgid(0, 0);
		if (!tern_die_with_parent(parent))
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		/* fd 3, open across the exec; nothing else of ours */
		if (ready[1] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(ready[1], 3) < 0)
			_exit(127);
		tern_close_fds_from(4, NULL, 0);
		execv(criu, argv);
		_exit(127);
	}
	/* (both sides set the group: whichever runs first) */
	setpgid(pid, pid);
	close(ready[1]);
	d->pid = pid;
	d->ready_fd = ready[0];
	return 0;
}

static int reap(tern_lazy_daemon *d, bool hang, tern_error **err)
{
	int status;
	pid_t r;

	if (d->pid <= 0)
		return 0;
	while ((r = waitpid(d->pid, &status, hang ? 0 : WNOHANG)) < 0)
		if (errno != EINTR)
			return tern_error_make(err, errno, "waitpid criu lazy-pages");
	if (r == 0)
		return 1;
	d->pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return tern_error_make_quiet(err, EIO,
				     "criu lazy-pages failed (%s %d) before every page was in",
				     WIFSIGNALED(status) ? "signal" : "exit status",
				     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

int tern_lazy_daemon_wait(tern_lazy_daemon *d, tern_error **err)
{
	return reap(d, true, err);
}

int tern_lazy_daemon_wait_for(tern_lazy_daemon *d, int timeout_ms, tern_error **err)
{
	if (d->pid <= 0)
		return 0;
	cleanup_close int pidfd = (int)syscall(SYS_pidfd_open, d->pid, 0);
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	struct timespec t0, now;
	int left = timeout_ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* without a pidfd (an old kernel): poll its status every 100 ms */
	for (;;) {
		int r = pidfd >= 0 ? poll(&pfd, 1, left) : reap(d, false, err);
		if (pidfd < 0 && r != 1)
			return r;
		if (pidfd >= 0 && (r > 0 || (r < 0 && errno != EINTR)))
			return reap(d, true, err);
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= timeout_ms)
			break;
		left = timeout_ms - (int)spent;
		if (pidfd < 0)
			poll(NULL, 0, left < 100 ? left : 100);
	}
	tern_lazy_daemon_stop(d);
	return tern_error_make_quiet(err, ETIMEDOUT,
				     "criu lazy-pages did not finish within %d s: killed it",
				     timeout_ms / 1000);
}

int tern_lazy_daemon_poll(tern_lazy_daemon *d, tern_error **err)
{
	return reap(d, false, err);
}

void tern_lazy_daemon_stop(tern_lazy_daemon *d)
{
	if (d->pid > 0) {
		kill(-d->pid, SIGKILL);
		kill(d->pid, SIGKILL);
		while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
			;
		d->pid = 0;
	}
	if (d->ready_fd >= 0) {
		close(d->ready_fd);
		d->ready_fd = -1;
	}
}

int tern_lazy_socket_wait(int dirfd, const char *dir_name, const char *images, tern_error **err)
{
	uint64_t deadline = tern_now_ns() + (uint64_t)TERN_LAZY_SOCKET_WAIT_MS * 1000000;
	struct stat sb;

	/* short polling rather than inotify: the socket's directory may be
	 * made after we look (-D with a fresh --work-path), and 10 ms is
	 * nothing next to a restore */
	for (;;) {
		if (fstatat(dirfd, "lazy-pages.socket", &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISSOCK(sb.st_mode))
				return 0;
			return tern_error_make_quiet(
			    err, ENOTSOCK,
			    "--lazy-pages: `%s/lazy-pages.socket` is not a "
			    "socket",
			    dir_name);
		}
		if (errno != ENOENT)
			return tern_error_make(
			    err, errno, "--lazy-pages: stat `%s/lazy-pages.socket`", dir_name);
		if (tern_now_ns() >= deadline)
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return tern_error_make_quiet(
	    err, ENOENT,
	    "--lazy-pages: no `criu lazy-pages` daemon listens in `%s`: "
	    "`%s/lazy-pages.socket` did not appear within %d ms; start "
	    "`criu lazy-pages --page-server --address IP --port PORT -D %s` "
	    "first, or pass its directory as --work-path",
	    dir_name, dir_name, TERN_LAZY_SOCKET_WAIT_MS, images);
}
