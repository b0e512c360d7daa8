/* Taking the container's cgroup down: thawing what is frozen so that
 * SIGKILL works, the frozen checks before a process goes in, evicting a
 * process, and removing the cgroup and everything below it. */
#include "cgroup-internal.h"
#include "cgroup-systemd.h"
#include "utils.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
		tern_cg_read_pids(dir, &pids, &n);
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
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const char *inner = paths->items[i].value;
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		if (inner == NULL || *inner == '\0' || strcmp(inner, "/") == 0 || h == NULL ||
		    !h->freezer)
			continue;
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
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
		if (tern_cg_read_pids(dir, &pids, &np) < 0 || np == 0) {
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

	tern_cg_load_hierarchies();
	/* Thaw first, everywhere: a frozen task cannot die, and it would keep
	 * every other hierarchy's cgroup busy too. */
	tern_cgroup_thaw_all(paths);
	tern_cgroup_release_frozen(paths);
	/* Every hierarchy, even after one failed: leave as little as we can. */
	for (size_t i = 0; i < paths->len; i++) {
		const char *inner = paths->items[i].value;
		if (inner == NULL || *inner == '\0' || strcmp(inner, "/") == 0)
			continue; /* never a hierarchy's root */
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
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

bool tern_cgroup_is_frozen(const oci_map *paths)
{
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		if (h == NULL || !h->freezer || (h->v2 && !tern_cg_v2_active(h)))
			continue;
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
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
	tern_cg_load_hierarchies();
	for (size_t i = 0; i < paths->len; i++) {
		const hierarchy *h = tern_cg_hierarchy_at(paths->items[i].key);
		/* the v2 freezer is part of every cgroup2 hierarchy, the
		 * hybrid host's unified one too: a task frozen there stops */
		if (h == NULL || !h->freezer)
			continue;
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
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
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		cleanup_free pid_t *pids = NULL;
		size_t n = 0;
		if (tern_cg_read_pids(dir, &pids, &n) == 0)
			return n;
	}
	return 0;
}

static void move_to_roots(pid_t pid)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d", (int)pid);

	for (size_t i = 0; i < tern_cg_n_hierarchies; i++) {
		cleanup_free char *f =
		    tern_strdup_printf("%s/cgroup.procs", tern_cg_hierarchies[i].mountpoint);
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

	tern_cg_load_hierarchies();
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
		cleanup_free char *dir = tern_cg_dir_of(&paths->items[i]);
		cleanup_free pid_t *pids = NULL;
		size_t n = 0;
		if (tern_cg_read_pids(dir, &pids, &n) < 0)
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
