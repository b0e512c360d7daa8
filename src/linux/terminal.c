/* process.terminal: the pty, the console socket, and the foreground proxy.
 *
 * The console socket protocol is runc's: one message on a connected
 * AF_UNIX stream socket whose payload is the pty's name and whose SCM_RIGHTS
 * control message carries the master fd. Receivers (containerd, podman's
 * conmon, runc's recvtty) use the fd and treat the name as informative.
 */
#include "terminal.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

/* Longest name we send or accept; runc's receivers read up to 4096 bytes. */
#define NAME_MAX_LEN 4096

int tern_terminal_open(int *master, int *slave, char **slave_path, tern_error **err)
{
	struct open_how how = {
	    .flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	cleanup_close int fd = -1, peer = -1, rootfd = -1;
	struct statfs sf;
	char name[128];
	int ret;

	/* O_NOCTTY: the master must never become tern's controlling tty.
	 * /dev/ptmx is looked up in the current root, i.e. the container's,
	 * and must be the multiplexer of a devpts instance: a planted file,
	 * a magic link to one of our fds, or the host's 5:2 node (whose ptys
	 * live in another devpts than the container's /dev/pts) is refused
	 * (CVE-2025-52565). */
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return tern_error_make(err, errno, "open /");
	fd = (int)syscall(SYS_openat2, rootfd, "/dev/ptmx", &how, sizeof(how));
	if (fd < 0)
		return tern_error_make(err, errno, "open /dev/ptmx");
	if (fstatfs(fd, &sf) < 0 || sf.f_type != DEVPTS_SUPER_MAGIC)
		return tern_error_make(err, ENOTTY,
				       "/dev/ptmx is not the ptmx of a devpts instance (it "
				       "should be a symlink to pts/ptmx)");
	if (unlockpt(fd) < 0)
		return tern_error_make(err, errno, "/dev/ptmx: unlockpt");
	ret = ptsname_r(fd, name, sizeof(name));
	if (ret != 0)
		return tern_error_make(err, ret, "/dev/ptmx: ptsname");
	/* The slave straight from the master: no path that the container
	 * could have swapped for a symlink between here and the bind. */
	peer = ioctl(fd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (peer < 0)
		return tern_error_make(err, errno, "/dev/ptmx: TIOCGPTPEER");
	*slave_path = tern_xstrdup(name);
	*master = steal_fd(&fd);
	*slave = steal_fd(&peer);
	return 0;
}

int tern_terminal_set_size(int fd, unsigned rows, unsigned cols, tern_error **err)
{
	struct winsize ws = {0};

	if (rows == 0 && cols == 0)
		return 0;
	/* Only one given: keep the other as it is. */
	if ((rows == 0 || cols == 0) && ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return tern_error_make(err, errno, "process.consoleSize: TIOCGWINSZ");
	if (rows != 0)
		ws.ws_row = (unsigned short)rows;
	if (cols != 0)
		ws.ws_col = (unsigned short)cols;
	if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
		return tern_error_make(
		    err, errno, "process.consoleSize: TIOCSWINSZ (%u rows, %u cols)", rows, cols);
	return 0;
}

int tern_terminal_become_controlling(int slave, const char *slave_path, tern_error **err)
{
	/* A new session has no controlling tty, so TIOCSCTTY can give it
	 * ours. EPERM means we already lead a session, which is fine. */
	if (setsid() < 0 && (errno != EPERM || getsid(0) != getpid()))
		return tern_error_make(err, errno, "setsid");
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return tern_error_make(err, errno, "`%s`: TIOCSCTTY", slave_path);
	/* dup2 clears FD_CLOEXEC on the copies, so 0-2 survive execve. */
	for (int target = 0; target <= 2; target++) {
		if (slave != target && dup2(slave, target) < 0)
			return tern_error_make(err, errno, "`%s`: dup2 onto fd %d", slave_path,
					       target);
		if (slave == target)
			fcntl(slave, F_SETFD, 0);
	}
	return 0;
}

int tern_console_socket_connect(const char *path, tern_error **err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	cleanup_close int fd = -1;

	if (path == NULL || strlen(path) >= sizeof(addr.sun_path))
		return tern_error_make(err, ENAMETOOLONG, "console socket `%s`", path ? path : "");
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return tern_error_make(err, errno, "console socket: socket");
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		if (errno != EINTR)
			return tern_error_make(err, errno, "connecting to the console socket `%s`",
					       path);
	return steal_fd(&fd);
}

int tern_console_send_fd(int sock, int fd, const char *name, tern_error **err)
{
	/* A stream socket does not deliver ancillary data without at least
	 * one byte of payload, so an absent name still sends something. */
	const char *payload = name && name[0] ? name : "console";
	size_t len = strnlen(payload, NAME_MAX_LEN);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = (void *)payload, .iov_len = len};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = ctl.buf,
	    .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	/* MSG_NOSIGNAL: a receiver that went away is an error, not SIGPIPE. */
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return tern_error_make(err, errno, "sending the pty master to the console socket");
	if ((size_t)n != len)
		return tern_error_make(err, EIO, "sending the pty master: short write");
	return 0;
}

int tern_console_recv_fd(int sock, int *fd, tern_error **err)
{
	char name[NAME_MAX_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = name, .iov_len = sizeof(name)};
	struct msghdr msg = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = ctl.buf,
	    .msg_controllen = sizeof(ctl.buf),
	};
	int got = -1;
	ssize_t n;

	*fd = -1;
	memset(&ctl, 0, sizeof(ctl));
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return tern_error_make(err, errno, "receiving the pty master");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			/* Keep the first; an unexpected extra fd is closed,
			 * not leaked. */
			if (got < 0)
				got = f;
			else
				close(f);
		}
	}
	if (got < 0)
		return tern_error_make(
		    err, n == 0 ? EPIPE : EBADMSG,
		    "receiving the pty master: no file descriptor in the message");
	if (msg.msg_flags & MSG_CTRUNC) {
		close(got);
		return tern_error_make(err, EBADMSG, "receiving the pty master: control truncated");
	}
	*fd = got;
	return 0;
}

/* ---- proxy ---- */

typedef struct {
	int fd;
	struct termios saved;
	bool active;
} raw_tty;

static void raw_tty_restore(raw_tty *t)
{
	if (t->active)
		tcsetattr(t->fd, TCSADRAIN, &t->saved);
	t->active = false;
}

static void copy_winsize(int from, int to)
{
	struct winsize ws;
	if (ioctl(from, TIOCGWINSZ, &ws) == 0)
		ioctl(to, TIOCSWINSZ, &ws);
}

/* Read what is readable from the master to stdout. Returns 1 while the
 * master is alive, 0 when it hung up (EIO: every slave is closed), or a
 * negative errno. */
static int pump_master(int master)
{
	char buf[8192];
	for (;;) {
		ssize_t n = read(master, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		if (n < 0 && errno == EIO)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		int ret = tern_write_all(STDOUT_FILENO, buf, (size_t)n);
		/* Nobody reads our stdout any more: keep draining the master
		 * so the container does not block on a full pty. */
		if (ret < 0 && ret != -EPIPE)
			return ret;
	}
}

int tern_terminal_proxy(int master, tern_error **err)
{
	raw_tty tty = {.fd = STDIN_FILENO, .active = false};
	sigset_t mask, old;
	cleanup_close int sfd = -1;
	char inbuf[4096];
	size_t in_len = 0, in_off = 0;
	bool stdin_open = true;
	int flags, ret = 0;

	/* Raw mode: keys such as ^C go to the container's tty, whose own
	 * line discipline turns them into signals for its processes. */
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &tty.saved) == 0) {
		struct termios raw = tty.saved;
		cfmakeraw(&raw);
		if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
			tty.active = true;
		copy_winsize(STDIN_FILENO, master);
	} else if (isatty(STDOUT_FILENO)) {
		copy_winsize(STDOUT_FILENO, master);
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	/* Non-blocking master: a container that does not read its stdin must
	 * not stop us from draining its output (both would block). */
	flags = fcntl(master, F_GETFL);
	if (flags >= 0)
		fcntl(master, F_SETFL, flags | O_NONBLOCK);

	for (;;) {
		struct pollfd fds[3];
		nfds_t n = 0;
		int i_in = -1, i_sig = -1;

		fds[n++] = (struct pollfd){.fd = master,
					   .events = POLLIN | (in_len > in_off ? POLLOUT : 0)};
		if (stdin_open && in_len == in_off) {
			i_in = (int)n;
			fds[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
		}
		if (sfd >= 0) {
			i_sig = (int)n;
			fds[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		}
		if (poll(fds, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			ret = tern_error_make(err, errno, "terminal proxy: poll");
			break;
		}
		if (i_sig >= 0 && (fds[i_sig].revents & POLLIN)) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				;
			copy_winsize(tty.active ? STDIN_FILENO : STDOUT_FILENO, master);
		}
		if (i_in >= 0 && fds[i_in].revents) {
			ssize_t r = read(STDIN_FILENO, inbuf, sizeof(inbuf));
			if (r > 0) {
				in_len = (size_t)r;
				in_off = 0;
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				/* Our stdin ended: stop reading it; the
				 * container keeps running until it exits. */
				stdin_open = false;
			}
		}
		if (in_len > in_off) {
			ssize_t w = write(master, inbuf + in_off, in_len - in_off);
			if (w > 0)
				in_off += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				in_len = in_off = 0; /* the slave is gone; output tells */
		}
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			int r = pump_master(master);
			if (r < 0) {
				ret = tern_error_make(err, -r, "terminal proxy: copying output");
				break;
			}
			/* EIO from the master: every slave is closed and the
			 * output is drained. */
			if (r == 0)
				break;
		}
	}

	raw_tty_restore(&tty);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (flags >= 0)
		fcntl(master, F_SETFL, flags);
	return ret;
}
