/* The snapshot store, ROOT/@snapshots/ID (the layout is in snapshot.h):
 * its lock, its sweep, and its records (snapshot.txt, head, the clones/
 * marks, a snapshot's size). The one owner of the store, so that the
 * layout has one place to change: every other snapshot file opens, locks
 * and reads it through here.
 *
 * Uses snapshot-fs (the size of a tree/) and none of the other snapshot
 * files: it is the lowest of them (the order is in snapshot-store.h). */
#include "snapshot-store.h"
#include "log.h"
#include "snapshot-fs.h"
#include "state.h"
#include "utils.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void tern_snapshot_info_clear(tern_snapshot_info *i)
{
	free(i->name);
	free(i->created);
	free(i->parent);
	memset(i, 0, sizeof(*i));
}

/* A snapshot name: what a container id may be ([A-Za-z0-9_+.-]), starting
 * with a letter or a digit (the store's own entries start with a dot; a
 * leading dash would read as an option). */
int tern_snap_check_name(const char *name, tern_error **err)
{
	if (name == NULL || *name == '\0')
		return tern_error_make_quiet(err, EINVAL, "snapshot name is empty");
	if (!isalnum((unsigned char)name[0]) || strlen(name) > 200 ||
	    tern_state_check_id(name, NULL) < 0 || strcmp(name, TERN_SNAP_HEAD_FILE) == 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "invalid snapshot name `%s`: it must start with a letter "
		    "or a digit, then letters, digits and _ + - ., at most 200",
		    name);
	return 0;
}

void tern_snap_store_close(tern_snap_store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	s->fd = -1;
	s->path = NULL;
}

/* Open (with `create`: make) and lock ROOT/@snapshots/ID. ENOENT when it
 * does not exist and may not be made. */
int tern_snap_store_open(const char *root, const char *id, bool create, tern_snap_store *s,
			 tern_error **err)
{
	int ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	s->path = tern_strdup_printf("%s/" TERN_SNAPSHOT_DIR "/%s", root, id);
	/* a store its holder removed as empty while we waited for the lock
	 * (tern_snap_store_remove_empty): open it anew */
	for (int attempt = 0;; attempt++) {
		struct stat st;
		if (create && tern_mkdir_p(s->path, 0700, err) < 0)
			return tern_error_wrap(err, "snapshot store");
		s->fd = open(s->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (s->fd < 0)
			return errno == ENOENT
				   ? -ENOENT
				   : tern_error_make(err, errno, "snapshot store `%s`", s->path);
		if (flock(s->fd, LOCK_EX) < 0)
			return tern_error_make(err, errno, "lock the snapshot store `%s`", s->path);
		if (fstat(s->fd, &st) < 0 || st.st_nlink > 0 || attempt >= 10)
			return 0;
		tern_closep(&s->fd);
	}
}

void tern_snap_store_remove_empty(tern_snap_store *s)
{
	/* (only an empty one goes: rmdir says so; the lock is still ours) */
	if (s->fd >= 0 && rmdir(s->path) < 0 && errno != ENOTEMPTY && errno != EEXIST)
		tern_debug("remove the empty snapshot store `%s`: %s", s->path, strerror(errno));
}

/* What a tern killed half-way left: .tmp-* directories. The store is
 * locked, so none is in use. */
void tern_snap_store_sweep(tern_snap_store *s)
{
	cleanup_close int fd = dup(s->fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (d == NULL)
		return;
	fd = -1;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, TERN_SNAP_TMP_PREFIX, strlen(TERN_SNAP_TMP_PREFIX)) != 0)
			continue;
		cleanup_free char *path = tern_strdup_printf("%s/%s", s->path, e->d_name);
		tern_debug("removing `%s`, left by a snapshot that did not finish", path);
		tern_remove_tree(path);
	}
	closedir(d);
}

char *tern_snap_head_read(tern_snap_store *s)
{
	char buf[256];
	cleanup_close int fd =
	    openat(s->fd, TERN_SNAP_HEAD_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (tern_snap_check_name(buf, NULL) < 0 ||
	    faccessat(s->fd, buf, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	return tern_xstrdup(buf);
}

int tern_snap_write_at(int dirfd, const char *name, const char *data, tern_error **err)
{
	cleanup_free char *tmp = tern_strdup_printf("%s.new", name);
	cleanup_close int fd =
	    openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || tern_write_all(fd, data, strlen(data)) < 0 ||
	    renameat(dirfd, tmp, dirfd, name) < 0) {
		int e = errno;
		unlinkat(dirfd, tmp, 0);
		return tern_error_make(err, e, "write `%s`", name);
	}
	return 0;
}

/* The flags the dump was taken with: the restore needs the same. */
char *tern_snap_meta_format(const char *created, const char *parent, const tern_snapshot_opts *o,
			    int mem_depth)
{
	return tern_strdup_printf("created %s\nparent %s\ntcp-established %d\next-unix-sk %d\n"
				  "shell-job %d\nfile-locks %d\nlink-remap %d\nmem-depth %d\n",
				  created, parent ? parent : "", o->tcp_established, o->ext_unix_sk,
				  o->shell_job, o->file_locks, o->link_remap, mem_depth);
}

int tern_snap_meta_read(int snapfd, tern_snapshot_info *info, tern_snapshot_opts *o)
{
	cleanup_close int fd =
	    openat(snapfd, TERN_SNAP_META_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_free char *data = NULL;
	size_t len;

	if (fd < 0)
		return -errno;
	if (tern_read_fd_all(fd, &data, &len, 65536) < 0)
		return -EIO;
	for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
		char *v = strchr(line, ' ');
		if (v == NULL)
			continue;
		*v++ = '\0';
		bool on = strcmp(v, "1") == 0;
		/* a key given twice: the last one counts */
		if (info && strcmp(line, "created") == 0) {
			free(info->created);
			info->created = tern_xstrdup(v);
		} else if (info && strcmp(line, "parent") == 0) {
			free(info->parent);
			info->parent = tern_xstrdup(v);
		} else if (o && strcmp(line, "tcp-established") == 0)
			o->tcp_established = on;
		else if (o && strcmp(line, "ext-unix-sk") == 0)
			o->ext_unix_sk = on;
		else if (o && strcmp(line, "shell-job") == 0)
			o->shell_job = on;
		else if (o && strcmp(line, "file-locks") == 0)
			o->file_locks = on;
		else if (o && strcmp(line, "link-remap") == 0)
			o->link_remap = on;
		else if (info && strcmp(line, "mem-depth") == 0)
			info->mem_depth = atoi(v);
	}
	return 0;
}

/* What a snapshot takes on disk and shares with no other: its rootfs
 * record's own part and its images. */
uint64_t tern_snap_own_bytes(int snapfd)
{
	uint64_t sum = tern_snapfs_own_bytes(snapfd);
	cleanup_close int fd = openat(snapfd, "images", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (d == NULL)
		return sum;
	fd = -1;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

/* The first clone (still a container) whose overlay has this snapshot's
 * tree below it, or NULL; markers of clones gone are removed. */
char *tern_snap_live_clone(const char *root, int snapfd)
{
	cleanup_close int fd = openat(snapfd, "clones", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char *found = NULL;

	if (d == NULL)
		return NULL;
	fd = -1;
	for (struct dirent *e; found == NULL && (e = readdir(d)) != NULL;) {
		if (tern_state_check_id(e->d_name, NULL) < 0)
			continue;
		cleanup_free char *state = tern_strdup_printf("%s/%s", root, e->d_name);
		if (access(state, F_OK) == 0)
			found = tern_xstrdup(e->d_name);
		else
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	return found;
}
