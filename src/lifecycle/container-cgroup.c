#include "container-cgroup.h"
#include "cgroup-systemd.h"
#include "cgroup.h"
#include "container-load.h"
#include "log.h"
#include "utils.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const oci_resources *config_resources(const tern_container *c)
{
	return c->config->linux_ ? c->config->linux_->resources : NULL;
}

/* Rootless cgroup handling: asked for with --rootless true, or (auto)
 * when tern does not run as root and not through systemd, which is how
 * runc decides it. */
static bool rootless_rt(const tern_runtime *rt)
{
	if (rt->rootless == TERN_ROOTLESS_AUTO)
		return geteuid() != 0 && !rt->systemd_cgroup;
	return rt->rootless == TERN_ROOTLESS_ON;
}

static bool rootless(const tern_container *c)
{
	return rootless_rt(c->rt);
}

/* The linux.resources fields that need a cgroup to take effect, with the
 * (v1) controller that holds each. Devices are not among them: a rootless
 * container cannot create device nodes anyway, and runc ignores its device
 * rules there too. */
typedef struct {
	const char *field;
	const char *controller; /* NULL: unified, v2 only */
} limit;

static size_t set_limits(const oci_resources *r, limit out[16])
{
	size_t n = 0;

	if (r == NULL)
		return 0;
	if (r->memory)
		out[n++] = (limit){"memory", "memory"};
	if (r->cpu)
		out[n++] = (limit){"cpu", "cpu"};
	if (r->cpu && ((r->cpu->cpus && *r->cpu->cpus) || (r->cpu->mems && *r->cpu->mems)))
		out[n++] = (limit){"cpu", "cpuset"};
	if (r->pids_limit.set)
		out[n++] = (limit){"pids", "pids"};
	if (r->block_io)
		out[n++] = (limit){"blockIO", "blkio"};
	if (r->hugepage_limits_len > 0)
		out[n++] = (limit){"hugepageLimits", "hugetlb"};
	if (r->network && r->network->class_id.set)
		out[n++] = (limit){"network.classID", "net_cls"};
	if (r->network && r->network->priorities_len > 0)
		out[n++] = (limit){"network.priorities", "net_prio"};
	if (r->rdma_len > 0)
		out[n++] = (limit){"rdma", "rdma"};
	if (r->unified.len > 0)
		out[n++] = (limit){"unified", NULL};
	return n;
}

/* Every limit needs a hierarchy of the container's cgroup that carries
 * its controller: one left out (rootless) or missing on the host (rdma...)
 * must not make the limit vanish silently. */
static int check_limits_held(const oci_map *paths, const limit *limits, size_t n_limits,
			     tern_error **err)
{
	for (size_t l = 0; l < n_limits; l++) {
		bool held = false;
		for (size_t i = 0; i < paths->len && !held; i++)
			held = tern_cgroup_hierarchy_has(paths->items[i].key, limits[l].controller);
		if (!held)
			return tern_error_make_quiet(
			    err, ENOTSUP,
			    "linux.resources.%s: cannot set this limit: running rootless (uid "
			    "%d), the container has no cgroup with the %s controller",
			    limits[l].field, (int)geteuid(),
			    limits[l].controller ? limits[l].controller : "cgroup v2");
	}
	return 0;
}

static bool is_permission_error(int ret)
{
	return ret == -EACCES || ret == -EPERM || ret == -EROFS;
}

/* Rootless: create the container's cgroup in each hierarchy where this
 * user may (a delegated cgroup, as systemd gives a user on a v2 host), and
 * leave out the hierarchies where it may not, as runc does when no
 * linux.cgroupsPath is given. An explicit cgroupsPath that cannot be made
 * is an error, and so are limits without a cgroup to hold them (runc:
 * "cannot set memory limit: container could not join or create cgroup"). */
static int prepare_rootless(tern_container *c, const char *configured, tern_error **err)
{
	oci_map *paths = &c->cgroup_paths;
	limit limits[16];
	size_t n_limits = set_limits(config_resources(c), limits);
	size_t kept = 0;

	int ret;

	for (size_t i = 0; i < paths->len; i++) {
		oci_map one = {.items = &paths->items[i], .len = 1};
		cleanup_error tern_error *e = NULL;
		cleanup_free char *dir =
		    tern_strdup_printf("%s%s", paths->items[i].key, paths->items[i].value);
		cleanup_free char *procs = tern_strdup_printf("%s/cgroup.procs", dir);
		bool made = false;
		ret = tern_cgroup_create(&one, &made, &e);

		if (ret == 0 && access(procs, W_OK) < 0) {
			ret = tern_error_make(&e, errno, "cgroup `%s` is not writable", dir);
			if (made)
				rmdir(dir);
			made = false;
		}
		if (made)
			c->own_cgroup = true;
		if (ret == 0) {
			paths->items[kept++] = paths->items[i];
			continue;
		}
		if (!is_permission_error(ret) || (configured && *configured)) {
			/* keep the map whole for the caller's cleanup */
			memmove(&paths->items[kept], &paths->items[i],
				(paths->len - i) * sizeof(paths->items[0]));
			paths->len = kept + (paths->len - i);
			*err = e;
			e = NULL;
			if (is_permission_error(ret))
				return tern_error_wrap(
				    err,
				    "linux.cgroupsPath `%s`: running rootless (uid %d), and this "
				    "cgroup is not delegated to the user (leave cgroupsPath "
				    "unset to run without a cgroup)",
				    configured, (int)geteuid());
			return ret;
		}
		tern_debug("rootless: no cgroup in %s: %s", paths->items[i].key, e->msg);
		for (size_t l = 0; l < n_limits; l++) {
			if (!tern_cgroup_hierarchy_has(paths->items[i].key, limits[l].controller))
				continue;
			memmove(&paths->items[kept], &paths->items[i],
				(paths->len - i) * sizeof(paths->items[0]));
			paths->len = kept + (paths->len - i);
			return tern_error_make(
			    err, -ret,
			    "linux.resources.%s: cannot set this limit: running rootless "
			    "(uid %d), the container could not create its cgroup `%s` (no "
			    "cgroup is delegated to this user there)",
			    limits[l].field, (int)geteuid(), dir);
		}
		free(paths->items[i].key);
		free(paths->items[i].value);
	}
	paths->len = kept;
	ret = check_limits_held(paths, limits, n_limits, err);
	if (ret < 0)
		return ret;
	if (paths->len == 0)
		return 0;
	/* A cgroup we may write: limits go in, as for root, but device rules
	 * that fail are skipped (see tern_cgroup_set_rootless). */
	tern_cgroup_set_rootless(true);
	return tern_cgroup_apply_resources(paths, config_resources(c), false, err);
}

/* Before anything is made or cloned: a cgroup that would freeze the init
 * is refused (runc 1.1.5 refuses a frozen one, "container's cgroup
 * unexpectedly frozen", and hangs below a frozen ancestor; tern refuses
 * both), and one that already holds processes, another container's say,
 * gets runc's warning: a second container there shares its limits, and
 * pause, kill --all or delete of either reaches the other's processes. */
static int check_cgroup_usable(tern_container *c, tern_error **err)
{
	int ret = tern_cgroup_check_unfrozen(&c->cgroup_paths, err);

	if (ret < 0)
		return tern_error_wrap(err, "cannot create container `%s`", c->id);
	size_t n = tern_cgroup_count_procs(&c->cgroup_paths);
	if (n > 0)
		tern_warn("container `%s`: its cgroup `%s` is not empty: %zu process(es) found "
			  "(another container's?); they share its limits, and pause, kill "
			  "--all and delete reach them too",
			  c->id, c->cgroup_path, n);
	return 0;
}

static int resolve(tern_container *c, tern_error **err)
{
	const char *configured = c->config->linux_ ? c->config->linux_->cgroups_path : NULL;
	int ret;

	/* A root container always gets its cgroup, as with runc, which refuses
	 * any create without a cgroup mount: without one its limits would be
	 * dropped and pause, update, ps, kill --all could not work. Rootless
	 * goes on without one, as it does without a delegated cgroup. */
	if (!rootless(c)) {
		ret = tern_cgroup_require_mounts(NULL, err);
		if (ret < 0)
			return tern_error_wrap(err, "cannot create container `%s`", c->id);
	}
	if (c->rt->systemd_cgroup) {
		tern_systemd_unit u;
		ret = tern_systemd_unit_parse(configured, c->id, &u, err);
		if (ret < 0)
			return ret;
		cleanup_free char *display = NULL;
		ret = tern_cgroup_resolve(u.cgroup, c->id, &c->cgroup_paths, &display, err);
		/* the state keeps the systemd form: delete finds the unit by it */
		if (ret == 0)
			c->cgroup_path = tern_strdup_printf("%s:%s", u.slice, u.unit);
		tern_systemd_unit_clear(&u);
		/* ours only once systemd has started it (join): a unit of that
		 * name that is already there belongs to somebody else */
		c->own_cgroup = false;
		return ret;
	}
	return tern_cgroup_resolve(configured, c->id, &c->cgroup_paths, &c->cgroup_path, err);
}

int tern_container_cgroup_resolve(tern_container *c, tern_error **err)
{
	int ret = resolve(c, err);

	if (ret < 0 || c->cgroup_paths.len == 0)
		return ret;
	return check_cgroup_usable(c, err);
}

int tern_container_cgroup_make(tern_container *c, tern_error **err)
{
	if (c->rt->systemd_cgroup)
		return 0; /* systemd makes it at join */
	if (rootless(c)) {
		const char *configured = c->config->linux_ ? c->config->linux_->cgroups_path : NULL;
		return prepare_rootless(c, configured, err);
	}
	int ret = tern_cgroup_create(&c->cgroup_paths, &c->own_cgroup, err);
	if (ret < 0)
		return ret;
	return tern_cgroup_apply_resources(&c->cgroup_paths, config_resources(c), false, err);
}

int tern_container_cgroup_prepare(tern_container *c, tern_error **err)
{
	int ret = tern_container_cgroup_resolve(c, err);
	return ret < 0 ? ret : tern_container_cgroup_make(c, err);
}

bool tern_container_cgroup_make_after_clone(const tern_container *c)
{
	return !c->ns.two_stage && !c->rt->systemd_cgroup && !rootless(c) &&
	       !tern_cgroup_is_v2_only(&c->cgroup_paths);
}

int tern_container_cgroup_join(tern_container *c, pid_t pid, tern_error **err)
{
	if (!c->rt->systemd_cgroup)
		return tern_cgroup_enter(&c->cgroup_paths, pid, err);

	tern_systemd_unit u = {0};
	cleanup_free char *slice = tern_xstrdup(c->cgroup_path);
	*strrchr(slice, ':') = '\0';
	u.slice = slice;
	u.unit = (char *)tern_systemd_state_unit(c->cgroup_path);
	int ret = tern_systemd_start_scope(&u, pid, config_resources(c),
					   tern_cgroup_v2_has_controllers(), err);
	if (ret < 0)
		return tern_error_wrap(err, "--systemd-cgroup");
	c->own_cgroup = true;
	/* systemd placed the process in the hierarchies it manages; the other
	 * v1 controllers (cpuset, freezer, ...) get the same path from us */
	bool created;
	ret = tern_cgroup_create(&c->cgroup_paths, &created, err);
	if (ret == 0)
		ret = tern_cgroup_enter(&c->cgroup_paths, pid, err);
	if (ret == 0)
		ret =
		    tern_cgroup_apply_resources(&c->cgroup_paths, config_resources(c), false, err);
	return ret;
}

static int load(const tern_runtime *rt, const char *id, tern_container_dir **dir, oci_state **st,
		tern_error **err)
{
	return tern_container_load(rt, id, dir, st, NULL, err);
}

/* A migrated container (see tern_state_mark_migrated) is not resumed by
 * accident: only with `force`, which takes the mark away first, and only
 * while its process lives. */
static int check_migrated(tern_container_dir *dir, oci_state *st, bool freeze, bool force,
			  tern_error **err)
{
	const char *as = st->migrated_as ? st->migrated_as : st->id;

	if (freeze || !force)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "cannot %s container `%s`: it is migrated: it was handed over to %s (as "
		    "`%s`), which runs it; resumed here it would be a second live copy. `tern "
		    "delete %s` removes what is left here; `tern resume --force %s` only if the "
		    "copy on %s is gone",
		    freeze ? "pause" : "resume", st->id, st->migrated_to, as, st->id, st->id,
		    st->migrated_to);
	if (st->pid <= 0)
		return tern_error_make_quiet(
		    err, EINVAL,
		    "cannot resume container `%s`: it was migrated to %s and its process here "
		    "is gone: `tern delete %s`",
		    st->id, st->migrated_to, st->id);
	tern_warn("resuming `%s`, which was migrated to %s (as `%s`): make sure the copy "
		  "there is gone",
		  st->id, st->migrated_to, as);
	return tern_state_unmark_migrated(dir, err);
}

static int set_frozen(const tern_runtime *rt, const char *id, bool freeze, bool force,
		      tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	const char *want = freeze ? "running" : "paused";
	if (strcmp(st->status, "migrated") == 0) {
		ret = check_migrated(dir, st, freeze, force, err);
		if (ret == 0 && tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0)
			ret = tern_error_wrap(err, "cannot resume container `%s`", id);
		if (ret == 0)
			ret = tern_cgroup_freeze(&st->cgroup_paths, false, err);
	} else if (tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0)
		ret = tern_error_wrap(err, "cannot %s container `%s`", freeze ? "pause" : "resume",
				      id);
	else if (strcmp(st->status, want) != 0)
		ret = tern_error_make_quiet(err, EINVAL, "cannot %s container `%s`: it is %s",
					    freeze ? "pause" : "resume", id, st->status);
	else
		ret = tern_cgroup_freeze(&st->cgroup_paths, freeze, err);
	oci_state_free(st);
	return ret;
}

int tern_container_pause(const tern_runtime *rt, const char *id, tern_error **err)
{
	return set_frozen(rt, id, true, false, err);
}

int tern_container_resume(const tern_runtime *rt, const char *id, tern_error **err)
{
	return set_frozen(rt, id, false, false, err);
}

int tern_container_resume_forced(const tern_runtime *rt, const char *id, tern_error **err)
{
	return set_frozen(rt, id, false, true, err);
}

int tern_container_update(const tern_runtime *rt, const char *id, const oci_resources *r,
			  tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	if (strcmp(st->status, "stopped") == 0)
		ret = tern_error_make_quiet(err, EINVAL,
					    "cannot update container `%s`: it is stopped", id);
	else if (tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0)
		ret = tern_error_wrap(err, "cannot update container `%s`", id);
	else
		ret = tern_cgroup_validate_resources(r, err);
	/* a rootless container may lack the cgroup (or a hierarchy of it) */
	limit limits[16];
	size_t n_limits = set_limits(r, limits);
	if (ret == 0 && !st->systemd_cgroup && rootless_rt(rt)) {
		ret = check_limits_held(&st->cgroup_paths, limits, n_limits, err);
		tern_cgroup_set_rootless(true);
	}
	if (ret == 0)
		ret = tern_cgroup_apply_resources(&st->cgroup_paths, r, true, err);
	/* and tell systemd, or its next daemon-reload puts the old values back */
	if (ret == 0 && st->systemd_cgroup)
		ret = tern_systemd_update_scope(tern_systemd_state_unit(st->cgroup_path), r,
						tern_cgroup_v2_has_controllers(), err);
	oci_state_free(st);
	return ret;
}

int tern_container_pids(const tern_runtime *rt, const char *id, pid_t **pids, size_t *n,
			tern_error **err)
{
	cleanup_state_dir tern_container_dir *dir = NULL;
	oci_state *st = NULL;
	int ret = load(rt, id, &dir, &st, err);

	if (ret < 0)
		return ret;
	*pids = NULL;
	*n = 0;
	if (strcmp(st->status, "stopped") != 0 && st->cgroup_paths.len == 0)
		ret =
		    tern_error_make_quiet(err, ENOTSUP,
					  "container `%s` has no cgroup to list processes from (a "
					  "rootless container gets one only where a cgroup is "
					  "delegated to the user)",
					  id);
	else if (strcmp(st->status, "stopped") != 0 &&
		 tern_cgroup_require_mounts(&st->cgroup_paths, err) < 0)
		ret = tern_error_wrap(err, "cannot list the processes of container `%s`", id);
	else if (strcmp(st->status, "stopped") != 0)
		ret = tern_cgroup_pids(&st->cgroup_paths, pids, n, err);
	oci_state_free(st);
	return ret;
}
