/* Block hashes and the delta of a changed regular file (rootfs-delta.h).
 *
 * Why fixed blocks, not rsync's rolling checksum: what changes in a
 * container's files is mostly appended (logs, databases' journals) or
 * rewritten in place; an insertion in the middle, which only a rolling
 * match would catch, costs here the blocks from it to the end. In return
 * the comparison is a strong hash (SHA-256) per block, never a weak one
 * first: two blocks are taken as equal only when their SHA-256 are, so a
 * collision cannot silently corrupt the target's copy. */
#include "rootfs-delta.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint32_t rs_blocks_count(uint64_t size)
{
	return (uint32_t)((size + RS_BLOCK - 1) / RS_BLOCK);
}

void rs_blocks_clear(struct rs_blocks *b)
{
	free(b->h);
	memset(b, 0, sizeof(*b));
}

void rs_blocks_copy(struct rs_blocks *dst, const struct rs_blocks *src)
{
	*dst = *src;
	dst->h = NULL;
	if (src->n) {
		dst->h = tern_xmalloc0((size_t)src->n * RS_HASH_LEN);
		memcpy(dst->h, src->h, (size_t)src->n * RS_HASH_LEN);
	}
}

bool rs_blocks_equal(const struct rs_blocks *a, const struct rs_blocks *b)
{
	return a->size == b->size && a->n == b->n &&
	       (a->n == 0 || memcmp(a->h, b->h, (size_t)a->n * RS_HASH_LEN) == 0);
}

void rs_buf_blocks(struct rs_buf *b, const struct rs_blocks *bl)
{
	rs_buf_u32(b, bl->n);
	rs_buf_put(b, bl->h, (size_t)bl->n * RS_HASH_LEN);
}

int rs_get_blocks(struct rs_reader *r, uint64_t size, struct rs_blocks *out)
{
	uint32_t n = rs_get_u32(r);
	const void *p;

	memset(out, 0, sizeof(*out));
	if (r->bad || n != rs_blocks_count(size) || n > r->left / RS_HASH_LEN) {
		r->bad = true;
		return -EBADMSG;
	}
	p = rs_get_bytes(r, (size_t)n * RS_HASH_LEN);
	if (p == NULL)
		return -EBADMSG;
	out->size = size;
	out->n = n;
	if (n) {
		out->h = tern_xmalloc0((size_t)n * RS_HASH_LEN);
		memcpy(out->h, p, (size_t)n * RS_HASH_LEN);
	}
	return 0;
}

/* ---- hashing ---- */

static void sha256(const void *buf, size_t len, unsigned char out[RS_HASH_LEN])
{
	unsigned int n = RS_HASH_LEN;

	if (EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) != 1)
		abort();
}

static const char zeros[RS_BLOCK];

/* The hash of a whole block of zeros, computed once. */
static const unsigned char *zero_block_hash(void)
{
	static unsigned char h[RS_HASH_LEN];
	static bool done;

	if (!done) {
		sha256(zeros, sizeof(zeros), h);
		done = true;
	}
	return h;
}

struct rs_bhasher {
	EVP_MD_CTX *ctx;
	uint64_t pos; /* bytes hashed so far */
	struct rs_buf out;
};

rs_bhasher *rs_bhasher_new(void)
{
	rs_bhasher *h = tern_xmalloc0(sizeof(*h));

	h->ctx = EVP_MD_CTX_new();
	if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		abort();
	return h;
}

static void end_block(rs_bhasher *h)
{
	unsigned char d[RS_HASH_LEN];
	unsigned int n = RS_HASH_LEN;

	if (EVP_DigestFinal_ex(h->ctx, d, &n) != 1 ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		abort();
	rs_buf_put(&h->out, d, sizeof(d));
}

static void feed(rs_bhasher *h, const char *buf, uint64_t len)
{
	while (len > 0) {
		uint64_t in_block = h->pos % RS_BLOCK;
		uint64_t k = RS_BLOCK - in_block < len ? RS_BLOCK - in_block : len;

		if (buf == NULL && in_block == 0 && k == RS_BLOCK) {
			rs_buf_put(&h->out, zero_block_hash(), RS_HASH_LEN);
		} else {
			EVP_DigestUpdate(h->ctx, buf ? buf : zeros, (size_t)k);
			if (in_block + k == RS_BLOCK)
				end_block(h);
		}
		h->pos += k;
		len -= k;
		if (buf)
			buf += k;
	}
}

void rs_bhasher_data(rs_bhasher *h, uint64_t off, const void *buf, size_t len)
{
	if (off > h->pos)
		feed(h, NULL, off - h->pos);
	feed(h, buf, len);
}

void rs_bhasher_finish(rs_bhasher *h, uint64_t size, struct rs_blocks *out)
{
	if (size > h->pos)
		feed(h, NULL, size - h->pos);
	if (h->pos % RS_BLOCK != 0)
		end_block(h);
	out->size = size;
	out->n = (uint32_t)(h->out.len / RS_HASH_LEN);
	out->h = (unsigned char *)h->out.data;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

static int hash_extent(void *data, uint64_t off, const void *buf, size_t len, tern_error **err)
{
	rs_bhasher_data(data, off, buf, len);
	return 0;
}

int rs_blocks_file(int fd, uint64_t size, struct rs_blocks *out, tern_error **err)
{
	cleanup_close int rfd = rs_reopen_read(fd);
	rs_bhasher *h;
	int ret;

	if (rfd < 0)
		return tern_error_make(err, -rfd, "open");
	h = rs_bhasher_new();
	ret = rs_file_extents(rfd, size, hash_extent, h, err);
	rs_bhasher_finish(h, size, out);
	if (ret < 0)
		rs_blocks_clear(out);
	return ret;
}

int rs_reopen_write(int fd)
{
	char procpath[64];
	int r;

	snprintf(procpath, sizeof(procpath), "/proc/self/fd/%d", fd);
	r = open(procpath, O_RDWR | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

/* ---- the delta ---- */

/* Read [off, off + len) whole; past the end of the file, zeros. */
static int read_block(int rfd, uint64_t off, char *buf, size_t len, tern_error **err)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(rfd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tern_error_make(err, errno, "read at offset %llu",
					       (unsigned long long)(off + got));
		if (n == 0)
			break;
		got += (size_t)n;
	}
	memset(buf + got, 0, len - got);
	return 0;
}

static bool all_zero(const char *buf, size_t len)
{
	return len == 0 || (buf[0] == 0 && memcmp(buf, buf + 1, len - 1) == 0);
}

/* Send [off, off + len) of buf; what lies past `zero_from` (the other
 * side's old size, where its extended copy reads as zeros) goes only where
 * it is not zeros, in pieces of whole pages. */
static int send_range(rs_extent_fn send, void *data, uint64_t off, const char *buf, size_t len,
		      uint64_t zero_from, tern_error **err)
{
	const size_t page = 4096;
	size_t i = 0, start;
	int ret;

	if (off < zero_from) {
		size_t k = zero_from - off < len ? (size_t)(zero_from - off) : len;
		ret = send(data, off, buf, k, err);
		if (ret < 0 || k == len)
			return ret;
		i = k;
	}
	while (i < len) {
		size_t k = len - i < page ? len - i : page;
		if (all_zero(buf + i, k)) {
			i += k;
			continue;
		}
		start = i;
		while (i < len && !all_zero(buf + i, len - i < page ? len - i : page))
			i += len - i < page ? len - i : page;
		ret = send(data, off + start, buf + start, i - start, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int rs_delta_scan(int rfd, uint64_t size, const struct rs_blocks *have, struct rs_blocks *out,
		  rs_extent_fn send, void *data, tern_error **err)
{
	cleanup_free char *buf = tern_xmalloc0(RS_BLOCK);
	uint32_t n = rs_blocks_count(size);
	int ret = 0;

	out->size = size;
	out->n = n;
	out->h = n ? tern_xmalloc0((size_t)n * RS_HASH_LEN) : NULL;
	for (uint32_t i = 0; ret == 0 && i < n; i++) {
		uint64_t start = (uint64_t)i * RS_BLOCK;
		size_t len = size - start < RS_BLOCK ? (size_t)(size - start) : RS_BLOCK;
		/* what the other side holds of this block (before truncating) */
		size_t tlen = have->size <= start	      ? 0
			      : have->size - start < RS_BLOCK ? (size_t)(have->size - start)
							      : RS_BLOCK;
		const unsigned char *th = i < have->n ? have->h + (size_t)i * RS_HASH_LEN : NULL;
		unsigned char *h = out->h + (size_t)i * RS_HASH_LEN;
		unsigned char ph[RS_HASH_LEN];

		ret = read_block(rfd, start, buf, len, err);
		if (ret < 0)
			break;
		sha256(buf, len, h);
		if (tlen == len && th && memcmp(h, th, RS_HASH_LEN) == 0)
			continue; /* the same */
		if (tlen == 0 && all_zero(buf, len))
			continue; /* new, and the zeros of the extension already */
		if (tlen > 0 && tlen < len && th) {
			sha256(buf, tlen, ph);
			if (memcmp(ph, th, RS_HASH_LEN) == 0) {
				/* it holds the start of it: the tail */
				ret = send_range(send, data, start + tlen, buf + tlen, len - tlen,
						 have->size, err);
				continue;
			}
		}
		ret = send_range(send, data, start, buf, len, have->size, err);
	}
	if (ret < 0)
		rs_blocks_clear(out);
	return ret;
}
