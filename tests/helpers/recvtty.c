/* recvtty: the receiving end of --console-socket for the tests.
 *
 *   recvtty SOCKET OUTFILE [INPUT]
 *
 * Listens on the unix socket SOCKET, accepts one connection, receives the
 * pty master over SCM_RIGHTS, optionally writes INPUT to it, then copies
 * everything the container writes to OUTFILE until the slave side is closed
 * (read returns EIO or 0). The socket is bound under a temporary name and
 * renamed into place once listen() succeeded, so a caller that waits for
 * SOCKET to exist never connects too early. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "recvtty: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int recv_fd(int conn)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof ctl.buf};
	memset(ctl.buf, 0, sizeof ctl.buf);
	if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) < 0)
		die("recvmsg");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int fd;
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
			return fd;
		}
	}
	errno = EBADMSG;
	return die("no SCM_RIGHTS fd in the message");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: recvtty SOCKET OUTFILE [INPUT]\n");
		return 2;
	}
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char tmp[sizeof addr.sun_path];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		die(argv[1]);
	}
	strcpy(addr.sun_path, tmp);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		die("socket");
	unlink(tmp);
	if (bind(s, (struct sockaddr *)&addr, sizeof addr) < 0)
		die("bind");
	if (listen(s, 1) < 0)
		die("listen");
	if (rename(tmp, argv[1]) < 0)
		die("rename");
	int conn = accept4(s, NULL, NULL, SOCK_CLOEXEC);
	if (conn < 0)
		die("accept");
	int master = recv_fd(conn);
	close(conn);
	close(s);
	int out = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (out < 0)
		die(argv[2]);
	if (argc > 3 && write(master, argv[3], strlen(argv[3])) < 0)
		die("write input");
	char buf[4096];
	for (;;) {
		ssize_t n = read(master, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EIO: every slave fd is closed, the container is done */
		if (write(out, buf, (size_t)n) != n)
			die("write output");
	}
	return 0;
}
