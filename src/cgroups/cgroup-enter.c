/* Putting processes in the container's cgroup: creating it in every
 * hierarchy (the v1 cpuset and v2 threaded-subtree quirks), entering it,
 * the sub-cgroups of `exec --cgroup`, listing its pids. */
#include "cgroup-internal.h"
#include "log.h"
#include "oci-state.h"
#include "utils.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		if (stat(dir, &st) < 0)
			return true;
	}
	return false;
}

int tern_cgroup_create(const oci_map *paths, bool *created, tern_error **err)
{
	tern_cg_load_hierarchies();
	*created = false;
	for (size_t i = 0; i < paths->len; i++) {
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
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
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
		int ret = tern_write_file_at(AT_FDCWD, procs, buf, (size_t)len, err);
		if (ret < 0)
			return tern_error_wrap(err, "join cgroup `%s`", dir);
	}
	return 0;
}

bool tern_cgroup_is_v2_only(const oci_map *paths)
{
	tern_cg_load_hierarchies();
	if (paths->len != 1)
		return false;
	const hierarchy *h = tern_cg_hierarchy_at(paths->items[0].key);
	return h != NULL && tern_cg_v2_active(h);
}

int tern_cgroup_open_v2_only(const oci_map *paths)
{
	if (!tern_cgroup_is_v2_only(paths))
		return -1;
	cleanup_free char *dir = tern_cg_dir_of(&paths->items[0]);
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int tern_cg_read_pids(const char *dir, pid_t **pids, size_t *n)
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

	tern_cg_load_hierarchies();
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
		const hierarchy *h = &tern_cg_hierarchies[i];
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
			const hierarchy *h = tern_cg_hierarchy_at(out->items[i].key);
			if (h == NULL || h->v2 || !tern_cg_has_controllers(h->controllers, c))
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
		if (colon && tern_cg_v2_host)
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
	tern_cg_load_hierarchies();
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
		cleanup_free char *dir = tern_cg_dir_of(&out->items[i]);
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
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		if (tern_cg_read_pids(dir, pids, n) == 0)
			return 0;
	}
	return tern_error_make(err, ENOENT, "the container's cgroup is gone");
}
