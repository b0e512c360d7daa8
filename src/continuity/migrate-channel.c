/* The control channel of a live migration: TCP, TLS 1.3 with an external
 * PSK derived from the shared token, framed messages, HELLO with the
 * protocol version; and the ephemeral certificate for criu --tls.
 *
 * The wire format is in man/tern-migrate-protocol.7; keep the two in step.
 *
 * This file: the connections (time, addresses, the token, listen, accept,
 * connect); TLS is in migrate-channel-tls.c, the messages in
 * migrate-channel-msg.c, what they share in migrate-channel-internal.h.
 *
 * All socket I/O is non-blocking and waits in poll() for what OpenSSL asks
 * for (WANT_READ / WANT_WRITE) until a deadline, so a dead or silent peer
 * costs at most the caller's timeout. Data OpenSSL already decrypted and
 * buffered is consumed by SSL_read before we ever poll, so no SSL_pending
 * juggling is needed. */
#include "migrate-channel.h"
#include "migrate-channel-internal.h"

#include "log.h"
#include "utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- time ---- */

int64_t mchan_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -1: no deadline */
int64_t mchan_deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : mchan_now_ms() + timeout_ms;
}

/* Wait until `fd` is ready for `events` or the deadline passes: 0 or
 * -ETIMEDOUT (or -errno of poll). Readiness includes errors and hangups:
 * the next I/O call reports them with a better errno. */
int mchan_wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int timeout = -1;
		int n;

		if (deadline >= 0) {
			int64_t left = deadline - mchan_now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			timeout = left > INT_MAX ? INT_MAX : (int)left;
		}
		n = poll(&p, 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;
	}
}

/* ---- addresses ---- */

/* "a.b.c.d:port" or "[v6]:port". Names are not resolved: the migration
 * commands take addresses, so what is dialled is what the user wrote. */
static int parse_ip_port(const char *s, struct sockaddr_storage *ss, socklen_t *sslen,
			 bool port_zero_ok, tern_error **err)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *p;
	size_t hlen;
	unsigned long port = 0;

	memset(ss, 0, sizeof(*ss));
	if (s == NULL)
		return tern_error_make_quiet(err, EINVAL, "no address given (IP:PORT)");
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			goto bad;
		hlen = (size_t)(close - s - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, hlen);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || colon == s || memchr(s, ':', (size_t)(colon - s)) != NULL)
			goto bad;
		hlen = (size_t)(colon - s);
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, s, hlen);
	}
	host[hlen] = '\0';
	if (colon[1] == '\0')
		goto bad;
	for (p = colon + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		port = port * 10 + (unsigned long)(*p - '0');
		if (port > 65535)
			goto bad;
	}
	if (port == 0 && !port_zero_ok)
		goto bad;
	if (s[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			goto bad;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*sslen = sizeof(*sin);
	}
	return 0;
bad:
	return tern_error_make_quiet(err, EINVAL,
				     "bad address `%s`: expected IPv4:PORT or [IPv6]:PORT%s", s,
				     port_zero_ok ? "" : " with a non-zero port");
}

/* "IP" into ip and, if with_port, "IP:PORT" / "[IP]:PORT" into full. */
void mchan_format_addr(const struct sockaddr_storage *ss, char *ip, size_t iplen, char *full,
		       size_t fulllen)
{
	unsigned port = 0;

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, (socklen_t)iplen);
		port = ntohs(sin6->sin6_port);
		if (full)
			snprintf(full, fulllen, "[%s]:%u", ip, port);
	} else {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &sin->sin_addr, ip, (socklen_t)iplen);
		port = ntohs(sin->sin_port);
		if (full)
			snprintf(full, fulllen, "%s:%u", ip, port);
	}
}

/* A migration moves a lot of small control messages both ways (Nagle would
 * delay them) and may sit idle for a long time while criu works: keepalive
 * notices a peer that vanished meanwhile, and TCP_USER_TIMEOUT bounds how
 * long unacknowledged data may wait, so a send to a dead peer fails too. */
void mchan_tune_socket(int fd)
{
	int one = 1, idle = 30, intvl = 10, cnt = 3;
	unsigned user_timeout = 60000;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

/* ---- the token and the key ---- */

void tern_mchan_token_free(unsigned char *token, size_t len)
{
	if (token == NULL)
		return;
	explicit_bzero(token, len);
	free(token);
}

int tern_mchan_token_read(const char *path, unsigned char **token, size_t *len, tern_error **err)
{
	cleanup_close int fd = -1;
	unsigned char *buf;
	struct stat st;
	size_t n = 0;

	/* O_NOFOLLOW: a symlink could point the token at a file someone else
	 * controls; O_NONBLOCK: a fifo must not block us before fstat. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return tern_error_make_quiet(err, ELOOP,
					     "token file `%s` is a symbolic link: give the file "
					     "itself",
					     path);
	if (fd < 0)
		return tern_error_make(err, errno, "token file `%s`", path);
	if (fstat(fd, &st) < 0)
		return tern_error_make(err, errno, "token file `%s`: fstat", path);
	if (!S_ISREG(st.st_mode))
		return tern_error_make_quiet(err, EINVAL, "token file `%s` is not a regular file",
					     path);
	/* Like an ssh key: a token others can read is no secret, one others
	 * can write is not ours. */
	if (st.st_mode & 077)
		return tern_error_make_quiet(err, EPERM,
					     "token file `%s` is accessible by group or others "
					     "(mode %04o): make it 0600",
					     path, (unsigned)(st.st_mode & 07777));
	if (st.st_size > TOKEN_MAX)
		return tern_error_make_quiet(err, EFBIG,
					     "token file `%s` holds %lld bytes, more than %d", path,
					     (long long)st.st_size, TOKEN_MAX);
	buf = tern_xmalloc0(TOKEN_MAX + 1);
	for (;;) {
		ssize_t r = read(fd, buf + n, TOKEN_MAX + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			tern_mchan_token_free(buf, TOKEN_MAX + 1);
			return tern_error_make(err, e, "reading the token file `%s`", path);
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > TOKEN_MAX) {
			tern_mchan_token_free(buf, TOKEN_MAX + 1);
			return tern_error_make_quiet(err, EFBIG,
						     "token file `%s` holds more than %d bytes",
						     path, TOKEN_MAX);
		}
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n < TOKEN_MIN) {
		tern_mchan_token_free(buf, TOKEN_MAX + 1);
		return tern_error_make_quiet(
		    err, EINVAL,
		    "token file `%s` holds %zu bytes, fewer than %d: use a "
		    "random token, e.g. from `head -c 32 /dev/urandom | "
		    "base64`",
		    path, n, TOKEN_MIN);
	}
	/* tern_mchan_token_free clears len bytes: the dropped newline goes
	 * now, and the rest of the buffer was never written */
	buf[n] = '\0';
	*token = buf;
	*len = n;
	return 0;
}

int tern_mchan_listen(const char *ip_port, int *port, tern_error **err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	cleanup_close int fd = -1;
	int one = 1, ret;

	ret = parse_ip_port(ip_port, &ss, &sl, true, err);
	if (ret < 0)
		return ret;
	/* non-blocking so that accept after poll never blocks when the
	 * connection went away in between */
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return tern_error_make(err, errno, "socket for listening on %s", ip_port);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		return tern_error_make(err, errno, "binding to %s", ip_port);
	if (listen(fd, 8) < 0)
		return tern_error_make(err, errno, "listening on %s", ip_port);
	if (port) {
		sl = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
			return tern_error_make(err, errno, "getsockname of %s", ip_port);
		*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						       : ((struct sockaddr_in *)&ss)->sin_port);
	}
	return steal_fd(&fd);
}

static int check_args(const unsigned char *token, size_t token_len, const char *role,
		      tern_error **err)
{
	if (token == NULL || token_len < TOKEN_MIN)
		return tern_error_make_quiet(err, EINVAL,
					     "migration token of %zu bytes: at least %d needed",
					     token_len, TOKEN_MIN);
	if (!mchan_valid_role(role))
		return tern_error_make_quiet(err, EINVAL,
					     "migration role `%s`: expected source or target",
					     role ? role : "(null)");
	return 0;
}

int tern_mchan_accept(int lfd, const unsigned char *token, size_t token_len, const char *role,
		      int timeout_ms, tern_mchan **out, tern_error **err)
{
	int64_t deadline = mchan_deadline_after(timeout_ms);
	cleanup_mchan tern_mchan *c = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char where[INET6_ADDRSTRLEN + 8] = "?", ip[INET6_ADDRSTRLEN];
	int fd, ret;

	ret = check_args(token, token_len, role, err);
	if (ret < 0)
		return ret;
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl) == 0)
		mchan_format_addr(&ss, ip, sizeof(ip), where, sizeof(where));
	for (;;) {
		ret = mchan_wait_fd(lfd, POLLIN, deadline);
		if (ret == -ETIMEDOUT)
			return tern_error_make_quiet(err, ETIMEDOUT,
						     "no tern migrate connected to %s within %d ms",
						     where, timeout_ms);
		if (ret < 0)
			return tern_error_make(err, -ret, "waiting for a connection on %s", where);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			break;
		/* gone before we took it, or a signal: wait again */
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNABORTED)
			continue;
		return tern_error_make(err, errno, "accepting a connection on %s", where);
	}
	ret = mchan_new(fd, true, token, token_len, &c, err);
	if (ret < 0)
		return ret;
	ret = mchan_handshake_and_hello(c, true, role, deadline, timeout_ms, err);
	if (ret < 0)
		return ret;
	*out = steal_pointer(&c);
	return 0;
}

/* A connection in its handshake, for tern_mchan_accept_peers. */
typedef struct {
	tern_mchan *c;
	int64_t deadline;
	short events;
} pending_peer;

static void refuse_peer(const tern_mchan_accept_opts *o, pending_peer *p, tern_error *why,
			int *failed)
{
	if (o->refused)
		o->refused(o->arg, p->c->peer, why);
	tern_error_free(why);
	tern_mchan_free(p->c);
	p->c = NULL;
	(*failed)++;
}

/* Advance the handshake of p (its socket is ready, or its time is up).
 * True when it is done: p->c is then the caller's. */
static bool progress_peer(const tern_mchan_accept_opts *o, const char *role, pending_peer *p,
			  bool ready, int64_t now, int *failed)
{
	tern_error *e = NULL;
	int r;

	if (!ready && now < p->deadline)
		return false;
	if (!ready) {
		mchan_timeout_error(p->c, "TLS handshake with", o->handshake_timeout_ms, &e);
		refuse_peer(o, p, e, failed);
		return false;
	}
	r = mchan_handshake_step(p->c, &p->events, &e);
	if (r == 0)
		return false;
	/* The token is proved: only now is anything the peer sends read as
	 * ours, and the HELLO is bounded by the same deadline. */
	if (r > 0)
		r = mchan_after_handshake(p->c, role, p->deadline, o->handshake_timeout_ms, &e);
	if (r == 0)
		return true;
	refuse_peer(o, p, e, failed);
	return false;
}

/* Take one new connection from lfd into p: 1 taken, 0 none after all. */
static int take_peer(int lfd, const unsigned char *token, size_t token_len, int64_t deadline,
		     int handshake_timeout_ms, pending_peer *p, const char *where, tern_error **err)
{
	int64_t mine = mchan_now_ms() + handshake_timeout_ms;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int ret;

	if (fd < 0) {
		/* gone before we took it, or a signal: wait again */
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNABORTED)
			return 0;
		return tern_error_make(err, errno, "accepting a connection on %s", where);
	}
	ret = mchan_new(fd, true, token, token_len, &p->c, err);
	if (ret < 0) {
		tern_mchan_freep(&p->c);
		return ret;
	}
	/* the overall deadline still holds */
	p->deadline = deadline >= 0 && deadline < mine ? deadline : mine;
	p->events = POLLIN; /* the ClientHello */
	return 1;
}

int tern_mchan_accept_peers(int lfd, const unsigned char *token, size_t token_len, const char *role,
			    const tern_mchan_accept_opts *o, tern_mchan **out, tern_error **err)
{
	int64_t deadline = mchan_deadline_after(o->timeout_ms);
	pending_peer p[MAX_PENDING];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char where[INET6_ADDRSTRLEN + 8] = "?", ip[INET6_ADDRSTRLEN];
	size_t np = 0;
	int failed = 0, ret;

	ret = check_args(token, token_len, role, err);
	if (ret < 0)
		return ret;
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl) == 0)
		mchan_format_addr(&ss, ip, sizeof(ip), where, sizeof(where));
	if (o->handshake_timeout_ms <= 0 || o->max_failed < 1)
		return tern_error_make_quiet(err, EINVAL,
					     "accepting on %s: a handshake timeout and at least "
					     "one peer are needed",
					     where);
	for (;;) {
		struct pollfd pfd[MAX_PENDING + 1];
		int64_t wake = deadline, now;
		int timeout = -1, n;
		size_t i, kept;
		bool incoming;

		for (i = 0; i < np; i++) {
			pfd[i] = (struct pollfd){.fd = p[i].c->fd, .events = p[i].events};
			if (wake < 0 || p[i].deadline < wake)
				wake = p[i].deadline;
		}
		/* every slot busy: newcomers wait in the backlog until one
		 * frees, a handshake deadline at most */
		pfd[np] = (struct pollfd){.fd = np < MAX_PENDING ? lfd : -1, .events = POLLIN};
		if (wake >= 0) {
			int64_t left = wake - mchan_now_ms();
			timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
		}
		n = poll(pfd, np + 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = tern_error_make(err, errno, "waiting for a connection on %s", where);
			break;
		}
		now = mchan_now_ms();
		incoming = (pfd[np].revents & POLLIN) != 0;
		for (i = 0; i < np; i++) {
			if (!progress_peer(o, role, &p[i], pfd[i].revents != 0, now, &failed))
				continue;
			*out = steal_pointer(&p[i].c);
			ret = 0;
			goto done;
		}
		for (i = kept = 0; i < np; i++)
			if (p[i].c)
				p[kept++] = p[i];
		np = kept;
		if (failed >= o->max_failed) {
			ret =
			    tern_error_make_quiet(err, ECONNREFUSED,
						  "gave up listening on %s after %d refused "
						  "connections (--max-failed-peers): none was tern "
						  "migrate with the token",
						  where, failed);
			break;
		}
		if (deadline >= 0 && now >= deadline) {
			ret = tern_error_make_quiet(err, ETIMEDOUT,
						    "no tern migrate connected to %s within %d ms "
						    "(%d connections refused)",
						    where, o->timeout_ms, failed);
			break;
		}
		if (incoming) {
			ret = take_peer(lfd, token, token_len, deadline, o->handshake_timeout_ms,
					&p[np], where, err);
			if (ret < 0)
				break;
			np += (size_t)ret;
		}
	}
done:
	for (size_t i = 0; i < np; i++)
		tern_mchan_free(p[i].c);
	return ret;
}

int tern_mchan_connect(const char *ip_port, const unsigned char *token, size_t token_len,
		       const char *role, int timeout_ms, tern_mchan **out, tern_error **err)
{
	int64_t deadline = mchan_deadline_after(timeout_ms);
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_close int fd = -1;
	struct sockaddr_storage ss;
	socklen_t sl;
	int ret, soerr = 0;
	socklen_t elen = sizeof(soerr);

	ret = check_args(token, token_len, role, err);
	if (ret < 0)
		return ret;
	ret = parse_ip_port(ip_port, &ss, &sl, false, err);
	if (ret < 0)
		return ret;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return tern_error_make(err, errno, "socket for connecting to %s", ip_port);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0) {
		if (errno != EINPROGRESS)
			return tern_error_make(err, errno, "connecting to %s", ip_port);
		ret = mchan_wait_fd(fd, POLLOUT, deadline);
		if (ret == -ETIMEDOUT)
			return tern_error_make_quiet(err, ETIMEDOUT,
						     "connecting to %s: no answer within %d ms",
						     ip_port, timeout_ms);
		if (ret < 0)
			return tern_error_make(err, -ret, "connecting to %s", ip_port);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen) < 0)
			soerr = errno;
		if (soerr != 0)
			return tern_error_make(err, soerr, "connecting to %s", ip_port);
	}
	ret = mchan_new(steal_fd(&fd), false, token, token_len, &c, err);
	if (ret < 0)
		return ret;
	ret = mchan_handshake_and_hello(c, false, role, deadline, timeout_ms, err);
	if (ret < 0)
		return ret;
	*out = steal_pointer(&c);
	return 0;
}

/* ---- accessors and teardown ---- */

uint64_t tern_mchan_bytes_sent(const tern_mchan *c)
{
	return c->sent;
}

uint64_t tern_mchan_bytes_received(const tern_mchan *c)
{
	return c->received;
}

const char *tern_mchan_peer_ip(const tern_mchan *c)
{
	return c->peer_ip;
}

const char *tern_mchan_local_ip(const tern_mchan *c)
{
	return c->local_ip;
}

/* ---- test hooks (built only into the unit test) ---- */

#ifdef TERN_MCHAN_TESTING
int tern_mchan_test_plain(int fd, tern_mchan **out)
{
	tern_mchan *c = tern_xmalloc0(sizeof(*c));

	c->fd = fd;
	c->send_timeout_ms = -1;
	snprintf(c->peer, sizeof(c->peer), "(test peer)");
	*out = c;
	return 0;
}

int tern_mchan_test_send_raw(tern_mchan *c, const void *buf, size_t len, tern_error **err)
{
	return mchan_write_all(c, buf, len, -1, -1, err);
}
#endif
