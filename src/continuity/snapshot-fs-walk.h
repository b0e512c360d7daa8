/* What record and restore of snapshot-fs share: the index of live
 * identities, the inode table of hard-link groups, the directory walk, and
 * the copy of data, xattrs and metadata (snapshot-fs-walk.c). Private to
 * snapshot-fs*.c; the format and the security rules are at the top of
 * snapshot-fs.c.
 *
 * Owned by snapshot-fs-walk.c, which uses no other snapshot file. */
#pragma once

#include "error.h"
#include "snapshot-fs-stats.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define TREE_NAME	"tree"
#define INDEX_NAME	"files.index"
#define INDEX_TMP_NAME	"files.index.tmp"
#define INDEX_MAGIC	"TSNAPIX1"
#define INDEX_MAGIC_LEN 8
#define DIR_FLAGS	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define DIRBUF_SIZE	32768
#define COPY_CHUNK	(256 * 1024)
#define XATTR_SCRATCH	4096

struct buf {
	char *data;
	size_t len, cap;
};

/* What tells a changed entry from an unchanged one; in files.index, the
 * head of a record, followed by path_len bytes of path. */
struct ident {
	uint64_t ino, size;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint32_t mode;
	uint32_t path_len; /* files.index only; not part of the identity */
};

/* A loaded files.index: slots hold a record's offset + 1, 0 when free. */
struct index {
	char *data;
	size_t len;
	size_t *slots;
	size_t mask;
};

struct ient {
	uint64_t ino;
	size_t path; /* offset of the first name in itab.names */
	size_t rec;  /* restore: that name's files.index record, or SIZE_MAX */
	uint64_t names, bytes;
	nlink_t nlink;
	bool resolved; /* restore: id holds the live inode's identity now */
	struct ident id;
};

struct itab {
	struct ient *v;
	size_t n, cap;
	size_t *slots; /* index + 1, 0 when free */
	size_t mask;
	struct buf names;
};

struct dirbuf {
	char *data;
	size_t pos, len;
};

#define cleanup_dirbuf __attribute__((cleanup(sfs_dirbuf_free)))

struct walk {
	tern_error **err;
	tern_snapfs_stats st;
	dev_t dev;	 /* the rootfs's file system: other devices are mounts */
	uint64_t mnt_id; /* and its mount (0: unknown): bind mounts share st_dev */
	bool root_known; /* dev and mnt_id are set */
	int root;	 /* record: the new tree/; restore: the live rootfs */
	struct index ix; /* record: prev's files.index; restore: the store's */
	struct buf out;	 /* the files.index being written */
	struct itab links;
	struct buf patches;	   /* restore: struct patch, records to refresh */
	struct buf xa, xb, va, vb; /* xattr names and values */
	char *chunk;		   /* read/write copies */
	bool no_cfr;		   /* copy_file_range does not work here */
	unsigned tmpseq;
	size_t len;
	char path[PATH_MAX]; /* the current entry, relative to the root */
};

struct patch {
	size_t ient, rec;
};

/* An entry: an open fd, or NAME in DIRFD (then through /proc, see top). */
struct node {
	int fd;
	int dirfd;
	const char *name;
};

#define NODE_FD(f) (&(struct node){.fd = (f), .dirfd = -1})

#define NODE_AT(dfd, nm) (&(struct node){.fd = -1, .dirfd = (dfd), .name = (nm)})

enum xattr_mode {
	XA_COPY,  /* dst is new: set what src has */
	XA_SYNC,  /* also remove what src lacks, skip equal values */
	XA_CHECK, /* change nothing: 1 when they differ */
};

size_t sfs_buf_put(struct buf *b, const void *p, size_t n);
struct ident sfs_ident_of(const struct stat *st);
bool sfs_ident_matches(const struct ident *a, const struct stat *st);
int sfs_index_load(int storefd, struct index *ix, tern_error **err);
bool sfs_index_find(const struct index *ix, const char *path, size_t len, struct ident *out);
size_t sfs_index_put(struct buf *out, const char *path, size_t len, const struct stat *st);
void sfs_index_patch(struct buf *out, size_t at, const struct ident *id);
int sfs_index_write(int storefd, struct buf *out, tern_error **err);
struct ient *sfs_itab_find(struct itab *t, uint64_t ino);
struct ient *sfs_itab_add(struct itab *t, uint64_t ino, const char *path);
void sfs_itab_free(struct itab *t);
void sfs_dirbuf_free(struct dirbuf *b);
struct dirent64 *sfs_dir_next(int fd, struct dirbuf *b, int *error);
int sfs_open_parent(int root, const char *path, const char **base);
void sfs_walk_init(struct walk *w, tern_error **err);
void sfs_walk_free(struct walk *w, tern_snapfs_stats *stats);
int sfs_path_push(struct walk *w, const char *name, size_t *saved);
void sfs_path_pop(struct walk *w, size_t saved);
int sfs_stat_entry(struct walk *w, int dirfd, const char *name, struct stat *st, bool *mounted);
void sfs_tmp_name(struct walk *w, char *name, size_t size);
int sfs_xattrs_sync(struct walk *w, const struct node *src, const struct node *dst,
		    enum xattr_mode mode);
int sfs_copy_data(struct walk *w, int src, int dst, off_t size);
int sfs_open_source(int dirfd, const char *name, const struct stat *st);
int sfs_set_meta(struct walk *w, const struct node *dst, const struct node *src,
		 const struct stat *st, enum xattr_mode xmode);
int sfs_read_link(struct walk *w, int dirfd, const char *name, char *buf, const char *where);
