/* Mounts tern makes in the caller's mount namespace: the record in the
 * state directory and the unmount at delete (see host-mounts.h). */
#include "host-mounts.h"
#include "log.h"
#include "mountinfo.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RECORD_MAGIC "tern-host-mounts 1"
#define RECORD_TMP   TERN_HOST_MOUNTS_FILE ".tmp"

typedef struct {
	int id;
	int parent;
	char *mp; /* the mount point, escaped as in mountinfo */
	bool ours;
	bool gone; /* unmounted by us */
} mnt_entry;

typedef struct {
	mnt_entry *v;
	size_t n;
} mnt_list;

typedef struct {
	unsigned long long mntns;
	char *rootfs; /* escaped as in mountinfo */
	bool made;    /* false: pending, `list` is what was there before */
	mnt_list list;
} record;

static void list_add(mnt_list *l, int id, int parent, const char *mp)
{
	mnt_entry *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (v == NULL)
		abort();
	l->v = v;
	l->v[l->n++] = (mnt_entry){.id = id, .parent = parent, .mp = tern_xstrdup(mp)};
}

static void list_clear(mnt_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].mp);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void record_clear(record *r)
{
	free(r->rootfs);
	r->rootfs = NULL;
	list_clear(&r->list);
}

static bool list_has(const mnt_list *l, int id, const char *mp)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].id == id && strcmp(l->v[i].mp, mp) == 0)
			return true;
	return false;
}

/* The kernel's escaping of mountinfo paths (space, tab, newline and
 * backslash as \ooo), so that paths compare as mountinfo shows them. */
static char *escape(const char *s)
{
	char *out = tern_xmalloc0(strlen(s) * 4 + 1), *w = out;
	for (; *s; s++) {
		if (strchr(" \t\n\\", *s))
			w += sprintf(w, "\\%03o", (unsigned char)*s);
		else
			*w++ = *s;
	}
	return out;
}

static bool is_under(const char *mp, const char *root)
{
	size_t len = strlen(root);
	return strncmp(mp, root, len) == 0 && (mp[len] == '\0' || mp[len] == '/');
}

/* Every mount of our namespace, in mountinfo's order. */
static int read_mounts(mnt_list *out, tern_error **err)
{
	cleanup_free char *info = NULL;
	int ret = tern_read_file("/proc/self/mountinfo", &info, NULL, 0, err);

	if (ret < 0)
		return ret;
	for (char *line = info, *next; line && *line; line = next) {
		char mp[4096];
		int id, parent;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%d %d %*s %*s %4095s", &id, &parent, mp) == 3)
			list_add(out, id, parent, mp);
	}
	return 0;
}

static int mntns_id(unsigned long long *out, tern_error **err)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) < 0)
		return tern_error_make(err, errno, "stat /proc/self/ns/mnt");
	*out = (unsigned long long)st.st_ino;
	return 0;
}

static int record_write(int statedir, const record *r, tern_error **err)
{
	size_t cap = 256 + strlen(r->rootfs), len;
	for (size_t i = 0; i < r->list.n; i++)
		cap += strlen(r->list.v[i].mp) + 16;
	cleanup_free char *buf = tern_xmalloc0(cap);
	cleanup_close int fd = -1;
	int ret;

	len = (size_t)snprintf(buf, cap, RECORD_MAGIC "\nmntns %llu\nrootfs %s\n%s\n", r->mntns,
			       r->rootfs, r->made ? "made" : "pending");
	for (size_t i = 0; i < r->list.n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%d %s\n", r->list.v[i].id,
					r->list.v[i].mp);
	fd = openat(statedir, RECORD_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "write `%s`", RECORD_TMP);
	ret = tern_write_all(fd, buf, len);
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s`", RECORD_TMP);
	if (renameat(statedir, RECORD_TMP, statedir, TERN_HOST_MOUNTS_FILE) < 0)
		return tern_error_make(err, errno, "rename `%s`", RECORD_TMP);
	return 0;
}

/* -ENOENT (no error set) when there is no record. */
static int record_read(int statedir, record *r, tern_error **err)
{
	cleanup_close int fd = openat(statedir, TERN_HOST_MOUNTS_FILE, O_RDONLY | O_CLOEXEC);
	cleanup_free char *data = NULL;
	bool bad = false;
	int n = 0, ret;

	memset(r, 0, sizeof(*r));
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		return tern_error_make(err, errno, "read `%s`", TERN_HOST_MOUNTS_FILE);
	ret = tern_read_fd_all(fd, &data, NULL, 0);
	if (ret < 0)
		return tern_error_make(err, -ret, "read `%s`", TERN_HOST_MOUNTS_FILE);
	for (char *line = data, *next; line && *line; line = next, n++) {
		char mp[4096];
		bool ok;
		int id;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		switch (n) {
		case 0:
			ok = strcmp(line, RECORD_MAGIC) == 0;
			break;
		case 1:
			ok = sscanf(line, "mntns %llu", &r->mntns) == 1;
			break;
		case 2:
			ok = strncmp(line, "rootfs /", 8) == 0;
			if (ok)
				r->rootfs = tern_xstrdup(line + 7);
			break;
		case 3:
			ok = strcmp(line, "made") == 0 || strcmp(line, "pending") == 0;
			r->made = strcmp(line, "made") == 0;
			break;
		default:
			ok = sscanf(line, "%d %4095s", &id, mp) == 2;
			if (ok)
				list_add(&r->list, id, 0, mp);
		}
		if (!ok) {
			bad = true;
			break;
		}
	}
	if (bad || n < 4) {
		record_clear(r);
		return tern_error_make(err, EINVAL, "`%s` is not a record of mounts",
				       TERN_HOST_MOUNTS_FILE);
	}
	return 0;
}

int tern_host_mounts_begin(int statedir, const char *rootfs, tern_error **err)
{
	record r = {.rootfs = escape(rootfs)};
	mnt_list now = {0};
	int ret = mntns_id(&r.mntns, err);

	if (ret == 0)
		ret = read_mounts(&now, err);
	for (size_t i = 0; ret == 0 && i < now.n; i++)
		if (is_under(now.v[i].mp, r.rootfs))
			list_add(&r.list, now.v[i].id, 0, now.v[i].mp);
	if (ret == 0)
		ret = record_write(statedir, &r, err);
	list_clear(&now);
	record_clear(&r);
	return ret < 0 ? tern_error_wrap(err, "record the mounts under the rootfs") : 0;
}

/* Mark the mounts of `now` that the record says are ours. */
static void mark_ours(const record *r, mnt_list *now)
{
	for (size_t i = 0; i < now->n; i++) {
		bool listed = list_has(&r->list, now->v[i].id, now->v[i].mp);
		now->v[i].ours = r->made ? listed : !listed && is_under(now->v[i].mp, r->rootfs);
	}
}

int tern_host_mounts_commit(int statedir, tern_error **err)
{
	record r;
	mnt_list now = {0};
	int ret = record_read(statedir, &r, err);

	if (ret == -ENOENT)
		return tern_error_make(err, ENOENT, "no pending record of the mounts");
	if (ret < 0)
		return ret;
	ret = read_mounts(&now, err);
	if (ret == 0 && !r.made) {
		mark_ours(&r, &now);
		list_clear(&r.list);
		for (size_t i = 0; i < now.n; i++)
			if (now.v[i].ours)
				list_add(&r.list, now.v[i].id, 0, now.v[i].mp);
		r.made = true;
		ret = record_write(statedir, &r, err);
	}
	list_clear(&now);
	record_clear(&r);
	return ret < 0 ? tern_error_wrap(err, "record the container's mounts") : 0;
}

/* Unmount the mount `m`, which has nothing mounted on it. Its mount point
 * is under a rootfs the container could change (it shares our namespace):
 * the directory holding it is opened without following any symlink, the
 * mount there is checked to be `m` by its id, and the unmount goes through
 * that directory's fd, so no path component can be swapped in between. A
 * mount still in use (EBUSY) is detached lazily: it leaves the namespace
 * now and is freed when its last user lets go. */
static int unmount_one(const mnt_entry *m, tern_error **err)
{
	cleanup_free char *path = tern_mountinfo_unescape(m->mp), *target = NULL;
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	cleanup_close int dirfd = -1;
	char *slash = strrchr(path, '/');
	struct statx stx;

	if (slash == NULL || slash[1] == '\0')
		return tern_error_make(err, EINVAL, "`%s`: not a mount point to unmount", path);
	*slash = '\0';
	dirfd = (int)syscall(SYS_openat2, AT_FDCWD, slash == path ? "/" : path, &how, sizeof(how));
	*slash = '/';
	if (dirfd < 0)
		return tern_error_make(err, errno, "unmount `%s`: open its directory", path);
	if (statx(dirfd, slash + 1, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx) < 0)
		return tern_error_make(err, errno, "unmount `%s`", path);
	if (!(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != (unsigned long long)m->id)
		return tern_error_make_quiet(err, ESTALE,
					     "unmount `%s`: another mount is there now, not "
					     "the one tern made",
					     path);
	target = tern_strdup_printf("/proc/self/fd/%d/%s", dirfd, slash + 1);
	if (umount2(target, UMOUNT_NOFOLLOW) == 0)
		return 0;
	if (errno != EBUSY)
		return tern_error_make(err, errno, "unmount `%s`", path);
	if (umount2(target, UMOUNT_NOFOLLOW | MNT_DETACH) < 0)
		return tern_error_make(err, errno, "unmount `%s`", path);
	tern_warn("`%s` is still in use (a process has a file, directory or root in it): detached "
		  "lazily, its filesystem is freed when the last user lets go",
		  path);
	return 0;
}

static const mnt_entry *first_child(const mnt_list *now, int id)
{
	for (size_t i = 0; i < now->n; i++)
		if (!now->v[i].gone && now->v[i].parent == id && now->v[i].id != id)
			return &now->v[i];
	return NULL;
}

static void append(char **why, const char *msg)
{
	char *w = tern_strdup_printf("%s%s%s", *why ? *why : "", *why ? "; " : "", msg);
	free(*why);
	*why = w;
}

/* Unmount every mount of ours that has nothing mounted on it, pass after
 * pass, each on a fresh read of mountinfo (an unmount may propagate and
 * take others with it), so that the deepest go first whatever mountinfo's
 * order. What stays is named in one error. */
static int unmount_ours(const record *r, tern_error **err)
{
	cleanup_free char *why = NULL;
	mnt_list now = {0}, failed = {0};
	bool progress = true;
	int ret = 0;

	while (progress) {
		progress = false;
		list_clear(&now);
		ret = read_mounts(&now, err);
		if (ret < 0)
			goto out;
		mark_ours(r, &now);
		for (size_t i = now.n; i-- > 0;) {
			mnt_entry *m = &now.v[i];
			tern_error *e = NULL;
			if (!m->ours || list_has(&failed, m->id, m->mp) ||
			    first_child(&now, m->id) != NULL)
				continue;
			if (unmount_one(m, &e) < 0) {
				append(&why, e->msg);
				tern_error_free(e);
				list_add(&failed, m->id, 0, m->mp);
				continue;
			}
			m->gone = true;
			progress = true;
		}
	}
	/* The last pass unmounted nothing: `now` is current. */
	for (size_t i = 0; i < now.n; i++) {
		const mnt_entry *m = &now.v[i], *c;
		if (!m->ours || list_has(&failed, m->id, m->mp) ||
		    (c = first_child(&now, m->id)) == NULL || c->ours)
			continue;
		cleanup_free char *mp = tern_mountinfo_unescape(m->mp),
				  *cp = tern_mountinfo_unescape(c->mp);
		cleanup_free char *msg = tern_strdup_printf(
		    "`%s` stays mounted: `%s`, which tern did not mount, is mounted on it", mp, cp);
		append(&why, msg);
	}
	if (why != NULL)
		ret = tern_error_make_quiet(err, EBUSY, "%s", why);
out:
	list_clear(&now);
	list_clear(&failed);
	return ret;
}

int tern_host_mounts_undo(int statedir, tern_error **err)
{
	unsigned long long ns = 0;
	record r;
	int ret = record_read(statedir, &r, err);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	ret = mntns_id(&ns, err);
	if (ret == 0 && ns != r.mntns)
		ret = tern_error_make_quiet(err, EXDEV,
					    "the container's mounts are in mount namespace %llu, "
					    "this tern runs in %llu: run it there to unmount them",
					    r.mntns, ns);
	if (ret == 0)
		ret = unmount_ours(&r, err);
	if (ret == 0 && unlinkat(statedir, TERN_HOST_MOUNTS_FILE, 0) < 0 && errno != ENOENT)
		ret = tern_error_make(err, errno, "remove `%s`", TERN_HOST_MOUNTS_FILE);
	record_clear(&r);
	return ret < 0 ? tern_error_wrap(err, "unmount what the container mounted on the host") : 0;
}
