/* The "cgroup" and "cgroup2" mounts of config.json: what the container sees
 * of /sys/fs/cgroup.
 *
 * Without a cgroup namespace the container must see only its own cgroups,
 * never a hierarchy from its root: a writable view of the root would let it
 * write its pid into any cgroup.procs and leave its limits behind. So each
 * hierarchy is a bind of this process's own cgroup directory there (on v1 a
 * tmpfs holds one directory per hierarchy, named like the host's). With a
 * cgroup namespace the kernel roots a fresh mount at the namespace's
 * cgroup, so a fresh mount is what it gets. Either way the lead has put this
 * process into the container's cgroups before these run (rootfs.h,
 * before_cgroup_mount). Used by mounts.c. */
#include "cgroup-mount.h"
#include "path-resolve.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static bool cg_str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Undo the octal escapes of /proc/self/mountinfo (\040 for a space...). */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* One line of /proc/self/mountinfo, split in place; the paths unescaped. */
struct mountinfo_entry {
	const char *dev;  /* major:minor */
	const char *root; /* what of the filesystem the mount shows */
	const char *mnt;  /* where it is mounted */
	const char *fstype;
	char *superopts; /* NULL when the line has none */
};

/* false for a malformed line and for a mount under the rootfs: the copies
 * that earlier config mounts made there (an rbind of /sys) are not the
 * host's. */
static bool mountinfo_entry_parse(char *line, const char *rootfs_path, struct mountinfo_entry *e)
{
	char *fields[12] = {0}, *sep = strstr(line, " - "), *p;
	size_t rl = strlen(rootfs_path);
	int nf = 0;

	if (sep == NULL)
		return false;
	*sep = '\0';
	e->fstype = strtok_r(sep + 3, " ", &p);
	(void)strtok_r(NULL, " ", &p); /* source */
	e->superopts = strtok_r(NULL, " ", &p);
	for (char *f = strtok_r(line, " ", &p); f && nf < 12; f = strtok_r(NULL, " ", &p))
		fields[nf++] = f;
	if (nf < 5 || e->fstype == NULL)
		return false;
	unescape(fields[3]);
	unescape(fields[4]);
	e->dev = fields[2];
	e->root = fields[3];
	e->mnt = fields[4];
	return !(rl > 0 && strncmp(e->mnt, rootfs_path, rl) == 0 &&
		 (e->mnt[rl] == '/' || e->mnt[rl] == '\0'));
}

static bool list_has(const char *commalist, const char *item, size_t len)
{
	const char *p = commalist;
	while (p && *p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == len && strncmp(p, item, len) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* This process's cgroup in the v1 hierarchy whose super options are
 * `superopts` (from /proc/self/cgroup), or NULL. */
static char *own_cgroup_v1(const char *selfcg, const char *superopts)
{
	const char *line = selfcg;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c2 != NULL && c2 > c1 + 1) {
			bool all = true;
			const char *p = c1 + 1;
			while (p < c2) {
				const char *e = memchr(p, ',', (size_t)(c2 - p));
				size_t l = e ? (size_t)(e - p) : (size_t)(c2 - p);
				if (!list_has(superopts, p, l))
					all = false;
				p = e ? e + 1 : c2;
			}
			if (all)
				return strndup(c2 + 1, len - (size_t)(c2 + 1 - line));
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* Bind `srcfd` (a host directory) on `name` inside the directory `dirfd`. */
static int bind_into(int dirfd, const char *name, int srcfd, unsigned long flags,
		     const tern_mount_options *opts, tern_error **err)
{
	cleanup_close int d = -1, n = -1;
	char sp[32], dp[32];

	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return tern_error_make(err, errno, "mkdir `%s`", name);
	d = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return tern_error_make(err, errno, "open `%s`", name);
	if (mount(tern_fd_path(srcfd, sp, sizeof(sp)), tern_fd_path(d, dp, sizeof(dp)), NULL,
		  MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind on `%s`", name);
	n = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (n < 0)
		return tern_error_make(err, errno, "open `%s`", name);
	flags |= tern_mount_locked_flags(n, opts);
	if (mount(NULL, tern_fd_path(n, dp, sizeof(dp)), NULL, MS_REMOUNT | MS_BIND | flags, NULL) <
	    0)
		return tern_error_make(err, errno, "remount `%s`", name);
	return 0;
}

/* One v1 hierarchy to show: where it goes and what goes there. */
struct cg_entry {
	char *name;   /* directory under the destination, e.g. "cpu,cpuacct" */
	char *source; /* the host path, for messages */
	int srcfd;    /* without a cgroup namespace: the host directory to bind */
	char *data;   /* with one: the cgroup mount options (controllers) */
};

static void cg_entries_free(struct cg_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].name);
		free(e[i].source);
		free(e[i].data);
		if (e[i].srcfd >= 0)
			close(e[i].srcfd);
	}
	free(e);
}

/* A v1 hierarchy's mount as mountinfo lists it (pointers into its text). */
struct cg_mount {
	const char *dev;  /* major:minor of the superblock: one per hierarchy */
	const char *root; /* the cgroup the mount shows as its root */
	const char *mnt;
	char *superopts;
};

/* The v1 hierarchies in `mountinfo` (modified in place), one mount each.
 * Copies that earlier config mounts made under the rootfs (an rbind of
 * /sys) are skipped; so are other mounts of a hierarchy already seen, such
 * as the binds that a container without a mount namespace of its own
 * leaves in ours: per superblock, the mount that shows the most of it
 * (the shortest root), the first of those. */
static size_t cg_mounts_parse(char *mountinfo, const char *rootfs_path, struct cg_mount *m,
			      size_t max)
{
	size_t n = 0;

	for (char *line = mountinfo, *next; line && *line; line = next) {
		struct mountinfo_entry e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!mountinfo_entry_parse(line, rootfs_path, &e) ||
		    !cg_str_eq(e.fstype, "cgroup") || e.superopts == NULL)
			continue;
		size_t i = 0;
		while (i < n && strcmp(m[i].dev, e.dev) != 0)
			i++;
		if (i < n && strlen(e.root) >= strlen(m[i].root))
			continue;
		if (i == n && n == max)
			continue;
		m[i] = (struct cg_mount){e.dev, e.root, e.mnt, e.superopts};
		if (i == n)
			n++;
	}
	return n;
}

/* Read the host's v1 hierarchies from mountinfo. Everything is opened
 * here, before anything is mounted: with rootfsPropagation "rshared" a
 * mount under the rootfs can propagate back onto our own /sys/fs/cgroup
 * (its peer through an rbind of /sys) and hide the sources. */
static int cg_entries_collect(const char *rootfs_path, bool cgroupns, struct cg_entry **out,
			      size_t *nout, tern_error **err)
{
	cleanup_free char *mountinfo = NULL, *selfcg = NULL;
	struct cg_mount mounts[64];
	struct cg_entry *e = NULL;
	size_t n = 0, nm;
	int ret;

	ret = tern_read_file("/proc/self/mountinfo", &mountinfo, NULL, 0, err);
	if (ret < 0)
		return ret;
	ret = tern_read_file("/proc/self/cgroup", &selfcg, NULL, 0, err);
	if (ret < 0)
		return ret;
	nm = cg_mounts_parse(mountinfo, rootfs_path, mounts, 64);

	for (size_t k = 0; k < nm; k++) {
		const struct cg_mount *m = &mounts[k];
		const char *name = strrchr(m->mnt, '/');
		bool dup = false;

		name = name ? name + 1 : m->mnt;
		if (*name == '\0')
			continue;
		/* One directory per name: the first hierarchy wins. */
		for (size_t i = 0; i < n; i++)
			dup = dup || strcmp(e[i].name, name) == 0;
		if (dup)
			continue;

		struct cg_entry *grown = realloc(e, (n + 1) * sizeof(*e));
		if (grown == NULL) {
			cg_entries_free(e, n);
			return tern_error_make(err, ENOMEM, "cgroup hierarchies");
		}
		e = grown;
		e[n] = (struct cg_entry){.name = tern_xstrdup(name), .srcfd = -1};
		n++;
		if (cgroupns) {
			/* Only the controller names and name=: the host's
			 * other super options (a release agent...) are its own. */
			for (char *q, *o = strtok_r(m->superopts, ",", &q); o;
			     o = strtok_r(NULL, ",", &q)) {
				if (cg_str_eq(o, "rw") || cg_str_eq(o, "ro") ||
				    strncmp(o, "release_agent=", 14) == 0 ||
				    cg_str_eq(o, "clone_children"))
					continue;
				tern_mount_data_append(&e[n - 1].data, o);
			}
			e[n - 1].source = tern_strdup_printf("cgroup %s", e[n - 1].data);
			continue;
		}
		/* This process's cgroup in that hierarchy; the mount may be
		 * rooted below "/": the path is relative to its root. */
		cleanup_free char *own = own_cgroup_v1(selfcg, m->superopts);
		const char *rel = own ? own : "/";
		size_t fl = strlen(m->root);
		if (strcmp(m->root, "/") != 0 && strncmp(rel, m->root, fl) == 0)
			rel += fl;
		e[n - 1].source = tern_strdup_printf("%s%s", m->mnt, rel);
		e[n - 1].srcfd = open(e[n - 1].source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (e[n - 1].srcfd < 0) {
			ret = tern_error_make(err, errno, "open `%s`", e[n - 1].source);
			cg_entries_free(e, n);
			return ret;
		}
	}
	*out = e;
	*nout = n;
	return 0;
}

/* cgroup v1 (this machine, and any hybrid host): a tmpfs at the destination
 * and, under it, one directory per hierarchy named like the host's mount
 * point (cpu, memory, name=systemd as "systemd"...). Without a cgroup
 * namespace each one is a bind of this process's own cgroup directory in
 * the host hierarchy, so the container sees its cgroup as the root, like
 * runc; with a cgroup namespace each hierarchy is mounted fresh (the kernel
 * then roots it at the namespace's cgroup). Co-mounted controllers
 * ("cpu,cpuacct") also get one symlink per controller. The v2 hierarchy of
 * a hybrid host is not shown, as runc does not either. */
static int mount_cgroup_v1(int rootfd, const char *rootfs_path, const char *dest,
			   const tern_mount_options *opts, bool cgroupns, tern_error **err)
{
	cleanup_close int dfd = -1, target = -1;
	unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	struct cg_entry *e = NULL;
	size_t n = 0;
	char tp[32];
	int ret;

	ret = cg_entries_collect(rootfs_path, cgroupns, &e, &n, err);
	if (ret < 0)
		return ret;
	target = tern_mount_target(rootfd, dest, false, err);
	if (target < 0) {
		ret = target;
		goto out;
	}
	if (mount("tmpfs", tern_fd_path(target, tp, sizeof(tp)), "tmpfs",
		  flags | (opts->flags & ~(MS_RDONLY | MS_REMOUNT | MS_BIND | MS_REC)),
		  "mode=755") < 0) {
		ret = tern_error_make(err, errno, "mount the cgroup tmpfs");
		goto out;
	}
	dfd = tern_open_in_root(rootfd, dest, O_RDONLY | O_DIRECTORY, 0, err);
	if (dfd < 0) {
		ret = dfd;
		goto out;
	}

	for (size_t i = 0; i < n; i++) {
		const char *name = e[i].name;

		if (cgroupns) {
			cleanup_close int d = -1;
			char dp[32];

			if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST) {
				ret = tern_error_make(err, errno, "mkdir `%s`", name);
				goto out;
			}
			d = openat(dfd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
			if (d < 0 || mount("cgroup", tern_fd_path(d, dp, sizeof(dp)), "cgroup",
					   flags | (opts->flags & MS_RDONLY), e[i].data) < 0) {
				ret = tern_error_make(err, errno, "mount `%s`", e[i].source);
				goto out;
			}
		} else {
			ret = bind_into(dfd, name, e[i].srcfd, flags | (opts->flags & MS_RDONLY),
					opts, err);
			if (ret < 0) {
				tern_error_wrap(err, "cgroup hierarchy `%s`", e[i].source);
				goto out;
			}
		}
		if (strchr(name, ',') != NULL) {
			cleanup_free char *copy = tern_xstrdup(name);
			for (char *q, *c = strtok_r(copy, ",", &q); c;
			     c = strtok_r(NULL, ",", &q)) {
				if (symlinkat(name, dfd, c) < 0 && errno != EEXIST) {
					ret = tern_error_make(err, errno, "symlink `%s`", c);
					goto out;
				}
			}
		}
	}

	ret = 0;
	if (opts->flags & MS_RDONLY) {
		tern_mount_options ro = *opts;
		ro.flags |= MS_RDONLY;
		ret = tern_mount_bind_remount(rootfd, dest, &ro, err);
		if (ret < 0)
			tern_error_wrap(err, "make the cgroup tmpfs read-only");
	}
out:
	cg_entries_free(e, n);
	return ret;
}

/* The host's cgroup2 mount (the first one that is not a copy under the
 * rootfs) and the host directory of this process's cgroup in it, from the
 * "0::" line of /proc/self/cgroup (relative to the cgroup the mount shows
 * as its root). *dir stays NULL when no cgroup2 is mounted. */
static int own_cgroup2_dir(const char *rootfs_path, char **dir, tern_error **err)
{
	cleanup_free char *mountinfo = NULL, *selfcg = NULL;
	size_t best_root = 0;
	const char *own = NULL;
	int ret;

	*dir = NULL;
	ret = tern_read_file("/proc/self/mountinfo", &mountinfo, NULL, 0, err);
	if (ret == 0)
		ret = tern_read_file("/proc/self/cgroup", &selfcg, NULL, 0, err);
	if (ret < 0)
		return ret;
	for (char *line = selfcg, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "0::", 3) == 0)
			own = line + 3;
	}
	for (char *line = mountinfo, *next; line && *line; line = next) {
		struct mountinfo_entry e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!mountinfo_entry_parse(line, rootfs_path, &e) ||
		    !cg_str_eq(e.fstype, "cgroup2"))
			continue;
		/* the mount that shows the most of it (see cg_mounts_parse) */
		if (*dir != NULL && strlen(e.root) >= best_root)
			continue;
		const char *rel = own ? own : "/";
		size_t fl = strlen(e.root);
		if (strcmp(e.root, "/") != 0 && strncmp(rel, e.root, fl) == 0)
			rel += fl;
		free(*dir);
		*dir = tern_strdup_printf("%s%s", e.mnt, strcmp(rel, "/") == 0 ? "" : rel);
		best_root = fl;
	}
	return 0;
}

/* A fresh cgroup2 mount on `target` (the open destination `dest`): in a
 * cgroup namespace, or on a host without cgroup2 mounted, where every
 * process is in the root of a hierarchy no one uses. */
static int fresh_cgroup2(int rootfd, const char *dest, int target, unsigned long flags,
			 const char *data, bool cgroupns, tern_error **err)
{
	cleanup_close int over = -1;
	char tp[32];

	if (mount("cgroup2", tern_fd_path(target, tp, sizeof(tp)), "cgroup2", flags, data) == 0)
		return 0;
	/* EBUSY: the hierarchy is mounted right there already (an rbind of
	 * /sys brought the host's), and the kernel does not stack a superblock
	 * on itself: put a tmpfs in between, as crun does. The tmpfs needs a
	 * new fd (see the top of the file). */
	if (errno == EBUSY && mount("tmpfs", tp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				    "size=4k,mode=755") == 0) {
		over = tern_open_in_root(rootfd, dest, O_PATH | O_DIRECTORY, 0, err);
		if (over < 0)
			return over;
		if (mount("cgroup2", tern_fd_path(over, tp, sizeof(tp)), "cgroup2", flags, data) ==
		    0)
			return 0;
	}
	return tern_error_make(err, errno, "mount cgroup2%s",
			       cgroupns ? " in the container's cgroup namespace" : "");
}

/* cgroup v2 (a "cgroup" mount on a v2 host, or any "cgroup2" mount). With
 * a cgroup namespace, a fresh cgroup2 mount: the kernel roots it at the
 * namespace's cgroup. Without one, a fresh mount would show the host's
 * whole hierarchy, and with it writable, the container could write its
 * pid into any cgroup.procs there and leave its limits behind (runc 1.1
 * mounts it so): bind this process's own cgroup directory instead, as runc
 * does in a user namespace. The lead has made sure by now that this
 * process is in the container's cgroup (rootfs.h, before_cgroup_mount). */
int tern_mount_cgroup2(int rootfd, const char *rootfs_path, const char *dest,
		       const tern_mount_options *opts, bool cgroupns, tern_error **err)
{
	cleanup_close int target = -1, s = -1;
	cleanup_free char *src = NULL;
	unsigned long flags =
	    MS_NOSUID | MS_NODEV | MS_NOEXEC | (opts->flags & ~(MS_REMOUNT | MS_BIND | MS_REC));
	char tp[32], sp[32];
	int ret;

	if (!cgroupns) {
		ret = own_cgroup2_dir(rootfs_path, &src, err);
		if (ret < 0)
			return ret;
		/* Opened before anything is mounted (see cg_entries_collect). */
		if (src != NULL) {
			s = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (s < 0)
				return tern_error_make(err, errno, "open `%s`", src);
		}
	}
	target = tern_mount_target(rootfd, dest, false, err);
	if (target < 0)
		return target;
	if (s < 0)
		return fresh_cgroup2(rootfd, dest, target, flags, opts->data, cgroupns, err);
	if (mount(tern_fd_path(s, sp, sizeof(sp)), tern_fd_path(target, tp, sizeof(tp)), NULL,
		  MS_BIND | MS_REC, NULL) < 0)
		return tern_error_make(err, errno, "bind the container's cgroup `%s`", src);
	tern_mount_options o = *opts;
	o.flags |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
	ret = tern_mount_bind_remount(rootfd, dest, &o, err);
	if (ret < 0)
		return tern_error_wrap(err, "cgroup `%s`", src);
	return 0;
}

int tern_mount_cgroup(int rootfd, const char *rootfs_path, const char *dest,
		      const tern_mount_options *opts, bool cgroupns, tern_error **err)
{
	struct statfs sfs;

	if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return tern_mount_cgroup2(rootfd, rootfs_path, dest, opts, cgroupns, err);
	return mount_cgroup_v1(rootfd, rootfs_path, dest, opts, cgroupns, err);
}
