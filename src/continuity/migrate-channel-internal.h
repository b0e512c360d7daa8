/* What the three files of the migration channel share, and nothing
 * else sees: the channel's state and the helpers one part lends another.
 * migrate-channel.c owns connections (addresses, the token, listen,
 * accept, connect), migrate-channel-tls.c TLS (the key, OpenSSL, I/O with
 * deadlines, the handshake), migrate-channel-msg.c the messages on top
 * (framing, HELLO). The public face stays migrate-channel.h. */
#pragma once

/* Not migrate-channel.h: its files include both, and a private header
 * that includes the public one would make the two modules a circle
 * (scripts/check-layers.sh). */
#include "error.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

/* as in migrate-channel.h (C11 allows the repeat) */
typedef struct tern_mchan tern_mchan;

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

/* ---- migrate-channel.c: time and sockets ---- */

int64_t mchan_now_ms(void);
/* -1: no deadline */
int64_t mchan_deadline_after(int timeout_ms);
/* Wait until `fd` is ready for `events` or the deadline passes: 0 or
 * -ETIMEDOUT (or -errno of poll). */
int mchan_wait_fd(int fd, short events, int64_t deadline);
/* "IP" into ip and, if with_port, "IP:PORT" / "[IP]:PORT" into full. */
void mchan_format_addr(const struct sockaddr_storage *ss, char *ip, size_t iplen, char *full,
		       size_t fulllen);
/* TCP_NODELAY, keepalive, TCP_USER_TIMEOUT on a connection. */
void mchan_tune_socket(int fd);

/* ---- migrate-channel-tls.c: TLS ---- */

/* A channel on the connected `fd` (owned from here on: *out holds it,
 * and the caller frees it on any error), TLS set up as server or client
 * with the key derived from the token; no handshake yet. */
int mchan_new(int fd, bool server, const unsigned char *token, size_t token_len, tern_mchan **out,
	      tern_error **err);
/* All of `buf` out, or an error; within the deadline. */
int mchan_write_all(tern_mchan *c, const void *buf, size_t len, int64_t deadline, int timeout_ms,
		    tern_error **err);
/* Fill buf completely. *got tells how far it came on error. */
int mchan_read_all(tern_mchan *c, void *buf, size_t len, size_t *got, int64_t deadline,
		   int timeout_ms, tern_error **err);
/* -ETIMEDOUT: "WHAT PEER: no progress within N ms" */
int mchan_timeout_error(tern_mchan *c, const char *what, int timeout_ms, tern_error **err);
/* The TLS handshake then HELLO, blocking until the deadline. */
int mchan_handshake_and_hello(tern_mchan *c, bool server, const char *role, int64_t deadline,
			      int timeout_ms, tern_error **err);
/* One step of the server's handshake, never waiting: 1 when it is done,
 * 0 when it waits for *events on the socket, or an error (negative). */
int mchan_handshake_step(tern_mchan *c, short *events, tern_error **err);
/* What follows a completed TLS handshake: check it used the key, HELLO. */
int mchan_after_handshake(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
			  tern_error **err);

/* ---- migrate-channel-msg.c: HELLO ---- */

/* "source" or "target" */
bool mchan_valid_role(const char *role);
/* Both sides send HELLO first and then read the other's. */
int mchan_exchange_hello(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
			 tern_error **err);
