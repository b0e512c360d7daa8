/* TCP sockets of other processes (see tcp-sockets.h). */
#include "tcp-sockets.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* a container's processes too: the walk stops there */
#define TREE_MAX 1024

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold anything but ')' last */
	char *p = strrchr(buf, ')');
	int ppid;
	if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* `root` and the processes below it (tern's child, the libcriu service and
 * criu; or a container's init and its descendants) */
static size_t process_tree(pid_t root, pid_t *out, size_t max)
{
	size_t n = 0;
	bool grew = true;

	out[n++] = root;
	while (grew && n < max) {
		grew = false;
		DIR *d = opendir("/proc");
		struct dirent *e;
		if (d == NULL)
			break;
		while ((e = readdir(d)) != NULL && n < max) {
			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			pid_t pid = (pid_t)atoi(e->d_name);
			bool known = false;
			for (size_t i = 0; i < n && !known; i++)
				known = out[i] == pid;
			if (known)
				continue;
			pid_t ppid = parent_of(pid);
			for (size_t i = 0; i < n; i++)
				if (out[i] == ppid) {
					out[n++] = pid;
					grew = true;
					break;
				}
		}
		closedir(d);
	}
	return n;
}

static int sock_port(int fd, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
		  : getsockname(fd, (struct sockaddr *)&ss, &len)) < 0)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

/* Call fn on a copy (pidfd_getfd) of each socket descriptor of `pid`; the
 * sum of what it returns. The copy is closed after the call. */
static int for_each_socket(pid_t pid, int (*fn)(int fd, void *arg), void *arg)
{
	char path[64];
	int done = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		closedir(d);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char link[64];
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:", 7) != 0)
			continue;
		int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
		if (fd < 0)
			continue;
		done += fn(fd, arg);
		close(fd);
	}
	close(pidfd);
	closedir(d);
	return done;
}

static int uncork_socket(int fd, void *arg)
{
	int port = *(int *)arg, type = 0, off = 0;
	socklen_t len = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
	       (sock_port(fd, false) == port || sock_port(fd, true) == port) &&
	       sock_port(fd, true) > 0 &&
	       setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)) == 0;
}

int tern_criu_uncork(pid_t pid, int port)
{
	pid_t tree[TREE_MAX];
	size_t n = process_tree(pid, tree, TREE_MAX);
	int done = 0;

	for (size_t i = 0; i < n; i++)
		done += for_each_socket(tree[i], uncork_socket, &port);
	return done;
}

/* Only an established connection (or a closed socket) may enter repair
 * mode; the kernel refuses the others (a listener: EPERM), which close
 * with nothing to send anyway. */
static int repair_socket(int fd, void *arg)
{
	int domain = 0, protocol = 0, on = 1;
	socklen_t len = sizeof(domain);

	(void)arg;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    (domain != AF_INET && domain != AF_INET6))
		return 0;
	len = sizeof(protocol);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0 ||
	    protocol != IPPROTO_TCP)
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) == 0;
}

int tern_tcp_repair_tree(pid_t pid)
{
	pid_t tree[TREE_MAX];
	size_t n = process_tree(pid, tree, TREE_MAX);
	int done = 0;

	for (size_t i = 0; i < n; i++)
		done += for_each_socket(tree[i], repair_socket, NULL);
	return done;
}
