/* What travels beside criu's images: tern's descriptor (tern-checkpoint.txt,
 * layout in checkpoint.h), which lets a checkpoint be restored under another
 * root, id and bundle, and the init's stdio that came from outside the
 * container, as the dump records it and as a restore in place takes it
 * back. One owner for the file's format, so that writer and readers agree. */
#include "checkpoint-internal.h"
#include "checkpoint-net.h"
#include "criu-uffd.h"
#include "log.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the descriptor ---- */

/* "/a/b": absolute, below the root, no empty, "." or ".." component */
static bool cgroup_path_ok(const char *p)
{
	if (p[0] != '/' || p[1] == '\0')
		return false;
	for (const char *c = p + 1; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && *++c == '\0')
			return false;
	}
	return true;
}

void tern_ckpt_descriptor_clear(descriptor *d)
{
	free(d->id);
	tern_strv_freep(&d->ext_mounts);
	tern_strv_freep(&d->cg_mounts);
	tern_strv_freep(&d->masked);
	tern_strv_freep(&d->tmpfs);
	tern_strv_freep(&d->trees);
	tern_strv_freep(&d->devbinds);
	for (int i = 0; i < 3; i++)
		free(d->stdio[i]);
	tern_strv_freep(&d->veths);
	free(d->unified_cg);
}

int tern_ckpt_descriptor_write(int dirfd, const descriptor *d, tern_error **err)
{
	cleanup_free char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fprintf(f, "version 1\nid %s\n", d->id);
	for (char **m = d->ext_mounts; m && *m; m++)
		fprintf(f, "mount %s\n", *m);
	for (char **m = d->cg_mounts; m && *m; m++)
		fprintf(f, "cgroup %s\n", *m);
	for (char **m = d->masked; m && *m; m++)
		fprintf(f, "masked %s\n", *m);
	for (char **m = d->tmpfs; m && *m; m++)
		fprintf(f, "tmpfs %s\n", *m);
	for (char **m = d->trees; m && *m; m++)
		fprintf(f, "%s\n", *m);
	for (char **m = d->devbinds; m && *m; m++)
		fprintf(f, "devbind %s\n", *m);
	for (int i = 0; i < 3; i++)
		if (d->stdio[i])
			fprintf(f, "stdio%d %s\n", i, d->stdio[i]);
	for (int i = 0; i < 3; i++)
		if (d->stdio_mode[i])
			fprintf(f, "stdiomode%d %o\n", i, d->stdio_mode[i]);
	for (char **m = d->veths; m && *m; m++)
		fprintf(f, "veth %s\n", *m);
	fprintf(f, "netns-external %d\nnetns-fresh %d\nterminal %d\n", d->netns_external,
		d->netns_fresh, d->terminal);
	if (d->netns_unlocked)
		fprintf(f, "netns-unlocked 1\n");
	if (d->netns_empty)
		fprintf(f, "netns-empty 1\n");
	if (d->unified_cg)
		fprintf(f, "unified-cgroup %s\n", d->unified_cg);
	fclose(f);
	cleanup_close int fd =
	    openat(dirfd, TERN_CKPT_DESCRIPTOR, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || tern_write_all(fd, buf, len) < 0)
		return tern_error_make(err, errno, "write %s", TERN_CKPT_DESCRIPTOR);
	return 0;
}

int tern_ckpt_descriptor_read(const char *images, descriptor *d, tern_error **err)
{
	cleanup_free char *path = tern_strdup_printf("%s/%s", images, TERN_CKPT_DESCRIPTOR);
	cleanup_free char *data = NULL;
	size_t len;
	int ret = tern_read_file(path, &data, &len, 1 << 20, err);

	if (ret < 0)
		return tern_error_wrap(err, "--image-path `%s` is not a tern checkpoint", images);
	for (char *save = NULL, *l = strtok_r(data, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(l, ' ');
		if (v == NULL)
			continue;
		*v++ = '\0';
		/* a key given twice: the last one counts (and the first is
		 * freed) */
		if (strcmp(l, "id") == 0) {
			free(d->id);
			d->id = tern_xstrdup(v);
		} else if (strcmp(l, "mount") == 0)
			d->ext_mounts = tern_strv_add(d->ext_mounts, tern_xstrdup(v));
		else if (strcmp(l, "cgroup") == 0 && strchr(v, ' '))
			d->cg_mounts = tern_strv_add(d->cg_mounts, tern_xstrdup(v));
		else if (strcmp(l, "masked") == 0 && v[0] == '/')
			d->masked = tern_strv_add(d->masked, tern_xstrdup(v));
		else if (strcmp(l, "tmpfs") == 0 && v[0] == '/')
			/* (restored only as the new config's mount there) */
			d->tmpfs = tern_strv_add(d->tmpfs, tern_xstrdup(v));
		else if (strncmp(l, "tmpfs-", 6) == 0 && v[0] == '/')
			/* (checked as they are used) */
			d->trees = tern_strv_add(d->trees, tern_strdup_printf("%s %s", l, v));
		else if (strcmp(l, "devbind") == 0)
			d->devbinds = tern_strv_add(d->devbinds, tern_xstrdup(v));
		else if (strncmp(l, "stdio", 5) == 0 && l[5] >= '0' && l[5] <= '2' && !l[6]) {
			free(d->stdio[l[5] - '0']);
			d->stdio[l[5] - '0'] = tern_xstrdup(v);
		} else if (strncmp(l, "stdiomode", 9) == 0 && l[9] >= '0' && l[9] <= '2' && !l[10])
			d->stdio_mode[l[9] - '0'] = (unsigned)strtoul(v, NULL, 8);
		else if (strcmp(l, "veth") == 0) {
			/* the names become a device on this node (through
			 * criu's veth[INNER]:OUTER): a migration's source
			 * wrote them, so nothing else passes */
			cleanup_free char *pair = tern_xstrdup(v);
			char *outer = strchr(pair, ' ');
			if (outer)
				*outer++ = '\0';
			if (outer == NULL || !tern_veth_name_ok(pair) || !tern_veth_name_ok(outer))
				return tern_error_make_quiet(
				    err, EINVAL,
				    "%s: corrupted (veth `%s` is not two device names)", path, v);
			d->veths = tern_strv_add(d->veths, tern_xstrdup(v));
		} else if (strcmp(l, "netns-external") == 0)
			d->netns_external = atoi(v) != 0;
		else if (strcmp(l, "netns-fresh") == 0)
			d->netns_fresh = atoi(v) != 0;
		else if (strcmp(l, "netns-unlocked") == 0)
			d->netns_unlocked = atoi(v) != 0;
		else if (strcmp(l, "netns-empty") == 0)
			d->netns_empty = atoi(v) != 0;
		else if (strcmp(l, "terminal") == 0)
			d->terminal = atoi(v) != 0;
		else if (strcmp(l, "unified-cgroup") == 0) {
			/* a restore may remove what of it it made: a path below
			 * the hierarchy's root, nothing else */
			if (!cgroup_path_ok(v))
				return tern_error_make_quiet(
				    err, EINVAL, "%s: corrupted (unified-cgroup `%s`)", path, v);
			free(d->unified_cg);
			d->unified_cg = tern_xstrdup(v);
		}
	}
	if (d->id == NULL)
		return tern_error_make_quiet(err, EINVAL, "%s: corrupted (no id)", path);
	return 0;
}

void tern_ckpt_outside_stdio(const char *images, char kinds[3], unsigned modes[3])
{
	descriptor d = {0};
	tern_error *e = NULL;

	memset(kinds, 0, 3);
	memset(modes, 0, 3 * sizeof(*modes));
	if (tern_ckpt_descriptor_read(images, &d, &e) == 0) {
		for (int i = 0; i < 3; i++) {
			if (d.stdio[i] == NULL)
				continue;
			kinds[i] = strncmp(d.stdio[i], "pipe:", 5) == 0 ? 'p' : 'f';
			modes[i] = d.stdio_mode[i];
		}
	}
	tern_error_free(e);
	tern_ckpt_descriptor_clear(&d);
}

bool tern_ckpt_netns_left_out(const char *images)
{
	descriptor d = {0};
	tern_error *e = NULL;
	bool fresh = false;

	if (tern_ckpt_descriptor_read(images, &d, &e) == 0)
		fresh = d.netns_fresh;
	tern_error_free(e);
	tern_ckpt_descriptor_clear(&d);
	return fresh;
}

const oci_namespace *tern_ckpt_config_ns(const oci_config *c, oci_namespace_type t)
{
	if (c->linux_ == NULL)
		return NULL;
	for (size_t i = 0; i < c->linux_->namespaces_len; i++)
		if (c->linux_->namespaces[i].type == t)
			return &c->linux_->namespaces[i];
	return NULL;
}

bool tern_ckpt_own_userns(const char *images)
{
	cleanup_free char *path = tern_strdup_printf("%s/" TERN_CKPT_CONFIG, images);
	cleanup_free char *msg = NULL;
	oci_config *c = NULL;

	if (oci_config_parse_file(path, &c, &msg) < 0)
		return false;
	const oci_namespace *ns = tern_ckpt_config_ns(c, OCI_NS_USER);
	bool own = ns && ns->path == NULL;
	oci_config_free(c);
	return own;
}

tern_uffd_way tern_ckpt_uffd_way(const char *images)
{
	cleanup_free char *knob = NULL;
	size_t len;

	if (!tern_ckpt_own_userns(images))
		return TERN_UFFD_DIRECT;
	if (tern_read_file("/proc/sys/vm/unprivileged_userfaultfd", &knob, &len, 16, NULL) == 0 &&
	    knob[0] == '1')
		return TERN_UFFD_DIRECT;
	/* the restored processes are in their own user namespace, where the
	 * syscall is refused: criu gets theirs through /dev/userfaultfd
	 * (criu-uffd.h) */
	const char *why = tern_uffd_device_why_not();
	if (why == NULL)
		return TERN_UFFD_DEVICE;
	tern_debug("no lazy pages in a user namespace (vm.unprivileged_userfaultfd is 0 and "
		   "%s): criu fills the memory page by page",
		   why);
	return TERN_UFFD_NONE;
}

bool tern_ckpt_uffd_usable(const char *images)
{
	return tern_ckpt_uffd_way(images) != TERN_UFFD_NONE;
}

/* ---- stdio ---- */

static int fd_mnt_id(pid_t pid, int fd)
{
	cleanup_free char *path = tern_strdup_printf("/proc/%d/fdinfo/%d", pid, fd);
	cleanup_free char *data = NULL;
	size_t len;
	char *p;

	if (tern_read_file(path, &data, &len, 0, NULL) < 0)
		return -1;
	p = strstr(data, "mnt_id:");
	return p ? atoi(p + 7) : -1;
}

/* criu's key for `fd` of `pid` as tern_ckpt_external_stdio records an outside one
 * (a pipe's, or a file's by mount and inode), or NULL. */
static char *stdio_key(pid_t pid, int fd)
{
	cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", pid, fd);
	char target[PATH_MAX];
	struct stat st;
	ssize_t n = readlink(link, target, sizeof(target) - 1);

	if (n < 0 || stat(link, &st) < 0)
		return NULL;
	target[n] = '\0';
	if (strncmp(target, "pipe:", 5) == 0)
		return tern_xstrdup(target);
	int mnt = target[0] == '/' ? fd_mnt_id(pid, fd) : -1;
	return mnt < 0
		   ? NULL
		   : tern_strdup_printf("file[%x:%lx]", (unsigned)mnt, (unsigned long)st.st_ino);
}

/* The fd of `pid` (through `pidfd`) that holds `want`: `fd` itself, or,
 * while it points elsewhere, the copy the process keeps (a shell keeps
 * its stdout above fd 9 while a builtin writes to a redirected file). */
static int take_matching(int pidfd, pid_t pid, int fd, const char *want)
{
	cleanup_free char *dir = tern_strdup_printf("/proc/%d/fd", pid);

	for (int attempt = 0; attempt < 20; attempt++) {
		int from = fd;
		cleanup_free char *now = stdio_key(pid, fd);
		if (now == NULL || strcmp(now, want) != 0) {
			from = -1;
			DIR *d = opendir(dir);
			for (struct dirent *e; d && from < 0 && (e = readdir(d)) != NULL;) {
				int n = atoi(e->d_name);
				cleanup_free char *k =
				    e->d_name[0] == '.' ? NULL : stdio_key(pid, n);
				if (k && strcmp(k, want) == 0)
					from = n;
			}
			if (d)
				closedir(d);
		}
		if (from < 0)
			return -1;
		int got = (int)syscall(SYS_pidfd_getfd, pidfd, from, 0);
		if (got < 0)
			return -1;
		/* (it may have changed between the look and the take) */
		cleanup_free char *mine = stdio_key(getpid(), got);
		if (mine && strcmp(mine, want) == 0)
			return got;
		close(got);
	}
	return -1;
}

void tern_ckpt_take_stdio(const char *images, int pidfd, pid_t pid, int fds[3])
{
	descriptor d = {0};
	tern_error *e = NULL;

	if (tern_ckpt_descriptor_read(images, &d, &e) < 0)
		tern_error_free(e);
	for (int i = 0; i < 3; i++) {
		fds[i] = -1;
		if (pidfd < 0)
			continue;
		if (d.stdio[i])
			fds[i] = take_matching(pidfd, pid, i, d.stdio[i]);
		if (fds[i] < 0)
			fds[i] = (int)syscall(SYS_pidfd_getfd, pidfd, i, 0);
	}
	tern_ckpt_descriptor_clear(&d);
}

static bool mount_in(const char *mountinfo, int mnt_id)
{
	char want[32];
	size_t n = (size_t)snprintf(want, sizeof(want), "%d ", mnt_id);

	for (const char *l = mountinfo; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, want, n) == 0)
			return true;
	return false;
}

/* The init's stdin, stdout and stderr usually come from outside the
 * container (the pipes or files `tern run -d` was given). A pipe is dumped
 * by CRIU; a file on a mount the container does not have is declared
 * external. Either way restore hands the same slot its own fd 0-2, as runc
 * does. */
int tern_ckpt_external_stdio(criu_session *s, pid_t pid, descriptor *d)
{
	cleanup_free char *mi_path = tern_strdup_printf("/proc/%d/mountinfo", pid);
	cleanup_free char *mountinfo = NULL;
	size_t len;

	if (tern_read_file(mi_path, &mountinfo, &len, 0, NULL) < 0)
		return 0;
	for (int fd = 0; fd < 3; fd++) {
		cleanup_free char *link = tern_strdup_printf("/proc/%d/fd/%d", pid, fd);
		char target[PATH_MAX];
		struct stat st;
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0 || stat(link, &st) < 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, "pipe:", 5) == 0) {
			d->stdio[fd] = tern_xstrdup(target);
			continue;
		}
		if (target[0] != '/')
			continue; /* sockets, anon inodes: --ext-unix-sk and friends */
		int mnt = fd_mnt_id(pid, fd);
		if (mnt < 0 || mount_in(mountinfo, mnt))
			continue;
		d->stdio[fd] =
		    tern_strdup_printf("file[%x:%lx]", (unsigned)mnt, (unsigned long)st.st_ino);
		d->stdio_mode[fd] = st.st_mode;
		bool seen = false;
		for (int j = 0; j < fd; j++)
			seen = seen || (d->stdio[j] && strcmp(d->stdio[j], d->stdio[fd]) == 0);
		if (!seen)
			criu_local_add_external(s->opts, d->stdio[fd]);
	}
	return 0;
}
