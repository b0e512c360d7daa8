/* tern_criu_uncork and tern_tcp_repair_tree on real sockets: a grandchild
 * holds two corked TCP connections; only the one to the given port is
 * uncorked, and both are put in repair mode (root: CAP_NET_ADMIN). */
#include "tap.h"

#include "tcp-sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int listener(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static int corked_connection(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((unsigned short)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int on = 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)) < 0)
		return -1;
	return fd;
}

static int corked(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, &len) < 0 ? -1 : v;
}

static int in_repair(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return getsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &v, &len) < 0 ? -1 : v;
}

int main(void)
{
	int port_a, port_b;
	int la = listener(&port_a), lb = listener(&port_b);
	int ready[2], go[2], result[2];

	ok(la >= 0 && lb >= 0, "two listeners on loopback");
	if (la < 0 || lb < 0 || pipe(ready) < 0 || pipe(go) < 0 || pipe(result) < 0)
		return done_testing();
	pid_t child = fork();
	if (child == 0) {
		/* the sockets live one level further down, as criu's do below
		 * tern's child and the libcriu service */
		pid_t grandchild = fork();
		if (grandchild == 0) {
			int a = corked_connection(port_a), b = corked_connection(port_b);
			char c = 'r', res[4];
			if (a < 0 || b < 0)
				_exit(1);
			if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
				_exit(1);
			res[0] = (char)('0' + corked(a));
			res[1] = (char)('0' + corked(b));
			res[2] = (char)('0' + in_repair(a));
			res[3] = (char)('0' + in_repair(b));
			_exit(write(result[1], res, 4) == 4 ? 0 : 1);
		}
		int status;
		waitpid(grandchild, &status, 0);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	char c, res[4] = {'?', '?', '?', '?'};
	int ok_ready = read(ready[0], &c, 1) == 1;
	ok(ok_ready, "the grandchild holds its corked connections");
	is_int(tern_criu_uncork(child, port_a), 1, "one socket uncorked");
	is_int(tern_criu_uncork(child, 1), 0, "none for a port nobody uses");
	/* the listeners are this process's, outside the tree */
	is_int(tern_tcp_repair_tree(child), 2, "both connections put in repair mode");
	if (write(go[1], "g", 1) != 1 || read(result[0], res, 4) != 4)
		res[0] = res[1] = '?';
	ok(res[0] == '0', "the connection to the port is no longer corked (%c)", res[0]);
	ok(res[1] == '1', "the other connection still is (%c)", res[1]);
	ok(res[2] == '1' && res[3] == '1', "the grandchild's sockets are in repair mode (%c %c)",
	   res[2], res[3]);
	int status;
	waitpid(child, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exited 0");
	return done_testing();
}
