/* linux.netDevices: checks, the move into the container's network
 * namespace and, for a create that fails, the move back (see netdev.h).
 * Everything goes over raw NETLINK_ROUTE sockets: one in tern's own
 * network namespace, one made inside the container's. Also a device
 * handed out of a namespace for another to take (netdev.h). */
#include "netdev.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names ---- */

/* The kernel's isspace (lib/ctype.c): also 0xa0, no-break space in
 * Latin-1. */
static bool kernel_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0;
}

int tern_netdev_name_check(const char *name, bool template_ok, const char **why)
{
	size_t len = strlen(name);
	const char *pct;

	if (len == 0)
		*why = "it is empty";
	else if (len >= IFNAMSIZ)
		*why = "longer than 15 bytes";
	else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		*why = "`.` and `..` cannot name a device";
	else if (strchr(name, '/') || strchr(name, ':'))
		*why = "it contains '/' or ':'";
	else
		*why = NULL;
	for (const char *p = name; *why == NULL && *p; p++)
		if (kernel_space((unsigned char)*p))
			*why = "it contains white space";
	if (*why)
		return -EINVAL;
	/* a '%' makes the kernel number the name: "eth%d" is eth0, eth1... */
	pct = strchr(name, '%');
	if (pct && !template_ok)
		*why = "it contains '%' (only the name inside may be a \"%d\" template)";
	else if (pct && (pct[1] != 'd' || strchr(pct + 2, '%')))
		*why = "a template has one \"%d\" and no other '%'";
	return *why ? -EINVAL : 0;
}

const char *tern_netdev_target(const oci_net_device *d)
{
	return d->new_name ? d->new_name : d->name;
}

static bool is_template(const char *name)
{
	return strchr(name, '%') != NULL;
}

/* ---- rtnetlink ---- */

typedef struct {
	struct nlmsghdr h;
	char body[512];
} nl_req;

/* Replies: the kernel sends a dump in parts of at most 32 KiB. tern is
 * single-threaded. */
static char nl_buf[65536] __attribute__((aligned(8)));

/* The kernel's own words on a failed request (extended ack), or "". */
static char nl_why[256];

static void *req_init(nl_req *r, uint16_t type, uint16_t flags, size_t hdrlen)
{
	memset(r, 0, sizeof(*r));
	r->h.nlmsg_len = NLMSG_LENGTH(hdrlen);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | flags;
	return NLMSG_DATA(&r->h);
}

static void req_attr(nl_req *r, uint16_t type, const void *data, size_t len)
{
	size_t off = NLMSG_ALIGN(r->h.nlmsg_len);
	struct rtattr *a = (struct rtattr *)((char *)r + off);

	/* every request here is a few short attributes */
	if (off + RTA_SPACE(len) > sizeof(*r))
		abort();
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = off + RTA_SPACE(len);
}

static void req_str(nl_req *r, uint16_t type, const char *s)
{
	req_attr(r, type, s, strlen(s) + 1);
}

static int nl_open(void)
{
	int one = 1;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	/* the kernel's reason in the ack, without a copy of the request;
	 * older kernels just lack them */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	return fd;
}

/* An rtnetlink socket in the network namespace `ns` (a socket stays in
 * the namespace it was made in); `home` is tern's own, to go back to. */
static int nl_open_in(int ns, int home, tern_error **err)
{
	int fd, saved;

	if (setns(ns, CLONE_NEWNET) < 0)
		return tern_error_make(err, errno, "enter the container's network namespace");
	fd = nl_open();
	saved = -fd;
	if (setns(home, CLONE_NEWNET) < 0) {
		/* going on in the container's namespace would be worse */
		tern_log_error_message("cannot return to tern's own network namespace");
		abort();
	}
	if (fd < 0)
		return tern_error_make(err, saved,
				       "rtnetlink socket in the container's network namespace");
	return fd;
}

/* The attributes of an error ack follow the error and the request (only
 * its header with NETLINK_CAP_ACK): NLMSGERR_ATTR_MSG is the kernel's
 * reason, kept in nl_why. */
static void keep_ack_text(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const char *end = (const char *)h + h->nlmsg_len;
	const char *p;
	size_t off = sizeof(*e);

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	p = (const char *)e + NLMSG_ALIGN(off);
	while (p + sizeof(struct nlattr) <= end) {
		const struct nlattr *a = (const struct nlattr *)p;
		if (a->nla_len < sizeof(*a) || p + a->nla_len > end)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG)
			snprintf(nl_why, sizeof(nl_why), "%.*s", (int)(a->nla_len - sizeof(*a)),
				 (const char *)(a + 1));
		p += NLA_ALIGN(a->nla_len);
	}
}

typedef int (*nl_cb)(const struct nlmsghdr *h, void *ctx);

/* Send `r` and read until its ack or the end of its dump, giving every
 * other reply to `cb`. 0 or -errno (nl_why may say more); -EAGAIN when a
 * dump was interrupted by a change and must be asked again. */
static int nl_call(int fd, nl_req *r, nl_cb cb, void *ctx)
{
	static uint32_t seq;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	bool interrupted = false;

	nl_why[0] = '\0';
	r->h.nlmsg_seq = ++seq;
	r->h.nlmsg_flags |= NLM_F_ACK;
	if (sendto(fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, nl_buf, sizeof(nl_buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPROTO;
		int len = (int)n;
		for (const struct nlmsghdr *h = (const struct nlmsghdr *)nl_buf;
		     tern_nlmsg_ok(h, len); h = NLMSG_NEXT(h, len)) {
			/* an ack left over from an earlier request */
			if (h->nlmsg_seq != r->h.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				if (e->error)
					keep_ack_text(h);
				return e->error;
			}
			if (h->nlmsg_flags & NLM_F_DUMP_INTR)
				interrupted = true;
			if (h->nlmsg_type == NLMSG_DONE) {
				const int *e = NLMSG_DATA(h);
				if (*e < 0)
					return *e;
				return interrupted ? -EAGAIN : 0;
			}
			if (cb) {
				int ret = cb(h, ctx);
				if (ret < 0)
					return ret;
			}
		}
	}
}

/* " (the kernel says: ...)" after a failed request, when it said
 * something. */
static const char *kernel_says(void)
{
	static char buf[sizeof(nl_why) + 32];

	if (nl_why[0] == '\0')
		return "";
	snprintf(buf, sizeof(buf), " (the kernel says: %s)", nl_why);
	return buf;
}

typedef struct {
	int index;
	unsigned flags;
	char name[IFNAMSIZ];
} link_info;

static int link_cb(const struct nlmsghdr *h, void *ctx)
{
	link_info *li = ctx;
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	int len = (int)IFLA_PAYLOAD(h);

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	li->index = ifi->ifi_index;
	li->flags = ifi->ifi_flags;
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_IFNAME)
			snprintf(li->name, sizeof(li->name), "%.*s", (int)RTA_PAYLOAD(a),
				 (const char *)RTA_DATA(a));
	return 0;
}

/* The device with this index (name NULL) or name (index 0) in the
 * namespace of `fd`: -ENODEV when there is none. */
static int link_get(int fd, int index, const char *name, link_info *li)
{
	nl_req r;
	struct ifinfomsg *ifi = req_init(&r, RTM_GETLINK, 0, sizeof(*ifi));
	int ret;

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	if (name)
		req_str(&r, IFLA_IFNAME, name);
	memset(li, 0, sizeof(*li));
	ret = nl_call(fd, &r, link_cb, li);
	if (ret == 0 && li->index == 0)
		ret = -ENODEV;
	return ret;
}

/* One RTM_SETLINK on device `index` of the namespace of `fd`: into the
 * namespace `to_ns` (-1: stay), named `name` (NULL: keep), brought up. The
 * move and the rename are one request, so the kernel checks the new name
 * in the namespace it goes to. */
static int link_set(int fd, int index, int to_ns, const char *name, bool up)
{
	nl_req r;
	struct ifinfomsg *ifi = req_init(&r, RTM_SETLINK, 0, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	if (up) {
		ifi->ifi_flags = IFF_UP;
		ifi->ifi_change = IFF_UP;
	}
	if (to_ns >= 0) {
		uint32_t v = (uint32_t)to_ns;
		req_attr(&r, IFLA_NET_NS_FD, &v, sizeof(v));
	}
	if (name)
		req_str(&r, IFLA_IFNAME, name);
	return nl_call(fd, &r, NULL, NULL);
}

/* ---- addresses ---- */

/* What an address needs to be added again: the header and the attributes
 * that describe it (not its label, which carries the old device name, nor
 * its lifetimes: only permanent ones are kept). */
#define ADDR_ATTRS 6
typedef struct {
	struct ifaddrmsg ifa;
	uint32_t flags;
	bool carry; /* goes into the container (else only back on an undo) */
	size_t n;
	struct {
		uint16_t type, len;
		unsigned char data[16];
	} attr[ADDR_ATTRS];
} saved_addr;

/* The flags a user may set on an address (the others are the kernel's
 * bookkeeping: secondary, tentative, deprecated, permanent...). */
#define ADDR_USER_FLAGS                                                                            \
	(IFA_F_NODAD | IFA_F_OPTIMISTIC | IFA_F_HOMEADDRESS | IFA_F_MANAGETEMPADDR |               \
	 IFA_F_NOPREFIXROUTE | IFA_F_MCAUTOJOIN)

typedef struct {
	int index;
	saved_addr *v;
	size_t n;
} addr_list;

static int addr_cb(const struct nlmsghdr *h, void *ctx)
{
	addr_list *l = ctx;
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	int len = (int)IFA_PAYLOAD(h);
	saved_addr s = {.ifa = *ifa, .flags = ifa->ifa_flags};

	if (h->nlmsg_type != RTM_NEWADDR || (int)ifa->ifa_index != l->index)
		return 0;
	for (const struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		size_t plen = RTA_PAYLOAD(a);
		switch (a->rta_type) {
		case IFA_FLAGS:
			if (plen >= sizeof(uint32_t))
				memcpy(&s.flags, RTA_DATA(a), sizeof(uint32_t));
			break;
		case IFA_ADDRESS:
		case IFA_LOCAL:
		case IFA_BROADCAST:
		case IFA_ANYCAST:
		case IFA_RT_PRIORITY:
			if (plen <= sizeof(s.attr[0].data) && s.n < ADDR_ATTRS) {
				s.attr[s.n].type = a->rta_type;
				s.attr[s.n].len = (uint16_t)plen;
				memcpy(s.attr[s.n].data, RTA_DATA(a), plen);
				s.n++;
			}
			break;
		}
	}
	/* Dynamic addresses belong to where they were got; an IPv6
	 * link-local one the kernel makes itself when the device comes up. */
	if (!(s.flags & IFA_F_PERMANENT) ||
	    (ifa->ifa_family == AF_INET6 && ifa->ifa_scope == RT_SCOPE_LINK))
		return 0;
	/* runtime-spec: into the container go the permanent addresses
	 * (IFA_F_PERMANENT) of global scope (RT_SCOPE_UNIVERSE), of any
	 * family; an undo puts back the others too */
	s.carry = ifa->ifa_scope == RT_SCOPE_UNIVERSE;
	s.flags &= ADDR_USER_FLAGS;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	if (l->v == NULL)
		abort();
	l->v[l->n++] = s;
	return 0;
}

/* The permanent addresses of device `index`, in the order the kernel
 * lists them (an IPv4 primary before its secondaries). */
static int addr_save(int fd, int index, addr_list *l)
{
	int ret = -EAGAIN;

	for (int tries = 0; ret == -EAGAIN && tries < 10; tries++) {
		nl_req r;
		struct ifaddrmsg *ifa = req_init(&r, RTM_GETADDR, NLM_F_DUMP, sizeof(*ifa));
		ifa->ifa_family = AF_UNSPEC;
		ifa->ifa_index = (unsigned)index;
		free(l->v);
		*l = (addr_list){.index = index};
		ret = nl_call(fd, &r, addr_cb, l);
	}
	return ret;
}

static int addr_add(int fd, int index, const saved_addr *s)
{
	nl_req r;
	struct ifaddrmsg *ifa =
	    req_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*ifa));

	*ifa = s->ifa;
	ifa->ifa_index = (unsigned)index;
	ifa->ifa_flags = (unsigned char)(s->flags & 0xff);
	for (size_t i = 0; i < s->n; i++)
		req_attr(&r, s->attr[i].type, s->attr[i].data, s->attr[i].len);
	req_attr(&r, IFA_FLAGS, &s->flags, sizeof(s->flags));
	return nl_call(fd, &r, NULL, NULL);
}

/* ---- the check ---- */

static bool same_ns(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static const char *netns_path(const oci_config *config)
{
	const oci_linux *lx = config->linux_;
	for (size_t i = 0; lx && i < lx->namespaces_len; i++)
		if (lx->namespaces[i].type == OCI_NS_NETWORK)
			return lx->namespaces[i].path;
	return NULL;
}

bool tern_netdev_in_own_netns(const oci_config *config)
{
	const oci_linux *lx = config->linux_;

	if (lx == NULL || lx->net_devices_len == 0)
		return false;
	for (size_t i = 0; i < lx->namespaces_len; i++)
		if (lx->namespaces[i].type == OCI_NS_NETWORK)
			return lx->namespaces[i].path == NULL || *lx->namespaces[i].path == '\0';
	return false;
}

static int check_names(const oci_linux *lx, unsigned *index, tern_error **err)
{
	const char *why;

	for (size_t i = 0; i < lx->net_devices_len; i++) {
		const oci_net_device *d = &lx->net_devices[i];
		const char *target = tern_netdev_target(d);

		if (tern_netdev_name_check(d->name, false, &why) < 0)
			return tern_error_make_quiet(
			    err, EINVAL, "linux.netDevices[\"%s\"]: not a network device name: %s",
			    d->name, why);
		if (d->new_name && tern_netdev_name_check(d->new_name, true, &why) < 0)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.netDevices[\"%s\"].name `%s`: not a network device name: %s",
			    d->name, d->new_name, why);
		index[i] = if_nametoindex(d->name);
		if (index[i] == 0 && errno == ENODEV)
			return tern_error_make_quiet(
			    err, ENODEV,
			    "linux.netDevices[\"%s\"]: no such network device on the host",
			    d->name);
		if (index[i] == 0)
			return tern_error_make(err, errno, "linux.netDevices[\"%s\"]: look it up",
					       d->name);
		/* every network namespace has its loopback at index 1, and
		 * the kernel never lets it leave */
		if (index[i] == 1)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "linux.netDevices[\"%s\"]: the loopback device cannot leave its "
			    "network namespace",
			    d->name);
		for (size_t j = 0; j < i; j++) {
			const oci_net_device *o = &lx->net_devices[j];
			/* one device under its name and an altname */
			if (index[j] == index[i])
				return tern_error_make_quiet(
				    err, EINVAL,
				    "linux.netDevices[\"%s\"] and [\"%s\"]: the same host device",
				    o->name, d->name);
			if (!is_template(target) && strcmp(tern_netdev_target(o), target) == 0)
				return tern_error_make_quiet(
				    err, EINVAL,
				    "linux.netDevices[\"%s\"] and [\"%s\"]: both would be `%s` in "
				    "the container",
				    o->name, d->name, target);
		}
	}
	return 0;
}

/* No target name taken in a namespace the container joins (a new one
 * has only `lo`). */
static int check_free_in(const oci_linux *lx, int ns, const char *path, tern_error **err)
{
	cleanup_close int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	cleanup_close int fd = -1;
	link_info li;

	if (home < 0)
		return tern_error_make(err, errno, "/proc/self/ns/net");
	fd = nl_open_in(ns, home, err);
	if (fd < 0)
		return tern_error_wrap(err, "linux.netDevices: network namespace `%s`", path);
	for (size_t i = 0; i < lx->net_devices_len; i++) {
		const oci_net_device *d = &lx->net_devices[i];
		const char *target = tern_netdev_target(d);
		int ret;

		if (is_template(target))
			continue;
		ret = link_get(fd, 0, target, &li);
		if (ret == 0)
			return tern_error_make_quiet(
			    err, EEXIST,
			    "linux.netDevices[\"%s\"]: the network namespace `%s` has a device "
			    "named `%s` already",
			    d->name, path, target);
		if (ret != -ENODEV)
			return tern_error_make(err, -ret,
					       "linux.netDevices[\"%s\"]: look up `%s` in `%s`",
					       d->name, target, path);
	}
	return 0;
}

int tern_netdev_check(const oci_config *config, const tern_ns_plan *plan, tern_error **err)
{
	const oci_linux *lx = config->linux_;
	const char *path = netns_path(config);
	int joined = plan->join_fd[OCI_NS_NETWORK];
	cleanup_free unsigned *index = NULL;
	int ret;

	if (lx == NULL || lx->net_devices_len == 0)
		return 0;
	/* Moving a device into the namespace tern runs in moves nothing,
	 * and a rename there would rename the host's device. A namespace
	 * joined by path is fine: it is how an orchestrator hands over the
	 * one it made (runc and crun accept it too). */
	if (!plan->has[OCI_NS_NETWORK])
		return tern_error_make_quiet(err, EINVAL,
					     "linux.netDevices: the container needs a network "
					     "namespace of its own to move devices into, and "
					     "linux.namespaces has no \"network\" entry");
	if (joined >= 0 && same_ns(joined, "/proc/self/ns/net"))
		return tern_error_make_quiet(err, EINVAL,
					     "linux.netDevices: the network namespace that "
					     "linux.namespaces joins (`%s`) is tern's own; the "
					     "container needs one of its own to move devices into",
					     path);
	index = tern_xmalloc0(lx->net_devices_len * sizeof(*index));
	ret = check_names(lx, index, err);
	if (ret < 0)
		return ret;
	if (joined >= 0)
		return check_free_in(lx, joined, path, err);
	for (size_t i = 0; i < lx->net_devices_len; i++)
		if (strcmp(tern_netdev_target(&lx->net_devices[i]), "lo") == 0)
			return tern_error_make_quiet(
			    err, EEXIST,
			    "linux.netDevices[\"%s\"]: the container's new network namespace has "
			    "its loopback device named `lo` already",
			    lx->net_devices[i].name);
	return 0;
}

/* ---- moving ---- */

typedef struct {
	char *host_name;
	char ctr_name[IFNAMSIZ];
	int ctr_index;
	bool was_up;
	addr_list addrs;
} moved_dev;

struct tern_netdev_set {
	int host_ns; /* tern's network namespace */
	int ctr_ns;  /* the container's: held, so undo works after its init died */
	moved_dev *devs;
	size_t n;
};

void tern_netdev_set_free(tern_netdev_set *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->n; i++) {
		free(set->devs[i].host_name);
		free(set->devs[i].addrs.v);
	}
	free(set->devs);
	if (set->host_ns >= 0)
		close(set->host_ns);
	if (set->ctr_ns >= 0)
		close(set->ctr_ns);
	free(set);
}

/* The addresses of `m` on device `index`: the ones the spec carries
 * (inside), or all that were saved (back on the host). */
static int add_addresses(int fd, const moved_dev *m, int index, bool inside, tern_error **err)
{
	for (size_t i = 0; i < m->addrs.n; i++) {
		if (inside && !m->addrs.v[i].carry)
			continue;
		int ret = addr_add(fd, index, &m->addrs.v[i]);
		if (ret < 0)
			return tern_error_make(err, -ret, "add address %zu of %zu%s", i + 1,
					       m->addrs.n, kernel_says());
	}
	return 0;
}

/* The steps after the move of `m`, inside the container's namespace. */
static int settle_inside(int ctr, moved_dev *m, const char *target, tern_error **err)
{
	link_info li;
	int ret = link_get(ctr, 0, m->ctr_name, &li);

	if (ret < 0)
		return tern_error_make(err, -ret, "find `%s` after the move", m->ctr_name);
	m->ctr_index = li.index;
	if (is_template(target)) {
		/* The kernel picks the number here, by name, in the device's
		 * new namespace; asked by index, it says which it took. */
		ret = link_set(ctr, m->ctr_index, -1, target, false);
		if (ret == 0)
			ret = link_get(ctr, m->ctr_index, NULL, &li);
		if (ret < 0)
			return tern_error_make(err, -ret, "rename it after the template `%s`%s",
					       target, kernel_says());
		snprintf(m->ctr_name, sizeof(m->ctr_name), "%s", li.name);
	}
	ret = add_addresses(ctr, m, m->ctr_index, true, err);
	if (ret < 0)
		return ret;
	/* runtime-spec: up, so that the container can use it */
	ret = link_set(ctr, m->ctr_index, -1, NULL, true);
	if (ret < 0)
		return tern_error_make(err, -ret, "bring `%s` up%s", m->ctr_name, kernel_says());
	return 0;
}

static int move_one(tern_netdev_set *set, int host, int ctr, const oci_net_device *d,
		    tern_error **err)
{
	const char *target = tern_netdev_target(d);
	moved_dev m = {0};
	link_info li;
	int index, ret;

	index = (int)if_nametoindex(d->name);
	if (index == 0)
		return errno == ENODEV ? tern_error_make_quiet(err, ENODEV,
							       "no such network device on the host")
				       : tern_error_make(err, errno, "look it up");
	ret = link_get(host, index, NULL, &li);
	if (ret < 0)
		return tern_error_make(err, -ret, "read its state");
	m.was_up = (li.flags & IFF_UP) != 0;
	/* the move drops every address: read them first */
	ret = addr_save(host, index, &m.addrs);
	if (ret < 0) {
		free(m.addrs.v);
		return tern_error_make(err, -ret, "list its addresses");
	}
	/* A template is applied inside, where the kernel numbers it; until
	 * then a name of our own, so that it can be found. */
	if (is_template(target))
		snprintf(m.ctr_name, sizeof(m.ctr_name), "tern%u.%zu", (unsigned)getpid() % 100000,
			 set->n);
	else
		snprintf(m.ctr_name, sizeof(m.ctr_name), "%s", target);
	ret = link_set(host, index, set->ctr_ns, m.ctr_name, false);
	if (ret < 0) {
		free(m.addrs.v);
		if (ret == -EEXIST)
			return tern_error_make_quiet(err, EEXIST,
						     "the container's network namespace has a "
						     "device named `%s` already",
						     m.ctr_name);
		return tern_error_make(err, -ret,
				       "move it into the container's network namespace as `%s`%s",
				       m.ctr_name, kernel_says());
	}
	/* Recorded as soon as it is inside: undo must find what follows
	 * leaves half done. */
	m.host_name = tern_xstrdup(d->name);
	set->devs[set->n] = m;
	return settle_inside(ctr, &set->devs[set->n++], target, err);
}

int tern_netdev_move_in(const oci_config *config, pid_t pid, tern_netdev_set **out,
			tern_error **err)
{
	const oci_linux *lx = config->linux_;
	cleanup_close int host = -1, ctr = -1;
	tern_netdev_set *set;
	char path[64];
	int ret = 0;

	*out = NULL;
	if (lx == NULL || lx->net_devices_len == 0)
		return 0;
	set = tern_xmalloc0(sizeof(*set));
	set->devs = tern_xmalloc0(lx->net_devices_len * sizeof(*set->devs));
	set->host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	set->ctr_ns = open(path, O_RDONLY | O_CLOEXEC);
	if (set->host_ns < 0 || set->ctr_ns < 0) {
		ret = tern_error_make(err, errno, "linux.netDevices: %s",
				      set->host_ns < 0 ? "/proc/self/ns/net" : path);
		goto out;
	}
	host = nl_open();
	if (host < 0) {
		ret = tern_error_make(err, -host, "linux.netDevices: rtnetlink socket");
		goto out;
	}
	ctr = nl_open_in(set->ctr_ns, set->host_ns, err);
	if (ctr < 0) {
		ret = tern_error_wrap(err, "linux.netDevices");
		goto out;
	}
	for (size_t i = 0; i < lx->net_devices_len; i++) {
		ret = move_one(set, host, ctr, &lx->net_devices[i], err);
		if (ret < 0) {
			tern_error_wrap(err, "linux.netDevices[\"%s\"]", lx->net_devices[i].name);
			goto out;
		}
		tern_debug("linux.netDevices[\"%s\"]: in the container as `%s`",
			   lx->net_devices[i].name, set->devs[set->n - 1].ctr_name);
	}
out:
	if (ret < 0) {
		tern_netdev_undo(set);
		tern_netdev_set_free(set);
		return ret;
	}
	*out = set;
	return 0;
}

/* ---- undo ---- */

static void undo_one(const tern_netdev_set *set, int host, int ctr, const moved_dev *m)
{
	tern_error *e = NULL;
	link_info li;
	int ret;

	ret = link_set(ctr, m->ctr_index, set->host_ns, m->host_name, false);
	if (ret < 0) {
		tern_warn("linux.netDevices[\"%s\"]: cannot move `%s` back to the host: %s%s",
			  m->host_name, m->ctr_name, strerror(-ret), kernel_says());
		return;
	}
	ret = link_get(host, 0, m->host_name, &li);
	if (ret < 0) {
		tern_warn("linux.netDevices[\"%s\"]: moved back, then not found: %s", m->host_name,
			  strerror(-ret));
		return;
	}
	if (add_addresses(host, m, li.index, false, &e) < 0) {
		tern_warn("linux.netDevices[\"%s\"]: back on the host, but: %s", m->host_name,
			  e->msg);
		tern_error_free(e);
	}
	if (m->was_up && (ret = link_set(host, li.index, -1, NULL, true)) < 0)
		tern_warn("linux.netDevices[\"%s\"]: back on the host, but not up again: %s%s",
			  m->host_name, strerror(-ret), kernel_says());
}

void tern_netdev_undo(tern_netdev_set *set)
{
	cleanup_close int host = -1, ctr = -1;
	tern_error *e = NULL;

	if (set == NULL || set->n == 0)
		return;
	host = nl_open();
	ctr = nl_open_in(set->ctr_ns, set->host_ns, &e);
	if (host < 0 || ctr < 0) {
		tern_warn("linux.netDevices: cannot move the devices back to the host: %s",
			  ctr < 0 ? e->msg : strerror(-host));
		tern_error_free(e);
		return;
	}
	/* the last one first: the reverse of the moves */
	for (size_t i = set->n; i-- > 0;) {
		undo_one(set, host, ctr, &set->devs[i]);
		free(set->devs[i].host_name);
		free(set->devs[i].addrs.v);
	}
	set->n = 0;
}

/* ---- a device handed from one network namespace to another ---- */

int tern_netdev_move_out(int from_ns, const char *name, const char *new_name, int *index,
			 tern_error **err)
{
	cleanup_close int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	cleanup_close int from = -1, here = -1;
	link_info li;
	int ret;

	if (home < 0)
		return tern_error_make(err, errno, "/proc/thread-self/ns/net");
	from = nl_open_in(from_ns, home, err);
	if (from < 0)
		return from;
	here = nl_open();
	if (here < 0)
		return tern_error_make(err, -here, "rtnetlink socket");
	ret = link_get(from, 0, name, &li);
	if (ret < 0)
		return tern_error_make(err, -ret,
				       "network device `%s` in the container's network "
				       "namespace",
				       name);
	ret = link_set(from, li.index, home, new_name, false);
	if (ret < 0)
		return tern_error_make(err, -ret,
				       "move `%s` out of the container's network "
				       "namespace as `%s`%s",
				       name, new_name, kernel_says());
	ret = link_get(here, 0, new_name, &li);
	if (ret < 0)
		return tern_error_make(err, -ret, "`%s`, moved out as `%s`, not found", name,
				       new_name);
	*index = li.index;
	return 0;
}

void tern_netdev_delete(const char *name, int index)
{
	cleanup_close int fd = nl_open();
	link_info li;
	nl_req r;
	int ret;

	if (fd < 0)
		return;
	/* that device, not another that took its name since */
	if (link_get(fd, index, NULL, &li) < 0 || strcmp(li.name, name) != 0)
		return;
	struct ifinfomsg *ifi = req_init(&r, RTM_DELLINK, 0, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	ret = nl_call(fd, &r, NULL, NULL);
	if (ret < 0 && ret != -ENODEV)
		tern_warn("delete network device `%s`: %s%s", name, strerror(-ret), kernel_says());
}
