/* The TLS of the migration channel: the key derived from the token, the
 * OpenSSL context with its PSK callbacks and our own socket BIO, I/O with
 * deadlines, the handshake and its errors, and the teardown. Kept apart
 * from the connections (migrate-channel.c) and the messages
 * (migrate-channel-msg.c) so that the security-critical part reads on its
 * own. */
#include "migrate-channel.h"
#include "migrate-channel-internal.h"

#include "log.h"
#include "utils.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>

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

int mchan_new(int fd, bool server, const unsigned char *token, size_t token_len, tern_mchan **out,
	      tern_error **err)
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
		mchan_format_addr(&ss, c->peer_ip, sizeof(c->peer_ip), c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "(unknown peer)");
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		mchan_format_addr(&ss, c->local_ip, sizeof(c->local_ip), NULL, 0);
	mchan_tune_socket(fd);

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
			int w = mchan_wait_fd(c->fd, op == OP_READ ? POLLIN : POLLOUT, deadline);
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
			int w = mchan_wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
					      deadline);
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

int mchan_timeout_error(tern_mchan *c, const char *what, int timeout_ms, tern_error **err)
{
	return tern_error_make_quiet(err, ETIMEDOUT, "%s %s: no progress within %d ms", what,
				     c->peer, timeout_ms);
}

int mchan_write_all(tern_mchan *c, const void *buf, size_t len, int64_t deadline, int timeout_ms,
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
		return mchan_timeout_error(c, "sending to", timeout_ms, err);
	if (r < 0)
		return io_error(c, ssl_err, sys_errno, err);
	return 0;
}

/* Fill buf completely. *got tells how far it came on error. */
int mchan_read_all(tern_mchan *c, void *buf, size_t len, size_t *got, int64_t deadline,
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
			return mchan_timeout_error(c, "waiting for a message from", timeout_ms,
						   err);
		if (r < 0)
			return io_error(c, ssl_err, sys_errno, err);
		*got += n;
	}
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
int mchan_after_handshake(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
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
	r = mchan_exchange_hello(c, role, deadline, timeout_ms, err);
	if (r < 0)
		return r;
	/* the counters are the caller's: from its first message on */
	c->sent = c->received = 0;
	tern_debug("migration channel with %s: TLS 1.3 %s, protocol version %d", c->peer,
		   SSL_get_cipher_name(c->ssl), TERN_MIGRATE_PROTO_VERSION);
	return 0;
}

int mchan_handshake_and_hello(tern_mchan *c, bool server, const char *role, int64_t deadline,
			      int timeout_ms, tern_error **err)
{
	int ssl_err = 0, sys_errno = 0;
	int r = tls_do(c, OP_HANDSHAKE, NULL, 0, NULL, deadline, &ssl_err, &sys_errno);

	if (r == 0)
		return mchan_timeout_error(c, "TLS handshake with", timeout_ms, err);
	if (r < 0)
		return handshake_error(c, server, ssl_err, sys_errno, err);
	return mchan_after_handshake(c, role, deadline, timeout_ms, err);
}

/* One step of the server's handshake, never waiting: 1 when it is done,
 * 0 when it waits for *events on the socket, or an error (negative). */
int mchan_handshake_step(tern_mchan *c, short *events, tern_error **err)
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
