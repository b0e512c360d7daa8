#include "cgroup.h"
#include "cgroup-systemd.h"
#include "cgroup-v1.h"
#include "cgroup-v2.h"
#include "log.h"
#include "oci-state.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The mount points of the cgroup hierarchies, read once from mountinfo. */
typedef struct {
	char *dev; /* major:minor of the hierarchy's superblock: one per hierarchy */
	char *mountpoint;
	char *mount_root;  /* the cgroup the mount shows as its root */
	char *own;	   /* our own cgroup in it, relative to mount_root */
	char *controllers; /* v1: the super options naming the controllers */
	bool v2;
	bool freezer;
	bool cpuset; /* v1 cpuset: a new cgroup starts with no cpus or mems */
} hierarchy;

static bool rootless_mode;

void tern_cgroup_set_rootless(bool on)
{
	rootless_mode = on;
	tern_cgroup_v2_set_rootless(on);
}

bool tern_cgroup_rootless(void)
{
	return rootless_mode;
}

static hierarchy *hierarchies;
static size_t n_hierarchies;
static bool loaded;
/* A pure v2 host: the v2 hierarchy lists controllers and no v1 hierarchy
 * carries a real one. In hybrid mode (v1 controllers, maybe a controller or
 * two such as hugetlb on the unified hierarchy) v1 does the work. Read once. */
static bool v2_host;

static bool compute_v2_host(void)
{
	bool v2_controllers = false;

	for (size_t i = 0; i < n_hierarchies; i++) {
		const hierarchy *h = &hierarchies[i];
		if (!h->v2) {
			if (strstr(h->controllers, "name=") == NULL)
				return false;
			continue;
		}
		cleanup_free char *f = tern_strdup_printf("%s/cgroup.controllers", h->mountpoint);
		cleanup_free char *data = NULL;
		if (tern_read_file(f, &data, NULL, 0, NULL) == 0 &&
		    data[strspn(data, " \n")] != '\0')
			v2_controllers = true;
	}
	return v2_controllers;
}

/* Does the v1 mount with super options `opts` carry every controller of
 * the comma-separated list `ctrls` (e.g. "cpu,cpuacct", "name=systemd")? */
static bool has_controllers(const char *opts, const char *ctrls)
{
	cleanup_free char *list = tern_xstrdup(ctrls);
	char *save = NULL;
	bool any = false;

	for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(c);
		const char *p = opts;
		bool found = false;
		while ((p = strstr(p, c)) != NULL) {
			if ((p == opts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
				found = true;
				break;
			}
			p += n;
		}
		if (!found)
			return false;
		any = true;
	}
	return any;
}

/* /proc/self/cgroup: "id:controllers:path" per hierarchy ("0::path" for v2). */
static void read_own_cgroups(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *line = NULL;
	size_t cap = 0;

	if (f == NULL)
		return;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c1 = *c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		for (size_t i = 0; i < n_hierarchies; i++) {
			hierarchy *h = &hierarchies[i];
			bool match = h->v2 ? (strcmp(line, "0") == 0 && *ctrls == '\0')
					   : (*ctrls && has_controllers(h->controllers, ctrls));
			if (!match)
				continue;
			/* a hierarchy mounted from a sub-cgroup shows paths below it */
			size_t rl = strlen(h->mount_root);
			const char *rel = path;
			if (strcmp(h->mount_root, "/") != 0 &&
			    strncmp(path, h->mount_root, rl) == 0)
				rel = path[rl] ? path + rl : "/";
			free(h->own);
			h->own = tern_xstrdup(rel);
		}
	}
	free(line);
	fclose(f);
}

/* A hierarchy can be mounted more than once: a container without a mount
 * namespace of its own, or one whose mounts propagate back, leaves binds
 * of its cgroup directories (under its rootfs) in our mount table. One
 * entry per hierarchy (superblock): the mount that shows the most of it
 * (the shortest root), the first of those. Is `dev` known already? Then
 * keep the better of the two and tell the caller to skip this one. */
static bool other_mount_of(const char *dev, const char *root, const char *mnt)
{
	for (size_t i = 0; i < n_hierarchies; i++) {
		hierarchy *h = &hierarchies[i];
		if (strcmp(h->dev, dev) != 0)
			continue;
		if (strlen(root) < strlen(h->mount_root)) {
			free(h->mountpoint);
			free(h->mount_root);
			h->mountpoint = tern_xstrdup(mnt);
			h->mount_root = tern_xstrdup(root);
		}
		return true;
	}
	return false;
}

static void load_hierarchies(void)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (loaded)
		return;
	loaded = true;
	f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return;
	while (getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mountpoint opts [optional...] - fstype source
		 * superopts */
		char *sep = strstr(line, " - ");
		char dev[64], mnt[4096], root[4096], fstype[64], source[256], superopts[1024];
		if (sep == NULL)
			continue;
		if (sscanf(line, "%*s %*s %63s %4095s %4095s", dev, root, mnt) != 3)
			continue;
		superopts[0] = '\0';
		if (sscanf(sep + 3, "%63s %255s %1023s", fstype, source, superopts) < 2)
			continue;
		bool v2 = strcmp(fstype, "cgroup2") == 0;
		if (!v2 && strcmp(fstype, "cgroup") != 0)
			continue;
		if (other_mount_of(dev, root, mnt))
			continue;
		hierarchies = realloc(hierarchies, (n_hierarchies + 1) * sizeof(*hierarchies));
		if (hierarchies == NULL)
			abort();
		hierarchies[n_hierarchies].dev = tern_xstrdup(dev);
		hierarchies[n_hierarchies].mountpoint = tern_xstrdup(mnt);
		hierarchies[n_hierarchies].mount_root = tern_xstrdup(root);
		hierarchies[n_hierarchies].own = tern_xstrdup("/");
		hierarchies[n_hierarchies].controllers = tern_xstrdup(superopts);
		hierarchies[n_hierarchies].v2 = v2;
		hierarchies[n_hierarchies].freezer = v2 || strstr(superopts, "freezer") != NULL;
		hierarchies[n_hierarchies].cpuset = !v2 && strstr(superopts, "cpuset") != NULL;
		n_hierarchies++;
	}
	free(line);
	fclose(f);
	read_own_cgroups();
	v2_host = compute_v2_host();
}

int tern_cgroup_resolve(const char *cgroups_path, const char *id, oci_map *paths, char **display,
			tern_error **err)
{
	cleanup_free char *rel = NULL;
	bool absolute = cgroups_path && cgroups_path[0] == '/';

	load_hierarchies();
	if (cgroups_path && *cgroups_path && strstr(cgroups_path, "..") != NULL)
		return tern_error_make(err, EINVAL, "linux.cgroupsPath `%s`: must not contain `..`",
				       cgroups_path);
	rel = tern_xstrdup(cgroups_path && *cgroups_path ? cgroups_path : id);
	*display = tern_xstrdup(rel);
	paths->items = tern_xmalloc0((n_hierarchies + 1) * sizeof(oci_kv));
	paths->len = 0;
	for (size_t i = 0; i < n_hierarchies; i++) {
		const hierarchy *h = &hierarchies[i];
		cleanup_free char *joined =
		    absolute
			? tern_xstrdup(rel)
			: tern_strdup_printf("%s/%s", strcmp(h->own, "/") == 0 ? "" : h->own, rel);
		paths->items[paths->len].key = tern_xstrdup(h->mountpoint);
		paths->items[paths->len].value = tern_absolute_path(joined);
		paths->len++;
	}
	return 0;
}

static bool v2_active(const hierarchy *h);

static char *dir_of(const oci_kv *kv)
{
	return tern_strdup_printf("%s%s", kv->key, kv->value);
}

static const hierarchy *hierarchy_at(const char *mountpoint)
{
	for (size_t i = 0; i < n_hierarchies; i++)
		if (strcmp(hierarchies[i].mountpoint, mountpoint) == 0)
			return &hierarchies[i];
	return NULL;
}

/* Why there is no cgroup, and the way out: `ip netns exec` mounts a fresh
 * sysfs over /sys in its own mount namespace, so /sys/fs/cgroup is an empty
 * directory there (runc: "no cgroup mount found in mountinfo"). */
#define NO_CGROUP_WHY                                                                              \
	"/sys/fs/cgroup is empty: under `ip netns exec`? use `nsenter "                            \
	"--net=/run/netns/NAME` instead"

int tern_cgroup_require_mounts(const oci_map *paths, tern_error **err)
{
	load_hierarchies();
	if (n_hierarchies == 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "no cgroup hierarchy is mounted: no cgroup mount "
					     "found in mountinfo (" NO_CGROUP_WHY ")");
	for (size_t i = 0; paths != NULL && i < paths->len; i++)
		if (hierarchy_at(paths->items[i].key) == NULL)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "the container's cgroup hierarchy `%s` is not "
			    "mounted here (is /sys/fs/cgroup hidden, as under "
			    "`ip netns exec`? use `nsenter "
			    "--net=/run/netns/NAME` instead)",
			    paths->items[i].key);
	return 0;
}

/* v1 cpuset refuses tasks while cpuset.cpus or cpuset.mems is empty, and
 * that is how a new cgroup starts: copy the parent's, level by level. */
static int init_cpuset(const hierarchy *h, const char *path, tern_error **err)
{
	cleanup_free char *rel = tern_xstrdup(path);
	static const char *files[] = {"cpuset.cpus", "cpuset.mems"};

	for (char *slash = strchr(rel + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		for (size_t f = 0; f < 2; f++) {
			cleanup_free char *mine =
			    tern_strdup_printf("%s%s/%s", h->mountpoint, rel, files[f]);
			cleanup_free char *cur = NULL;
			if (tern_read_file(mine, &cur, NULL, 0, NULL) < 0 ||
			    (cur[0] != '\n' && cur[0]))
				continue;
			cleanup_free char *parent_dir =
			    tern_strdup_printf("%s%s", h->mountpoint, rel);
			*strrchr(parent_dir, '/') = '\0';
			cleanup_free char *pfile =
			    tern_strdup_printf("%s/%s", parent_dir, files[f]);
			cleanup_free char *val = NULL;
			size_t len;
			int ret = tern_read_file(pfile, &val, &len, 0, err);
			if (ret < 0)
				return ret;
			ret = tern_write_file_at(AT_FDCWD, mine, val, len, err);
			if (ret < 0)
				return ret;
		}
		if (slash == NULL)
			break;
		*slash = '/';
	}
	return 0;
}

/* v2 threaded subtrees: a cgroup made below a threaded one starts as
 * "domain invalid" and takes no processes until it is made threaded too.
 * Do that for each level of the path that needs it. */
static int join_threaded_subtree(const hierarchy *h, const char *path, tern_error **err)
{
	cleanup_free char *rel = tern_xstrdup(path);

	for (char *slash = strchr(rel + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash)
			*slash = '\0';
		cleanup_free char *f = tern_strdup_printf("%s%s/cgroup.type", h->mountpoint, rel);
		cleanup_free char *type = NULL;
		if (tern_read_file(f, &type, NULL, 0, NULL) == 0 &&
		    strncmp(type, "domain invalid", 14) == 0) {
			int ret = tern_write_file_at(AT_FDCWD, f, "threaded", 8, err);
			if (ret < 0)
				return tern_error_wrap(
				    err, "make cgroup `%s%s` threaded (its parent is)",
				    h->mountpoint, rel);
		}
		if (slash == NULL)
			return 0;
		*slash = '/';
	}
}

bool tern_cgroup_missing(const oci_map *paths)
{
	struct stat st;

	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		if (stat(dir, &st) < 0)
			return true;
	}
	return false;
}

int tern_cgroup_create(const oci_map *paths, bool *created, tern_error **err)
{
	load_hierarchies();
	*created = false;
	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		struct stat st;
		if (stat(dir, &st) == 0)
			continue;
		int ret = tern_mkdir_p(dir, 0755, err);
		if (ret < 0)
			return tern_error_wrap(err, "create cgroup `%s`", dir);
		*created = true;
		if (h && h->v2) {
			ret = join_threaded_subtree(h, paths->items[i].value, err);
			if (ret < 0)
				return ret;
		}
		if (h && h->cpuset) {
			ret = init_cpuset(h, paths->items[i].value, err);
			if (ret < 0)
				return tern_error_wrap(err, "create cgroup `%s`", dir);
		}
	}
	return 0;
}

int tern_cgroup_enter(const oci_map *paths, pid_t pid, tern_error **err)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d", pid);

	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
		int ret = tern_write_file_at(AT_FDCWD, procs, buf, (size_t)len, err);
		if (ret < 0)
			return tern_error_wrap(err, "join cgroup `%s`", dir);
	}
	return 0;
}

bool tern_cgroup_is_v2_only(const oci_map *paths)
{
	load_hierarchies();
	if (paths->len != 1)
		return false;
	const hierarchy *h = hierarchy_at(paths->items[0].key);
	return h != NULL && v2_active(h);
}

int tern_cgroup_open_v2_only(const oci_map *paths)
{
	if (!tern_cgroup_is_v2_only(paths))
		return -1;
	cleanup_free char *dir = dir_of(&paths->items[0]);
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int read_pids(const char *dir, pid_t **pids, size_t *n)
{
	cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
	cleanup_free char *data = NULL;
	char *save = NULL;

	*pids = NULL;
	*n = 0;
	if (tern_read_file(procs, &data, NULL, 0, NULL) < 0)
		return -ENOENT;
	for (char *tok = strtok_r(data, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		*pids = realloc(*pids, (*n + 1) * sizeof(pid_t));
		if (*pids == NULL)
			abort();
		(*pids)[(*n)++] = (pid_t)atoi(tok);
	}
	return 0;
}

void tern_cgroup_return_self(void)
{
	char pid[32];

	load_hierarchies();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (size_t i = 0; i < n_hierarchies; i++) {
		const hierarchy *h = &hierarchies[i];
		cleanup_free char *procs = tern_strdup_printf(
		    "%s%s/cgroup.procs", h->mountpoint, strcmp(h->own, "/") == 0 ? "" : h->own);
		if (tern_write_file(procs, pid, strlen(pid), 0644, NULL) < 0)
			tern_debug("back to %s: %s", procs, strerror(errno));
	}
}

/* ---- exec --cgroup ---- */

/* PATH of a --cgroup spec, made relative to the container's cgroup: "/a/b"
 * and "a/b" are the same sub-cgroup; ".." could leave the container's
 * cgroup and is refused. NULL with *err set on a bad one. */
static char *sub_path(const char *spec, const char *path, tern_error **err)
{
	cleanup_free char *copy = tern_xstrdup(path);
	char *out = tern_xstrdup(""), *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			free(out);
			tern_error_make_quiet(err, EINVAL,
					      "--cgroup `%s`: the path must stay below the "
					      "container's cgroup (no `..`)",
					      spec);
			return NULL;
		}
		char *n = tern_strdup_printf("%s/%s", out, c);
		free(out);
		out = n;
	}
	return out;
}

/* Point the hierarchy i of `out` at `rel` below the container's cgroup.
 * Controllers mounted together share one cgroup: two specs that want it in
 * different places conflict. */
static int move_one(const oci_map *base, oci_map *out, size_t i, const char *spec, const char *rel,
		    bool *moved, tern_error **err)
{
	const char *from = base->items[i].value;
	oci_kv *kv = &out->items[i];
	cleanup_free char *want =
	    tern_strdup_printf("%s%s", strcmp(from, "/") == 0 ? "" : from, rel);

	if (moved[i] && strcmp(kv->value, want) != 0)
		return tern_error_make_quiet(err, EINVAL,
					     "--cgroup `%s`: another --cgroup already names the "
					     "hierarchy `%s` (its controllers share one cgroup)",
					     spec, kv->key);
	free(kv->value);
	kv->value = steal_pointer(&want);
	moved[i] = true;
	return 0;
}

/* Move the hierarchies of `out` that the comma-separated `ctrls` name (all
 * of them when NULL) down to `rel`. */
static int move_down(const oci_map *base, oci_map *out, const char *spec, const char *ctrls,
		     const char *rel, bool *moved, tern_error **err)
{
	cleanup_free char *list = ctrls ? tern_xstrdup(ctrls) : NULL;
	char *save = NULL;
	int ret;

	if (ctrls == NULL) {
		for (size_t i = 0; i < out->len; i++)
			if ((ret = move_one(base, out, i, spec, rel, moved, err)) < 0)
				return ret;
		return 0;
	}
	for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (size_t i = 0; i < out->len; i++) {
			const hierarchy *h = hierarchy_at(out->items[i].key);
			if (h == NULL || h->v2 || !has_controllers(h->controllers, c))
				continue;
			found = true;
			if ((ret = move_one(base, out, i, spec, rel, moved, err)) < 0)
				return ret;
		}
		if (!found)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "--cgroup `%s`: the container has no cgroup v1 "
			    "hierarchy with the `%s` controller",
			    spec, c);
	}
	return 0;
}

static int sub_paths_parse(const oci_map *base, oci_map *out, char *const *specs, bool *moved,
			   tern_error **err)
{
	size_t n = 0;

	while (specs[n])
		n++;
	for (size_t i = 0; i < n; i++) {
		const char *spec = specs[i], *colon = strchr(spec, ':');
		const char *path = colon ? colon + 1 : spec;
		cleanup_free char *ctrls = colon ? strndup(spec, (size_t)(colon - spec)) : NULL;

		if (colon && (strchr(path, ':') != NULL || *ctrls == '\0'))
			return tern_error_make_quiet(
			    err, EINVAL,
			    "--cgroup `%s`: expected [CONTROLLER[,CONTROLLER...]:]PATH", spec);
		if (!colon && n > 1)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "--cgroup `%s`: with more than one --cgroup each needs its "
			    "CONTROLLER: prefix",
			    spec);
		if (colon && v2_host)
			return tern_error_make_quiet(
			    err, EINVAL,
			    "--cgroup `%s`: a CONTROLLER: prefix needs cgroup v1, and this host "
			    "has one cgroup v2 hierarchy for all controllers: give the path alone",
			    spec);
		cleanup_free char *rel = sub_path(spec, path, err);
		if (rel == NULL)
			return -EINVAL;
		int ret = move_down(base, out, spec, ctrls, rel, moved, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_cgroup_sub_paths(const oci_map *paths, char *const *specs, oci_map *out, tern_error **err)
{
	load_hierarchies();
	out->len = 0;
	out->items = NULL;
	if (paths->len == 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "--cgroup: the container has no cgroup (a rootless "
					     "container gets one only where one is delegated)");
	out->items = tern_xmalloc0(paths->len * sizeof(oci_kv));
	for (size_t i = 0; i < paths->len; i++) {
		out->items[i].key = tern_xstrdup(paths->items[i].key);
		out->items[i].value = tern_xstrdup(paths->items[i].value);
	}
	out->len = paths->len;
	cleanup_free bool *moved = tern_xmalloc0(paths->len * sizeof(bool));
	int ret = sub_paths_parse(paths, out, specs, moved, err);
	/* the sub-cgroups must exist: exec joins cgroups, it never makes them */
	for (size_t i = 0; ret == 0 && i < out->len; i++) {
		cleanup_free char *dir = dir_of(&out->items[i]);
		struct stat st;
		if (moved[i] && stat(dir, &st) < 0)
			ret = tern_error_make(err, errno, "--cgroup: sub-cgroup `%s`", dir);
	}
	if (ret < 0)
		oci_map_clear(out);
	return ret;
}

int tern_cgroup_pids(const oci_map *paths, pid_t **pids, size_t *n, tern_error **err)
{
	*pids = NULL;
	*n = 0;
	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		if (read_pids(dir, pids, n) == 0)
			return 0;
	}
	return tern_error_make(err, ENOENT, "the container's cgroup is gone");
}

static void thaw(const hierarchy *h, const char *dir)
{
	if (h == NULL || !h->freezer)
		return;
	cleanup_free char *f =
	    tern_strdup_printf("%s/%s", dir, h->v2 ? "cgroup.freeze" : "freezer.state");
	const char *v = h->v2 ? "0" : "THAWED";
	tern_write_file_at(AT_FDCWD, f, v, strlen(v), NULL);
}

/* Kill what runs in `dir` and remove it; leftover processes keep it busy,
 * so kill and wait (bounded, about 1 s). */
static int remove_one(const char *dir, tern_error **err)
{
	for (int attempt = 0; attempt < 200; attempt++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return tern_error_make(err, errno, "remove cgroup `%s`", dir);
		pid_t *pids = NULL;
		size_t n = 0;
		read_pids(dir, &pids, &n);
		for (size_t j = 0; j < n; j++)
			kill(pids[j], SIGKILL);
		free(pids);
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return tern_error_make(err, EBUSY, "remove cgroup `%s`", dir);
}

/* The names of the cgroups right below `dir` (full paths). */
static size_t sub_cgroups(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	size_t n = 0;

	*out = NULL;
	if (d == NULL)
		return 0;
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		*out = realloc(*out, (n + 1) * sizeof(**out));
		if (*out == NULL)
			abort();
		(*out)[n++] = tern_strdup_printf("%s/%s", dir, de->d_name);
	}
	closedir(d);
	return n;
}

/* Thaw `dir` and everything below it, top down: a sub-cgroup can also be
 * frozen on its own (v1 freezer.state, v2 cgroup.freeze). */
/* visit(h, dir) for `dir` and every cgroup below it, parents first. */
static void walk_tree(const hierarchy *h, const char *dir, int depth,
		      void (*visit)(const hierarchy *, const char *))
{
	char **subs;
	size_t n;

	visit(h, dir);
	n = depth < 32 ? sub_cgroups(dir, &subs) : 0;
	for (size_t i = 0; i < n; i++) {
		walk_tree(h, subs[i], depth + 1, visit);
		free(subs[i]);
	}
	if (n > 0)
		free(subs);
}

/* walk_tree over the container's cgroup in each hierarchy with a freezer
 * (not the root: a container without a cgroup of its own). */
static void walk_frozen_candidates(const oci_map *paths,
				   void (*visit)(const hierarchy *, const char *))
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const char *inner = paths->items[i].value;
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		if (inner == NULL || *inner == '\0' || strcmp(inner, "/") == 0 || h == NULL ||
		    !h->freezer)
			continue;
		cleanup_free char *dir = dir_of(&paths->items[i]);
		walk_tree(h, dir, 0, visit);
	}
}

void tern_cgroup_thaw_all(const oci_map *paths)
{
	walk_frozen_candidates(paths, thaw);
}

/* A v1 cgroup stays FROZEN after our THAWED when an ancestor that is not
 * ours is frozen (freezer.parent_freezing): someone froze, say, the pod's
 * cgroup above the container. Its tasks would never die of SIGKILL and
 * the cgroup would stay busy. The kernel thaws a task that moves into a
 * cgroup that is not freezing, so give each one its SIGKILL first (it
 * must never run a single instruction in the hierarchy's root) and then
 * move it to the root, where it wakes up only to die. Not needed on v2:
 * there a fatal signal kills a frozen task. */
static void release_frozen(const hierarchy *h, const char *dir)
{
	cleanup_free char *state_file = NULL;
	cleanup_free char *state = NULL;
	cleanup_free char *root_procs = NULL;

	if (h->v2)
		return;
	state_file = tern_strdup_printf("%s/freezer.state", dir);
	if (tern_read_file(state_file, &state, NULL, 0, NULL) < 0 ||
	    strncmp(state, "THAWED", 6) == 0)
		return;
	root_procs = tern_strdup_printf("%s/cgroup.procs", h->mountpoint);
	/* a few rounds: a task that was not frozen yet may fork */
	for (int round = 0; round < 8; round++) {
		pid_t *pids = NULL;
		size_t np = 0;
		if (read_pids(dir, &pids, &np) < 0 || np == 0) {
			free(pids);
			break;
		}
		for (size_t j = 0; j < np; j++) {
			char buf[32];
			int len = snprintf(buf, sizeof(buf), "%d", (int)pids[j]);
			kill(pids[j], SIGKILL);
			tern_write_file_at(AT_FDCWD, root_procs, buf, (size_t)len, NULL);
		}
		free(pids);
	}
}

void tern_cgroup_release_frozen(const oci_map *paths)
{
	walk_frozen_candidates(paths, release_frozen);
}

/* Remove `dir` and every cgroup below it, deepest first: a cgroup with
 * children is busy (rmdir fails with EBUSY), and sub-cgroups are what a
 * container with a writable cgroup mount, or its manager, may well make
 * (runc and crun remove them too). The caller thaws the tree first
 * (tern_cgroup_thaw_all): a task in a frozen v1 cgroup cannot die. */
static int remove_tree(const char *dir, int depth, tern_error **err)
{
	/* most often an empty leaf by now: one rmdir, no listing */
	if (rmdir(dir) == 0 || errno == ENOENT)
		return 0;

	char **subs;
	size_t n = depth < 32 ? sub_cgroups(dir, &subs) : 0;
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		if (ret == 0)
			ret = remove_tree(subs[i], depth + 1, err);
		free(subs[i]);
	}
	if (n > 0)
		free(subs);
	if (ret < 0)
		return ret;
	return remove_one(dir, err);
}

int tern_cgroup_destroy(const oci_map *paths, tern_error **err)
{
	int first = 0;

	load_hierarchies();
	/* Thaw first, everywhere: a frozen task cannot die, and it would keep
	 * every other hierarchy's cgroup busy too. */
	tern_cgroup_thaw_all(paths);
	tern_cgroup_release_frozen(paths);
	/* Every hierarchy, even after one failed: leave as little as we can. */
	for (size_t i = 0; i < paths->len; i++) {
		const char *inner = paths->items[i].value;
		if (inner == NULL || *inner == '\0' || strcmp(inner, "/") == 0)
			continue; /* never a hierarchy's root */
		cleanup_free char *dir = dir_of(&paths->items[i]);
		struct stat st;
		if (stat(dir, &st) < 0)
			continue;
		int ret = remove_tree(dir, 0, first < 0 ? NULL : err);
		if (ret < 0 && first == 0)
			first = ret;
	}
	return first;
}

int tern_cgroup_remove(const oci_map *paths, const char *systemd_unit, tern_error **err)
{
	/* Kill and remove first: a scope with no processes left stops at once,
	 * while stopping a busy one would wait for them to obey SIGTERM. */
	int ret = tern_cgroup_destroy(paths, err);
	if (ret < 0 || systemd_unit == NULL)
		return ret;
	return tern_systemd_stop_scope(systemd_unit, err);
}

static bool hybrid_hugetlb_on_unified(const hierarchy *h);

static bool v2_active(const hierarchy *h)
{
	load_hierarchies();
	return h->v2 && v2_host;
}

bool tern_cgroup_is_frozen(const oci_map *paths)
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		if (h == NULL || !h->freezer || (h->v2 && !v2_active(h)))
			continue;
		cleanup_free char *dir = dir_of(&paths->items[i]);
		cleanup_free char *f =
		    tern_strdup_printf("%s/%s", dir, h->v2 ? "cgroup.freeze" : "freezer.state");
		cleanup_free char *data = NULL;
		if (tern_read_file(f, &data, NULL, 0, NULL) < 0)
			continue;
		if (h->v2 ? data[0] == '1' : strncmp(data, "FROZEN", 6) == 0)
			return true;
	}
	return false;
}

/* The cgroup a process put in `dir` would start in: `dir` itself, or the
 * nearest ancestor that exists (a cgroup made now inherits its freezing).
 * NULL when even the hierarchy's root cannot be seen. */
static char *existing_self_or_ancestor(const char *mountpoint, const char *dir)
{
	cleanup_free char *d = tern_xstrdup(dir);
	size_t root_len = strlen(mountpoint);

	while (access(d, F_OK) < 0) {
		char *slash = strrchr(d, '/');
		if (slash == NULL || (size_t)(slash - d) < root_len)
			return NULL;
		*slash = '\0';
	}
	return steal_pointer(&d);
}

/* Whether `dir` freezes what enters it: v1 freezer.state says FROZEN or
 * FREEZING for its own freezing and a parent's alike
 * (freezer.parent_freezing); v2 cgroup.freeze is its own, and cgroup.events
 * "frozen 1" also an inherited one (the root has neither file). */
static bool dir_freezes(const hierarchy *h, const char *dir)
{
	cleanup_free char *data = NULL;
	cleanup_free char *f = NULL;

	if (!h->v2) {
		f = tern_strdup_printf("%s/freezer.state", dir);
		return tern_read_file(f, &data, NULL, 0, NULL) == 0 &&
		       strncmp(data, "THAWED", 6) != 0;
	}
	f = tern_strdup_printf("%s/cgroup.freeze", dir);
	if (tern_read_file(f, &data, NULL, 0, NULL) == 0 && data[0] == '1')
		return true;
	free(steal_pointer(&data));
	free(steal_pointer(&f));
	f = tern_strdup_printf("%s/cgroup.events", dir);
	return tern_read_file(f, &data, NULL, 0, NULL) == 0 &&
	       (strncmp(data, "frozen 1", 8) == 0 || strstr(data, "\nfrozen 1") != NULL);
}

int tern_cgroup_check_unfrozen(const oci_map *paths, tern_error **err)
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		/* the v2 freezer is part of every cgroup2 hierarchy, the
		 * hybrid host's unified one too: a task frozen there stops */
		if (h == NULL || !h->freezer)
			continue;
		cleanup_free char *dir = dir_of(&paths->items[i]);
		cleanup_free char *at = existing_self_or_ancestor(h->mountpoint, dir);
		if (at == NULL || !dir_freezes(h, at))
			continue;
		if (strcmp(at, dir) == 0)
			return tern_error_make_quiet(
			    err, EBUSY,
			    "the container's cgroup `%s` is frozen (%s): its init would stop "
			    "there and never finish; thaw it first",
			    dir, h->v2 ? "cgroup.freeze / cgroup.events" : "freezer.state");
		return tern_error_make_quiet(
		    err, EBUSY,
		    "the container's cgroup `%s` would be made below `%s`, which is frozen "
		    "(%s): its init would stop there and never finish; thaw it first",
		    dir, at, h->v2 ? "cgroup.freeze / cgroup.events" : "freezer.state");
	}
	return 0;
}

size_t tern_cgroup_count_procs(const oci_map *paths)
{
	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		cleanup_free pid_t *pids = NULL;
		size_t n = 0;
		if (read_pids(dir, &pids, &n) == 0)
			return n;
	}
	return 0;
}

static void move_to_roots(pid_t pid)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d", (int)pid);

	for (size_t i = 0; i < n_hierarchies; i++) {
		cleanup_free char *f =
		    tern_strdup_printf("%s/cgroup.procs", hierarchies[i].mountpoint);
		tern_write_file_at(AT_FDCWD, f, buf, (size_t)len, NULL);
	}
}

static bool pid_ns_of(pid_t pid, struct stat *st)
{
	cleanup_free char *f = tern_strdup_printf("/proc/%d/ns/pid", (int)pid);
	return stat(f, st) == 0;
}

void tern_cgroup_evict(const oci_map *paths, pid_t pid)
{
	struct stat init_ns, own_ns, ns;
	bool own_pid_ns;

	load_hierarchies();
	own_pid_ns = pid_ns_of(pid, &init_ns) && pid_ns_of(getpid(), &own_ns) &&
		     (init_ns.st_ino != own_ns.st_ino || init_ns.st_dev != own_ns.st_dev);
	move_to_roots(pid);
	kill(pid, SIGKILL);
	/* A pid namespace's init does not finish dying before the rest of its
	 * namespace has (zap_pid_ns_processes): those in the frozen cgroup
	 * (a hook, say) go too. Only those: others may share the cgroup. */
	if (!own_pid_ns)
		return;
	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = dir_of(&paths->items[i]);
		cleanup_free pid_t *pids = NULL;
		size_t n = 0;
		if (read_pids(dir, &pids, &n) < 0)
			continue;
		for (size_t j = 0; j < n; j++) {
			if (!pid_ns_of(pids[j], &ns) || ns.st_ino != init_ns.st_ino ||
			    ns.st_dev != init_ns.st_dev)
				continue;
			move_to_roots(pids[j]);
			kill(pids[j], SIGKILL);
		}
	}
}

/* ---- resources ---- */

/* The v2 hierarchy "has controllers" when its root lists any: a pure v2
 * host. In hybrid mode the unified hierarchy is empty and v1 does the work. */

bool tern_cgroup_v2_has_controllers(void)
{
	load_hierarchies();
	for (size_t i = 0; i < n_hierarchies; i++)
		if (v2_active(&hierarchies[i]))
			return true;
	return false;
}

bool tern_cgroup_hierarchy_has(const char *mountpoint, const char *controller)
{
	load_hierarchies();
	const hierarchy *h = hierarchy_at(mountpoint);
	if (h == NULL)
		return false;
	if (h->v2)
		return v2_host || (controller && strcmp(controller, "hugetlb") == 0 &&
				   hybrid_hugetlb_on_unified(h));
	return controller && has_controllers(h->controllers, controller);
}

static bool v1_has(const char *ctrl);
static int check_host_controllers(const oci_resources *r, tern_error **err);

int tern_cgroup_validate_resources(const oci_resources *r, tern_error **err)
{
	int ret;

	if (r == NULL)
		return 0;
	if (tern_cgroup_v2_has_controllers())
		ret = tern_cgroup_v2_validate(r, err);
	else
		ret = tern_cgroup_v1_validate(r, err);
	if (ret < 0)
		return ret;
	return check_host_controllers(r, err);
}

/* Where hugetlb lives on a v1 or hybrid host: a v1 hierarchy of its own,
 * or (as on hosts whose v1 set lacks it) the unified hierarchy, which in
 * hybrid mode may carry a controller or two. */
static bool v1_has(const char *ctrl)
{
	for (size_t i = 0; i < n_hierarchies; i++)
		if (!hierarchies[i].v2 && has_controllers(hierarchies[i].controllers, ctrl))
			return true;
	return false;
}

static bool hybrid_hugetlb_on_unified(const hierarchy *h)
{
	if (v2_host || !h->v2 || v1_has("hugetlb"))
		return false;
	cleanup_free char *f = tern_strdup_printf("%s/cgroup.controllers", h->mountpoint);
	cleanup_free char *data = NULL;
	if (tern_read_file(f, &data, NULL, 0, NULL) < 0)
		return false;
	for (char *save = NULL, *tok = strtok_r(data, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (strcmp(tok, "hugetlb") == 0)
			return true;
	return false;
}

/* Hybrid host, hugetlb only on the unified hierarchy: the hugepage limits
 * go there (the rest stays with v1). */
static int apply_hybrid_hugetlb(const hierarchy *h, const char *path, const char *dir,
				const oci_resources *r, tern_error **err)
{
	oci_resources only = {.hugepage_limits = r->hugepage_limits,
			      .hugepage_limits_len = r->hugepage_limits_len};
	int ret = tern_cgroup_v2_prepare(h->mountpoint, path, err);
	if (ret == 0)
		ret = tern_cgroup_v2_apply(dir, &only, false, err);
	return ret;
}

/* A limit whose controller the host lacks cannot be applied: say so
 * before anything exists, naming the field (runtime-spec: a setting the
 * runtime cannot apply is an error; runc fails these too, once it has made
 * the cgroup). A network object with neither classID nor priorities asks
 * for nothing. */
static int check_host_controllers(const oci_resources *r, tern_error **err)
{
	const oci_network *net = r->network;

	load_hierarchies();
	if (r->hugepage_limits_len > 0 && !v2_host && !v1_has("hugetlb")) {
		bool unified = false;
		for (size_t i = 0; i < n_hierarchies; i++)
			unified = unified || hybrid_hugetlb_on_unified(&hierarchies[i]);
		if (!unified)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "linux.resources.hugepageLimits: this host has "
			    "no hugetlb cgroup controller (neither a v1 "
			    "hierarchy nor on the unified one)");
	}
	if (r->rdma_len > 0 && !v2_host && !v1_has("rdma"))
		return tern_error_make_quiet(err, ENOTSUP,
					     "linux.resources.rdma: this host has no rdma cgroup "
					     "controller (no v1 hierarchy carries it)");
	/* cgroup v2 has no network controller at all: traffic classes and
	 * priorities are set with eBPF or tc there */
	if (net && net->class_id.set && (v2_host || !v1_has("net_cls")))
		return tern_error_make_quiet(
		    err, ENOTSUP, "linux.resources.network.classID: this host has no net_cls %s",
		    v2_host ? "controller (cgroup v2 has none)"
			    : "cgroup controller (no v1 hierarchy carries it)");
	if (net && net->priorities_len > 0 && (v2_host || !v1_has("net_prio")))
		return tern_error_make_quiet(
		    err, ENOTSUP,
		    "linux.resources.network.priorities: this host has no net_prio %s",
		    v2_host ? "controller (cgroup v2 has none)"
			    : "cgroup controller (no v1 hierarchy carries it)");
	return 0;
}

int tern_cgroup_apply_resources(const oci_map *paths, const oci_resources *r, bool update,
				tern_error **err)
{
	load_hierarchies();
	/* checked at create already; restore comes here too */
	int missing = r ? check_host_controllers(r, err) : 0;
	if (missing < 0)
		return missing;
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		cleanup_free char *dir = dir_of(&paths->items[i]);
		int ret = 0;

		if (h == NULL)
			continue;
		if (h->v2) {
			if (!v2_active(h)) {
				if (r && r->hugepage_limits_len > 0 && hybrid_hugetlb_on_unified(h))
					ret = apply_hybrid_hugetlb(h, paths->items[i].value, dir, r,
								   err);
				if (ret < 0)
					return ret;
				continue;
			}
			ret = tern_cgroup_v2_prepare(h->mountpoint, paths->items[i].value, err);
			if (ret == 0 && r)
				ret = tern_cgroup_v2_apply(dir, r, update, err);
			/* devices: v2 has no files for them, an eBPF program does it;
			 * on create the defaults apply even with no rules */
			if (ret == 0 && (!update || (r && r->devices_len > 0))) {
				ret = tern_cgroup_v2_devices_apply(dir, r ? r->devices : NULL,
								   r ? r->devices_len : 0, err);
				if (ret < 0 && rootless_mode) {
					tern_debug("rootless: device rules not applied");
					ret = 0;
				}
			}
		} else {
			/* also without linux.resources: the device rules */
			ret = tern_cgroup_v1_apply(dir, h->controllers, r, update, err);
			if (ret < 0 && rootless_mode &&
			    has_controllers(h->controllers, "devices") &&
			    (ret == -EPERM || ret == -EACCES)) {
				tern_debug("rootless: device rules not applied in %s", dir);
				ret = 0;
			}
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tern_cgroup_freeze(const oci_map *paths, bool freeze, tern_error **err)
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		if (h == NULL || !h->freezer || (h->v2 && !v2_active(h)))
			continue;
		cleanup_free char *dir = dir_of(&paths->items[i]);
		return h->v2 ? tern_cgroup_v2_freeze(dir, freeze, err)
			     : tern_cgroup_v1_freeze(dir, freeze, err);
	}
	return tern_error_make(err, ENOTSUP, "%s: no freezer cgroup for this container",
			       freeze ? "pause" : "resume");
}

int tern_cgroup_stats_read(const oci_map *paths, tern_cgroup_stats *stats, tern_error **err)
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		cleanup_free char *dir = dir_of(&paths->items[i]);
		int ret = 0;
		if (h == NULL)
			continue;
		if (h->v2) {
			if (v2_active(h))
				ret = tern_cgroup_v2_stats(dir, stats, err);
			else if (hybrid_hugetlb_on_unified(h))
				ret = tern_cgroup_v2_hugetlb_stats(dir, stats, err);
		} else {
			ret = tern_cgroup_v1_stats(dir, h->controllers, stats, err);
		}
		if (ret < 0)
			return ret;
	}
	return 0;
}

void tern_cgroup_oom_watch_close(tern_cgroup_oom_watch *w)
{
	if (w->started && w->v1_eventfd >= 0)
		close(w->v1_eventfd);
	w->v1_eventfd = -1;
}

int tern_cgroup_oom_wait(const oci_map *paths, tern_cgroup_oom_watch *w, int timeout_ms,
			 tern_error **err)
{
	load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = hierarchy_at(paths->items[i].key);
		if (h == NULL)
			continue;
		cleanup_free char *dir = dir_of(&paths->items[i]);
		if (h->v2 && v2_active(h)) {
			if (!w->started) {
				/* count only the kills from now on */
				w->started = true;
				w->v1_eventfd = -1;
				tern_cgroup_v2_oom_wait(dir, &w->v2_oom_kills, 0, NULL);
			}
			return tern_cgroup_v2_oom_wait(dir, &w->v2_oom_kills, timeout_ms, err);
		}
		if (!h->v2 && has_controllers(h->controllers, "memory")) {
			if (!w->started) {
				w->started = true;
				w->v1_eventfd = tern_cgroup_v1_oom_eventfd(dir, err);
				if (w->v1_eventfd < 0)
					return w->v1_eventfd;
			}
			struct pollfd pfd = {.fd = w->v1_eventfd, .events = POLLIN};
			int n = poll(&pfd, 1, timeout_ms);
			if (n <= 0)
				return 0;
			uint64_t count;
			if (read(w->v1_eventfd, &count, sizeof(count)) != sizeof(count))
				return 0;
			/* the kernel also signals removal of the cgroup */
			cleanup_free char *ctl = tern_strdup_printf("%s/cgroup.event_control", dir);
			return access(ctl, F_OK) == 0 ? 1 : 0;
		}
	}
	/* no memory controller: nothing to watch, just wait */
	if (timeout_ms > 0)
		poll(NULL, 0, timeout_ms);
	return 0;
}
