#include "state.h"
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "host-mounts.h"
#include "log.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Root in a user namespace other than the host's: its uid_map is not the
 * identity map of the whole range. */
static bool in_user_namespace(void)
{
	cleanup_close int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	char buf[128];
	unsigned long a, b, n;
	ssize_t len;

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	return !(sscanf(buf, "%lu %lu %lu", &a, &b, &n) == 3 && a == 0 && b == 0 &&
		 n == 4294967295UL);
}

/* runc's rule for honouring XDG_RUNTIME_DIR: always for a non-root user;
 * for root only inside a user namespace (rootlesskit, `podman unshare`)
 * when $USER says it is somebody else. */
static bool honor_xdg_runtime_dir(void)
{
	const char *user = getenv("USER");

	if (geteuid() != 0)
		return true;
	if (!in_user_namespace())
		return false;
	return user && *user && strcmp(user, "root") != 0;
}

char *tern_state_default_root(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *root;

	if (xdg == NULL || *xdg == '\0' || !honor_xdg_runtime_dir())
		return tern_xstrdup(TERN_DEFAULT_ROOT);
	root = tern_strdup_printf("%s/tern", xdg);
	/* As runc does for $XDG_RUNTIME_DIR/runc: private, and sticky so that
	 * a cleaner of XDG_RUNTIME_DIR leaves it alone. Errors show later,
	 * with the path, when a command uses the directory. */
	if (mkdir(root, 0700) == 0 || errno == EEXIST) {
		cleanup_close int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
		    !(st.st_mode & S_ISVTX))
			fchmod(fd, (st.st_mode & 07777) | S_ISVTX);
	}
	return root;
}

/* " (...)": what a rootless caller missed, for errors about the state root. */
static const char *root_hint(const char *root, int e)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if ((e != EACCES && e != EPERM && e != EROFS) || geteuid() == 0 ||
	    strcmp(root, TERN_DEFAULT_ROOT) != 0)
		return "";
	if (xdg == NULL || *xdg == '\0')
		return " (running rootless with XDG_RUNTIME_DIR unset: set it, or pass "
		       "--root DIR)";
	return " (running rootless: pass --root DIR, or leave it to the default "
	       "$XDG_RUNTIME_DIR/tern)";
}

int tern_state_check_id(const char *id, tern_error **err)
{
	if (id == NULL || *id == '\0')
		return tern_error_make(err, EINVAL, "container id is empty");
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return tern_error_make(err, EINVAL, "invalid container id `%s`", id);
	/* The id is one path component: the state directory and the cgroup
	 * are named after it, and a longer name fails as "File name too long"
	 * on the directory, with the whole path. */
	if (strlen(id) > NAME_MAX)
		return tern_error_make(err, EINVAL,
				       "container id is too long: %zu characters (at most %d)",
				       strlen(id), NAME_MAX);
	for (const char *p = id; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '+' || c == '-' || c == '.'))
			return tern_error_make(err, EINVAL, "invalid container id `%s`", id);
	}
	return 0;
}

void tern_state_dir_free(tern_container_dir *dir)
{
	if (dir == NULL)
		return;
	if (dir->dirfd >= 0)
		close(dir->dirfd);
	free(dir->root);
	free(dir->id);
	free(dir->dir);
	free(dir);
}

void tern_state_dir_freep(tern_container_dir **dir)
{
	tern_state_dir_free(*dir);
	*dir = NULL;
}

static tern_container_dir *dir_new(const char *root, const char *id)
{
	tern_container_dir *d = tern_xmalloc0(sizeof(*d));
	d->root = tern_absolute_path(root);
	if (d->root == NULL)
		d->root = tern_xstrdup(root);
	d->id = tern_xstrdup(id);
	d->dir = tern_strdup_printf("%s/%s", d->root, id);
	d->dirfd = -1;
	return d;
}

static int lock_dir(tern_container_dir *d, bool wait, tern_error **err)
{
	d->dirfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dirfd < 0)
		return tern_error_make(err, errno, "open state directory `%s`", d->dir);
	if (flock(d->dirfd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
		return tern_error_make(err, errno, "lock state directory `%s`", d->dir);
	return 0;
}

/* The directory we hold is still the one at root/id. The command that
 * held the lock before us may have been a delete, which removed it (the
 * lock goes with its last fd, after the rmdir); a create may even have
 * made a new directory under the same id since. */
static bool still_linked(const tern_container_dir *d)
{
	struct stat held, now;

	return fstat(d->dirfd, &held) == 0 && stat(d->dir, &now) == 0 &&
	       held.st_dev == now.st_dev && held.st_ino == now.st_ino;
}

static void unlock_dir(tern_container_dir *d)
{
	if (d->dirfd >= 0)
		close(d->dirfd);
	d->dirfd = -1;
}

/* Held by a create from its mkdir of root/id until it holds the lock of
 * that directory. Without it, a second create of the same id could find
 * the new directory unlocked and without state.json, in the instant
 * between the first one's mkdir and flock, and take it for the leftover
 * of a killed create: both then failed, or worked on one directory. */
static int lock_creates(const char *root, tern_error **err)
{
	/* the root directory itself: a lock file would stay behind in it */
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		return tern_error_make(err, e, "open state root `%s`%s", root, root_hint(root, e));
	}
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		return tern_error_make(err, e, "lock state root `%s`", root);
	}
	return fd;
}

/* Delete every entry of a flat directory, then the directory. */
static int remove_dir_contents_at(int dirfd, const char *path, int depth, tern_error **err);

/* A directory in the state directory that is not empty (a migration's
 * work directory, migrate-XXXXXX/{images,tls,work}): emptied through
 * descriptors opened without following symlinks, on this file system only
 * (a mount is never emptied), a few levels deep. */
static int remove_subdir(int dirfd, const char *path, const char *name, int depth)
{
	struct stat parent, sub;
	cleanup_close int fd = -1;
	int ret;

	if (depth > 8 || fstat(dirfd, &parent) < 0)
		return -ENOTEMPTY;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sub) < 0)
		return -errno;
	if (sub.st_dev != parent.st_dev)
		return -EBUSY;
	cleanup_free char *subpath = tern_strdup_printf("%s/%s", path, name);
	ret = remove_dir_contents_at(fd, subpath, depth, NULL);
	if (ret < 0)
		return ret;
	return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int remove_dir_contents_at(int dirfd, const char *path, int depth, tern_error **err)
{
	int fd = dup(dirfd);
	DIR *dir;
	struct dirent *de;

	if (fd < 0)
		return tern_error_make(err, errno, "dup");
	dir = fdopendir(fd);
	if (dir == NULL) {
		close(fd);
		return tern_error_make(err, errno, "opendir `%s`", path);
	}
	rewinddir(dir);
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT) {
			if (errno == EISDIR && unlinkat(dirfd, de->d_name, AT_REMOVEDIR) == 0)
				continue;
			if (errno == ENOTEMPTY || errno == EEXIST) {
				int r = remove_subdir(dirfd, path, de->d_name, depth + 1);
				if (r == 0)
					continue;
				errno = r == -ENOTEMPTY || r == -EBUSY ? ENOTEMPTY : -r;
			}
			/* before closedir: de lives in dir's buffer */
			int ret = tern_error_make(err, errno, "remove `%s/%s`", path, de->d_name);
			closedir(dir);
			return ret;
		}
	}
	closedir(dir);
	return 0;
}

static int remove_dir_contents(int dirfd, const char *path, tern_error **err)
{
	return remove_dir_contents_at(dirfd, path, 0, err);
}

static bool reclaim_stale(tern_container_dir *d)
{
	oci_state *st = NULL;

	if (faccessat(d->dirfd, TERN_STATE_FILE, F_OK, 0) == 0) {
		if (tern_state_read(d, &st, NULL) < 0)
			return false;
		bool stale = st->status && strcmp(st->status, "creating") == 0;
		if (stale && st->own_cgroup)
			stale = tern_cgroup_remove(&st->cgroup_paths,
						   st->systemd_cgroup
						       ? tern_systemd_state_unit(st->cgroup_path)
						       : NULL,
						   NULL) == 0;
		oci_state_free(st);
		if (!stale)
			return false;
	}
	/* The mounts it made in our namespace when it had none of its own. */
	if (tern_host_mounts_undo(d->dirfd, NULL) < 0)
		return false;
	tern_debug("reclaiming the state directory %s of a create that did not finish", d->dir);
	return remove_dir_contents(d->dirfd, d->dir, NULL) == 0;
}

/* Messages that clients match. They were written against runc and look
 * for its words in the runtime's output (go-runc puts the combined output
 * in its error; tern prints errors on stderr also with --log), so tern's
 * messages start with runc's words and give tern's context after them.
 *
 * - "container not running": containerd 1.6's runc shim after `kill`
 *   (pkg/process/utils.go, checkKillError) takes the process for already
 *   finished, so the stop of a pod whose container exited goes on. tern:
 *   kill of a stopped container (container.c, tern_container_kill).
 * - "no such process", in any case: the same check. tern: an init that
 *   exits while being signalled (ESRCH) also says "container not running"
 *   (ditto).
 * - "does not exist": the same check (no such container) and the shim's
 *   Init.delete after `delete` (deleted already). podman 4.3 looks for it
 *   and "No such file" after `state` (libpod/oci_conmon_common.go,
 *   UpdateContainerStatus: the container is gone), though only when the
 *   command could not be started. tern: any command on an unknown id.
 * - podman 4.3 after create, start and exec (libpod/oci_util.go,
 *   getOCIRuntimeError): "permission denied", "operation not permitted"
 *   make exit code 126; "executable file not found in", "no such file or
 *   directory" make 127. tern keeps the strerror text in every error.
 * - "already exists": no client above matches it; runc's "container with
 *   given ID already exists" is what tern says too, for scripts that look. */
int tern_state_dir_create(const char *root, const char *id, tern_container_dir **out,
			  tern_error **err)
{
	cleanup_close int create_lock = -1;
	tern_container_dir *d;
	int ret;

	ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	if (mkdir(root, 0700) < 0 && errno != EEXIST) {
		ret = tern_mkdir_p(root, 0700, err);
		if (ret < 0)
			return tern_error_wrap(err, "create state root%s", root_hint(root, -ret));
	}
	create_lock = lock_creates(root, err);
	if (create_lock < 0)
		return create_lock;
	d = dir_new(root, id);
	/* (again when a delete removed the directory we found) */
	for (int attempt = 0; mkdir(d->dir, 0711) < 0; attempt++) {
		int e = errno;
		if (e != EEXIST) {
			tern_state_dir_free(d);
			return tern_error_make(err, e, "create state directory `%s/%s`%s", root, id,
					       root_hint(root, e));
		}
		/* A create that was killed leaves an unlocked directory with no
		 * state.json, or one still saying "creating": reclaim it (and the
		 * cgroup it made) rather than block the id forever. A live create
		 * holds the lock, so it is never taken for stale. */
		if (lock_dir(d, false, NULL) == 0) {
			if (!still_linked(d) && attempt < 100) {
				unlock_dir(d);
				continue;
			}
			if (reclaim_stale(d)) {
				*out = d;
				return 0;
			}
		}
		tern_state_dir_free(d);
		return tern_error_make_quiet(err, EEXIST,
					     "container with given ID already exists: `%s`", id);
	}
	ret = lock_dir(d, false, err);
	if (ret < 0) {
		rmdir(d->dir);
		tern_state_dir_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

bool tern_state_dir_reclaim_unfinished(const char *root, const char *id)
{
	cleanup_close int create_lock = -1;
	tern_container_dir *d;
	bool done = false;

	if (tern_state_check_id(id, NULL) < 0)
		return false;
	/* a create between its mkdir and its lock holds this */
	create_lock = lock_creates(root, NULL);
	if (create_lock < 0)
		return false;
	d = dir_new(root, id);
	/* unlocked: no create is running; no state.json: it never got far
	 * enough to make anything the state would have to record */
	if (lock_dir(d, false, NULL) == 0 && faccessat(d->dirfd, TERN_STATE_FILE, F_OK, 0) < 0 &&
	    errno == ENOENT && reclaim_stale(d))
		done = rmdir(d->dir) == 0;
	tern_state_dir_free(d);
	return done;
}

int tern_state_dir_open(const char *root, const char *id, bool peek, tern_container_dir **out,
			tern_error **err)
{
	tern_container_dir *d;
	int ret;

	ret = tern_state_check_id(id, err);
	if (ret < 0)
		return ret;
	d = dir_new(root, id);
	for (int attempt = 0;; attempt++) {
		d->dirfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d->dirfd < 0 || faccessat(d->dirfd, TERN_STATE_FILE, F_OK, 0) < 0) {
			int e = errno;
			tern_state_dir_free(d);
			if (e == ENOENT)
				return tern_state_error_gone(root, id, err);
			return tern_error_make(err, e, "container `%s`%s", id, root_hint(root, e));
		}
		if (peek) {
			/* state.json is replaced by rename: reading it unlocked is
			 * safe (and a read that finds it gone says so) */
			if (flock(d->dirfd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
				d->busy = true;
			break;
		}
		if (flock(d->dirfd, LOCK_EX) < 0) {
			int e = errno;
			tern_state_dir_free(d);
			return tern_error_make(err, e, "lock state directory of `%s`", id);
		}
		/* The holder we waited for may have deleted the container: look
		 * again, at what is under the id now (nothing, or a new one). */
		if ((still_linked(d) && faccessat(d->dirfd, TERN_STATE_FILE, F_OK, 0) == 0) ||
		    attempt >= 100)
			break;
		unlock_dir(d);
	}
	*out = d;
	return 0;
}

int tern_state_mark_partial_images(tern_container_dir *d, const char *images, tern_error **err)
{
	cleanup_free char *abs = tern_absolute_path(images);
	cleanup_close int fd = -1;
	int ret;

	if (abs == NULL)
		return tern_error_make(err, errno, "--image-path `%s`", images);
	fd = openat(d->dirfd, TERN_PARTIAL_IMAGES ".tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return tern_error_make(err, errno, "write `%s/%s`", d->dir, TERN_PARTIAL_IMAGES);
	ret = tern_write_all(fd, abs, strlen(abs));
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s/%s`", d->dir, TERN_PARTIAL_IMAGES);
	if (renameat(d->dirfd, TERN_PARTIAL_IMAGES ".tmp", d->dirfd, TERN_PARTIAL_IMAGES) < 0)
		return tern_error_make(err, errno, "write `%s/%s`", d->dir, TERN_PARTIAL_IMAGES);
	return 0;
}

void tern_state_unmark_partial_images(tern_container_dir *d)
{
	unlinkat(d->dirfd, TERN_PARTIAL_IMAGES, 0);
}

void tern_state_remove_partial_images(tern_container_dir *d)
{
	cleanup_close int fd = openat(d->dirfd, TERN_PARTIAL_IMAGES, O_RDONLY | O_CLOEXEC);
	cleanup_free char *path = NULL;
	size_t len;

	if (fd < 0 || tern_read_fd_all(fd, &path, &len, 0) < 0)
		return;
	if (len > 0 && path[0] == '/' && strlen(path) == len) {
		tern_debug("removing %s, the images of a checkpoint that did not finish", path);
		tern_remove_tree(path);
	}
	tern_state_unmark_partial_images(d);
}

int tern_state_error_gone(const char *root, const char *id, tern_error **err)
{
	return tern_error_make_quiet(
	    err, ENOENT, "container does not exist: no container `%s` under `%s`", id, root);
}

int tern_state_dir_remove(tern_container_dir *d, tern_error **err)
{
	cleanup_free char *kept = tern_strdup_printf("%s/%s", d->dir, TERN_LAST_FAILURE_DIR);

	tern_state_remove_partial_images(d);
	/* (the one directory in it: the emptying below goes one level deep) */
	tern_remove_tree(kept);
	/* An exec does not hold the lock while it runs, and may add its mark
	 * (TERN_NETNS_EXEC_MARK) between the emptying and the rmdir: empty
	 * the directory again then. */
	for (int attempt = 0;; attempt++) {
		int ret = remove_dir_contents(d->dirfd, d->dir, err);
		if (ret < 0)
			return ret;
		if (rmdir(d->dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != ENOTEMPTY || attempt >= 10)
			return tern_error_make(err, errno, "remove `%s`", d->dir);
	}
}

int tern_state_write(tern_container_dir *d, const oci_state *state, tern_error **err)
{
	cleanup_free char *json = NULL;
	size_t len = 0;
	cleanup_close int fd = -1;
	int ret;

	ret = oci_state_to_json(state, OCI_STATE_DISK, &json, &len);
	if (ret < 0)
		return tern_error_make(err, -ret, "serialize state of `%s`", d->id);
	fd = openat(d->dirfd, TERN_STATE_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return tern_error_make(err, errno, "write `%s/%s.tmp`", d->dir, TERN_STATE_FILE);
	ret = tern_write_all(fd, json, len);
	if (ret < 0)
		return tern_error_make(err, -ret, "write `%s/%s.tmp`", d->dir, TERN_STATE_FILE);
	if (renameat(d->dirfd, TERN_STATE_FILE ".tmp", d->dirfd, TERN_STATE_FILE) < 0)
		return tern_error_make(err, errno, "rename state file in `%s`", d->dir);
	return 0;
}

int tern_state_read(tern_container_dir *d, oci_state **out, tern_error **err)
{
	cleanup_close int fd = openat(d->dirfd, TERN_STATE_FILE, O_RDONLY | O_CLOEXEC);
	cleanup_free char *data = NULL;
	char *msg = NULL;
	size_t len;
	int ret;

	if (fd < 0)
		return tern_error_make(err, errno, "read state of `%s`", d->id);
	ret = tern_read_fd_all(fd, &data, &len, 0);
	if (ret < 0)
		return tern_error_make(err, -ret, "read state of `%s`", d->id);
	ret = oci_state_parse_data(data, len, TERN_STATE_FILE, out, &msg);
	if (ret < 0) {
		tern_error_make(err, -ret, "state of `%s`: %s", d->id, msg ? msg : "invalid");
		free(msg);
		return ret;
	}
	return 0;
}

bool tern_state_init_started(const oci_state *state)
{
	uint64_t dev, ino;

	return state->init_exe_ino != 0 && tern_process_exe_id(state->pid, &dev, &ino) &&
	       (dev != state->init_exe_dev || ino != state->init_exe_ino);
}

/* ---- the mark of a migrated container ----
 *
 * TERN_MIGRATED_FILE: two lines, HOST:PORT and the id on the target. A
 * file of its own rather than a field of state.json: the source writes it
 * while criu's lazy dump holds the state directory's lock (post-copy), and
 * a file renamed into place is there whole or not at all. */

int tern_state_mark_migrated(const char *root, const char *id, const char *to, const char *as,
			     tern_error **err)
{
	cleanup_free char *dir = tern_strdup_printf("%s/%s", root, id);
	cleanup_free char *text = tern_strdup_printf("%s\n%s\n", to, as ? as : id);
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int fd = -1;

	if (strchr(to, '\n') || (as && strchr(as, '\n')))
		return tern_error_make(err, EINVAL, "mark `%s` migrated: bad target `%s`", id, to);
	if (dfd < 0)
		return tern_error_make(err, errno, "mark `%s` migrated: `%s`", id, dir);
	fd = openat(dfd, TERN_MIGRATED_FILE ".tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
	    renameat(dfd, TERN_MIGRATED_FILE ".tmp", dfd, TERN_MIGRATED_FILE) < 0)
		return tern_error_make(err, errno, "mark `%s` migrated: `%s/%s`", id, dir,
				       TERN_MIGRATED_FILE);
	return 0;
}

int tern_state_unmark_migrated(tern_container_dir *d, tern_error **err)
{
	if (unlinkat(d->dirfd, TERN_MIGRATED_FILE, 0) < 0 && errno != ENOENT)
		return tern_error_make(err, errno, "remove `%s/%s`", d->dir, TERN_MIGRATED_FILE);
	return 0;
}

static bool read_migrated(int dirfd, char **to, char **as)
{
	cleanup_close int fd = openat(dirfd, TERN_MIGRATED_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[1024];
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl++ = '\0';
	char *end = nl ? strchr(nl, '\n') : NULL;
	if (end)
		*end = '\0';
	/* (an unreadable mark still says migrated: better refused than
	 * resumed) */
	*to = tern_xstrdup(buf[0] ? buf : "unknown");
	*as = nl && *nl ? tern_xstrdup(nl) : NULL;
	return true;
}

void tern_state_refresh_status(tern_container_dir *d, oci_state *state)
{
	const char *status;

	/* "creating" only while a create (or restore) holds the lock */
	if (d->busy && state->status && strcmp(state->status, "creating") == 0)
		return;
	/* otherwise that create is gone: the container is stopped */
	if (state->pid <= 0 || tern_process_start_time(state->pid) != state->pid_start_time ||
	    tern_process_is_zombie(state->pid)) {
		status = "stopped";
		state->pid = 0;
	} else if (faccessat(d->dirfd, TERN_EXEC_FIFO, F_OK, 0) == 0 &&
		   !tern_state_init_started(state)) {
		status = "created";
	} else if (tern_cgroup_is_frozen(&state->cgroup_paths)) {
		status = "paused";
	} else {
		status = "running";
	}
	/* a migrated container stays so whatever its process does, until
	 * deleted (or resumed --force) */
	free(state->migrated_to);
	free(state->migrated_as);
	state->migrated_to = state->migrated_as = NULL;
	if (read_migrated(d->dirfd, &state->migrated_to, &state->migrated_as))
		status = "migrated";
	free(state->status);
	state->status = tern_xstrdup(status);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int tern_state_list_ids(const char *root, char ***ids, tern_error **err)
{
	DIR *dir = opendir(root);
	struct dirent *de;
	size_t n = 0, cap = 8;
	char **out;

	if (dir == NULL) {
		if (errno == ENOENT) {
			*ids = tern_xmalloc0(sizeof(char *));
			return 0;
		}
		int e = errno;
		return tern_error_make(err, e, "open state root `%s`%s", root, root_hint(root, e));
	}
	out = tern_xmalloc0(cap * sizeof(char *));
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (tern_state_check_id(de->d_name, NULL) < 0)
			continue;
		char rel[1200];
		snprintf(rel, sizeof(rel), "%s/" TERN_STATE_FILE, de->d_name);
		if (faccessat(dirfd(dir), rel, F_OK, 0) < 0)
			continue;
		if (n + 1 >= cap) {
			cap *= 2;
			out = realloc(out, cap * sizeof(char *));
			if (out == NULL)
				abort();
		}
		out[n++] = tern_xstrdup(de->d_name);
	}
	out[n] = NULL;
	closedir(dir);
	qsort(out, n, sizeof(char *), compare_strings);
	*ids = out;
	return 0;
}

char *tern_state_now_rfc3339(void)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	return tern_strdup_printf("%s.%09ldZ", base, ts.tv_nsec);
}
