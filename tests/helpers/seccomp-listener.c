/* seccomp-listener: a seccomp notify listener for the tests, run on the
 * host. The runtime connects to SOCKET (linux.seccomp.listenerPath) and
 * sends the container process state JSON with the notify fd as SCM_RIGHTS.
 *
 *   seccomp-listener SOCKET OUTDIR METADATA ERRNO
 *
 * For every connection N (0, 1, ...) it writes the JSON to OUTDIR/state.N
 * and a line to OUTDIR/log: "connection N: metadata ok" when the JSON's
 * "metadata" is METADATA (else "metadata wrong", and the fd is dropped
 * unanswered). Every notification on any fd is answered with -ERRNO
 * (ERRNO 0: "continue", the kernel runs the syscall), and logged as
 * "notify nr=NR arg0=A pid=PID". Runs until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_FDS 16

static const char *outdir;

static void logf_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_line(const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/log", outdir);
	f = fopen(path, "a");
	if (f == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Read the whole message (the runtime closes after sending); the fd comes
 * with the first bytes. Returns the fd or -1. */
static int receive(int conn, char *buf, size_t size)
{
	char control[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = control,
			    .msg_controllen = sizeof(control)};
	size_t len;
	ssize_t n;
	int fd = -1;

	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	len = (size_t)n;
	while (len < size - 1 && (n = read(conn, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return fd;
}

static void answer(int fd, int err)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	memset(&req, 0, sizeof(req));
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return;
	logf_line("notify nr=%d arg0=%llu pid=%u", req.data.nr,
		  (unsigned long long)req.data.args[0], req.pid);
	memset(&resp, 0, sizeof(resp));
	resp.id = req.id;
	if (err == 0)
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	else
		resp.error = -err;
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		logf_line("NOTIF_SEND failed: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct pollfd pfd[MAX_FDS + 1];
	int nfds = 0, conns = 0, sock, err;
	char want[4096];

	if (argc != 5) {
		fprintf(stderr, "usage: seccomp-listener SOCKET OUTDIR METADATA ERRNO\n");
		return 2;
	}
	outdir = argv[2];
	err = atoi(argv[4]);
	snprintf(want, sizeof(want), "\"metadata\":\"%s\"", argv[3]);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(sock, 8) < 0) {
		perror("seccomp-listener: socket");
		return 1;
	}
	pfd[0] = (struct pollfd){.fd = sock, .events = POLLIN};
	for (;;) {
		if (poll(pfd, (nfds_t)nfds + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		for (int i = 1; i <= nfds; i++) {
			if (pfd[i].revents & POLLIN)
				answer(pfd[i].fd, err);
			if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
				/* every process that had the filter is gone */
				close(pfd[i].fd);
				pfd[i] = pfd[nfds--];
				i--;
			}
		}
		if (pfd[0].revents & POLLIN) {
			static char buf[65536];
			char path[4096];
			int conn = accept4(sock, NULL, NULL, SOCK_CLOEXEC), fd;
			FILE *f;

			if (conn < 0)
				continue;
			fd = receive(conn, buf, sizeof(buf));
			close(conn);
			snprintf(path, sizeof(path), "%s/state.%d", outdir, conns);
			f = fopen(path, "w");
			if (f) {
				fputs(buf, f);
				fclose(f);
			}
			if (fd < 0) {
				logf_line("connection %d: no fd", conns++);
				continue;
			}
			if (strstr(buf, want) == NULL) {
				logf_line("connection %d: metadata wrong", conns++);
				close(fd);
				continue;
			}
			logf_line("connection %d: metadata ok", conns++);
			if (nfds < MAX_FDS)
				pfd[++nfds] = (struct pollfd){.fd = fd, .events = POLLIN};
			else
				close(fd);
		}
	}
}
