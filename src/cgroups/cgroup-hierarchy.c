/* The cgroup hierarchies this host has mounted, read once from mountinfo:
 * which controllers each carries, where our own cgroup is in each, whether
 * the host is pure v2; the container's cgroup resolved in each of them.
 * The other parts of the module (cgroup-internal.h) look up the table
 * here and never read mountinfo themselves. */
#include "cgroup-internal.h"
#include "cgroup-v2.h"
#include "utils.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tern_cg_rootless_mode;

void tern_cgroup_set_rootless(bool on)
{
	tern_cg_rootless_mode = on;
	tern_cgroup_v2_set_rootless(on);
}

bool tern_cgroup_rootless(void)
{
	return tern_cg_rootless_mode;
}

hierarchy *tern_cg_hierarchies;
size_t tern_cg_n_hierarchies;
static bool loaded;
/* A pure v2 host: the v2 hierarchy lists controllers and no v1 hierarchy
 * carries a real one. In hybrid mode (v1 controllers, maybe a controller or
 * two such as hugetlb on the unified hierarchy) v1 does the work. Read once. */
bool tern_cg_v2_host;

static bool compute_v2_host(void)
{
	bool v2_controllers = false;

	for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
		const hierarchy *h = &tern_cg_hierarchies[i];
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
bool tern_cg_has_controllers(const char *opts, const char *ctrls)
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
		for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
			hierarchy *h = &tern_cg_hierarchies[i];
			bool match =
			    h->v2 ? (strcmp(line, "0") == 0 && *ctrls == '\0')
				  : (*ctrls && tern_cg_has_controllers(h->controllers, ctrls));
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
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
		hierarchy *h = &tern_cg_hierarchies[i];
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

void tern_cg_load_hierarchies(void)
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
		tern_cg_hierarchies =
		    realloc(tern_cg_hierarchies,
			    (tern_cg_n_hierarchies + 1) * sizeof(*tern_cg_hierarchies));
		if (tern_cg_hierarchies == NULL)
			abort();
		tern_cg_hierarchies[tern_cg_n_hierarchies].dev = tern_xstrdup(dev);
		tern_cg_hierarchies[tern_cg_n_hierarchies].mountpoint = tern_xstrdup(mnt);
		tern_cg_hierarchies[tern_cg_n_hierarchies].mount_root = tern_xstrdup(root);
		tern_cg_hierarchies[tern_cg_n_hierarchies].own = tern_xstrdup("/");
		tern_cg_hierarchies[tern_cg_n_hierarchies].controllers = tern_xstrdup(superopts);
		tern_cg_hierarchies[tern_cg_n_hierarchies].v2 = v2;
		tern_cg_hierarchies[tern_cg_n_hierarchies].freezer =
		    v2 || strstr(superopts, "freezer") != NULL;
		tern_cg_hierarchies[tern_cg_n_hierarchies].cpuset =
		    !v2 && strstr(superopts, "cpuset") != NULL;
		tern_cg_n_hierarchies++;
	}
	free(line);
	fclose(f);
	read_own_cgroups();
	tern_cg_v2_host = compute_v2_host();
}

int tern_cgroup_resolve(const char *cgroups_path, const char *id, oci_map *paths, char **display,
			tern_error **err)
{
	cleanup_free char *rel = NULL;
	bool absolute = cgroups_path && cgroups_path[0] == '/';

	tern_cg_load_hierarchies();
	if (cgroups_path && *cgroups_path && strstr(cgroups_path, "..") != NULL)
		return tern_error_make(err, EINVAL, "linux.cgroupsPath `%s`: must not contain `..`",
				       cgroups_path);
	rel = tern_xstrdup(cgroups_path && *cgroups_path ? cgroups_path : id);
	*display = tern_xstrdup(rel);
	paths->items = tern_xmalloc0((tern_cg_n_hierarchies + 1) * sizeof(oci_kv));
	paths->len = 0;
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
		const hierarchy *h = &tern_cg_hierarchies[i];
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

char *tern_cg_dir_of(const oci_kv *kv)
{
	return tern_strdup_printf("%s%s", kv->key, kv->value);
}

const hierarchy *tern_cg_hierarchy_at(const char *mountpoint)
{
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++)
		if (strcmp(tern_cg_hierarchies[i].mountpoint, mountpoint) == 0)
			return &tern_cg_hierarchies[i];
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
	tern_cg_load_hierarchies();
	if (tern_cg_n_hierarchies == 0)
		return tern_error_make_quiet(err, ENOTSUP,
					     "no cgroup hierarchy is mounted: no cgroup mount "
					     "found in mountinfo (" NO_CGROUP_WHY ")");
	for (size_t i = 0; paths != NULL && i < paths->len; i++)
		if (tern_cg_hierarchy_at(paths->items[i].key) == NULL)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "the container's cgroup hierarchy `%s` is not "
			    "mounted here (is /sys/fs/cgroup hidden, as under "
			    "`ip netns exec`? use `nsenter "
			    "--net=/run/netns/NAME` instead)",
			    paths->items[i].key);
	return 0;
}

bool tern_cg_v2_active(const hierarchy *h)
{
	tern_cg_load_hierarchies();
	return h->v2 && tern_cg_v2_host;
}

/* The v2 hierarchy "has controllers" when its root lists any: a pure v2
 * host. In hybrid mode the unified hierarchy is empty and v1 does the work. */

bool tern_cgroup_v2_has_controllers(void)
{
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++)
		if (tern_cg_v2_active(&tern_cg_hierarchies[i]))
			return true;
	return false;
}

bool tern_cgroup_hierarchy_has(const char *mountpoint, const char *controller)
{
	tern_cg_load_hierarchies();
	const hierarchy *h = tern_cg_hierarchy_at(mountpoint);
	if (h == NULL)
		return false;
	if (h->v2)
		return tern_cg_v2_host || (controller && strcmp(controller, "hugetlb") == 0 &&
					   tern_cg_hybrid_hugetlb_on_unified(h));
	return controller && tern_cg_has_controllers(h->controllers, controller);
}

/* Where hugetlb lives on a v1 or hybrid host: a v1 hierarchy of its own,
 * or (as on hosts whose v1 set lacks it) the unified hierarchy, which in
 * hybrid mode may carry a controller or two. */
bool tern_cg_v1_has(const char *ctrl)
{
	for (size_t i = 0; i < tern_cg_n_hierarchies; i++)
		if (!tern_cg_hierarchies[i].v2 &&
		    tern_cg_has_controllers(tern_cg_hierarchies[i].controllers, ctrl))
			return true;
	return false;
}

bool tern_cg_hybrid_hugetlb_on_unified(const hierarchy *h)
{
	if (tern_cg_v2_host || !h->v2 || tern_cg_v1_has("hugetlb"))
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
