/* Mount points for a restore into a fresh rootfs.
 *
 * CRIU puts the checkpointed mount tree back into the rootfs it is given
 * and fails ("Can't stat mountpoint .../etc/resolv.conf") when a mount
 * point is missing there. After a create every one exists, since create
 * made them; but a restore may be handed a rootfs that never saw a
 * create: podman's `container restore --import` rebuilds it from the image
 * and the changes it exported, which leave out the files the runtime made
 * as mount points (/etc/resolv.conf, /etc/hosts, /etc/hostname,
 * /run/.containerenv). So, as runc does before it calls criu, the new
 * config's missing mount points are made, in config order, each resolved
 * inside the rootfs (path-resolve.h: a symlink in the image cannot lead
 * out of it):
 *  - a bind mount: its source must exist (or the restore fails, naming it);
 *    the mount point is a directory for a directory source and an empty
 *    file for anything else, as create makes it;
 *  - any other type but cgroup: a directory.
 * What is not made:
 *  - anything below an earlier mount that is not a bind (a tmpfs, proc,
 *    sysfs, devpts, mqueue): CRIU restores a tmpfs with its content, mount
 *    points included, and the kernel filesystems bring their own entries;
 *    a file made in the rootfs under them would only be junk hidden in the
 *    image. runc leaves out only what is under a tmpfs.
 *  - cgroup mounts: on v2 /sys/fs/cgroup comes with sysfs, on v1 it is in
 *    a tmpfs that CRIU restores.
 *  - anything on the host outside the rootfs and the bind sources: a mount
 *    point below a bind is made in that bind's source, as create makes it,
 *    by binding the source for a moment (runc does the same). Those binds
 *    are made in a child in a mount namespace of its own, which dies with
 *    it: no mount can be left for CRIU to trip on, or on the host.
 */
#include "restore-mountpoints.h"
#include "mountinfo.h"
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool tern_mount_is_bind(const oci_mount *m)
{
	if (m->type && (strcmp(m->type, "bind") == 0 || strcmp(m->type, "rbind") == 0))
		return true;
	for (char **o = m->options; o && *o; o++)
		if (strcmp(*o, "bind") == 0 || strcmp(*o, "rbind") == 0)
			return true;
	return false;
}

/* readlink of an fd: the path the kernel resolved it to. */
static char *fd_target(int fd)
{
	char link[32], buf[PATH_MAX];
	ssize_t n = readlink(tern_fd_path(fd, link, sizeof(link)), buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return tern_xstrdup(buf);
}

char *tern_mount_dest_resolved(const char *rootfs, const char *dest)
{
	cleanup_close int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int fd = -1;
	cleanup_free char *root = NULL, *target = NULL;
	tern_error *e = NULL;

	if (rootfd < 0)
		return tern_xstrdup(dest);
	/* RESOLVE_IN_ROOT: an absolute or ../ symlink stays inside */
	fd = tern_open_in_root(rootfd, dest, O_PATH | O_CLOEXEC, 0, &e);
	if (fd < 0) {
		tern_error_free(e);
		return tern_xstrdup(dest);
	}
	root = fd_target(rootfd);
	target = fd_target(fd);
	if (root == NULL || target == NULL)
		return tern_xstrdup(dest);
	size_t n = strcmp(root, "/") == 0 ? 0 : strlen(root);
	if (strncmp(target, root, n) != 0 || (target[n] != '/' && target[n] != '\0'))
		return tern_xstrdup(dest);
	return tern_xstrdup(target[n] ? target + n : "/");
}

bool tern_mount_at(pid_t pid, const char *path)
{
	char proc[64], *line = NULL;
	size_t cap = 0;
	bool found = false;

	snprintf(proc, sizeof(proc), "/proc/%d/mountinfo", (int)pid);
	FILE *f = fopen(proc, "re");
	if (f == NULL)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		tern_mountinfo_line m;
		if (!tern_mountinfo_parse(line, &m))
			continue;
		cleanup_free char *mp = tern_mountinfo_unescape(m.mountpoint);
		found = mp && strcmp(mp, path) == 0;
	}
	free(line);
	fclose(f);
	return found;
}

/* `path` is `dir` or below it (both cleaned, absolute). */
static bool path_at_or_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

typedef struct {
	const oci_config *config;
	const char *bundle;
	char **dests;  /* cleaned destinations */
	bool *skipped; /* no mount point made: neither for it nor below it */
	int *sources;  /* O_PATH fds of the bind sources, -1 for other mounts */
	int rootfd;
} plan;

/* The innermost earlier mount that mount `i` goes on (the latest of equal
 * ones: it covers the others), or -1 for the rootfs itself (a mount on "/"
 * is left alone, see prepare_one, and counts as the rootfs). */
static long mounted_on(const plan *p, size_t i)
{
	long best = -1;
	size_t best_len = 0;

	for (size_t j = 0; j < i; j++) {
		size_t len = strlen(p->dests[j]);
		if (strcmp(p->dests[j], "/") == 0)
			continue;
		if (path_at_or_below(p->dests[i], p->dests[j]) && (best < 0 || len >= best_len)) {
			best = (long)j;
			best_len = len;
		}
	}
	return best;
}

static bool has_mounts_below(const plan *p, size_t i)
{
	for (size_t k = i + 1; k < p->config->mounts_len; k++)
		if (strcmp(p->dests[k], p->dests[i]) != 0 &&
		    path_at_or_below(p->dests[k], p->dests[i]))
			return true;
	return false;
}

/* Every bind source is opened before anything is made: a source that is
 * gone fails the restore with the rootfs untouched. */
static int open_sources(plan *p, tern_error **err)
{
	for (size_t i = 0; i < p->config->mounts_len; i++) {
		const oci_mount *m = &p->config->mounts[i];
		if (!tern_mount_is_bind(m))
			continue;
		if (m->source == NULL)
			return tern_error_make_quiet(err, EINVAL,
						     "mounts: the bind mount at `%s` has no source",
						     m->destination);
		cleanup_free char *source = m->source[0] == '/'
						? tern_xstrdup(m->source)
						: tern_strdup_printf("%s/%s", p->bundle, m->source);
		p->sources[i] = open(source, O_PATH | O_CLOEXEC);
		if (p->sources[i] < 0)
			return tern_error_make(err, errno, "mounts: bind source `%s` for `%s`",
					       source, m->destination);
	}
	return 0;
}

/* Make (or find) mount i's mount point; bind its source there for a
 * moment when later mounts go below it. */
static int prepare_one(plan *p, size_t i, tern_error **err)
{
	const oci_mount *m = &p->config->mounts[i];
	long on = mounted_on(p, i);
	int src = p->sources[i];
	cleanup_close int dst = -1;
	struct stat st = {.st_mode = S_IFDIR};
	char sp[32], dp[32];

	if (strcmp(p->dests[i], "/") == 0 || (m->type && strcmp(m->type, "cgroup") == 0) ||
	    (on >= 0 && p->skipped[on]) ||
	    (on >= 0 && strcmp(p->dests[on], p->dests[i]) != 0 &&
	     !tern_mount_is_bind(&p->config->mounts[on]))) {
		p->skipped[i] = true;
		return 0;
	}
	if (src >= 0 && fstat(src, &st) < 0)
		return tern_error_make(err, errno, "mounts: stat the bind source for `%s`",
				       m->destination);
	if (on >= 0 && strcmp(p->dests[on], p->dests[i]) == 0)
		/* on top of an earlier mount: its mount point is that one's */
		dst = tern_open_in_root(p->rootfd, m->destination, O_PATH, 0, err);
	else
		dst = tern_mkdir_in_root(p->rootfd, m->destination, !S_ISDIR(st.st_mode), err);
	if (dst < 0)
		return tern_error_wrap(err, "mounts: mount point `%s`", m->destination);
	if (src >= 0 && has_mounts_below(p, i) &&
	    mount(tern_fd_path(src, sp, sizeof(sp)), tern_fd_path(dst, dp, sizeof(dp)), NULL,
		  MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(
		    err, errno, "mounts: bind `%s` on `%s` to make the mount points below it",
		    m->source, m->destination);
	return 0;
}

static int prepare_all(const char *rootfs, plan *p, tern_error **err)
{
	int ret;

	/* nothing mounted here may reach the restoring namespace */
	if (unshare(CLONE_NEWNS) < 0)
		return tern_error_make(err, errno, "unshare a mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return tern_error_make(err, errno, "make / private");
	/* opened in this namespace, so that walks from the rootfs see the
	 * binds made here, and the kernel binds only what is in it */
	ret = open_sources(p, err);
	if (ret < 0)
		return ret;
	p->rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->rootfd < 0)
		return tern_error_make(err, errno, "rootfs `%s`", rootfs);
	for (size_t i = 0; i < p->config->mounts_len; i++) {
		ret = prepare_one(p, i, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void free_plan(plan *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p->dests[i]);
	free(p->dests);
	free(p->skipped);
	free(p->sources);
}

/* The child's error travels as its errno, then its message. */
static void send_error(int fd, const tern_error *e)
{
	int errnum = e ? e->errnum : EIO;
	const char *msg = e && e->msg ? e->msg : "making the mount points failed";

	if (tern_write_all(fd, &errnum, sizeof(errnum)) == 0)
		tern_write_all(fd, msg, strlen(msg));
}

static int receive_error(int fd, pid_t pid, tern_error **err)
{
	cleanup_free char *data = NULL;
	size_t len = 0;
	int errnum, status = 0;

	if (tern_read_fd_all(fd, &data, &len, 1 << 16) < 0)
		len = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (len < sizeof(errnum)) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			return 0;
		return tern_error_make_quiet(err, EIO,
					     "making the restore's mount points: the helper "
					     "process died (wait status 0x%x)",
					     status);
	}
	memcpy(&errnum, data, sizeof(errnum));
	cleanup_free char *msg =
	    tern_strdup_printf("%.*s", (int)(len - sizeof(errnum)), data + sizeof(errnum));
	return tern_error_make_literal(err, errnum > 0 ? errnum : EIO, msg);
}

/* A destination as a cleaned absolute path (the spec wants them absolute;
 * runc takes a relative one as relative to "/"). */
static char *clean_dest(const char *dest)
{
	cleanup_free char *abs = tern_strdup_printf("/%s", dest ? dest : "");
	return tern_absolute_path(abs);
}

int tern_restore_make_mountpoints(const char *rootfs, const char *bundle, const oci_config *config,
				  tern_error **err)
{
	size_t n = config->mounts_len;
	cleanup_close_pair int pipefd[2] = {-1, -1};
	pid_t pid;

	if (n == 0)
		return 0;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return tern_error_make(err, errno, "pipe");
	pid = fork();
	if (pid < 0)
		return tern_error_make(err, errno, "fork");
	if (pid == 0) {
		plan p = {.config = config, .bundle = bundle, .rootfd = -1};
		tern_error *e = NULL;

		p.dests = tern_xmalloc0(n * sizeof(char *));
		p.skipped = tern_xmalloc0(n * sizeof(bool));
		p.sources = tern_xmalloc0(n * sizeof(int));
		for (size_t i = 0; i < n; i++) {
			p.dests[i] = clean_dest(config->mounts[i].destination);
			p.sources[i] = -1;
		}
		int ret = prepare_all(rootfs, &p, &e);
		if (ret < 0)
			send_error(pipefd[1], e);
		/* (the exit frees them too, but a leak checker counts what
		 * this child holds at its exit as lost) */
		free_plan(&p, n);
		tern_error_free(e);
		_exit(ret < 0 ? 1 : 0);
	}
	/* the child's end closes here, so the read ends when the child does */
	tern_closep(&pipefd[1]);
	return receive_error(pipefd[0], pid, err);
}
