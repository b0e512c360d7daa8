/* The container's network namespace at checkpoint (see checkpoint-net.h):
 * the veths that leave it, found with rtnetlink link dumps on both sides,
 * and the lock that outlives a dump. */
#include "checkpoint-net.h"
#include "log.h"
#include "netdev.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
	int index;
	int peer;      /* IFLA_LINK: the peer's index, in its own namespace */
	bool other_ns; /* IFLA_LINK_NETNSID: the peer is in another namespace */
	char name[IFNAMSIZ];
} veth_link;

static void parse_link(struct nlmsghdr *h, veth_link **links, size_t *n)
{
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifi));
	veth_link l = {.index = ifi->ifi_index, .peer = -1};
	bool veth = false;

	for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_IFNAME)
			snprintf(l.name, sizeof(l.name), "%.*s", (int)RTA_PAYLOAD(a),
				 (char *)RTA_DATA(a));
		else if (a->rta_type == IFLA_LINK && RTA_PAYLOAD(a) >= 4)
			l.peer = *(int *)RTA_DATA(a);
		else if (a->rta_type == IFLA_LINK_NETNSID)
			l.other_ns = true;
		else if (a->rta_type == IFLA_LINKINFO) {
			int ilen = (int)RTA_PAYLOAD(a);
			for (struct rtattr *i = RTA_DATA(a); RTA_OK(i, ilen); i = RTA_NEXT(i, ilen))
				if (i->rta_type == IFLA_INFO_KIND && RTA_PAYLOAD(i) >= 4 &&
				    strncmp(RTA_DATA(i), "veth", RTA_PAYLOAD(i)) == 0)
					veth = true;
		}
	}
	if (!veth || !l.other_ns || l.peer <= 0 || !l.name[0])
		return;
	*links = realloc(*links, (*n + 1) * sizeof(**links));
	if (*links == NULL)
		abort();
	(*links)[(*n)++] = l;
}

/* The veths of the namespace that `nl` (an rtnetlink socket) belongs to
 * whose peer is in another namespace. */
static int dump_veths(int nl, veth_link **links, size_t *n, tern_error **err)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {.h = {.nlmsg_len = sizeof(req),
		       .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = 1},
		 .i = {.ifi_family = AF_UNSPEC}};
	/* the kernel sends a dump in parts of at most 32 KiB */
	char buf[65536] __attribute__((aligned(4)));

	if (send(nl, &req, sizeof(req), 0) < 0)
		return tern_error_make(err, errno, "rtnetlink: list the network devices");
	for (;;) {
		ssize_t r = recv(nl, buf, sizeof(buf), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return tern_error_make(err, r < 0 ? errno : EPROTO,
					       "rtnetlink: list the network devices");
		int len = (int)r;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; tern_nlmsg_ok(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				return tern_error_make(err, -e->error,
						       "rtnetlink: list the network devices");
			}
			if (h->nlmsg_type == RTM_NEWLINK)
				parse_link(h, links, n);
		}
	}
}

/* An rtnetlink socket in the network namespace `ns`: a socket stays in the
 * namespace it was made in, so this thread enters `ns` just long enough to
 * make it (a network namespace, unlike a mount namespace, can be entered
 * by one thread of many). */
static int netlink_in(int ns, tern_error **err)
{
	cleanup_close int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int nl;

	if (self < 0)
		return tern_error_make(err, errno, "/proc/thread-self/ns/net");
	if (setns(ns, CLONE_NEWNET) < 0)
		return tern_error_make(err, errno, "enter the container's network namespace");
	nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int saved = errno;
	if (setns(self, CLONE_NEWNET) < 0) {
		/* going on in the container's namespace would be worse */
		tern_log_error_message("cannot return to tern's own network namespace");
		abort();
	}
	if (nl < 0)
		return tern_error_make(err, saved, "rtnetlink socket");
	return nl;
}

int tern_veth_pairs(pid_t pid, char ***pairs, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/ns/net", pid);
	cleanup_close int ns = open(path, O_RDONLY | O_CLOEXEC);
	cleanup_close int here = -1, there = -1;
	veth_link *in = NULL, *out = NULL;
	size_t nin = 0, nout = 0;
	int ret;

	if (ns < 0)
		return tern_error_make(err, errno, "%s", path);
	here = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (here < 0)
		return tern_error_make(err, errno, "rtnetlink socket");
	there = netlink_in(ns, err);
	if (there < 0)
		return there;
	ret = dump_veths(there, &in, &nin, err);
	if (ret == 0)
		ret = dump_veths(here, &out, &nout, err);
	/* each end names the other's index: both must agree, or an outer
	 * device that merely has the same index as some peer would match */
	for (size_t i = 0; ret == 0 && i < nin; i++)
		for (size_t o = 0; o < nout; o++)
			if (in[i].peer == out[o].index && out[o].peer == in[i].index) {
				*pairs = tern_strv_add(
				    *pairs, tern_strdup_printf("%s %s", in[i].name, out[o].name));
				break;
			}
	free(in);
	free(out);
	return ret;
}

bool tern_veth_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= IFNAMSIZ || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	/* and none of what separates the fields of criu's
	 * veth[INNER]:OUTER@BRIDGE or of the descriptor's line */
	return strpbrk(name, "/:@[] \t\n") == NULL;
}

/* `prog` (iptables-restore or ip6tables-restore) --noflush in the network
 * namespace of `pid`, fed `rules`. */
static int restore_rules(pid_t pid, const char *prog, const char *rules, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/ns/net", pid);
	cleanup_close int ns = open(path, O_RDONLY | O_CLOEXEC);
	int p[2], status;
	pid_t child;

	if (ns < 0)
		return tern_error_make(err, errno, "%s", path);
	if (pipe2(p, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return tern_error_make(err, errno, "fork");
	}
	if (child == 0) {
		if (setns(ns, CLONE_NEWNET) < 0 || dup2(p[0], 0) < 0)
			_exit(126);
		execlp(prog, prog, "-w", "--noflush", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	ssize_t w = tern_write_all(p[1], rules, strlen(rules));
	close(p[1]);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return tern_error_make(err, errno, "waitpid %s", prog);
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tern_error_make_quiet(
		    err, EIO, "%s in the network namespace of %d failed (%s %d)%s", prog, pid,
		    WIFEXITED(status) ? "exit status" : "signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		    WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ": not installed" : "");
	return 0;
}

static const char *const restore_progs[] = {"iptables-restore", "ip6tables-restore"};

int tern_netns_lock(pid_t pid, tern_error **err)
{
	/* first in INPUT and OUTPUT: before criu's own lock, whose marked
	 * packets (the sockets leaving repair mode) it lets through */
	static const char rules[] = "*filter\n"
				    ":TERN-MIGRATE - [0:0]\n"
				    "-A TERN-MIGRATE -j DROP\n"
				    "-I INPUT 1 -j TERN-MIGRATE\n"
				    "-I OUTPUT 1 -j TERN-MIGRATE\n"
				    "COMMIT\n";

	for (size_t i = 0; i < 2; i++) {
		int ret = restore_rules(pid, restore_progs[i], rules, err);
		if (ret < 0) {
			tern_netns_unlock(pid, NULL);
			return tern_error_wrap(err, "lock the container's network after the dump");
		}
	}
	return 0;
}

int tern_netns_unlock(pid_t pid, tern_error **err)
{
	static const char rules[] = "*filter\n"
				    "-D INPUT -j TERN-MIGRATE\n"
				    "-D OUTPUT -j TERN-MIGRATE\n"
				    "-F TERN-MIGRATE\n"
				    "-X TERN-MIGRATE\n"
				    "COMMIT\n";
	int ret = 0;

	/* both, even when one fails (a lock that got half way) */
	for (size_t i = 0; i < 2; i++) {
		tern_error *e = NULL;
		if (restore_rules(pid, restore_progs[i], rules, &e) < 0) {
			if (ret == 0 && err)
				*err = e;
			else
				tern_error_free(e);
			ret = -EIO;
		}
	}
	return ret;
}
