/* The control channel of a live migration: TCP, TLS 1.3 with an external
 * PSK derived from the shared token, framed messages, HELLO with the
 * protocol version; and the ephemeral certificate for criu --tls.
 *
 * The wire format is in man/tern-migrate-protocol.7; keep the two in step.
 *
 * All socket I/O is non-blocking and waits in poll() for what OpenSSL asks
 * for (WANT_READ / WANT_WRITE) until a deadline, so a dead or silent peer
 * costs at most the caller's timeout. Data OpenSSL already decrypted and
 * buffered is consumed by SSL_read before we ever poll, so no SSL_pending
 * juggling is needed. */
#include "migrate-channel.h"

#include "log.h"
#include "utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <yajl/yajl_tree.h>

/* These strings are part of the wire protocol (tern-migrate-protocol(7)).
 * The PSK label and identity do not change with the protocol version: two
 * tern of different versions must still complete the handshake, so that
 * HELLO can tell the user which versions met instead of failing as if the
 * token were wrong. */
#define PSK_LABEL    "tern-migrate v1 psk"
#define PSK_IDENTITY "tern-migrate"
#define PSK_LEN	     32
/* TLS 1.3's mandatory suite; its hash (SHA-256) is the PSK's hash. */
#define CIPHER_SUITE "TLS_AES_128_GCM_SHA256"
#define HELLO_MAGIC  "tern-migrate"

#define HEADER_LEN  12
#define MAX_PAYLOAD (64u << 20)
#define CHUNK	    (1u << 20)
#define TOKEN_MIN   16
#define TOKEN_MAX   4096
/* HELLO is a small JSON object: a peer announcing more is not tern */
#define HELLO_MAX 4096
/* handshakes migrate-receive runs at once (tern_mchan_accept_peers) */
#define MAX_PENDING 8
/* How long a best-effort ERROR may take to leave. */
#define SEND_ERROR_TIMEOUT_MS 5000

#ifdef TERN_MCHAN_TESTING
static int hello_version = TERN_MIGRATE_PROTO_VERSION;
static const char *hello_magic = HELLO_MAGIC;
#else
#define hello_version TERN_MIGRATE_PROTO_VERSION
#define hello_magic   HELLO_MAGIC
#endif

struct tern_mchan {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	BIO_METHOD *bio_method;
	/* After a fatal TLS error OpenSSL must not be asked to write again,
	 * not even a close_notify. */
	bool broken;
	/* a recv failed within a message: what follows would be misread */
	bool out_of_step;
	/* server: the client offered our PSK identity (else: not tern) */
	bool psk_offered;
	int send_timeout_ms;
	unsigned char psk[PSK_LEN]; /* zeroed once the handshake is over */
	char peer[INET6_ADDRSTRLEN + 8];
	char peer_ip[INET6_ADDRSTRLEN];
	char local_ip[INET6_ADDRSTRLEN];
	uint64_t sent, received;
};

/* ---- time ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -1: no deadline */
static int64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Wait until `fd` is ready for `events` or the deadline passes: 0 or
 * -ETIMEDOUT (or -errno of poll). Readiness includes errors and hangups:
 * the next I/O call reports them with a better errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int timeout = -1;
		int n;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
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
static void format_addr(const struct sockaddr_storage *ss, char *ip, size_t iplen, char *full,
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
static void tune_socket(int fd)
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

/* HKDF-SHA256(salt none, key token, info PSK_LABEL): the token itself
 * never reaches TLS, and the key is bound to this use of it. */
static int derive_psk(const unsigned char *token, size_t token_len, unsigned char out[PSK_LEN],
		      tern_error **err)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM params[] = {
	    OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)token, token_len),
	    OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)PSK_LABEL,
					      strlen(PSK_LABEL)),
	    OSSL_PARAM_construct_end(),
	};
	int ok = kctx && EVP_KDF_derive(kctx, out, PSK_LEN, params) == 1;

	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	if (!ok) {
		ERR_clear_error();
		return tern_error_make_quiet(err, EINVAL,
					     "deriving the migration key (HKDF-SHA256) "
					     "failed in OpenSSL");
	}
	return 0;
}

/* ---- OpenSSL plumbing ---- */

/* The reason of the last OpenSSL error, and an empty queue after. */
const char *tern_mchan_openssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	ERR_clear_error();
	return r ? r : "unknown TLS error";
}

/* A socket BIO of our own, only so that writes use send(MSG_NOSIGNAL): a
 * peer that vanished must give EPIPE, not kill the process with SIGPIPE,
 * and a library may not change the process's signal dispositions. */
static int bio_write(BIO *b, const char *buf, int len)
{
	int fd = (int)(intptr_t)BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	do
		n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
	int fd = (int)(intptr_t)BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	do
		n = recv(fd, buf, (size_t)len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	/* unbuffered: nothing to flush */
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static tern_mchan *mchan_of(SSL *ssl)
{
	return SSL_get_app_data(ssl);
}

/* A fresh session carrying the PSK; OpenSSL takes ownership. */
static SSL_SESSION *psk_session(SSL *ssl)
{
	static const unsigned char suite[2] = {0x13, 0x01}; /* TLS_AES_128_GCM_SHA256 */
	const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, suite);
	SSL_SESSION *s = SSL_SESSION_new();

	if (s == NULL || cipher == NULL ||
	    !SSL_SESSION_set1_master_key(s, mchan_of(ssl)->psk, PSK_LEN) ||
	    !SSL_SESSION_set_cipher(s, cipher) ||
	    !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

static int psk_use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
			   SSL_SESSION **sess)
{
	/* after a HelloRetryRequest md is the hash the server chose; ours
	 * is SHA-256 only */
	if (md != NULL && EVP_MD_get_type(md) != NID_sha256) {
		*sess = NULL;
		return 1;
	}
	*sess = psk_session(ssl);
	if (*sess == NULL)
		return 0;
	*id = (const unsigned char *)PSK_IDENTITY;
	*idlen = strlen(PSK_IDENTITY);
	return 1;
}

static int psk_find_session(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	*sess = NULL;
	if (idlen != strlen(PSK_IDENTITY) || memcmp(id, PSK_IDENTITY, idlen) != 0)
		return 1; /* not ours: no PSK, and with no certificate, no handshake */
	mchan_of(ssl)->psk_offered = true;
	*sess = psk_session(ssl);
	return *sess ? 1 : 0;
}

/* The channel never authenticates with certificates: a server that
 * presents one did not use the token, so it is refused. */
static int refuse_certificate(int preverify_ok, X509_STORE_CTX *ctx)
{
	return 0;
}

static int mchan_new(int fd, bool server, const unsigned char *token, size_t token_len,
		     tern_mchan **out, tern_error **err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	tern_mchan *c = tern_xmalloc0(sizeof(*c));
	BIO *bio;
	int ret;

	c->fd = fd;
	c->send_timeout_ms = -1;
	*out = c; /* the caller frees it, with the fd, on any error */
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, c->peer_ip, sizeof(c->peer_ip), c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "(unknown peer)");
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, c->local_ip, sizeof(c->local_ip), NULL, 0);
	tune_socket(fd);

	ret = derive_psk(token, token_len, c->psk, err);
	if (ret < 0)
		return ret;

	c->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (c->ctx == NULL)
		goto ossl_fail;
	if (!SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(c->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(c->ctx, CIPHER_SUITE))
		goto ossl_fail;
	/* No tickets or resumption: each connection proves the token anew.
	 * SSL_OP_ALLOW_NO_DHE_KEX stays off: psk_dhe_ke only, so a recorded
	 * session stays secret even if the token leaks later. */
	SSL_CTX_set_options(c->ctx, SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_OFF);
	if (server) {
		SSL_CTX_set_num_tickets(c->ctx, 0);
		SSL_CTX_set_psk_find_session_callback(c->ctx, psk_find_session);
	} else {
		SSL_CTX_set_psk_use_session_callback(c->ctx, psk_use_session);
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, refuse_certificate);
	}
	c->ssl = SSL_new(c->ctx);
	if (c->ssl == NULL)
		goto ossl_fail;
	SSL_set_app_data(c->ssl, c);

	c->bio_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tern-mchan");
	if (c->bio_method == NULL || !BIO_meth_set_write(c->bio_method, bio_write) ||
	    !BIO_meth_set_read(c->bio_method, bio_read) ||
	    !BIO_meth_set_ctrl(c->bio_method, bio_ctrl))
		goto ossl_fail;
	bio = BIO_new(c->bio_method);
	if (bio == NULL)
		goto ossl_fail;
	BIO_set_data(bio, (void *)(intptr_t)fd);
	BIO_set_init(bio, 1);
	SSL_set_bio(c->ssl, bio, bio);
	if (server)
		SSL_set_accept_state(c->ssl);
	else
		SSL_set_connect_state(c->ssl);
	return 0;

ossl_fail:
	return tern_error_make_quiet(err, ENOMEM, "setting up TLS for %s: %s", c->peer,
				     tern_mchan_openssl_reason());
}

/* ---- TLS I/O with deadlines ---- */

enum tls_op { OP_HANDSHAKE, OP_READ, OP_WRITE };

#ifdef TERN_MCHAN_TESTING
/* A test channel without TLS (tern_mchan_test_plain): the frames straight
 * on the fd, with tls_do's results. */
static int plain_do(tern_mchan *c, enum tls_op op, void *buf, size_t len, size_t *done,
		    int64_t deadline, int *ssl_err, int *sys_errno)
{
	for (;;) {
		ssize_t n = op == OP_READ ? read(c->fd, buf, len) : write(c->fd, buf, len);

		if (n > 0) {
			*done = (size_t)n;
			if (op == OP_WRITE && (size_t)n < len) {
				buf = (char *)buf + n;
				len -= (size_t)n;
				continue;
			}
			return 1;
		}
		if (n == 0) {
			*ssl_err = SSL_ERROR_ZERO_RETURN;
			*sys_errno = 0;
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			int w = wait_fd(c->fd, op == OP_READ ? POLLIN : POLLOUT, deadline);
			if (w == -ETIMEDOUT)
				return 0;
			if (w == 0)
				continue;
			errno = -w;
		}
		*ssl_err = SSL_ERROR_SYSCALL;
		*sys_errno = errno;
		return -1;
	}
}
#endif

/* Run one OpenSSL operation until it completes or the deadline passes.
 * Returns 1 on success, 0 on timeout, or -1 with *ssl_err (the
 * SSL_get_error code) and *sys_errno set, the OpenSSL error queue left
 * for the caller to read. */
static int tls_do(tern_mchan *c, enum tls_op op, void *buf, size_t len, size_t *done,
		  int64_t deadline, int *ssl_err, int *sys_errno)
{
#ifdef TERN_MCHAN_TESTING
	if (c->ssl == NULL)
		return plain_do(c, op, buf, len, done, deadline, ssl_err, sys_errno);
#endif
	for (;;) {
		int r, e;

		ERR_clear_error();
		errno = 0;
		switch (op) {
		case OP_HANDSHAKE:
			r = SSL_do_handshake(c->ssl);
			break;
		case OP_READ:
			r = SSL_read_ex(c->ssl, buf, len, done);
			break;
		default:
			r = SSL_write_ex(c->ssl, buf, len, done);
			break;
		}
		if (r == 1)
			return 1;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			int w =
			    wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
			if (w == -ETIMEDOUT)
				return 0;
			if (w < 0) {
				*ssl_err = SSL_ERROR_SYSCALL;
				*sys_errno = -w;
				return -1;
			}
			continue;
		}
		*ssl_err = e;
		*sys_errno = errno;
		if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_SSL)
			c->broken = true;
		return -1;
	}
}

static bool peer_closed(int ssl_err, int sys_errno)
{
	if (ssl_err == SSL_ERROR_ZERO_RETURN)
		return true;
	/* a write after the peer's RST gives ECONNRESET once, then EPIPE: which
	 * one a sender sees depends on when the RST came, so both are a close */
	if (ssl_err == SSL_ERROR_SYSCALL &&
	    (sys_errno == 0 || sys_errno == ECONNRESET || sys_errno == EPIPE))
		return true;
	if (ssl_err == SSL_ERROR_SSL &&
	    ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return true;
	return false;
}

/* An error for a failed read or write after the handshake. */
static int io_error(tern_mchan *c, int ssl_err, int sys_errno, tern_error **err)
{
	if (peer_closed(ssl_err, sys_errno)) {
		ERR_clear_error();
		return tern_error_make_quiet(err, ECONNRESET,
					     "the peer at %s closed the connection", c->peer);
	}
	if (ssl_err == SSL_ERROR_SYSCALL)
		return tern_error_make(err, sys_errno, "the connection with %s", c->peer);
	return tern_error_make_quiet(err, EPROTO, "TLS error on the connection with %s: %s",
				     c->peer, tern_mchan_openssl_reason());
}

static int timeout_error(tern_mchan *c, const char *what, int timeout_ms, tern_error **err)
{
	return tern_error_make_quiet(err, ETIMEDOUT, "%s %s: no progress within %d ms", what,
				     c->peer, timeout_ms);
}

static int write_all(tern_mchan *c, const void *buf, size_t len, int64_t deadline, int timeout_ms,
		     tern_error **err)
{
	size_t done = 0;
	int ssl_err = 0, sys_errno = 0, r;

	if (c->broken)
		return tern_error_make_quiet(err, ECONNRESET,
					     "the connection with %s failed before", c->peer);
	if (len == 0)
		return 0;
	/* without SSL_MODE_ENABLE_PARTIAL_WRITE, success means all of it */
	r = tls_do(c, OP_WRITE, (void *)buf, len, &done, deadline, &ssl_err, &sys_errno);
	if (r == 0)
		return timeout_error(c, "sending to", timeout_ms, err);
	if (r < 0)
		return io_error(c, ssl_err, sys_errno, err);
	return 0;
}

/* Fill buf completely. *got tells how far it came on error. */
static int read_all(tern_mchan *c, void *buf, size_t len, size_t *got, int64_t deadline,
		    int timeout_ms, tern_error **err)
{
	int ssl_err = 0, sys_errno = 0;

	*got = 0;
	if (c->broken)
		return tern_error_make_quiet(err, ECONNRESET,
					     "the connection with %s failed before", c->peer);
	while (*got < len) {
		size_t n = 0;
		int r = tls_do(c, OP_READ, (char *)buf + *got, len - *got, &n, deadline, &ssl_err,
			       &sys_errno);
		if (r == 0)
			return timeout_error(c, "waiting for a message from", timeout_ms, err);
		if (r < 0)
			return io_error(c, ssl_err, sys_errno, err);
		*got += n;
	}
	return 0;
}

/* ---- messages ---- */

const char *tern_mchan_type_name(uint32_t type)
{
	switch (type) {
	case TERN_MSG_HELLO:
		return "HELLO";
	case TERN_MSG_ERROR:
		return "ERROR";
	case TERN_MSG_OFFER:
		return "OFFER";
	case TERN_MSG_ACCEPT:
		return "ACCEPT";
	case TERN_MSG_ROOTFS_MANIFEST:
		return "ROOTFS_MANIFEST";
	case TERN_MSG_ROOTFS_DATA:
		return "ROOTFS_DATA";
	case TERN_MSG_ROOTFS_DONE:
		return "ROOTFS_DONE";
	case TERN_MSG_IMAGE_FILE:
		return "IMAGE_FILE";
	case TERN_MSG_IMAGE_DATA:
		return "IMAGE_DATA";
	case TERN_MSG_IMAGES_DONE:
		return "IMAGES_DONE";
	case TERN_MSG_PAGE_SERVER:
		return "PAGE_SERVER";
	case TERN_MSG_RUNNING:
		return "RUNNING";
	case TERN_MSG_DONE:
		return "DONE";
	case TERN_MSG_PROGRESS:
		return "PROGRESS";
	}
	return "unknown";
}

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

static int send_until(tern_mchan *c, uint32_t type, const void *payload, size_t len, int timeout_ms,
		      tern_error **err)
{
	int64_t deadline = deadline_after(timeout_ms);
	unsigned char small[HEADER_LEN + 4096];
	unsigned char *h = small;
	int ret;

	if (len > MAX_PAYLOAD)
		return tern_error_make_quiet(err, EMSGSIZE,
					     "sending %s to %s: %zu bytes, more than the limit "
					     "of %u",
					     tern_mchan_type_name(type), c->peer, len, MAX_PAYLOAD);
	put_be(h, type, 4);
	put_be(h + 4, len, 8);
	/* a small message goes out as one TLS record (and one TCP segment) */
	if (len <= sizeof(small) - HEADER_LEN) {
		if (len > 0)
			memcpy(small + HEADER_LEN, payload, len);
		ret = write_all(c, small, HEADER_LEN + len, deadline, timeout_ms, err);
	} else {
		ret = write_all(c, h, HEADER_LEN, deadline, timeout_ms, err);
		if (ret == 0)
			ret = write_all(c, payload, len, deadline, timeout_ms, err);
	}
	if (ret < 0)
		return tern_error_wrap(err, "sending %s", tern_mchan_type_name(type));
	c->sent += len;
	return 0;
}

int tern_mchan_send(tern_mchan *c, uint32_t type, const void *payload, size_t len, tern_error **err)
{
	return send_until(c, type, payload, len, c->send_timeout_ms, err);
}

void tern_mchan_set_send_timeout(tern_mchan *c, int timeout_ms)
{
	c->send_timeout_ms = timeout_ms;
}

/* The peer's words go to our terminal and log: no control characters. */
static void sanitize_text(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = s[i] == '\n' || s[i] == '\t' ? ' ' : '?';
}

static int recv_msg(tern_mchan *c, uint32_t want, uint64_t max_len, uint32_t *type, char **payload,
		    size_t *len, int timeout_ms, tern_error **err)
{
	int64_t deadline = deadline_after(timeout_ms);
	unsigned char h[HEADER_LEN];
	cleanup_free char *buf = NULL;
	uint64_t n;
	uint32_t t;
	size_t got;
	int ret;

	if (c->out_of_step)
		return tern_error_make_quiet(err, EPROTO,
					     "the message stream from %s is out of step since an "
					     "earlier error",
					     c->peer);
	ret = read_all(c, h, sizeof(h), &got, deadline, timeout_ms, err);
	/* a timeout before the first byte loses nothing: the caller may
	 * wait again */
	if (ret < 0 && got > 0)
		c->out_of_step = true;
	if (ret == -ECONNRESET && got > 0)
		return tern_error_make_quiet(err, ECONNRESET,
					     "the peer at %s closed the connection in the middle "
					     "of a message header",
					     c->peer);
	if (ret < 0)
		return ret;
	t = (uint32_t)get_be(h, 4);
	n = get_be(h + 4, 8);
	if (n > max_len) {
		c->out_of_step = true;
		return tern_error_make_quiet(err, EPROTO,
					     "the peer at %s announced a %s message of %llu "
					     "bytes, more than the limit of %llu",
					     c->peer, tern_mchan_type_name(t),
					     (unsigned long long)n, (unsigned long long)max_len);
	}
	buf = malloc((size_t)n + 1);
	if (buf == NULL)
		return tern_error_make(err, ENOMEM, "receiving a %s message of %llu bytes from %s",
				       tern_mchan_type_name(t), (unsigned long long)n, c->peer);
	ret = read_all(c, buf, (size_t)n, &got, deadline, timeout_ms, err);
	if (ret < 0)
		c->out_of_step = true;
	if (ret == -ECONNRESET)
		return tern_error_make_quiet(err, ECONNRESET,
					     "the peer at %s closed the connection in the middle "
					     "of a message (%s, %zu of %llu bytes)",
					     c->peer, tern_mchan_type_name(t), got,
					     (unsigned long long)n);
	if (ret < 0)
		return ret;
	buf[n] = '\0';
	c->received += n;
	if (t == TERN_MSG_ERROR) {
		size_t shown = n > 4096 ? 4096 : (size_t)n;
		sanitize_text(buf, shown);
		return tern_error_make_quiet(err, ECONNABORTED, "the other side: %.*s", (int)shown,
					     buf);
	}
	if (want != 0 && t != want)
		return tern_error_make_quiet(
		    err, EPROTO, "protocol error: expected %s (%u) from %s, got %s (%u)",
		    tern_mchan_type_name(want), want, c->peer, tern_mchan_type_name(t), t);
	if (type)
		*type = t;
	if (len)
		*len = (size_t)n;
	*payload = steal_pointer(&buf);
	return 0;
}

int tern_mchan_recv(tern_mchan *c, uint32_t want, uint32_t *type, char **payload, size_t *len,
		    int timeout_ms, tern_error **err)
{
	return recv_msg(c, want, MAX_PAYLOAD, type, payload, len, timeout_ms, err);
}

void tern_mchan_send_error(tern_mchan *c, const tern_error *why)
{
	const char *text = why && why->msg ? why->msg : "unknown error";

	if (c == NULL || c->broken)
		return;
	send_until(c, TERN_MSG_ERROR, text, strlen(text), SEND_ERROR_TIMEOUT_MS, NULL);
}

/* "/path" of an fd for messages, or "fd N". */
static void fd_name(int fd, char *out, size_t outlen)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, outlen - 1);
	if (n <= 0)
		snprintf(out, outlen, "fd %d", fd);
	else
		out[n] = '\0';
}

int tern_mchan_send_fd(tern_mchan *c, uint32_t type, int fd, uint64_t size, tern_error **err)
{
	cleanup_free char *buf = NULL;
	uint64_t done = 0;
	char name[PATH_MAX];

	if (size == 0)
		return 0;
	buf = tern_xmalloc0(size < CHUNK ? (size_t)size : CHUNK);
	while (done < size) {
		size_t want = size - done < CHUNK ? (size_t)(size - done) : CHUNK;
		size_t fill = 0;
		int ret;

		while (fill < want) {
			ssize_t r = read(fd, buf + fill, want - fill);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				int e = errno;
				fd_name(fd, name, sizeof(name));
				if (r < 0)
					return tern_error_make(err, e, "reading `%s`", name);
				return tern_error_make_quiet(
				    err, EIO, "`%s` ended after %llu of %llu bytes", name,
				    (unsigned long long)(done + fill), (unsigned long long)size);
			}
			fill += (size_t)r;
		}
		ret = tern_mchan_send(c, type, buf, want, err);
		if (ret < 0)
			return ret;
		done += want;
	}
	return 0;
}

/* ---- HELLO ---- */

static bool valid_role(const char *role)
{
	return role && (strcmp(role, "source") == 0 || strcmp(role, "target") == 0);
}

/* Both sides send HELLO first and then read the other's, so neither waits
 * for the other to speak. */
static int exchange_hello(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
			  tern_error **err)
{
	static const char *magic_path[] = {"magic", NULL};
	static const char *version_path[] = {"version", NULL};
	static const char *role_path[] = {"role", NULL};
	cleanup_free char *mine = NULL, *theirs = NULL;
	char parse_err[128] = "";
	const char *peer_magic, *peer_role;
	yajl_val tree, v;
	long long peer_version;
	int ret, left;

	mine = tern_strdup_printf("{\"magic\":\"%s\",\"version\":%d,\"role\":\"%s\"}", hello_magic,
				  hello_version, role);
	left = deadline < 0 ? -1 : (int)(deadline > now_ms() ? deadline - now_ms() : 0);
	ret = send_until(c, TERN_MSG_HELLO, mine, strlen(mine), left, err);
	if (ret < 0)
		return ret;
	left = deadline < 0 ? -1 : (int)(deadline > now_ms() ? deadline - now_ms() : 0);
	/* (the peer holds the token, yet a HELLO is small: nothing bigger is
	 * allocated for it) */
	ret = recv_msg(c, TERN_MSG_HELLO, HELLO_MAX, NULL, &theirs, NULL, left, err);
	if (ret < 0)
		return ret;

	tree = yajl_tree_parse(theirs, parse_err, sizeof(parse_err));
	v = tree ? yajl_tree_get(tree, magic_path, yajl_t_string) : NULL;
	peer_magic = v ? YAJL_GET_STRING(v) : NULL;
	if (peer_magic == NULL || strcmp(peer_magic, HELLO_MAGIC) != 0) {
		yajl_tree_free(tree);
		return tern_error_make_quiet(err, EPROTO,
					     "the peer at %s is not tern migrate: its HELLO lacks "
					     "the magic \"%s\"",
					     c->peer, HELLO_MAGIC);
	}
	v = yajl_tree_get(tree, version_path, yajl_t_number);
	if (v == NULL || !YAJL_IS_INTEGER(v)) {
		yajl_tree_free(tree);
		return tern_error_make_quiet(err, EPROTO,
					     "the peer at %s sent a HELLO without a protocol "
					     "version",
					     c->peer);
	}
	peer_version = YAJL_GET_INTEGER(v);
	if (peer_version != hello_version) {
		yajl_tree_free(tree);
		return tern_error_make_quiet(err, EPROTONOSUPPORT,
					     "the peer at %s speaks tern migration protocol "
					     "version %lld, this tern speaks version %d",
					     c->peer, peer_version, hello_version);
	}
	v = yajl_tree_get(tree, role_path, yajl_t_string);
	peer_role = v ? YAJL_GET_STRING(v) : NULL;
	if (!valid_role(peer_role) || strcmp(peer_role, role) == 0) {
		ret = tern_error_make_quiet(err, EPROTO,
					    "the peer at %s has the role `%s`, this side is the "
					    "%s: a migration joins a source and a target",
					    c->peer, peer_role ? peer_role : "(none)", role);
		yajl_tree_free(tree);
		return ret;
	}
	yajl_tree_free(tree);
	return 0;
}

/* ---- handshake ---- */

static int handshake_error(tern_mchan *c, bool server, int ssl_err, int sys_errno, tern_error **err)
{
	unsigned long e = ERR_peek_last_error();
	int reason = ERR_GET_REASON(e);

	/* The server checks the client's PSK binder; the client learns of a
	 * mismatch from the server's alert: illegal_parameter from OpenSSL 3,
	 * decrypt_error as RFC 8446 section 6.2 would have it. */
	if (reason == SSL_R_BINDER_DOES_NOT_VERIFY || reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR ||
	    (!server && reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER)) {
		ERR_clear_error();
		return tern_error_make_quiet(err, EACCES,
					     "authentication failed: the peer at %s does not hold "
					     "the same token (or is not tern migrate)",
					     c->peer);
	}
	if (server && !c->psk_offered && peer_closed(ssl_err, sys_errno)) {
		/* a port scan, or a client that gave up */
		ERR_clear_error();
		return tern_error_make_quiet(err, ECONNRESET,
					     "the peer at %s is not tern migrate: it closed the "
					     "connection during the TLS handshake without offering "
					     "the migration key",
					     c->peer);
	}
	if (server && !c->psk_offered) {
		const char *why =
		    ssl_err == SSL_ERROR_SSL ? tern_mchan_openssl_reason() : "no TLS 1.3 PSK";
		return tern_error_make_quiet(err, EPROTO,
					     "the peer at %s is not tern migrate: it did not offer "
					     "the migration key (%s)",
					     c->peer, why);
	}
	if (!server && reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		ERR_clear_error();
		return tern_error_make_quiet(err, EPROTO,
					     "the peer at %s is not tern migrate: it answered with "
					     "a certificate instead of the migration key",
					     c->peer);
	}
	if (peer_closed(ssl_err, sys_errno)) {
		ERR_clear_error();
		return tern_error_make_quiet(err, ECONNRESET,
					     "the peer at %s closed the connection during the TLS "
					     "handshake (is it tern migrate, with the same token?)",
					     c->peer);
	}
	if (ssl_err == SSL_ERROR_SYSCALL)
		return tern_error_make(err, sys_errno, "TLS handshake with %s", c->peer);
	return tern_error_make_quiet(err, EPROTO,
				     "TLS handshake with %s failed: %s (is it tern migrate?)",
				     c->peer, tern_mchan_openssl_reason());
}

/* What follows a completed TLS handshake: check it used the key, HELLO. */
static int after_handshake(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
			   tern_error **err)
{
	int r;

	explicit_bzero(c->psk, sizeof(c->psk));
	/* Belt and braces: the handshake must have used the PSK. The client
	 * refuses certificates and the server has none, so this holds, but
	 * it is the property everything rests on. */
	if (!SSL_session_reused(c->ssl)) {
		c->broken = true;
		return tern_error_make_quiet(err, EPROTO,
					     "the TLS handshake with %s did not use the migration "
					     "key",
					     c->peer);
	}
	r = exchange_hello(c, role, deadline, timeout_ms, err);
	if (r < 0)
		return r;
	/* the counters are the caller's: from its first message on */
	c->sent = c->received = 0;
	tern_debug("migration channel with %s: TLS 1.3 %s, protocol version %d", c->peer,
		   SSL_get_cipher_name(c->ssl), TERN_MIGRATE_PROTO_VERSION);
	return 0;
}

static int handshake_and_hello(tern_mchan *c, bool server, const char *role, int64_t deadline,
			       int timeout_ms, tern_error **err)
{
	int ssl_err = 0, sys_errno = 0;
	int r = tls_do(c, OP_HANDSHAKE, NULL, 0, NULL, deadline, &ssl_err, &sys_errno);

	if (r == 0)
		return timeout_error(c, "TLS handshake with", timeout_ms, err);
	if (r < 0)
		return handshake_error(c, server, ssl_err, sys_errno, err);
	return after_handshake(c, role, deadline, timeout_ms, err);
}

/* One step of the server's handshake, never waiting: 1 when it is done,
 * 0 when it waits for *events on the socket, or an error (negative). */
static int handshake_step(tern_mchan *c, short *events, tern_error **err)
{
	int r, e, sys_errno;

	ERR_clear_error();
	errno = 0;
	r = SSL_do_handshake(c->ssl);
	if (r == 1)
		return 1;
	e = SSL_get_error(c->ssl, r);
	sys_errno = errno;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 0;
	}
	if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_SSL)
		c->broken = true;
	return handshake_error(c, true, e, sys_errno, err);
}

/* ---- listen, accept, connect ---- */

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
	if (!valid_role(role))
		return tern_error_make_quiet(err, EINVAL,
					     "migration role `%s`: expected source or target",
					     role ? role : "(null)");
	return 0;
}

int tern_mchan_accept(int lfd, const unsigned char *token, size_t token_len, const char *role,
		      int timeout_ms, tern_mchan **out, tern_error **err)
{
	int64_t deadline = deadline_after(timeout_ms);
	cleanup_mchan tern_mchan *c = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char where[INET6_ADDRSTRLEN + 8] = "?", ip[INET6_ADDRSTRLEN];
	int fd, ret;

	ret = check_args(token, token_len, role, err);
	if (ret < 0)
		return ret;
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, ip, sizeof(ip), where, sizeof(where));
	for (;;) {
		ret = wait_fd(lfd, POLLIN, deadline);
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
	ret = handshake_and_hello(c, true, role, deadline, timeout_ms, err);
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
		timeout_error(p->c, "TLS handshake with", o->handshake_timeout_ms, &e);
		refuse_peer(o, p, e, failed);
		return false;
	}
	r = handshake_step(p->c, &p->events, &e);
	if (r == 0)
		return false;
	/* The token is proved: only now is anything the peer sends read as
	 * ours, and the HELLO is bounded by the same deadline. */
	if (r > 0)
		r = after_handshake(p->c, role, p->deadline, o->handshake_timeout_ms, &e);
	if (r == 0)
		return true;
	refuse_peer(o, p, e, failed);
	return false;
}

/* Take one new connection from lfd into p: 1 taken, 0 none after all. */
static int take_peer(int lfd, const unsigned char *token, size_t token_len, int64_t deadline,
		     int handshake_timeout_ms, pending_peer *p, const char *where, tern_error **err)
{
	int64_t mine = now_ms() + handshake_timeout_ms;
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
	int64_t deadline = deadline_after(o->timeout_ms);
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
		format_addr(&ss, ip, sizeof(ip), where, sizeof(where));
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
			int64_t left = wake - now_ms();
			timeout = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
		}
		n = poll(pfd, np + 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = tern_error_make(err, errno, "waiting for a connection on %s", where);
			break;
		}
		now = now_ms();
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
	int64_t deadline = deadline_after(timeout_ms);
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
		ret = wait_fd(fd, POLLOUT, deadline);
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
	ret = handshake_and_hello(c, false, role, deadline, timeout_ms, err);
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

void tern_mchan_free(tern_mchan *c)
{
	if (c == NULL)
		return;
	if (c->ssl) {
		/* close_notify, best effort and without waiting: the peer
		 * then sees a clean end rather than a truncation */
		if (!c->broken && SSL_is_init_finished(c->ssl))
			SSL_shutdown(c->ssl);
		SSL_free(c->ssl); /* frees the BIO too */
	}
	SSL_CTX_free(c->ctx);
	BIO_meth_free(c->bio_method);
	ERR_clear_error();
	if (c->fd >= 0)
		close(c->fd);
	explicit_bzero(c->psk, sizeof(c->psk));
	free(c);
}

void tern_mchan_freep(tern_mchan **c)
{
	tern_mchan_free(*c);
	*c = NULL;
}

/* ---- test hooks (built only into the unit test) ---- */

#ifdef TERN_MCHAN_TESTING
void tern_mchan_test_set_hello(int version, const char *magic)
{
	hello_version = version;
	hello_magic = magic ? magic : HELLO_MAGIC;
}

int tern_mchan_test_plain(int fd, tern_mchan **out)
{
	tern_mchan *c = tern_xmalloc0(sizeof(*c));

	c->fd = fd;
	c->send_timeout_ms = -1;
	snprintf(c->peer, sizeof(c->peer), "(test peer)");
	*out = c;
	return 0;
}

int tern_mchan_test_hello(tern_mchan *c, const char *role, tern_error **err)
{
	return exchange_hello(c, role, -1, -1, err);
}

int tern_mchan_test_send_raw(tern_mchan *c, const void *buf, size_t len, tern_error **err)
{
	return write_all(c, buf, len, -1, -1, err);
}
#endif
