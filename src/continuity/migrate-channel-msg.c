/* The messages of the migration channel, on top of its TLS
 * (migrate-channel-tls.c): the frames (type, length, payload, their
 * limits), the ERROR a side gives up with, files streamed in chunks, and
 * the HELLO that checks both sides speak the same protocol. */
#include "migrate-channel.h"
#include "migrate-channel-internal.h"

#include "utils.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#ifdef TERN_MCHAN_TESTING
static int hello_version = TERN_MIGRATE_PROTO_VERSION;
static const char *hello_magic = HELLO_MAGIC;
#else
#define hello_version TERN_MIGRATE_PROTO_VERSION
#define hello_magic   HELLO_MAGIC
#endif

/* How long a side whose write found the peer gone reads for the ERROR
 * the peer may have sent before (it is in the receive queue already). */
#define PEER_REASON_TIMEOUT_MS 2000

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

static int recv_msg(tern_mchan *c, uint32_t want, uint64_t max_len, uint32_t *type, char **payload,
		    size_t *len, int timeout_ms, tern_error **err);

/* A write found the peer gone (ECONNRESET): a peer that failed says why
 * (TERN_MSG_ERROR) before it closes, and while this side was busy
 * writing that message waits in the receive queue, which the kernel keeps
 * after the peer's reset. Its words replace "closed the connection". */
static int peer_reason(tern_mchan *c, int ret, tern_error **err)
{
	cleanup_free char *payload = NULL;
	tern_error *why = NULL;
	bool broken = c->broken;

	if (ret != -ECONNRESET || err == NULL || c->out_of_step)
		return ret;
	c->broken = false;
	if (recv_msg(c, 0, MAX_PAYLOAD, NULL, &payload, NULL, PEER_REASON_TIMEOUT_MS, &why) ==
	    -ECONNABORTED) {
		tern_error_free(*err);
		*err = why;
		ret = -ECONNABORTED;
	} else {
		tern_error_free(why);
	}
	c->broken = broken;
	c->out_of_step = true;
	return ret;
}

static int send_until(tern_mchan *c, uint32_t type, const void *payload, size_t len, int timeout_ms,
		      tern_error **err)
{
	int64_t deadline = mchan_deadline_after(timeout_ms);
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
		ret = mchan_write_all(c, small, HEADER_LEN + len, deadline, timeout_ms, err);
	} else {
		ret = mchan_write_all(c, h, HEADER_LEN, deadline, timeout_ms, err);
		if (ret == 0)
			ret = mchan_write_all(c, payload, len, deadline, timeout_ms, err);
	}
	if (ret < 0 && type != TERN_MSG_ERROR)
		ret = peer_reason(c, ret, err);
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
	int64_t deadline = mchan_deadline_after(timeout_ms);
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
	ret = mchan_read_all(c, h, sizeof(h), &got, deadline, timeout_ms, err);
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
	ret = mchan_read_all(c, buf, (size_t)n, &got, deadline, timeout_ms, err);
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

bool mchan_valid_role(const char *role)
{
	return role && (strcmp(role, "source") == 0 || strcmp(role, "target") == 0);
}

/* Both sides send HELLO first and then read the other's, so neither waits
 * for the other to speak. */
int mchan_exchange_hello(tern_mchan *c, const char *role, int64_t deadline, int timeout_ms,
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
	left = deadline < 0 ? -1 : (int)(deadline > mchan_now_ms() ? deadline - mchan_now_ms() : 0);
	ret = send_until(c, TERN_MSG_HELLO, mine, strlen(mine), left, err);
	if (ret < 0)
		return ret;
	left = deadline < 0 ? -1 : (int)(deadline > mchan_now_ms() ? deadline - mchan_now_ms() : 0);
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
	if (!mchan_valid_role(peer_role) || strcmp(peer_role, role) == 0) {
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

/* ---- test hooks (built only into the unit test) ---- */

#ifdef TERN_MCHAN_TESTING
void tern_mchan_test_set_hello(int version, const char *magic)
{
	hello_version = version;
	hello_magic = magic ? magic : HELLO_MAGIC;
}

int tern_mchan_test_hello(tern_mchan *c, const char *role, tern_error **err)
{
	return mchan_exchange_hello(c, role, -1, -1, err);
}

#endif
