#include "checkpoint-netns.h"
#include "caps.h"
#include "cgroup.h"
#include "namespaces.h"
#include "proc-attrs.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const oci_namespace *find_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return NULL;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return &c->linux_->namespaces[i];
	return NULL;
}

/* Only `lo` in /proc/PID/net/dev (two header lines, then one per device). */
static bool only_loopback(pid_t pid, char **why)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		*why = tern_strdup_printf("%s: %s", path, strerror(errno));
		return false;
	}
	char line[512];
	int n = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof(line), f)) {
		if (++n <= 2)
			continue;
		char *name = line + strspn(line, " ");
		char *colon = strchr(name, ':');
		if (colon == NULL)
			continue;
		*colon = '\0';
		if (strcmp(name, "lo") != 0) {
			*why = tern_strdup_printf("it has the device `%s`", name);
			ok = false;
		}
	}
	fclose(f);
	return ok;
}

/* What the host (not the container: it cannot, see tern_netns_is_plain)
 * may have put into the namespace from outside, with ip or nsenter, and a
 * fresh namespace would not have: a main-table IPv4 route, an address on
 * lo other than 127.0.0.1 and ::1, an iptables table (legacy: listed in
 * /proc; nft: asked over netlink below). */
static bool no_routes_or_addresses(pid_t pid, char **why)
{
	char path[64];
	char line[512];
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL) {
		*why = tern_strdup_printf("%s: %s", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	if (n > 1) {
		*why = tern_xstrdup("it has IPv4 routes");
		return false;
	}
	/* fib_trie: each local address is a "|-- ADDR" line followed by
	 * "/32 host LOCAL" */
	snprintf(path, sizeof(path), "/proc/%d/net/fib_trie", (int)pid);
	f = fopen(path, "re");
	if (f == NULL) {
		*why = tern_strdup_printf("%s: %s", path, strerror(errno));
		return false;
	}
	char addr[64] = "";
	while (*why == NULL && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " |+-");
		if (p != line && strncmp(line + strspn(line, " "), "|--", 3) == 0)
			snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(p, " \n"), p);
		else if (strstr(line, "/32 host LOCAL") && strcmp(addr, "127.0.0.1") != 0)
			*why = tern_strdup_printf("it has the local address %s", addr);
	}
	fclose(f);
	if (*why)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/net/if_inet6", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT; /* IPv6 is off */
	while (*why == NULL && fgets(line, sizeof(line), f))
		if (strncmp(line, "00000000000000000000000000000001 ", 33) != 0)
			*why = tern_xstrdup("it has an IPv6 address other than ::1");
	fclose(f);
	return *why == NULL;
}

static bool proc_list_empty(pid_t pid, const char *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, name);
	cleanup_free char *data = NULL;
	size_t len = 0;
	/* absent: the module was never loaded, so no table anywhere */
	int ret = tern_read_file(path, &data, &len, 4096, NULL);
	return ret < 0 ? ret == -ENOENT : len == 0;
}

/* Whether the namespace of `pid` holds an nftables table (where
 * iptables-nft keeps its rules): 1 yes, 0 no, -1 unknown. */
static int has_nft_tables(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	cleanup_close int target = open(path, O_RDONLY | O_CLOEXEC);
	cleanup_close int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (target < 0 || self < 0 || setns(target, CLONE_NEWNET) < 0)
		return -1;
	/* a netlink socket belongs to the namespace it was made in */
	cleanup_close int sk = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	int sk_errno = errno;
	if (setns(self, CLONE_NEWNET) < 0) {
		perror("tern: back to this thread's network namespace");
		abort();
	}
	if (sk < 0)
		return sk_errno == EPROTONOSUPPORT ? 0 : -1;
	struct {
		struct nlmsghdr nh;
		struct nfgenmsg nf;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		   .nlmsg_seq = 1},
	    .nf = {.nfgen_family = AF_UNSPEC, .version = NFNETLINK_V0},
	};
	if (send(sk, &req, sizeof(req), 0) < 0)
		return -1;
	for (;;) {
		char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
		ssize_t n = recv(sk, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				/* no nf_tables in this kernel: no table */
				return e->error == 0 || e->error == -EOPNOTSUPP ? 0 : -1;
			}
			if ((h->nlmsg_type & 0xff) == NFT_MSG_NEWTABLE)
				return 1;
		}
	}
}

static bool no_firewall(pid_t pid, char **why)
{
	if (!proc_list_empty(pid, "ip_tables_names") || !proc_list_empty(pid, "ip6_tables_names")) {
		*why = tern_xstrdup("it has legacy iptables tables");
		return false;
	}
	int nft = has_nft_tables(pid);
	if (nft != 0)
		*why = tern_xstrdup(nft > 0 ? "it has nftables tables"
					    : "its nftables tables could not be listed");
	return nft == 0;
}

/* One process: *changes_net if its bounding set lets it (or a child)
 * change the namespace; *root if any of its uids is 0. */
static bool process_caps(pid_t pid, bool *changes_net, bool *root)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT || errno == ESRCH; /* gone: nothing to fear */
	char line[256];
	bool seen = false;
	while (fgets(line, sizeof(line), f)) {
		uint64_t bnd;
		unsigned r, e, s, fs;
		const uint64_t mask = (1ULL << CAP_NET_ADMIN) | (1ULL << CAP_SYS_ADMIN);
		/* the bounding set limits what an exec can gain; the
		 * permitted set may still hold what the bounding set lost */
		if (sscanf(line, "CapBnd: %" SCNx64, &bnd) == 1 ||
		    sscanf(line, "CapPrm: %" SCNx64, &bnd) == 1) {
			seen = seen || strncmp(line, "CapBnd", 6) == 0;
			if (bnd & mask)
				*changes_net = true;
		} else if (sscanf(line, "Uid: %u %u %u %u", &r, &e, &s, &fs) == 4) {
			if (r == 0 || e == 0 || s == 0 || fs == 0)
				*root = true;
		}
	}
	fclose(f);
	return seen;
}

/* The config's process may have had them at any time since it started,
 * and changed the namespace then, even if no process holds them now. */
static bool config_grants_net_cap(const oci_config *config)
{
	return tern_caps_may_change_netns(config->process ? config->process->capabilities
							  : NULL);
}

static bool proc_sys_readonly(const oci_config *config)
{
	if (config->linux_ == NULL)
		return false;
	for (char **p = config->linux_->readonly_paths; p && *p; p++)
		if (strcmp(*p, "/proc/sys") == 0)
			return true;
	return false;
}

static bool content_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			  const char *state_dir, char **why);

bool tern_netns_is_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			 const char *state_dir, char **why)
{
	const oci_namespace *net = find_ns(config, OCI_NS_NETWORK);

	*why = NULL;
	if (net == NULL || net->path) {
		*why = tern_xstrdup("not a network namespace of its own");
		return false;
	}
	if (find_ns(config, OCI_NS_USER)) {
		*why = tern_xstrdup("it has a user namespace");
		return false;
	}
	return content_plain(config, cgroup_paths, pid, state_dir, why);
}

bool tern_netns_is_plain_in_userns(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
				   const char *state_dir, char **why)
{
	const oci_namespace *net = find_ns(config, OCI_NS_NETWORK);
	const oci_namespace *user = find_ns(config, OCI_NS_USER);

	*why = NULL;
	if (net == NULL || net->path || user == NULL || user->path) {
		*why = tern_xstrdup("not a network and a user namespace of its own");
		return false;
	}
	return content_plain(config, cgroup_paths, pid, state_dir, why);
}

/* What tern_netns_is_plain asks of the namespace's content and of what
 * could have changed it */
static bool content_plain(const oci_config *config, const oci_map *cgroup_paths, pid_t pid,
			  const char *state_dir, char **why)
{
	*why = NULL;
	if (config_grants_net_cap(config)) {
		*why = tern_xstrdup("process.capabilities holds CAP_NET_ADMIN or CAP_SYS_ADMIN");
		return false;
	}
	cleanup_free char *mark = tern_strdup_printf("%s/%s", state_dir, TERN_NETNS_EXEC_MARK);
	if (access(mark, F_OK) == 0 || errno != ENOENT) {
		*why = tern_xstrdup("a process was exec'd with CAP_NET_ADMIN or CAP_SYS_ADMIN");
		return false;
	}
	if (!only_loopback(pid, why) || !no_routes_or_addresses(pid, why) || !no_firewall(pid, why))
		return false;

	pid_t *pids = NULL;
	size_t n = 0;
	tern_error *e = NULL;
	if (tern_cgroup_pids(cgroup_paths, &pids, &n, &e) < 0) {
		*why = tern_strdup_printf("its processes: %s", e->msg);
		tern_error_free(e);
		return false;
	}
	bool changes_net = false, root = false, ok = true;
	for (size_t i = 0; ok && i < n; i++)
		ok = process_caps(pids[i], &changes_net, &root);
	free(pids);
	if (!ok || n == 0)
		*why = tern_xstrdup("a process's capabilities could not be read");
	else if (changes_net)
		*why = tern_xstrdup("a process may hold CAP_NET_ADMIN or CAP_SYS_ADMIN");
	else if (root && !proc_sys_readonly(config))
		*why = tern_xstrdup("a process runs as uid 0 with /proc/sys writable");
	return *why == NULL;
}

/* The config's net.* sysctls only: the others belong to namespaces the
 * restored container gets from criu. */
static int net_sysctls(const oci_config *config, tern_error **err)
{
	if (config->linux_ == NULL || config->linux_->sysctl.len == 0)
		return 0;
	const oci_map *all = &config->linux_->sysctl;
	oci_kv *items = tern_xmalloc0(all->len * sizeof(*items));
	oci_map net = {.items = items};
	for (size_t i = 0; i < all->len; i++)
		if (all->items[i].key && strncmp(all->items[i].key, "net.", 4) == 0)
			items[net.len++] = all->items[i];
	int ret = tern_sysctl_apply(&net, err);
	free(items);
	return ret;
}

/* The network namespace this thread is in set up as create sets up a new
 * one: `lo` up, the config's net.* sysctls. */
static int set_up_here(const oci_config *config, tern_error **err)
{
	tern_ns_plan plan = {.clone_flags = CLONE_NEWNET};
	int ret = tern_ns_setup_loopback(&plan, err);

	if (ret == 0 && net_sysctls(config, err) < 0)
		ret = tern_error_wrap(err, "linux.sysctl");
	return ret;
}

/* This thread back in its own network namespace (`self`), or the process
 * ends: everything it would do next (criu, state, cgroups) would be in the
 * wrong namespace. */
static void back_home(int self)
{
	if (setns(self, CLONE_NEWNET) < 0) {
		perror("tern: back to this process's network namespace");
		abort();
	}
}

int tern_netns_new(const oci_config *config, int *fd, tern_error **err)
{
	int ret;

	*fd = -1;
	cleanup_close int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return tern_error_make(err, errno, "/proc/thread-self/ns/net");
	if (unshare(CLONE_NEWNET) < 0)
		return tern_error_make(err, errno, "a new network namespace");
	*fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	ret = *fd < 0 ? tern_error_make(err, errno, "the new network namespace") : 0;
	if (ret == 0)
		ret = set_up_here(config, err);
	back_home(self);
	if (ret < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

int tern_netns_setup_in(const oci_config *config, pid_t pid, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/ns/net", pid);
	cleanup_close int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	cleanup_close int target = open(path, O_RDONLY | O_CLOEXEC);

	if (self < 0)
		return tern_error_make(err, errno, "/proc/thread-self/ns/net");
	if (target < 0)
		return tern_error_make(err, errno, "`%s`", path);
	if (setns(target, CLONE_NEWNET) < 0)
		return tern_error_make(err, errno, "setns `%s`", path);
	int ret = set_up_here(config, err);
	back_home(self);
	return ret;
}
