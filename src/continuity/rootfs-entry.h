/* What the rootfs sync (rootfs-sync.h) knows about one entry of a tree, and
 * the pieces the manifest, the sender and the applier share: the wire
 * encoding of records and entries (bounds-checked, since every byte comes
 * from the network), path validation, opening beneath the rootfs without
 * following symlinks, walking a tree, reading an entry's attributes and
 * hashing a regular file extent by extent. Private to the rootfs sync. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Records: a 1-byte type, a 4-byte big-endian body length, the body. */
#define RS_REC_HEADER	5
#define RS_REC_MAX_BODY (4u << 20)
/* File data travels in records of at most this many bytes. */
#define RS_DATA_CHUNK (256u << 10)
#define RS_HASH_LEN   32

/* Record types of the stream (S) and of the manifest (M). */
enum {
	RS_REC_HEADER_T = 'H', /* S, M: magic and version, first of each round / manifest */
	RS_REC_ENTRY = 'E',    /* S: create or replace; M: one entry of the tree */
	RS_REC_DATA = 'D',     /* S: offset, bytes of the regular file being written */
	RS_REC_COMMIT = 'C',   /* S: the regular file is complete: metadata, rename */
	RS_REC_META = 'M',     /* S: metadata only, the entry keeps its content */
	RS_REC_PATCH = 'P',    /* S: change the regular file in place (new size; DATA, COMMIT) */
	RS_REC_LINK = 'L',     /* S: path becomes a hard link to target */
	RS_REC_DELETE = 'X',   /* S: remove path (recursively for a directory) */
	RS_REC_END = 'Z',      /* M: end of the manifest */
};

#define RS_STREAM_MAGIC	  "tern-rootfs-sync"
#define RS_MANIFEST_MAGIC "tern-rootfs-manifest"
#define RS_VERSION	  2u

/* Xattrs that are neither read, sent nor touched on the target:
 * - security.selinux: labels are the target's business; its runtime labels
 *   the rootfs with the container's own context (mountLabel, MCS
 *   categories that may differ between nodes);
 * - trusted.overlay.* and user.overlay.*: overlayfs's private structure of
 *   a layer (redirects, opaque dirs, metacopy). Never visible through a
 *   mounted overlay, and a stream must not plant them in a directory that
 *   may later serve as a layer. */
bool rs_xattr_skipped(const char *name);

struct rs_xattr {
	char *name;
	char *value;
	size_t len;
};

struct rs_attrs {
	char *path;    /* relative to the rootfs, "" for the rootfs itself */
	uint32_t mode; /* st_mode, type bits included */
	uint32_t uid, gid;
	uint64_t size; /* regular files only, 0 otherwise */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t rdev_major, rdev_minor; /* device nodes only */
	char *link;			 /* symlink target, NULL otherwise */
	struct rs_xattr *xattrs;	 /* sorted by name */
	size_t nxattrs;
};

void rs_attrs_clear(struct rs_attrs *a);
void rs_attrs_copy(struct rs_attrs *dst, const struct rs_attrs *src);
/* Same owner, mode, mtime and xattrs. */
bool rs_attrs_meta_equal(const struct rs_attrs *a, const struct rs_attrs *b);
/* Same type and, for symlinks and devices, the same target or number
 * (regular file contents are compared by hash, elsewhere). */
bool rs_attrs_node_equal(const struct rs_attrs *a, const struct rs_attrs *b);

/* ---- encoding ---- */

struct rs_buf {
	char *data;
	size_t len, cap;
};

void rs_buf_put(struct rs_buf *b, const void *p, size_t n);
void rs_buf_u8(struct rs_buf *b, uint8_t v);
void rs_buf_u32(struct rs_buf *b, uint32_t v);
void rs_buf_u64(struct rs_buf *b, uint64_t v);
void rs_buf_str(struct rs_buf *b, const char *s, size_t n);
void rs_buf_attrs(struct rs_buf *b, const struct rs_attrs *a);
/* Start a record of `type` (the length is patched by rs_buf_end_record). */
size_t rs_buf_begin_record(struct rs_buf *b, uint8_t type);
void rs_buf_end_record(struct rs_buf *b, size_t start);
void rs_buf_free(struct rs_buf *b);

/* A bounds-checked reader: any read past the end sets `bad` and yields
 * zeros, so a parser checks once at the end. */
struct rs_reader {
	const unsigned char *p;
	size_t left;
	bool bad;
};

uint8_t rs_get_u8(struct rs_reader *r);
uint32_t rs_get_u32(struct rs_reader *r);
uint64_t rs_get_u64(struct rs_reader *r);
/* A string of at most `max` bytes without NUL: a malloc'd, terminated copy
 * (NULL and r->bad on error). */
char *rs_get_str(struct rs_reader *r, size_t max);
const void *rs_get_bytes(struct rs_reader *r, size_t n);
/* Decode and validate entry attributes (path, type, symlink target, xattr
 * names and sizes). `allow_root`: the path may be "" (the rootfs). */
int rs_get_attrs(struct rs_reader *r, struct rs_attrs *a, bool allow_root, tern_error **err);
/* Check a record header and its magic/version body. */
int rs_check_header(struct rs_reader *r, const char *magic, const char *what, tern_error **err);

/* ---- paths and files ---- */

/* A path as the stream may name it: relative, "/"-separated, no empty, "."
 * or ".." component, no NUL, shorter than PATH_MAX; "" only if allow_root. */
bool rs_path_valid(const char *path, bool allow_root);

/* For tests: pretend openat2 is missing (ENOSYS), to run the fallback walk. */
extern bool rs_no_openat2;

/* Open `path` beneath `rootfd` as O_PATH|O_NOFOLLOW (| O_DIRECTORY if
 * `dir`): no symlink is followed (a trailing one opens as itself, or fails
 * with `dir`), no ".." and no crossing of mount points. "" is the rootfs
 * itself. Returns the fd or -errno (ELOOP for a symlink in the way, EXDEV
 * for a mount). */
int rs_open_beneath(int rootfd, const char *path, bool dir);

/* Split "a/b/c" into its parent ("a/b", a malloc'd copy) and last
 * component (a pointer into path). */
char *rs_path_parent(const char *path, const char **name);

/* Read the attributes of the entry open as `fd` (O_PATH|O_NOFOLLOW):
 * stat, symlink target, xattrs. a->path is set to a copy of `path`. */
int rs_read_attrs(int fd, const char *path, struct rs_attrs *a, struct stat *st, tern_error **err);

/* Reopen an O_PATH fd of a regular file for reading. */
int rs_reopen_read(int fd);

/* Call `fn` on each data extent of `fd` (SEEK_DATA/SEEK_HOLE), in order of
 * offset, in pieces of at most RS_DATA_CHUNK, stopping at `size` (or at
 * the end of the file if it shrank: the rest reads as a hole). */
typedef int (*rs_extent_fn)(void *data, uint64_t off, const void *buf, size_t len,
			    tern_error **err);
int rs_file_extents(int fd, uint64_t size, rs_extent_fn fn, void *data, tern_error **err);

/* SHA-256 over data extents fed in order; gaps and the tail up to the
 * final size hash as zeros, so a hole and written zeros hash alike. */
typedef struct rs_hasher rs_hasher;
rs_hasher *rs_hasher_new(void);
void rs_hasher_data(rs_hasher *h, uint64_t off, const void *buf, size_t len);
void rs_hasher_finish(rs_hasher *h, uint64_t size, unsigned char out[RS_HASH_LEN]);
void rs_hasher_free(rs_hasher *h);

/* The hash of a whole regular file open as `fd` (O_PATH). */
int rs_hash_file(int fd, uint64_t size, unsigned char out[RS_HASH_LEN], tern_error **err);

/* The names in the directory `dirfd` but "." and "..", sorted (so both
 * sides walk in one order): a NULL-terminated, malloc'd vector. */
int rs_list_dir(int dirfd, char ***names, size_t *count);

/* Walk the tree at `rootfd` depth first, parents before children, names in
 * byte order, never following a symlink. The rootfs itself comes first, as
 * path "". An entry on another device than the rootfs (a mount point
 * below it) is reported with `foreign` set and not descended into: the
 * rootfs of a bundle is one tree, and a mount is not ours to copy.
 * `dirfd` and `name` locate the entry (dirfd is a directory fd of its
 * parent; for the root, the root's own fd and "."). Entries that vanish
 * while walking are skipped (the source tree may be live). */
typedef int (*rs_walk_fn)(void *data, int dirfd, const char *name, const char *path,
			  const struct stat *st, bool foreign, tern_error **err);
int rs_walk(int rootfd, rs_walk_fn fn, void *data, tern_error **err);

/* ---- a string-keyed hash map (keys are copied) ---- */

typedef struct rs_map rs_map;
rs_map *rs_map_new(void);
void *rs_map_get(const rs_map *m, const void *key, size_t klen);
/* Insert or replace; returns the previous value (or NULL). */
void *rs_map_put(rs_map *m, const void *key, size_t klen, void *value);
/* Remove; returns the value (or NULL). */
void *rs_map_del(rs_map *m, const void *key, size_t klen);
size_t rs_map_count(const rs_map *m);
/* Call fn on every value (the map must not change meanwhile). */
void rs_map_each(rs_map *m, void (*fn)(void *data, const void *key, size_t klen, void *value),
		 void *data);
void rs_map_free(rs_map *m, void (*free_value)(void *value));
