/* Block hashes of regular files and the delta of a changed file (the
 * rootfs sync, rootfs-sync.h): the target's manifest carries the SHA-256
 * of every RS_BLOCK-sized block of each regular file; the sender compares
 * the blocks of its file with them and sends only the blocks that differ,
 * and of a block the target holds a prefix of (an append), only the new
 * tail. Private to the rootfs sync. */
#pragma once

#include "error.h"
#include "rootfs-entry.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RS_BLOCK (64u << 10)

/* The contents of a regular file of `size` bytes, as block hashes: block i
 * covers [i * RS_BLOCK, min((i + 1) * RS_BLOCK, size)); a hole hashes as
 * the zeros it reads as. */
struct rs_blocks {
	uint64_t size;
	uint32_t n;	  /* rs_blocks_count(size) */
	unsigned char *h; /* n * RS_HASH_LEN bytes */
};

uint32_t rs_blocks_count(uint64_t size);
void rs_blocks_clear(struct rs_blocks *b);
void rs_blocks_copy(struct rs_blocks *dst, const struct rs_blocks *src);
/* Same size and every block the same: the same contents. */
bool rs_blocks_equal(const struct rs_blocks *a, const struct rs_blocks *b);

/* Manifest encoding: the count, then the hashes. rs_get_blocks checks the
 * count against `size`. */
void rs_buf_blocks(struct rs_buf *b, const struct rs_blocks *bl);
int rs_get_blocks(struct rs_reader *r, uint64_t size, struct rs_blocks *out);

/* Block hashes of data fed in order of offset (gaps hash as zeros). */
typedef struct rs_bhasher rs_bhasher;
rs_bhasher *rs_bhasher_new(void);
void rs_bhasher_data(rs_bhasher *h, uint64_t off, const void *buf, size_t len);
/* The blocks of a file of `size` bytes; frees h. */
void rs_bhasher_finish(rs_bhasher *h, uint64_t size, struct rs_blocks *out);

/* The blocks of the regular file open as `fd` (O_PATH), `size` bytes. */
int rs_blocks_file(int fd, uint64_t size, struct rs_blocks *out, tern_error **err);

/* The delta of the file open for reading as `rfd`, now `size` bytes, from
 * `have` (what the other side holds): `send` is called, in order of
 * offset, with each range the other side must write once it has its copy
 * truncated (or extended with zeros) to `size`; every byte is read once,
 * and `out` gets the hashes of exactly what was read, so it describes
 * what the other side holds afterwards even if the file changes meanwhile.
 * Bytes past the end of a file that shrank meanwhile read as zeros. */
int rs_delta_scan(int rfd, uint64_t size, const struct rs_blocks *have, struct rs_blocks *out,
		  rs_extent_fn send, void *data, tern_error **err);

/* Reopen an O_PATH fd of a regular file for reading and writing. */
int rs_reopen_write(int fd);
