/* A criu started before it is needed (see criu-swrk.h). */
#include "criu-swrk.h"

#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int tern_criu_swrk_start(tern_criu_swrk *w, const char *criu, tern_error **err)
{
	int sks[2];

	*w = (tern_criu_swrk){.fd = -1, .criu_fd = -1};
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sks) < 0)
		return tern_error_make(err, errno, "a socket for criu swrk");
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sks[0]);
		close(sks[1]);
		return tern_error_make(err, e, "fork for criu swrk");
	}
	if (pid == 0) {
		sigset_t none;
		char fd[16];

		/* as libcriu's own child: criu catches its children's exits */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		umask(077);
		if (fcntl(sks[1], F_SETFD, 0) < 0)
			_exit(127);
		snprintf(fd, sizeof(fd), "%d", sks[1]);
		execl(criu, criu, "swrk", fd, (char *)NULL);
		_exit(127);
	}
	close(sks[1]);
	*w = (tern_criu_swrk){.pid = pid, .fd = sks[0], .criu_fd = sks[1]};
	return 0;
}

/* Whether criu sits in a receive on its end of the socket: what
 * /proc/PID/syscall shows while it waits for its request. */
static bool reading_socket(const tern_criu_swrk *w)
{
	char path[64], buf[128];
	long nr;
	unsigned long fd;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)w->pid);
	cleanup_close int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	ssize_t n = read(f, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%ld %lx", &nr, &fd) != 2)
		return false;
	return (nr == SYS_recvfrom || nr == SYS_recvmsg) && fd == (unsigned long)w->criu_fd;
}

bool tern_criu_swrk_wait_ready(const tern_criu_swrk *w, int max_ms)
{
	struct timespec pause = {.tv_nsec = 200 * 1000};
	uint64_t until = tern_now_ns() + (uint64_t)max_ms * 1000000;

	if (w->pid <= 0)
		return false;
	while (!reading_socket(w)) {
		/* gone (a criu that cannot start): libcriu's call reports it */
		if (kill(w->pid, 0) < 0 || tern_now_ns() >= until)
			return false;
		nanosleep(&pause, NULL);
	}
	return true;
}

void tern_criu_swrk_finish(tern_criu_swrk *w)
{
	if (w->pid <= 0)
		return;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
	w->pid = 0;
}
