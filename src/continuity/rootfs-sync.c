/* The rootfs sync's target manifest and source sender (rootfs-sync.h); the
 * applier is in rootfs-apply.c, the shared pieces in rootfs-entry.c.
 *
 * Manifest: a header record, one ENTRY record per entry of the tree (its
 * attributes, an inode id shared by the names of one hard-linked inode,
 * and for a regular file the SHA-256 of each of its 64 KiB blocks), an END
 * record.
 *
 * Sender: it keeps a model of what the target has, per path (the manifest,
 * then updated by every record it sends), and for each path the stat of
 * the source entry when the target was last known to match it (inode,
 * size, mtime, ctime: ctime moves on chmod, chown, xattr and link count
 * changes). A round walks the live tree (lstat only), sends the deletions,
 * then, in walk order (parents first), looks at each entry whose stat
 * moved: a different type, symlink target or device number: resend it
 * whole; a regular file: its blocks that differ from what the target holds
 * (a PATCH record, rootfs-delta.h), with its metadata; otherwise send its
 * metadata if that differs.
 *
 * Hard links: the names of one source inode (non-directory, st_nlink > 1,
 * same dev and ino in this walk) form a group; one of them, the leader
 * (the first the target already has, else the first in walk order), is
 * compared and sent as above, the others become LINK records to it unless
 * the target already has them on the leader's inode.
 * If the target's inode of the leader is shared with a name that is not in
 * the group, the leader is sent whole (a new inode), since changing the
 * shared one in place would change that other name too. */
#include "rootfs-sync.h"
#include "rootfs-delta.h"
#include "rootfs-entry.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The stream is written in chunks of about this much (data records are
 * at most RS_DATA_CHUNK, so a chunk stays under 1 MiB unless one entry's
 * own metadata, its xattrs, is larger). */
#define FLUSH_AT (512u << 10)

/* ---- manifest ---- */

/* The block hashes a manifest carries at most (the manifest is one
 * message, at most 64 MiB): 32 MiB, the hashes of 64 GiB of files; past
 * that, and for a file whose hashes would not fit in one record, none: a
 * changed file without them crosses whole. */
#define MANIFEST_HASH_BUDGET (32u << 20)

struct manifest_ctx {
	size_t hash_bytes;
	struct rs_buf out;
	rs_map *inodes; /* (dev, ino) of hard-linked inodes -> id */
	uint64_t next_id;
};

static uint64_t inode_id(struct manifest_ctx *m, const struct stat *st)
{
	struct {
		dev_t dev;
		ino_t ino;
	} key = {st->st_dev, st->st_ino};
	uintptr_t id;

	if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
		return m->next_id++;
	id = (uintptr_t)rs_map_get(m->inodes, &key, sizeof(key));
	if (id == 0) {
		id = (uintptr_t)m->next_id++;
		rs_map_put(m->inodes, &key, sizeof(key), (void *)id);
	}
	return id;
}

static int manifest_entry(void *data, int dirfd, const char *name, const char *path,
			  const struct stat *wst, bool foreign, tern_error **err)
{
	struct manifest_ctx *m = data;
	struct rs_blocks blocks = {0};
	cleanup_close int fd = -1;
	struct rs_attrs a = {0};
	struct stat st;
	size_t rec;
	int ret;

	if (foreign)
		return 0;
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return tern_error_make(err, errno, "open `%s`", path);
	ret = rs_read_attrs(fd, path, &a, &st, err);
	if (ret == 0 && S_ISREG(st.st_mode)) {
		ret = rs_blocks_file(fd, a.size, &blocks, err);
		if (ret < 0)
			tern_error_wrap(err, "hash `%s`", path);
	}
	if (ret == 0) {
		rec = rs_buf_begin_record(&m->out, RS_REC_ENTRY);
		rs_buf_attrs(&m->out, &a);
		rs_buf_u64(&m->out, inode_id(m, &st));
		size_t hb = (size_t)blocks.n * RS_HASH_LEN;
		bool with = S_ISREG(st.st_mode) && hb <= RS_REC_MAX_BODY - 2 * PATH_MAX &&
			    m->hash_bytes + hb <= MANIFEST_HASH_BUDGET;
		/* 1: blocks; 2: blocks, but a file with other names, whose
		 * inode may be shared with a tree outside the rootfs (an
		 * image store's hard links), is replaced, never patched */
		rs_buf_u8(&m->out, !with ? 0 : st.st_nlink == 1 ? 1 : 2);
		if (with)
			rs_buf_blocks(&m->out, &blocks);
		m->hash_bytes += with ? hb : 0;
		rs_buf_end_record(&m->out, rec);
	}
	rs_blocks_clear(&blocks);
	rs_attrs_clear(&a);
	return ret;
}

static void put_header(struct rs_buf *b, const char *magic)
{
	size_t rec = rs_buf_begin_record(b, RS_REC_HEADER_T);
	rs_buf_put(b, magic, strlen(magic));
	rs_buf_u32(b, RS_VERSION);
	rs_buf_end_record(b, rec);
}

int tern_rootfs_manifest(int rootfd, char **out, size_t *out_len, tern_error **err)
{
	struct manifest_ctx m = {.inodes = rs_map_new(), .next_id = 1};
	int ret;

	put_header(&m.out, RS_MANIFEST_MAGIC);
	ret = rs_walk(rootfd, manifest_entry, &m, err);
	rs_map_free(m.inodes, NULL);
	if (ret < 0) {
		rs_buf_free(&m.out);
		return tern_error_wrap(err, "rootfs manifest");
	}
	rs_buf_end_record(&m.out, rs_buf_begin_record(&m.out, RS_REC_END));
	*out = m.out.data;
	*out_len = m.out.len;
	return 0;
}

/* ---- the sender's model of the target ---- */

struct node {
	struct rs_attrs a; /* what the target has at a.path */
	uint64_t tid;	   /* the target's inode: equal for hard links */
	bool has_hash;	   /* blk is known */
	bool patchable;	   /* the target's inode may be changed in place */
	struct rs_blocks blk; /* the target's contents of a regular file */
	unsigned seen; /* the round whose walk met this path in the source */
	/* The source's stat when the target last matched it. */
	bool snap_valid;
	dev_t dev;
	ino_t ino;
	mode_t mode;
	off_t size;
	struct timespec mtime, ctime;
};

struct tern_rootfs_sender {
	int rootfd;
	rs_map *nodes; /* path -> struct node */
	rs_map *tids;  /* tid -> how many target paths have it */
	uint64_t next_tid;
	unsigned round;
	bool failed; /* a round failed half-way: the model is not the target */
	/* The round being sent. */
	struct timespec round_start;
	struct rs_buf out;
	tern_rootfs_write_fn write;
	void *write_data;
	tern_rootfs_stats stats;
};

static void node_free(void *p)
{
	struct node *n = p;
	if (n == NULL)
		return;
	rs_attrs_clear(&n->a);
	rs_blocks_clear(&n->blk);
	free(n);
}

static struct node *node_get(tern_rootfs_sender *s, const char *path)
{
	return rs_map_get(s->nodes, path, strlen(path));
}

static size_t tid_count(tern_rootfs_sender *s, uint64_t tid)
{
	return (uintptr_t)rs_map_get(s->tids, &tid, sizeof(tid));
}

static void tid_add(tern_rootfs_sender *s, uint64_t tid, int delta)
{
	uintptr_t n = tid_count(s, tid) + (uintptr_t)(intptr_t)delta;

	if (n == 0)
		rs_map_del(s->tids, &tid, sizeof(tid));
	else
		rs_map_put(s->tids, &tid, sizeof(tid), (void *)n);
}

static void node_set_tid(tern_rootfs_sender *s, struct node *n, uint64_t tid)
{
	if (n->tid != 0)
		tid_add(s, n->tid, -1);
	n->tid = tid;
	tid_add(s, tid, +1);
}

/* The node for `path`, emptied (a new inode is about to replace it). */
static struct node *node_reset(tern_rootfs_sender *s, const char *path)
{
	struct node *n = node_get(s, path);

	if (n == NULL) {
		n = tern_xmalloc0(sizeof(*n));
		rs_map_put(s->nodes, path, strlen(path), n);
	}
	rs_attrs_clear(&n->a);
	rs_blocks_clear(&n->blk);
	n->has_hash = false;
	n->patchable = false;
	n->snap_valid = false;
	return n;
}

static void node_remove(tern_rootfs_sender *s, const char *path)
{
	struct node *n = rs_map_del(s->nodes, path, strlen(path));

	if (n != NULL && n->tid != 0)
		tid_add(s, n->tid, -1);
	node_free(n);
}

/* dst is another name of src's inode: same attributes and contents. */
static void node_copy_inode(struct node *dst, const struct node *src)
{
	char *path = steal_pointer(&dst->a.path);

	rs_attrs_clear(&dst->a);
	rs_attrs_copy(&dst->a, &src->a);
	free(dst->a.path);
	dst->a.path = path;
	dst->has_hash = src->has_hash;
	dst->patchable = src->patchable;
	rs_blocks_clear(&dst->blk);
	rs_blocks_copy(&dst->blk, &src->blk);
}

static int add_manifest_entry(tern_rootfs_sender *s, struct rs_reader *r, tern_error **err)
{
	struct node *n = tern_xmalloc0(sizeof(*n));
	int ret = rs_get_attrs(r, &n->a, true, err);
	uint64_t tid;

	if (ret < 0) {
		node_free(n);
		return ret;
	}
	tid = rs_get_u64(r);
	uint8_t flag = rs_get_u8(r);
	n->has_hash = flag != 0;
	n->patchable = flag == 1;
	if ((n->has_hash && !S_ISREG(n->a.mode)) || flag > 2)
		r->bad = true;
	else if (n->has_hash)
		rs_get_blocks(r, n->a.size, &n->blk);
	if (r->bad || r->left != 0 || tid == 0 || tid >= (1ull << 62)) {
		ret = tern_error_make_quiet(err, EBADMSG, "`%s`: malformed entry", n->a.path);
		node_free(n);
		return ret;
	}
	if (node_get(s, n->a.path) != NULL) {
		ret = tern_error_make_quiet(err, EBADMSG, "`%s`: listed twice", n->a.path);
		node_free(n);
		return ret;
	}
	rs_map_put(s->nodes, n->a.path, strlen(n->a.path), n);
	node_set_tid(s, n, tid);
	if (tid >= s->next_tid)
		s->next_tid = tid + 1;
	return 0;
}

static int parse_manifest(tern_rootfs_sender *s, const char *buf, size_t len, tern_error **err)
{
	struct rs_reader r = {(const unsigned char *)buf, len, false};
	bool first = true;

	while (r.left > 0) {
		uint8_t type = rs_get_u8(&r);
		uint32_t blen = rs_get_u32(&r);
		struct rs_reader body = {rs_get_bytes(&r, blen), blen, false};
		int ret;

		if (r.bad)
			return tern_error_make_quiet(err, EBADMSG, "truncated record");
		if (first != (type == RS_REC_HEADER_T))
			return tern_error_make_quiet(err, EBADMSG, "unexpected record type %u",
						     type);
		first = false;
		if (type == RS_REC_HEADER_T) {
			ret = rs_check_header(&body, RS_MANIFEST_MAGIC, "rootfs manifest", err);
		} else if (type == RS_REC_ENTRY) {
			ret = add_manifest_entry(s, &body, err);
		} else if (type == RS_REC_END && blen == 0 && r.left == 0) {
			return node_get(s, "")
				   ? 0
				   : tern_error_make_quiet(err, EBADMSG, "no entry for the rootfs");
		} else {
			return tern_error_make_quiet(err, EBADMSG, "unexpected record type %u",
						     type);
		}
		if (ret < 0)
			return ret;
	}
	return tern_error_make_quiet(err, EBADMSG, "truncated: no end record");
}

int tern_rootfs_sender_new(int rootfd, const char *manifest, size_t manifest_len,
			   tern_rootfs_sender **out, tern_error **err)
{
	tern_rootfs_sender *s = tern_xmalloc0(sizeof(*s));
	int ret;

	s->rootfd = rootfd;
	s->nodes = rs_map_new();
	s->tids = rs_map_new();
	s->next_tid = 1;
	ret = parse_manifest(s, manifest, manifest_len, err);
	if (ret < 0) {
		tern_rootfs_sender_free(s);
		return tern_error_wrap(err, "the target's rootfs manifest");
	}
	*out = s;
	return 0;
}

void tern_rootfs_sender_free(tern_rootfs_sender *s)
{
	if (s == NULL)
		return;
	rs_map_free(s->nodes, node_free);
	rs_map_free(s->tids, NULL);
	rs_buf_free(&s->out);
	free(s);
}

/* ---- writing the stream ---- */

static int out_flush(tern_rootfs_sender *s, tern_error **err)
{
	int ret;

	if (s->out.len == 0)
		return 0;
	ret = s->write(s->write_data, s->out.data, s->out.len, err);
	if (ret < 0)
		return ret;
	s->stats.stream_bytes += s->out.len;
	s->out.len = 0;
	return 0;
}

static int out_end(tern_rootfs_sender *s, size_t rec, tern_error **err)
{
	rs_buf_end_record(&s->out, rec);
	return s->out.len >= FLUSH_AT ? out_flush(s, err) : 0;
}

static int send_attrs(tern_rootfs_sender *s, uint8_t type, const struct rs_attrs *a,
		      tern_error **err)
{
	size_t rec = rs_buf_begin_record(&s->out, type);

	rs_buf_attrs(&s->out, a);
	if (s->out.len - rec - RS_REC_HEADER > RS_REC_MAX_BODY)
		return tern_error_make(err, E2BIG, "the metadata of `%s`", a->path);
	s->stats.entries_sent++;
	return out_end(s, rec, err);
}

static int send_paths(tern_rootfs_sender *s, uint8_t type, const char *path, const char *target,
		      tern_error **err)
{
	size_t rec = rs_buf_begin_record(&s->out, type);

	rs_buf_str(&s->out, path, strlen(path));
	if (target != NULL)
		rs_buf_str(&s->out, target, strlen(target));
	return out_end(s, rec, err);
}

struct data_ctx {
	tern_rootfs_sender *s;
	rs_bhasher *h;
	/* a delta: the PATCH record goes out before the first data */
	const struct rs_attrs *patch;
	bool patch_sent;
};

static int send_patch_header(struct data_ctx *d, tern_error **err)
{
	int ret = 0;

	if (d->patch != NULL && !d->patch_sent) {
		ret = send_attrs(d->s, RS_REC_PATCH, d->patch, err);
		d->patch_sent = true;
	}
	return ret;
}

static int send_extent(void *data, uint64_t off, const void *buf, size_t len, tern_error **err)
{
	struct data_ctx *d = data;
	int ret = send_patch_header(d, err);
	size_t rec;

	if (ret < 0)
		return ret;
	rec = rs_buf_begin_record(&d->s->out, RS_REC_DATA);
	rs_buf_u64(&d->s->out, off);
	rs_buf_put(&d->s->out, buf, len);
	if (d->h)
		rs_bhasher_data(d->h, off, buf, len);
	d->s->stats.data_bytes += len;
	return out_end(d->s, rec, err);
}

/* ENTRY, then for a regular file its data extents and COMMIT; the hash of
 * what was sent (what the target now has) goes into the model. */
static int send_entry(tern_rootfs_sender *s, const struct rs_attrs *a, int fd, struct node *n,
		      tern_error **err)
{
	struct data_ctx d = {s, NULL, NULL, false};
	cleanup_close int rfd = -1;
	int ret = send_attrs(s, RS_REC_ENTRY, a, err);

	if (ret < 0 || !S_ISREG(a->mode))
		return ret;
	rfd = rs_reopen_read(fd);
	if (rfd < 0)
		return tern_error_make(err, -rfd, "open `%s`", a->path);
	d.h = rs_bhasher_new();
	ret = rs_file_extents(rfd, a->size, send_extent, &d, err);
	rs_blocks_clear(&n->blk);
	rs_bhasher_finish(d.h, a->size, &n->blk);
	if (ret == 0) {
		n->has_hash = true;
		n->patchable = true; /* a new inode, the stream's own */
		rs_buf_end_record(&s->out, rs_buf_begin_record(&s->out, RS_REC_COMMIT));
	}
	return ret < 0 ? tern_error_wrap(err, "`%s`", a->path) : 0;
}

/* The target has an earlier version of the regular file `a` (n->blk):
 * a PATCH record, the blocks that differ, COMMIT; nothing if the contents
 * are the same. *sent says whether anything went. */
static int send_delta(tern_rootfs_sender *s, const struct rs_attrs *a, int fd, struct node *n,
		      bool *sent, tern_error **err)
{
	struct data_ctx d = {s, NULL, a, false};
	struct rs_blocks now = {0};
	cleanup_close int rfd = rs_reopen_read(fd);
	int ret;

	*sent = false;
	if (rfd < 0)
		return tern_error_make(err, -rfd, "open `%s`", a->path);
	ret = rs_delta_scan(rfd, a->size, &n->blk, &now, send_extent, &d, err);
	if (ret == 0 && !d.patch_sent && a->size != n->blk.size)
		ret = send_patch_header(&d, err); /* only the size changes */
	if (ret < 0) {
		rs_blocks_clear(&now);
		return tern_error_wrap(err, "`%s`", a->path);
	}
	if (d.patch_sent)
		rs_buf_end_record(&s->out, rs_buf_begin_record(&s->out, RS_REC_COMMIT));
	rs_blocks_clear(&n->blk);
	n->blk = now;
	*sent = d.patch_sent;
	return 0;
}

/* ---- one round ---- */

struct went {
	char *path;
	struct stat st;
	bool foreign;
	bool skipped; /* vanished or replaced since the walk: next round */
	bool done;
	size_t group; /* 1 + index in groups, 0 if not hard-linked */
};

struct group {
	size_t leader; /* index in entries of the name compared and sent */
	size_t *members;
	size_t n;
};

struct walk_list {
	tern_rootfs_sender *s;
	struct went *v;
	size_t n;
	struct group *groups;
	size_t ngroups;
	rs_map *by_inode; /* (dev, ino) -> 1 + group index */
	rs_map *foreign;  /* paths of mount points: not ours, not deleted */
};

static void walk_list_free(struct walk_list *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].path);
	for (size_t i = 0; i < w->ngroups; i++)
		free(w->groups[i].members);
	free(w->v);
	free(w->groups);
	rs_map_free(w->by_inode, NULL);
	rs_map_free(w->foreign, NULL);
}

static void *grow(void *p, size_t n, size_t size)
{
	/* Doubling at powers of two. */
	if (n & (n - 1))
		return p;
	p = realloc(p, (n ? n * 2 : 1) * size);
	if (p == NULL)
		abort();
	return p;
}

static void add_to_group(struct walk_list *w, size_t idx)
{
	const struct stat *st = &w->v[idx].st;
	struct {
		dev_t dev;
		ino_t ino;
	} key = {st->st_dev, st->st_ino};
	uintptr_t g = (uintptr_t)rs_map_get(w->by_inode, &key, sizeof(key));
	struct group *grp;

	if (g == 0) {
		w->groups = grow(w->groups, w->ngroups, sizeof(*w->groups));
		w->groups[w->ngroups] = (struct group){.leader = idx};
		g = ++w->ngroups;
		rs_map_put(w->by_inode, &key, sizeof(key), (void *)g);
	}
	grp = &w->groups[g - 1];
	grp->members = grow(grp->members, grp->n, sizeof(*grp->members));
	grp->members[grp->n++] = idx;
	w->v[idx].group = g;
}

static int collect(void *data, int dirfd, const char *name, const char *path, const struct stat *st,
		   bool foreign, tern_error **err)
{
	struct walk_list *w = data;
	struct node *n = node_get(w->s, path);

	w->v = grow(w->v, w->n, sizeof(*w->v));
	w->v[w->n] = (struct went){.path = tern_xstrdup(path), .st = *st, .foreign = foreign};
	if (n != NULL)
		n->seen = w->s->round;
	if (foreign)
		rs_map_put(w->foreign, path, strlen(path), (void *)1);
	else if (!S_ISDIR(st->st_mode) && st->st_nlink > 1)
		add_to_group(w, w->n);
	w->n++;
	return 0;
}

/* The leader of a group: the first name the target already has as a
 * non-directory (so a new name added before it in walk order becomes a
 * LINK to it, not a fresh copy of the whole file), else the first name. */
static void pick_leaders(tern_rootfs_sender *s, struct walk_list *w)
{
	for (size_t i = 0; i < w->ngroups; i++) {
		struct group *g = &w->groups[i];
		for (size_t k = 0; k < g->n; k++) {
			const struct node *n = node_get(s, w->v[g->members[k]].path);
			if (n != NULL && !S_ISDIR(n->a.mode)) {
				g->leader = g->members[k];
				break;
			}
		}
	}
}

static bool under_foreign(struct walk_list *w, const char *path)
{
	if (rs_map_count(w->foreign) == 0)
		return false;
	for (const char *p = path; (p = strchr(p, '/')) != NULL; p++)
		if (rs_map_get(w->foreign, path, (size_t)(p - path)))
			return true;
	return rs_map_get(w->foreign, path, strlen(path)) != NULL;
}

struct gone {
	tern_rootfs_sender *s;
	struct walk_list *w;
	char **paths;
	size_t n;
};

static void collect_gone(void *data, const void *key, size_t klen, void *value)
{
	struct gone *g = data;
	struct node *n = value;

	if (n->seen == g->s->round || under_foreign(g->w, n->a.path))
		return;
	g->paths = grow(g->paths, g->n, sizeof(*g->paths));
	g->paths[g->n++] = tern_xstrdup(n->a.path);
}

/* Entries the target has and the source no longer does. Only the topmost
 * of a deleted subtree is sent (the applier deletes recursively); all of
 * it leaves the model. Decided before anything is removed, since the test
 * looks at the parent. */
static int send_deletions(tern_rootfs_sender *s, struct walk_list *w, tern_error **err)
{
	struct gone g = {s, w, NULL, 0};
	cleanup_free bool *top = NULL;
	int ret = 0;

	rs_map_each(s->nodes, collect_gone, &g);
	top = tern_xmalloc0(g.n + 1);
	for (size_t i = 0; i < g.n; i++) {
		const char *name;
		cleanup_free char *parent = rs_path_parent(g.paths[i], &name);
		struct node *pn = node_get(s, parent);
		top[i] = pn == NULL || pn->seen == s->round;
	}
	for (size_t i = 0; i < g.n; i++) {
		if (ret == 0 && top[i]) {
			ret = send_paths(s, RS_REC_DELETE, g.paths[i], NULL, err);
			s->stats.entries_deleted++;
		}
		node_remove(s, g.paths[i]);
		free(g.paths[i]);
	}
	free(g.paths);
	return ret;
}

static bool stat_unchanged(const struct node *n, const struct stat *st)
{
	return n->snap_valid && n->dev == st->st_dev && n->ino == st->st_ino &&
	       n->mode == st->st_mode && n->size == st->st_size &&
	       n->mtime.tv_sec == st->st_mtim.tv_sec && n->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       n->ctime.tv_sec == st->st_ctim.tv_sec && n->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* Timestamps come from a coarse clock: a change within the same tick as the
 * stat we keep would leave ctime and mtime as they were (git's "racy"
 * entries). So a stat is only trusted when its ctime is clearly older than
 * the start of the round; a recent entry is looked at (hashed) again the
 * next round. */
static void remember_stat(tern_rootfs_sender *s, struct node *n, const struct stat *st)
{
	n->snap_valid = st->st_ctim.tv_sec < s->round_start.tv_sec - 1;
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->mode = st->st_mode;
	n->size = st->st_size;
	n->mtime = st->st_mtim;
	n->ctime = st->st_ctim;
}

/* Does the target's inode of `n` also carry a name outside the group? */
static bool shared_with_outsiders(tern_rootfs_sender *s, struct walk_list *w, const struct group *g,
				  const struct node *n)
{
	size_t inside = 0;

	if (g == NULL)
		return tid_count(s, n->tid) > 1;
	for (size_t i = 0; i < g->n; i++) {
		const struct node *m = node_get(s, w->v[g->members[i]].path);
		if (m != NULL && m->tid == n->tid)
			inside++;
	}
	return tid_count(s, n->tid) > inside;
}

static bool vanished(int e)
{
	return e == ENOENT || e == ENOTDIR || e == ELOOP;
}

/* A single name, or the leader of a group of hard links. */
static int process_leader(tern_rootfs_sender *s, struct walk_list *w, struct went *e,
			  struct node *n, tern_error **err)
{
	const struct group *g = e->group ? &w->groups[e->group - 1] : NULL;
	cleanup_close int fd = rs_open_beneath(s->rootfd, e->path, false);
	struct rs_attrs src = {0};
	bool resend, patched = false;
	struct stat st;
	int ret;

	if (fd < 0 && vanished(-fd))
		goto skip;
	if (fd < 0)
		return tern_error_make(err, -fd, "open `%s`", e->path);
	ret = rs_read_attrs(fd, e->path, &src, &st, err);
	if (ret < 0)
		goto out;
	if (st.st_ino != e->st.st_ino || ((st.st_mode ^ e->st.st_mode) & S_IFMT)) {
		rs_attrs_clear(&src);
		goto skip;
	}
	resend =
	    n == NULL || !rs_attrs_node_equal(&n->a, &src) || shared_with_outsiders(s, w, g, n);
	/* (cut by more than what is left: a new file costs less than the
	 * target keeping the bytes cut off for its undo) */
	if (!resend && S_ISREG(src.mode))
		resend = !n->has_hash || (n->patchable && src.size < n->blk.size &&
					  n->blk.size - src.size > src.size);
	if (!resend && S_ISREG(src.mode) && !n->patchable) {
		/* the same contents, or whole */
		struct rs_blocks now = {0};
		ret = rs_blocks_file(fd, src.size, &now, err);
		resend = ret < 0 || !rs_blocks_equal(&now, &n->blk);
		rs_blocks_clear(&now);
		if (ret < 0) {
			tern_error_wrap(err, "hash `%s`", src.path);
			goto out;
		}
	} else if (!resend && S_ISREG(src.mode)) {
		/* in place, on the inode the target has: the blocks that differ */
		ret = send_delta(s, &src, fd, n, &patched, err);
		if (ret < 0)
			goto out;
	}
	if (resend) {
		n = node_reset(s, e->path);
		node_set_tid(s, n, s->next_tid++);
		ret = send_entry(s, &src, fd, n, err);
	} else if (!patched && !rs_attrs_meta_equal(&n->a, &src)) {
		ret = send_attrs(s, RS_REC_META, &src, err);
	}
	if (ret < 0)
		goto out;
	rs_attrs_clear(&n->a);
	n->a = src;
	memset(&src, 0, sizeof(src));
	remember_stat(s, n, &e->st);
	/* The other names the target has on this inode see the same change. */
	for (size_t i = 0; g != NULL && i < g->n; i++) {
		struct node *m = node_get(s, w->v[g->members[i]].path);
		if (m != NULL && m != n && m->tid == n->tid)
			node_copy_inode(m, n);
	}
out:
	rs_attrs_clear(&src);
	return ret;
skip:
	e->skipped = true;
	if (n != NULL)
		n->snap_valid = false;
	return 0;
}

static int process_link(tern_rootfs_sender *s, struct walk_list *w, struct went *e, struct node *n,
			tern_error **err)
{
	const struct group *g = &w->groups[e->group - 1];
	const struct went *le = &w->v[g->leader];
	struct node *ln = node_get(s, le->path);
	int ret;

	if (le->skipped || ln == NULL) {
		e->skipped = true;
		return 0;
	}
	if (n != NULL && n->tid == ln->tid)
		return 0;
	ret = send_paths(s, RS_REC_LINK, e->path, le->path, err);
	if (ret < 0)
		return ret;
	s->stats.entries_sent++;
	n = node_reset(s, e->path);
	n->a.path = tern_xstrdup(e->path);
	node_copy_inode(n, ln);
	node_set_tid(s, n, ln->tid);
	return 0;
}

static int process_entry(tern_rootfs_sender *s, struct walk_list *w, size_t i, tern_error **err)
{
	struct went *e = &w->v[i];
	struct node *n = node_get(s, e->path);
	size_t leader = e->group ? w->groups[e->group - 1].leader : i;

	if (e->done || e->foreign)
		return 0;
	e->done = true;
	if (leader != i) {
		/* The leader may come later in walk order: it goes first, so
		 * the link is to its final inode. The target has it (see
		 * pick_leaders), so its directory is there already. */
		int ret = process_entry(s, w, leader, err);
		if (ret < 0)
			return ret;
		n = node_get(s, e->path);
		return process_link(s, w, e, n, err);
	}
	if (n != NULL && stat_unchanged(n, &e->st))
		return 0;
	return process_leader(s, w, e, n, err);
}

int tern_rootfs_sender_round(tern_rootfs_sender *s, tern_rootfs_write_fn write, void *data,
			     tern_rootfs_stats *stats, tern_error **err)
{
	struct walk_list w = {.s = s, .by_inode = rs_map_new(), .foreign = rs_map_new()};
	int ret;

	if (s->failed)
		return tern_error_make_quiet(err, EIO, "rootfs sync: an earlier round failed");
	s->round++;
	clock_gettime(CLOCK_REALTIME, &s->round_start);
	s->write = write;
	s->write_data = data;
	memset(&s->stats, 0, sizeof(s->stats));
	s->out.len = 0;
	put_header(&s->out, RS_STREAM_MAGIC);

	ret = rs_walk(s->rootfd, collect, &w, err);
	if (ret == 0) {
		pick_leaders(s, &w);
		ret = send_deletions(s, &w, err);
	}
	for (size_t i = 0; ret == 0 && i < w.n; i++)
		ret = process_entry(s, &w, i, err);
	if (ret == 0)
		ret = out_flush(s, err);
	walk_list_free(&w);
	if (stats != NULL)
		*stats = s->stats;
	if (ret < 0) {
		s->failed = true;
		return tern_error_wrap(err, "rootfs sync, round %u", s->round);
	}
	return 0;
}
