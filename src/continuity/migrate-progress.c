/* tern-migrate's progress figures that tern does not count itself: the
 * pages of criu's dump (its pagemap and page images) and, in
 * post-copy, the bytes of criu's page-server connection, which criu moves
 * without tern (read from the kernel's TCP counters over sock_diag). */
#include "dump-progress.h"
#include "log.h"
#include "migrate.h"
#include "netdev.h"
#include "utils.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* criu's magic.h: an image starts with these two words, then its
 * entries, each a 32-bit length and a protobuf message. */
#define IMG_COMMON_MAGIC 0x54564319u
#define PAGEMAP_MAGIC	 0x56084025u
/* criu's pagemap.h: the flags of a pagemap entry */
#define PE_LAZY	   (1u << 1) /* may be restored lazily */
#define PE_PRESENT (1u << 2) /* in the page images */

static bool varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Skip a field of wire type `wt`; false when it runs past the end. */
static bool skip_field(const unsigned char **p, const unsigned char *end, unsigned wt)
{
	uint64_t n;

	switch (wt) {
	case 0:
		return varint(p, end, &n);
	case 1:
		n = 8;
		break;
	case 2:
		if (!varint(p, end, &n))
			return false;
		break;
	case 5:
		n = 4;
		break;
	default:
		return false;
	}
	if (n > (uint64_t)(end - *p))
		return false;
	*p += n;
	return true;
}

/* images/pagemap.proto: a pagemap_head, then pagemap_entry messages
 * { vaddr 1, compat_nr_pages 2 (uint32, older criu), flags 4, nr_pages 5
 * (uint64) }, all varints. */
int tern_mig_pagemap_lazy_parse(const void *buf, size_t len, uint64_t *pages)
{
	const unsigned char *p = buf, *end = p + len;
	uint32_t w[2];
	bool head = true;

	*pages = 0;
	if (len < sizeof(w))
		return -EINVAL;
	memcpy(w, p, sizeof(w));
	p += sizeof(w);
	if (w[0] != IMG_COMMON_MAGIC || w[1] != PAGEMAP_MAGIC)
		return -EINVAL;
	while (p < end) {
		uint32_t n;
		if ((size_t)(end - p) < sizeof(n))
			return -EINVAL;
		memcpy(&n, p, sizeof(n));
		p += sizeof(n);
		if (n > (size_t)(end - p))
			return -EINVAL;
		const unsigned char *q = p, *qend = p + n;
		uint64_t flags = 0, nr = 0, compat = 0, tag, v;
		bool has_nr = false;
		p = qend;
		if (head) {
			head = false;
			continue;
		}
		while (q < qend) {
			if (!varint(&q, qend, &tag))
				return -EINVAL;
			if ((tag & 7) != 0) {
				if (!skip_field(&q, qend, tag & 7))
					return -EINVAL;
				continue;
			}
			if (!varint(&q, qend, &v))
				return -EINVAL;
			if (tag >> 3 == 2)
				compat = v;
			else if (tag >> 3 == 4)
				flags = v;
			else if (tag >> 3 == 5) {
				nr = v;
				has_nr = true;
			}
		}
		/* left behind: the target fetches them from the page server */
		if ((flags & PE_LAZY) && !(flags & PE_PRESENT))
			*pages += has_nr ? nr : compat;
	}
	return 0;
}

int tern_mig_lazy_pages(const char *dir, uint64_t *pages, tern_error **err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	*pages = 0;
	if (d == NULL)
		return tern_error_make(err, errno, "`%s`", dir);
	while (ret == 0 && (e = readdir(d)) != NULL) {
		cleanup_free char *path = NULL, *data = NULL;
		size_t len;
		uint64_t n;
		if (strncmp(e->d_name, "pagemap-", 8) != 0)
			continue;
		path = tern_strdup_printf("%s/%s", dir, e->d_name);
		ret = tern_read_file(path, &data, &len, 64 << 20, err);
		if (ret == 0 && tern_mig_pagemap_lazy_parse(data, len, &n) < 0)
			ret = tern_error_make_quiet(err, EINVAL, "`%s`: not a criu pagemap image",
						    path);
		if (ret == 0)
			*pages += n;
	}
	closedir(d);
	return ret;
}

uint64_t tern_mig_pages_bytes(const char *dir)
{
	return tern_dump_pages_bytes(dir);
}

uint64_t tern_mig_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (uint64_t)ps : 4096;
}

/* ---- the page-server connection ---- */

/* One sock_diag dump of the TCP sockets of `family`; the connections of
 * the page server at ip:port add their counters to *bytes. */
static int diag_dump(int fd, int family, const unsigned char *addr, int port, bool server,
		     uint64_t *bytes, bool *seen, tern_error **err)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .r = {.sdiag_family = (uint8_t)family,
		  .sdiag_protocol = IPPROTO_TCP,
		  .idiag_ext = 1 << (INET_DIAG_INFO - 1),
		  /* every state but LISTEN (10, the kernel's tcp_states.h):
		   * a closing connection still counts what it moved */
		  .idiag_states = ~(1U << 10)},
	};
	size_t alen = family == AF_INET ? 4 : 16;
	uint16_t nport = htons((uint16_t)port);
	/* aligned for the netlink headers in it */
	uint64_t buf[2048];

	if (send(fd, &req, sizeof(req), 0) < 0)
		return tern_error_make(err, errno, "sock_diag request");
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tern_error_make(err, errno, "sock_diag");
		if (n == 0)
			return 0;
		int left = (int)n;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; tern_nlmsg_ok(h, left);
		     h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				return tern_error_make(err, e->error ? -e->error : EIO,
						       "sock_diag");
			}
			struct inet_diag_msg *m = NLMSG_DATA(h);
			/* the server's side: its local address and port; the
			 * client's: the remote ones */
			const uint32_t *a = server ? m->id.idiag_src : m->id.idiag_dst;
			uint16_t p = server ? m->id.idiag_sport : m->id.idiag_dport;
			if (p != nport || memcmp(a, addr, alen) != 0)
				continue;
			int alen_left = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (struct rtattr *at = (struct rtattr *)(m + 1); RTA_OK(at, alen_left);
			     at = RTA_NEXT(at, alen_left)) {
				struct tcp_info ti = {0};
				size_t have = RTA_PAYLOAD(at);
				if (at->rta_type != INET_DIAG_INFO)
					continue;
				/* an older kernel's tcp_info is shorter: what it
				 * lacks stays 0 */
				memcpy(&ti, RTA_DATA(at), have < sizeof(ti) ? have : sizeof(ti));
				*bytes += server ? ti.tcpi_bytes_acked : ti.tcpi_bytes_received;
				*seen = true;
			}
		}
	}
}

int tern_mig_page_conn_bytes(const char *ip, int port, bool server, uint64_t *bytes, bool *seen,
			     tern_error **err)
{
	unsigned char addr[16] = {0};
	int family = AF_INET;
	cleanup_close int fd = -1;

	*bytes = 0;
	*seen = false;
	if (inet_pton(AF_INET, ip, addr) != 1) {
		family = AF_INET6;
		if (inet_pton(AF_INET6, ip, addr) != 1)
			return tern_error_make_quiet(err, EINVAL, "address `%s`", ip);
	}
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return tern_error_make(err, errno, "sock_diag socket");
	return diag_dump(fd, family, addr, port, server, bytes, seen, err);
}

/* ---- sampling it while post-copy runs ---- */

void tern_mig_fetch_init(tern_mig_fetch *f, const char *ip, int port, bool server,
			 uint64_t lazy_bytes)
{
	memset(f, 0, sizeof(*f));
	f->lazy_bytes = lazy_bytes;
	f->ip = ip;
	f->port = port;
	f->server = server;
	f->t_last = tern_mig_now_ns();
	f->t_moved = f->t_last;
}

int64_t tern_mig_fetch_idle_ms(const tern_mig_fetch *f)
{
	if (!f->counted)
		return -1;
	return (int64_t)((tern_mig_now_ns() - f->t_moved) / 1000000ULL);
}

void tern_mig_fetch_sample(tern_mig_fetch *f, tern_mig_progress *p)
{
	tern_error *e = NULL;
	uint64_t now = tern_mig_now_ns(), b = 0;
	bool seen = false;

	if (f->ip == NULL ||
	    tern_mig_page_conn_bytes(f->ip, f->port, f->server, &b, &seen, &e) < 0) {
		if (e)
			tern_debug("page-server connection counters: %s", e->msg);
		tern_error_free(e);
		return;
	}
	f->counted = true;
	if (seen && b != f->bytes_moved) {
		f->bytes_moved = b;
		f->t_moved = now;
	}
	/* gone (closed): the last figure stands */
	if (!seen || b < f->bytes)
		return;
	/* a line when something moved, else one every few seconds */
	if (b == f->bytes && now - f->t_last < 5000000000ULL)
		return;
	/* the first sample has no interval of its own: the transfer began
	 * before it, when nobody knows */
	bool first = !f->sampled;
	uint64_t rate =
	    !first && now > f->t_last ? (b - f->bytes) * 1000000000ULL / (now - f->t_last) : 0;
	char rate_text[32] = "";
	f->bytes = b;
	f->t_last = now;
	f->sampled = true;
	tern_jw w;
	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "pages");
	tern_jw_u64(&w, "bytes", b);
	if (first) {
		tern_jw_null(&w, "rate");
	} else {
		tern_jw_u64(&w, "rate", rate);
		snprintf(rate_text, sizeof(rate_text), " (%.1f MiB/s)", (double)rate / 1048576.0);
	}
	tern_jw_u64(&w, "lazy_bytes", f->lazy_bytes);
	tern_mig_event(p, "progress", &w, "post-copy: %.1f of %.1f MiB %s so far%s",
		       (double)b / 1048576.0, (double)f->lazy_bytes / 1048576.0,
		       f->server ? "fetched by the target" : "fetched", rate_text);
}

void tern_mig_pages_event(tern_mig_progress *p, bool known, uint64_t lazy_pages,
			  const tern_mig_fetch *f, const char *what)
{
	uint64_t bytes = lazy_pages * tern_mig_page_size();
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "phase", "pages");
	if (known) {
		tern_jw_u64(&w, "pages", lazy_pages);
		tern_jw_u64(&w, "bytes", bytes);
	} else {
		tern_jw_null(&w, "pages");
		tern_jw_null(&w, "bytes");
	}
	tern_jw_u64(&w, "wire_bytes", f->bytes);
	if (known)
		tern_mig_event(p, "phase", &w,
			       "%s: %llu pages, %llu bytes (%.1f MiB seen on criu's page-server "
			       "connection by the last sample, TLS included)",
			       what, (unsigned long long)lazy_pages, (unsigned long long)bytes,
			       (double)f->bytes / 1048576.0);
	else
		tern_mig_event(p, "phase", &w,
			       "%s (%.1f MiB seen on criu's page-server connection by the last "
			       "sample, TLS included)",
			       what, (double)f->bytes / 1048576.0);
}

void tern_mig_fetched_fields(tern_jw *w, tern_mig_mode mode, bool known, uint64_t lazy_pages)
{
	if (mode == TERN_MIG_POST_COPY && known) {
		tern_jw_u64(w, "pages_fetched", lazy_pages);
		tern_jw_u64(w, "bytes_fetched", lazy_pages * tern_mig_page_size());
	} else {
		/* nothing fetched on demand, or unknown */
		tern_jw_null(w, "pages_fetched");
		tern_jw_null(w, "bytes_fetched");
	}
}
