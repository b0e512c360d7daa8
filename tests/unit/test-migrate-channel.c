/* The migration control channel over real loopback TCP: a forked child is
 * the peer (a tern of this build, or something that is not tern), and
 * reports the error it saw, if any, through a pipe. */
#include "tap.h"

#include "error.h"
#include "migrate-channel.h"
#include "migrate.h"
#include "utils.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const unsigned char token[] = "a-random-enough-test-token-0123456789";
static const unsigned char other_token[] = "some-other-token-that-does-not-match";
#define TOKEN_LEN (sizeof(token) - 1)
#define TIMEOUT	  10000

static char tmpdir[] = "/tmp/tern-test-mchan-XXXXXX";
static int port;

/* ---- the peer in a child ---- */

typedef void (*peer_fn)(int report, int go);

struct peer {
	pid_t pid;
	int report; /* what the child saw: "ok" or its error message */
	int go;	    /* the parent's signal to go on, where a test needs one */
};

static void report(int fd, int ret, tern_error *err)
{
	const char *msg = ret == 0 ? "ok" : err && err->msg ? err->msg : "(no message)";

	tern_write_all(fd, msg, strlen(msg));
}

static struct peer spawn_peer(peer_fn fn)
{
	int rep[2], go[2];
	struct peer p;

	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
		abort();
	p.pid = fork();
	if (p.pid == 0) {
		/* the peers' raw sockets may write to a closed connection */
		signal(SIGPIPE, SIG_IGN);
		close(rep[0]);
		close(go[1]);
		fn(rep[1], go[0]);
		_exit(0);
	}
	close(rep[1]);
	close(go[0]);
	p.report = rep[0];
	p.go = go[1];
	return p;
}

/* Reap the peer; its report, malloc'd. */
static char *peer_finish(struct peer *p)
{
	char *out = NULL;
	size_t len = 0;
	int status;

	close(p->go);
	if (tern_read_fd_all(p->report, &out, &len, 0) < 0)
		out = tern_xstrdup("(no report)");
	close(p->report);
	waitpid(p->pid, &status, 0);
	return out;
}

static void wait_go(int go)
{
	char c;

	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
}

static bool use_ipv6;

static char *addr(void)
{
	return tern_strdup_printf(use_ipv6 ? "[::1]:%d" : "127.0.0.1:%d", port);
}

static int listen_any(void)
{
	tern_error *err = NULL;
	int lfd = tern_mchan_listen("127.0.0.1:0", &port, &err);

	if (lfd < 0) {
		printf("Bail out! listen: %s\n", err->msg);
		exit(1);
	}
	return lfd;
}

static void drop(char **p)
{
	free(*p);
	*p = NULL;
}

static bool contains(const char *s, const char *part)
{
	bool found = s && strstr(s, part) != NULL;

	if (!found)
		printf("#   `%s`\n#   does not contain `%s`\n", s ? s : "(null)", part);
	return found;
}

static int64_t elapsed_ms(const struct timespec *from)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - from->tv_sec) * 1000 + (now.tv_nsec - from->tv_nsec) / 1000000;
}

/* ---- right token: messages both ways ---- */

#define BIG_SIZE (3 * (1u << 20) + 12345)

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static char *big_file(void)
{
	char *path = tern_strdup_printf("%s/big", tmpdir);
	unsigned char *data = malloc(BIG_SIZE);

	for (size_t i = 0; i < BIG_SIZE; i++)
		data[i] = pattern(i);
	tern_write_file(path, (char *)data, BIG_SIZE, 0600, NULL);
	free(data);
	return path;
}

static void source_session(int rep, int go)
{
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_free char *a = addr(), *path = big_file(), *accept = NULL;
	tern_error *err = NULL;
	cleanup_close int fd = -1;
	uint64_t sent;
	int ret;

	ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);
	if (ret == 0)
		ret = tern_mchan_send(c, TERN_MSG_OFFER, "{\"id\":\"c1\"}", 11, &err);
	if (ret == 0)
		ret = tern_mchan_send(c, TERN_MSG_PROGRESS, NULL, 0, &err);
	if (ret == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ret = tern_mchan_send_fd(c, TERN_MSG_IMAGE_DATA, fd, BIG_SIZE, &err);
	}
	if (ret == 0)
		ret = tern_mchan_recv(c, TERN_MSG_ACCEPT, NULL, &accept, NULL, TIMEOUT, &err);
	sent = c ? tern_mchan_bytes_sent(c) : 0;
	if (ret == 0 && (sent != 11 + BIG_SIZE || tern_mchan_bytes_received(c) != 2 ||
			 strcmp(accept, "{}") != 0 || strcmp(tern_mchan_peer_ip(c), "127.0.0.1")))
		ret = tern_error_make_quiet(&err, EINVAL, "source: sent %llu, accept `%s`",
					    (unsigned long long)sent, accept);
	if (ret == 0)
		ret = tern_mchan_send(c, TERN_MSG_DONE, "{}", 2, &err);
	report(rep, ret, err);
	tern_error_free(err);
}

static void test_session(void)
{
	cleanup_close int lfd = listen_any();
	cleanup_mchan tern_mchan *c = NULL;
	tern_error *err = NULL;
	struct peer p = spawn_peer(source_session);
	char *payload = NULL, *rep;
	size_t len = 0, total = 0;
	uint32_t type = 0;
	int ret, chunks = 0;
	bool same = true, small = true;

	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	is_int(ret, 0, "target accepts the source with the right token");
	if (ret < 0) {
		printf("#   %s\n", err->msg);
		free(peer_finish(&p));
		tern_error_free(err);
		return;
	}
	is_str(tern_mchan_peer_ip(c), "127.0.0.1", "peer ip");
	is_str(tern_mchan_local_ip(c), "127.0.0.1", "local ip");

	ret = tern_mchan_recv(c, 0, &type, &payload, &len, TIMEOUT, &err);
	ok(ret == 0 && type == TERN_MSG_OFFER && len == 11, "OFFER arrives");
	is_str(payload, "{\"id\":\"c1\"}", "OFFER payload, NUL-terminated");
	drop(&payload);

	ret = tern_mchan_recv(c, TERN_MSG_PROGRESS, &type, &payload, &len, TIMEOUT, &err);
	ok(ret == 0 && len == 0 && payload && payload[0] == '\0', "an empty message arrives");
	drop(&payload);

	/* > 1 MiB through send_fd: chunks of at most 1 MiB, bytes intact */
	while (total < BIG_SIZE) {
		ret = tern_mchan_recv(c, TERN_MSG_IMAGE_DATA, NULL, &payload, &len, TIMEOUT, &err);
		if (ret < 0) {
			printf("#   %s\n", err->msg);
			same = false;
			break;
		}
		chunks++;
		small = small && len <= (1u << 20);
		for (size_t i = 0; i < len && same; i++)
			same = (unsigned char)payload[i] == pattern(total + i);
		total += len;
		drop(&payload);
	}
	is_int(total, BIG_SIZE, "send_fd: every byte of the 3 MiB file arrives");
	is_int(chunks, 4, "send_fd: in 4 chunks");
	ok(small, "send_fd: no chunk over 1 MiB");
	ok(same, "send_fd: the bytes are the file's");

	ret = tern_mchan_send(c, TERN_MSG_ACCEPT, "{}", 2, &err);
	is_int(ret, 0, "target answers ACCEPT");
	ret = tern_mchan_recv(c, TERN_MSG_DONE, NULL, &payload, &len, TIMEOUT, &err);
	is_int(ret, 0, "DONE arrives");
	if (ret < 0)
		printf("#   %s\n", err->msg);
	drop(&payload);
	is_int(tern_mchan_bytes_received(c), 11 + BIG_SIZE + 2, "bytes received counts payloads");
	is_int(tern_mchan_bytes_sent(c), 2, "bytes sent counts payloads");

	/* the source freed its channel: a clean close at a message boundary */
	ret = tern_mchan_recv(c, 0, NULL, &payload, &len, TIMEOUT, &err);
	is_int(ret, -ECONNRESET, "the peer's close is ECONNRESET");
	ok(ret < 0 && contains(err->msg, "the peer at 127.0.0.1:") &&
	       contains(err->msg, "closed the connection"),
	   "and names the peer");
	rep = peer_finish(&p);
	is_str(rep, "ok", "source side: counters, ACCEPT and its payload");
	free(rep);
	tern_error_free(err);
}

/* ---- the wire format, against a stock TLS client ---- */

/* HKDF-SHA256(key "spec-check-token-0123456789abcdef", info "tern-migrate v1
 * psk", 32 bytes), computed with `openssl kdf` from the description in
 * tern-migrate-protocol(7), not with our code: a change of the derivation
 * breaks this test. */
#define SPEC_TOKEN "spec-check-token-0123456789abcdef"
#define SPEC_PSK   "11F59D528002F342959DCABF2452BE9F3B8E63FF41181815A5B118EE588A1BD4"

static void frame(char **buf, size_t *len, uint32_t type, const char *payload)
{
	size_t n = strlen(payload);

	*buf = realloc(*buf, *len + 12 + n);
	for (int i = 0; i < 4; i++)
		(*buf)[*len + i] = (char)(type >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		(*buf)[*len + 4 + i] = (char)((uint64_t)n >> (56 - 8 * i));
	memcpy(*buf + *len + 12, payload, n);
	*len += 12 + n;
}

static void openssl_s_client(int rep, int go)
{
	char *frames = NULL, connect_to[32];
	size_t len = 0;
	int in[2], null = open("/dev/null", O_RDWR | O_CLOEXEC);

	char *hello = tern_strdup_printf(
	    "{\"magic\":\"tern-migrate\",\"version\":%d,\"role\":\"source\",\"extra\":true}",
	    TERN_MIGRATE_PROTO_VERSION);
	frame(&frames, &len, TERN_MSG_HELLO, hello);
	free(hello);
	frame(&frames, &len, TERN_MSG_OFFER, "{\"id\":\"stock\"}");
	if (pipe(in) < 0 || tern_write_all(in[1], frames, len) < 0)
		_exit(1);
	close(in[1]);
	dup2(in[0], 0);
	dup2(null, 1);
	dup2(null, 2);
	snprintf(connect_to, sizeof(connect_to), "127.0.0.1:%d", port);
	/* -quiet implies -ign_eof: it stays connected after its stdin ends */
	execlp("openssl", "openssl", "s_client", "-tls1_3", "-psk", SPEC_PSK, "-psk_identity",
	       "tern-migrate", "-ciphersuites", "TLS_AES_128_GCM_SHA256", "-connect", connect_to,
	       "-quiet", (char *)NULL);
	_exit(127);
}

static void test_stock_client(void)
{
	cleanup_close int lfd = -1;
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	char *payload = NULL;
	size_t len = 0;
	struct peer p;
	int ret;

	if (system("openssl version >/dev/null 2>&1") != 0) {
		ok(1, "# SKIP no openssl command");
		return;
	}
	lfd = listen_any();
	p = spawn_peer(openssl_s_client);
	ret = tern_mchan_accept(lfd, (const unsigned char *)SPEC_TOKEN, strlen(SPEC_TOKEN),
				"target", TIMEOUT, &c, &err);
	is_int(ret, 0, "openssl s_client with the PSK from the man page joins, HELLO and all");
	if (ret < 0)
		printf("#   %s\n", err->msg);
	ret = ret ?: tern_mchan_recv(c, TERN_MSG_OFFER, NULL, &payload, &len, TIMEOUT, &err);
	is_str(ret == 0 ? payload : NULL, "{\"id\":\"stock\"}", "and its framed OFFER arrives");
	drop(&payload);
	tern_mchan_freep(&c);
	kill(p.pid, SIGTERM);
	free(peer_finish(&p));
	tern_error_free(err);
}

/* ---- refusals at connection time ---- */

static const unsigned char *child_token = token;
static const char *child_role = "source";

static void plain_source(int rep, int go)
{
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	int ret = tern_mchan_connect(a, child_token, TOKEN_LEN, child_role, TIMEOUT, &c, &err);

	report(rep, ret, err);
	tern_error_free(err);
}

/* Accept with the parent's token and role "target"; the child's report. */
static int accept_against(peer_fn fn, char **mine, char **theirs)
{
	cleanup_close int lfd = listen_any();
	cleanup_mchan tern_mchan *c = NULL;
	tern_error *err = NULL;
	struct peer p = spawn_peer(fn);
	int ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);

	*mine = tern_xstrdup(ret < 0 ? err->msg : "ok");
	tern_mchan_freep(&c);
	*theirs = peer_finish(&p);
	tern_error_free(err);
	return ret;
}

static void test_wrong_token(void)
{
	char *mine, *theirs, *want;
	int ret;

	child_token = other_token;
	ret = accept_against(plain_source, &mine, &theirs);
	child_token = token;
	is_int(ret, -EACCES, "wrong token: the target refuses");
	ok(contains(mine, "authentication failed: the peer at 127.0.0.1:") &&
	       contains(mine, "does not hold the same token (or is not tern migrate)"),
	   "wrong token: the target says so");
	want = tern_strdup_printf("authentication failed: the peer at 127.0.0.1:%d does not hold "
				  "the same token (or is not tern migrate)",
				  port);
	is_str(theirs, want, "wrong token: the source says so, naming the target");
	free(want);
	free(mine);
	free(theirs);
}

/* a source of the next protocol version */
static void next_source(int rep, int go)
{
	tern_mchan_test_set_hello(TERN_MIGRATE_PROTO_VERSION + 1, NULL);
	plain_source(rep, go);
}

static void bad_magic_source(int rep, int go)
{
	tern_mchan_test_set_hello(TERN_MIGRATE_PROTO_VERSION, "not-tern");
	plain_source(rep, go);
}

static void test_hello_refusals(void)
{
	char *mine, *theirs;
	int ret;

	ret = accept_against(next_source, &mine, &theirs);
	is_int(ret, -EPROTONOSUPPORT, "another protocol version is refused");
	char *want_mine = tern_strdup_printf(
	    "speaks tern migration protocol version %d, this tern speaks version %d",
	    TERN_MIGRATE_PROTO_VERSION + 1, TERN_MIGRATE_PROTO_VERSION);
	char *want_theirs = tern_strdup_printf(
	    "speaks tern migration protocol version %d, this tern speaks version %d",
	    TERN_MIGRATE_PROTO_VERSION, TERN_MIGRATE_PROTO_VERSION + 1);
	ok(contains(mine, want_mine), "version: this side names both versions");
	ok(contains(theirs, want_theirs),
	   "version: the other side names both versions too");
	free(want_mine);
	free(want_theirs);
	free(mine);
	free(theirs);

	ret = accept_against(bad_magic_source, &mine, &theirs);
	is_int(ret, -EPROTO, "a HELLO without the magic is refused");
	ok(contains(mine, "is not tern migrate: its HELLO lacks the magic"), "and says so");
	free(mine);
	free(theirs);

	child_role = "target";
	ret = accept_against(plain_source, &mine, &theirs);
	child_role = "source";
	is_int(ret, -EPROTO, "two targets are refused");
	ok(contains(mine, "has the role `target`, this side is the target"), "naming the roles");
	free(mine);
	free(theirs);
}

static int tcp_connect(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		abort();
	return fd;
}

static void garbage_client(int rep, int go)
{
	int fd = tcp_connect();
	static const char req[] = "GET / HTTP/1.0\r\n\r\n";

	tern_write_all(fd, req, sizeof(req) - 1);
	wait_go(go);
	close(fd);
}

static void tls_client(int rep, int go)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	int fd = tcp_connect();

	SSL_set_fd(ssl, fd);
	report(rep, SSL_connect(ssl) == 1 ? 0 : -1, NULL);
	wait_go(go);
}

static void silent_client(int rep, int go)
{
	int fd = tcp_connect();

	wait_go(go);
	close(fd);
}

/* Strangers first, all from one process in order: a silent connection
 * held open, garbage, a wrong token; then the source. */
static void crowd_source(int rep, int go)
{
	cleanup_close int silent = tcp_connect();
	cleanup_close int garbage = tcp_connect();
	cleanup_free char *a = addr();
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	int ret;

	tern_write_all(garbage, "GET / HTTP/1.0\r\n\r\n", 18);
	ret = tern_mchan_connect(a, other_token, TOKEN_LEN, "source", TIMEOUT, &c, &err);
	tern_mchan_freep(&c);
	tern_error_free(err);
	err = NULL;
	if (ret == 0) {
		report(rep, -1, NULL);
		return;
	}
	ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);
	report(rep, ret, err);
	tern_error_free(err);
	wait_go(go);
	tern_mchan_freep(&c);
}

/* (one child: a second would inherit the first one's pipes) */
static void two_silent_clients(int rep, int go)
{
	cleanup_close int a = tcp_connect();
	cleanup_close int b = tcp_connect();

	wait_go(go);
}

struct refusals {
	int n;
	bool silent_timed_out;
	char text[2048];
};

static void count_refused(void *arg, const char *peer, const tern_error *why)
{
	struct refusals *r = arg;
	size_t len = strlen(r->text);

	r->n++;
	if (contains(why->msg, "no progress within"))
		r->silent_timed_out = true;
	snprintf(r->text + len, sizeof(r->text) - len, "%s: %s; ", peer, why->msg);
}

static void test_accept_peers(void)
{
	cleanup_close int lfd = listen_any();
	cleanup_mchan tern_mchan *c = NULL;
	struct refusals r = {0};
	tern_mchan_accept_opts o = {.timeout_ms = TIMEOUT,
				    .handshake_timeout_ms = 8000,
				    .max_failed = 16,
				    .refused = count_refused,
				    .arg = &r};
	tern_error *err = NULL;
	struct timespec t0;
	struct peer p;
	char *rep;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = spawn_peer(crowd_source);
	ret = tern_mchan_accept_peers(lfd, token, TOKEN_LEN, "target", &o, &c, &err);
	ok(ret == 0, "strangers before the source: the source gets through (%s)",
	   ret < 0 ? err->msg : "ok");
	ok(elapsed_ms(&t0) < 8000, "while the silent one still waits for its deadline");
	is_int(r.n, 2, "the garbage and the wrong token were refused: %s", r.text);
	ok(contains(r.text, "authentication failed") && contains(r.text, "127.0.0.1:"),
	   "each named, with why");
	ok(!r.silent_timed_out, "the silent one did not hold the source up");
	tern_error_free(err);
	err = NULL;
	rep = peer_finish(&p);
	is_str(rep, "ok", "and the source's side agrees");
	free(rep);
	tern_mchan_freep(&c);

	/* the limit: two silent connections, a short deadline */
	memset(&r, 0, sizeof(r));
	o.handshake_timeout_ms = 200;
	o.max_failed = 2;
	p = spawn_peer(two_silent_clients);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = tern_mchan_accept_peers(lfd, token, TOKEN_LEN, "target", &o, &c, &err);
	is_int(ret, -ECONNREFUSED, "two silent peers with --max-failed-peers 2: it gives up");
	ok(ret < 0 && contains(err->msg, "after 2 refused connections"), "saying so");
	ok(r.silent_timed_out && elapsed_ms(&t0) < 3000, "each at its handshake deadline");
	tern_error_free(err);
	free(peer_finish(&p));
}

static void test_not_tern_clients(void)
{
	cleanup_close int lfd = listen_any();
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	struct timespec t0;
	struct peer p;
	char *rep;
	int ret;

	p = spawn_peer(garbage_client);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	ok(ret < 0 && contains(err->msg, "the peer at 127.0.0.1:") &&
	       contains(err->msg, "is not tern migrate"),
	   "a plain TCP client writing HTTP is not tern migrate");
	free(peer_finish(&p));

	p = spawn_peer(tls_client);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	ok(ret < 0 && contains(err->msg, "is not tern migrate: it did not offer the migration key"),
	   "a TLS client without the key is not tern migrate");
	rep = peer_finish(&p);
	ok(strcmp(rep, "ok") != 0, "and its handshake fails too");
	free(rep);

	/* a client that connects and says nothing must not hold us */
	p = spawn_peer(silent_client);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", 300, &c, &err);
	is_int(ret, -ETIMEDOUT, "a silent client: the handshake times out");
	ok(elapsed_ms(&t0) < 3000, "within the timeout");
	ok(ret < 0 && contains(err->msg, "TLS handshake with 127.0.0.1:"), "naming the peer");
	free(peer_finish(&p));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", 200, &c, &err);
	is_int(ret, -ETIMEDOUT, "nobody connects: accept times out");
	ok(ret < 0 && contains(err->msg, "no tern migrate connected to 127.0.0.1:"),
	   "naming the address");
	ok(elapsed_ms(&t0) < 3000, "within the timeout");
	tern_error_free(err);
}

/* A TLS server with a certificate, as a web server would be: the client
 * must refuse it rather than trust whatever certificate comes. */
static void cert_server(int rep, int go)
{
	int lfd = listen_any();
	cleanup_free char *key = tern_strdup_printf("%s/key.pem", tmpdir);
	cleanup_free char *cert = tern_strdup_printf("%s/cert.pem", tmpdir);
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char portbuf[16];
	SSL *ssl;
	int fd;

	tern_mchan_ephemeral_cert(tmpdir, "127.0.0.1", NULL, NULL);
	SSL_CTX_use_certificate_file(ctx, cert, SSL_FILETYPE_PEM);
	SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM);
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	tern_write_all(rep, portbuf, strlen(portbuf));
	close(rep);
	fcntl(lfd, F_SETFL, 0); /* tern_mchan_listen's fd is non-blocking */
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_accept(ssl);
	wait_go(go);
}

static void test_not_tern_server(void)
{
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	struct peer p = spawn_peer(cert_server);
	char buf[16] = "";
	cleanup_free char *a = NULL;
	int ret;

	if (read(p.report, buf, sizeof(buf) - 1) <= 0)
		abort();
	port = atoi(buf);
	a = addr();
	ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);
	ok(ret < 0 && contains(err->msg, "is not tern migrate: it answered with a certificate"),
	   "a TLS server with a certificate is refused");
	free(peer_finish(&p));

	ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);
	is_int(ret, -ECONNREFUSED, "nobody listens: connection refused");
	ok(ret < 0 && contains(err->msg, a), "naming the address");
	tern_error_free(err);
}

/* ---- failures within a session ---- */

static void error_source(int rep, int go)
{
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_free char *a = addr();
	tern_error *err = NULL, *why = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	if (ret == 0) {
		tern_error_make_quiet(&why, EIO, "criu dump failed\n\x1b[31mred");
		tern_mchan_send_error(c, why);
		tern_error_free(why);
	}
	report(rep, ret, err);
	tern_error_free(err);
}

static void truncating_source(int rep, int go)
{
	/* an OFFER header announcing 100 bytes, then only 10 of them */
	static const unsigned char raw[] = {0,	 0,   0,   3,	0,   0,	  0,   0,   0,	 0,   0,
					    100, '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	tern_mchan *c = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	if (ret == 0)
		ret = tern_mchan_test_send_raw(c, raw, sizeof(raw), &err);
	report(rep, ret, err);
	wait_go(go);
	_exit(0); /* dies without closing TLS: a crash */
}

static void huge_source(int rep, int go)
{
	/* an IMAGE_DATA header announcing 1 TiB */
	static const unsigned char raw[] = {0, 0, 0, 9, 0, 0, 1, 0, 0, 0, 0, 0};
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	tern_mchan *c = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	if (ret == 0)
		ret = tern_mchan_test_send_raw(c, raw, sizeof(raw), &err);
	report(rep, ret, err);
	wait_go(go);
	_exit(0);
}

static void slow_source(int rep, int go)
{
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	wait_go(go); /* the target's recv times out meanwhile */
	if (ret == 0)
		ret = tern_mchan_send(c, TERN_MSG_PROGRESS, "late", 4, &err);
	report(rep, ret, err);
	tern_error_free(err);
}

/* connects, then closes at once: its kernel answers what follows with RST */
static void closing_source(int rep, int go)
{
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	tern_mchan *c = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	tern_mchan_freep(&c);
	report(rep, ret, err);
	tern_error_free(err);
}

static void test_session_failures(void)
{
	cleanup_close int lfd = listen_any();
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	struct timespec t0;
	char *payload = NULL, *rep;
	size_t len;
	struct peer p;
	int ret;

	p = spawn_peer(error_source);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	ret = ret ?: tern_mchan_recv(c, TERN_MSG_OFFER, NULL, &payload, &len, TIMEOUT, &err);
	is_int(ret, -ECONNABORTED, "an ERROR from the peer is ECONNABORTED");
	is_str(ret < 0 ? err->msg : NULL, "the other side: criu dump failed ?[31mred",
	       "and reads \"the other side: ...\", without control characters");
	tern_mchan_freep(&c);
	free(peer_finish(&p));

	p = spawn_peer(truncating_source);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	if (ret == 0) {
		char buf[8];
		/* the child reports once its bytes are out, then dies */
		ret = read(p.report, buf, 2) == 2 ? 0 : -1;
		close(p.go);
		p.go = open("/dev/null", O_WRONLY | O_CLOEXEC);
		ret = tern_mchan_recv(c, 0, NULL, &payload, &len, TIMEOUT, &err);
	}
	is_int(ret, -ECONNRESET, "a peer dying mid-message: ECONNRESET");
	ok(ret < 0 && contains(err->msg, "the peer at 127.0.0.1:") &&
	       contains(err->msg, "in the middle of a message (OFFER, 10 of 100 bytes)"),
	   "naming the peer and how far the message came");
	ret = tern_mchan_recv(c, 0, NULL, &payload, &len, TIMEOUT, &err);
	ok(ret < 0 && contains(err->msg, "out of step"), "no reading past a broken message");
	{
		/* the peer is gone: sending fails with an error, not SIGPIPE */
		size_t big = 8u << 20;
		char *junk = tern_xmalloc0(big);
		ret = tern_mchan_send(c, TERN_MSG_IMAGE_DATA, junk, big, &err);
		free(junk);
		ok(ret == -EPIPE || ret == -ECONNRESET,
		   "sending to a dead peer: an error, no signal");
		ok(ret < 0 && contains(err->msg, "127.0.0.1:"), "naming the peer");
	}
	tern_mchan_freep(&c);
	free(peer_finish(&p));

	p = spawn_peer(closing_source);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	rep = peer_finish(&p); /* its socket is closed: a FIN came, an RST will */
	if (ret == 0) {
		/* the first write after the RST is ECONNRESET, the next EPIPE: a
		 * sender sees either, by timing, and both are the peer's close */
		size_t big = 1u << 20;
		char *junk = tern_xmalloc0(big);
		for (int i = 0; i < 64 && ret == 0; i++)
			ret = tern_mchan_send(c, TERN_MSG_IMAGE_DATA, junk, big, &err);
		free(junk);
	}
	is_int(ret, -ECONNRESET, "sending after the peer closed: ECONNRESET, no signal");
	ok(ret < 0 && contains(err->msg, "the peer at 127.0.0.1:") &&
	       contains(err->msg, "closed the connection"),
	   "naming the peer and its close, not \"Broken pipe\"");
	if (ret < 0)
		printf("#   %s\n", err->msg);
	tern_mchan_freep(&c);
	free(rep);

	p = spawn_peer(huge_source);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	ret = ret ?: tern_mchan_recv(c, 0, NULL, &payload, &len, TIMEOUT, &err);
	is_int(ret, -EPROTO, "a 1 TiB message is refused before allocating it");
	ok(ret < 0 && contains(err->msg, "announced a IMAGE_DATA message of 1099511627776 bytes, "
					 "more than the limit"),
	   "naming the size");
	tern_mchan_freep(&c);
	free(peer_finish(&p));

	p = spawn_peer(slow_source);
	ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = ret ?: tern_mchan_recv(c, 0, NULL, &payload, &len, 250, &err);
	is_int(ret, -ETIMEDOUT, "recv times out when the peer is silent");
	ok(elapsed_ms(&t0) >= 200 && elapsed_ms(&t0) < 3000, "after about the timeout");
	ok(ret < 0 && contains(err->msg, "waiting for a message from 127.0.0.1:"),
	   "naming the peer");
	close(p.go);
	p.go = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ret = tern_mchan_recv(c, TERN_MSG_PROGRESS, NULL, &payload, &len, TIMEOUT, &err);
	is_int(ret, 0, "a recv that timed out before a message may be retried");
	is_str(ret == 0 ? payload : NULL, "late", "and gets the message");
	if (ret == 0)
		drop(&payload);
	tern_mchan_freep(&c);
	rep = peer_finish(&p);
	is_str(rep, "ok", "the slow source's send went through");
	free(rep);
	tern_error_free(err);
}

static void test_addresses(void)
{
	static const char *bad[] = {
	    "localhost:80", "1.2.3.4", "1.2.3.4:99999", "[::1]80",   "1.2.3.4:", "::1:80",
	    "1.2.3.4:8x",   "[::1]:0", "300.1.1.1:5",	"[nope]:22", ""};
	tern_mchan *c = NULL;
	tern_error *err = NULL;
	bool all = true;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = tern_mchan_connect(bad[i], token, TOKEN_LEN, "source", 100, &c, &err);
		cleanup_free char *want = tern_strdup_printf("bad address `%s`", bad[i]);
		if (ret != -EINVAL || !contains(err->msg, want))
			all = false;
	}
	ok(all, "bad addresses are refused, naming the string");
	is_int(tern_mchan_listen("127.0.0.1", NULL, &err), -EINVAL, "listen without a port");

	/* IPv6 where the machine has it */
	int lfd = tern_mchan_listen("[::1]:0", &port, &err);
	if (lfd < 0) {
		ok(1, "# SKIP no IPv6 loopback: %s", err->msg);
	} else {
		cleanup_free char *a = tern_strdup_printf("[::1]:%d", port);
		struct peer p;
		char *rep;
		int ret;

		close(lfd);
		ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", 200, &c, &err);
		ok(ret == -ECONNREFUSED && contains(err->msg, a), "[::1]:PORT is dialled");
		lfd = tern_mchan_listen("[::1]:0", &port, &err);
		use_ipv6 = true;
		p = spawn_peer(plain_source);
		ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
		use_ipv6 = false;
		is_int(ret, 0, "a channel over [::1]");
		is_str(ret == 0 ? tern_mchan_peer_ip(c) : NULL, "::1", "peer ip ::1");
		rep = peer_finish(&p);
		is_str(rep, "ok", "the source connected to [::1]:PORT");
		free(rep);
		tern_mchan_freep(&c);
		close(lfd);
	}
	tern_error_free(err);
}

/* ---- the token file ---- */

static int token_file(const char *name, const char *data, mode_t mode, char **path)
{
	*path = tern_strdup_printf("%s/%s", tmpdir, name);
	unlink(*path);
	tern_write_file(*path, data, strlen(data), 0600, NULL);
	return chmod(*path, mode);
}

static void test_token_file(void)
{
	unsigned char *tok = NULL;
	tern_error *err = NULL;
	char *path, *link;
	size_t len = 0;
	int ret;

	token_file("token", "0123456789abcdef\n", 0600, &path);
	ret = tern_mchan_token_read(path, &tok, &len, &err);
	is_int(ret, 0, "a 0600 token file is read");
	ok(len == 16 && memcmp(tok, "0123456789abcdef", 16) == 0, "its trailing newline dropped");
	tern_mchan_token_free(tok, len);

	chmod(path, 0644);
	ret = tern_mchan_token_read(path, &tok, &len, &err);
	is_int(ret, -EPERM, "mode 0644 is refused");
	ok(ret < 0 && contains(err->msg, path) && contains(err->msg, "(mode 0644)"),
	   "naming the file and its mode");

	link = tern_strdup_printf("%s/token-link", tmpdir);
	chmod(path, 0600);
	unlink(link);
	if (symlink(path, link) < 0)
		abort();
	ret = tern_mchan_token_read(link, &tok, &len, &err);
	is_int(ret, -ELOOP, "a symlink is refused");
	ok(ret < 0 && contains(err->msg, link) && contains(err->msg, "symbolic link"),
	   "naming the link");
	free(link);
	free(path);

	token_file("short", "0123456789abcde\n", 0600, &path);
	ret = tern_mchan_token_read(path, &tok, &len, &err);
	is_int(ret, -EINVAL, "15 bytes (and a newline) are too short");
	ok(ret < 0 && contains(err->msg, path) && contains(err->msg, "15 bytes, fewer than 16"),
	   "naming the file and the sizes");
	free(path);

	token_file("two-newlines", "0123456789abcdef\n\n", 0600, &path);
	ret = tern_mchan_token_read(path, &tok, &len, &err);
	ok(ret == 0 && len == 17, "only one trailing newline is dropped");
	if (ret == 0)
		tern_mchan_token_free(tok, len);
	free(path);

	ret = tern_mchan_token_read(tmpdir, &tok, &len, &err);
	ok(ret < 0 && contains(err->msg, "is not a regular file"), "a directory is refused");
	ret = tern_mchan_token_read("/nonexistent/token", &tok, &len, &err);
	ok(ret == -ENOENT && contains(err->msg, "`/nonexistent/token`: No such file or directory"),
	   "a missing file keeps the strerror text");
	tern_error_free(err);
}

/* ---- the certificate for criu ---- */

static void test_ephemeral_cert(void)
{
	cleanup_free char *dir = tern_strdup_printf("%s/cert", tmpdir);
	cleanup_free char *key = tern_strdup_printf("%s/key.pem", dir);
	cleanup_free char *cert = tern_strdup_printf("%s/cert.pem", dir);
	tern_error *err = NULL;
	char *pem = NULL, *file_pem = NULL;
	struct stat st;
	EVP_PKEY *pkey = NULL;
	X509 *x = NULL;
	FILE *f;
	int ret;

	mkdir(dir, 0700);
	ret = tern_mchan_ephemeral_cert(dir, "127.0.0.1", &pem, &err);
	is_int(ret, 0, "ephemeral certificate made");
	ok(stat(key, &st) == 0 && (st.st_mode & 07777) == 0600, "key.pem has mode 0600");
	ok(stat(cert, &st) == 0 && (st.st_mode & 07777) == 0600, "cert.pem has mode 0600");
	tern_read_file(cert, &file_pem, NULL, 0, NULL);
	is_str(pem, file_pem, "the returned PEM is cert.pem's");
	free(file_pem);

	f = fopen(cert, "re");
	x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	f = fopen(key, "re");
	pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	ok(x != NULL, "cert.pem parses (PEM_read_X509)");
	ok(pkey != NULL && EVP_PKEY_is_a(pkey, "EC"), "key.pem parses, an EC key");
	if (x && pkey) {
		BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
		ok(bc && bc->ca, "CA:TRUE");
		BASIC_CONSTRAINTS_free(bc);
		ok(X509_check_ca(x) >= 1, "OpenSSL sees a CA");
		ok(X509_get_key_usage(x) & KU_KEY_CERT_SIGN, "keyCertSign");
		ok(X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE, "digitalSignature");
		is_int(X509_check_ip_asc(x, "127.0.0.1", 0), 1, "subjectAltName IP 127.0.0.1");
		is_int(X509_check_private_key(x, pkey), 1, "the key is the certificate's");
		is_int(X509_verify(x, pkey), 1, "self-signed");
		ok(X509_cmp_current_time(X509_get0_notBefore(x)) < 0 &&
		       X509_cmp_current_time(X509_get0_notAfter(x)) > 0,
		   "valid now");
		is_int(X509_get_version(x), X509_VERSION_3, "X.509 v3");
	}
	X509_free(x);
	EVP_PKEY_free(pkey);
	free(pem);

	ret = tern_mchan_ephemeral_cert(dir, "node-1.example", NULL, &err);
	is_int(ret, 0, "a host name works too");
	ret = tern_mchan_ephemeral_cert(dir, "a,b=c", NULL, &err);
	ok(ret == -EINVAL && contains(err->msg, "`a,b=c`"), "an odd name is refused, named");
	ret = tern_mchan_ephemeral_cert("/nonexistent", "127.0.0.1", NULL, &err);
	ok(ret == -ENOENT && contains(err->msg, "/nonexistent"), "a missing directory is named");
	tern_error_free(err);
}

static void test_type_names(void)
{
	is_str(tern_mchan_type_name(TERN_MSG_HELLO), "HELLO", "type name HELLO");
	is_str(tern_mchan_type_name(TERN_MSG_PROGRESS), "PROGRESS", "type name PROGRESS");
	is_str(tern_mchan_type_name(999), "unknown", "type name of 999");
}


/* ---- images in parts (the frozen dump's pages, sent while criu writes) ---- */

/* A source that sends one script of messages: {type, payload} pairs, the
 * payload text as it is ("" for an empty one). */
struct scripted {
	uint32_t type;
	const char *payload;
};
static const struct scripted *script;

static void script_source(int rep, int go)
{
	cleanup_mchan tern_mchan *c = NULL;
	cleanup_free char *a = addr();
	tern_error *err = NULL;
	int ret = tern_mchan_connect(a, token, TOKEN_LEN, "source", TIMEOUT, &c, &err);

	for (const struct scripted *m = script; ret == 0 && m->type; m++)
		ret = tern_mchan_send(c, m->type, m->payload, strlen(m->payload), &err);
	/* until the parent has read what it wants */
	wait_go(go);
	report(rep, ret, err);
	tern_error_free(err);
}

/* Receive the images of `s` into a fresh directory; the error, or NULL. */
static char *receive_script(const struct scripted *s, const char *dir)
{
	cleanup_close int lfd = listen_any();
	cleanup_mchan tern_mchan *c = NULL;
	tern_error *err = NULL;
	uint64_t bytes = 0;
	int rounds = 0;
	char *rep, *out = NULL;

	script = s;
	mkdir(dir, 0700);
	struct peer p = spawn_peer(script_source);
	int ret = tern_mchan_accept(lfd, token, TOKEN_LEN, "target", TIMEOUT, &c, &err);
	cleanup_close int dirfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (ret == 0)
		ret = tern_mig_images_recv(c, dirfd, dir, 1 << 20, &bytes, &rounds, true, &err);
	if (ret < 0)
		out = tern_xstrdup(err->msg);
	tern_error_free(err);
	tern_mchan_freep(&c);
	rep = peer_finish(&p);
	free(rep);
	return out;
}

static char *read_image(const char *dir, const char *name)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", dir, name);
	char *data = NULL;
	size_t len;

	if (tern_read_file(path, &data, &len, 1 << 20, NULL) < 0)
		return tern_xstrdup("(none)");
	return data;
}

#define PART(name, size) {TERN_MSG_IMAGE_FILE, "{\"name\":\"" name "\",\"size\":" #size ",\"part\":true}"}
#define WHOLE(name, size) {TERN_MSG_IMAGE_FILE, "{\"name\":\"" name "\",\"size\":" #size "}"}
#define DATA(text) {TERN_MSG_IMAGE_DATA, text}

static void test_image_parts(void)
{
	static const struct scripted good[] = {
	    PART("pages-1.img", 3), DATA("abc"), WHOLE("core-1.img", 1), DATA("x"),
	    PART("pages-1.img", 2), DATA("de"),	 PART("pages-2.img", 1), DATA("z"),
	    {TERN_MSG_IMAGES_DONE, ""},		 {0, NULL}};
	static const struct scripted whole_after[] = {
	    PART("pages-1.img", 3), DATA("abc"), WHOLE("pages-1.img", 1), DATA("x"), {0, NULL}};
	static const struct scripted part_after[] = {
	    WHOLE("pages-1.img", 1), DATA("x"), PART("pages-1.img", 3), DATA("abc"), {0, NULL}};
	static const struct scripted in_round[] = {
	    {TERN_MSG_IMAGE_FILE, "{\"dir\":\"pre-1\",\"name\":\"pages-1.img\",\"size\":1,"
				  "\"part\":true}"},
	    DATA("x"),
	    {0, NULL}};
	cleanup_free char *d1 = tern_strdup_printf("%s/parts-good", tmpdir);
	cleanup_free char *d2 = tern_strdup_printf("%s/parts-whole-after", tmpdir);
	cleanup_free char *d3 = tern_strdup_printf("%s/parts-part-after", tmpdir);
	cleanup_free char *d4 = tern_strdup_printf("%s/parts-in-round", tmpdir);
	char *e, *data;

	e = receive_script(good, d1);
	ok(e == NULL, "images in parts are received: %s", e ? e : "ok");
	free(e);
	data = read_image(d1, "pages-1.img");
	is_str(data, "abcde", "the parts of a file are appended in order");
	free(data);
	data = read_image(d1, "pages-2.img");
	is_str(data, "z", "a second file in parts is its own");
	free(data);
	data = read_image(d1, "core-1.img");
	is_str(data, "x", "a whole file between the parts is whole");
	free(data);

	e = receive_script(whole_after, d2);
	ok(e && strstr(e, "pages-1.img"), "a whole file after parts of its name is refused: %s",
	   e ? e : "(accepted)");
	free(e);
	data = read_image(d2, "pages-1.img");
	is_str(data, "abc", "... and what came in parts is not overwritten");
	free(data);

	e = receive_script(part_after, d3);
	ok(e && strstr(e, "pages-1.img"), "a part after a whole file of its name is refused: %s",
	   e ? e : "(accepted)");
	free(e);
	data = read_image(d3, "pages-1.img");
	is_str(data, "x", "... and the whole file is not appended to");
	free(data);

	e = receive_script(in_round, d4);
	ok(e && strstr(e, "only the final dump"), "a part in a pre-copy round is refused: %s",
	   e ? e : "(accepted)");
	free(e);
}

int main(void)
{
	cleanup_free char *rm = NULL;

	/* SIGPIPE keeps its default here: a channel that let one through
	 * would kill the test. */
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	test_type_names();
	test_session();
	test_stock_client();
	test_wrong_token();
	test_hello_refusals();
	test_not_tern_clients();
	test_accept_peers();
	test_not_tern_server();
	test_session_failures();
	test_addresses();
	test_token_file();
	test_ephemeral_cert();
	test_image_parts();
	rm = tern_strdup_printf("rm -rf '%s'", tmpdir);
	if (system(rm) != 0)
		printf("# could not remove %s\n", tmpdir);
	return done_testing();
}
