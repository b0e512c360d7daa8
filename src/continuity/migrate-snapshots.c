/* tern migrate and the container's snapshots (ROOT/@snapshots/ID, see
 * snapshot.h). A migration used to delete them without a word; now a
 * container that has snapshots is refused before anything changes unless
 * the operator chose:
 *   --drop-snapshots  they are deleted with the source copy (said before
 *                     the migration starts and once they are gone);
 *   --with-snapshots  they travel: the source holds its snapshot store's
 *                     lock for the whole migration (no snapshot is taken
 *                     or deleted meanwhile), and right after ACCEPT sends
 *                     the store as one rootfs-sync round (rootfs-sync.h:
 *                     owners, modes, xattrs, sparse files, and the hard
 *                     links by which a snapshot shares the unchanged files
 *                     of the one before it, since the whole store is one
 *                     tree) into ROOT/@snapshots/NEW-ID on the target.
 *
 * The negotiation: OFFER says how many snapshots come ("snapshots": N);
 * a target that can keep them says so in its ACCEPT ("snapshots": true).
 * An older target ignores the key and its ACCEPT lacks it: the source
 * stops there with an error saying so, and both roll back. The stream
 * reuses ROOTFS_MANIFEST (the target's empty store), ROOTFS_DATA and
 * ROOTFS_DONE, before the rootfs rounds.
 *
 * On the target the store is the migration's until the commit: a failure
 * (or a killed receiver: its watchdog, or the next receiver's sweep, reads
 * WORK_SNAPSHOTS in the work directory) removes it. What the store held
 * besides snapshots is dropped there: a warm spare and its leftovers (dot
 * entries), the clones/ marks of clones that stay on the source, and
 * `head` (the target's rootfs is a copy: its files never equal the
 * identities the snapshot recorded, so the next snapshot there starts a
 * new chain). */
#include "checkpoint.h"
#include "log.h"
#include "migrate.h"
#include "migrate-source-internal.h"
#include "migrate-target-internal.h"
#include "rootfs-sync.h"
#include "snapshot-store.h"
#include "state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct source_snaps {
	tern_snap_store store; /* locked from the check until finish */
	char **names;
	size_t n;
};

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* `name` in the store at `dirfd` is a snapshot: a directory itself (not a
 * symlink: the target's store came from the network) with a valid name
 * and a regular snapshot.txt. */
static bool is_snapshot(int dirfd, const char *name)
{
	struct stat st;

	if (tern_snap_check_name(name, NULL) < 0 ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return false;
	cleanup_close int fd = openat(dirfd, name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && fstatat(fd, TERN_SNAP_META_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

/* The snapshots in the store at `dirfd` (is_snapshot), sorted. */
static size_t list_names(int dirfd, char ***out)
{
	cleanup_close int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (d == NULL)
		return 0;
	fd = -1;
	/* (the offset is shared with `dirfd`, which another walk may have
	 * left at the end) */
	rewinddir(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (!is_snapshot(dirfd, e->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			*out = realloc(*out, cap * sizeof(**out));
			if (*out == NULL)
				abort();
		}
		(*out)[n++] = tern_xstrdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(*out, n, sizeof(**out), compare_names);
	return n;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* "a, b, c" */
static char *join_names(char *const *names, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		abort();
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", names[i]);
	fclose(f);
	return buf;
}

/* "BEFORE N snapshot(s) of `ID` AFTER", in a buffer of its own (one
 * event at a time) */
static const char *say(size_t n, const char *id, const char *before, const char *after)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s %zu snapshot%s of `%s`%s%s", before, n, n == 1 ? "" : "s",
		 id, *after ? " " : "", after);
	return buf;
}

/* The "snapshots" event; its text: `what` (say the count and the id),
 * then the names. */
static void snaps_event(tern_mig_progress *p, const char *action, char *const *names, size_t n,
			const tern_rootfs_stats *st, const char *what)
{
	cleanup_free char *list = join_names(names, n);
	tern_jw w;

	tern_jw_begin(&w);
	tern_jw_str(&w, "action", action);
	tern_jw_u64(&w, "count", n);
	tern_jw_strv(&w, "names", names, n);
	if (st)
		tern_jw_u64(&w, "bytes", st->stream_bytes);
	tern_mig_event(p, "snapshots", &w, "%s: %s", what, list);
}

/* ---- the source ---- */

/* (Re)read the store: s->snaps holds its snapshots, or is NULL when it
 * has none. With `hold`, what a killed snapshot left is swept (so not
 * sent) and the lock is kept. A container with snapshots but no choice of
 * the operator's is refused. */
static int snaps_read(source *s, bool hold, tern_error **err)
{
	struct source_snaps *sn = tern_xmalloc0(sizeof(*sn));
	int ret;

	source_snapshots_free(s);
	sn->store.fd = -1;
	ret = tern_snap_store_open(s->env->rt->root, s->o->id, false, &sn->store, err);
	if (ret == 0 && hold)
		tern_snap_store_sweep(&sn->store);
	if (ret == 0)
		sn->n = list_names(sn->store.fd, &sn->names);
	if (ret < 0 || sn->n == 0 || !hold)
		tern_snap_store_close(&sn->store);
	if (ret < 0 || sn->n == 0) {
		free(sn);
		return ret == -ENOENT ? 0 : ret;
	}
	s->snaps = sn;
	if (!s->o->with_snapshots && !s->o->drop_snapshots) {
		cleanup_free char *list = join_names(sn->names, sn->n);
		return tern_error_make_quiet(
		    err, EBUSY,
		    "container `%s` has %zu snapshot%s (%s), which a migration would lose: pass "
		    "--with-snapshots to send them to the target (it keeps them under the same "
		    "names) or --drop-snapshots to delete them with the container here",
		    s->o->id, sn->n, sn->n == 1 ? "" : "s", list);
	}
	return 0;
}

int source_snapshots_check(source *s, tern_error **err)
{
	struct source_snaps *sn;
	/* (the lock only while it reads: a second migration of the
	 * container must reach the migration lock and be refused there) */
	int ret = snaps_read(s, false, err);

	if (ret < 0 || (sn = s->snaps) == NULL)
		return ret;
	if (s->o->with_snapshots)
		snaps_event(&s->p, "send", sn->names, sn->n, NULL,
			    say(sn->n, s->o->id, "--with-snapshots: sending", "to the target"));
	else
		snaps_event(
		    &s->p, "drop", sn->names, sn->n, NULL,
		    say(sn->n, s->o->id, "--drop-snapshots: deleting", "once the target runs it"));
	return 0;
}

int source_snapshots_lock(source *s, tern_error **err)
{
	return snaps_read(s, true, err);
}

size_t source_snapshots_count(const source *s)
{
	return s->snaps && s->o->with_snapshots ? s->snaps->n : 0;
}

static int snaps_write(void *data, const void *buf, size_t len, tern_error **err)
{
	return tern_mchan_send(data, TERN_MSG_ROOTFS_DATA, buf, len, err);
}

int source_snapshots_send(source *s, bool target_takes, tern_error **err)
{
	struct source_snaps *sn = s->snaps;
	cleanup_free char *manifest = NULL;
	tern_rootfs_sender *rs = NULL;
	tern_rootfs_stats st = {0};
	size_t mlen;
	int ret;

	if (source_snapshots_count(s) == 0)
		return 0;
	if (!target_takes)
		return tern_error_make_quiet(
		    err, EPROTONOSUPPORT,
		    "--with-snapshots: the target's tern cannot receive snapshots (an older "
		    "version): upgrade it, or migrate with --drop-snapshots");
	ret = tern_mchan_recv(s->c, TERN_MSG_ROOTFS_MANIFEST, NULL, &manifest, &mlen,
			      TERN_MIG_STEP_TIMEOUT_MS, err);
	/* (a descriptor of its own: a walk of its own offset) */
	cleanup_close int fd = openat(sn->store.fd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (ret == 0 && fd < 0)
		ret = tern_error_make(err, errno, "`%s`", sn->store.path);
	if (ret == 0)
		ret = tern_rootfs_sender_new(fd, manifest, mlen, &rs, err);
	if (ret == 0)
		ret = tern_rootfs_sender_round(rs, snaps_write, s->c, &st, err);
	tern_rootfs_sender_free(rs);
	if (ret == 0)
		ret = tern_mchan_send(s->c, TERN_MSG_ROOTFS_DONE, NULL, 0, err);
	if (ret < 0)
		return tern_error_wrap(err, "sending the snapshots `%s`", sn->store.path);
	snaps_event(&s->p, "sent", sn->names, sn->n, &st, say(sn->n, s->o->id, "sent", ""));
	return 0;
}

void source_snapshots_finish(source *s)
{
	struct source_snaps *sn = s->snaps;

	if (sn == NULL)
		return;
	/* (the deletion that follows locks the store itself) */
	tern_snap_store_close(&sn->store);
	if (s->o->drop_snapshots)
		snaps_event(&s->p, "dropped", sn->names, sn->n, NULL,
			    say(sn->n, s->o->id, "--drop-snapshots: deleted", ""));
}

void source_snapshots_free(source *s)
{
	if (s->snaps == NULL)
		return;
	tern_snap_store_close(&s->snaps->store);
	free_names(s->snaps->names, s->snaps->n);
	free(s->snaps);
	s->snaps = NULL;
}

/* ---- the target ---- */

static char *target_store_path(const target *t)
{
	return tern_strdup_printf("%s/" TERN_SNAPSHOT_DIR "/%s", t->env->rt->root, t->id);
}

int target_snapshots_check(target *t, tern_error **err)
{
	cleanup_free char *path = target_store_path(t);
	DIR *d;
	bool empty = true;

	if (t->snapshots == 0)
		return 0;
	d = opendir(path);
	if (d == NULL)
		return 0;
	for (struct dirent *e; empty && (e = readdir(d)) != NULL;)
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	if (!empty)
		return tern_error_make_quiet(
		    err, EEXIST,
		    "--with-snapshots: `%s` holds snapshots of another `%s` already: remove them "
		    "(`tern snapshot --delete`), or receive with --id NEW-ID",
		    path, t->id);
	return 0;
}

/* What the store holds besides the snapshots goes (see the top). */
static void tidy_store(int dirfd, const char *path)
{
	cleanup_close int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (d == NULL)
		return;
	fd = -1;
	rewinddir(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cleanup_free char *sub = tern_strdup_printf("%s/%s", path, e->d_name);
		if (is_snapshot(dirfd, e->d_name)) {
			cleanup_free char *clones = tern_strdup_printf("%s/clones", sub);
			tern_remove_tree(clones);
			continue;
		}
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			tern_remove_tree(sub);
		else
			unlinkat(dirfd, e->d_name, 0);
	}
	closedir(d);
}

static int receive_round(target *t, int storefd, tern_error **err)
{
	cleanup_free char *manifest = NULL;
	tern_rootfs_applier *a = NULL;
	size_t mlen;
	int ret = tern_rootfs_manifest(storefd, &manifest, &mlen, err);

	if (ret == 0)
		ret = tern_mchan_send(t->c, TERN_MSG_ROOTFS_MANIFEST, manifest, mlen, err);
	if (ret == 0)
		ret = tern_rootfs_applier_new(storefd, &a, err);
	for (bool done = false; ret == 0 && !done;) {
		cleanup_free char *data = NULL;
		uint32_t type;
		size_t len;
		ret = tern_mchan_recv(t->c, 0, &type, &data, &len, TERN_MIG_STEP_TIMEOUT_MS, err);
		if (ret < 0)
			break;
		if (type == TERN_MSG_ROOTFS_DATA) {
			ret = tern_rootfs_applier_feed(a, data, len, err);
		} else if (type == TERN_MSG_ROOTFS_DONE) {
			ret = tern_rootfs_applier_finish_round(a, err);
			done = true;
		} else {
			ret = tern_error_make_quiet(
			    err, EPROTO, "protocol: message type %u while the snapshots arrive",
			    type);
		}
	}
	tern_rootfs_applier_free(a);
	return ret;
}

int target_snapshots_receive(target *t, tern_error **err)
{
	cleanup_free char *base = NULL, *path = NULL, *mark = NULL;
	cleanup_close int fd = -1;
	char **names = NULL;
	size_t n = 0;
	int ret;

	if (t->snapshots == 0)
		return 0;
	base = tern_strdup_printf("%s/" TERN_SNAPSHOT_DIR, t->env->rt->root);
	ret = tern_mkdir_p(base, 0700, err);
	if (ret < 0)
		return tern_error_wrap(err, "--with-snapshots");
	path = target_store_path(t);
	/* empty (target_snapshots_check): a store is claimed by its mkdir */
	rmdir(path);
	if (mkdir(path, 0700) < 0)
		return tern_error_make(err, errno, "--with-snapshots: `%s`", path);
	/* absolute: a later receiver (the sweep) may run elsewhere */
	t->snap_store = realpath(path, NULL);
	if (t->snap_store == NULL) {
		ret = tern_error_make(err, errno, "--with-snapshots: `%s`", path);
		rmdir(path);
		return ret;
	}
	mark = tern_strdup_printf("%s/" WORK_SNAPSHOTS, t->work);
	ret = tern_write_file(mark, t->snap_store, strlen(t->snap_store), 0600, err);
	if (ret < 0)
		return tern_error_wrap(err, "work directory");
	fd = open(t->snap_store, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return tern_error_make(err, errno, "--with-snapshots: `%s`", t->snap_store);
	ret = receive_round(t, fd, err);
	if (ret < 0)
		return tern_error_wrap(err, "receiving the snapshots into `%s`", t->snap_store);
	tidy_store(fd, t->snap_store);
	n = list_names(fd, &names);
	if (n != t->snapshots)
		ret = tern_error_make_quiet(err, EPROTO,
					    "the source offered %llu snapshots and sent %zu",
					    (unsigned long long)t->snapshots, n);
	else
		snaps_event(&t->p, "received", names, n, NULL, say(n, t->id, "received", ""));
	free_names(names, n);
	return ret;
}

/* The store named by the work directory's WORK_SNAPSHOTS, if it is one
 * (ROOT/@snapshots/ID, written by a receiver), removed. */
void target_snapshots_undo(const char *work)
{
	cleanup_free char *mark = tern_strdup_printf("%s/" WORK_SNAPSHOTS, work);
	cleanup_free char *path = NULL;
	size_t len;

	if (tern_read_file(mark, &path, &len, 4096, NULL) < 0)
		return;
	const char *slash = strrchr(path, '/');
	const char *dir = strstr(path, "/" TERN_SNAPSHOT_DIR "/");
	if (len == 0 || memchr(path, '\0', len) || path[0] != '/' || strstr(path, "/..") ||
	    slash == NULL || dir == NULL || dir + strlen(TERN_SNAPSHOT_DIR) + 1 != slash ||
	    tern_state_check_id(slash + 1, NULL) < 0)
		return;
	tern_remove_tree(path);
	unlink(mark);
}

/* The commit point: the store is the container's now. */
void target_snapshots_commit(target *t)
{
	cleanup_free char *mark =
	    t->work ? tern_strdup_printf("%s/" WORK_SNAPSHOTS, t->work) : NULL;

	if (mark)
		unlink(mark);
	free(t->snap_store);
	t->snap_store = NULL;
}
