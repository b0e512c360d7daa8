/* The control connection of a live migration (tern migrate / tern
 * migrate-receive): one TCP connection, TLS 1.3 keyed by the shared token.
 *
 * Both sides prove they hold the token without sending it: the TLS 1.3
 * handshake uses an external pre-shared key derived from the token (HKDF
 * over the token, with psk_dhe_ke, so a recorded session stays secret even
 * if the token leaks later), and its Finished messages are MACs under that
 * key, so a peer without the token fails the handshake. Everything after
 * is encrypted and integrity-checked by TLS.
 *
 * On top of TLS, framed messages: a 4-byte type and an 8-byte length (both
 * big-endian), then the payload. The first message each way is HELLO,
 * which carries the protocol version: a peer of another version is refused
 * with a message naming both versions, never misread. The protocol itself
 * (message types and their order) is documented in man/tern-migrate.1; the
 * wire format of the channel (key derivation, TLS settings, framing, HELLO,
 * ERROR) in man/tern-migrate-protocol.7.
 *
 * Callers need not ignore SIGPIPE: the channel writes with
 * send(MSG_NOSIGNAL), so a vanished peer is an error (EPIPE, ECONNRESET),
 * never a signal. A tern_mchan is for one thread at a time. After a failed
 * send or recv, only tern_mchan_send_error and tern_mchan_free make sense;
 * except that a recv which timed out before any byte of a message arrived
 * may be retried.
 *
 * Also here (migrate-cert.c): an ephemeral X.509 key and certificate for criu's own page
 * server connection (criu --tls), which the two sides exchange over this
 * channel, so that page data never crosses the network in clear. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TERN_MIGRATE_PROTO_VERSION 2

/* Frame types. The payload of each is described in man/tern-migrate.1;
 * JSON unless noted. */
enum tern_msg_type {
	TERN_MSG_HELLO = 1,  /* {"magic":"tern-migrate","version":N,"role":"source"|"target",...} */
	TERN_MSG_ERROR = 2,  /* UTF-8 text: the peer failed and says why; ends the session */
	TERN_MSG_OFFER = 3,  /* source: container id, config, mode, sizes, features */
	TERN_MSG_ACCEPT = 4, /* target: id it restores as, features, its criu */
	TERN_MSG_ROOTFS_MANIFEST = 5, /* target: what its bundle's rootfs holds (rootfs-sync.h) */
	TERN_MSG_ROOTFS_DATA = 6,     /* source: a rootfs-sync stream chunk (binary) */
	TERN_MSG_ROOTFS_DONE = 7,     /* either: end of one rootfs-sync round */
	TERN_MSG_IMAGE_FILE = 8,      /* source: {"name":..., "size":N} then IMAGE_DATA chunks */
	TERN_MSG_IMAGE_DATA = 9,      /* source: raw bytes of the current image file (binary) */
	TERN_MSG_IMAGES_DONE = 10,    /* source: the image set is complete */
	TERN_MSG_PAGE_SERVER = 11,    /* source: where criu's page server listens, its cert */
	TERN_MSG_RUNNING = 12,	      /* target: the container runs here */
	TERN_MSG_DONE = 13,	      /* source: the source copy is gone; the end */
	TERN_MSG_PROGRESS = 14,	      /* either: a progress event for the other side's log */
};

typedef struct tern_mchan tern_mchan;

/* The shared secret, read from `path`: a regular file, not a symlink, not
 * readable or writable by group or others (like an ssh key), holding at
 * least 16 bytes (a trailing newline is dropped). The error names the file
 * and what is wrong with it. */
int tern_mchan_token_read(const char *path, unsigned char **token, size_t *len, tern_error **err);
/* Zero and free a token from tern_mchan_token_read. */
void tern_mchan_token_free(unsigned char *token, size_t len);

/* Listen on "IP:PORT" (IPv4, or [IPv6]:PORT); PORT 0 picks one, which
 * *port then holds. Returns the listening fd (O_CLOEXEC, O_NONBLOCK). */
int tern_mchan_listen(const char *ip_port, int *port, tern_error **err);

/* Accept one connection on `lfd` within `timeout_ms` (-1: no limit), run
 * the TLS handshake as the server and exchange HELLO as `role` ("target").
 * A wrong token, another protocol version or a non-tern peer is an error
 * saying which; the listening fd stays usable, so a caller that wants to
 * outlast a stray connection (a port scanner) may accept again. */
int tern_mchan_accept(int lfd, const unsigned char *token, size_t token_len, const char *role,
		      int timeout_ms, tern_mchan **out, tern_error **err);

/* How migrate-receive takes its source among whoever connects. */
typedef struct {
	int timeout_ms;		  /* until a peer gets through; -1: no limit */
	int handshake_timeout_ms; /* each peer's TLS handshake and HELLO */
	int max_failed;		  /* refused peers before giving up (>= 1) */
	/* told of each refused peer: its address and why (may be NULL) */
	void (*refused)(void *arg, const char *peer, const tern_error *why);
	void *arg;
} tern_mchan_accept_opts;

/* Like tern_mchan_accept, but a peer that fails (a port scan, garbage, a
 * wrong token, one that says nothing) is refused, reported to o->refused,
 * and the next one is taken: an idle or hostile connection costs at most
 * the handshake deadline and never keeps the real source out. Up to 8
 * handshakes run at once, each with its own deadline. Nothing a peer sends
 * is parsed before the TLS handshake has proved the token (OpenSSL bounds
 * the size of a ClientHello). Gives up after o->max_failed refused peers,
 * or at o->timeout_ms. */
int tern_mchan_accept_peers(int lfd, const unsigned char *token, size_t token_len, const char *role,
			    const tern_mchan_accept_opts *o, tern_mchan **out, tern_error **err);

/* Connect to "IP:PORT" within `timeout_ms`, TLS handshake as the client,
 * HELLO as `role` ("source"). */
int tern_mchan_connect(const char *ip_port, const unsigned char *token, size_t token_len,
		       const char *role, int timeout_ms, tern_mchan **out, tern_error **err);

/* Send one message (payload at most 64 MiB). */
int tern_mchan_send(tern_mchan *c, uint32_t type, const void *payload, size_t len,
		    tern_error **err);

/* A limit for each later send (and send_fd chunk), in ms; -1 (the default):
 * none. Without one, a peer that stops reading blocks a send until the
 * kernel gives up on the connection (TCP_USER_TIMEOUT, 60 s without an
 * acknowledgement). */
void tern_mchan_set_send_timeout(tern_mchan *c, int timeout_ms);

/* Receive one message within `timeout_ms` (-1: no limit). A payload
 * announced as larger than 64 MiB is a protocol error. *payload is
 * malloc'd with a NUL after its `len` bytes (so JSON and text can be used
 * as strings); free it. A TERN_MSG_ERROR from the peer is returned as an
 * error "the other side: TEXT" (-ECONNABORTED); a closed connection as
 * -ECONNRESET, naming the peer. With `want` non-zero any other type is a
 * protocol error naming both types. */
int tern_mchan_recv(tern_mchan *c, uint32_t want, uint32_t *type, char **payload, size_t *len,
		    int timeout_ms, tern_error **err);

/* Tell the peer why this side gives up (TERN_MSG_ERROR); best effort. */
void tern_mchan_send_error(tern_mchan *c, const tern_error *why);

/* Stream `size` bytes from `fd`, read from its current offset (a file or
 * a pipe), as messages of `type` (chunks of at most 1 MiB). An fd that ends
 * early is an error naming its path. */
int tern_mchan_send_fd(tern_mchan *c, uint32_t type, int fd, uint64_t size, tern_error **err);

/* "HELLO", "OFFER", ...; "unknown" for other numbers. */
const char *tern_mchan_type_name(uint32_t type);

/* Bytes of payload sent and received so far (for progress reports). */
uint64_t tern_mchan_bytes_sent(const tern_mchan *c);
uint64_t tern_mchan_bytes_received(const tern_mchan *c);

/* The peer's address as "IP" (for criu's page server connection). */
const char *tern_mchan_peer_ip(const tern_mchan *c);
/* This side's address on the connection as "IP". */
const char *tern_mchan_local_ip(const tern_mchan *c);

void tern_mchan_free(tern_mchan *c);
void tern_mchan_freep(tern_mchan **c);
#define cleanup_mchan __attribute__((cleanup(tern_mchan_freep)))

/* The reason of OpenSSL's last error, for messages ("unknown TLS error"
 * when it gave none); clears OpenSSL's error queue. */
const char *tern_mchan_openssl_reason(void);

/* In migrate-cert.c: */
/* Write a fresh self-signed key and certificate (PEM, CA:TRUE, the given
 * common name) for criu --tls into `dir` as key.pem and cert.pem (mode
 * 0600). *cert_pem is the certificate's text, to send to the peer, which
 * gives it to its criu as --tls-cacert.
 *
 * The key is EC P-256, the certificate valid from an hour ago (clock skew)
 * for a day. `common_name` must be an IP address or a host name; it is
 * also the certificate's subjectAltName (IP or DNS). criu checks the
 * peer's certificate against its own --address unless given
 * --tls-no-cn-verify: the page server's certificate should name the
 * address the client dials; the client's certificate names the client,
 * so a page server given --address needs --tls-no-cn-verify (the trust is
 * in the pinned certificate, --tls-cacert, not in the name). Checked with
 * criu 4.2.1: see tern-migrate-protocol(7). */
int tern_mchan_ephemeral_cert(const char *dir, const char *common_name, char **cert_pem,
			      tern_error **err);

#ifdef TERN_MCHAN_TESTING
/* Unit test only (compiled in with -DTERN_MCHAN_TESTING): the HELLO this
 * process sends (another version, or a wrong magic when non-NULL), and raw
 * bytes on the TLS stream (a truncated frame). */
void tern_mchan_test_set_hello(int version, const char *magic);
int tern_mchan_test_send_raw(tern_mchan *c, const void *buf, size_t len, tern_error **err);
/* Fuzz tests: a channel on `fd` without TLS (frames straight on the fd;
 * tern_mchan_free closes it), and its HELLO exchange as `role`. */
int tern_mchan_test_plain(int fd, tern_mchan **out);
int tern_mchan_test_hello(tern_mchan *c, const char *role, tern_error **err);
#endif
